/* Dynamic processes (MPI-4.0 chapter 11), in one job started by mpirun:
 * - MPI_Comm_spawn of this same program (the children see a parent),
 *   messages both ways on the inter-communicator, MPI_APPNUM, a merge
 *   with the parents first, MPI_Comm_disconnect after which the children
 *   have no parent;
 * - MPI_Comm_spawn_multiple of two commands (MPI_APPNUM 0 and 1);
 * - a spawn of a missing program fails with MPI_ERR_SPAWN at every rank;
 * - MPI_Open_port / MPI_Comm_accept / MPI_Comm_connect between the two
 *   halves of MPI_COMM_WORLD, the name found by MPI_Lookup_name;
 * - MPI_Comm_join over a TCP connection between ranks 0 and 1.
 * Run on 1 or more ranks; passes on MPICH 4.0.2 too (but for the port
 * and name parts, whose names there need MPICH's name server). */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

static void child(MPI_Comm parent, const char *role)
{
    int rank, size, remote, *appnum = NULL, flag = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    OK(MPI_Comm_remote_size(parent, &remote));
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag));
    CHECK(flag && appnum, "MPI_APPNUM is set in a spawned process");
    if (strcmp(role, "single") == 0) {
        CHECK(*appnum == 0, "one command: MPI_APPNUM 0");
        /* Parent rank (rank % remote) sent us its rank * 100 + ours. */
        int v = -1;
        OK(MPI_Recv(&v, 1, MPI_INT, rank % remote, 5, parent, MPI_STATUS_IGNORE));
        CHECK(v == (rank % remote) * 100 + rank, "the parent's message");
        v += 1;
        OK(MPI_Send(&v, 1, MPI_INT, rank % remote, 6, parent));
        MPI_Comm merged;
        int mrank, msize;
        OK(MPI_Intercomm_merge(parent, 1, &merged));
        MPI_Comm_rank(merged, &mrank);
        MPI_Comm_size(merged, &msize);
        CHECK(msize == size + remote && mrank == remote + rank, "children come after the parents");
        int sum = 0, one = 1;
        OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, merged));
        CHECK(sum == msize, "an allreduce over the merged communicator");
        MPI_Comm_free(&merged);
    } else {
        /* spawn_multiple: command "multi-a" has 1 process, "multi-b" 2. */
        CHECK(*appnum == (strcmp(role, "multi-a") == 0 ? 0 : 1), "MPI_APPNUM names the command");
        CHECK(size == 3, "both commands in one MPI_COMM_WORLD");
        OK(MPI_Send(appnum, 1, MPI_INT, 0, 7, parent));
    }
    OK(MPI_Comm_disconnect(&parent));
    CHECK(parent == MPI_COMM_NULL, "disconnect nulls the handle");
    OK(MPI_Comm_get_parent(&parent));
    CHECK(parent == MPI_COMM_NULL, "no parent after disconnect");
}

static void spawn_single(const char *self)
{
    int rank, size, errs[3] = {-1, -1, -1};
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *args[] = {"single", NULL};
    MPI_Comm kids;
    OK(MPI_Comm_spawn(self, args, 3, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &kids, errs));
    CHECK(errs[0] == MPI_SUCCESS && errs[1] == MPI_SUCCESS && errs[2] == MPI_SUCCESS, "one success code per child");
    int remote;
    OK(MPI_Comm_remote_size(kids, &remote));
    CHECK(remote == 3, "three children");
    for (int c = 0; c < 3; c++) {
        if (c % size != rank)
            continue;
        int v = rank * 100 + c, back = -1;
        OK(MPI_Send(&v, 1, MPI_INT, c, 5, kids));
        OK(MPI_Recv(&back, 1, MPI_INT, c, 6, kids, MPI_STATUS_IGNORE));
        CHECK(back == v + 1, "the child's answer");
    }
    MPI_Comm merged;
    int mrank, sum = 0, one = 1;
    OK(MPI_Intercomm_merge(kids, 0, &merged));
    MPI_Comm_rank(merged, &mrank);
    CHECK(mrank == rank, "parents come first");
    OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, merged));
    CHECK(sum == size + 3, "an allreduce over the merged communicator");
    MPI_Comm_free(&merged);
    OK(MPI_Comm_disconnect(&kids));
}

static void spawn_multiple(const char *self)
{
    char *cmds[2] = {(char *)self, (char *)self};
    char *a0[] = {"multi-a", NULL}, *a1[] = {"multi-b", NULL};
    char **argvs[2] = {a0, a1};
    int np[2] = {1, 2}, errs[3];
    MPI_Info infos[2] = {MPI_INFO_NULL, MPI_INFO_NULL};
    MPI_Comm kids;
    /* Only the root's commands count: others pass garbage. */
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    OK(MPI_Comm_spawn_multiple(2, rank == 0 ? cmds : NULL, rank == 0 ? argvs : NULL, rank == 0 ? np : NULL, rank == 0 ? infos : NULL, 0,
                               MPI_COMM_WORLD, &kids, rank == 0 ? errs : MPI_ERRCODES_IGNORE));
    if (rank == 0) {
        int seen[3];
        for (int c = 0; c < 3; c++)
            OK(MPI_Recv(&seen[c], 1, MPI_INT, c, 7, kids, MPI_STATUS_IGNORE));
        CHECK(seen[0] == 0 && seen[1] == 1 && seen[2] == 1, "commands in order, with their MPI_APPNUM");
    }
    OK(MPI_Comm_disconnect(&kids));
}

