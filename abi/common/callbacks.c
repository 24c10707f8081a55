/* User functions the core calls back: reductions, error handlers,
 * attribute copy and delete, generalized requests, data representations.
 * The core calls them with its own handles and codes; the program's
 * function wants Open MPI's. Where MPI lets a callback carry extra state
 * (attributes, generalized requests, data representations) the translator
 * passes a wrapper of its own as that state. Reductions carry none, so each
 * gets one of a fixed set of trampolines (a slot, released by MPI_Op_free);
 * error handlers find theirs through the object they are called for. */
#include <pthread.h>
#include <stdio.h>

#include "wabi.h"

/* ---- slots: which program function a trampoline calls ---- */

#define WO_SLOTS 128
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;

/* Takes a free slot of table (entries NULL when free) for fn; -1 if none. */
static int take_slot(void **table, void *fn)
{
    int got = -1;
    pthread_mutex_lock(&slot_lock);
    for (int i = 0; i < WO_SLOTS; i++) {
        if (!table[i]) {
            table[i] = fn;
            got = i;
            break;
        }
    }
    pthread_mutex_unlock(&slot_lock);
    if (got < 0)
        fprintf(stderr, "wanmpi (%s): more than %d user reductions at once\n", WO_ABI_NAME, WO_SLOTS);
    return got;
}

/* M(b, d) for the 128 slots b * 8 + d. */
#define WO_REPEAT8(M, b) M(b, 0) M(b, 1) M(b, 2) M(b, 3) M(b, 4) M(b, 5) M(b, 6) M(b, 7)
#define WO_REPEAT128(M)                                                                                   \
    WO_REPEAT8(M, 0) WO_REPEAT8(M, 1) WO_REPEAT8(M, 2) WO_REPEAT8(M, 3) WO_REPEAT8(M, 4) WO_REPEAT8(M, 5) \
    WO_REPEAT8(M, 6) WO_REPEAT8(M, 7) WO_REPEAT8(M, 8) WO_REPEAT8(M, 9) WO_REPEAT8(M, 10)                 \
    WO_REPEAT8(M, 11) WO_REPEAT8(M, 12) WO_REPEAT8(M, 13) WO_REPEAT8(M, 14) WO_REPEAT8(M, 15)

/* ---- reductions ---- */

static void *op_fns[WO_SLOTS];
static int op_large[WO_SLOTS];
static int op_core[WO_SLOTS];

static void op_call(int slot, void *in, void *inout, void *len, int *cdt)
{
    MPI_Datatype dt = wo_type_out(*cdt);
    if (op_large[slot])
        ((MPI_User_function_c *)op_fns[slot])(in, inout, (MPI_Count *)len, &dt);
    else
        ((MPI_User_function *)op_fns[slot])(in, inout, (int *)len, &dt);
}

#define WO_OP_TRAMP(b, d)                                                \
    static void op_tramp_##b##_##d(void *in, void *inout, void *len, int *cdt) \
    {                                                                    \
        op_call((b) * 8 + (d), in, inout, len, cdt);                     \
    }
WO_REPEAT128(WO_OP_TRAMP)
#define WO_OP_ENTRY(b, d) op_tramp_##b##_##d,
static void (*const op_tramps[WO_SLOTS])(void *, void *, void *, int *) = {WO_REPEAT128(WO_OP_ENTRY)};

static int op_create(void *fn, int large, int commute, MPI_Op *op)
{
    if (!fn || !op)
        return MPI_ERR_ARG;
    int slot = take_slot(op_fns, fn);
    if (slot < 0)
        return MPI_ERR_INTERN;
    op_large[slot] = large;
    int c = 0;
    int rc = large ? wcore_PMPI_Op_create_c((void *)op_tramps[slot], commute, &c)
                   : wcore_PMPI_Op_create((void *)op_tramps[slot], commute, &c);
    if (rc != CORE_MPI_SUCCESS) {
        op_fns[slot] = NULL;
        return wo_err_out(rc);
    }
    op_core[slot] = c;
    *op = wo_op_out(c);
    return MPI_SUCCESS;
}

int PMPI_Op_create(MPI_User_function *function, int commute, MPI_Op *op)
{
    return op_create((void *)function, 0, commute, op);
}
WO_WEAK(Op_create)

