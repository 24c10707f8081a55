/* MPI-4's large-count (_c) calls, which mpi4py 4 uses for everything once
 * mpi.h declares them: results equal to the int calls', count and
 * displacement arrays read only where the call reads them (a non-root
 * passes NULL to Gatherv_c/Scatterv_c), and a count beyond an int fails with
 * MPI_ERR_COUNT and changes nothing. */
#include "check.h"

static int rank, size;

static void p2p_and_counts(void)
{
    int peer = (rank + 1) % size, from = (rank + size - 1) % size;
    double out[5] = {rank, rank + 0.5, 2, 3, 4}, in[5] = {0};
    MPI_Status st;
    OK(MPI_Sendrecv(out, 5, MPI_DOUBLE, peer, 7, in, 5, MPI_DOUBLE, from, 7, MPI_COMM_WORLD, &st));
    MPI_Count n = -1;
    OK(MPI_Get_count_c(&st, MPI_DOUBLE, &n));
    CHECK(n == 5 && in[0] == from && in[1] == from + 0.5, "Get_count_c after a 5-double message");
    /* Send_c/Recv_c with counts that fit. */
    MPI_Request rq;
    OK(MPI_Irecv_c(in, (MPI_Count)3, MPI_DOUBLE, from, 8, MPI_COMM_WORLD, &rq));
    OK(MPI_Send_c(out, (MPI_Count)3, MPI_DOUBLE, peer, 8, MPI_COMM_WORLD));
    OK(MPI_Wait(&rq, &st));
    OK(MPI_Get_count_c(&st, MPI_DOUBLE, &n));
    CHECK(n == 3, "Send_c/Irecv_c count");
}

