/* Requests, probes and cancel between ranks 0 and 1 (run with 2 ranks):
 * probe/iprobe/mprobe/improbe results, cancel of a pending receive,
 * waitany/waitsome/testall over mixed requests, persistent requests,
 * Request_get_status, buffered sends, MPI_PROC_NULL. */
#include "check.h"

static void probes(int rank)
{
    int b[8], flag, count;
    MPI_Status st;
    MPI_Message m1, m2;
    if (rank == 0) {
        OK(MPI_Send(b, 7, MPI_INT, 1, 3, MPI_COMM_WORLD));
        b[0] = 1;
        OK(MPI_Send(b, 3, MPI_INT, 1, 4, MPI_COMM_WORLD));
        b[0] = 2;
        OK(MPI_Send(b, 5, MPI_INT, 1, 4, MPI_COMM_WORLD));
    } else if (rank == 1) {
        OK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        OK(MPI_Get_count(&st, MPI_INT, &count));
        CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 3 && count == 7, "probe status");
        OK(MPI_Iprobe(0, 3, MPI_COMM_WORLD, &flag, &st));
        CHECK(flag, "iprobe sees the probed message");
        OK(MPI_Recv(b, 8, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Iprobe(0, 99, MPI_COMM_WORLD, &flag, &st));
        CHECK(!flag, "iprobe without a message");
        OK(MPI_Mprobe(0, 4, MPI_COMM_WORLD, &m1, &st));
        OK(MPI_Get_count(&st, MPI_INT, &count));
        CHECK(count == 3, "mprobe takes the first message");
        flag = 0;
        for (int i = 0; i < 100000 && !flag; i++)
            OK(MPI_Improbe(0, 4, MPI_COMM_WORLD, &flag, &m2, &st));
        CHECK(flag, "improbe finds the second message");
        OK(MPI_Mrecv(b, 8, MPI_INT, &m2, &st));
        CHECK(b[0] == 2 && m2 == MPI_MESSAGE_NULL, "mrecv of the second message");
        OK(MPI_Mrecv(b, 8, MPI_INT, &m1, &st));
        OK(MPI_Get_count(&st, MPI_INT, &count));
        CHECK(b[0] == 1 && count == 3, "mrecv of the first message");
    }
}

static void cancel(int rank)
{
    int b, flag;
    MPI_Request r;
    MPI_Status st;
    if (rank == 1) {
        OK(MPI_Irecv(&b, 1, MPI_INT, 0, 77, MPI_COMM_WORLD, &r));
        OK(MPI_Cancel(&r));
        OK(MPI_Wait(&r, &st));
        OK(MPI_Test_cancelled(&st, &flag));
        CHECK(flag, "pending receive cancelled");
    }
}

static void mixed(int rank)
{
    int a = 0, b = 0, c = 5, go = 1, flag;
    MPI_Request r[4];
    if (rank == 0) {
        OK(MPI_Recv(&c, 1, MPI_INT, 1, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        a = 11;
        OK(MPI_Send(&a, 1, MPI_INT, 1, 11, MPI_COMM_WORLD));
        a = 10;
        OK(MPI_Send(&a, 1, MPI_INT, 1, 10, MPI_COMM_WORLD));
        OK(MPI_Recv(&go, 1, MPI_INT, 1, 15, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        a = 13;
        OK(MPI_Send(&a, 1, MPI_INT, 1, 13, MPI_COMM_WORLD));
        OK(MPI_Send(&a, 1, MPI_INT, 1, 14, MPI_COMM_WORLD));
    } else if (rank == 1) {
        int done = 0, outcount, idx[4], index;
        OK(MPI_Irecv(&a, 1, MPI_INT, 0, 10, MPI_COMM_WORLD, &r[0]));
        OK(MPI_Irecv(&b, 1, MPI_INT, 0, 11, MPI_COMM_WORLD, &r[1]));
        OK(MPI_Isend(&c, 1, MPI_INT, 0, 12, MPI_COMM_WORLD, &r[2]));
        r[3] = MPI_REQUEST_NULL;
        while (done < 3) {
            MPI_Status st[4];
            OK(MPI_Waitsome(4, r, &outcount, idx, st));
            CHECK(outcount >= 1, "waitsome completes something");
            done += outcount;
        }
        CHECK(done == 3 && a == 10 && b == 11, "all mixed requests completed");
        OK(MPI_Waitany(4, r, &index, MPI_STATUS_IGNORE));
        CHECK(index == MPI_UNDEFINED, "waitany over null requests");
        OK(MPI_Irecv(&a, 1, MPI_INT, 0, 13, MPI_COMM_WORLD, &r[0]));
        OK(MPI_Irecv(&b, 1, MPI_INT, 0, 14, MPI_COMM_WORLD, &r[1]));
        OK(MPI_Testall(2, r, &flag, MPI_STATUSES_IGNORE));
        CHECK(!flag, "testall before the messages are sent");
        OK(MPI_Send(&go, 1, MPI_INT, 0, 15, MPI_COMM_WORLD));
        for (int i = 0; i < 1000000 && !flag; i++)
            OK(MPI_Testall(2, r, &flag, MPI_STATUSES_IGNORE));
        CHECK(flag && a == 13 && b == 13, "testall completes");
        CHECK(r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL, "handles freed");
    }
}

static void persistent(int rank)
{
    int v = 0, flag;
    MPI_Request r;
    MPI_Status st;
    if (rank == 0) {
        OK(MPI_Send_init(&v, 1, MPI_INT, 1, 20, MPI_COMM_WORLD, &r));
        for (v = 0; v < 3; v++) {
            OK(MPI_Start(&r));
            OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        }
        CHECK(r != MPI_REQUEST_NULL, "persistent request survives wait");
        OK(MPI_Request_free(&r));
    } else if (rank == 1) {
        OK(MPI_Recv_init(&v, 1, MPI_INT, 0, 20, MPI_COMM_WORLD, &r));
        for (int i = 0; i < 3; i++) {
            OK(MPI_Start(&r));
            flag = 0;
            while (!flag)
                OK(MPI_Request_get_status(r, &flag, &st));
            OK(MPI_Wait(&r, &st));
            CHECK(v == i && st.MPI_TAG == 20, "persistent receive");
        }
        OK(MPI_Request_free(&r));
    }
}

static void buffered(int rank)
{
    int size = 10 * (100 * 4 + MPI_BSEND_OVERHEAD), v[100];
    void *buf = malloc(size), *back;
    OK(MPI_Buffer_attach(buf, size));
    if (rank == 0) {
        for (int i = 0; i < 5; i++) {
            v[0] = i;
            OK(MPI_Bsend(v, 100, MPI_INT, 1, 30, MPI_COMM_WORLD));
        }
    } else if (rank == 1) {
        for (int i = 0; i < 5; i++) {
            OK(MPI_Recv(v, 100, MPI_INT, 0, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(v[0] == i, "bsend order");
        }
    }
    OK(MPI_Buffer_detach(&back, &size));
    CHECK(back == buf, "detach returns the buffer");
    free(buf);
}

static void proc_null(void)
{
    int v = 3, count;
    MPI_Status st;
    OK(MPI_Send(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
    OK(MPI_Recv(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    OK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && count == 0 && v == 3, "proc null");
}

int main(int argc, char **argv)
{
    int rank;
    OK(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    probes(rank);
    cancel(rank);
    mixed(rank);
    persistent(rank);
    buffered(rank);
    proc_null();
    OK(MPI_Barrier(MPI_COMM_WORLD));
    pass("requests");
    OK(MPI_Finalize());
    return 0;
}
