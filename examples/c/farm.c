/* A task farm from C with wanmpi_farm.h: rank 0 hands out tasks, the other
 * ranks compute them, every result comes back exactly once.
 *
 *   target/wanmpi/bin/mpicc -O2 -o farm examples/c/farm.c -lwanmpi_farm
 *   target/wanmpi/bin/mpirun -n 4 ./farm [TASKS] [TASK_BYTES] [TASK_MS] [FANOUT]
 *
 * Task i is TASK_BYTES bytes of a pattern seeded by i; its result is the
 * task's 64-bit FNV-1a checksum followed by the task id, after TASK_MS of
 * compute (sleeping, as the papers' synthetic farm). The manager checks each
 * result against the checksum it computes itself, counts duplicates and
 * misses, and prints "results: N/N ok" on success (exit 0). */
#define _POSIX_C_SOURCE 199309L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>
#include <wanmpi_farm.h>

struct state {
    uint64_t tasks;
    size_t task_bytes;
    long task_ms;
    unsigned char *seen; /* manager: results per task */
    uint64_t bad;        /* manager: results that do not match */
};

static void fill(uint64_t id, unsigned char *buf, size_t len) {
    uint64_t x = id * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        buf[i] = (unsigned char)x;
    }
}

static uint64_t fnv1a(const unsigned char *p, size_t len) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) { h ^= p[i]; h *= 0x100000001b3ull; }
    return h;
}

static int create_task(void *user, uint64_t id, void *buf, size_t cap, size_t *len) {
    struct state *s = user;
    if (s->task_bytes > cap) return 1;
    fill(id, buf, s->task_bytes);
    *len = s->task_bytes;
    return 0;
}

static int do_task(void *user, uint64_t id, const void *task, size_t len,
                   void *result, size_t cap, size_t *result_len) {
    struct state *s = user;
    if (cap < 16) return 1;
    uint64_t out[2] = { fnv1a(task, len), id };
    struct timespec t = { s->task_ms / 1000, (s->task_ms % 1000) * 1000000L };
    nanosleep(&t, NULL);
    memcpy(result, out, sizeof out);
    *result_len = sizeof out;
    return 0;
}

static int process_result(void *user, uint64_t id, const void *result, size_t len) {
    struct state *s = user;
    unsigned char *task = malloc(s->task_bytes ? s->task_bytes : 1);
    uint64_t got[2] = { 0, 0 };
    if (!task) return 1;
    fill(id, task, s->task_bytes);
    if (len == sizeof got) memcpy(got, result, sizeof got);
    if (id >= s->tasks || len != sizeof got || got[0] != fnv1a(task, s->task_bytes) || got[1] != id)
        s->bad++;
    else if (s->seen[id] < 255)
        s->seen[id]++;
    free(task);
    return 0;
}

int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    struct state s = { 200, 12288, 5, NULL, 0 };
    if (argc > 1) s.tasks = strtoull(argv[1], NULL, 10);
    if (argc > 2) s.task_bytes = strtoull(argv[2], NULL, 10);
    if (argc > 3) s.task_ms = strtol(argv[3], NULL, 10);
    wanmpi_farm_config cfg;
    wanmpi_farm_config_init(&cfg);
    cfg.total_tasks = s.tasks;
    if (argc > 4) cfg.fanout = (uint32_t)strtoul(argv[4], NULL, 10);
    cfg.max_task_bytes = s.task_bytes;
    cfg.max_result_bytes = 16;
    cfg.progress = 0;
    cfg.stall_timeout_s = 60;
    if (rank == 0 && !(s.seen = calloc(s.tasks ? s.tasks : 1, 1))) MPI_Abort(MPI_COMM_WORLD, 1);

    wanmpi_farm_callbacks cb = { create_task, do_task, process_result, &s };
    wanmpi_farm_report rep;
    int rc = wanmpi_farm_run(MPI_COMM_WORLD, &cfg, &cb, &rep);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: wanmpi_farm_run: error %d: %s\n", rank, rc, wanmpi_farm_error_string());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* The program's own communication goes on after the farm. */
    int done = (int)rep.tasks_done, total = 0;
    MPI_Reduce(&done, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    int status = 0;
    if (rank == 0) {
        uint64_t ok = 0, missing = 0, dup = 0;
        for (uint64_t i = 0; i < s.tasks; i++) {
            ok += s.seen[i] == 1;
            missing += s.seen[i] == 0;
            dup += s.seen[i] > 1;
        }
        printf("farm (C): %.3f s, predicted %.3f s, compute bound %.3f s; workers computed %d tasks\n",
               rep.elapsed_s, rep.predicted_s, rep.compute_bound_s, total);
        printf("results: %" PRIu64 "/%" PRIu64 " ok, %" PRIu64 " missing, %" PRIu64 " duplicate, %" PRIu64 " mismatched\n",
               ok, s.tasks, missing, dup, s.bad);
        status = !(ok == s.tasks && s.bad == 0 && rep.tasks == s.tasks);
        free(s.seen);
    }
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return status;
}
