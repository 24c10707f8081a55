/* MPI-IO (MPI-4.0 chapter 14) on a file system the ranks share: views with
 * a displacement and a strided filetype, explicit offsets, individual and
 * shared file pointers, ordered, collective, split-collective and
 * nonblocking access, size and management calls, the external32
 * representation, error handlers and the error classes of common mistakes.
 * Files live in a directory rank 0 makes with mkdtemp and removes at the
 * end. Passes on MPICH 4.0.2 as well. */
/* mkdtemp under -std=c99 */
#define _XOPEN_SOURCE 700
#include "check.h"
#include <unistd.h>
#include <sys/stat.h>

static int rank, size;
static char dir[256];

static void path(char *out, const char *name)
{
    snprintf(out, 512, "%s/%s", dir, name);
}

static int count_of(MPI_Status *st, MPI_Datatype dt)
{
    int n = -1;
    OK(MPI_Get_count(st, dt, &n));
    return n;
}

/* Each rank owns 2 ints of every 2*size, from a 16-byte header on. */
static void views(void)
{
    char name[512];
    path(name, "view");
    MPI_File fh;
    MPI_Status st;
    OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    MPI_Datatype vec, tile;
    OK(MPI_Type_vector(1, 2, 2 * size, MPI_INT, &vec));
    OK(MPI_Type_create_resized(vec, 0, 2 * size * (MPI_Aint)sizeof(int), &tile));
    OK(MPI_Type_commit(&tile));
    OK(MPI_File_set_view(fh, 16 + 2 * rank * sizeof(int), MPI_INT, tile, "native", MPI_INFO_NULL));

    MPI_Offset disp;
    MPI_Datatype et, ft;
    char rep[MPI_MAX_DATAREP_STRING];
    OK(MPI_File_get_view(fh, &disp, &et, &ft, rep));
    CHECK(disp == 16 + 2 * rank * (MPI_Offset)sizeof(int) && et == MPI_INT && strcmp(rep, "native") == 0, "MPI_File_get_view");
    OK(MPI_Type_free(&ft));

    int mine[6];
    for (int i = 0; i < 6; i++)
        mine[i] = 1000 * rank + i;
    OK(MPI_File_write_all(fh, mine, 6, MPI_INT, &st));
    CHECK(count_of(&st, MPI_INT) == 6, "write_all count");
    MPI_Offset pos, byte;
    OK(MPI_File_get_position(fh, &pos));
    CHECK(pos == 6, "individual pointer after write_all");
    OK(MPI_File_get_byte_offset(fh, 3, &byte));
    CHECK(byte == 16 + (2 * rank + 2 * size + 1) * (MPI_Offset)sizeof(int), "MPI_File_get_byte_offset");

    /* The whole file through the default-like view of ints from the header. */
    OK(MPI_File_set_view(fh, 16, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    int n = 6 * size, *all = malloc(n * sizeof(int));
    OK(MPI_File_read_at(fh, 0, all, n, MPI_INT, &st));
    CHECK(count_of(&st, MPI_INT) == n, "read_at count");
    for (int k = 0; k < n; k++) {
        int tile_i = k / (2 * size), in = k % (2 * size), r = in / 2, i = tile_i * 2 + in % 2;
        CHECK(all[k] == 1000 * r + i, "interleaved data in rank order");
    }
    /* Reading past the end gives what is there. */
    OK(MPI_File_read_at(fh, n - 2, all, 5, MPI_INT, &st));
    CHECK(count_of(&st, MPI_INT) == 2, "short read at end of file");
    MPI_Offset sz;
    OK(MPI_File_get_size(fh, &sz));
    CHECK(sz == 16 + n * (MPI_Offset)sizeof(int), "file size after the view writes");
    free(all);
    OK(MPI_Type_free(&tile));
    OK(MPI_Type_free(&vec));
    OK(MPI_File_close(&fh));
    CHECK(fh == MPI_FILE_NULL, "close sets MPI_FILE_NULL");
}

static void pointers(void)
{
    char name[512];
    path(name, "pointers");
    MPI_File fh;
    MPI_Status st;
    OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
    OK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));

    /* Individual pointers: rank r writes 3 ints at 3r by seeking. */
    int v[3] = {rank, rank + 1, rank + 2}, back[3];
    OK(MPI_File_seek(fh, 3 * rank, MPI_SEEK_SET));
    OK(MPI_File_write(fh, v, 3, MPI_INT, &st));
    MPI_Offset pos;
    OK(MPI_File_get_position(fh, &pos));
    CHECK(pos == 3 * rank + 3, "position after write");
    OK(MPI_File_seek(fh, -3, MPI_SEEK_CUR));
    OK(MPI_File_read(fh, back, 3, MPI_INT, &st));
    CHECK(back[0] == rank && back[2] == rank + 2, "read back at the individual pointer");
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_File_seek(fh, 0, MPI_SEEK_END));
    OK(MPI_File_get_position(fh, &pos));
    CHECK(pos == 3 * size, "MPI_SEEK_END");

    /* Shared pointer: one int from each rank, in some order, after the rest. */
    OK(MPI_File_seek_shared(fh, 3 * size, MPI_SEEK_SET));
    int me = 100 + rank;
    OK(MPI_File_write_shared(fh, &me, 1, MPI_INT, &st));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == 4 * size, "shared pointer moved by every rank's write");
    /* Collectives need not synchronize: without this barrier, a rank quick
     * into write_ordered below may move the pointer before a slow one read
     * it (MPICH's ordered writes do). */
    OK(MPI_Barrier(MPI_COMM_WORLD));
    int *got = malloc(size * sizeof(int)), seen = 0;
    OK(MPI_File_read_at(fh, 3 * size, got, size, MPI_INT, &st));
    for (int i = 0; i < size; i++)
        seen |= 1 << (got[i] - 100);
    CHECK(seen == (1 << size) - 1, "each rank's shared write landed once");

    /* Ordered: rank r writes r+1 copies of r, in rank order. */
    int *blk = malloc((rank + 1) * sizeof(int));
    for (int i = 0; i <= rank; i++)
        blk[i] = rank;
    OK(MPI_File_write_ordered(fh, blk, rank + 1, MPI_INT, &st));
    CHECK(count_of(&st, MPI_INT) == rank + 1, "write_ordered count");
    OK(MPI_Barrier(MPI_COMM_WORLD));
    int tot = size * (size + 1) / 2, *ord = malloc(tot * sizeof(int));
    OK(MPI_File_read_at(fh, 4 * size, ord, tot, MPI_INT, &st));
    for (int r = 0, k = 0; r < size; r++)
        for (int i = 0; i <= r; i++, k++)
            CHECK(ord[k] == r, "ordered writes in rank order");
    OK(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == 4 * size + tot, "shared pointer after write_ordered");
    OK(MPI_Barrier(MPI_COMM_WORLD));

    /* read_ordered reads the same blocks back. */
    OK(MPI_File_seek_shared(fh, 4 * size, MPI_SEEK_SET));
    for (int i = 0; i <= rank; i++)
        blk[i] = -1;
    OK(MPI_File_read_ordered(fh, blk, rank + 1, MPI_INT, &st));
    for (int i = 0; i <= rank; i++)
        CHECK(blk[i] == rank, "read_ordered");

    /* A shared read takes the next unread int. */
    OK(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    int one = -1;
    if (rank == 0)
        OK(MPI_File_read_shared(fh, &one, 1, MPI_INT, &st));
    if (rank == 0)
        CHECK(one == 0, "read_shared from 0");
    free(blk);
    free(ord);
    free(got);
    OK(MPI_File_close(&fh));
    CHECK(access(name, F_OK) != 0, "MPI_MODE_DELETE_ON_CLOSE removed the file");
}

