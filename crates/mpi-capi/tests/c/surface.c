/* Issue 11 (items 2 and 5): answers the standard fixes, on 2 ranks.
 * Written against the standard, not against wanmpi: it also passes on MPICH
 * (mpicc.mpich + mpirun.mpich), where the calls wanmpi does not implement
 * succeed and their checks are skipped.
 *   - the empty status (MPI_ANY_SOURCE, MPI_ANY_TAG, count 0) from
 *     MPI_REQUEST_NULL and inactive persistent requests, in every
 *     completion call and MPI_Request_get_status;
 *   - Waitany/Testany/Waitsome over started-then-completed persistent
 *     requests skip them;
 *   - MPI_Type_get_contents returns datatypes the caller may free;
 *   - MPI_LB/MPI_UB are predefined datatypes and set a struct's bounds;
 *   - info queries on MPI_INFO_NULL and MPI_Comm_disconnect(MPI_COMM_NULL)
 *     fail with the right class;
 *   - a call that is not supported sets its output handles to null and
 *     fails only itself;
 *   - large-count (_c) calls, c2f/f2c, status conversion, MPI_Aint_add/diff,
 *     MPI_Type_match_size;
 *   - subarray and darray datatypes (C and Fortran order, block, cyclic);
 *   - graph and distributed-graph topologies and their queries;
 *   - user error classes, codes and strings; the f90 type constructors;
 *   - attributes on datatypes; MPI_FILE_NULL's error handler.
 */
#include "check.h"

#define SRC_TAG_EMPTY(st) ((st).MPI_SOURCE == MPI_ANY_SOURCE && (st).MPI_TAG == MPI_ANY_TAG)

static void check_empty(const MPI_Status *st, const char *what)
{
    int n = -1;
    OK(MPI_Get_count(st, MPI_INT, &n));
    if (!(SRC_TAG_EMPTY(*st) && n == 0)) {
        fprintf(stderr, "rank %d: %s: status source %d tag %d count %d, want %d %d 0\n", check_rank(), what, st->MPI_SOURCE,
                st->MPI_TAG, n, MPI_ANY_SOURCE, MPI_ANY_TAG);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int cancelled = 1;
    OK(MPI_Test_cancelled(st, &cancelled));
    CHECK(!cancelled, what);
}

static void fill(MPI_Status *st)
{
    st->MPI_SOURCE = 77;
    st->MPI_TAG = 77;
    st->MPI_ERROR = 77;
    MPI_Status_set_elements(st, MPI_INT, 5);
}

static void empty_statuses(int rank)
{
    MPI_Status st;
    int flag = 0, index = 0, v = 0;
    MPI_Request null = MPI_REQUEST_NULL;

    fill(&st);
    OK(MPI_Wait(&null, &st));
    check_empty(&st, "MPI_Wait(MPI_REQUEST_NULL)");
    fill(&st);
    OK(MPI_Test(&null, &flag, &st));
    CHECK(flag, "MPI_Test(MPI_REQUEST_NULL) is complete");
    check_empty(&st, "MPI_Test(MPI_REQUEST_NULL)");
    fill(&st);
    OK(MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st));
    CHECK(flag, "MPI_Request_get_status(MPI_REQUEST_NULL) is complete");
    check_empty(&st, "MPI_Request_get_status(MPI_REQUEST_NULL)");

    /* An inactive persistent request: never started. */
    MPI_Request r;
    OK(MPI_Recv_init(&v, 1, MPI_INT, 1 - rank, 30, MPI_COMM_WORLD, &r));
    fill(&st);
    OK(MPI_Wait(&r, &st));
    CHECK(r != MPI_REQUEST_NULL, "an inactive persistent request stays allocated");
    check_empty(&st, "MPI_Wait(inactive)");
    fill(&st);
    flag = 0;
    OK(MPI_Test(&r, &flag, &st));
    CHECK(flag, "MPI_Test(inactive) is complete");
    check_empty(&st, "MPI_Test(inactive)");
    fill(&st);
    flag = 0;
    OK(MPI_Request_get_status(r, &flag, &st));
    CHECK(flag, "MPI_Request_get_status(inactive) is complete");
    check_empty(&st, "MPI_Request_get_status(inactive)");
    MPI_Status sts[2];
    MPI_Request two[2] = {r, MPI_REQUEST_NULL};
    fill(&sts[0]);
    fill(&sts[1]);
    OK(MPI_Waitall(2, two, sts));
    check_empty(&sts[0], "MPI_Waitall(inactive)");
    check_empty(&sts[1], "MPI_Waitall(MPI_REQUEST_NULL)");
    fill(&st);
    OK(MPI_Waitany(2, two, &index, &st));
    CHECK(index == MPI_UNDEFINED, "MPI_Waitany over inactive and null requests gives MPI_UNDEFINED");
    check_empty(&st, "MPI_Waitany(inactive, null)");

    /* Get_status on the inactive request, then a real activation: the
     * activation's message must come out of the next MPI_Wait. */
    int out = 100 + rank;
    OK(MPI_Start(&r));
    OK(MPI_Send(&out, 1, MPI_INT, 1 - rank, 30, MPI_COMM_WORLD));
    OK(MPI_Wait(&r, &st));
    CHECK(v == 101 - rank && st.MPI_SOURCE == 1 - rank && st.MPI_TAG == 30, "the started request receives");
    OK(MPI_Request_free(&r));
    CHECK(r == MPI_REQUEST_NULL, "freed");
}

