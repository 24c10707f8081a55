/* Communicators, groups, attributes, topology, info, datatypes and error
 * classes (run with 4 ranks): split/dup isolation, inter-communicator
 * send/recv and merge, error classes for bad rank/tag/count/datatype/comm,
 * a user error handler, unsupported functions. */
#include "check.h"

static int rank, size, handler_calls, handler_code;

static void on_error(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    handler_calls++;
    handler_code = *code;
}

static int deleted;
static int count_delete(MPI_Comm c, int k, void *v, void *extra)
{
    (void)c; (void)k; (void)v; (void)extra;
    deleted++;
    return MPI_SUCCESS;
}

static void comms(void)
{
    MPI_Comm half, dup, inter, merged;
    int r, s, res, v;
    OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half));
    OK(MPI_Comm_rank(half, &r));
    OK(MPI_Comm_size(half, &s));
    CHECK(s == (size + 1 - rank % 2) / 2, "split size");
    CHECK(r == s - 1 - rank / 2, "split key orders ranks (descending world rank)");
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_compare(MPI_COMM_WORLD, dup, &res));
    CHECK(res == MPI_CONGRUENT, "dup is congruent");
    OK(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &res));
    CHECK(res == MPI_IDENT, "ident");
    /* Isolation: the same (source, tag) on three communicators. */
    if (size >= 2 && rank < 2) {
        int peer = 1 - rank;
        if (rank == 0) {
            v = 1; OK(MPI_Send(&v, 1, MPI_INT, peer, 0, dup));
            v = 2; OK(MPI_Send(&v, 1, MPI_INT, peer, 0, MPI_COMM_WORLD));
        } else {
            OK(MPI_Recv(&v, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(v == 2, "world isolated from dup");
            OK(MPI_Recv(&v, 1, MPI_INT, peer, 0, dup, MPI_STATUS_IGNORE));
            CHECK(v == 1, "dup message");
        }
    }
    /* Inter-communicator between the even and odd halves. */
    if (size >= 2) {
        int flag, rsize;
        /* Each half's leader (its rank 0) is its highest world rank (key = -rank). */
        int max_even = (size - 1) % 2 == 0 ? size - 1 : size - 2;
        int max_odd = (size - 1) % 2 == 1 ? size - 1 : size - 2;
        int other_leader = rank % 2 == 0 ? max_odd : max_even;
        OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, other_leader, 9, &inter));
        OK(MPI_Comm_test_inter(inter, &flag));
        OK(MPI_Comm_remote_size(inter, &rsize));
        CHECK(flag && rsize == (size + rank % 2) / 2, "inter-communicator");
        if (r == 0) {
            int mine = rank, theirs = -1;
            OK(MPI_Sendrecv(&mine, 1, MPI_INT, 0, 4, &theirs, 1, MPI_INT, 0, 4, inter, MPI_STATUS_IGNORE));
            CHECK(theirs == other_leader, "inter-communicator send/recv");
        }
        OK(MPI_Intercomm_merge(inter, rank % 2, &merged));
        OK(MPI_Comm_size(merged, &s));
        CHECK(s == size, "merged size");
        int sum;
        OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, merged));
        CHECK(sum == size * (size - 1) / 2, "collective on merged");
        OK(MPI_Comm_free(&merged));
        OK(MPI_Comm_free(&inter));
    }
    /* Groups */
    MPI_Group wg, g, h;
    int ranks[2] = {0, size - 1}, out[2];
    OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    OK(MPI_Group_incl(wg, size > 1 ? 2 : 1, ranks, &g));
    OK(MPI_Group_translate_ranks(g, 1, &ranks[0], wg, out));
    CHECK(out[0] == 0, "translate");
    OK(MPI_Group_excl(wg, 1, ranks, &h));
    OK(MPI_Group_size(h, &s));
    CHECK(s == size - 1, "excl");
    OK(MPI_Group_compare(wg, wg, &res));
    CHECK(res == MPI_IDENT, "group ident");
    MPI_Comm sub;
    OK(MPI_Comm_create(MPI_COMM_WORLD, g, &sub));
    CHECK((sub != MPI_COMM_NULL) == (rank == 0 || rank == size - 1), "comm_create membership");
    if (sub != MPI_COMM_NULL)
        OK(MPI_Comm_free(&sub));
    OK(MPI_Group_free(&g));
    OK(MPI_Group_free(&h));
    OK(MPI_Group_free(&wg));
    CHECK(wg == MPI_GROUP_NULL, "group freed");
    /* Attributes */
    int *ub, flag, key, value = 17, *got;
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
    CHECK(flag && *ub >= 32767, "MPI_TAG_UB");
    OK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, count_delete, &key, NULL));
    OK(MPI_Comm_set_attr(dup, key, &value));
    MPI_Comm dup2;
    OK(MPI_Comm_dup(dup, &dup2));
    OK(MPI_Comm_get_attr(dup2, key, &got, &flag));
    CHECK(flag && got == &value, "attribute copied by MPI_COMM_DUP_FN");
    OK(MPI_Comm_free(&dup2));
    CHECK(deleted == 1, "delete callback on free");
    OK(MPI_Comm_delete_attr(dup, key));
    OK(MPI_Comm_get_attr(dup, key, &got, &flag));
    CHECK(!flag && deleted == 2, "attribute deleted");
    OK(MPI_Comm_free_keyval(&key));
    /* Names */
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    OK(MPI_Comm_set_name(dup, "my-dup"));
    OK(MPI_Comm_get_name(dup, name, &len));
    CHECK(strcmp(name, "my-dup") == 0 && len == 6, "comm name");
    OK(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len));
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0, "world name");
    OK(MPI_Comm_free(&dup));
    OK(MPI_Comm_free(&half));
}

