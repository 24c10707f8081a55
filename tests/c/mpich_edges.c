/* Behaviours MPICH's own test suite checks (datatype/typename, topo/dims5,
 * topo/cartsuball, comm/cmsplit_type, comm/comm_info), kept here so they
 * stay fixed: every predefined datatype handle has its own name while
 * acting as its basic type; MPI_Dims_create's choice among equally
 * balanced grids; MPI_Cart_sub keeping no dimension; the MPI-4 hardware
 * split types; communicator hints that are and are not kept. */
#include "check.h"

static int rank, size;

static void check_name(MPI_Datatype t, const char *want)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    OK(MPI_Type_get_name(t, name, &len));
    if (strcmp(name, want) != 0 || len != (int) strlen(want)) {
        fprintf(stderr, "rank %d: name %s, expected %s\n", rank, name, want);
        CHECK(0, "predefined datatype name");
    }
}

static void type_names(void)
{
    static const struct {
        MPI_Datatype t;
        const char *name;
    } names[] = {
        {MPI_FLOAT, "MPI_FLOAT"},
        {MPI_DOUBLE, "MPI_DOUBLE"},
        {MPI_LONG_LONG_INT, "MPI_LONG_LONG_INT"},
        {MPI_INTEGER, "MPI_INTEGER"},
        {MPI_REAL, "MPI_REAL"},
        {MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION"},
        {MPI_COMPLEX, "MPI_COMPLEX"},
        {MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX"},
        {MPI_CHARACTER, "MPI_CHARACTER"},
        {MPI_2INTEGER, "MPI_2INTEGER"},
        {MPI_REAL4, "MPI_REAL4"},
        {MPI_REAL8, "MPI_REAL8"},
        {MPI_REAL16, "MPI_REAL16"},
        {MPI_COMPLEX8, "MPI_COMPLEX8"},
        {MPI_COMPLEX16, "MPI_COMPLEX16"},
        {MPI_COMPLEX32, "MPI_COMPLEX32"},
        {MPI_INTEGER1, "MPI_INTEGER1"},
        {MPI_INTEGER2, "MPI_INTEGER2"},
        {MPI_INTEGER4, "MPI_INTEGER4"},
        {MPI_INTEGER8, "MPI_INTEGER8"},
        {MPI_CXX_BOOL, "MPI_CXX_BOOL"},
        {MPI_CXX_FLOAT_COMPLEX, "MPI_CXX_FLOAT_COMPLEX"},
        {MPI_CXX_DOUBLE_COMPLEX, "MPI_CXX_DOUBLE_COMPLEX"},
        {MPI_CXX_LONG_DOUBLE_COMPLEX, "MPI_CXX_LONG_DOUBLE_COMPLEX"},
        {MPI_C_BOOL, "MPI_C_BOOL"},
        {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        check_name(names[i].t, names[i].name);

    /* Each is its basic type everywhere else: size, envelope, reductions,
     * external32. */
    int sz = 0, ni, na, nd, comb;
    OK(MPI_Type_size(MPI_REAL8, &sz));
    CHECK(sz == 8, "MPI_REAL8 size");
    OK(MPI_Type_size(MPI_COMPLEX32, &sz));
    CHECK(sz == 32, "MPI_COMPLEX32 size");
    OK(MPI_Type_get_envelope(MPI_INTEGER4, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_NAMED, "MPI_INTEGER4 is named");
    double x = rank + 0.5, sum = 0;
    OK(MPI_Allreduce(&x, &sum, 1, MPI_REAL8, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == size * (size - 1) / 2.0 + size * 0.5, "MPI_SUM on MPI_REAL8");
    int v = rank, mx = -1;
    OK(MPI_Allreduce(&v, &mx, 1, MPI_INTEGER4, MPI_MAX, MPI_COMM_WORLD));
    CHECK(mx == size - 1, "MPI_MAX on MPI_INTEGER4");
    MPI_Aint ext32 = 0;
    OK(MPI_Pack_external_size("external32", 3, MPI_REAL4, &ext32));
    CHECK(ext32 == 12, "external32 size of MPI_REAL4");

    /* A derived type gives back the very handle it was built from. */
    MPI_Datatype c, inner;
    int ints[1];
    MPI_Aint addrs[1];
    OK(MPI_Type_contiguous(3, MPI_REAL4, &c));
    OK(MPI_Type_get_contents(c, 1, 0, 1, ints, addrs, &inner));
    CHECK(inner == MPI_REAL4 && ints[0] == 3, "contents of a contiguous MPI_REAL4");
    OK(MPI_Type_free(&c));
}

static void dims(void)
{
    int d2[2] = {0, 0}, d3[3] = {0, 0, 0}, d4[4] = {0, 0, 0, 0};
    OK(MPI_Dims_create(72, 2, d2));
    CHECK(d2[0] == 9 && d2[1] == 8, "72 in 2 dimensions");
    /* 14x13x9x8 and 13x12x12x7 both spread 6: the larger small factors win. */
    OK(MPI_Dims_create(13104, 4, d4));
    CHECK(d4[0] == 14 && d4[1] == 13 && d4[2] == 9 && d4[3] == 8, "13104 in 4 dimensions");
    /* 11 > sqrt(110) takes a dimension of its own. */
    OK(MPI_Dims_create(110, 3, d3));
    CHECK(d3[0] == 11 && d3[1] == 5 && d3[2] == 2, "110 in 3 dimensions");
}

static void cart_sub_none(void)
{
    int dim = size, period = 0, keep = 0, cmp, n = -1;
    MPI_Comm cart, sub;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, &dim, &period, 0, &cart));
    OK(MPI_Cart_sub(cart, &keep, &sub));
    if (rank == 0) {
        CHECK(sub != MPI_COMM_NULL, "rank 0 holds the zero-dimensional grid");
        OK(MPI_Comm_compare(sub, MPI_COMM_SELF, &cmp));
        CHECK(cmp == MPI_CONGRUENT, "congruent to MPI_COMM_SELF");
        OK(MPI_Cartdim_get(sub, &n));
        CHECK(n == 0, "zero dimensions");
        OK(MPI_Comm_free(&sub));
    } else {
        CHECK(sub == MPI_COMM_NULL, "the others get MPI_COMM_NULL");
    }
    OK(MPI_Comm_free(&cart));
}

static MPI_Comm split_hw(int type, const char *resource)
{
    MPI_Info info = MPI_INFO_NULL;
    MPI_Comm c;
    if (resource) {
        OK(MPI_Info_create(&info));
        OK(MPI_Info_set(info, "mpi_hw_resource_type", resource));
    }
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, type, rank, info, &c));
    if (info != MPI_INFO_NULL)
        OK(MPI_Info_free(&info));
    return c;
}

static void split_types(void)
{
    MPI_Comm shared, c;
    int nshared, n, cmp;
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared));
    OK(MPI_Comm_size(shared, &nshared));

    CHECK(split_hw(MPI_COMM_TYPE_HW_GUIDED, NULL) == MPI_COMM_NULL, "HW_GUIDED without the key");
    CHECK(split_hw(MPI_COMM_TYPE_HW_GUIDED, "l3cache") == MPI_COMM_NULL, "HW_GUIDED on a resource not known");
    const char *same[] = {"machine", "mpi_shared_memory"};
    for (int i = 0; i < 2; i++) {
        c = split_hw(MPI_COMM_TYPE_HW_GUIDED, same[i]);
        CHECK(c != MPI_COMM_NULL, "HW_GUIDED on the host");
        OK(MPI_Comm_size(c, &n));
        OK(MPI_Comm_compare(c, shared, &cmp));
        CHECK(n == nshared && cmp == MPI_CONGRUENT, "HW_GUIDED host = MPI_COMM_TYPE_SHARED");
        OK(MPI_Comm_free(&c));
    }

    /* Unguided: a strict subset or nothing; if one, the info names it. */
    MPI_Info info;
    char val[64] = "";
    int flag = 0;
    OK(MPI_Info_create(&info));
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, 0, info, &c));
    if (c != MPI_COMM_NULL) {
        OK(MPI_Comm_size(c, &n));
        CHECK(n < size, "HW_UNGUIDED gives a strict subset");
        OK(MPI_Info_get(info, "mpi_hw_resource_type", 63, val, &flag));
        CHECK(flag && strcmp(val, "machine") == 0, "HW_UNGUIDED names the resource");
        OK(MPI_Comm_free(&c));
    } else {
        CHECK(nshared == size, "HW_UNGUIDED is null only when one host holds all");
    }
    OK(MPI_Info_free(&info));
    OK(MPI_Comm_free(&shared));
}

