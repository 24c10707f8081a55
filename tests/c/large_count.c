/* MPI-4's large-count (_c) calls, which mpi4py 4 uses for everything once
 * mpi.h declares them: results equal to the int calls', count and
 * displacement arrays read only where the call reads them (a non-root
 * passes NULL to Gatherv_c/Scatterv_c), and counts beyond an int real:
 * types, statuses and packing sizes of 2^31+5 elements, and the int calls
 * answering MPI_UNDEFINED where their int cannot hold the answer. With
 * WANMPI_TEST_BIG=1 (and 2 ranks), rank 0 also sends 2^31+5 bytes to rank 1
 * with MPI_Send_c (2 GiB of memory on each). Also external32's sizes and
 * range errors, and the MPI version (4.0). */
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

#define BIG (((MPI_Count)1 << 31) + 5)

/* Counts beyond an int without moving data: types, statuses, pack sizes. */
static void beyond_int(void)
{
    MPI_Datatype vec, con;
    MPI_Count tsize = -1, lb = -1, extent = -1, n = -1;
    int isize = 0, icount = 0;
    OK(MPI_Type_vector_c(BIG, 1, 2, MPI_BYTE, &vec));
    OK(MPI_Type_size_c(vec, &tsize));
    CHECK(tsize == BIG, "Type_vector_c with a count beyond an int: its size");
    OK(MPI_Type_get_extent_c(vec, &lb, &extent));
    CHECK(lb == 0 && extent == 2 * BIG - 1, "Type_vector_c with a count beyond an int: its extent");
    OK(MPI_Type_size(vec, &isize));
    CHECK(isize == MPI_UNDEFINED, "MPI_Type_size of a type beyond an int is MPI_UNDEFINED");
    /* Its constructor's integers no longer fit ints: they come back as large counts. */
    MPI_Count ni = -1, na = -1, nl = -1, nd = -1, large[3] = {0};
    int comb = -1;
    MPI_Datatype old = MPI_DATATYPE_NULL;
    OK(MPI_Type_get_envelope_c(vec, &ni, &na, &nl, &nd, &comb));
    CHECK(comb == MPI_COMBINER_VECTOR && ni == 0 && na == 0 && nl == 3 && nd == 1, "Type_get_envelope_c of a vector beyond an int");
    OK(MPI_Type_get_contents_c(vec, 0, 0, 3, 1, NULL, NULL, large, &old));
    CHECK(large[0] == BIG && large[1] == 1 && large[2] == 2 && old == MPI_BYTE, "Type_get_contents_c of a vector beyond an int");
    int ints3[3] = {0};
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(error_class(MPI_Type_get_contents(vec, 3, 0, 1, ints3, NULL, &old)) == MPI_ERR_TYPE, "the int call cannot give counts beyond an int");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    OK(MPI_Type_contiguous_c(BIG, MPI_BYTE, &con));
    OK(MPI_Type_size_c(con, &tsize));
    CHECK(tsize == BIG, "Type_contiguous_c beyond an int");

    /* A status of BIG bytes: Get_count_c tells it, the int call cannot. */
    MPI_Status st;
    memset(&st, 0, sizeof st);
    OK(MPI_Status_set_elements_x(&st, MPI_BYTE, BIG));
    OK(MPI_Get_count_c(&st, MPI_BYTE, &n));
    CHECK(n == BIG, "Get_count_c of 2^31+5 bytes");
    OK(MPI_Get_elements_c(&st, MPI_BYTE, &n));
    CHECK(n == BIG, "Get_elements_c of 2^31+5 bytes");
    OK(MPI_Get_count(&st, MPI_BYTE, &icount));
    CHECK(icount == MPI_UNDEFINED, "MPI_Get_count beyond an int is MPI_UNDEFINED");
    OK(MPI_Get_count_c(&st, con, &n));
    CHECK(n == 1, "Get_count_c in elements of a type beyond an int");

    MPI_Count psize = -1;
    OK(MPI_Pack_size_c(BIG, MPI_BYTE, MPI_COMM_WORLD, &psize));
    CHECK(psize >= BIG, "Pack_size_c beyond an int");
    OK(MPI_Pack_external_size_c("external32", BIG, MPI_BYTE, &psize));
    CHECK(psize == BIG, "Pack_external_size_c beyond an int");
    MPI_Type_free(&vec), MPI_Type_free(&con);
}

