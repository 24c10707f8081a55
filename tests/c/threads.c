/* MPI_THREAD_MULTIPLE: two threads of each of two ranks ping-pong on their
 * own tags at once. Each thread gets exactly its own messages, in order;
 * and a blocked thread wakes when another thread of its rank takes its
 * message off the transport: run with WANMPI_SPIN_ROUNDS=0 (every blocked
 * call sleeps at once), a round trip may not cost a sleep's timeout (the
 * runtime's is 20 ms; a shared wake-up read by the wrong thread cost 2-7 ms
 * on average on loopback). argv[1]: the bound on the mean round trip, us. */
#include "check.h"
#include <pthread.h>

#define ITERS 300

static int rank;

static void *pingpong(void *arg)
{
    int t = (int)(long)arg, peer = 1 - rank;
    for (int i = 0; i < ITERS; i++) {
        int v = -1, want = t * 100000 + i;
        if (rank == 0) {
            OK(MPI_Send(&want, 1, MPI_INT, peer, t, MPI_COMM_WORLD));
            OK(MPI_Recv(&v, 1, MPI_INT, peer, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(v == want + 1, "the answer to this thread's message");
        } else {
            OK(MPI_Recv(&v, 1, MPI_INT, peer, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(v == want, "this thread's message, in order");
            v += 1;
            OK(MPI_Send(&v, 1, MPI_INT, peer, t, MPI_COMM_WORLD));
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, size;
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size == 2, "two ranks");
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE provided");
    double bound_us = argc > 1 ? atof(argv[1]) : 1e9;
    OK(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = MPI_Wtime();
    pthread_t th[2];
    for (long t = 0; t < 2; t++)
        CHECK(pthread_create(&th[t], NULL, pingpong, (void *)t) == 0, "pthread_create");
    for (int t = 0; t < 2; t++)
        CHECK(pthread_join(th[t], NULL) == 0, "pthread_join");
    double us = (MPI_Wtime() - t0) * 1e6 / ITERS;
    if (rank == 0)
        printf("threads: %.1f us per round trip (bound %.0f)\n", us, bound_us);
    CHECK(us < bound_us, "a blocked thread woke when another took its message");
    pass("threads");
    OK(MPI_Finalize());
    return 0;
}