static void comm_hints(void)
{
    MPI_Comm c;
    MPI_Info in, used;
    char val[MPI_MAX_INFO_VAL];
    int flag;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    OK(MPI_Info_create(&in));
    OK(MPI_Info_set(in, "invalid_test_key", "true"));
    OK(MPI_Info_set(in, "mpi_assert_allow_overtaking", "true"));
    OK(MPI_Comm_set_info(c, in));
    OK(MPI_Info_free(&in));
    OK(MPI_Comm_get_info(c, &used));
    OK(MPI_Info_get(used, "invalid_test_key", 10, val, &flag));
    CHECK(!flag, "an unknown key is ignored");
    OK(MPI_Info_get(used, "mpi_assert_allow_overtaking", 10, val, &flag));
    CHECK(flag && strcmp(val, "true") == 0, "a known hint is kept");
    OK(MPI_Info_get(used, "mpi_assert_no_any_tag", 10, val, &flag));
    CHECK(flag && strcmp(val, "false") == 0, "a hint not set shows its default");
    OK(MPI_Info_free(&used));
    /* A later set without the key leaves it as it was. */
    OK(MPI_Info_create(&in));
    OK(MPI_Info_set(in, "mpi_assert_exact_length", "true"));
    OK(MPI_Comm_set_info(c, in));
    OK(MPI_Info_free(&in));
    OK(MPI_Comm_get_info(c, &used));
    OK(MPI_Info_get(used, "mpi_assert_allow_overtaking", 10, val, &flag));
    CHECK(flag && strcmp(val, "true") == 0, "a hint survives a set without it");
    OK(MPI_Info_get(used, "mpi_assert_exact_length", 10, val, &flag));
    CHECK(flag && strcmp(val, "true") == 0, "the new hint is kept");
    OK(MPI_Info_free(&used));
    OK(MPI_Comm_free(&c));
}

int main(int argc, char **argv)
{
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    type_names();
    dims();
    cart_sub_none();
    split_types();
    comm_hints();
    pass("mpich_edges");
    OK(MPI_Finalize());
    return 0;
}