static void topology(void)
{
    int dims[2] = {0, 0}, periods[2] = {1, 0}, coords[2], r, src, dst, st;
    MPI_Comm cart;
    OK(MPI_Dims_create(size, 2, dims));
    CHECK(dims[0] * dims[1] == size && dims[0] >= dims[1], "dims_create");
    OK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
    OK(MPI_Topo_test(cart, &st));
    CHECK(st == MPI_CART, "topo test");
    OK(MPI_Cart_coords(cart, rank, 2, coords));
    OK(MPI_Cart_rank(cart, coords, &r));
    CHECK(r == rank, "coords round trip");
    OK(MPI_Cart_shift(cart, 0, 1, &src, &dst));
    CHECK(dst == ((coords[0] + 1) % dims[0]) * dims[1] + coords[1], "periodic shift");
    OK(MPI_Cart_shift(cart, 1, 1, &src, &dst));
    CHECK(coords[1] + 1 < dims[1] || dst == MPI_PROC_NULL, "non-periodic edge");
    OK(MPI_Comm_free(&cart));
    OK(MPI_Topo_test(MPI_COMM_WORLD, &st));
    CHECK(st == MPI_UNDEFINED, "no topology on world");
}

static void datatypes(void)
{
    MPI_Datatype vec, st, res;
    int n, ni, na, nd, comb, ints[3];
    MPI_Aint lb, ext, addrs[1];
    MPI_Datatype types[1];
    OK(MPI_Type_vector(3, 2, 4, MPI_INT, &vec));
    OK(MPI_Type_commit(&vec));
    OK(MPI_Type_size(vec, &n));
    CHECK(n == 24, "vector size");
    OK(MPI_Type_get_extent(vec, &lb, &ext));
    CHECK(lb == 0 && ext == 40, "vector extent");
    OK(MPI_Type_get_envelope(vec, &ni, &na, &nd, &comb));
    CHECK(ni == 3 && na == 0 && nd == 1 && comb == MPI_COMBINER_VECTOR, "envelope");
    OK(MPI_Type_get_contents(vec, 3, 0, 1, ints, addrs, types));
    CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 4 && types[0] == MPI_INT, "contents");
    struct { int i; double d; } s[2];
    int bl[2] = {1, 1};
    MPI_Aint disp[2], base;
    MPI_Datatype ts[2] = {MPI_INT, MPI_DOUBLE};
    OK(MPI_Get_address(&s[0], &base));
    OK(MPI_Get_address(&s[0].d, &disp[1]));
    disp[0] = 0;
    disp[1] -= base;
    OK(MPI_Type_create_struct(2, bl, disp, ts, &st));
    OK(MPI_Type_create_resized(st, 0, sizeof s[0], &res));
    OK(MPI_Type_commit(&res));
    OK(MPI_Type_get_extent(res, &lb, &ext));
    CHECK(ext == (MPI_Aint)sizeof s[0], "resized extent");
    /* Pack/unpack round trip of a strided vector. */
    int src[12], dst[12] = {0}, pos = 0, psize;
    char packed[256];
    for (int i = 0; i < 12; i++)
        src[i] = i;
    OK(MPI_Pack_size(1, vec, MPI_COMM_WORLD, &psize));
    CHECK(psize >= 24, "pack size");
    OK(MPI_Pack(src, 1, vec, packed, sizeof packed, &pos, MPI_COMM_WORLD));
    CHECK(pos == 24, "pack position");
    pos = 0;
    OK(MPI_Unpack(packed, sizeof packed, &pos, dst, 1, vec, MPI_COMM_WORLD));
    CHECK(dst[0] == 0 && dst[1] == 1 && dst[2] == 0 && dst[4] == 4 && dst[9] == 9, "unpack");
    /* A derived type on the wire, and Get_elements of a partial struct. */
    if (size >= 2 && rank < 2) {
        if (rank == 0) {
            s[0].i = 5; s[0].d = 2.5; s[1].i = 6; s[1].d = 3.5;
            OK(MPI_Send(s, 2, res, 1, 70, MPI_COMM_WORLD));
            OK(MPI_Send(src, 1, vec, 1, 71, MPI_COMM_WORLD));
            OK(MPI_Send(s, 16, MPI_BYTE, 1, 72, MPI_COMM_WORLD));
        } else {
            MPI_Status stt;
            int c;
            memset(s, 0, sizeof s);
            OK(MPI_Recv(s, 2, res, 0, 70, MPI_COMM_WORLD, &stt));
            CHECK(s[0].i == 5 && s[0].d == 2.5 && s[1].i == 6 && s[1].d == 3.5, "struct transfer");
            OK(MPI_Recv(dst, 6, MPI_INT, 0, 71, MPI_COMM_WORLD, &stt));
            CHECK(dst[0] == 0 && dst[2] == 4 && dst[5] == 9, "vector to contiguous");
            OK(MPI_Recv(s, 2, res, 0, 72, MPI_COMM_WORLD, &stt));
            OK(MPI_Get_count(&stt, res, &c));
            CHECK(c == MPI_UNDEFINED, "partial struct count");
            OK(MPI_Get_elements(&stt, res, &c));
            CHECK(c == 3, "partial struct elements (int, double, int)");
        }
    }
    OK(MPI_Type_free(&vec));
    OK(MPI_Type_free(&st));
    OK(MPI_Type_free(&res));
    CHECK(vec == MPI_DATATYPE_NULL, "type freed");
}

