/* MPI_Comm_idup is nonblocking (MPI-4.0 §7.4.2): ranks may post it at
 * different times, wait on each other before completing it, overlap
 * idups of different communicators in any order and create other
 * communicators while idups are pending. Every duplicate must get a
 * context of its own: traffic on one never matches a receive on another.
 * An implementation that agrees the context inside the call deadlocks on
 * the staggered and ring parts (the run's timeout fails the test). */
#include "check.h"

static int wrank, wsize;

/* `c` works and is told apart from `other` (same ranks in both): a
 * message sent on `other` first is not received by a receive on `c`. */
static void check_distinct(MPI_Comm c, MPI_Comm other, const char *what)
{
    int rank, size, sum = -1, one = 1;
    OK(MPI_Comm_rank(c, &rank));
    OK(MPI_Comm_size(c, &size));
    OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == size, what);
    if (size < 2)
        return;
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    int a = 100 + rank, b = 200 + rank, got_b = -1, got_a = -1;
    MPI_Request r[2];
    OK(MPI_Isend(&a, 1, MPI_INT, to, 7, other, &r[0]));
    OK(MPI_Isend(&b, 1, MPI_INT, to, 7, c, &r[1]));
    OK(MPI_Recv(&got_b, 1, MPI_INT, from, 7, c, MPI_STATUS_IGNORE));
    OK(MPI_Recv(&got_a, 1, MPI_INT, from, 7, other, MPI_STATUS_IGNORE));
    OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    CHECK(got_b == 200 + from && got_a == 100 + from, what);
}

/* Rank 0 posts its idup only after every other rank posted theirs and
 * then completed a synchronous send to rank 0. */
static void staggered(void)
{
    MPI_Comm dup;
    MPI_Request req;
    int token = wrank;
    if (wrank == 0) {
        for (int i = 1; i < wsize; i++)
            OK(MPI_Recv(&token, 1, MPI_INT, i, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Comm_idup(MPI_COMM_WORLD, &dup, &req));
    } else {
        OK(MPI_Comm_idup(MPI_COMM_WORLD, &dup, &req));
        OK(MPI_Ssend(&token, 1, MPI_INT, 0, 0, MPI_COMM_WORLD));
    }
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK(req == MPI_REQUEST_NULL, "idup request freed by its wait");
    check_distinct(dup, MPI_COMM_WORLD, "staggered idup");
    OK(MPI_Comm_free(&dup));
}

/* Pairs (i, i+1) in a ring: each rank duplicates its two pairs, its own
 * first, so around the ring every pair is duplicated first by one member
 * and second by the other. */
static void ring(void)
{
    MPI_Comm mine = MPI_COMM_NULL, left = MPI_COMM_NULL, c;
    for (int i = 0; i < wsize; i++) {
        int in = wrank == i || wrank == (i + 1) % wsize;
        OK(MPI_Comm_split(MPI_COMM_WORLD, in ? 0 : MPI_UNDEFINED, wrank == i ? 0 : 1, &c));
        if (wrank == i)
            mine = c;
        else if (in)
            left = c;
    }
    MPI_Comm dups[2];
    MPI_Request req[2];
    OK(MPI_Comm_idup(mine, &dups[0], &req[0]));
    OK(MPI_Comm_idup(left, &dups[1], &req[1]));
    OK(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
    /* Checked in the order of the pairs' first member (blocking calls on
     * different communicators must not wait on each other in a cycle). */
    int own_first = wrank == 0;
    check_distinct(dups[own_first ? 0 : 1], own_first ? mine : left, "ring idup, first pair");
    check_distinct(dups[own_first ? 1 : 0], own_first ? left : mine, "ring idup, second pair");
    for (int i = 0; i < 2; i++)
        OK(MPI_Comm_free(&dups[i]));
    OK(MPI_Comm_free(&mine));
    OK(MPI_Comm_free(&left));
}

/* Idups pending while blocking calls create communicators on the same
 * parent: all of them must end up with different contexts. */
#define PENDING 4
static void mixed(void)
{
    MPI_Comm dups[PENDING], d, s;
    MPI_Request req[PENDING];
    for (int i = 0; i < PENDING; i++)
        OK(MPI_Comm_idup(MPI_COMM_WORLD, &dups[i], &req[i]));
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    OK(MPI_Comm_split(MPI_COMM_WORLD, 0, wrank, &s));
    OK(MPI_Waitall(PENDING, req, MPI_STATUSES_IGNORE));
    check_distinct(d, s, "dup beside pending idups");
    for (int i = 0; i < PENDING; i++) {
        check_distinct(dups[i], d, "idup against a dup");
        check_distinct(dups[i], dups[(i + 1) % PENDING], "idup against another idup");
    }
    for (int i = 0; i < PENDING; i++)
        OK(MPI_Comm_free(&dups[i]));
    OK(MPI_Comm_free(&d));
    OK(MPI_Comm_free(&s));
}

/* An inter-communicator's idup, staggered as above across both groups;
 * the duplicate keeps the groups and sums over the remote group. */
static void inter(void)
{
    if (wsize < 2)
        return;
    MPI_Comm local, ic, dup;
    MPI_Request req;
    int even = wrank % 2 == 0;
    OK(MPI_Comm_split(MPI_COMM_WORLD, even, wrank, &local));
    OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, even ? 1 : 0, 11, &ic));
    int lrank, rsize, token = 1;
    OK(MPI_Comm_rank(ic, &lrank));
    OK(MPI_Comm_remote_size(ic, &rsize));
    if (lrank == 0) {
        for (int i = 1; i < rsize; i++)
            OK(MPI_Recv(&token, 1, MPI_INT, i, 0, ic, MPI_STATUS_IGNORE));
        OK(MPI_Comm_idup(ic, &dup, &req));
    } else {
        OK(MPI_Comm_idup(ic, &dup, &req));
        OK(MPI_Ssend(&token, 1, MPI_INT, 0, 0, ic));
    }
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    int flag = 0, dsize = -1, sum = -1;
    OK(MPI_Comm_test_inter(dup, &flag));
    OK(MPI_Comm_remote_size(dup, &dsize));
    CHECK(flag && dsize == rsize, "idup of an inter-communicator is one");
    OK(MPI_Allreduce(&lrank, &sum, 1, MPI_INT, MPI_SUM, dup));
    CHECK(sum == rsize * (rsize - 1) / 2, "allreduce over the duplicated inter-communicator");
    OK(MPI_Comm_free(&dup));
    OK(MPI_Comm_free(&ic));
    OK(MPI_Comm_free(&local));
}

int main(int argc, char **argv)
{
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &wrank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &wsize));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    staggered();
    if (wsize >= 2)
        ring();
    mixed();
    inter();
    pass("idup");
    OK(MPI_Finalize());
    return 0;
}
