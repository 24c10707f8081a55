/* Collective latency the way the OSU micro-benchmarks time it: the same
 * call back to back, averaged over the iterations; the figure is the
 * slowest rank's average. Plain MPI, so one source runs on wanmpi (built
 * with target/wanmpi/bin/mpicc), Open MPI and MPICH side by side.
 *
 *   collectives --op allreduce|barrier|allgather|bcast [--bytes B] [--iters N]
 *               [--mode blocking|nonblocking|persistent]
 *
 * allreduce sums B/8 doubles, allgather gathers B bytes per rank, bcast
 * sends B bytes from rank 0. --mode nonblocking calls MPI_Ixxx + MPI_Wait,
 * persistent MPI_Xxx_init once, then MPI_Start + MPI_Wait per call (the
 * forms programs that overlap communication use). Each result is checked, so a wrong answer
 * fails the run (exit 1). Rank 0 prints a CSV header with time_us and
 * one line starting with B, for `wanmpi bench`. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WARMUP = 2 };

static void die(const char *why) {
    fprintf(stderr,
            "collectives: %s\nusage: collectives --op allreduce|barrier|allgather|bcast [--bytes B] [--iters N] "
            "[--mode blocking|nonblocking|persistent]\n",
            why);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* How a call is made: 'b' blocking, 'n' nonblocking + wait, 'p' persistent. */
static char mode = 'b';
/* The persistent request, made by the first call (same buffers every call). */
static MPI_Request persistent = MPI_REQUEST_NULL;

/* Persistent collectives are MPI-4 (Open MPI 4.1 has none). */
#if MPI_VERSION >= 4
#define INIT(init, ...) init(__VA_ARGS__, MPI_INFO_NULL, &persistent)
#else
#define INIT(init, ...) die("--mode persistent needs an MPI-4 library")
#endif

/* Runs the collective whose blocking form is `blocking`, in the chosen mode. */
#define CALL(blocking, nonblocking, init, ...)                              \
    do {                                                                   \
        if (mode == 'b') {                                                 \
            blocking(__VA_ARGS__);                                         \
        } else if (mode == 'n') {                                          \
            MPI_Request r;                                                 \
            nonblocking(__VA_ARGS__, &r);                                  \
            MPI_Wait(&r, MPI_STATUS_IGNORE);                               \
        } else {                                                           \
            if (persistent == MPI_REQUEST_NULL)                            \
                INIT(init, __VA_ARGS__);                                   \
            MPI_Start(&persistent);                                        \
            MPI_Wait(&persistent, MPI_STATUS_IGNORE);                      \
        }                                                                  \
    } while (0)

/* One call of the chosen collective; returns 0 if its result is right. */
static int one(const char *op, long bytes, int rank, int size, unsigned char *a, unsigned char *b) {
    if (!strcmp(op, "barrier")) {
        CALL(MPI_Barrier, MPI_Ibarrier, MPI_Barrier_init, MPI_COMM_WORLD);
        return 0;
    }
    if (!strcmp(op, "allreduce")) {
        int n = (int)(bytes / 8 > 0 ? bytes / 8 : 1);
        double *x = (double *)a, *y = (double *)b;
        for (int i = 0; i < n; i++) x[i] = rank + i;
        CALL(MPI_Allreduce, MPI_Iallreduce, MPI_Allreduce_init, x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        double ranks = (double)size * (size - 1) / 2;
        for (int i = 0; i < n; i++)
            if (y[i] != ranks + (double)i * size) return 1;
        return 0;
    }
    if (!strcmp(op, "allgather")) {
        memset(a, rank & 0xff, (size_t)bytes);
        CALL(MPI_Allgather, MPI_Iallgather, MPI_Allgather_init, a, (int)bytes, MPI_BYTE, b, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
        for (int r = 0; r < size; r++)
            if (bytes > 0 && (b[(size_t)r * bytes] != (r & 0xff) || b[(size_t)r * bytes + bytes - 1] != (r & 0xff))) return 1;
        return 0;
    }
    if (!strcmp(op, "bcast")) {
        if (rank == 0) memset(a, 0x5a, (size_t)bytes);
        else if (bytes > 0) a[0] = a[bytes - 1] = 0;
        CALL(MPI_Bcast, MPI_Ibcast, MPI_Bcast_init, a, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        return bytes > 0 && (a[0] != 0x5a || a[bytes - 1] != 0x5a);
    }
    die("unknown --op");
    return 1;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *op = "allreduce";
    long bytes = 8, iters = 20;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) die("missing value");
        if (!strcmp(argv[i], "--op")) op = argv[++i];
        else if (!strcmp(argv[i], "--bytes") || !strcmp(argv[i], "--sizes")) bytes = atol(argv[++i]);
        else if (!strcmp(argv[i], "--iters")) iters = atol(argv[++i]);
        else if (!strcmp(argv[i], "--mode")) {
            const char *m = argv[++i];
            if (strcmp(m, "blocking") && strcmp(m, "nonblocking") && strcmp(m, "persistent")) die("unknown --mode");
            mode = m[0];
        }
        else die("unknown option");
    }
    if (bytes < 0 || iters < 1) die("need bytes >= 0 and iters >= 1");
    size_t cap = (size_t)(bytes > 8 ? bytes : 8) * (size_t)size;
    unsigned char *a = malloc(cap), *b = malloc(cap);
    if (!a || !b) die("out of memory");
    int bad = 0;
    for (int i = 0; i < WARMUP; i++) bad |= one(op, bytes, rank, size, a, b);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) bad |= one(op, bytes, rank, size, a, b);
    double mine = (MPI_Wtime() - t0) / (double)iters * 1e6, slowest;
    int any_bad;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&bad, &any_bad, 1, MPI_INT, MPI_LOR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("size,op,ranks,time_us\n%ld,%s,%d,%.1f\n", bytes, op, size, slowest);
        if (any_bad) fprintf(stderr, "collectives: %s gave a wrong result\n", op);
    }
    if (persistent != MPI_REQUEST_NULL) MPI_Request_free(&persistent);
    free(a);
    free(b);
    MPI_Finalize();
    return rank == 0 && any_bad ? 1 : 0;
}
