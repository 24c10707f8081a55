/* What reading MPI_T's counters costs, and what a tool that reads them
 * while the program runs costs the program: 2 ranks, a 1-byte ping-pong of
 * ITERS round trips, first without a tool, then with rank 0 reading
 * wanmpi_bytes_sent and wanmpi_<transport>_frames_sent every round trip;
 * then READS reads of each variable alone. Prints microseconds.
 * Usage: read_cost TRANSPORT_OF_THE_FRAMES [ITERS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static MPI_T_pvar_session session;

static MPI_T_pvar_handle handle(const char *name, int *count)
{
    int i;
    MPI_T_pvar_handle h;
    if (MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &i) != MPI_SUCCESS ||
        MPI_T_pvar_handle_alloc(session, i, NULL, &h, count) != MPI_SUCCESS || MPI_T_pvar_start(session, h) != MPI_SUCCESS) {
        fprintf(stderr, "no pvar %s\n", name);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return h;
}

static double pingpong(int rank, int iters, MPI_T_pvar_handle a, MPI_T_pvar_handle b)
{
    char c = 0;
    unsigned long long v[64];
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            MPI_Send(&c, 1, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(&c, 1, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (a != MPI_T_PVAR_HANDLE_NULL) {
                MPI_T_pvar_read(session, a, v);
                MPI_T_pvar_read(session, b, v);
            }
        } else {
            MPI_Recv(&c, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&c, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t) / iters * 1e6;
}

int main(int argc, char **argv)
{
    int rank, size, provided, count;
    char name[64];
    int iters = argc > 2 ? atoi(argv[2]) : 20000;
    unsigned long long v[64];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    snprintf(name, sizeof name, "wanmpi_%s_frames_sent", argc > 1 ? argv[1] : "shm");
    MPI_T_pvar_handle total = handle("wanmpi_bytes_sent", &count);
    MPI_T_pvar_handle frames = handle(name, &count);
    pingpong(rank, iters / 10, MPI_T_PVAR_HANDLE_NULL, MPI_T_PVAR_HANDLE_NULL); /* warm up */
    double plain = pingpong(rank, iters, MPI_T_PVAR_HANDLE_NULL, MPI_T_PVAR_HANDLE_NULL);
    double read = pingpong(rank, iters, total, frames);
    double plain2 = pingpong(rank, iters, MPI_T_PVAR_HANDLE_NULL, MPI_T_PVAR_HANDLE_NULL);
    if (rank == 0) {
        double t = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            MPI_T_pvar_read(session, total, v);
        double one = (MPI_Wtime() - t) / iters * 1e6;
        t = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            MPI_T_pvar_read(session, frames, v);
        double per_peer = (MPI_Wtime() - t) / iters * 1e6;
        printf("%s: 1 B round trip %.2f us without reads, %.2f us with two reads per round trip, %.2f us without again; "
               "one read of wanmpi_bytes_sent %.2f us, of %s %.2f us\n",
               argc > 1 ? argv[1] : "shm", plain, read, plain2, one, name, per_peer);
    }
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
