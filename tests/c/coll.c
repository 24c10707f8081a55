/* Every collective against a reference computed locally; run on 1, 2, 3,
 * 4, 7 and 8 ranks. Includes MPI_IN_PLACE forms, MPI_SUM on MPI_CHAR,
 * MPI_MAXLOC on MPI_DOUBLE_INT and a user-defined operation. */
#include "check.h"

static int rank, size;

static void sum_abs(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    CHECK(*dt == MPI_INT, "user op gets the reduction's datatype");
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = abs(a[i]) + abs(b[i]);
}

static void reductions(void)
{
    int v[3] = {rank + 1, -rank, rank * rank}, r[3], want[3] = {0, 0, 0};
    for (int i = 0; i < size; i++) {
        want[0] += i + 1;
        want[1] += -i;
        want[2] += i * i;
    }
    for (int root = 0; root < size; root += size > 2 ? size - 2 : 1) {
        memset(r, 0, sizeof r);
        OK(MPI_Reduce(v, r, 3, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
        if (rank == root)
            CHECK(r[0] == want[0] && r[1] == want[1] && r[2] == want[2], "reduce sum");
    }
    OK(MPI_Allreduce(v, r, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(r[0] == want[0] && r[1] == want[1] && r[2] == want[2], "allreduce sum");
    memcpy(r, v, sizeof r);
    OK(MPI_Allreduce(MPI_IN_PLACE, r, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(r[0] == want[0], "allreduce in place");
    if (rank == 0) {
        memcpy(r, v, sizeof r);
        OK(MPI_Reduce(MPI_IN_PLACE, r, 3, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD));
        CHECK(r[2] == want[2], "reduce in place");
    } else {
        OK(MPI_Reduce(v, NULL, 3, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD));
    }
    double d = rank * 1.5, dmax;
    OK(MPI_Allreduce(&d, &dmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    CHECK(dmax == (size - 1) * 1.5, "max double");
    char c = 1, csum;
    OK(MPI_Allreduce(&c, &csum, 1, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD));
    CHECK(csum == (char)size, "MPI_SUM on MPI_CHAR");
    struct { double v; int i; } p = {(double)((rank * 5) % size), rank}, q;
    OK(MPI_Allreduce(&p, &q, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD));
    double best = -1;
    int at = -1;
    for (int i = 0; i < size; i++)
        if ((double)((i * 5) % size) > best) {
            best = (double)((i * 5) % size);
            at = i;
        }
    CHECK(q.v == best && q.i == at, "maxloc double_int");
    MPI_Op op;
    int commute;
    OK(MPI_Op_create(sum_abs, 1, &op));
    OK(MPI_Op_commutative(op, &commute));
    CHECK(commute, "commutative flag");
    OK(MPI_Allreduce(v, r, 3, MPI_INT, op, MPI_COMM_WORLD));
    int wabs = 0;
    for (int i = 0; i < size; i++)
        wabs += i;
    CHECK(r[1] == wabs, "user op");
    OK(MPI_Op_free(&op));
    CHECK(op == MPI_OP_NULL, "op freed");
    /* scan / exscan */
    int s, e = -7;
    OK(MPI_Scan(&v[0], &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(s == (rank + 1) * (rank + 2) / 2, "scan");
    OK(MPI_Exscan(&v[0], &e, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (rank > 0)
        CHECK(e == rank * (rank + 1) / 2, "exscan");
    /* reduce_scatter(_block): element j of rank i's input is i + j. */
    int *in = malloc(sizeof(int) * 2 * size), *counts = malloc(sizeof(int) * size), out2[2];
    for (int j = 0; j < 2 * size; j++)
        in[j] = rank + j;
    for (int i = 0; i < size; i++)
        counts[i] = 2;
    OK(MPI_Reduce_scatter_block(in, out2, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    int base = size * (size - 1) / 2;
    CHECK(out2[0] == base + size * (2 * rank) && out2[1] == base + size * (2 * rank + 1), "reduce_scatter_block");
    OK(MPI_Reduce_scatter(in, out2, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(out2[1] == base + size * (2 * rank + 1), "reduce_scatter");
    free(in);
    free(counts);
}

static void movement(void)
{
    int *all = malloc(sizeof(int) * size * 2), *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    int mine[2] = {rank * 10, rank * 10 + 1}, got[2], b;
    for (int root = 0; root < size; root += size > 2 ? size - 2 : 1) {
        b = rank == root ? 1234 + root : -1;
        OK(MPI_Bcast(&b, 1, MPI_INT, root, MPI_COMM_WORLD));
        CHECK(b == 1234 + root, "bcast");
        memset(all, -1, sizeof(int) * size * 2);
        OK(MPI_Gather(mine, 2, MPI_INT, all, 2, MPI_INT, root, MPI_COMM_WORLD));
        if (rank == root)
            for (int i = 0; i < 2 * size; i++)
                CHECK(all[i] == (i / 2) * 10 + i % 2, "gather");
        if (rank == root)
            for (int i = 0; i < 2 * size; i++)
                all[i] = 100 + i;
        OK(MPI_Scatter(all, 2, MPI_INT, got, 2, MPI_INT, root, MPI_COMM_WORLD));
        CHECK(got[0] == 100 + 2 * rank && got[1] == 101 + 2 * rank, "scatter");
        /* v-variants: rank i contributes i % 3 elements, stored in reverse rank order */
        int off = 0;
        for (int i = size - 1; i >= 0; i--) {
            counts[i] = i % 3;
            displs[i] = off;
            off += i % 3;
        }
        int vals[2] = {rank * 7, rank * 7 + 1};
        memset(all, -1, sizeof(int) * size * 2);
        OK(MPI_Gatherv(vals, rank % 3, MPI_INT, all, counts, displs, MPI_INT, root, MPI_COMM_WORLD));
        if (rank == root)
            for (int i = 0; i < size; i++)
                for (int k = 0; k < i % 3; k++)
                    CHECK(all[displs[i] + k] == i * 7 + k, "gatherv");
        got[0] = got[1] = -5;
        OK(MPI_Scatterv(all, counts, displs, MPI_INT, got, rank % 3, MPI_INT, root, MPI_COMM_WORLD));
        for (int k = 0; k < rank % 3; k++)
            CHECK(got[k] == rank * 7 + k, "scatterv");
    }
    OK(MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < 2 * size; i++)
        CHECK(all[i] == (i / 2) * 10 + i % 2, "allgather");
    for (int i = 0; i < 2 * size; i++)
        all[i] = i / 2 == rank ? mine[i % 2] : -1;
    OK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 2, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < 2 * size; i++)
        CHECK(all[i] == (i / 2) * 10 + i % 2, "allgather in place");
    for (int i = 0; i < size; i++) {
        counts[i] = 1 + i % 2;
        displs[i] = 2 * i;
    }
    memset(all, -1, sizeof(int) * size * 2);
    OK(MPI_Allgatherv(mine, 1 + rank % 2, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++)
        for (int k = 0; k < 1 + i % 2; k++)
            CHECK(all[2 * i + k] == i * 10 + k, "allgatherv");
    int *s = malloc(sizeof(int) * size), *r = malloc(sizeof(int) * size);
    for (int i = 0; i < size; i++)
        s[i] = rank * 100 + i;
    OK(MPI_Alltoall(s, 1, MPI_INT, r, 1, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++)
        CHECK(r[i] == i * 100 + rank, "alltoall");
    for (int i = 0; i < size; i++) {
        counts[i] = 1;
        displs[i] = size - 1 - i;
    }
    OK(MPI_Alltoallv(s, counts, displs, MPI_INT, r, counts, displs, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++)
        CHECK(r[size - 1 - i] == i * 100 + (size - 1 - rank), "alltoallv");
    free(s);
    free(r);
    free(all);
    free(counts);
    free(displs);
}

int main(int argc, char **argv)
{
    OK(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    reductions();
    movement();
    OK(MPI_Barrier(MPI_COMM_WORLD));
    pass("coll");
    OK(MPI_Finalize());
    return 0;
}
