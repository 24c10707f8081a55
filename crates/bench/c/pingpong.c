/* Ping-pong between ranks 0 and 1, for Open MPI and MPICH, printing the same
 * CSV as wanmpi's examples/rust/pingpong.rs with --csv:
 *   bytes,iters,rtt_us,mb_per_s,max_rtt_us
 * (max_rtt_us: the longest single round trip, warm-up included: across an
 * outage, how long the job stood still.)
 * Usage: pingpong [--sizes a,b,c] [--iters N] [--csv]  (--csv is the only
 * output format; accepted for the same command line as the Rust example). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZES 64

static int parse_sizes(const char *s, long *sizes) {
    int n = 0;
    while (*s && n < MAX_SIZES) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0) return -1;
        sizes[n++] = v;
        s = (*end == ',') ? end + 1 : end;
        if (*end != ',' && *end != '\0') return -1;
    }
    return n;
}

int main(int argc, char **argv) {
    long sizes[MAX_SIZES] = {1, 1024, 30720, 307200};
    int nsizes = 4, iters = 0, rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            nsizes = parse_sizes(argv[++i], sizes);
            if (nsizes <= 0) {
                if (rank == 0) fprintf(stderr, "pingpong: bad --sizes\n");
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        } else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
            iters = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--csv")) {
            if (rank == 0) fprintf(stderr, "pingpong: ignoring unknown argument %s\n", argv[i]);
        }
    }
    if (size < 2) {
        if (rank == 0) fprintf(stderr, "pingpong needs 2 ranks\n");
        MPI_Finalize();
        return 1;
    }
    if (rank == 0) printf("bytes,iters,rtt_us,mb_per_s,max_rtt_us\n");
    for (int s = 0; s < nsizes; s++) {
        long len = sizes[s];
        int n = iters > 0 ? iters : (int)(200000000L / (len + 20000));
        if (iters <= 0 && n < 5) n = 5;
        if (iters <= 0 && n > 2000) n = 2000;
        int warmup = n / 10 < 2 ? 2 : n / 10;
        char *buf = calloc(len > 0 ? len : 1, 1);
        if (!buf) MPI_Abort(MPI_COMM_WORLD, 3);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = 0, longest = 0;
        for (int i = 0; i < warmup + n; i++) {
            if (i == warmup) t0 = MPI_Wtime();
            double started = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(buf, (int)len, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(buf, (int)len, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(buf, (int)len, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, (int)len, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            }
            double took = MPI_Wtime() - started;
            if (took > longest) longest = took;
        }
        double rtt = (MPI_Wtime() - t0) / n;
        if (rank == 0) printf("%ld,%d,%.3f,%.2f,%.0f\n", len, n, rtt * 1e6, 2.0 * len / rtt / 1e6, longest * 1e6);
        fflush(stdout);
        free(buf);
    }
    MPI_Finalize();
    return 0;
}
