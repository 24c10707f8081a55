/* Point-to-point semantics between ranks 0 and 1 (run with 2 ranks):
 * order per (source, tag, context), non-overtaking with MPI_ANY_TAG and
 * MPI_ANY_SOURCE, mpi_assert_allow_overtaking, unexpected messages before
 * and after the receive is posted, eager/rendezvous boundary sizes from 0 B
 * to 64 MiB, Ssend not completing before the match, truncation, and
 * simultaneous long messages both ways on one tag. */
#include "check.h"

#define N 200

static void fill(unsigned char *b, long n, int seed)
{
    for (long i = 0; i < n; i++)
        b[i] = (unsigned char)(i * 31 + seed);
}

static int same(const unsigned char *b, long n, int seed)
{
    for (long i = 0; i < n; i++)
        if (b[i] != (unsigned char)(i * 31 + seed))
            return 0;
    return 1;
}

static void order(int rank, MPI_Comm comm)
{
    int v;
    MPI_Status st;
    if (rank == 0) {
        for (int i = 0; i < N; i++)
            OK(MPI_Send(&i, 1, MPI_INT, 1, 5, comm));
        /* Mixed tags and sizes, some long: an ANY_TAG receive sees them in order. */
        static int big[40000];
        for (int i = 0; i < 30; i++) {
            big[0] = i;
            OK(MPI_Send(big, i % 5 == 0 ? 40000 : 1, MPI_INT, 1, i % 3, comm));
        }
    } else if (rank == 1) {
        for (int i = 0; i < N; i++) {
            OK(MPI_Recv(&v, 1, MPI_INT, 0, 5, comm, &st));
            CHECK(v == i, "same-tag order");
        }
        static int big[40000];
        for (int i = 0; i < 30; i++) {
            OK(MPI_Recv(big, 40000, MPI_INT, i % 2 ? MPI_ANY_SOURCE : 0, MPI_ANY_TAG, comm, &st));
            CHECK(big[0] == i, "ANY_TAG receive takes messages in send order");
            CHECK(st.MPI_TAG == i % 3 && st.MPI_SOURCE == 0, "status of ANY_TAG receive");
        }
    }
}

static void contexts(int rank)
{
    MPI_Comm dup;
    int v;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    if (rank == 0) {
        v = 1;
        OK(MPI_Send(&v, 1, MPI_INT, 1, 3, dup));
        v = 2;
        OK(MPI_Send(&v, 1, MPI_INT, 1, 3, MPI_COMM_WORLD));
    } else if (rank == 1) {
        OK(MPI_Recv(&v, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(v == 2, "world receive does not see the dup's message");
        OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, dup, MPI_STATUS_IGNORE));
        CHECK(v == 1, "dup receive");
    }
    OK(MPI_Comm_free(&dup));
    CHECK(dup == MPI_COMM_NULL, "freed comm is MPI_COMM_NULL");
}

static void overtaking(int rank)
{
    MPI_Comm c;
    MPI_Info info, used;
    char val[16];
    int flag, seen[40] = {0};
    static int big[50000];
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "mpi_assert_allow_overtaking", "true"));
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    OK(MPI_Comm_set_info(c, info));
    OK(MPI_Comm_get_info(c, &used));
    OK(MPI_Info_get(used, "mpi_assert_allow_overtaking", 15, val, &flag));
    CHECK(flag && strcmp(val, "true") == 0, "info key kept");
    if (rank == 0) {
        for (int i = 0; i < 40; i++) {
            big[0] = i;
            OK(MPI_Send(big, i % 4 == 0 ? 50000 : 1, MPI_INT, 1, i % 7, c));
        }
    } else if (rank == 1) {
        for (int i = 0; i < 40; i++) {
            MPI_Status st;
            OK(MPI_Recv(big, 50000, MPI_INT, 0, MPI_ANY_TAG, c, &st));
            CHECK(big[0] >= 0 && big[0] < 40 && !seen[big[0]], "each message once");
            CHECK(st.MPI_TAG == big[0] % 7, "tag matches payload");
            seen[big[0]] = 1;
        }
    }
    OK(MPI_Info_free(&info));
    OK(MPI_Info_free(&used));
    OK(MPI_Comm_free(&c));
}

