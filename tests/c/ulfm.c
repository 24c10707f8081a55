/* ULFM under mpirun --tolerate-rank-failure, on 4 or more ranks: a rank is
 * killed, the survivors see MPIX_ERR_PROC_FAILED on operations with it
 * within 2 s, wildcard receives report MPIX_ERR_PROC_FAILED_PENDING until
 * the failure is acknowledged, agree reports unacknowledged failures
 * uniformly and ANDs the flags, shrink drops the dead, revoke fails
 * pending and later operations with MPIX_ERR_REVOKED, and an agreement
 * during which another rank dies ends with the same answer everywhere;
 * iagree and ishrink return at once and complete later.
 * Ranks: last = first victim, last-1 = second victim (dies during an
 * agreement). Prints "PASS ulfm" at rank 0. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank, size;

#define CHECK(c, ...)                                                        \
    do {                                                                     \
        if (!(c)) {                                                          \
            printf("FAIL rank %d line %d: ", rank, __LINE__);                \
            printf(__VA_ARGS__);                                             \
            printf("\n");                                                    \
            fflush(stdout);                                                  \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

static int cls(int rc) {
    int c = rc;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &c);
    return c;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void die(void) {
    fflush(stdout);
    raise(SIGKILL);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 4, "needs 4 ranks, has %d", size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int victim = size - 1, victim2 = size - 2;

    /* 1. An agreement without failures: the AND of every flag. */
    int flag = (rank == 1) ? 0x6 : 0x7;
    int rc = MPIX_Comm_agree(MPI_COMM_WORLD, &flag);
    CHECK(rc == MPI_SUCCESS && flag == 0x6, "agree: rc %d flag %#x", rc, flag);

    /* 2. The victim dies after a barrier; the others block receiving from it. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == victim)
        die();
    double t0 = now();
    int buf = 0;
    rc = MPI_Recv(&buf, 1, MPI_INT, victim, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double took = now() - t0;
    CHECK(cls(rc) == MPIX_ERR_PROC_FAILED, "recv from the dead: class %d", cls(rc));
    CHECK(took < 2.0, "the failure took %.2f s to show", took);
    if (rank == 0)
        printf("rank %d: MPIX_ERR_PROC_FAILED %.3f s after the barrier\n", rank, took);

    /* 2b. Nonblocking collectives with the dead member: they end (an error
     * at some members, success maybe at others, as ULFM allows), none hangs. */
    for (int k = 0; k < 2; k++) {
        MPI_Request cr;
        int in = 1, out = 0;
        t0 = now();
        if (k == 0)
            MPI_Ibarrier(MPI_COMM_WORLD, &cr);
        else
            MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &cr);
        rc = MPI_Wait(&cr, MPI_STATUS_IGNORE);
        took = now() - t0;
        CHECK(rc == MPI_SUCCESS || cls(rc) == MPIX_ERR_PROC_FAILED, "%s with a dead member: class %d", k ? "iallreduce" : "ibarrier", cls(rc));
        CHECK(took < 3.0, "%s with a dead member took %.2f s", k ? "iallreduce" : "ibarrier", took);
    }

    /* 3. A wildcard receive: pending while the failure is unacknowledged. */
    MPI_Request req;
    MPI_Irecv(&buf, 1, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &req);
    rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(cls(rc) == MPIX_ERR_PROC_FAILED_PENDING, "wildcard wait: class %d", cls(rc));
    CHECK(req != MPI_REQUEST_NULL, "the pending request was freed");
    rc = MPI_Recv(&buf, 1, MPI_INT, MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(cls(rc) == MPIX_ERR_PROC_FAILED, "blocking wildcard recv: class %d", cls(rc));

    /* 4. Not acknowledged: agree fails at everyone, the flag still agreed. */
    flag = 1;
    rc = MPIX_Comm_agree(MPI_COMM_WORLD, &flag);
    CHECK(cls(rc) == MPIX_ERR_PROC_FAILED && flag == 1, "agree before ack: class %d flag %d", cls(rc), flag);

    /* 5. Acknowledge: get_acked names the victim; get_failed too. */
    MPI_Group acked, failed, wg;
    CHECK(MPIX_Comm_failure_ack(MPI_COMM_WORLD) == MPI_SUCCESS, "ack");
    MPIX_Comm_failure_get_acked(MPI_COMM_WORLD, &acked);
    MPIX_Comm_get_failed(MPI_COMM_WORLD, &failed);
    int n = -1, wr = -1, zero = 0;
    MPI_Group_size(acked, &n);
    CHECK(n == 1, "acked group of %d", n);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_translate_ranks(acked, 1, &zero, wg, &wr);
    CHECK(wr == victim, "acked rank %d", wr);
    MPI_Group_size(failed, &n);
    CHECK(n == 1, "failed group of %d", n);
    int num = -1;
    MPIX_Comm_ack_failed(MPI_COMM_WORLD, 0, &num);
    CHECK(num == 1, "ack_failed kept %d", num);
    MPI_Group_free(&acked);
    MPI_Group_free(&failed);

    /* 6. Acknowledged everywhere: agree succeeds. */
    flag = rank == 0 ? 3 : 1;
    rc = MPIX_Comm_agree(MPI_COMM_WORLD, &flag);
    CHECK(rc == MPI_SUCCESS && flag == 1, "agree after ack: class %d flag %d", cls(rc), flag);

    /* 7. The pending wildcard receive completes now that rank 1 sends. */
    MPI_Comm small;
    rc = MPIX_Comm_shrink(MPI_COMM_WORLD, &small);
    CHECK(rc == MPI_SUCCESS, "shrink: class %d", cls(rc));
    int ss, sr;
    MPI_Comm_size(small, &ss);
    MPI_Comm_rank(small, &sr);
    CHECK(ss == size - 1 && sr == rank, "shrunk: size %d rank %d", ss, sr);
    if (rank == 1) {
        int v = 42;
        MPI_Send(&v, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
    }
    if (rank == 0) {
        MPI_Status st;
        rc = MPI_Wait(&req, &st);
        CHECK(rc == MPI_SUCCESS && buf == 42 && st.MPI_SOURCE == 1, "wildcard after ack: class %d buf %d", cls(rc), buf);
    } else {
        MPI_Cancel(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    rc = MPI_Barrier(small);
    CHECK(rc == MPI_SUCCESS, "barrier on the shrunk communicator: class %d", cls(rc));

    /* 8. Revoke: rank 0 revokes while the others wait to receive from it. */
    MPI_Comm dup;
    MPI_Comm_dup(small, &dup);
    if (rank == 0) {
        CHECK(MPIX_Comm_revoke(dup) == MPI_SUCCESS, "revoke");
    } else {
        rc = MPI_Recv(&buf, 1, MPI_INT, 0, 9, dup, MPI_STATUS_IGNORE);
        CHECK(cls(rc) == MPIX_ERR_REVOKED, "recv on a revoked communicator: class %d", cls(rc));
    }
    rc = MPI_Send(&buf, 1, MPI_INT, (rank + 1) % ss, 9, dup);
    CHECK(cls(rc) == MPIX_ERR_REVOKED, "send after revoke: class %d", cls(rc));
    int revoked = 0;
    MPIX_Comm_is_revoked(dup, &revoked);
    CHECK(revoked, "is_revoked");
    MPI_Comm fresh;
    rc = MPIX_Comm_shrink(dup, &fresh); /* works on a revoked communicator */
    CHECK(rc == MPI_SUCCESS, "shrink of a revoked communicator: class %d", cls(rc));
    CHECK(MPI_Barrier(fresh) == MPI_SUCCESS, "barrier after revoke+shrink");
    /* The barrier can return at the next victim before its own messages
     * left; an agreement returns only once every member joined it, so
     * nobody is still in the barrier when the victim dies below. */
    flag = 1;
    CHECK(MPIX_Comm_agree(fresh, &flag) == MPI_SUCCESS && flag == 1, "agree after revoke+shrink");
    MPI_Comm_free(&dup);
    MPI_Comm_free(&fresh);

    /* 9. The second victim dies instead of taking part in an agreement. */
    if (rank == victim2)
        die();
    flag = rank == 0 ? 0xf0 : 0xff;
    rc = MPIX_Comm_agree(small, &flag);
    CHECK(cls(rc) == MPIX_ERR_PROC_FAILED && flag == 0xf0, "agree with a death during it: class %d flag %#x", cls(rc), flag);
    MPIX_Comm_failure_ack(small);
    flag = 5;
    rc = MPIX_Comm_agree(small, &flag);
    CHECK(rc == MPI_SUCCESS && flag == 5, "agree after the second ack: class %d", cls(rc));
    MPI_Comm smaller;
    CHECK(MPIX_Comm_shrink(small, &smaller) == MPI_SUCCESS, "second shrink");
    MPI_Comm_size(smaller, &ss);
    CHECK(ss == size - 2, "second shrink: size %d", ss);
    int sum = 0, one = 1;
    CHECK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, smaller) == MPI_SUCCESS && sum == size - 2, "allreduce: %d", sum);

    /* 10. iagree and ishrink return at once: rank 0 starts each, then sends
     * what rank 1 needs before rank 1 joins (a blocking one would hang). */
    MPI_Request ar;
    int got = -1, v = 77;
    flag = rank == 1 ? 0x5 : 0x7;
    if (rank == 0) {
        CHECK(MPIX_Comm_iagree(smaller, &flag, &ar) == MPI_SUCCESS, "iagree");
        MPI_Send(&v, 1, MPI_INT, 1, 11, smaller);
    } else {
        if (rank == 1)
            MPI_Recv(&got, 1, MPI_INT, 0, 11, smaller, MPI_STATUS_IGNORE);
        CHECK(MPIX_Comm_iagree(smaller, &flag, &ar) == MPI_SUCCESS, "iagree");
    }
    rc = MPI_Wait(&ar, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS && flag == 0x5, "iagree overlapped: class %d flag %#x", cls(rc), flag);
    MPI_Comm sh;
    if (rank == 0) {
        CHECK(MPIX_Comm_ishrink(smaller, &sh, &ar) == MPI_SUCCESS, "ishrink");
        MPI_Send(&v, 1, MPI_INT, 1, 12, smaller);
    } else {
        if (rank == 1)
            MPI_Recv(&got, 1, MPI_INT, 0, 12, smaller, MPI_STATUS_IGNORE);
        CHECK(MPIX_Comm_ishrink(smaller, &sh, &ar) == MPI_SUCCESS, "ishrink");
    }
    rc = MPI_Wait(&ar, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS, "ishrink overlapped: class %d", cls(rc));
    MPI_Comm_size(sh, &ss);
    sum = 0;
    CHECK(ss == size - 2 && MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, sh) == MPI_SUCCESS && sum == size - 2, "ishrunk: size %d sum %d", ss, sum);
    MPI_Comm_free(&sh);

    MPI_Comm_free(&smaller);
    MPI_Comm_free(&small);
    MPI_Group_free(&wg);
    if (rank == 0)
        printf("PASS ulfm\n");
    MPI_Finalize();
    return 0;
}