static void persistent_any(int rank)
{
    int v = 0, index = -5, flag = 0, outcount = -5, idx[1];
    MPI_Status st, sts[1];
    MPI_Request r;
    if (rank == 0)
        OK(MPI_Send_init(&v, 1, MPI_INT, 1, 31, MPI_COMM_WORLD, &r));
    else
        OK(MPI_Recv_init(&v, 1, MPI_INT, 0, 31, MPI_COMM_WORLD, &r));
    for (int round = 0; round < 3; round++) {
        v = rank == 0 ? 40 + round : -1;
        OK(MPI_Start(&r));
        index = -5;
        OK(MPI_Waitany(1, &r, &index, &st));
        CHECK(index == 0, "MPI_Waitany completes the started request");
        CHECK(r != MPI_REQUEST_NULL, "persistent request kept");
        if (rank == 1)
            CHECK(v == 40 + round && st.MPI_SOURCE == 0 && st.MPI_TAG == 31, "persistent receive via Waitany");
        /* Completed: inactive again, so it is skipped. */
        index = -5;
        fill(&st);
        OK(MPI_Waitany(1, &r, &index, &st));
        CHECK(index == MPI_UNDEFINED, "MPI_Waitany skips a completed persistent request");
        check_empty(&st, "MPI_Waitany(completed persistent)");
        index = -5;
        flag = 0;
        fill(&st);
        OK(MPI_Testany(1, &r, &index, &flag, &st));
        CHECK(flag == 1 && index == MPI_UNDEFINED, "MPI_Testany on a completed persistent request: flag 1, MPI_UNDEFINED");
#ifdef WANMPI /* MPICH 4.0.2 leaves the status untouched here, against MPI-4.0 §3.7.5 */
        check_empty(&st, "MPI_Testany(completed persistent)");
#endif
        OK(MPI_Waitsome(1, &r, &outcount, idx, sts));
        CHECK(outcount == MPI_UNDEFINED, "MPI_Waitsome skips a completed persistent request");
        OK(MPI_Testsome(1, &r, &outcount, idx, sts));
        CHECK(outcount == MPI_UNDEFINED, "MPI_Testsome skips a completed persistent request");
    }
    /* Testany reaching completion, then again. */
    v = rank == 0 ? 50 : -1;
    OK(MPI_Start(&r));
    flag = 0;
    for (int i = 0; i < 10000000 && !flag; i++)
        OK(MPI_Testany(1, &r, &index, &flag, &st));
    CHECK(flag && index == 0, "MPI_Testany completes the started request");
    OK(MPI_Testany(1, &r, &index, &flag, &st));
    CHECK(flag == 1 && index == MPI_UNDEFINED, "then skips it");
    if (rank == 1)
        CHECK(v == 50, "value via Testany");
    OK(MPI_Request_free(&r));
}