static void collective_and_nonblocking(void)
{
    char name[512];
    path(name, "coll");
    MPI_File fh;
    MPI_Status st;
    MPI_Request rq;
    OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    double d[4] = {rank, rank + 0.5, rank + 0.25, rank + 0.125}, e[4];
    MPI_Offset at = 4 * rank * (MPI_Offset)sizeof(double);

    /* Split collective at explicit offsets (bytes: the default view). */
    OK(MPI_File_write_at_all_begin(fh, at, d, 4, MPI_DOUBLE));
    OK(MPI_File_write_at_all_end(fh, d, &st));
    CHECK(count_of(&st, MPI_DOUBLE) == 4, "write_at_all_end status");
    OK(MPI_File_read_at_all(fh, at, e, 4, MPI_DOUBLE, &st));
    CHECK(e[1] == rank + 0.5 && e[3] == rank + 0.125, "write_at_all_begin/end data");

    /* Nonblocking, explicit offsets, then the next rank's data. */
    for (int i = 0; i < 4; i++)
        d[i] = -d[i];
    OK(MPI_File_iwrite_at(fh, at, d, 4, MPI_DOUBLE, &rq));
    OK(MPI_Wait(&rq, &st));
    CHECK(count_of(&st, MPI_DOUBLE) == 4, "iwrite_at status");
    OK(MPI_File_sync(fh));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_File_sync(fh));
    int next = (rank + 1) % size;
    OK(MPI_File_iread_at(fh, 4 * next * (MPI_Offset)sizeof(double), e, 4, MPI_DOUBLE, &rq));
    OK(MPI_Wait(&rq, &st));
    CHECK(e[1] == -(next + 0.5), "iread_at of the next rank's data");

    /* Nonblocking collective and split collective at the individual pointer. */
    OK(MPI_File_seek(fh, at, MPI_SEEK_SET));
    OK(MPI_File_iread_all(fh, e, 4, MPI_DOUBLE, &rq));
    OK(MPI_Wait(&rq, &st));
    CHECK(e[0] == -rank && count_of(&st, MPI_DOUBLE) == 4, "iread_all");
    OK(MPI_File_seek(fh, at, MPI_SEEK_SET));
    OK(MPI_File_read_all_begin(fh, e, 4, MPI_DOUBLE));
    OK(MPI_File_read_all_end(fh, e, &st));
    CHECK(e[2] == -(rank + 0.25), "read_all_begin/end");
    OK(MPI_File_seek(fh, at, MPI_SEEK_SET));
    OK(MPI_File_iwrite_all(fh, d, 4, MPI_DOUBLE, &rq));
    OK(MPI_Wait(&rq, &st));

    /* Sizes. */
    OK(MPI_File_set_size(fh, 1000));
    MPI_Offset sz;
    OK(MPI_File_get_size(fh, &sz));
    CHECK(sz == 1000, "MPI_File_set_size grows");
    OK(MPI_File_set_size(fh, 8));
    OK(MPI_File_get_size(fh, &sz));
    CHECK(sz == 8, "MPI_File_set_size shrinks");
    OK(MPI_File_preallocate(fh, 4096));
    OK(MPI_File_get_size(fh, &sz));
    CHECK(sz == 4096, "MPI_File_preallocate");

    /* Management queries. */
    int amode, flag;
    OK(MPI_File_get_amode(fh, &amode));
    CHECK(amode == (MPI_MODE_CREATE | MPI_MODE_RDWR), "MPI_File_get_amode");
    OK(MPI_File_get_atomicity(fh, &flag));
    CHECK(flag == 0, "atomicity off at first");
    OK(MPI_File_set_atomicity(fh, 1));
    OK(MPI_File_get_atomicity(fh, &flag));
    CHECK(flag == 1, "MPI_File_set_atomicity");
    OK(MPI_File_write_at(fh, 0, d, 1, MPI_DOUBLE, &st));
    MPI_Group g, w;
    int cmp;
    OK(MPI_File_get_group(fh, &g));
    OK(MPI_Comm_group(MPI_COMM_WORLD, &w));
    OK(MPI_Group_compare(g, w, &cmp));
    CHECK(cmp == MPI_IDENT, "MPI_File_get_group");
    OK(MPI_Group_free(&g));
    OK(MPI_Group_free(&w));
    MPI_Info info;
    OK(MPI_File_get_info(fh, &info));
    OK(MPI_Info_free(&info));
    MPI_Aint ext;
    OK(MPI_File_get_type_extent(fh, MPI_DOUBLE, &ext));
    CHECK(ext == sizeof(double), "MPI_File_get_type_extent");
    MPI_Fint f = MPI_File_c2f(fh);
    CHECK(MPI_File_f2c(f) == fh, "MPI_File_c2f/f2c");
    OK(MPI_File_close(&fh));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0)
        OK(MPI_File_delete(name, MPI_INFO_NULL));
}

