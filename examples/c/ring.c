/* ring: a token goes around the ranks ROUNDS times, each rank adding one. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, size, token = 0, rounds = argc > 1 ? atoi(argv[1]) : 10;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int r = 0; r < rounds; r++) {
        if (rank == 0) {
            token++;
            MPI_Send(&token, 1, MPI_INT, next, 0, MPI_COMM_WORLD);
            MPI_Recv(&token, 1, MPI_INT, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&token, 1, MPI_INT, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            token++;
            MPI_Send(&token, 1, MPI_INT, next, 0, MPI_COMM_WORLD);
        }
    }
    int ok = 1;
    if (rank == 0) {
        printf("ring: %d rounds over %d ranks, token = %d (expected %d)\n", rounds, size, token, rounds * size);
        ok = token == rounds * size;
    }
    MPI_Finalize();
    return ok ? 0 : 1;
}
