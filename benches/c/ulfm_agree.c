/* Times ULFM's agreement calls (docs/benchmarks.md): MPIX_Comm_agree and
 * MPIX_Comm_shrink on MPI_COMM_WORLD without failures (ITERS each, mean),
 * then the last rank dies and the survivors time the agree that reports it
 * and the shrink that drops it. Run under mpirun --tolerate-rank-failure:
 *
 *   mpirun -n 8 --tolerate-rank-failure ulfm_agree [ITERS]
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int rank, size, iters = argc > 1 ? atoi(argv[1]) : 20;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        int flag = 1;
        MPIX_Comm_agree(MPI_COMM_WORLD, &flag);
    }
    double agree = (MPI_Wtime() - t) / iters;
    t = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        MPI_Comm c;
        MPIX_Comm_shrink(MPI_COMM_WORLD, &c);
        MPI_Comm_free(&c);
    }
    double shrink = (MPI_Wtime() - t) / iters;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1)
        raise(SIGKILL);
    int flag = 1;
    t = MPI_Wtime();
    int rc = MPIX_Comm_agree(MPI_COMM_WORLD, &flag); /* reports the death (not acknowledged) */
    double agree_fail = MPI_Wtime() - t;
    MPIX_Comm_failure_ack(MPI_COMM_WORLD);
    MPI_Comm c;
    t = MPI_Wtime();
    int rc2 = MPIX_Comm_shrink(MPI_COMM_WORLD, &c);
    double shrink_fail = MPI_Wtime() - t;
    int csize = 0;
    MPI_Comm_size(c, &csize);
    if (rank == 0)
        printf("ranks %d: agree %.3f ms, shrink %.3f ms (mean of %d); after a death: agree %.3f ms (rc %s), shrink %.3f ms to %d ranks (rc %d)\n", size,
               1e3 * agree, 1e3 * shrink, iters, 1e3 * agree_fail, rc == MPI_SUCCESS ? "success" : "MPIX_ERR_PROC_FAILED", 1e3 * shrink_fail, csize, rc2);
    MPI_Comm_free(&c);
    MPI_Finalize();
    return 0;
}
