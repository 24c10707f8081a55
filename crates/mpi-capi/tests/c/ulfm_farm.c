/* A plain-MPI task farm that survives losing workers (ULFM), run by
 * crates/mpi-capi/tests/ulfm.rs across the WAN emulator under
 * mpirun --tolerate-rank-failure.
 *
 *   ulfm_farm TASKS VICTIMS   e.g. ulfm_farm 120 2,4
 *
 * Rank 0 hands out tasks 0..TASKS-1 one at a time; task t's answer is
 * t*t mod 1009. Each rank named in VICTIMS kills itself (SIGKILL) on its
 * third task, holding it. The manager receives with MPI_ANY_SOURCE; when a
 * failure shows (MPIX_ERR_PROC_FAILED), it acknowledges it, asks which
 * ranks failed (MPIX_Comm_failure_get_acked), and hands their tasks to the
 * others. It prints "PASS ulfm_farm" when the sum of every task's answer is
 * right. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_TASK = 1, TAG_RESULT = 2, TAG_STOP = 3 };

static int answer(int t) { return (int)(((long)t * t) % 1009); }

static int is_victim(const char *list, int rank) {
    char copy[256];
    snprintf(copy, sizeof copy, "%s", list);
    for (char *p = strtok(copy, ","); p; p = strtok(NULL, ","))
        if (atoi(p) == rank)
            return 1;
    return 0;
}

static void worker(int rank, const char *victims) {
    int done = 0;
    for (;;) {
        int t;
        MPI_Status st;
        if (MPI_Recv(&t, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st) != MPI_SUCCESS || st.MPI_TAG == TAG_STOP)
            return;
        if (is_victim(victims, rank) && ++done == 3) {
            fflush(stdout);
            raise(SIGKILL);
        }
        int r[2] = {t, answer(t)};
        if (MPI_Send(r, 2, MPI_INT, 0, TAG_RESULT, MPI_COMM_WORLD) != MPI_SUCCESS)
            return;
    }
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int tasks = argc > 1 ? atoi(argv[1]) : 100;
    const char *victims = argc > 2 ? argv[2] : "";
    if (rank != 0) {
        worker(rank, victims);
        MPI_Finalize();
        return 0;
    }
    int *holds = malloc(sizeof(int) * (size_t)size); /* task a worker holds, -1 none */
    int *dead = calloc((size_t)size, sizeof(int));
    int *queue = malloc(sizeof(int) * (size_t)(tasks + size));
    char *got = calloc((size_t)tasks, 1);
    int head = 0, tail = 0, finished = 0, lost = 0;
    long sum = 0;
    for (int t = 0; t < tasks; t++)
        queue[tail++] = t;
    /* Hands worker w its next task, or nothing; a send that fails means w died. */
    for (int w = 1; w < size; w++) {
        holds[w] = -1;
        if (head < tail && MPI_Send(&queue[head], 1, MPI_INT, w, TAG_TASK, MPI_COMM_WORLD) == MPI_SUCCESS)
            holds[w] = queue[head++];
    }
    while (finished < tasks) {
        int r[2];
        MPI_Status st;
        int rc = MPI_Recv(r, 2, MPI_INT, MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &st);
        if (rc != MPI_SUCCESS) {
            int cls;
            MPI_Error_class(rc, &cls);
            if (cls != MPIX_ERR_PROC_FAILED && cls != MPIX_ERR_PROC_FAILED_PENDING) {
                printf("FAIL ulfm_farm: receive failed with class %d\n", cls);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            MPI_Group failed, world;
            MPIX_Comm_failure_ack(MPI_COMM_WORLD);
            MPIX_Comm_failure_get_acked(MPI_COMM_WORLD, &failed);
            MPI_Comm_group(MPI_COMM_WORLD, &world);
            int n;
            MPI_Group_size(failed, &n);
            for (int i = 0; i < n; i++) {
                int w;
                MPI_Group_translate_ranks(failed, 1, &i, world, &w);
                if (w > 0 && !dead[w]) {
                    dead[w] = 1;
                    lost++;
                    if (holds[w] >= 0)
                        queue[tail++] = holds[w]; /* someone else does it */
                    holds[w] = -1;
                    printf("manager: worker %d failed; its task goes back to the queue\n", w);
                }
            }
            MPI_Group_free(&failed);
            MPI_Group_free(&world);
            /* Idle live workers take the requeued tasks. */
            for (int w = 1; w < size; w++)
                if (!dead[w] && holds[w] < 0 && head < tail && MPI_Send(&queue[head], 1, MPI_INT, w, TAG_TASK, MPI_COMM_WORLD) == MPI_SUCCESS)
                    holds[w] = queue[head++];
            continue;
        }
        int w = st.MPI_SOURCE;
        if (r[0] >= 0 && r[0] < tasks && !got[r[0]]) {
            got[r[0]] = 1;
            sum += r[1];
            finished++;
        }
        holds[w] = -1;
        if (head < tail && MPI_Send(&queue[head], 1, MPI_INT, w, TAG_TASK, MPI_COMM_WORLD) == MPI_SUCCESS)
            holds[w] = queue[head++];
    }
    int stop = 0;
    for (int w = 1; w < size; w++)
        if (!dead[w])
            MPI_Send(&stop, 1, MPI_INT, w, TAG_STOP, MPI_COMM_WORLD);
    long want = 0;
    for (int t = 0; t < tasks; t++)
        want += answer(t);
    if (sum == want)
        printf("PASS ulfm_farm: %d tasks, sum %ld, %d workers lost\n", tasks, sum, lost);
    else
        printf("FAIL ulfm_farm: sum %ld, want %ld\n", sum, want);
    fflush(stdout);
    free(holds);
    free(dead);
    free(queue);
    free(got);
    MPI_Finalize();
    return sum == want ? 0 : 1;
}
