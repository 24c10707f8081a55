/* How long MPI_Comm_spawn takes: the ranks spawn N copies of this program
 * 10 times (each child disconnects and finalizes at once) and rank 0
 * prints the mean and the best time from the call to the
 * inter-communicator. Usage: mpirun -n 2 ./spawn N */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int c, char **v){ MPI_Init(&c,&v); MPI_Comm p; MPI_Comm_get_parent(&p);
 if (p != MPI_COMM_NULL) { MPI_Comm_disconnect(&p); MPI_Finalize(); return 0; }
 int n = atoi(v[1]), reps = 10, r; MPI_Comm_rank(MPI_COMM_WORLD,&r);
 double best = 1e9, sum = 0;
 for (int i = 0; i < reps; i++) { MPI_Barrier(MPI_COMM_WORLD); double t = MPI_Wtime(); MPI_Comm k;
   MPI_Comm_spawn(v[0], MPI_ARGV_NULL, n, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &k, MPI_ERRCODES_IGNORE);
   double d = MPI_Wtime() - t; MPI_Comm_disconnect(&k); sum += d; if (d < best) best = d; }
 if (!r) printf("spawn %d: mean %.1f ms, best %.1f ms\n", n, 1e3*sum/reps, 1e3*best);
 MPI_Finalize(); }
