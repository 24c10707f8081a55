/* The buffered task farm of paper 000 (section 3) in plain MPI, so that one
 * program runs unchanged on wanmpi (compiled with target/wanmpi/bin/mpicc),
 * Open MPI and MPICH, and the farm experiments can put them side by side.
 * wanmpi's own farm library (crates/farm) does more (adaptive depth, end game,
 * worker loss); this is the paper's form only.
 *
 * Rank 0 is the manager, every other rank a worker. A worker keeps MAXREQS
 * requests outstanding with a receive pre-posted for each answer, sends a new
 * request the moment a task arrives, computes (sleeps TASK_MS), and returns
 * the result with a non-blocking send. Tags name tasks: task i travels with
 * tag i + 1 and its result with the same tag; tag 0 on the task channel
 * means "no more tasks". The manager answers requests in arrival order.
 *
 *   farm [--tasks N] [--task-bytes B | --sizes B] [--task-ms T] [--maxreqs M]
 *
 * Prints, on rank 0, "results: N/N ok" and a CSV line whose header has
 * time_us (the farm's run time) for `wanmpi bench`; exits 1 if a result is
 * missing, duplicated or wrong. */
#define _POSIX_C_SOURCE 199309L
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { REQ = 1, BYE = 2 };
enum { STOP_TAG = 0 };

struct args {
    long tasks, task_bytes, maxreqs;
    double task_ms;
};

static void usage_exit(const char *why) {
    fprintf(stderr, "farm: %s\nusage: farm [--tasks N] [--task-bytes B] [--task-ms T] [--maxreqs M]\n", why);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static struct args parse(int argc, char **argv) {
    struct args a = {700, 12288, 10, 24.0};
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i];
        if (!strcmp(k, "--csv")) continue;
        if (i + 1 >= argc) usage_exit("missing value");
        char *end;
        const char *v = argv[++i];
        double x = strtod(v, &end);
        if (*end || x < 0) usage_exit("bad number");
        if (!strcmp(k, "--tasks")) a.tasks = (long)x;
        else if (!strcmp(k, "--task-bytes") || !strcmp(k, "--sizes")) a.task_bytes = (long)x;
        else if (!strcmp(k, "--task-ms")) a.task_ms = x;
        else if (!strcmp(k, "--maxreqs")) a.maxreqs = (long)x;
        else if (!strcmp(k, "--iters")) continue;
        else usage_exit("unknown option");
    }
    if (a.tasks < 1 || a.task_bytes < 16 || a.maxreqs < 1) usage_exit("need tasks >= 1, task-bytes >= 16, maxreqs >= 1");
    return a;
}

/* Task i's bytes: a pattern seeded by i, so both sides can check it. */
static void fill(long id, unsigned char *buf, long len) {
    uint64_t x = (uint64_t)id * 0x9e3779b97f4a7c15ull + 1;
    for (long i = 0; i < len; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        buf[i] = (unsigned char)x;
    }
}

static uint64_t fnv1a(const unsigned char *p, long len) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (long i = 0; i < len; i++) { h ^= p[i]; h *= 0x100000001b3ull; }
    return h;
}

static void compute(double ms) {
    struct timespec t = {(time_t)(ms / 1000), (long)((ms - (double)(long)(ms / 1000) * 1000) * 1e6)};
    while (nanosleep(&t, &t) != 0) {}
}

struct channels { MPI_Comm ctrl, tasks, results; };

/* Send slots of the manager: a task buffer stays alive until its send ends. */
struct slots { int n; unsigned char *bufs; MPI_Request *reqs; };

static int free_slot(struct slots *s) {
    int idx;
    for (int i = 0; i < s->n; i++)
        if (s->reqs[i] == MPI_REQUEST_NULL) return i;
    MPI_Waitany(s->n, s->reqs, &idx, MPI_STATUS_IGNORE);
    return idx;
}

