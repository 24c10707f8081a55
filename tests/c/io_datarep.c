/* User-defined data representations (MPI-4.0 §14.5.3): "be64" stores an
 * int as 8 big-endian bytes; its conversion functions widen and swap (and
 * back), for MPI_INT and for a strided memory type of ints. A view in it
 * writes, the raw bytes are checked through a "native" view, and the data
 * read back through the view, also with a subarray filetype (portable:
 * scaled to the file extents). Also: the _c registration, conversions in
 * more than one piece, MPI_CONVERSION_FN_NULL, a conversion that fails
 * (MPI_ERR_CONVERSION), registering a name twice (MPI_ERR_DUP_DATAREP) and
 * an unregistered name (MPI_ERR_UNSUPPORTED_DATAREP). MPICH 4.0.2 cannot
 * run it: ROMIO refuses conversion functions in MPI_Register_datarep and
 * views in any registered representation. */
/* mkdtemp under -std=c99 */
#define _XOPEN_SOURCE 700
#include "check.h"
#include <stdint.h>
#include <unistd.h>
#include <sys/stat.h>

static int rank, size;
static char dir[256];
/* Every other int: one int, extent 2 ints. */
static MPI_Datatype strided;

struct calls {
    int extent, read, write;
    MPI_Offset last_position;
};

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

static int be64_extent(MPI_Datatype dt, MPI_Aint *extent, void *extra)
{
    ((struct calls *)extra)->extent++;
    if (dt != MPI_INT)
        return MPI_ERR_TYPE;
    *extent = 8;
    return MPI_SUCCESS;
}

/* Where item `i` of the (tiled) memory type lies. */
static int *item(void *userbuf, MPI_Datatype dt, MPI_Offset i)
{
    CHECK(dt == MPI_INT || dt == strided, "the conversion gets the program's datatype handle");
    return (int *)userbuf + (dt == MPI_INT ? i : 2 * i);
}

static void put_be64(unsigned char *p, int64_t v)
{
    for (int b = 0; b < 8; b++)
        p[b] = (unsigned char)((uint64_t)v >> (56 - 8 * b));
}

static int64_t get_be64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int b = 0; b < 8; b++)
        v = v << 8 | p[b];
    return (int64_t)v;
}

static int be64_write(void *userbuf, MPI_Datatype dt, int count, void *filebuf, MPI_Offset position, void *extra)
{
    struct calls *c = extra;
    c->write++;
    c->last_position = position;
    for (int i = 0; i < count; i++)
        put_be64((unsigned char *)filebuf + 8 * i, *item(userbuf, dt, position + i));
    return MPI_SUCCESS;
}

static int be64_read(void *userbuf, MPI_Datatype dt, int count, void *filebuf, MPI_Offset position, void *extra)
{
    struct calls *c = extra;
    c->read++;
    c->last_position = position;
    for (int i = 0; i < count; i++) {
        int64_t v = get_be64((unsigned char *)filebuf + 8 * i);
        if (v < INT32_MIN || v > INT32_MAX)
            return MPI_ERR_ARG;
        *item(userbuf, dt, position + i) = (int)v;
    }
    return MPI_SUCCESS;
}

static int be64_write_c(void *userbuf, MPI_Datatype dt, MPI_Count count, void *filebuf, MPI_Offset position, void *extra)
{
    return be64_write(userbuf, dt, (int)count, filebuf, position, extra);
}

static int be64_read_c(void *userbuf, MPI_Datatype dt, MPI_Count count, void *filebuf, MPI_Offset position, void *extra)
{
    return be64_read(userbuf, dt, (int)count, filebuf, position, extra);
}

static int value(int r, int i)
{
    return -(100 * r + i) - 1;
}

static struct calls be64_calls, be64c_calls;

/* Rank r's ints at file ints r, r + size, r + 2 size: 8 bytes each. */
static void be64_view(MPI_File fh, const char *rep)
{
    MPI_Datatype tile;
    OK(MPI_Type_create_resized(MPI_INT, 0, 8 * size, &tile));
    OK(MPI_Type_commit(&tile));
    OK(MPI_File_set_view(fh, 8 * rank, MPI_INT, tile, rep, MPI_INFO_NULL));
    OK(MPI_Type_free(&tile));
}

