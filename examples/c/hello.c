/* hello: every rank reports in; rank 0 also shows an allreduce. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, len, sum = 0;
    char host[MPI_MAX_PROCESSOR_NAME];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    printf("hello from rank %d of %d on %s\n", rank, size, host);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("sum of ranks = %d (expected %d)\n", sum, size * (size - 1) / 2);
    MPI_Finalize();
    return sum == size * (size - 1) / 2 ? 0 : 1;
}