static int manager(struct args a, struct channels c, int workers) {
    struct slots s = {(int)(workers * a.maxreqs), NULL, NULL};
    s.bufs = malloc((size_t)s.n * (size_t)a.task_bytes);
    s.reqs = malloc(sizeof(MPI_Request) * (size_t)s.n);
    unsigned char *res = malloc((size_t)a.task_bytes), *check = malloc((size_t)a.task_bytes);
    char *seen = calloc((size_t)a.tasks, 1);
    if (!s.bufs || !s.reqs || !res || !check || !seen) usage_exit("out of memory");
    for (int i = 0; i < s.n; i++) s.reqs[i] = MPI_REQUEST_NULL;

    int msg[2], byes = 0;
    long next = 0, done = 0, bad = 0, dup = 0;
    MPI_Request in[2];
    MPI_Irecv(msg, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c.ctrl, &in[0]);
    MPI_Irecv(res, (int)a.task_bytes, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, c.results, &in[1]);
    while (done < a.tasks || byes < workers) {
        int which;
        MPI_Status st;
        MPI_Waitany(2, in, &which, &st);
        if (which == 0) {
            if (msg[0] == BYE) {
                byes++;
            } else if (next < a.tasks) {
                int k = free_slot(&s);
                unsigned char *b = s.bufs + (size_t)k * (size_t)a.task_bytes;
                fill(next, b, a.task_bytes);
                MPI_Isend(b, (int)a.task_bytes, MPI_BYTE, st.MPI_SOURCE, (int)(next + 1), c.tasks, &s.reqs[k]);
                next++;
            } else {
                MPI_Send(NULL, 0, MPI_BYTE, st.MPI_SOURCE, STOP_TAG, c.tasks);
            }
            if (byes < workers) /* a worker's BYE is its last control message */
                MPI_Irecv(msg, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c.ctrl, &in[0]);
        } else {
            long id = st.MPI_TAG - 1;
            uint64_t got;
            memcpy(&got, res, sizeof got);
            fill(id, check, a.task_bytes);
            if (id < 0 || id >= a.tasks) bad++;
            else if (seen[id]) dup++;
            else {
                seen[id] = 1;
                done++;
                if (got != fnv1a(check, a.task_bytes)) bad++;
            }
            if (done < a.tasks)
                MPI_Irecv(res, (int)a.task_bytes, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, c.results, &in[1]);
        }
    }
    MPI_Waitall(s.n, s.reqs, MPI_STATUSES_IGNORE);
    long ok = done - bad;
    printf("results: %ld/%ld ok, %ld missing, %ld duplicate, %ld mismatched\n", ok, a.tasks, a.tasks - done, dup, bad);
    free(s.bufs); free(s.reqs); free(res); free(check); free(seen);
    return (ok == a.tasks && dup == 0) ? 0 : 1;
}

static void worker(struct args a, struct channels c) {
    int m = (int)a.maxreqs;
    unsigned char *in = malloc((size_t)m * (size_t)a.task_bytes);
    unsigned char *out = malloc((size_t)m * (size_t)a.task_bytes);
    MPI_Request *rin = malloc(sizeof(MPI_Request) * (size_t)m), *rout = malloc(sizeof(MPI_Request) * (size_t)m);
    if (!in || !out || !rin || !rout) usage_exit("out of memory");
    int req[2] = {REQ, 1}, bye[2] = {BYE, 0};
    for (int i = 0; i < m; i++) {
        rout[i] = MPI_REQUEST_NULL;
        MPI_Irecv(in + (size_t)i * (size_t)a.task_bytes, (int)a.task_bytes, MPI_BYTE, 0, MPI_ANY_TAG, c.tasks, &rin[i]);
        MPI_Send(req, 2, MPI_INT, 0, 0, c.ctrl);
    }
    /* Every request gets one answer; posted receives == unanswered requests. */
    int outstanding = m, stopped = 0;
    while (outstanding > 0) {
        int i;
        MPI_Status st;
        MPI_Waitany(m, rin, &i, &st);
        outstanding--;
        if (st.MPI_TAG == STOP_TAG) {
            if (!stopped) {
                stopped = 1;
                MPI_Send(bye, 2, MPI_INT, 0, 0, c.ctrl);
            }
            continue;
        }
        /* Waitany may hand out a task that arrived before a STOP after it:
         * once stopped, no more requests (the BYE was the last). */
        if (!stopped) {
            MPI_Send(req, 2, MPI_INT, 0, 0, c.ctrl);
            outstanding++;
        }
        unsigned char *task = in + (size_t)i * (size_t)a.task_bytes, *r = out + (size_t)i * (size_t)a.task_bytes;
        compute(a.task_ms);
        MPI_Wait(&rout[i], MPI_STATUS_IGNORE);
        uint64_t sum = fnv1a(task, a.task_bytes);
        memset(r, 0, (size_t)a.task_bytes);
        memcpy(r, &sum, sizeof sum);
        MPI_Isend(r, (int)a.task_bytes, MPI_BYTE, 0, st.MPI_TAG, c.results, &rout[i]);
        MPI_Irecv(task, (int)a.task_bytes, MPI_BYTE, 0, MPI_ANY_TAG, c.tasks, &rin[i]);
    }
    MPI_Waitall(m, rout, MPI_STATUSES_IGNORE);
    free(in); free(out); free(rin); free(rout);
}

int main(int argc, char **argv) {
    int rank, size, rc = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct args a = parse(argc, argv);
    if (size < 2) usage_exit("needs at least 2 ranks");
    struct channels c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c.ctrl);
    MPI_Comm_dup(MPI_COMM_WORLD, &c.tasks);
    MPI_Comm_dup(MPI_COMM_WORLD, &c.results);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (rank == 0) rc = manager(a, c, size - 1);
    else worker(a, c);
    double t = MPI_Wtime() - t0;
    if (rank == 0) {
        double bound = (double)a.tasks * a.task_ms / 1000.0 / (size - 1);
        printf("bytes,tasks,workers,maxreqs,time_us,bound_us,ratio\n");
        printf("%ld,%ld,%d,%ld,%.0f,%.0f,%.3f\n", a.task_bytes, a.tasks, size - 1, a.maxreqs, t * 1e6, bound * 1e6, t / bound);
        fflush(stdout);
    }
    MPI_Comm_free(&c.ctrl);
    MPI_Comm_free(&c.tasks);
    MPI_Comm_free(&c.results);
    MPI_Finalize();
    return rc;
}