static void write_and_read(const char *rep, struct calls *calls)
{
    char name[512];
    path(name, rep);
    MPI_File fh;
    MPI_Status st;
    OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
    be64_view(fh, rep);

    MPI_Offset disp;
    MPI_Datatype et, ft;
    char got_rep[MPI_MAX_DATAREP_STRING];
    OK(MPI_File_get_view(fh, &disp, &et, &ft, got_rep));
    CHECK(strcmp(got_rep, rep) == 0 && et == MPI_INT && disp == 8 * rank, "MPI_File_get_view names the representation");
    OK(MPI_Type_free(&ft));
    MPI_Aint ext;
    OK(MPI_File_get_type_extent(fh, MPI_INT, &ext));
    CHECK(ext == 8, "MPI_File_get_type_extent gives the file extent");

    int mine[3];
    for (int i = 0; i < 3; i++)
        mine[i] = value(rank, i);
    int before = calls->write;
    OK(MPI_File_write_all(fh, mine, 3, MPI_INT, &st));
    CHECK(count_of(&st, MPI_INT) == 3, "write_all count");
    CHECK(calls->write > before, "the write conversion ran");
    MPI_Offset pos, byte;
    OK(MPI_File_get_position(fh, &pos));
    CHECK(pos == 3, "the individual pointer counts etypes");
    OK(MPI_File_get_byte_offset(fh, 2, &byte));
    CHECK(byte == 8 * rank + 16 * size, "byte offsets are in file bytes");
    MPI_Offset fsize;
    OK(MPI_File_get_size(fh, &fsize));
    CHECK(fsize == 24 * size, "the file holds 8 bytes per int");

    /* The raw bytes, read as they are. */
    OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    unsigned char *raw = malloc(24 * size);
    OK(MPI_File_read_at(fh, 0, raw, 24 * size, MPI_BYTE, &st));
    CHECK(count_of(&st, MPI_BYTE) == 24 * size, "raw read");
    for (int k = 0; k < 3 * size; k++)
        CHECK(get_be64(raw + 8 * k) == value(k % size, k / size), "the file holds big-endian 64-bit ints");
    free(raw);

    /* Back through the view, into every other int of memory; reading one
     * more than there is stops at the end of the file. */
    be64_view(fh, rep);
    int back[8];
    for (int i = 0; i < 8; i++)
        back[i] = 7;
    before = calls->read;
    OK(MPI_File_read_at(fh, 0, back, 4, strided, &st));
    CHECK(count_of(&st, strided) == 3, "a read past the end converts what is there");
    CHECK(calls->read > before, "the read conversion ran");
    for (int i = 0; i < 4; i++) {
        CHECK(back[2 * i] == (i < 3 ? value(rank, i) : 7), "ints read back through the view");
        CHECK(back[2 * i + 1] == 7, "the strided type's gaps are untouched");
    }
    /* From an offset: the conversion's position counts items from the
     * buffer start. */
    int one[2] = {0, 0};
    OK(MPI_File_read_at(fh, 1, one, 2, MPI_INT, &st));
    CHECK(count_of(&st, MPI_INT) == 2 && one[0] == value(rank, 1) && one[1] == value(rank, 2), "read_at offset 1");
    OK(MPI_File_close(&fh));
}

/* A subarray filetype is portable: its ints move to the file extents (rank
 * r's 2 ints of every 2 size at file bytes 16 r, tiles of 16 size bytes). */
static void subarray_view(void)
{
    char name[512];
    path(name, "subarray");
    MPI_File fh;
    MPI_Status st;
    OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
    int sizes = 2 * size, subsizes = 2, starts = 2 * rank;
    MPI_Datatype sub;
    OK(MPI_Type_create_subarray(1, &sizes, &subsizes, &starts, MPI_ORDER_C, MPI_INT, &sub));
    OK(MPI_Type_commit(&sub));
    OK(MPI_File_set_view(fh, 0, MPI_INT, sub, "be64", MPI_INFO_NULL));
    MPI_Aint ext;
    OK(MPI_File_get_type_extent(fh, sub, &ext));
    CHECK(ext == 16 * size, "a subarray's extent in the file");
    int mine[4];
    for (int i = 0; i < 4; i++)
        mine[i] = value(rank, i);
    OK(MPI_File_write_all(fh, mine, 4, MPI_INT, &st));
    OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    unsigned char *raw = malloc(32 * size);
    OK(MPI_File_read_at(fh, 0, raw, 32 * size, MPI_BYTE, &st));
    CHECK(count_of(&st, MPI_BYTE) == 32 * size, "raw read of the subarray file");
    for (int k = 0; k < 4 * size; k++) {
        int tile = k / (2 * size), j = k % (2 * size);
        CHECK(get_be64(raw + 8 * k) == value(j / 2, 2 * tile + j % 2), "a subarray view places file ints");
    }
    free(raw);
    OK(MPI_File_set_view(fh, 0, MPI_INT, sub, "be64", MPI_INFO_NULL));
    int back[4] = {0, 0, 0, 0};
    OK(MPI_File_read_at_all(fh, 0, back, 4, MPI_INT, &st));
    for (int i = 0; i < 4; i++)
        CHECK(back[i] == value(rank, i), "read back through a subarray view");
    OK(MPI_Type_free(&sub));
    OK(MPI_File_close(&fh));
}

/* A write larger than one conversion piece (8 MiB of file) is converted
 * in several calls, each from its own position. */
