/* One-sided communication (MPI-4.0 chapter 12) as a program sees it: every
 * window flavor, put/get with derived datatypes, accumulates, atomics,
 * request-based operations, every synchronisation, attributes and errors.
 * Checked against MPICH 4.0.2 with mpicc.mpich/mpirun.mpich. */
#include "check.h"

static int rank, size;

/* Fence epochs: each rank puts its rank into slot [rank] of every other
 * rank's window, through a strided target type, and reads them back. */
static void fence(void)
{
    int *mem = calloc(2 * size, sizeof(int));
    MPI_Win win;
    OK(MPI_Win_create(mem, 2 * size * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    OK(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    int v[2] = {rank + 1, -(rank + 1)};
    MPI_Datatype stride;
    OK(MPI_Type_vector(2, 1, size, MPI_INT, &stride));
    OK(MPI_Type_commit(&stride));
    for (int t = 0; t < size; t++)
        OK(MPI_Put(v, 2, MPI_INT, t, rank, 1, stride, win));
    OK(MPI_Win_fence(0, win));
    for (int r = 0; r < size; r++)
        CHECK(mem[r] == r + 1 && mem[size + r] == -(r + 1), "fence: puts landed");
    int got[2] = {0, 0}, right = (rank + 1) % size;
    OK(MPI_Get(got, 2, MPI_INT, right, rank, 1, stride, win));
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    CHECK(got[0] == rank + 1 && got[1] == -(rank + 1), "fence: get through a strided type");
    OK(MPI_Type_free(&stride));
    OK(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL, "MPI_Win_free sets MPI_WIN_NULL");
    free(mem);
}

/* Passive target: accumulates from everyone under shared locks, then
 * fetch-and-op tickets under exclusive locks, compare-and-swap. */
static void passive(void)
{
    long *base;
    MPI_Win win;
    OK(MPI_Win_allocate(4 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    for (int i = 0; i < 4; i++)
        base[i] = 0;
    OK(MPI_Win_unlock(rank, win));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    long one = 1, old = -1;
    for (int i = 0; i < 10; i++) {
        OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        OK(MPI_Accumulate(&one, 1, MPI_LONG, 0, 0, 1, MPI_LONG, MPI_SUM, win));
        OK(MPI_Win_unlock(0, win));
    }
    long tickets[5];
    for (int i = 0; i < 5; i++) {
        OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        OK(MPI_Fetch_and_op(&one, &tickets[i], MPI_LONG, 0, 1, MPI_SUM, win));
        OK(MPI_Win_unlock(0, win));
    }
    long mine = rank + 1, expect = 0;
    OK(MPI_Win_lock_all(0, win));
    OK(MPI_Compare_and_swap(&mine, &expect, &old, MPI_LONG, 0, 2, win));
    OK(MPI_Win_flush(0, win));
    OK(MPI_Win_unlock_all(win));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    /* Every ticket is unique: their sum over all ranks is 0+1+...+(5n-1). */
    long sum = 0, all = 0, winners = 0, won = old == 0;
    for (int i = 0; i < 5; i++)
        sum += tickets[i];
    OK(MPI_Allreduce(&sum, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    OK(MPI_Allreduce(&won, &winners, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    CHECK(all == (long)5 * size * (5 * size - 1) / 2, "fetch_and_op tickets unique");
    CHECK(winners == 1, "compare_and_swap: exactly one winner");
    if (rank == 0) {
        OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        CHECK(base[0] == 10L * size, "accumulates under shared locks");
        CHECK(base[1] == 5L * size, "fetch_and_op count");
        CHECK(base[2] >= 1 && base[2] <= size, "compare_and_swap stored the winner");
        OK(MPI_Win_unlock(0, win));
    }
    /* Get_accumulate with MPI_NO_OP is an atomic read. */
    long seen = -1;
    OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    OK(MPI_Get_accumulate(NULL, 0, MPI_LONG, &seen, 1, MPI_LONG, 0, 0, 1, MPI_LONG, MPI_NO_OP, win));
    OK(MPI_Win_unlock(0, win));
    CHECK(seen == 10L * size, "get_accumulate with MPI_NO_OP");
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_free(&win));
}

/* Post-start-complete-wait: rank 0 exposes its window to everyone else. */
static void pscw(void)
{
    int *mem = calloc(size, sizeof(int));
    MPI_Win win;
    MPI_Group world, others, zero;
    OK(MPI_Win_create(mem, size * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    int z = 0;
    OK(MPI_Group_excl(world, 1, &z, &others));
    OK(MPI_Group_incl(world, 1, &z, &zero));
    if (rank == 0) {
        if (size > 1) {
            OK(MPI_Win_post(others, 0, win));
            OK(MPI_Win_wait(win));
        }
        for (int r = 1; r < size; r++)
            CHECK(mem[r] == 7 * r, "PSCW: puts complete at MPI_Win_wait");
    } else {
        OK(MPI_Win_start(zero, 0, win));
        int v = 7 * rank;
        MPI_Request rq;
        OK(MPI_Rput(&v, 1, MPI_INT, 0, rank, 1, MPI_INT, win, &rq));
        OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        OK(MPI_Win_complete(win));
    }
    OK(MPI_Group_free(&world));
    OK(MPI_Group_free(&others));
    OK(MPI_Group_free(&zero));
    OK(MPI_Win_free(&win));
    free(mem);
}

/* Shared memory windows: every rank stores into its neighbour's part directly. */
static void shared(void)
{
    int *mine;
    MPI_Win win;
    OK(MPI_Win_allocate_shared(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mine, &win));
    MPI_Aint sz;
    int unit, *right;
    OK(MPI_Win_shared_query(win, (rank + 1) % size, &sz, &unit, &right));
    CHECK(sz == sizeof(int) && unit == sizeof(int), "shared_query size and unit");
    OK(MPI_Win_lock_all(0, win));
    *right = 100 + rank;
    OK(MPI_Win_sync(win));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_sync(win));
    CHECK(*mine == 100 + (rank + size - 1) % size, "load/store through a shared window");
    OK(MPI_Win_unlock_all(win));
    OK(MPI_Win_free(&win));
}

/* Dynamic windows: memory attached after creation, addressed absolutely. */
static void dynamic(void)
{
    MPI_Win win;
    OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    double *mem = calloc(4, sizeof(double));
    OK(MPI_Win_attach(win, mem, 4 * sizeof(double)));
    MPI_Aint mine, *addrs = malloc(size * sizeof(MPI_Aint));
    OK(MPI_Get_address(&mem[1], &mine));
    OK(MPI_Allgather(&mine, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD));
    int right = (rank + 1) % size;
    double v = 0.5 + rank;
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    OK(MPI_Put(&v, 1, MPI_DOUBLE, right, addrs[right], 1, MPI_DOUBLE, win));
    OK(MPI_Win_unlock(right, win));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    CHECK(mem[1] == 0.5 + (rank + size - 1) % size, "put into attached memory");
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_detach(win, mem));
    OK(MPI_Win_free(&win));
    free(mem);
    free(addrs);
}

/* Attributes, name, group, and errors through MPI_ERRORS_RETURN. */
static void attributes_and_errors(void)
{
    int mem[4];
    MPI_Win win;
    OK(MPI_Win_create(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    void *base;
    MPI_Aint *sz;
    int *unit, *flavor, *model, flag;
    OK(MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag));
    CHECK(flag && base == mem, "MPI_WIN_BASE");
    OK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &sz, &flag));
    CHECK(flag && *sz == sizeof mem, "MPI_WIN_SIZE");
    OK(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &unit, &flag));
    CHECK(flag && *unit == sizeof(int), "MPI_WIN_DISP_UNIT");
    OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_CREATE, "MPI_WIN_CREATE_FLAVOR");
    OK(MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag));
    CHECK(flag && *model == MPI_WIN_UNIFIED, "MPI_WIN_MODEL");
    int kv;
    OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &kv, NULL));
    OK(MPI_Win_set_attr(win, kv, (void *)0x1234));
    void *got;
    OK(MPI_Win_get_attr(win, kv, &got, &flag));
    CHECK(flag && got == (void *)0x1234, "user window attribute");
    OK(MPI_Win_delete_attr(win, kv));
    OK(MPI_Win_get_attr(win, kv, &got, &flag));
    CHECK(!flag, "deleted window attribute");
    OK(MPI_Win_free_keyval(&kv));

    char name[MPI_MAX_OBJECT_NAME];
    int len;
    OK(MPI_Win_set_name(win, "grid"));
    OK(MPI_Win_get_name(win, name, &len));
    CHECK(len == 4 && strcmp(name, "grid") == 0, "window name");
    MPI_Group g, world;
    int cmp;
    OK(MPI_Win_get_group(win, &g));
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    OK(MPI_Group_compare(g, world, &cmp));
    CHECK(cmp == MPI_IDENT, "window group");
    OK(MPI_Group_free(&g));
    OK(MPI_Group_free(&world));

    OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    int one = 1;
    OK(MPI_Win_fence(0, win));
    int rc = MPI_Put(&one, 1, MPI_INT, size, 0, 1, MPI_INT, win);
    CHECK(error_class(rc) == MPI_ERR_RANK, "put to a rank outside the window");
#ifdef WANMPI /* MPICH 4.0.2 checks neither at the call (and then writes past the window) */
    rc = MPI_Put(&one, 1, MPI_INT, 0, 4, 1, MPI_INT, win);
    CHECK(error_class(rc) == MPI_ERR_RMA_RANGE, "put past the window's end");
    rc = MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_MAXLOC, win);
    CHECK(error_class(rc) == MPI_ERR_OP, "MPI_MAXLOC on MPI_INT");
#endif
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    rc = MPI_Win_unlock(0, win);
    CHECK(error_class(rc) == MPI_ERR_RMA_SYNC, "unlock without lock");
    rc = MPI_Win_lock(12345, 0, 0, win);
    /* The standard names MPI_ERR_LOCKTYPE; MPICH 4.0.2 says MPI_ERR_ARG. */
    CHECK(error_class(rc) == MPI_ERR_LOCKTYPE || error_class(rc) == MPI_ERR_ARG, "bad lock type");
    OK(MPI_Win_free(&win));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    fence();
    passive();
    pscw();
    shared();
    dynamic();
    attributes_and_errors();
    pass("rma");
    MPI_Finalize();
    return 0;
}
