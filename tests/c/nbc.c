/* Nonblocking (MPI_I...) and persistent (..._init) collectives, and
 * MPI_Alltoallw: results equal to what the blocking calls give, several
 * outstanding at once and completed in different orders on different
 * ranks, mixed with blocking collectives and point-to-point traffic,
 * in-place forms, and rank order kept for a non-commutative operation. */
#include "check.h"

static int rank, size;

/* a op b = a: associative, not commutative; the result is the lowest rank's value. */
static void keep_left(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    memcpy(inout, in, sizeof(int) * (size_t)*len);
}

static void waits_in_any_order(MPI_Request *rq, int n, int persistent)
{
    if (rank % 2 == 0) {
        OK(MPI_Waitall(n, rq, MPI_STATUSES_IGNORE));
        return;
    }
    for (int i = n - 1; i >= 0; i--) {
        int done = 0;
        while (!done)
            OK(MPI_Test(&rq[i], &done, MPI_STATUS_IGNORE));
        CHECK((rq[i] == MPI_REQUEST_NULL) != persistent, "a completed request is freed unless persistent");
    }
}

static void reductions(void)
{
    int mine[3] = {rank + 1, 10 * rank, -rank}, sum[3], mx[3], scan[3], exscan[3] = {-7, -7, -7}, red[3] = {0};
    int total = size * (size + 1) / 2;
    MPI_Request rq[5];
    MPI_Op left;
    OK(MPI_Op_create(keep_left, 0, &left));
    OK(MPI_Iallreduce(mine, sum, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Iallreduce(mine, mx, 3, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &rq[1]));
    OK(MPI_Iscan(mine, scan, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[2]));
    OK(MPI_Iexscan(mine, exscan, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[3]));
    OK(MPI_Ireduce(mine, red, 3, MPI_INT, left, size - 1, MPI_COMM_WORLD, &rq[4]));
    waits_in_any_order(rq, 5, 0);
    CHECK(sum[0] == total && sum[1] == 10 * (total - size) && sum[2] == -(total - size), "Iallreduce sum");
    CHECK(mx[0] == size && mx[1] == 10 * (size - 1) && mx[2] == 0, "Iallreduce max");
    CHECK(scan[0] == (rank + 1) * (rank + 2) / 2, "Iscan");
    if (rank > 0)
        CHECK(exscan[0] == rank * (rank + 1) / 2, "Iexscan");
    if (rank == size - 1)
        CHECK(red[0] == 1 && red[1] == 0 && red[2] == 0, "Ireduce keeps rank order (non-commutative op)");

    /* In place, with a blocking allreduce started after it in between. */
    int inplace[2] = {rank, 1}, blocking = 0;
    MPI_Request r;
    OK(MPI_Iallreduce(MPI_IN_PLACE, inplace, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
    OK(MPI_Allreduce(&rank, &blocking, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(inplace[0] == size * (size - 1) / 2 && inplace[1] == size && blocking == inplace[0], "in-place Iallreduce beside a blocking one");

    /* Reduce_scatter: rank i keeps i+1 sums. */
    int n = size * (size + 1) / 2, *contrib = malloc(sizeof(int) * (size_t)n), *rc = malloc(sizeof(int) * (size_t)size), got[16];
    for (int i = 0; i < n; i++)
        contrib[i] = i + rank;
    for (int i = 0; i < size; i++)
        rc[i] = i + 1;
    OK(MPI_Ireduce_scatter(contrib, got, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    int first = rank * (rank + 1) / 2;
    for (int i = 0; i <= rank; i++)
        CHECK(got[i] == size * (first + i) + size * (size - 1) / 2, "Ireduce_scatter");
    OK(MPI_Ireduce_scatter_block(contrib, got, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(got[0] == size * rank + size * (size - 1) / 2, "Ireduce_scatter_block");
    free(contrib), free(rc);
    OK(MPI_Op_free(&left));
}

static void data_movement(void)
{
    int root = size / 2, one = 100 + rank;
    int *all = malloc(sizeof(int) * (size_t)size * 2), *counts = malloc(sizeof(int) * (size_t)size);
    int *displs = malloc(sizeof(int) * (size_t)size);
    MPI_Request rq[4];
    double b[40];
    for (int i = 0; i < 40; i++)
        b[i] = rank == root ? i * 0.5 : -1;
    /* A strided bcast: every other double. */
    MPI_Datatype every2;
    OK(MPI_Type_vector(20, 1, 2, MPI_DOUBLE, &every2));
    OK(MPI_Type_commit(&every2));
    OK(MPI_Ibcast(b, 1, every2, root, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Igather(&one, 1, MPI_INT, all, 1, MPI_INT, root, MPI_COMM_WORLD, &rq[1]));
    int back = -1, *src = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++)
        src[i] = 1000 + i;
    OK(MPI_Iscatter(src, 1, MPI_INT, &back, 1, MPI_INT, root, MPI_COMM_WORLD, &rq[2]));
    int *ag = malloc(sizeof(int) * (size_t)size);
    OK(MPI_Iallgather(&one, 1, MPI_INT, ag, 1, MPI_INT, MPI_COMM_WORLD, &rq[3]));
    waits_in_any_order(rq, 4, 0);
    for (int i = 0; i < 40; i++)
        CHECK(b[i] == (i % 2 == 0 || rank == root ? i * 0.5 : -1), "Ibcast of a vector type leaves the gaps alone");
    if (rank == root)
        for (int i = 0; i < size; i++)
            CHECK(all[i] == 100 + i, "Igather");
    CHECK(back == 1000 + rank, "Iscatter");
    for (int i = 0; i < size; i++)
        CHECK(ag[i] == 100 + i, "Iallgather");

    /* v-forms: rank i contributes i+1 ints (up to 2 here: counts min(i+1, 2)). */
    int mine[2] = {10 * rank, 10 * rank + 1}, mycount = rank + 1 > 2 ? 2 : rank + 1, at = 0;
    for (int i = 0; i < size; i++) {
        counts[i] = i + 1 > 2 ? 2 : i + 1;
        displs[i] = at;
        at += counts[i];
    }
    memset(all, 0, sizeof(int) * (size_t)size * 2);
    OK(MPI_Iallgatherv(mine, mycount, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    for (int i = 0; i < size; i++)
        for (int j = 0; j < counts[i]; j++)
            CHECK(all[displs[i] + j] == 10 * i + j, "Iallgatherv");
    int *gv = calloc((size_t)at, sizeof(int));
    OK(MPI_Igatherv(mine, mycount, MPI_INT, gv, counts, displs, MPI_INT, root, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    if (rank == root)
        CHECK(memcmp(gv, all, sizeof(int) * (size_t)at) == 0, "Igatherv");
    int sv[2] = {-1, -1};
    OK(MPI_Iscatterv(all, counts, displs, MPI_INT, sv, mycount, MPI_INT, root, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    CHECK(sv[0] == 10 * rank && (mycount < 2 || sv[1] == 10 * rank + 1), "Iscatterv");

    /* Allgather in place. */
    for (int i = 0; i < size; i++)
        ag[i] = i == rank ? 7 * rank : -1;
    OK(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ag, 1, MPI_INT, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    for (int i = 0; i < size; i++)
        CHECK(ag[i] == 7 * i, "in-place Iallgather");
    OK(MPI_Type_free(&every2));
    free(all), free(counts), free(displs), free(src), free(ag), free(gv);
}

static void all_to_all(void)
{
    int *s = malloc(sizeof(int) * (size_t)size), *r = malloc(sizeof(int) * (size_t)size);
    int *ones = malloc(sizeof(int) * (size_t)size), *steps = malloc(sizeof(int) * (size_t)size);
    int *bytes = malloc(sizeof(int) * (size_t)size);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)size);
    MPI_Request rq;
    for (int i = 0; i < size; i++) {
        s[i] = 100 * rank + i;
        ones[i] = 1;
        steps[i] = i;
        bytes[i] = i * (int)sizeof(int);
        types[i] = MPI_INT;
    }
    OK(MPI_Ialltoall(s, 1, MPI_INT, r, 1, MPI_INT, MPI_COMM_WORLD, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int i = 0; i < size; i++)
        CHECK(r[i] == 100 * i + rank, "Ialltoall");
    memset(r, 0, sizeof(int) * (size_t)size);
    OK(MPI_Ialltoallv(s, ones, steps, MPI_INT, r, ones, steps, MPI_INT, MPI_COMM_WORLD, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int i = 0; i < size; i++)
        CHECK(r[i] == 100 * i + rank, "Ialltoallv");
    memset(r, 0, sizeof(int) * (size_t)size);
    OK(MPI_Alltoallw(s, ones, bytes, types, r, ones, bytes, types, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++)
        CHECK(r[i] == 100 * i + rank, "Alltoallw");
    memset(r, 0, sizeof(int) * (size_t)size);
    OK(MPI_Ialltoallw(s, ones, bytes, types, r, ones, bytes, types, MPI_COMM_WORLD, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int i = 0; i < size; i++)
        CHECK(r[i] == 100 * i + rank, "Ialltoallw");
    /* In place. */
    memcpy(r, s, sizeof(int) * (size_t)size);
    OK(MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, 1, MPI_INT, MPI_COMM_WORLD, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int i = 0; i < size; i++)
        CHECK(r[i] == 100 * i + rank, "in-place Ialltoall");
    free(s), free(r), free(ones), free(steps), free(bytes), free(types);
}

static void persistent_and_overlap(void)
{
    int in = 0, out = -1, b = -1;
    MPI_Request rq[3];
    OK(MPI_Allreduce_init(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[0]));
    OK(MPI_Bcast_init(&b, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[1]));
    OK(MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &rq[2]));
    for (int round = 1; round <= 3; round++) {
        in = rank * round; /* the input is read at each start */
        if (rank == 0)
            b = 11 * round;
        OK(MPI_Startall(3, rq));
        waits_in_any_order(rq, 3, 1);
        CHECK(rq[0] != MPI_REQUEST_NULL, "a persistent request stays allocated");
        CHECK(out == round * size * (size - 1) / 2, "Allreduce_init, started again");
        CHECK(b == 11 * round, "Bcast_init, started again");
    }
    for (int i = 0; i < 3; i++)
        OK(MPI_Request_free(&rq[i]));

    /* A nonblocking barrier overlapped with point-to-point traffic. */
    MPI_Request bar;
    int token = rank, from = -1;
    OK(MPI_Ibarrier(MPI_COMM_WORLD, &bar));
    OK(MPI_Sendrecv(&token, 1, MPI_INT, (rank + 1) % size, 5, &from, 1, MPI_INT, (rank + size - 1) % size, 5, MPI_COMM_WORLD,
                    MPI_STATUS_IGNORE));
    OK(MPI_Wait(&bar, MPI_STATUS_IGNORE));
    CHECK(from == (rank + size - 1) % size, "point-to-point beside an Ibarrier");

    /* Many outstanding on a duplicated communicator. */
    MPI_Comm dup;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    enum { N = 20 };
    int vals[N], sums[N];
    MPI_Request many[N];
    for (int i = 0; i < N; i++) {
        vals[i] = i * (rank + 1);
        OK(MPI_Iallreduce(&vals[i], &sums[i], 1, MPI_INT, MPI_SUM, dup, &many[i]));
    }
    waits_in_any_order(many, N, 0);
    for (int i = 0; i < N; i++)
        CHECK(sums[i] == i * size * (size + 1) / 2, "20 outstanding Iallreduce");
    OK(MPI_Comm_free(&dup));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= 16, "at most 16 ranks");
    reductions();
    data_movement();
    all_to_all();
    persistent_and_overlap();
    pass("nbc");
    MPI_Finalize();
    return 0;
}
