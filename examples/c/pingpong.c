/* pingpong: latency and bandwidth between ranks 0 and 1 over message sizes
 * 1 B to 4 MiB (MPBench style). Usage: pingpong [max_bytes] [reps] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size;
    long max = argc > 1 ? atol(argv[1]) : 4L << 20;
    int reps = argc > 2 ? atoi(argv[2]) : 100;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0)
            fprintf(stderr, "pingpong needs 2 ranks\n");
        MPI_Finalize();
        return 1;
    }
    char *buf = malloc((size_t)max > 0 ? (size_t)max : 1);
    memset(buf, rank, (size_t)max);
    if (rank == 0)
        printf("%12s %14s %14s\n", "bytes", "latency_us", "MB/s");
    for (long n = 1; n <= max; n *= 2) {
        int r = n >= (1 << 20) ? (reps / 10 > 2 ? reps / 10 : 2) : reps;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < r; i++) {
            if (rank == 0) {
                MPI_Send(buf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
        }
        double half = (MPI_Wtime() - t0) / (2.0 * r);
        if (rank == 0)
            printf("%12ld %14.2f %14.2f\n", n, half * 1e6, n / half / 1e6);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
