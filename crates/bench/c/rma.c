/* One-sided latency and bandwidth between ranks 0 and 1, in the manner of
 * the OSU one-sided benchmarks (passive target, MPI_Win_flush after each
 * operation), beside a two-sided ping-pong round trip measured in the same
 * run, so each line also says how many round trips an operation costs.
 * Works with any MPI (wanmpi, Open MPI, MPICH).
 *
 * Usage: rma [--iters N] [--busy SECONDS]
 *   --busy S: rank 1 makes no MPI call for S seconds while rank 0 measures
 *   (a target that computes: the operations must progress without it).
 * Output (CSV): op,bytes,iters,us_per_op,round_trips */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double rtt_us;

static void report(const char *op, long bytes, int iters, double secs)
{
    double us = secs * 1e6 / iters;
    printf("%s,%ld,%d,%.1f,%.3f\n", op, bytes, iters, us, rtt_us > 0 ? us / rtt_us : 0.0);
    fflush(stdout);
}

static double now(void) { return MPI_Wtime(); }

int main(int argc, char **argv)
{
    int iters = 20, rank, size;
    double busy = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--busy") && i + 1 < argc)
            busy = atof(argv[++i]);
    }
    if (size < 2) {
        if (rank == 0)
            fprintf(stderr, "rma: needs 2 ranks\n");
        MPI_Finalize();
        return 1;
    }
    const long big = 1 << 20;
    char *base;
    MPI_Win win;
    MPI_Win_allocate(big, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    char *buf = calloc(big, 1);
    long one = 1, res = 0, cmp = 0;

    /* The two-sided round trip, the unit of the last column. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank < 2) {
        double t0 = now();
        for (int i = 0; i < iters; i++) {
            if (rank == 0) {
                MPI_Send(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            }
        }
        rtt_us = (now() - t0) * 1e6 / iters;
    }
    if (rank == 0) {
        printf("op,bytes,iters,us_per_op,round_trips\n");
        report("send_recv_rtt", 8, iters, rtt_us * iters / 1e6);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    if (rank == 0) {
        double t0, t;
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
        t0 = now();
        for (int i = 0; i < iters; i++) {
            MPI_Put(buf, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win);
            MPI_Win_flush(1, win);
        }
        report("put+flush", 8, iters, now() - t0);
        t0 = now();
        for (int i = 0; i < iters; i++) {
            MPI_Get(buf, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win);
            MPI_Win_flush(1, win);
        }
        report("get+flush", 8, iters, now() - t0);
        t0 = now();
        for (int i = 0; i < iters; i++) {
            MPI_Accumulate(&one, 1, MPI_LONG, 1, 0, 1, MPI_LONG, MPI_SUM, win);
            MPI_Win_flush(1, win);
        }
        report("acc+flush", 8, iters, now() - t0);
        t0 = now();
        for (int i = 0; i < iters; i++) {
            MPI_Fetch_and_op(&one, &res, MPI_LONG, 1, 0, MPI_SUM, win);
            MPI_Win_flush(1, win);
        }
        report("fetch_and_op", 8, iters, now() - t0);
        t0 = now();
        for (int i = 0; i < iters; i++) {
            MPI_Compare_and_swap(&one, &cmp, &res, MPI_LONG, 1, 0, win);
            MPI_Win_flush(1, win);
        }
        report("compare_and_swap", 8, iters, now() - t0);
        /* Bandwidth: 16 puts back to back, one flush. */
        for (long bytes = 16384; bytes <= big / 16; bytes *= 4) {
            int reps = iters / 4 > 0 ? iters / 4 : 1;
            t0 = now();
            for (int r = 0; r < reps; r++) {
                for (int k = 0; k < 16; k++)
                    MPI_Put(buf + k * bytes, bytes, MPI_BYTE, 1, k * bytes, bytes, MPI_BYTE, win);
                MPI_Win_flush(1, win);
            }
            t = now() - t0;
            printf("put_bw_MBps,%ld,%d,%.1f,%.3f\n", bytes, reps, 16.0 * bytes * reps / t / 1e6, rtt_us > 0 ? t * 1e6 / reps / rtt_us : 0);
        }
        MPI_Win_unlock(1, win);
        t0 = now();
        for (int i = 0; i < iters; i++) {
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
            MPI_Put(buf, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win);
            MPI_Win_unlock(1, win);
        }
        report("lock+put+unlock", 8, iters, now() - t0);
    } else if (rank == 1 && busy > 0) {
        /* Compute without MPI: the operations above must progress anyway. */
        struct timespec ts = {0, 1000000};
        double t0 = now();
        while (now() - t0 < busy)
            nanosleep(&ts, NULL);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(buf);
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