int PMPI_Op_create_c(MPI_User_function_c *user_fn, int commute, MPI_Op *op)
{
    return op_create((void *)user_fn, 1, commute, op);
}
WO_WEAK(Op_create_c)

/* Frees the slot of a user operation the program freed. */
void wo_op_freed(int core_op)
{
    pthread_mutex_lock(&slot_lock);
    for (int i = 0; i < WO_SLOTS; i++) {
        if (op_fns[i] && op_core[i] == core_op) {
            op_fns[i] = NULL;
            break;
        }
    }
    pthread_mutex_unlock(&slot_lock);
}

int PMPI_Op_free(MPI_Op *op)
{
    if (!op)
        return MPI_ERR_ARG;
    int c = wo_op_in(*op);
    int rc = wcore_PMPI_Op_free(&c);
    if (rc == CORE_MPI_SUCCESS)
        wo_op_freed(wo_op_in(*op));
    *op = wo_op_out(c);
    return wo_err_out(rc);
}
WO_WEAK(Op_free)

/* ---- error handlers: fn(handle *, int *code, ...) ----
 *
 * One trampoline per kind of object: the core calls it with the object, and
 * the object's current error handler (asked of the core: the handler the
 * core is running) says which program function to call. Error handlers are
 * created by the thousand in some programs (MPICH's errhan tests) and a
 * freed one may stay attached, so a table of every handler ever created,
 * searched only when an error is reported, fits better than slots. */

enum { EH_COMM, EH_WIN, EH_FILE, EH_SESSION };
struct eh_entry {
    int core;
    void *fn;
};
static struct eh_entry *eh_table;
static size_t eh_len, eh_cap;

static void *eh_find(int core)
{
    void *fn = NULL;
    pthread_mutex_lock(&slot_lock);
    for (size_t i = eh_len; i-- > 0;) {
        if (eh_table[i].core == core) {
            fn = eh_table[i].fn;
            break;
        }
    }
    pthread_mutex_unlock(&slot_lock);
    return fn;
}

static int eh_remember(int core, void *fn)
{
    pthread_mutex_lock(&slot_lock);
    if (eh_len == eh_cap) {
        size_t cap = eh_cap ? 2 * eh_cap : 64;
        struct eh_entry *t = realloc(eh_table, cap * sizeof *t);
        if (!t) {
            pthread_mutex_unlock(&slot_lock);
            return 0;
        }
        eh_table = t;
        eh_cap = cap;
    }
    eh_table[eh_len++] = (struct eh_entry){core, fn};
    pthread_mutex_unlock(&slot_lock);
    return 1;
}

/* The program function of the handler now set on an object, and the
 * reference the core's get took released. */
static void *eh_current(int kind, void *handle)
{
    int eh = 0, rc;
    switch (kind) {
    case EH_COMM: rc = wcore_PMPI_Comm_get_errhandler(*(int *)handle, &eh); break;
    case EH_WIN: rc = wcore_PMPI_Win_get_errhandler(*(int *)handle, &eh); break;
    case EH_FILE: rc = wcore_PMPI_File_get_errhandler(*(void **)handle, &eh); break;
    default: rc = wcore_PMPI_Session_get_errhandler(*(int *)handle, &eh); break;
    }
    if (rc != CORE_MPI_SUCCESS)
        return NULL;
    void *fn = eh_find(eh);
    wcore_PMPI_Errhandler_free(&eh);
    return fn;
}

static void eh_call(int kind, void *handle, int *code)
{
    void *fn = eh_current(kind, handle);
    int ocode = wo_err_out(*code);
    if (!fn) {
        fprintf(stderr, "wanmpi (%s): an error handler of the program is gone (error %d)\n", WO_ABI_NAME, ocode);
        return;
    }
    switch (kind) {
    case EH_COMM: {
        MPI_Comm c = wo_comm_out(*(int *)handle);
        ((MPI_Comm_errhandler_function *)fn)(&c, &ocode);
        break;
    }
    case EH_WIN: {
        MPI_Win w = wo_win_out(*(int *)handle);
        ((MPI_Win_errhandler_function *)fn)(&w, &ocode);
        break;
    }
    case EH_FILE: {
        MPI_File f = wo_file_out(*(void **)handle);
        ((MPI_File_errhandler_function *)fn)(&f, &ocode);
        break;
    }
    default: {
        MPI_Session x = wo_sess_out(*(int *)handle);
        ((MPI_Session_errhandler_function *)fn)(&x, &ocode);
        break;
    }
    }
}

