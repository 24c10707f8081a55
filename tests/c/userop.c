/* User-defined reductions on a derived datatype with gaps (MPI-4.0
 * §6.9.5): the function is given elements laid out as the datatype
 * describes them, and its non-commutative result keeps rank order. The
 * type is 2 ints with a 1-int gap (a vector, stride 2); the op
 * concatenates decimal digits, so the result names the order in which the
 * ranks' values were combined. Blocking, nonblocking and local forms. */
#include "check.h"

#define N 3 /* elements per call */

static int rank, size;
static MPI_Datatype gappy;
static MPI_Op concat;

static int cat(int a, int b)
{
    int p = 10;
    while (p <= b)
        p *= 10;
    return a * p + b;
}

static void concat_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    MPI_Aint lb, ext;
    MPI_Type_get_extent(*dt, &lb, &ext);
    for (int i = 0; i < *len; i++) {
        const int *a = (const int *)((const char *)in + i * ext);
        int *b = (int *)((char *)inout + i * ext);
        b[0] = cat(a[0], b[0]);
        b[2] = cat(a[2], b[2]);
    }
}

/* Rank r's element i: (r + 1, gap, size - r + i) with digits below 10. */
static void fill(int *v, int r)
{
    for (int i = 0; i < N; i++) {
        v[3 * i] = r + 1;
        v[3 * i + 1] = -7; /* the gap: never read or written */
        v[3 * i + 2] = (size - r + i) % 9 + 1;
    }
}

/* The combination of ranks 0..size-1 in order, as `fill` sets them. */
static void expect(const int *got, const char *what)
{
    for (int i = 0; i < N; i++) {
        int x = 1, y = (size + i) % 9 + 1;
        for (int r = 1; r < size; r++) {
            x = cat(x, r + 1);
            y = cat(y, (size - r + i) % 9 + 1);
        }
        CHECK(got[3 * i] == x && got[3 * i + 2] == y, what);
        CHECK(got[3 * i + 1] == -9, "the gap of the receive buffer is kept");
    }
}

static void clear(int *v)
{
    for (int i = 0; i < 3 * N; i++)
        v[i] = -9;
}

int main(int argc, char **argv)
{
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size <= 8, "digits fit an int for at most 8 ranks");
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &gappy));
    OK(MPI_Type_commit(&gappy));
    OK(MPI_Op_create(concat_fn, 0, &concat));
    int mine[3 * N], got[3 * N];
    fill(mine, rank);

    clear(got);
    OK(MPI_Allreduce(mine, got, N, gappy, concat, MPI_COMM_WORLD));
    expect(got, "Allreduce");

    for (int root = 0; root < size; root += size > 1 ? size - 1 : 1) {
        clear(got);
        OK(MPI_Reduce(mine, got, N, gappy, concat, root, MPI_COMM_WORLD));
        if (rank == root)
            expect(got, "Reduce");
    }

    MPI_Request r;
    clear(got);
    OK(MPI_Iallreduce(mine, got, N, gappy, concat, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    expect(got, "Iallreduce");

    /* In place: the receive buffer is the input. */
    fill(got, rank);
    OK(MPI_Allreduce(MPI_IN_PLACE, got, N, gappy, concat, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++)
        got[3 * i + 1] = -9; /* its gap held this rank's -7 */
    expect(got, "Allreduce in place");

    /* Reduce_local: in op inout on this rank's buffers, gaps untouched. */
    int a[3 * N], b[3 * N];
    for (int i = 0; i < N; i++) {
        a[3 * i] = 1, a[3 * i + 1] = -5, a[3 * i + 2] = 3;
        b[3 * i] = 2, b[3 * i + 1] = -6, b[3 * i + 2] = 4;
    }
    OK(MPI_Reduce_local(a, b, N, gappy, concat));
    for (int i = 0; i < N; i++)
        CHECK(b[3 * i] == 12 && b[3 * i + 1] == -6 && b[3 * i + 2] == 34, "Reduce_local");

    OK(MPI_Op_free(&concat));
    OK(MPI_Type_free(&gappy));
    pass("userop");
    OK(MPI_Finalize());
    return 0;
}
