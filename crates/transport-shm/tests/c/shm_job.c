/* A job for the shm transport's process-level tests (tests/jobs.rs):
 * hello, an allreduce and a 1 MiB message around a ring (longer than the
 * largest frame on a crowded host, so the engine cuts it), every byte
 * checked; with SECONDS > 0 it goes on exchanging until then (for kills
 * and intruders to land on a running job). Rank 0 then prints the memory
 * the job holds, summed over ranks: proportional set size, its shared
 * memory part, and the pages held by the inbound memfds.
 *
 * usage: shm_job [SECONDS] */
#include <mpi.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BIG (1 << 20)

static int fail(int rank, const char *what)
{
    fprintf(stderr, "rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 2);
    return 2;
}

static unsigned char pattern(int src, int round, long i)
{
    return (unsigned char)(src * 31 + round * 7 + i * 13);
}

/* One round: a ring exchange of `len` bytes and an allreduce, checked. */
static int round_trip(int rank, int size, int round, unsigned char *out, unsigned char *in, long len)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (long i = 0; i < len; i++)
        out[i] = pattern(rank, round, i);
    MPI_Sendrecv(out, (int)len, MPI_BYTE, right, round, in, (int)len, MPI_BYTE, left, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (long i = 0; i < len; i++)
        if (in[i] != pattern(left, round, i))
            return fail(rank, "ring message corrupted");
    long v[64], sum[64];
    for (int i = 0; i < 64; i++)
        v[i] = (long)rank * (i + 1) + round;
    MPI_Allreduce(v, sum, 64, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < 64; i++)
        if (sum[i] != (long)size * (size - 1) / 2 * (i + 1) + (long)size * round)
            return fail(rank, "allreduce wrong");
    return 0;
}

/* Pss and Pss_Shmem (KiB) of this process. */
static void pss(long *all, long *shmem)
{
    char line[256];
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    *all = *shmem = -1;
    while (f && fgets(line, sizeof line, f)) {
        sscanf(line, "Pss: %ld", all);
        sscanf(line, "Pss_Shmem: %ld", shmem);
    }
    if (f)
        fclose(f);
}

/* KiB held by the memfds wanmpi's shm transport made in this process. */
static long memfd_kib(void)
{
    long total = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[300], target[300];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(path, target, sizeof target - 1);
        struct stat st;
        if (n <= 0)
            continue;
        target[n] = 0;
        if (strncmp(target, "/memfd:wanmpi-shm", 17) == 0 && stat(path, &st) == 0)
            total += (long)st.st_blocks / 2;
    }
    if (d)
        closedir(d);
    return total;
}

int main(int argc, char **argv)
{
    int rank, size;
    double seconds = argc > 1 ? atof(argv[1]) : 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    unsigned char *out = malloc(BIG), *in = malloc(BIG);
    if (!out || !in)
        return fail(rank, "out of memory");
    if (round_trip(rank, size, 0, out, in, BIG))
        return 2;
    double start = MPI_Wtime();
    int go = seconds > 0, rounds = 1;
    while (go) {
        if (round_trip(rank, size, rounds, out, in, 4096 + (rounds % 16) * 4096))
            return 2;
        rounds++;
        go = rank == 0 ? MPI_Wtime() - start < seconds : 0;
        MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    long mine[3], sum[3];
    pss(&mine[0], &mine[1]);
    mine[2] = memfd_kib();
    MPI_Reduce(mine, sum, 3, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("memory: ranks %d pss_kib %ld pss_shmem_kib %ld memfd_kib %ld\n", size, sum[0], sum[1], sum[2]);
        printf("shm_job ok: %d ranks, %d rounds\n", size, rounds);
    }
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