static void eh_comm(void *h, int *code, ...)
{
    eh_call(EH_COMM, h, code);
}

static void eh_win(void *h, int *code, ...)
{
    eh_call(EH_WIN, h, code);
}

static void eh_file(void *h, int *code, ...)
{
    eh_call(EH_FILE, h, code);
}

static void eh_session(void *h, int *code, ...)
{
    eh_call(EH_SESSION, h, code);
}

static int eh_create(int kind, void *fn, MPI_Errhandler *errhandler)
{
    if (!fn || !errhandler)
        return MPI_ERR_ARG;
    int c = 0, rc;
    switch (kind) {
    case EH_COMM: rc = wcore_PMPI_Comm_create_errhandler((void *)eh_comm, &c); break;
    case EH_WIN: rc = wcore_PMPI_Win_create_errhandler((void *)eh_win, &c); break;
    case EH_FILE: rc = wcore_PMPI_File_create_errhandler((void *)eh_file, &c); break;
    default: rc = wcore_PMPI_Session_create_errhandler((void *)eh_session, &c); break;
    }
    if (rc != CORE_MPI_SUCCESS)
        return wo_err_out(rc);
    if (!eh_remember(c, fn)) {
        wcore_PMPI_Errhandler_free(&c);
        return MPI_ERR_NO_MEM;
    }
    *errhandler = wo_eh_out(c);
    return MPI_SUCCESS;
}

int PMPI_Comm_create_errhandler(MPI_Comm_errhandler_function *function, MPI_Errhandler *errhandler)
{
    return eh_create(EH_COMM, (void *)function, errhandler);
}
WO_WEAK(Comm_create_errhandler)

int PMPI_Win_create_errhandler(MPI_Win_errhandler_function *function, MPI_Errhandler *errhandler)
{
    return eh_create(EH_WIN, (void *)function, errhandler);
}
WO_WEAK(Win_create_errhandler)

int PMPI_File_create_errhandler(MPI_File_errhandler_function *function, MPI_Errhandler *errhandler)
{
    return eh_create(EH_FILE, (void *)function, errhandler);
}
WO_WEAK(File_create_errhandler)

int PMPI_Session_create_errhandler(MPI_Session_errhandler_function *function, MPI_Errhandler *errhandler)
{
    return eh_create(EH_SESSION, (void *)function, errhandler);
}
WO_WEAK(Session_create_errhandler)

/* ---- attributes: the wrapper rides as the keyval's extra state ---- */

enum { KV_COMM, KV_TYPE, KV_WIN };
struct kv_wrap {
    int kind;
    void *copy;
    void *del;
    void *extra;
};

static int kv_copy(int old, int keyval, void *extra, void *in, void *out, int *flag)
{
    struct kv_wrap *w = extra;
    int k = wo_keyval_out(keyval), rc;
    switch (w->kind) {
    case KV_COMM:
        rc = ((MPI_Comm_copy_attr_function *)w->copy)(wo_comm_out(old), k, w->extra, in, out, flag);
        break;
    case KV_TYPE:
        rc = ((MPI_Type_copy_attr_function *)w->copy)(wo_type_out(old), k, w->extra, in, out, flag);
        break;
    default:
        rc = ((MPI_Win_copy_attr_function *)w->copy)(wo_win_out(old), k, w->extra, in, out, flag);
        break;
    }
    return wo_err_in(rc);
}

static int kv_delete(int obj, int keyval, void *value, void *extra)
{
    struct kv_wrap *w = extra;
    int k = wo_keyval_out(keyval), rc;
    switch (w->kind) {
    case KV_COMM:
        rc = ((MPI_Comm_delete_attr_function *)w->del)(wo_comm_out(obj), k, value, w->extra);
        break;
    case KV_TYPE:
        rc = ((MPI_Type_delete_attr_function *)w->del)(wo_type_out(obj), k, value, w->extra);
        break;
    default:
        rc = ((MPI_Win_delete_attr_function *)w->del)(wo_win_out(obj), k, value, w->extra);
        break;
    }
    return wo_err_in(rc);
}

