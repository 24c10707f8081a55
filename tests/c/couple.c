/* Two jobs started separately, coupled by a published port: run
 *   mpirun -n 2 couple server NAME &   mpirun -n 3 couple client NAME
 * The server's rank 0 opens a port and publishes it as NAME; the client
 * looks NAME up (waiting for it to appear) and connects. Over the
 * inter-communicator every client rank sends its rank to server rank
 * (rank % server size), each server rank sums what it got, and an
 * allreduce over the merged communicator checks that all 5 processes
 * take part. Both jobs print "PASS couple". */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include <time.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    CHECK(argc == 3, "usage: couple server|client NAME");
    int server = strcmp(argv[1], "server") == 0, rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char port[MPI_MAX_PORT_NAME] = "";
    MPI_Comm inter;
    if (server) {
        if (rank == 0) {
            OK(MPI_Open_port(MPI_INFO_NULL, port));
            OK(MPI_Publish_name(argv[2], MPI_INFO_NULL, port));
        }
        OK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter));
        if (rank == 0) {
            OK(MPI_Unpublish_name(argv[2], MPI_INFO_NULL, port));
            OK(MPI_Close_port(port));
        }
    } else {
        if (rank == 0) {
            /* The server may not have published yet: look for a while. */
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
            int rc = MPI_ERR_NAME;
            for (int i = 0; i < 600 && rc != MPI_SUCCESS; i++) {
                rc = MPI_Lookup_name(argv[2], MPI_INFO_NULL, port);
                if (rc != MPI_SUCCESS)
                    nanosleep(&(struct timespec){0, 50000000}, NULL);
            }
            CHECK(rc == MPI_SUCCESS, "the server published its port within 30 s");
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
        }
        OK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter));
    }
    int remote;
    MPI_Comm_remote_size(inter, &remote);
    if (server) {
        int expect = 0, got = 0;
        for (int c = rank; c < remote; c += size) {
            int v = -1;
            OK(MPI_Recv(&v, 1, MPI_INT, c, 1, inter, MPI_STATUS_IGNORE));
            CHECK(v == c, "a client's rank");
            got += v;
            expect += c;
        }
        CHECK(got == expect, "every client of this rank");
    } else {
        OK(MPI_Send(&rank, 1, MPI_INT, rank % remote, 1, inter));
    }
    MPI_Comm merged;
    OK(MPI_Intercomm_merge(inter, !server, &merged));
    int one = 1, all = 0, mrank;
    OK(MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, merged));
    MPI_Comm_rank(merged, &mrank);
    CHECK(all == size + remote, "everyone in the merged communicator");
    CHECK(server ? mrank == rank : mrank == remote + rank, "servers first");
    MPI_Comm_free(&merged);
    OK(MPI_Comm_disconnect(&inter));
    MPI_Barrier(MPI_COMM_WORLD);
    pass("couple");
    MPI_Finalize();
    return 0;
}
