/* wanmpi_farm.h: the latency-tolerant task farm of wanmpi, for C.
 *
 * Link with -lwanmpi_farm (after mpicc's -lmpi); see docs/farm.md "From C".
 * Every process of the communicator calls wanmpi_farm_run with the same
 * configuration: rank 0 manages (create_task, process_result), the others
 * work (do_task). With cfg.writer = r (r >= 1) the manager is split:
 * rank 0 schedules (create_task), rank r receives every result and runs
 * process_result, the others work. The farm runs on duplicates of the
 * communicator, so the program's own messages and tags are never touched.
 * The structs below grew a field at their end when the writer came: a
 * program compiled against an older header must be recompiled. */
#ifndef WANMPI_FARM_H
#define WANMPI_FARM_H

#include <stddef.h>
#include <stdint.h>
#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Writes task `id` into `buf` (capacity `cap` = max_task_bytes) and its
 * length into `*len`. Manager only; called once per task. Return 0, or
 * non-zero to end the farm with an error. */
typedef int (*wanmpi_farm_create_fn)(void *user, uint64_t id, void *buf, size_t cap, size_t *len);
/* Computes task `id`: reads `len` bytes of `task`, writes the result into
 * `result` (capacity `cap` = max_result_bytes) and its length into
 * `*result_len`. Workers only. Return 0, or non-zero to end the farm. */
typedef int (*wanmpi_farm_do_fn)(void *user, uint64_t id, const void *task, size_t len,
                                 void *result, size_t cap, size_t *result_len);
/* Takes the result of task `id`: called exactly once per task, on the
 * manager (on the writer rank when cfg.writer is set). Return 0, or
 * non-zero to end the farm. */
typedef int (*wanmpi_farm_process_fn)(void *user, uint64_t id, const void *result, size_t len);

typedef struct wanmpi_farm_callbacks {
    wanmpi_farm_create_fn create_task;     /* needed on rank 0 */
    wanmpi_farm_do_fn do_task;             /* needed on the workers */
    wanmpi_farm_process_fn process_result; /* needed on rank 0, or on the writer */
    void *user;                            /* passed to every callback */
} wanmpi_farm_callbacks;

typedef struct wanmpi_farm_config {
    uint64_t total_tasks;    /* tasks 0..total_tasks-1 (read on rank 0) */
    uint32_t fanout;         /* k: tasks asked for per request (the papers' Fanout) */
    uint32_t max_requests;   /* MAXREQS: requests a worker keeps outstanding */
    int adaptive;            /* non-zero: depth adapts to measured RTT and task time */
    int end_game;            /* non-zero: fewer tasks near the end; a slow worker's
                                tasks copied to idle ones, first result wins */
    size_t max_task_bytes;   /* largest task */
    size_t max_result_bytes; /* largest result */
    double stall_timeout_s;  /* fail if nothing happens for this long */
    int print_summary;       /* non-zero: rank 0 prints per-worker statistics and
                                the model's prediction beside the measured time */
    int progress;            /* non-zero: rank 0 shows progress (a bar on a
                                terminal, a line every 5 s otherwise) */
    int writer;              /* 0 (default): rank 0 processes results; r >= 1:
                                rank r is the writer (process_result runs
                                there, it does no tasks); needs >= 3 processes */
} wanmpi_farm_config;

typedef struct wanmpi_farm_report {
    int is_manager;            /* 1 on rank 0; the fields below are rank 0's
                                  (with a writer: also filled on the writer, for
                                  tasks, elapsed_s and duplicates) */
    uint64_t tasks;            /* results processed (rank 0: tasks of the farm) */
    double elapsed_s;          /* the farm's time */
    double predicted_s;        /* the model's prediction (-1: none) */
    double compute_bound_s;    /* total task time / workers (-1: none) */
    uint64_t reissued;         /* copies handed out by the end game */
    uint64_t duplicates;       /* duplicate results discarded */
    uint64_t lost_workers;     /* workers lost (with mpirun --tolerate-rank-failure) */
    /* On a worker: its own counts. */
    uint64_t tasks_done;       /* tasks this worker computed */
    int is_writer;             /* 1 on the writer rank */
    int writer;                /* rank 0 and the writer: the writer's rank (0: none) */
} wanmpi_farm_report;

/* The defaults of the Rust library: fanout 1, MAXREQS 10, not adaptive,
 * end game on, 1 MiB tasks and results, 600 s stall timeout, summary and
 * progress on, no writer.
 * total_tasks is 0: set it. */
void wanmpi_farm_config_init(wanmpi_farm_config *cfg);

/* Runs the farm (collective over `comm`). Returns MPI_SUCCESS, an MPI error
 * class for an MPI failure, MPI_ERR_ARG for a bad configuration or missing
 * callback, MPI_ERR_OTHER when a callback returned non-zero or the farm
 * stalled. `report` may be NULL. wanmpi_farm_error_string describes the
 * latest failure of this process. */
int wanmpi_farm_run(MPI_Comm comm, const wanmpi_farm_config *cfg,
                    const wanmpi_farm_callbacks *callbacks, wanmpi_farm_report *report);

/* The message of this process's latest wanmpi_farm_run failure ("" if none);
 * valid until the next call. */
const char *wanmpi_farm_error_string(void);

#ifdef __cplusplus
}
#endif
#endif /* WANMPI_FARM_H */