/* The core copies nothing when the copy function is null and deletes
 * nothing when the delete function is; Open MPI's predefined ones are
 * functions (OMPI_C_MPI_*, abi/ompi/predefined_fns.c), called like the
 * program's own. */
static int kv_create(int kind, void *copy, void *del, int *keyval, void *extra)
{
    if (!keyval)
        return MPI_ERR_ARG;
    struct kv_wrap *w = malloc(sizeof *w);
    if (!w)
        return MPI_ERR_NO_MEM;
    *w = (struct kv_wrap){kind, copy, del, extra};
    /* The standard ABI's DUP_FN is a sentinel: the core's own duplicate
     * takes its place (it needs no translation). */
    void *c = WO_COPY_IS_DUP(copy) ? (void *)wcore_MPIR_Dup_fn : copy ? (void *)kv_copy : NULL;
    void *d = del ? (void *)kv_delete : NULL;
    int rc;
    switch (kind) {
    case KV_COMM: rc = wcore_PMPI_Comm_create_keyval(c, d, keyval, w); break;
    case KV_TYPE: rc = wcore_PMPI_Type_create_keyval(c, d, keyval, w); break;
    default: rc = wcore_PMPI_Win_create_keyval(c, d, keyval, w); break;
    }
    /* The wrapper lives as long as the program: attributes copied from
     * the keyval may outlive MPI_*_free_keyval. */
    if (rc != CORE_MPI_SUCCESS)
        free(w);
    return wo_err_out(rc);
}

int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                            MPI_Comm_delete_attr_function *comm_delete_attr_fn, int *comm_keyval,
                            void *extra_state)
{
    return kv_create(KV_COMM, (void *)comm_copy_attr_fn, (void *)comm_delete_attr_fn, comm_keyval, extra_state);
}
WO_WEAK(Comm_create_keyval)

int PMPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval, void *extra_state)
{
    return kv_create(KV_COMM, (void *)copy_fn, (void *)delete_fn, keyval, extra_state);
}
WO_WEAK(Keyval_create)

int PMPI_Type_create_keyval(MPI_Type_copy_attr_function *type_copy_attr_fn,
                            MPI_Type_delete_attr_function *type_delete_attr_fn, int *type_keyval,
                            void *extra_state)
{
    return kv_create(KV_TYPE, (void *)type_copy_attr_fn, (void *)type_delete_attr_fn, type_keyval, extra_state);
}
WO_WEAK(Type_create_keyval)

int PMPI_Win_create_keyval(MPI_Win_copy_attr_function *win_copy_attr_fn,
                           MPI_Win_delete_attr_function *win_delete_attr_fn, int *win_keyval, void *extra_state)
{
    return kv_create(KV_WIN, (void *)win_copy_attr_fn, (void *)win_delete_attr_fn, win_keyval, extra_state);
}
WO_WEAK(Win_create_keyval)

/* ---- generalized requests ---- */

struct greq_wrap {
    MPI_Grequest_query_function *query;
    MPI_Grequest_free_function *free_fn;
    MPI_Grequest_cancel_function *cancel;
    void *extra;
};

static int greq_query(void *extra, wc_status *status)
{
    struct greq_wrap *w = extra;
    MPI_Status o;
    wc_status c;
    wo_status_clear(&c);
    wo_status_out(&o, &c);
    int rc = w->query(w->extra, &o);
    wo_status_in(status, &o);
    return wo_err_in(rc);
}

static int greq_free(void *extra)
{
    struct greq_wrap *w = extra;
    int rc = w->free_fn(w->extra);
    free(w);
    return wo_err_in(rc);
}

static int greq_cancel(void *extra, int complete)
{
    struct greq_wrap *w = extra;
    return wo_err_in(w->cancel(w->extra, complete));
}

