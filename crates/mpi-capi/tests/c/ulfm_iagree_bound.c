/* Two ranks (crates/mpi-capi/tests/ulfm.rs), without
 * --tolerate-rank-failure: an MPIX_Comm_iagree both join completes with
 * the AND of their flags; then rank 0 starts one that rank 1 never joins,
 * and waits. The request must
 * fail after the bootstrap timeout (WANMPI_BOOTSTRAP_TIMEOUT), as the
 * blocking agreement does, not wait forever; rank 0 then tells rank 1,
 * and both finalize. Prints "PASS ulfm_iagree_bound" at rank 0. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, flag = 1, go = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Request r;
    int both = rank == 0 ? 0x3 : 0x6;
    int rc0 = MPIX_Comm_iagree(MPI_COMM_WORLD, &both, &r);
    if (rc0 == MPI_SUCCESS)
        rc0 = MPI_Wait(&r, MPI_STATUS_IGNORE);
    if (rc0 != MPI_SUCCESS || both != 0x2) {
        printf("FAIL ulfm_iagree_bound: joint iagree rc %d flag %#x\n", rc0, both);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
        double t0 = MPI_Wtime();
        int rc = MPIX_Comm_iagree(MPI_COMM_WORLD, &flag, &r);
        if (rc == MPI_SUCCESS)
            rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
        double took = MPI_Wtime() - t0;
        int cls = rc;
        MPI_Error_class(rc, &cls);
        MPI_Send(&go, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS && cls == MPI_ERR_OTHER && took < 30.0)
            printf("PASS ulfm_iagree_bound (failed after %.1f s)\n", took);
        else
            printf("FAIL ulfm_iagree_bound: class %d after %.1f s\n", cls, took);
    } else {
        MPI_Recv(&go, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
