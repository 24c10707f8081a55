/* Long messages between ranks of one host, the sizes single copy
 * (cross-memory attach) carries: contiguous and vector types on either
 * side, blocking, nonblocking and synchronous sends, MPI_ANY_SOURCE,
 * probes and matched probes, truncation and cancel. Every byte is checked.
 * Run over shared memory with single copy on and off (WANMPI_SHM_CMA=0):
 * the answers must be the same. Needs 2 ranks; the wildcard part 3.
 * With the argument "refuse" every rank first forbids itself
 * process_vm_readv by a seccomp filter (EPERM, as a container's profile
 * may): the reads are refused and the messages must come the ordinary way. */
#include "check.h"
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

static void refuse_process_vm_readv(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("seccomp");
        exit(3);
    }
}

static int rank, size;

static unsigned char pat(size_t i, int seed)
{
    return (unsigned char)(i * 131u + (unsigned)seed * 7u + (i >> 13));
}

static void fill(unsigned char *b, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = pat(i, seed);
}

static int same(const unsigned char *b, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(i, seed))
            return 0;
    return 1;
}

static const size_t sizes[] = {16384, 65536 + 3, 1 << 20, (4 << 20) + 5};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static void contiguous(void)
{
    unsigned char *a = malloc((4 << 20) + 5), *b = malloc((4 << 20) + 5);
    CHECK(a && b, "malloc");
    for (size_t k = 0; k < NSIZES; k++) {
        size_t n = sizes[k];
        int seed = (int)k + 1;
        if (rank == 0) {
            fill(a, n, seed);
            OK(MPI_Send(a, (int)n, MPI_BYTE, 1, 10, MPI_COMM_WORLD));
            OK(MPI_Ssend(a, (int)n, MPI_BYTE, 1, 11, MPI_COMM_WORLD));
        } else if (rank == 1) {
            MPI_Status st;
            int count = -1;
            memset(b, 0, n);
            OK(MPI_Recv(b, (int)n, MPI_BYTE, 0, 10, MPI_COMM_WORLD, &st));
            OK(MPI_Get_count(&st, MPI_BYTE, &count));
            CHECK(count == (int)n && same(b, n, seed), "blocking send");
            memset(b, 0, n);
            OK(MPI_Recv(b, (int)n, MPI_BYTE, 0, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(same(b, n, seed), "synchronous send");
        }
        /* both ways at once, nonblocking */
        if (rank < 2) {
            int other = 1 - rank;
            MPI_Request rq[2];
            fill(a, n, seed + rank);
            memset(b, 0, n);
            OK(MPI_Irecv(b, (int)n, MPI_BYTE, other, 12, MPI_COMM_WORLD, &rq[0]));
            OK(MPI_Isend(a, (int)n, MPI_BYTE, other, 12, MPI_COMM_WORLD, &rq[1]));
            OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
            CHECK(same(b, n, seed + other), "exchange");
        }
    }
    free(a);
    free(b);
}

/* 8192 blocks of 48 bytes every 80 (384 KiB of data): vector on the
 * sender, on the receiver, on both. */
static void vectors(void)
{
    const int count = 8192, block = 48, stride = 80;
    size_t span = (size_t)count * stride, data = (size_t)count * block;
    unsigned char *v = malloc(span), *c = malloc(data);
    CHECK(v && c, "malloc");
    MPI_Datatype vec;
    OK(MPI_Type_vector(count, block, stride, MPI_BYTE, &vec));
    OK(MPI_Type_commit(&vec));
    for (int mode = 0; mode < 3; mode++) { /* 0: vec->contig, 1: contig->vec, 2: vec->vec */
        if (rank == 0) {
            if (mode == 1) {
                fill(c, data, 40 + mode);
                OK(MPI_Send(c, (int)data, MPI_BYTE, 1, 20 + mode, MPI_COMM_WORLD));
            } else {
                memset(v, 0xEE, span);
                for (int i = 0; i < count; i++)
                    for (int j = 0; j < block; j++)
                        v[(size_t)i * stride + j] = pat((size_t)i * block + j, 40 + mode);
                OK(MPI_Send(v, 1, vec, 1, 20 + mode, MPI_COMM_WORLD));
            }
        } else if (rank == 1) {
            if (mode == 0) {
                memset(c, 0, data);
                OK(MPI_Recv(c, (int)data, MPI_BYTE, 0, 20 + mode, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                CHECK(same(c, data, 40 + mode), "vector sent, contiguous received");
            } else {
                memset(v, 0x55, span);
                OK(MPI_Recv(v, 1, vec, 0, 20 + mode, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                for (int i = 0; i < count; i++) {
                    for (int j = 0; j < stride; j++) {
                        unsigned char want = j < block ? pat((size_t)i * block + j, 40 + mode) : 0x55;
                        if (i == count - 1 && j >= block)
                            break; /* past the type's extent */
                        CHECK(v[(size_t)i * stride + j] == want, "vector received, gaps untouched");
                    }
                }
            }
        }
    }
    OK(MPI_Type_free(&vec));
    free(v);
    free(c);
}

static void wildcards_and_probes(void)
{
    const size_t n = 300000;
    unsigned char *b = malloc(n);
    CHECK(b, "malloc");
    if (size >= 3) {
        if (rank == 1 || rank == 2) {
            fill(b, n, 60 + rank);
            OK(MPI_Send(b, (int)n, MPI_BYTE, 0, 30, MPI_COMM_WORLD));
        } else if (rank == 0) {
            int seen = 0;
            for (int k = 0; k < 2; k++) {
                MPI_Status st;
                memset(b, 0, n);
                OK(MPI_Recv(b, (int)n, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                CHECK((st.MPI_SOURCE == 1 || st.MPI_SOURCE == 2) && st.MPI_TAG == 30, "wildcard status");
                CHECK(same(b, n, 60 + st.MPI_SOURCE), "wildcard data");
                seen |= 1 << st.MPI_SOURCE;
            }
            CHECK(seen == 6, "one message from each");
        }
    }
    if (rank == 0) {
        fill(b, n, 70);
        OK(MPI_Send(b, (int)n, MPI_BYTE, 1, 31, MPI_COMM_WORLD));
        fill(b, n, 71);
        OK(MPI_Send(b, (int)n, MPI_BYTE, 1, 32, MPI_COMM_WORLD));
    } else if (rank == 1) {
        MPI_Status st;
        int count = -1;
        OK(MPI_Probe(0, 31, MPI_COMM_WORLD, &st));
        OK(MPI_Get_count(&st, MPI_BYTE, &count));
        CHECK(count == (int)n, "probe count");
        memset(b, 0, n);
        OK(MPI_Recv(b, (int)n, MPI_BYTE, 0, 31, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(same(b, n, 70), "received after probe");
        MPI_Message msg;
        OK(MPI_Mprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, &st));
        OK(MPI_Get_count(&st, MPI_BYTE, &count));
        CHECK(count == (int)n && st.MPI_TAG == 32, "mprobe");
        memset(b, 0, n);
        OK(MPI_Mrecv(b, (int)n, MPI_BYTE, &msg, &st));
        CHECK(same(b, n, 71), "mrecv");
    }
    free(b);
}

static void truncation_and_cancel(void)
{
    const size_t n = 200000, cap = 120000;
    unsigned char *b = malloc(n);
    CHECK(b, "malloc");
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    if (rank == 0) {
        fill(b, n, 80);
        OK(MPI_Send(b, (int)n, MPI_BYTE, 1, 40, MPI_COMM_WORLD));
        fill(b, n, 81);
        OK(MPI_Send(b, (int)n, MPI_BYTE, 1, 41, MPI_COMM_WORLD));
    } else if (rank == 1) {
        MPI_Request rq;
        MPI_Status st;
        int flag = 0, count = -1;
        OK(MPI_Irecv(b, (int)n, MPI_BYTE, 0, 99, MPI_COMM_WORLD, &rq));
        OK(MPI_Cancel(&rq));
        OK(MPI_Wait(&rq, &st));
        OK(MPI_Test_cancelled(&st, &flag));
        CHECK(flag, "an unmatched receive is cancelled");
        memset(b, 0, n);
        int rc = MPI_Recv(b, (int)cap, MPI_BYTE, 0, 40, MPI_COMM_WORLD, &st);
        CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "truncation");
        OK(MPI_Get_count(&st, MPI_BYTE, &count));
        CHECK(count == (int)cap, "truncated count is the buffer's");
        CHECK(same(b, cap, 80), "the part that fits");
        memset(b, 0, n);
        OK(MPI_Recv(b, (int)n, MPI_BYTE, 0, 41, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(same(b, n, 81), "usable after truncation");
    }
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    free(b);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "refuse") == 0)
        refuse_process_vm_readv();
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size >= 2, "needs 2 ranks");
    contiguous();
    vectors();
    wildcards_and_probes();
    truncation_and_cancel();
    OK(MPI_Barrier(MPI_COMM_WORLD));
    pass("single_copy");
    OK(MPI_Finalize());
    return 0;
}