int PMPI_Grequest_start(MPI_Grequest_query_function *query_fn, MPI_Grequest_free_function *free_fn,
                        MPI_Grequest_cancel_function *cancel_fn, void *extra_state, MPI_Request *request)
{
    if (!query_fn || !free_fn || !cancel_fn || !request)
        return MPI_ERR_ARG;
    struct greq_wrap *w = malloc(sizeof *w);
    if (!w)
        return MPI_ERR_NO_MEM;
    *w = (struct greq_wrap){query_fn, free_fn, cancel_fn, extra_state};
    int c = 0;
    int rc = wcore_PMPI_Grequest_start((void *)greq_query, (void *)greq_free, (void *)greq_cancel, w, &c);
    if (rc != CORE_MPI_SUCCESS) {
        free(w);
        return wo_err_out(rc);
    }
    *request = wo_req_out(c);
    return MPI_SUCCESS;
}
WO_WEAK(Grequest_start)

/* ---- data representations ---- */

struct datarep_wrap {
    void *read, *write;
    MPI_Datarep_extent_function *extent;
    void *extra;
    int large;
};

static int dr_read(void *userbuf, int dt, long count, void *filebuf, long position, void *extra)
{
    struct datarep_wrap *w = extra;
    MPI_Datatype t = wo_type_out(dt);
    int rc = w->large ? ((MPI_Datarep_conversion_function_c *)w->read)(userbuf, t, count, filebuf, position, w->extra)
                      : ((MPI_Datarep_conversion_function *)w->read)(userbuf, t, (int)count, filebuf, position,
                                                                       w->extra);
    return wo_err_in(rc);
}

static int dr_write(void *userbuf, int dt, long count, void *filebuf, long position, void *extra)
{
    struct datarep_wrap *w = extra;
    MPI_Datatype t = wo_type_out(dt);
    int rc = w->large
                 ? ((MPI_Datarep_conversion_function_c *)w->write)(userbuf, t, count, filebuf, position, w->extra)
                 : ((MPI_Datarep_conversion_function *)w->write)(userbuf, t, (int)count, filebuf, position,
                                                                  w->extra);
    return wo_err_in(rc);
}

/* The core's int-count conversion functions take an int count. */
static int dr_read_int(void *u, int dt, int count, void *f, long pos, void *extra)
{
    return dr_read(u, dt, count, f, pos, extra);
}

static int dr_write_int(void *u, int dt, int count, void *f, long pos, void *extra)
{
    return dr_write(u, dt, count, f, pos, extra);
}

static int dr_extent(int dt, long *extent, void *extra)
{
    struct datarep_wrap *w = extra;
    MPI_Aint e = 0;
    int rc = w->extent(wo_type_out(dt), &e, w->extra);
    *extent = e;
    return wo_err_in(rc);
}

static int datarep(const char *name, void *read, void *write, MPI_Datarep_extent_function *extent, void *extra,
                   int large)
{
    if (!extent)
        return MPI_ERR_ARG;
    struct datarep_wrap *w = malloc(sizeof *w);
    if (!w)
        return MPI_ERR_NO_MEM;
    *w = (struct datarep_wrap){read, write, extent, extra, large};
    void *r = read ? (large ? (void *)dr_read : (void *)dr_read_int) : NULL;
    void *wr = write ? (large ? (void *)dr_write : (void *)dr_write_int) : NULL;
    int rc = large ? wcore_PMPI_Register_datarep_c(name, r, wr, (void *)dr_extent, w)
                   : wcore_PMPI_Register_datarep(name, r, wr, (void *)dr_extent, w);
    if (rc != CORE_MPI_SUCCESS)
        free(w);
    return wo_err_out(rc);
}

int PMPI_Register_datarep(const char *datarep_name, MPI_Datarep_conversion_function *read_conversion_fn,
                          MPI_Datarep_conversion_function *write_conversion_fn,
                          MPI_Datarep_extent_function *dtype_file_extent_fn, void *extra_state)
{
    return datarep(datarep_name, (void *)read_conversion_fn, (void *)write_conversion_fn, dtype_file_extent_fn,
                   extra_state, 0);
}
WO_WEAK(Register_datarep)

int PMPI_Register_datarep_c(const char *datarep_name, MPI_Datarep_conversion_function_c *read_conversion_fn,
                            MPI_Datarep_conversion_function_c *write_conversion_fn,
                            MPI_Datarep_extent_function *dtype_file_extent_fn, void *extra_state)
{
    return datarep(datarep_name, (void *)read_conversion_fn, (void *)write_conversion_fn, dtype_file_extent_fn,
                   extra_state, 1);
}
WO_WEAK(Register_datarep_c)