static void many_pieces(void)
{
    if (rank != 0)
        return;
    char name[512];
    path(name, "pieces");
    MPI_File fh;
    MPI_Status st;
    OK(MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
    OK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "be64", MPI_INFO_NULL));
    int n = 1300000;
    int *a = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++)
        a[i] = i - n / 2;
    int before = be64_calls.write;
    OK(MPI_File_write_at(fh, 0, a, n, MPI_INT, &st));
    CHECK(be64_calls.write - before >= 2 && be64_calls.last_position > 0, "a long write is converted in pieces");
    for (int i = 0; i < n; i++)
        a[i] = 0;
    OK(MPI_File_read_at(fh, 0, a, n, MPI_INT, &st));
    CHECK(count_of(&st, MPI_INT) == n, "long read count");
    for (int i = 0; i < n; i++)
        CHECK(a[i] == i - n / 2, "long read");
    free(a);
    OK(MPI_File_close(&fh));
}

/* MPI_CONVERSION_FN_NULL: the bytes are copied as they are. The extent
 * function may call MPI. */
static int native_extent(MPI_Datatype dt, MPI_Aint *extent, void *extra)
{
    int s;
    (void)extra;
    int rc = MPI_Type_size(dt, &s);
    *extent = s;
    return rc;
}

static int wide_extent(MPI_Datatype dt, MPI_Aint *extent, void *extra)
{
    (void)dt;
    (void)extra;
    *extent = 8;
    return MPI_SUCCESS;
}

static int refuse(void *userbuf, MPI_Datatype dt, int count, void *filebuf, MPI_Offset position, void *extra)
{
    (void)userbuf, (void)dt, (void)count, (void)filebuf, (void)position, (void)extra;
    return MPI_ERR_OTHER;
}

static void null_and_failing(void)
{
    char name[512];
    path(name, "plain");
    MPI_File fh;
    MPI_Status st;
    OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
    OK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "plain", MPI_INFO_NULL));
    int v[2] = {rank, -rank};
    OK(MPI_File_write_at(fh, 2 * rank, v, 2, MPI_INT, &st));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    int w[2];
    OK(MPI_File_read_at(fh, 2 * rank, w, 2, MPI_INT, &st));
    CHECK(w[0] == rank && w[1] == -rank, "MPI_CONVERSION_FN_NULL stores the native bytes");

    /* Copying as is cannot widen: 4-byte ints in 8 bytes of file. */
    OK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "plain8", MPI_INFO_NULL));
    int rc = MPI_File_write_at(fh, 0, v, 2, MPI_INT, &st);
    CHECK(error_class(rc) == MPI_ERR_CONVERSION, "a null conversion with another file extent");

    /* A conversion that fails fails the access with MPI_ERR_CONVERSION. */
    OK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "refusing", MPI_INFO_NULL));
    rc = MPI_File_write_at(fh, 0, v, 2, MPI_INT, &st);
    CHECK(error_class(rc) == MPI_ERR_CONVERSION, "a write conversion returning an error");
    /* be64 has no file extent for doubles: its extent function fails. */
    OK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "be64", MPI_INFO_NULL));
    double d = 1.0;
    rc = MPI_File_write_at(fh, 0, &d, 1, MPI_DOUBLE, &st);
    CHECK(error_class(rc) == MPI_ERR_CONVERSION, "an extent function returning an error");

    rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "never-registered", MPI_INFO_NULL);
    CHECK(error_class(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "an unregistered representation");
    OK(MPI_File_close(&fh));
}

static void registration(void)
{
    OK(MPI_Register_datarep("be64", be64_read, be64_write, be64_extent, &be64_calls));
    OK(MPI_Register_datarep_c("be64c", be64_read_c, be64_write_c, be64_extent, &be64c_calls));
    OK(MPI_Register_datarep("plain", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, native_extent, NULL));
    OK(MPI_Register_datarep("plain8", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, wide_extent, NULL));
    OK(MPI_Register_datarep("refusing", MPI_CONVERSION_FN_NULL, refuse, native_extent, NULL));
    int rc = MPI_Register_datarep("be64", be64_read, be64_write, be64_extent, NULL);
    CHECK(error_class(rc) == MPI_ERR_DUP_DATAREP, "registering a name twice");
    rc = MPI_Register_datarep("external32", be64_read, be64_write, be64_extent, NULL);
    CHECK(error_class(rc) == MPI_ERR_DUP_DATAREP, "registering a predefined name");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        strcpy(dir, "/tmp/wanmpi-io-datarep-XXXXXX");
        CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    }
    OK(MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD));
    MPI_Datatype one;
    OK(MPI_Type_contiguous(1, MPI_INT, &one));
    OK(MPI_Type_create_resized(one, 0, 2 * sizeof(int), &strided));
    OK(MPI_Type_commit(&strided));
    OK(MPI_Type_free(&one));

    registration();
    write_and_read("be64", &be64_calls);
    write_and_read("be64c", &be64c_calls);
    CHECK(be64_calls.extent > 0 && be64c_calls.extent > 0, "the extent functions got their extra_state");
    subarray_view();
    many_pieces();
    null_and_failing();

    OK(MPI_Type_free(&strided));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0)
        CHECK(rmdir(dir) == 0, "the test directory is empty at the end");
    pass("io_datarep");
    MPI_Finalize();
    return 0;
}
