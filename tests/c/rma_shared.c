/* A shared window (MPI_Win_allocate_shared) leaves no name behind: during
 * and after its life, nothing of the job's is in /dev/shm, no rank holds
 * a file descriptor of it once every rank mapped it, and its memory is an
 * anonymous memfd (/proc/self/maps). Loads and stores through it reach
 * the neighbour's part (parts of different sizes, so offsets matter).
 *
 * Usage: rma_shared [plant DIR | nodump]
 *   plant DIR  rank 0 writes its pid to DIR/pid and waits (at most 30 s)
 *              for DIR/planted before making the window: the test plants
 *              names in /dev/shm meanwhile, as another user
 *   nodump     rank 0 turns non-dumpable, so that no other rank may open
 *              its memory: the window must fail on every rank, with a
 *              message naming a rank and the reason (prints "refused:")
 * Prints "PASS rma_shared" from rank 0. */
#define _GNU_SOURCE
#include "check.h"
#include <dirent.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int rank, size;
static long *pids;

/* Names in /dev/shm owned by us that carry "wanmpi" and a pid of the job. */
static int our_shm_names(void)
{
    DIR *d = opendir("/dev/shm");
    if (!d)
        return 0;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, "wanmpi"))
            continue;
        char path[512];
        struct stat st;
        snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
        if (lstat(path, &st) != 0 || st.st_uid != geteuid())
            continue;
        for (int r = 0; r < size; r++) {
            char word[32];
            snprintf(word, sizeof word, "-%ld", pids[r]);
            if (strstr(e->d_name, word)) {
                fprintf(stderr, "rank %d: /dev/shm/%s\n", rank, e->d_name);
                found++;
                break;
            }
        }
    }
    closedir(d);
    return found;
}

/* File descriptors of this process that are a window's memfd. */
static int window_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL, "open /proc/self/fd");
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[300], link[256];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(path, link, sizeof link - 1);
        if (n > 0) {
            link[n] = 0;
            if (strstr(link, "wanmpi-win"))
                found++;
        }
    }
    closedir(d);
    return found;
}

/* The name of the mapping holding `p` in /proc/self/maps ("" if none). */
static void mapping_of(const void *p, char *out, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f != NULL, "open /proc/self/maps");
    char line[1024];
    out[0] = 0;
    while (fgets(line, sizeof line, f)) {
        uintptr_t lo, hi;
        int at = 0;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &at) < 2)
            continue;
        if ((uintptr_t)p >= lo && (uintptr_t)p < hi) {
            snprintf(out, len, "%s", line + at);
            out[strcspn(out, "\n")] = 0;
            break;
        }
    }
    fclose(f);
}

static void wait_for_planting(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/pid.tmp", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "write the pid file");
    fprintf(f, "%ld\n", (long)getpid());
    fclose(f);
    char final[512];
    snprintf(final, sizeof final, "%s/pid", dir);
    CHECK(rename(path, final) == 0, "publish the pid file");
    snprintf(path, sizeof path, "%s/planted", dir);
    struct timespec tick = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 3000 && access(path, F_OK) != 0; i++)
        nanosleep(&tick, NULL);
    CHECK(access(path, F_OK) == 0, "the test planted its names within 30 s");
}

int main(int argc, char **argv)
{
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int nodump = argc > 1 && strcmp(argv[1], "nodump") == 0;
    pids = malloc(size * sizeof *pids);
    long me = (long)getpid();
    OK(MPI_Allgather(&me, 1, MPI_LONG, pids, 1, MPI_LONG, MPI_COMM_WORLD));
    if (rank == 0 && argc > 2 && strcmp(argv[1], "plant") == 0)
        wait_for_planting(argv[2]);
    if (rank == 0 && nodump)
        CHECK(prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0, "prctl");
    OK(MPI_Barrier(MPI_COMM_WORLD));

    /* Rank r's part: r + 1 blocks of 1000 ints. */
    int count = 1000 * (rank + 1);
    int *mine = NULL;
    MPI_Win win;
    if (nodump) {
        OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        int rc = MPI_Win_allocate_shared(count * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mine, &win);
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        CHECK(rc != MPI_SUCCESS, "a window whose memory nobody may open fails");
        printf("rank %d refused: %s\n", rank, msg);
        CHECK(strstr(msg, "rank ") != NULL, "the message names a rank");
        CHECK(window_fds() == 0, "no fd of the failed window is left open");
        fflush(stdout);
        OK(MPI_Barrier(MPI_COMM_WORLD));
        pass("rma_shared");
        free(pids);
        MPI_Finalize();
        return 0;
    }
    OK(MPI_Win_allocate_shared(count * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mine, &win));
    char where[512];
    mapping_of(mine, where, sizeof where);
    if (rank == 0)
        printf("the window's memory: %s\n", where);
    CHECK(strstr(where, "memfd:wanmpi-win") != NULL, where);
    CHECK(our_shm_names() == 0, "nothing of the job in /dev/shm during the window's life");
    CHECK(window_fds() == 0, "no rank keeps a file descriptor of the window once all mapped it");

    OK(MPI_Win_lock_all(0, win));
    for (int i = 0; i < count; i++)
        mine[i] = rank * 1000000 + i;
    OK(MPI_Win_sync(win));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_sync(win));
    int right = (rank + 1) % size;
    MPI_Aint sz;
    int unit, *theirs;
    OK(MPI_Win_shared_query(win, right, &sz, &unit, &theirs));
    CHECK(sz == (MPI_Aint)(1000 * (right + 1) * sizeof(int)) && unit == sizeof(int), "shared_query size and unit");
    for (int i = 0; i < 1000 * (right + 1); i++)
        CHECK(theirs[i] == right * 1000000 + i, "the neighbour's part, read in place");
    OK(MPI_Win_unlock_all(win));
    OK(MPI_Win_free(&win));

    mapping_of(mine, where, sizeof where);
    CHECK(strstr(where, "wanmpi-win") == NULL, "the window's memory is unmapped with it");
    CHECK(our_shm_names() == 0, "nothing of the job in /dev/shm after the window");
    OK(MPI_Barrier(MPI_COMM_WORLD));
    pass("rma_shared");
    free(pids);
    MPI_Finalize();
    return 0;
}