static void unexpected(int rank)
{
    int v = 0;
    MPI_Request r;
    /* Before: the message arrives before the receive is posted. */
    if (rank == 0) {
        v = 41;
        OK(MPI_Send(&v, 1, MPI_INT, 1, 20, MPI_COMM_WORLD));
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 1) {
        OK(MPI_Recv(&v, 1, MPI_INT, 0, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(v == 41, "unexpected message delivered");
    }
    /* After: the receive is posted before the message is sent. */
    if (rank == 1)
        OK(MPI_Irecv(&v, 1, MPI_INT, 0, 21, MPI_COMM_WORLD, &r));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        v = 42;
        OK(MPI_Send(&v, 1, MPI_INT, 1, 21, MPI_COMM_WORLD));
    } else if (rank == 1) {
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK(v == 42 && r == MPI_REQUEST_NULL, "posted receive completed");
    }
}

static void sizes(int rank)
{
    const long ns[] = {0, 1, 65535, 65536, 65537, 1L << 20, 64L << 20};
    unsigned char *b = malloc(64L << 20);
    CHECK(b != NULL, "malloc");
    for (unsigned k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        long n = ns[k];
        if (rank == 0) {
            fill(b, n, (int)k);
            OK(MPI_Send(b, (int)n, MPI_BYTE, 1, 30, MPI_COMM_WORLD));
        } else if (rank == 1) {
            MPI_Status st;
            int count;
            memset(b, 0, (size_t)n);
            OK(MPI_Recv(b, (int)(64L << 20), MPI_BYTE, 0, 30, MPI_COMM_WORLD, &st));
            OK(MPI_Get_count(&st, MPI_BYTE, &count));
            CHECK(count == n, "received size");
            CHECK(same(b, n, (int)k), "received data");
        }
    }
    free(b);
}

static void ssend(int rank)
{
    int v = 7, go = 1, flag = 0;
    MPI_Request r;
    if (rank == 0) {
        OK(MPI_Issend(&v, 1, MPI_INT, 1, 40, MPI_COMM_WORLD, &r));
        double t = MPI_Wtime();
        while (MPI_Wtime() - t < 0.2) {
            OK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
            CHECK(!flag, "Issend completed before the receive matched it");
        }
        OK(MPI_Send(&go, 1, MPI_INT, 1, 41, MPI_COMM_WORLD));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    } else if (rank == 1) {
        OK(MPI_Recv(&go, 1, MPI_INT, 0, 41, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Recv(&v, 1, MPI_INT, 0, 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(v == 7, "ssend data");
    }
}

static void truncation(int rank)
{
    static int b[100000];
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    if (rank == 0) {
        OK(MPI_Send(b, 10, MPI_INT, 1, 50, MPI_COMM_WORLD));
        OK(MPI_Send(b, 100000, MPI_INT, 1, 51, MPI_COMM_WORLD));
        b[0] = 99;
        OK(MPI_Send(b, 1, MPI_INT, 1, 52, MPI_COMM_WORLD));
    } else if (rank == 1) {
        int rc = MPI_Recv(b, 5, MPI_INT, 0, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "eager truncation");
        rc = MPI_Recv(b, 10, MPI_INT, 0, 51, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "rendezvous truncation");
        OK(MPI_Recv(b, 1, MPI_INT, 0, 52, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(b[0] == 99, "connection usable after truncation");
    }
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

static void both_ways(int rank)
{
    long n = 4L << 20;
    unsigned char *s = malloc(n), *r = malloc(n);
    MPI_Request q[2];
    CHECK(s && r, "malloc");
    if (rank < 2) {
        int peer = 1 - rank;
        fill(s, n, rank);
        OK(MPI_Irecv(r, (int)n, MPI_BYTE, peer, 60, MPI_COMM_WORLD, &q[0]));
        OK(MPI_Isend(s, (int)n, MPI_BYTE, peer, 60, MPI_COMM_WORLD, &q[1]));
        OK(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
        CHECK(same(r, n, peer), "long message both ways");
    }
    free(s);
    free(r);
}

int main(int argc, char **argv)
{
    int rank, size;
    OK(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2, "needs 2 ranks");
    order(rank, MPI_COMM_WORLD);
    contexts(rank);
    overtaking(rank);
    unexpected(rank);
    sizes(rank);
    ssend(rank);
    truncation(rank);
    both_ways(rank);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    pass("p2p");
    OK(MPI_Finalize());
    return 0;
}