static void contents_new_references(int rank)
{
    MPI_Datatype vec, contig, inner[1];
    int ints[4];
    MPI_Aint addrs[1];
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &vec));
    OK(MPI_Type_contiguous(3, vec, &contig));
    OK(MPI_Type_commit(&contig));
    int ni, na, nd, comb;
    OK(MPI_Type_get_envelope(contig, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_CONTIGUOUS && ni == 1 && na == 0 && nd == 1, "contiguous envelope");
    OK(MPI_Type_get_contents(contig, 4, 1, 1, ints, addrs, inner));
    CHECK(ints[0] == 3, "contiguous count");
    int size = 0;
    OK(MPI_Type_size(inner[0], &size));
    CHECK(size == 2 * (int)sizeof(int), "the returned type is the vector");
    /* The standard: the caller frees derived types get_contents returns. */
    OK(MPI_Type_free(&inner[0]));
    CHECK(inner[0] == MPI_DATATYPE_NULL, "freed");
    size = 0;
    OK(MPI_Type_size(vec, &size));
    CHECK(size == 2 * (int)sizeof(int), "the user's vector is still valid after freeing the returned handle");
    MPI_Datatype again;
    OK(MPI_Type_contiguous(2, vec, &again));
    OK(MPI_Type_free(&again));
    /* Still usable for communication. */
    int buf[18], got[18];
    for (int i = 0; i < 18; i++) {
        buf[i] = i;
        got[i] = -1;
    }
    OK(MPI_Sendrecv(buf, 1, contig, 1 - rank, 32, got, 1, contig, 1 - rank, 32, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    /* The vector's extent is 3 ints: data at 0, 2, 3, 5, 6, 8. */
    for (int i = 0; i < 12; i++)
        CHECK(got[i] == (i < 9 && i % 3 != 1 ? i : -1), "strided data after get_contents");
    /* Predefined types come back as themselves. */
    OK(MPI_Type_get_contents(vec, 4, 1, 1, ints, addrs, inner));
    CHECK(inner[0] == MPI_INT && ints[0] == 2 && ints[1] == 1 && ints[2] == 2, "vector contents");
    OK(MPI_Type_free(&contig));
    OK(MPI_Type_free(&vec));
}

static void lb_ub(int rank)
{
    int size = -1;
    MPI_Aint lb = -1, extent = -1;
    MPI_Datatype markers[2] = {MPI_LB, MPI_UB};
    for (int i = 0; i < 2; i++) {
        OK(MPI_Type_size(markers[i], &size));
        OK(MPI_Type_get_extent(markers[i], &lb, &extent));
        CHECK(size == 0 && lb == 0 && extent == 0, "MPI_LB/MPI_UB have no size and no extent");
        int ni, na, nd, comb;
        OK(MPI_Type_get_envelope(markers[i], &ni, &na, &nd, &comb));
        CHECK(comb == MPI_COMBINER_NAMED, "MPI_LB/MPI_UB are predefined");
        char name[MPI_MAX_OBJECT_NAME];
        int len = 0;
        OK(MPI_Type_get_name(markers[i], name, &len));
        CHECK(strcmp(name, i == 0 ? "MPI_LB" : "MPI_UB") == 0, name);
    }
    /* { LB at -4, int at 0, UB at 16 }: bounds from the markers. */
    int bl[3] = {1, 1, 1};
    MPI_Aint disp[3] = {-4, 0, 16};
    MPI_Datatype types[3] = {MPI_LB, MPI_INT, MPI_UB}, t;
    OK(MPI_Type_create_struct(3, bl, disp, types, &t));
    OK(MPI_Type_commit(&t));
    OK(MPI_Type_size(t, &size));
    OK(MPI_Type_get_extent(t, &lb, &extent));
    CHECK(size == (int)sizeof(int) && lb == -4 && extent == 20, "struct bounds from MPI_LB/MPI_UB");
    /* Two of them: the second int sits 20 bytes after the first. */
    int buf[12], got[12];
    for (int i = 0; i < 12; i++) {
        buf[i] = 10 * rank + i;
        got[i] = -1;
    }
    OK(MPI_Sendrecv(&buf[1], 2, t, 1 - rank, 33, &got[1], 2, t, 1 - rank, 33, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    int other = 10 * (1 - rank);
    CHECK(got[1] == other + 1 && got[6] == other + 6 && got[2] == -1 && got[5] == -1, "data laid out by the marker extent");
    OK(MPI_Type_free(&t));
    /* Only an upper bound. */
    MPI_Datatype types2[2] = {MPI_INT, MPI_UB};
    MPI_Aint disp2[2] = {0, 12};
    OK(MPI_Type_create_struct(2, bl, disp2, types2, &t));
    OK(MPI_Type_get_extent(t, &lb, &extent));
    CHECK(lb == 0 && extent == 12, "MPI_UB alone sets the extent");
    OK(MPI_Type_free(&t));
}

static void info_null_and_disconnect(void)
{
    MPI_Info dup = MPI_INFO_NULL;
    int nkeys = -1, flag = -1, len = -1;
    char value[16], key[MPI_MAX_INFO_KEY + 1];
    /* An invalid info handle: MPI_ERR_INFO on wanmpi and Open MPI 4.1, MPI_ERR_ARG on MPICH 4.0. */
#define INFO_ERR(call) (error_class(call) == MPI_ERR_INFO || error_class(call) == MPI_ERR_ARG)
    CHECK(INFO_ERR(MPI_Info_dup(MPI_INFO_NULL, &dup)), "MPI_Info_dup(MPI_INFO_NULL)");
    CHECK(INFO_ERR(MPI_Info_get(MPI_INFO_NULL, "k", 15, value, &flag)), "MPI_Info_get(MPI_INFO_NULL)");
    CHECK(INFO_ERR(MPI_Info_get_nkeys(MPI_INFO_NULL, &nkeys)), "MPI_Info_get_nkeys(MPI_INFO_NULL)");
    CHECK(INFO_ERR(MPI_Info_get_nthkey(MPI_INFO_NULL, 0, key)), "MPI_Info_get_nthkey(MPI_INFO_NULL)");
    CHECK(INFO_ERR(MPI_Info_get_valuelen(MPI_INFO_NULL, "k", &len, &flag)), "MPI_Info_get_valuelen(MPI_INFO_NULL)");
#ifdef WANMPI
    CHECK(error_class(MPI_Info_dup(MPI_INFO_NULL, &dup)) == MPI_ERR_INFO, "wanmpi says MPI_ERR_INFO");
#endif
    /* A real info object still answers, MPI_INFO_ENV too. */
    MPI_Info i;
    OK(MPI_Info_create(&i));
    OK(MPI_Info_set(i, "k", "v1"));
    OK(MPI_Info_dup(i, &dup));
    OK(MPI_Info_get_nkeys(dup, &nkeys));
    CHECK(nkeys == 1, "dup has the key");
    OK(MPI_Info_get_nkeys(MPI_INFO_ENV, &nkeys));
    /* MPI-4's MPI_Info_get_string: length with the NUL, value truncated. */
    char small[2];
    int buflen = 2;
    OK(MPI_Info_get_string(i, "k", &buflen, small, &flag));
    CHECK(flag && buflen == 3 && small[0] == 'v' && small[1] == 0, "MPI_Info_get_string truncates and reports the length");
    OK(MPI_Info_free(&dup));
    OK(MPI_Info_free(&i));

    MPI_Comm c = MPI_COMM_NULL;
    CHECK(error_class(MPI_Comm_disconnect(&c)) == MPI_ERR_COMM, "MPI_Comm_disconnect(MPI_COMM_NULL) is MPI_ERR_COMM");
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    OK(MPI_Barrier(c));
    OK(MPI_Comm_disconnect(&c));
    CHECK(c == MPI_COMM_NULL, "MPI_Comm_disconnect sets MPI_COMM_NULL");
}

/* A call wanmpi may not implement: either it works, or it fails with
 * MPI_ERR_UNSUPPORTED_OPERATION and leaves its output handle null. */
#define UNSUPPORTED_OR_OK(rc, handle, null, what)                                                         \
    do {                                                                                                  \
        int rc_ = (rc);                                                                                   \
        if (rc_ != MPI_SUCCESS) {                                                                         \
            CHECK(error_class(rc_) == MPI_ERR_UNSUPPORTED_OPERATION, what ": fails as unsupported");     \
            CHECK((handle) == (null), what ": sets its output handle to null");                           \
            unsupported++;                                                                                \
        }                                                                                                 \
    } while (0)

static void stubs_null_outputs(int rank)
{
    int unsupported = 0;
    MPI_Win win = (MPI_Win)12345;
    int base[4];
    int rc = MPI_Win_create(base, sizeof base, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    UNSUPPORTED_OR_OK(rc, win, MPI_WIN_NULL, "MPI_Win_create");
    if (rc == MPI_SUCCESS)
        OK(MPI_Win_free(&win));

    MPI_File fh = (MPI_File)&base[0];
    rc = MPI_File_open(MPI_COMM_WORLD, "/nonexistent-dir/x", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    /* (A real MPI-IO fails here too, as the file does not exist: only the
     * unsupported stub promises MPI_FILE_NULL.) */
    if (rc != MPI_SUCCESS && error_class(rc) == MPI_ERR_UNSUPPORTED_OPERATION)
        CHECK(fh == MPI_FILE_NULL, "unsupported MPI_File_open leaves MPI_FILE_NULL");

    MPI_Request req = (MPI_Request)12345;
    int sc[2] = {1, 1}, sd[2] = {0, (int)sizeof(int)}, rcv[2] = {-1, -1};
    MPI_Datatype st[2] = {MPI_INT, MPI_INT};
    int snd[2] = {rank, rank};
    rc = MPI_Ialltoallw(snd, sc, sd, st, rcv, sc, sd, st, MPI_COMM_WORLD, &req);
    UNSUPPORTED_OR_OK(rc, req, MPI_REQUEST_NULL, "MPI_Ialltoallw");
    /* Waiting on what the failed call left is fine: it is MPI_REQUEST_NULL. */
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    if (rc == MPI_SUCCESS)
        CHECK(rcv[0] == 0 && rcv[1] == 1, "MPI_Ialltoallw data");

#ifdef WANMPI /* (MPICH fails it here for want of a process manager that spawns) */
    /* A program that never calls MPI_Init cannot join: the spawn fails
     * with MPI_ERR_SPAWN (mpirun tells the waiting port when it exits)
     * and leaves MPI_COMM_NULL and the error code for each process. */
    MPI_Comm inter = (MPI_Comm)12345;
    int errcodes[1] = {0};
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    rc = MPI_Comm_spawn("/bin/true", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter, errcodes);
    CHECK(rc != MPI_SUCCESS && error_class(rc) == MPI_ERR_SPAWN, "spawning a program that is not MPI fails");
    CHECK(inter == MPI_COMM_NULL && errcodes[0] == MPI_ERR_SPAWN, "no communicator, and the error code per process");
#endif

    /* Only the failed calls failed: communication goes on. */
    int v = rank, w = -1;
    OK(MPI_Sendrecv(&v, 1, MPI_INT, 1 - rank, 34, &w, 1, MPI_INT, 1 - rank, 34, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(w == 1 - rank, "communication after unsupported calls");
    if (rank == 0)
        printf("unsupported calls seen: %d\n", unsupported);
}

static void large_count_and_conversions(int rank)
{
    /* _c calls share the int ones' bodies. */
    int v[3] = {rank, rank + 1, rank + 2}, w[3] = {-1, -1, -1};
    MPI_Status st;
    if (rank == 0) {
        OK(MPI_Send_c(v, (MPI_Count)3, MPI_INT, 1, 35, MPI_COMM_WORLD));
    } else {
        OK(MPI_Recv_c(w, (MPI_Count)3, MPI_INT, 0, 35, MPI_COMM_WORLD, &st));
        MPI_Count n = -1;
        OK(MPI_Get_count_c(&st, MPI_INT, &n));
        CHECK(n == 3 && w[2] == 2, "MPI_Send_c/MPI_Recv_c/MPI_Get_count_c");
    }
    MPI_Count size = -1;
    OK(MPI_Type_size_c(MPI_DOUBLE, &size));
    CHECK(size == 8, "MPI_Type_size_c");
    char packed[64];
    MPI_Count pos = 4;
    OK(MPI_Pack_c(v, 3, MPI_INT, packed, sizeof packed, &pos, MPI_COMM_WORLD));
    CHECK(pos == 4 + 3 * (MPI_Count)sizeof(int), "MPI_Pack_c advances the position");
    MPI_Count big = (MPI_Count)1 << 40;
    MPI_Datatype huge = MPI_DATATYPE_NULL;
    int rc = MPI_Type_contiguous_c(big, MPI_INT, &huge);
    if (rc == MPI_SUCCESS)
        OK(MPI_Type_free(&huge));
    else
        CHECK(error_class(rc) == MPI_ERR_COUNT || error_class(rc) == MPI_ERR_VALUE_TOO_LARGE, "a count beyond int");

    /* c2f/f2c: the macros and the functions (a parenthesized name is the function). */
    MPI_Message m = MPI_MESSAGE_NO_PROC;
    CHECK(MPI_Message_f2c(MPI_Message_c2f(m)) == m, "MPI_Message_c2f macro");
#ifdef WANMPI /* MPICH declares only the macros */
    CHECK((MPI_Comm_f2c)((MPI_Comm_c2f)(MPI_COMM_WORLD)) == MPI_COMM_WORLD, "MPI_Comm_c2f function");
    CHECK((MPI_Type_f2c)((MPI_Type_c2f)(MPI_DOUBLE)) == MPI_DOUBLE, "MPI_Type_c2f function");
    CHECK((MPI_Win_f2c)((MPI_Win_c2f)(MPI_WIN_NULL)) == MPI_WIN_NULL, "MPI_Win_c2f function");
    CHECK((MPI_Message_f2c)((MPI_Message_c2f)(m)) == m, "MPI_Message_c2f function");
    CHECK((MPI_Request_f2c)((MPI_Request_c2f)(MPI_REQUEST_NULL)) == MPI_REQUEST_NULL, "MPI_Request_c2f function");
#endif
    CHECK(MPI_File_c2f(MPI_FILE_NULL) == 0 && MPI_File_f2c(0) == MPI_FILE_NULL, "MPI_File_c2f");

    /* Status to Fortran and back. */
    MPI_Status a, b;
    a.MPI_SOURCE = 1;
    a.MPI_TAG = 2;
    a.MPI_ERROR = 3;
    MPI_Status_set_elements(&a, MPI_INT, 7);
    MPI_Fint f[MPI_F_STATUS_SIZE];
    OK(MPI_Status_c2f(&a, f));
    CHECK(f[MPI_F_SOURCE] == 1 && f[MPI_F_TAG] == 2 && f[MPI_F_ERROR] == 3, "MPI_Status_c2f fields");
    OK(MPI_Status_f2c(f, &b));
    int n = -1;
    OK(MPI_Get_count(&b, MPI_INT, &n));
    CHECK(b.MPI_SOURCE == 1 && b.MPI_TAG == 2 && n == 7, "MPI_Status_f2c round trip");
    CHECK(MPI_F_STATUS_IGNORE != NULL || MPI_F_STATUSES_IGNORE != NULL || 1, "MPI_F_STATUS_IGNORE links");
    CHECK(MPI_UNWEIGHTED != MPI_WEIGHTS_EMPTY && MPI_UNWEIGHTED != NULL, "MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY are distinct");

    /* Address arithmetic. */
    char arr[10];
    MPI_Aint a0, a7;
    OK(MPI_Get_address(&arr[0], &a0));
    OK(MPI_Get_address(&arr[7], &a7));
    CHECK(MPI_Aint_diff(a7, a0) == 7 && MPI_Aint_add(a0, 7) == a7, "MPI_Aint_add/MPI_Aint_diff");

    /* MPI_Type_match_size. */
    MPI_Datatype t;
    OK(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &t));
    int ts = 0;
    OK(MPI_Type_size(t, &ts));
    CHECK(ts == 8, "real of 8 bytes");
    OK(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 4, &t));
    OK(MPI_Type_size(t, &ts));
    CHECK(ts == 4, "integer of 4 bytes");
    OK(MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 16, &t));
    OK(MPI_Type_size(t, &ts));
    CHECK(ts == 16, "complex of 16 bytes");
    CHECK(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 3, &t) != MPI_SUCCESS, "no integer of 3 bytes");
}

/* Packs one `t` out of `src` and returns how many ints came out. */
static int pack_ints(const int *src, MPI_Datatype t, int *out, int max)
{
    int pos = 0, bytes = 0;
    OK(MPI_Pack_size(1, t, MPI_COMM_WORLD, &bytes));
    CHECK(bytes <= max * (int)sizeof(int), "pack size");
    OK(MPI_Pack(src, 1, t, out, max * (int)sizeof(int), &pos, MPI_COMM_WORLD));
    return pos / (int)sizeof(int);
}

static void subarray_darray(int rank)
{
    int a[24], got[24];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++)
            a[6 * i + j] = 10 * i + j;

    /* Rows 1-2, columns 1-3 of a 4x6 array, in C and in Fortran order. */
    int want[6] = {11, 12, 13, 21, 22, 23};
    int orders[2] = {MPI_ORDER_C, MPI_ORDER_FORTRAN};
    for (int o = 0; o < 2; o++) {
        int c = orders[o] == MPI_ORDER_C;
        int sizes[2] = {c ? 4 : 6, c ? 6 : 4}, subsizes[2] = {c ? 2 : 3, c ? 3 : 2}, starts[2] = {1, 1};
        MPI_Datatype t;
        OK(MPI_Type_create_subarray(2, sizes, subsizes, starts, orders[o], MPI_INT, &t));
        OK(MPI_Type_commit(&t));
        int size = 0;
        MPI_Aint lb = -1, extent = -1;
        OK(MPI_Type_size(t, &size));
        OK(MPI_Type_get_extent(t, &lb, &extent));
        CHECK(size == 6 * (int)sizeof(int) && lb == 0 && extent == 24 * (MPI_Aint)sizeof(int), "subarray size and extent");
        CHECK(pack_ints(a, t, got, 24) == 6 && memcmp(got, want, sizeof want) == 0, "subarray elements");
        /* Sent and received as a subarray: the rest of the array is untouched. */
        int r[24];
        for (int i = 0; i < 24; i++)
            r[i] = -1;
        OK(MPI_Sendrecv(a, 1, t, 1 - rank, 36, r, 1, t, 1 - rank, 36, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(r[7] == 11 && r[15] == 23 && r[0] == -1 && r[10] == -1, "subarray through a message");
        OK(MPI_Type_free(&t));
    }
    MPI_Datatype t;
#ifdef WANMPI /* (Debian's MPICH 4.0.2 does not check this) */
    int bad[2] = {4, 6}, badsub[2] = {2, 7}, st0[2] = {0, 0};
    CHECK(MPI_Type_create_subarray(2, bad, badsub, st0, MPI_ORDER_C, MPI_INT, &t) != MPI_SUCCESS, "a subsize beyond the size");
#endif

    /* A 4x6 array over a 2x2 process grid: rows in blocks, columns cyclic.
     * Every element belongs to exactly one of the four processes. */
    int seen[24] = {0};
    int gsizes[2] = {4, 6}, distribs[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC}, dargs[2] = {MPI_DISTRIBUTE_DFLT_DARG, 1},
        psizes[2] = {2, 2};
    for (int p = 0; p < 4; p++) {
        OK(MPI_Type_create_darray(4, p, 2, gsizes, distribs, dargs, psizes, MPI_ORDER_C, MPI_INT, &t));
        OK(MPI_Type_commit(&t));
        MPI_Aint lb = -1, extent = -1;
        OK(MPI_Type_get_extent(t, &lb, &extent));
        CHECK(lb == 0 && extent == 24 * (MPI_Aint)sizeof(int), "darray extent is the global array");
        int n = pack_ints(a, t, got, 24);
        CHECK(n == 6, "each process holds 2 rows x 3 columns");
        int row0 = 2 * (p / 2), col0 = p % 2;
        for (int k = 0; k < n; k++) {
            int i = got[k] / 10, j = got[k] % 10;
            CHECK(i == row0 + k / 3 && j == col0 + 2 * (k % 3), "darray element order");
            seen[6 * i + j]++;
        }
        OK(MPI_Type_free(&t));
    }
    for (int i = 0; i < 24; i++)
        CHECK(seen[i] == 1, "darray pieces cover the array once");
    /* Cyclic blocks of 4 over 6 columns on 2 processes, Fortran order:
     * a 6x4 Fortran array is this 4x6 C array; dimension 0 (the 6) is cyclic(4). */
    int fg[2] = {6, 4}, fd[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_NONE}, fa[2] = {4, MPI_DISTRIBUTE_DFLT_DARG}, fp[2] = {2, 1};
    OK(MPI_Type_create_darray(2, 1, 2, fg, fd, fa, fp, MPI_ORDER_FORTRAN, MPI_INT, &t));
    OK(MPI_Type_commit(&t));
    int n = pack_ints(a, t, got, 24);
    CHECK(n == 8, "process 1 holds columns 4-5 of every row");
    int fw[8] = {4, 5, 14, 15, 24, 25, 34, 35};
    CHECK(memcmp(got, fw, sizeof fw) == 0, "Fortran-order cyclic darray elements");
    OK(MPI_Type_free(&t));
}

static void graph_topologies(int rank)
{
    int other = 1 - rank, status = -1, n = -1, m = -1, w = -1;
    /* MPI-1 graph: each node's one neighbour is the other. */
    int index[2] = {1, 2}, edges[2] = {1, 0};
    MPI_Comm g;
    OK(MPI_Graph_create(MPI_COMM_WORLD, 2, index, edges, 0, &g));
    OK(MPI_Topo_test(g, &status));
    CHECK(status == MPI_GRAPH, "MPI_Topo_test says MPI_GRAPH");
    OK(MPI_Graphdims_get(g, &n, &m));
    CHECK(n == 2 && m == 2, "MPI_Graphdims_get");
    int gi[2] = {-1, -1}, ge[2] = {-1, -1};
    OK(MPI_Graph_get(g, 2, 2, gi, ge));
    CHECK(gi[0] == 1 && gi[1] == 2 && ge[0] == 1 && ge[1] == 0, "MPI_Graph_get");
    OK(MPI_Graph_neighbors_count(g, rank, &n));
    int nb = -1;
    OK(MPI_Graph_neighbors(g, rank, 1, &nb));
    CHECK(n == 1 && nb == other, "MPI_Graph_neighbors");
    int v = rank, got = -1;
    OK(MPI_Sendrecv(&v, 1, MPI_INT, nb, 37, &got, 1, MPI_INT, nb, 37, g, MPI_STATUS_IGNORE));
    CHECK(got == other, "communication on the graph communicator");
    OK(MPI_Comm_free(&g));
    int dims[1] = {1}, periods[1] = {0}, newrank = -5;
    OK(MPI_Cart_map(MPI_COMM_WORLD, 1, dims, periods, &newrank));
    CHECK(newrank == (rank == 0 ? 0 : MPI_UNDEFINED), "MPI_Cart_map of a 1-process grid");
    OK(MPI_Graph_map(MPI_COMM_WORLD, 2, index, edges, &newrank));
    CHECK(newrank == rank, "MPI_Graph_map keeps ranks");

    /* Distributed graph from adjacency, weighted. */
    int src[1] = {other}, sw[1] = {10 + other}, dst[1] = {other}, dw[1] = {10 + rank};
    MPI_Comm d;
    OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, src, sw, 1, dst, dw, MPI_INFO_NULL, 0, &d));
    OK(MPI_Topo_test(d, &status));
    CHECK(status == MPI_DIST_GRAPH, "MPI_Topo_test says MPI_DIST_GRAPH");
    OK(MPI_Dist_graph_neighbors_count(d, &n, &m, &w));
    CHECK(n == 1 && m == 1 && w, "MPI_Dist_graph_neighbors_count (weighted)");
    int s1 = -1, s1w = -1, d1 = -1, d1w = -1;
    OK(MPI_Dist_graph_neighbors(d, 1, &s1, &s1w, 1, &d1, &d1w));
    CHECK(s1 == other && s1w == 10 + other && d1 == other && d1w == 10 + rank, "MPI_Dist_graph_neighbors");
    OK(MPI_Comm_free(&d));
    /* Unweighted. */
    OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, src, MPI_UNWEIGHTED, 1, dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &d));
    OK(MPI_Dist_graph_neighbors_count(d, &n, &m, &w));
    CHECK(n == 1 && m == 1 && !w, "unweighted distributed graph");
    OK(MPI_Comm_free(&d));

    /* The general constructor: rank 0 names every edge, 0->1 (weight 5) and 1->0 (weight 7). */
    int gs[2] = {0, 1}, gdeg[2] = {1, 1}, gdst[2] = {1, 0}, gw[2] = {5, 7};
    OK(MPI_Dist_graph_create(MPI_COMM_WORLD, rank == 0 ? 2 : 0, gs, gdeg, gdst, gw, MPI_INFO_NULL, 0, &d));
    OK(MPI_Dist_graph_neighbors_count(d, &n, &m, &w));
    CHECK(n == 1 && m == 1 && w, "MPI_Dist_graph_create degrees");
    OK(MPI_Dist_graph_neighbors(d, 1, &s1, &s1w, 1, &d1, &d1w));
    CHECK(s1 == other && d1 == other, "MPI_Dist_graph_create neighbours");
    CHECK(d1w == (rank == 0 ? 5 : 7) && s1w == (rank == 0 ? 7 : 5), "MPI_Dist_graph_create weights");
    OK(MPI_Comm_free(&d));
}

static void user_errors_and_f90(void)
{
    int cls = -1, code = -1, c2 = -1, got = -1, len = 0, flag = 0, *last = NULL;
    char text[MPI_MAX_ERROR_STRING];
    OK(MPI_Add_error_class(&cls));
    OK(MPI_Add_error_code(cls, &code));
    OK(MPI_Add_error_code(MPI_ERR_ARG, &c2));
    CHECK(cls > MPI_ERR_LASTCODE, "a new class above MPI_ERR_LASTCODE");
    CHECK(code != cls && c2 != code, "distinct codes");
    OK(MPI_Error_class(code, &got));
    CHECK(got == cls, "the new code's class");
    OK(MPI_Error_class(cls, &got));
    CHECK(got == cls, "a class is its own code");
    OK(MPI_Error_class(c2, &got));
    CHECK(got == MPI_ERR_ARG, "a code of a predefined class");
    OK(MPI_Add_error_string(code, "wanmpi test error"));
    OK(MPI_Error_string(code, text, &len));
    CHECK(strcmp(text, "wanmpi test error") == 0 && len == (int)strlen(text), text);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
    CHECK(flag && *last >= cls, "MPI_LASTUSEDCODE follows the added class");
#ifdef WANMPI /* (MPICH 4.0.2 moves it for classes only; Open MPI and wanmpi for codes too) */
    CHECK(*last >= code && *last >= c2, "MPI_LASTUSEDCODE follows the added codes");
#endif

    MPI_Datatype t;
    int size = 0;
    OK(MPI_Type_create_f90_integer(9, &t));
    OK(MPI_Type_size(t, &size));
    CHECK(size == 4, "f90 integer of range 10^9 has 4 bytes");
    OK(MPI_Type_create_f90_real(15, MPI_UNDEFINED, &t));
    OK(MPI_Type_size(t, &size));
    CHECK(size == 8, "f90 real of precision 15 has 8 bytes");
    OK(MPI_Type_create_f90_complex(6, MPI_UNDEFINED, &t));
    OK(MPI_Type_size(t, &size));
    CHECK(size == 8, "f90 complex of precision 6 has 8 bytes");
}

static int deleted;
static int count_delete(MPI_Datatype t, int k, void *v, void *extra)
{
    (void)t;
    (void)k;
    (void)extra;
    deleted += *(int *)v;
    return MPI_SUCCESS;
}

static void datatype_attributes(void)
{
    int k = MPI_KEYVAL_INVALID, a = 1, b = 10, *v = NULL, flag = -1;
    OK(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, count_delete, &k, NULL));
    MPI_Datatype t, d;
    OK(MPI_Type_contiguous(2, MPI_INT, &t));
    OK(MPI_Type_get_attr(t, k, &v, &flag));
    CHECK(flag == 0, "no attribute yet");
    OK(MPI_Type_set_attr(t, k, &a));
    OK(MPI_Type_get_attr(t, k, &v, &flag));
    CHECK(flag == 1 && v == &a, "the attribute set");
    OK(MPI_Type_set_attr(t, k, &b));
    CHECK(deleted == 1, "replacing an attribute deletes the old value");
    OK(MPI_Type_dup(t, &d));
    OK(MPI_Type_get_attr(d, k, &v, &flag));
    CHECK(flag == 1 && v == &b, "MPI_Type_dup copies it with MPI_TYPE_DUP_FN");
    OK(MPI_Type_delete_attr(d, k));
    CHECK(deleted == 11, "MPI_Type_delete_attr calls the delete callback");
    OK(MPI_Type_get_attr(d, k, &v, &flag));
    CHECK(flag == 0, "deleted");
    OK(MPI_Type_free(&t));
    OK(MPI_Type_free(&d));
    /* (MPICH deletes t's attributes only once d, built from it, is gone.) */
    CHECK(deleted == 21, "MPI_Type_free deletes the attributes");
    /* On a predefined type too. */
    OK(MPI_Type_set_attr(MPI_INT, k, &a));
    OK(MPI_Type_get_attr(MPI_INT, k, &v, &flag));
    CHECK(flag == 1 && v == &a, "an attribute on MPI_INT");
    OK(MPI_Type_delete_attr(MPI_INT, k));
    CHECK(deleted == 22, "deleted from MPI_INT");
    OK(MPI_Type_free_keyval(&k));
    CHECK(k == MPI_KEYVAL_INVALID, "MPI_Type_free_keyval");
}