/* external32 stores big-endian: rank r's int, read back as bytes. */
static void external32(void)
{
    char name[512];
    path(name, "e32");
    MPI_File fh;
    MPI_Status st;
    OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
    OK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL));
    int v = 0x01020300 + rank, back = 0;
    OK(MPI_File_write_at_all(fh, rank, &v, 1, MPI_INT, &st));
    OK(MPI_File_read_at_all(fh, rank, &back, 1, MPI_INT, &st));
    CHECK(back == v, "external32 round trip");
    OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    unsigned char raw[4];
    OK(MPI_File_read_at(fh, 4 * rank, raw, 4, MPI_BYTE, &st));
    CHECK(raw[0] == 1 && raw[1] == 2 && raw[2] == 3 && raw[3] == rank, "external32 is big-endian");

    /* Types whose size changes: a C long takes 4 bytes, a long double 16
     * (binary128). Rank r writes longs {-r-1, 2^20} at longs 2r, 2r+1, then
     * the long double r+0.5 after every rank's longs. */
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_File_set_size(fh, 0));
    MPI_Aint fext = 0;
    OK(MPI_File_set_view(fh, 0, MPI_LONG, MPI_LONG, "external32", MPI_INFO_NULL));
    OK(MPI_File_get_type_extent(fh, MPI_LONG, &fext));
    CHECK(fext == 4, "a long takes 4 bytes in external32");
    long ls[2] = {-rank - 1, 1L << 20}, lback[2] = {0, 0};
    OK(MPI_File_write_at_all(fh, 2 * rank, ls, 2, MPI_LONG, &st));
    OK(MPI_File_read_at_all(fh, 2 * rank, lback, 2, MPI_LONG, &st));
    CHECK(lback[0] == ls[0] && lback[1] == ls[1], "longs back from external32");
    long huge = 1L << 40;
    CHECK(error_class(MPI_File_write_at(fh, 2 * rank, &huge, 1, MPI_LONG, &st)) == MPI_ERR_CONVERSION, "a long beyond 32 bits");

    OK(MPI_File_set_view(fh, 8 * (MPI_Offset)size, MPI_LONG_DOUBLE, MPI_LONG_DOUBLE, "external32", MPI_INFO_NULL));
    OK(MPI_File_get_type_extent(fh, MPI_LONG_DOUBLE, &fext));
    CHECK(fext == 16, "a long double takes 16 bytes in external32");
    long double d = rank + 0.5L, dback = 0;
    OK(MPI_File_write_at_all(fh, rank, &d, 1, MPI_LONG_DOUBLE, &st));
    OK(MPI_File_read_at_all(fh, rank, &dback, 1, MPI_LONG_DOUBLE, &st));
    CHECK(dback == d, "a long double back from external32");
    MPI_Offset fsize = 0;
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_File_get_size(fh, &fsize));
    CHECK(fsize == 24 * (MPI_Offset)size, "the external32 file holds 8 + 16 bytes a rank");

    OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    unsigned char r8[8], r16[16];
    OK(MPI_File_read_at(fh, 8 * rank, r8, 8, MPI_BYTE, &st));
    CHECK(r8[0] == 0xff && r8[3] == (unsigned char)(-rank - 1) && r8[4] == 0 && r8[5] == 0x10 && r8[7] == 0, "longs as 4 big-endian bytes");
    OK(MPI_File_read_at(fh, 8 * size + 16 * rank, r16, 16, MPI_BYTE, &st));
    /* 0.5 and 1.5: exponents 0x3ffe and 0x3fff, fraction 0 and 0x8000... */
    CHECK(rank > 1 || (r16[0] == 0x3f && r16[1] == (rank ? 0xff : 0xfe) && r16[2] == (rank ? 0x80 : 0)), "a long double as binary128");
    OK(MPI_File_close(&fh));
}