static void v_collectives(void)
{
    /* Rank r contributes r+1 ints valued 100*r+i; everyone gathers them all. */
    int mine[16], total = size * (size + 1) / 2;
    for (int i = 0; i <= rank; i++)
        mine[i] = 100 * rank + i;
    MPI_Count *counts = malloc(sizeof(MPI_Count) * size);
    MPI_Aint *displs = malloc(sizeof(MPI_Aint) * size);
    for (int r = 0, d = 0; r < size; d += r + 1, r++) {
        counts[r] = r + 1;
        displs[r] = d;
    }
    int *all = calloc(total, sizeof(int));
    OK(MPI_Allgatherv_c(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++)
        for (int i = 0; i <= r; i++)
            CHECK(all[displs[r] + i] == 100 * r + i, "Allgatherv_c placement");

    /* Gatherv_c to the last rank; the others pass NULL arrays. */
    int root = size - 1;
    memset(all, 0, sizeof(int) * total);
    OK(MPI_Gatherv_c(mine, rank + 1, MPI_INT, all, rank == root ? counts : NULL, rank == root ? displs : NULL, MPI_INT, root,
                     MPI_COMM_WORLD));
    if (rank == root)
        for (int r = 0; r < size; r++)
            CHECK(all[displs[r] + r] == 100 * r + r, "Gatherv_c at the root");

    /* Scatterv_c back from the root. */
    int back[16] = {0};
    OK(MPI_Scatterv_c(all, rank == root ? counts : NULL, rank == root ? displs : NULL, MPI_INT, back, rank + 1, MPI_INT, root,
                      MPI_COMM_WORLD));
    for (int i = 0; i <= rank; i++)
        CHECK(back[i] == 100 * rank + i, "Scatterv_c");

    /* Alltoallv_c: one int to and from everyone. */
    MPI_Count *ones = malloc(sizeof(MPI_Count) * size);
    MPI_Aint *steps = malloc(sizeof(MPI_Aint) * size);
    int *s = malloc(sizeof(int) * size), *r = malloc(sizeof(int) * size);
    for (int i = 0; i < size; i++) {
        ones[i] = 1;
        steps[i] = i;
        s[i] = 1000 * rank + i;
        r[i] = -1;
    }
    OK(MPI_Alltoallv_c(s, ones, steps, MPI_INT, r, ones, steps, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++)
        CHECK(r[i] == 1000 * i + rank, "Alltoallv_c");

    /* Reduce_scatter_c: rank i gets i+1 sums. */
    int *contrib = malloc(sizeof(int) * total), sums[16] = {0};
    for (int i = 0; i < total; i++)
        contrib[i] = i;
    OK(MPI_Reduce_scatter_c(contrib, sums, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i <= rank; i++)
        CHECK(sums[i] == size * (int)(displs[rank] + i), "Reduce_scatter_c");

    /* A count beyond an int is refused with MPI_ERR_COUNT, nothing sent. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    counts[0] = (MPI_Count)1 << 40;
    int rc = MPI_Allgatherv_c(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_COUNT, "an array count beyond an int");
    rc = MPI_Send_c(mine, (MPI_Count)1 << 33, MPI_INT, rank, 0, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_COUNT, "a scalar count beyond an int");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    free(counts), free(displs), free(all), free(ones), free(steps), free(s), free(r), free(contrib);
}

static void datatypes(void)
{
    MPI_Count lb = -1, extent = -1, tsize = -1;
    OK(MPI_Type_get_extent_c(MPI_DOUBLE, &lb, &extent));
    CHECK(lb == 0 && extent == sizeof(double), "Type_get_extent_c");
    OK(MPI_Type_get_true_extent_c(MPI_INT, &lb, &extent));
    CHECK(lb == 0 && extent == sizeof(int), "Type_get_true_extent_c");

    /* indexed_c: blocks {2 at 0, 1 at 4} of int = 3 ints, extent 5 ints. */
    MPI_Count bl[2] = {2, 1}, dp[2] = {0, 4};
    MPI_Datatype idx, vec, st, res;
    OK(MPI_Type_indexed_c(2, bl, dp, MPI_INT, &idx));
    OK(MPI_Type_commit(&idx));
    OK(MPI_Type_size_c(idx, &tsize));
    OK(MPI_Type_get_extent_c(idx, &lb, &extent));
    CHECK(tsize == 3 * sizeof(int) && extent == 5 * sizeof(int), "Type_indexed_c size and extent");

    OK(MPI_Type_vector_c(3, 2, 4, MPI_INT, &vec));
    OK(MPI_Type_size_c(vec, &tsize));
    CHECK(tsize == 6 * sizeof(int), "Type_vector_c size");

    MPI_Count sbl[2] = {1, 2}, sdp[2] = {0, 8};
    MPI_Datatype stypes[2] = {MPI_INT, MPI_DOUBLE};
    OK(MPI_Type_create_struct_c(2, sbl, sdp, stypes, &st));
    OK(MPI_Type_size_c(st, &tsize));
    CHECK(tsize == sizeof(int) + 2 * sizeof(double), "Type_create_struct_c size");
    OK(MPI_Type_create_resized_c(MPI_INT, 0, 16, &res));
    OK(MPI_Type_get_extent_c(res, &lb, &extent));
    CHECK(extent == 16, "Type_create_resized_c extent");

    /* Round trip through the indexed type between neighbours. */
    int peer = (rank + 1) % size, from = (rank + size - 1) % size;
    int src[5] = {rank, rank + 1, -7, -7, rank + 4}, dst[5] = {0, 0, 0, 0, 0};
    OK(MPI_Sendrecv(src, 1, idx, peer, 3, dst, 1, idx, from, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(dst[0] == from && dst[1] == from + 1 && dst[2] == 0 && dst[4] == from + 4, "data through Type_indexed_c");

    /* Pack_c / Unpack_c with an MPI_Count position. */
    char buf[64];
    MPI_Count pos = 0, psize = -1;
    int vals[3] = {5, 6, 7}, outv[3] = {0};
    OK(MPI_Pack_size_c(3, MPI_INT, MPI_COMM_WORLD, &psize));
    CHECK(psize >= 3 * (MPI_Count)sizeof(int) && psize <= (MPI_Count)sizeof buf, "Pack_size_c");
    OK(MPI_Pack_c(vals, 3, MPI_INT, buf, sizeof buf, &pos, MPI_COMM_WORLD));
    CHECK(pos == 3 * (MPI_Count)sizeof(int), "Pack_c position");
    pos = 0;
    OK(MPI_Unpack_c(buf, sizeof buf, &pos, outv, 3, MPI_INT, MPI_COMM_WORLD));
    CHECK(outv[0] == 5 && outv[2] == 7, "Unpack_c");

    /* Envelope and contents in their large-count form: the int call's answers, no large counts. */
    MPI_Count ni = -1, na = -1, nl = -1, nd = -1;
    int comb = -1, ints[8] = {0};
    MPI_Aint addrs[4] = {0};
    MPI_Datatype inner[2];
    OK(MPI_Type_get_envelope_c(vec, &ni, &na, &nl, &nd, &comb));
    CHECK(comb == MPI_COMBINER_VECTOR && ni == 3 && na == 0 && nl == 0 && nd == 1, "Type_get_envelope_c of a vector");
    OK(MPI_Type_get_contents_c(vec, 8, 4, 4, 2, ints, addrs, NULL, inner));
    CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 4 && inner[0] == MPI_INT, "Type_get_contents_c of a vector");
    MPI_Type_free(&idx), MPI_Type_free(&vec), MPI_Type_free(&st), MPI_Type_free(&res);
}

/* A user operation created with MPI_Op_create_c gets an MPI_Count length. */
static MPI_Count seen_len = -1;
static void sum_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt)
{
    CHECK(*dt == MPI_INT, "the user function's datatype");
    seen_len = *len;
    for (MPI_Count i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

static void user_op_c(void)
{
    MPI_Op op;
    int mine[3] = {rank, 10 * rank, -rank}, out[3] = {0}, sum = size * (size - 1) / 2;
    OK(MPI_Op_create_c(sum_c, 1, &op));
    OK(MPI_Allreduce(mine, out, 3, MPI_INT, op, MPI_COMM_WORLD));
    CHECK(out[0] == sum && out[1] == 10 * sum && out[2] == -sum, "Op_create_c reduction");
    CHECK(size == 1 || seen_len == 3 || seen_len == -1, "an MPI_Count length of 3");
    OK(MPI_Op_free(&op));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= 16, "at most 16 ranks");
    p2p_and_counts();
    v_collectives();
    datatypes();
    user_op_c();
    pass("large_count");
    MPI_Finalize();
    return 0;
}