static void spawn_missing(void)
{
    int errs[2] = {0, 0};
    MPI_Comm kids = MPI_COMM_WORLD;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Comm_spawn("/nonexistent/wanmpi-no-such-program", MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &kids, errs);
    CHECK(rc != MPI_SUCCESS && error_class(rc) == MPI_ERR_SPAWN, "a missing program is MPI_ERR_SPAWN");
    CHECK(kids == MPI_COMM_NULL, "no communicator for a failed spawn");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void ports(void)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2)
        return;
    int low = rank < size / 2;
    MPI_Comm half, inter;
    OK(MPI_Comm_split(MPI_COMM_WORLD, low, rank, &half));
    char port[MPI_MAX_PORT_NAME] = "", service[64];
    snprintf(service, sizeof service, "wanmpi-dynamic-test-%d", (int)getpid());
    if (rank == 0) {
        OK(MPI_Open_port(MPI_INFO_NULL, port));
        OK(MPI_Publish_name(service, MPI_INFO_NULL, port));
    }
    /* The service name travels; the port is looked up by it. */
    OK(MPI_Bcast(service, sizeof service, MPI_CHAR, 0, MPI_COMM_WORLD));
    if (low) {
        OK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, half, &inter));
    } else {
        int hrank;
        MPI_Comm_rank(half, &hrank);
        if (hrank == 0)
            OK(MPI_Lookup_name(service, MPI_INFO_NULL, port));
        OK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, half, &inter));
    }
    int lsize, rsize;
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_remote_size(inter, &rsize);
    CHECK(lsize + rsize == size, "both halves joined");
    int token = rank, got = -1;
    /* Rank 0 of each half swaps its world rank. */
    int hrank;
    MPI_Comm_rank(inter, &hrank);
    if (hrank == 0)
        OK(MPI_Sendrecv(&token, 1, MPI_INT, 0, 9, &got, 1, MPI_INT, 0, 9, inter, MPI_STATUS_IGNORE));
    if (hrank == 0)
        CHECK(got == (low ? size / 2 : 0), "the other half's leader");
    OK(MPI_Comm_disconnect(&inter));
    MPI_Comm_free(&half);
    if (rank == 0) {
        OK(MPI_Unpublish_name(service, MPI_INFO_NULL, port));
        OK(MPI_Close_port(port));
    }
}

/* Rank 0's address as rank 1 reaches it: the one mpirun gives it
 * (WANMPI_ADDR, set on emulated hosts), else loopback. */
static const char *own_address(void)
{
    const char *a = getenv("WANMPI_ADDR");
    return a && *a ? a : "127.0.0.1";
}

static void join(void)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2)
        return;
    struct {
        char addr[64];
        int port;
    } where = {"", 0};
    int fd = -1;
    if (rank == 0) {
        int l = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {0};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 1) == 0, "a listening socket");
        socklen_t len = sizeof a;
        getsockname(l, (struct sockaddr *)&a, &len);
        where.port = ntohs(a.sin_port);
        snprintf(where.addr, sizeof where.addr, "%s", own_address());
        OK(MPI_Send(&where, sizeof where, MPI_BYTE, 1, 3, MPI_COMM_WORLD));
        fd = accept(l, NULL, NULL);
        close(l);
    } else if (rank == 1) {
        OK(MPI_Recv(&where, sizeof where, MPI_BYTE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {0};
        a.sin_family = AF_INET;
        CHECK(inet_pton(AF_INET, where.addr, &a.sin_addr) == 1, "rank 0's address");
        a.sin_port = htons((unsigned short)where.port);
        CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connected");
    }
    if (rank <= 1) {
        CHECK(fd >= 0, "a socket");
        MPI_Comm inter;
        OK(MPI_Comm_join(fd, &inter));
        int v = rank + 40, got = -1;
        OK(MPI_Sendrecv(&v, 1, MPI_INT, 0, 1, &got, 1, MPI_INT, 0, 1, inter, MPI_STATUS_IGNORE));
        CHECK(got == (1 - rank) + 40, "the other end's value");
        OK(MPI_Comm_disconnect(&inter));
        close(fd);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm parent;
    OK(MPI_Comm_get_parent(&parent));
    if (parent != MPI_COMM_NULL) {
        CHECK(argc > 1, "children get their arguments");
        child(parent, argv[1]);
        MPI_Finalize();
        return 0;
    }
    spawn_single(argv[0]);
    spawn_multiple(argv[0]);
    spawn_missing();
    ports();
    join();
    MPI_Barrier(MPI_COMM_WORLD);
    pass("dynamic");
    MPI_Finalize();
    return 0;
}