static int file_errors;
static void count_file_error(MPI_File *fh, int *code, ...)
{
    (void)fh;
    (void)code;
    file_errors++;
}

static void file_null_errhandler(void)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL, mine;
    OK(MPI_File_get_errhandler(MPI_FILE_NULL, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "MPI_FILE_NULL's handler is MPI_ERRORS_RETURN");
    OK(MPI_File_create_errhandler(count_file_error, &mine));
    OK(MPI_File_set_errhandler(MPI_FILE_NULL, mine));
    OK(MPI_File_get_errhandler(MPI_FILE_NULL, &eh));
    CHECK(eh == mine, "the handler set on MPI_FILE_NULL");
    OK(MPI_File_call_errhandler(MPI_FILE_NULL, MPI_ERR_OTHER));
    CHECK(file_errors == 1, "MPI_File_call_errhandler calls it");
    MPI_File fh;
    int rc = MPI_File_open(MPI_COMM_SELF, "/nonexistent-dir/x", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(rc != MPI_SUCCESS && file_errors == 2, "a failed MPI_File_open goes through MPI_FILE_NULL's handler");
    OK(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN));
    OK(MPI_Errhandler_free(&mine));
}

/* Nothing to or from MPI_PROC_NULL may name MPI_DATATYPE_NULL with count
 * 0 (MPICH's pt2pt/recvnull; MPICH accepts it). */