static void errors(void)
{
    int v = 0, rc, len;
    MPI_Datatype raw;
    char msg[MPI_MAX_ERROR_STRING];
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    rc = MPI_Send(&v, 1, MPI_INT, size, 0, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_RANK, "bad rank");
    rc = MPI_Send(&v, 1, MPI_INT, 0, -5, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_TAG, "bad tag");
    rc = MPI_Send(&v, -1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_COUNT, "bad count");
    rc = MPI_Send(&v, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_TYPE, "bad datatype");
    OK(MPI_Type_contiguous(2, MPI_INT, &raw));
    rc = MPI_Send(&v, 1, raw, 0, 0, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_TYPE, "uncommitted datatype");
    OK(MPI_Type_free(&raw));
    rc = MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_NULL);
    CHECK(error_class(rc) == MPI_ERR_COMM, "null communicator");
    rc = MPI_Recv(&v, 1, MPI_INT, 0, 0, (MPI_Comm)0x12345678, MPI_STATUS_IGNORE);
    CHECK(error_class(rc) == MPI_ERR_COMM, "garbage communicator");
    rc = MPI_Bcast(&v, 1, MPI_INT, size, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_ROOT, "bad root");
#ifdef WANMPI /* (MPICH's port names look different) */
    /* A malformed port name: every rank gets the root's MPI_ERR_PORT. */
    MPI_Comm joined = MPI_COMM_WORLD;
    rc = MPI_Comm_connect("not-a-port", MPI_INFO_NULL, 0, MPI_COMM_WORLD, &joined);
    CHECK(error_class(rc) == MPI_ERR_PORT && joined == MPI_COMM_NULL, "a malformed port name");
    OK(MPI_Error_string(rc, msg, &len));
    CHECK(strstr(msg, "not a wanmpi port name") != NULL, "the error string says why");
#endif
    /* A user handler sees the code and the call still returns it. */
    MPI_Errhandler eh, got;
    OK(MPI_Comm_create_errhandler(on_error, &eh));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh));
    OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got));
    CHECK(got == eh, "get_errhandler");
    rc = MPI_Send(&v, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD);
    CHECK(handler_calls == 1 && handler_code == rc && error_class(rc) == MPI_ERR_RANK, "user handler called");
    OK(MPI_Errhandler_free(&eh));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv)
{
    int provided, flag;
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE, "thread level");
    OK(MPI_Is_thread_main(&flag));
    CHECK(flag, "main thread");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    comms();
    topology();
    datatypes();
    errors();
    OK(MPI_Barrier(MPI_COMM_WORLD));
    pass("comm_err");
    OK(MPI_Finalize());
    OK(MPI_Finalized(&flag));
    CHECK(flag, "finalized");
    return 0;
}
