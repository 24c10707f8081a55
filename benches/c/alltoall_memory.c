/* Memory of an all-to-all job on one host (benches/shm-memory with
 * SHM_MEMORY_JOB=benches/c/alltoall_memory.c): MPI_Alltoall of 1 byte to
 * MAX bytes per peer (doubling, default 64 KiB: an OSU osu_alltoall sweep
 * that fits this machine's memory at 128 ranks), a few times per size,
 * every byte checked. Every pair of ranks then has carried messages of
 * every size, so every ring between them has been written. Rank 0 prints
 * the memory the ranks hold right before MPI_Finalize, summed: Pss and
 * its shared-memory part, in the line benches/shm-memory reads.
 *
 * usage: alltoall_memory [MAX] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned char pattern(int src, int dst, long i)
{
    return (unsigned char)(src * 31 + dst * 7 + i * 13);
}

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

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long max = argc > 1 ? atol(argv[1]) : 64 << 10;
    unsigned char *out = malloc((size_t)max * size), *in = malloc((size_t)max * size);
    if (!out || !in) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (long len = 1; len <= max; len *= 2) {
        for (int d = 0; d < size; d++)
            for (long i = 0; i < len; i++)
                out[d * len + i] = pattern(rank, d, i);
        for (int it = 0; it < 3; it++) {
            MPI_Alltoall(out, (int)len, MPI_BYTE, in, (int)len, MPI_BYTE, MPI_COMM_WORLD);
            for (int s = 0; s < size; s++)
                for (long i = 0; i < len; i++)
                    if (in[s * len + i] != pattern(s, rank, i)) {
                        fprintf(stderr, "rank %d: %ld bytes from rank %d corrupted\n", rank, len, s);
                        MPI_Abort(MPI_COMM_WORLD, 2);
                    }
        }
    }
    long mine[2], sum[2];
    pss(&mine[0], &mine[1]);
    MPI_Reduce(mine, sum, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("memory: ranks %d pss_kib %ld pss_shmem_kib %ld\n", size, sum[0], sum[1]);
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