/* WANMPI_TEST_BIG=1: 2^31+5 bytes from rank 0 to rank 1 through MPI_Send_c/MPI_Recv_c. */
static void big_message(void)
{
    const char *big = getenv("WANMPI_TEST_BIG");
    if (!big || strcmp(big, "1") != 0 || size < 2 || rank > 1)
        return;
    unsigned char *buf = malloc((size_t)BIG);
    CHECK(buf != NULL, "2 GiB for the big message");
    MPI_Count at[4] = {0, ((MPI_Count)1 << 31) - 1, (MPI_Count)1 << 31, BIG - 1};
    if (rank == 0) {
        memset(buf, 0x5a, (size_t)BIG);
        for (int i = 0; i < 4; i++)
            buf[at[i]] = (unsigned char)(i + 1);
        OK(MPI_Send_c(buf, BIG, MPI_BYTE, 1, 42, MPI_COMM_WORLD));
    } else {
        MPI_Status st;
        MPI_Count n = -1;
        int icount = 0;
        memset(buf, 0, (size_t)BIG);
        OK(MPI_Recv_c(buf, BIG, MPI_BYTE, 0, 42, MPI_COMM_WORLD, &st));
        OK(MPI_Get_count_c(&st, MPI_BYTE, &n));
        CHECK(n == BIG, "Get_count_c of the received 2^31+5 bytes");
        OK(MPI_Get_count(&st, MPI_BYTE, &icount));
        CHECK(icount == MPI_UNDEFINED, "MPI_Get_count of the received 2^31+5 bytes");
        for (int i = 0; i < 4; i++)
            CHECK(buf[at[i]] == i + 1, "a marked byte of the big message, at either side of 2^31");
        CHECK(buf[1] == 0x5a && buf[BIG - 2] == 0x5a && buf[(size_t)1 << 30] == 0x5a, "the big message's filling");
    }
    free(buf);
}

/* external32: C long in 4 bytes (a value beyond 32 bits is a conversion
 * error), long double in 16 (IEEE binary128), big-endian. */
static void external32(void)
{
    long v[2] = {-2, 0x01020304};
    unsigned char out[32];
    MPI_Aint pos = 0, esize = -1;
    OK(MPI_Pack_external_size("external32", 2, MPI_LONG, &esize));
    CHECK(esize == 8, "external32 size of 2 longs");
    OK(MPI_Pack_external("external32", v, 2, MPI_LONG, out, sizeof out, &pos));
    CHECK(pos == 8 && out[0] == 0xff && out[3] == 0xfe && out[4] == 1 && out[7] == 4, "longs in external32");
    long back[2] = {0, 0};
    pos = 0;
    OK(MPI_Unpack_external("external32", out, 8, &pos, back, 2, MPI_LONG));
    CHECK(back[0] == -2 && back[1] == 0x01020304, "longs back from external32");

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    long huge = (long)1 << 40;
    pos = 0;
    int rc = MPI_Pack_external("external32", &huge, 1, MPI_LONG, out, sizeof out, &pos);
    CHECK(error_class(rc) == MPI_ERR_CONVERSION, "a long beyond 32 bits in external32");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    long double ld = 1.5L, ldback = 0;
    OK(MPI_Pack_external_size("external32", 1, MPI_LONG_DOUBLE, &esize));
    CHECK(esize == 16, "external32 size of a long double");
    pos = 0;
    OK(MPI_Pack_external("external32", &ld, 1, MPI_LONG_DOUBLE, out, sizeof out, &pos));
    /* 1.5 in binary128: sign 0, exponent 0x3fff, fraction 0x8000... */
    CHECK(pos == 16 && out[0] == 0x3f && out[1] == 0xff && out[2] == 0x80 && out[3] == 0 && out[15] == 0, "long double as binary128");
    pos = 0;
    OK(MPI_Unpack_external("external32", out, 16, &pos, &ldback, 1, MPI_LONG_DOUBLE));
    CHECK(ldback == 1.5L, "long double back from external32");
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
    int version = 0, subversion = -1;
    OK(MPI_Get_version(&version, &subversion));
    CHECK(version == 4 && subversion == 0 && MPI_VERSION == 4 && MPI_SUBVERSION == 0, "MPI 4.0");
    p2p_and_counts();
    v_collectives();
    datatypes();
    user_op_c();
    beyond_int();
    external32();
    big_message();
    pass("large_count");
    MPI_Finalize();
    return 0;
}
