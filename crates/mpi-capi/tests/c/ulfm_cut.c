/* Three ranks across the WAN emulator (crates/mpi-capi/tests/ulfm.rs):
 * each prints its pid, then ranks 0 and 1 block receiving from rank 2,
 * which waits to be killed (the test cuts every link first). A survivor
 * prints the error class its receive ended with, at once, then its text. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, buf = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("pid %d %d\n", rank, (int)getpid());
    fflush(stdout);
    if (rank == 2) {
        /* Bounded by mpirun --timeout; the test kills it long before. */
        for (int i = 0; i < 600; i++)
            sleep(1);
        return 0;
    }
    int rc = MPI_Recv(&buf, 1, MPI_INT, 2, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int cls = rc;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    char why[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (rc != MPI_SUCCESS)
        MPI_Error_string(rc, why, &len);
    printf("rank %d class %d\n", rank, cls);
    printf("rank %d why %s\n", rank, why);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