static void null_datatype_to_proc_null(void)
{
    MPI_Status st;
    MPI_Request r;
    OK(MPI_Recv(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "a receive from MPI_PROC_NULL");
    OK(MPI_Irecv(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, &st));
    OK(MPI_Send(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
    OK(MPI_Sendrecv(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    CHECK(MPI_Send(NULL, 1, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD) == MPI_ERR_TYPE, "a count of 1 still needs a type");
}

/* MPI_Finalize runs the delete callbacks of MPI_COMM_SELF's attributes,
 * then MPI_COMM_WORLD's (as MPICH does): each appends its letter. */
static char finalize_order[4];
static int delete_note(MPI_Comm comm, int key, void *value, void *extra)
{
    (void)comm;
    (void)key;
    (void)extra;
    size_t n = strlen(finalize_order);
    if (n + 1 < sizeof finalize_order) finalize_order[n] = *(const char *)value;
    return MPI_SUCCESS;
}

static void finalize_callbacks(void)
{
    static const char self = 'S', world = 'W';
    int ks, kw;
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_note, &ks, NULL));
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_note, &kw, NULL));
    OK(MPI_Comm_set_attr(MPI_COMM_WORLD, kw, (void *)&world));
    OK(MPI_Comm_set_attr(MPI_COMM_SELF, ks, (void *)&self));
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "runs on 2 ranks");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    empty_statuses(rank);
    persistent_any(rank);
    contents_new_references(rank);
    lb_ub(rank);
    info_null_and_disconnect();
    stubs_null_outputs(rank);
    large_count_and_conversions(rank);
    subarray_darray(rank);
    graph_topologies(rank);
    user_errors_and_f90();
    datatype_attributes();
    file_null_errhandler();
    null_datatype_to_proc_null();
    finalize_callbacks();
    OK(MPI_Barrier(MPI_COMM_WORLD));
    pass("surface");
    MPI_Finalize();
    if (strcmp(finalize_order, "SW") != 0) {
        fprintf(stderr, "rank %d: MPI_Finalize ran delete callbacks \"%s\", not SELF then WORLD (\"SW\")\n", rank, finalize_order);
        return 1;
    }
    return 0;
}
