/* The program of the multi-node Slurm tests (tests/slurm.rs): checks an
 * allreduce, every pair's point-to-point, a split and a 1 MiB bcast, and
 * prints "ok rank R of N on HOST". `check.c die R` has rank R (started by
 * mpirun) kill itself with SIGKILL before MPI_Init, the others waiting in it;
 * `check.c hang` prints "ready rank R" and sleeps a minute outside MPI
 * (for scancel). */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(int rank, const char *what) {
    fprintf(stderr, "FAIL rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 3);
    return 3;
}

int main(int argc, char **argv) {
    int rank, size;
    char host[256] = "?";
    /* Before MPI_Init, so no peer holds a connection to it: the launcher
     * learns of the death from the rank's own end (srun's status), not
     * from a peer that lost it first and aborted. */
    const char *me = getenv("WANMPI_RANK");
    if (argc > 2 && strcmp(argv[1], "die") == 0 && me && strcmp(me, argv[2]) == 0) {
        gethostname(host, sizeof host - 1);
        printf("dying rank %s on %s\n", me, host);
        fflush(stdout);
        raise(SIGKILL);
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gethostname(host, sizeof host - 1);
    if (argc > 1 && strcmp(argv[1], "hang") == 0) {
        printf("ready rank %d on %s\n", rank, host);
        fflush(stdout);
        sleep(60);
        MPI_Finalize();
        return 0;
    }
    long sum = 0, mine = rank;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (sum != (long)size * (size - 1) / 2) return fail(rank, "allreduce");
    for (int d = 1; d < size; d++) {
        int to = (rank + d) % size, from = (rank - d + size) % size;
        int out = rank * 1000 + to, in = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, to, d, &in, 1, MPI_INT, from, d, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (in != from * 1000 + rank) return fail(rank, "point-to-point");
    }
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    int hr, hs, hsum = 0;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hs);
    MPI_Allreduce(&rank, &hsum, 1, MPI_INT, MPI_SUM, half);
    int want = 0;
    for (int r = rank % 2; r < size; r += 2) want += r;
    if (hsum != want || hs != (size + 1 - rank % 2) / 2) return fail(rank, "split");
    MPI_Comm_free(&half);
    const int n = 1 << 20;
    unsigned char *buf = malloc(n);
    if (!buf) return fail(rank, "malloc");
    for (int i = 0; i < n; i++) buf[i] = rank == size - 1 ? (unsigned char)(i * 7 + 3) : 0;
    MPI_Bcast(buf, n, MPI_BYTE, size - 1, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++)
        if (buf[i] != (unsigned char)(i * 7 + 3)) return fail(rank, "bcast");
    free(buf);
    printf("ok rank %d of %d on %s\n", rank, size, host);
    MPI_Finalize();
    return 0;
}