static int handler_calls;
static MPI_File handler_file;
static void on_error(MPI_File *fh, int *code, ...)
{
    handler_calls++;
    handler_file = *fh;
    (void)code;
}

static void errors(void)
{
    char name[512], missing[512];
    path(name, "errors");
    path(missing, "no-such-file");
    MPI_File fh = MPI_FILE_NULL;
    MPI_Status st;
    MPI_Errhandler eh;
    OK(MPI_File_get_errhandler(MPI_FILE_NULL, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "files return errors by default");

    int rc = MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(error_class(rc) == MPI_ERR_NO_SUCH_FILE, "opening a missing file");
    rc = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    CHECK(error_class(rc) == MPI_ERR_AMODE, "RDONLY with WRONLY");
    rc = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
    CHECK(error_class(rc) == MPI_ERR_AMODE, "RDONLY with CREATE");

    OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_EXCL, MPI_INFO_NULL, &fh));
    int x = 7;
    if (rank == 0)
        OK(MPI_File_write_at(fh, 0, &x, 1, MPI_INT, &st));
    rc = MPI_File_read_at(fh, 0, &x, 1, MPI_INT, &st);
    CHECK(error_class(rc) == MPI_ERR_ACCESS, "reading a write-only file");
    OK(MPI_File_close(&fh));
    rc = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_EXCL, MPI_INFO_NULL, &fh);
    CHECK(error_class(rc) == MPI_ERR_FILE_EXISTS, "MPI_MODE_EXCL on an existing file");

    OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    rc = MPI_File_write_at(fh, 0, &x, 1, MPI_INT, &st);
    CHECK(error_class(rc) == MPI_ERR_READ_ONLY, "writing a read-only file");
    x = 0;
    OK(MPI_File_read_at(fh, 0, &x, 1, MPI_INT, &st));
    CHECK(x == 7, "read in RDONLY");

    /* A user handler on the file sees its errors with the file. */
    OK(MPI_File_create_errhandler(on_error, &eh));
    OK(MPI_File_set_errhandler(fh, eh));
    rc = MPI_File_write_at(fh, 0, &x, 1, MPI_INT, &st);
    CHECK(rc != MPI_SUCCESS && handler_calls == 1 && handler_file == fh, "user file error handler");
    OK(MPI_File_call_errhandler(fh, MPI_ERR_OTHER));
    CHECK(handler_calls == 2, "MPI_File_call_errhandler");
    MPI_Errhandler got;
    OK(MPI_File_get_errhandler(fh, &got));
    OK(MPI_Errhandler_free(&got));
    OK(MPI_Errhandler_free(&eh));
    OK(MPI_File_close(&fh));

    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        OK(MPI_File_delete(name, MPI_INFO_NULL));
        rc = MPI_File_delete(name, MPI_INFO_NULL);
        CHECK(error_class(rc) == MPI_ERR_NO_SUCH_FILE, "deleting a missing file");
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        strcpy(dir, "/tmp/wanmpi-io-XXXXXX");
        CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    }
    OK(MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD));

    views();
    pointers();
    collective_and_nonblocking();
    external32();
    errors();

    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        char name[512];
        path(name, "view");
        unlink(name);
        CHECK(rmdir(dir) == 0, "the test directory is empty at the end");
    }
    pass("io");
    MPI_Finalize();
    return 0;
}
