/* Fortran glue for attributes and keyvals. A Fortran attribute value is an
 * INTEGER(KIND=MPI_ADDRESS_KIND) (a default INTEGER in MPI-1's MPI_ATTR_*
 * calls) stored in C's void * as the address of a box holding it
 * (boxes.c), so that C reads a pointer to the integer, as MPI-4.0 19.3.7
 * says; Fortran reads its own boxes' values, and a pointer C set as the
 * pointer's value. The predefined attributes that C hands out as pointers
 * (MPI_TAG_UB, MPI_WIN_SIZE, ...) are dereferenced on the way out.
 *
 * A keyval created from Fortran gets C callbacks that call the Fortran
 * procedures with Fortran's conventions (everything by reference, a LOGICAL
 * flag, an ierror argument); the C extra state points at a record holding
 * the procedures and the Fortran extra state. The record lives as long as
 * the program (a keyval outlives its MPI_*_FREE_KEYVAL while attributes
 * still use it). */
#include <stdlib.h>
#include "glue.h"

typedef void (*wf_copy_fn)(MPI_Fint *, MPI_Fint *, void *, void *, void *, MPI_Fint *, MPI_Fint *);
typedef void (*wf_delete_fn)(MPI_Fint *, MPI_Fint *, void *, void *, MPI_Fint *);

struct wf_keyval {
    wf_copy_fn copy;
    wf_delete_fn del;
    MPI_Aint extra;
    int legacy; /* MPI_KEYVAL_CREATE: values and extra state are INTEGERs */
};

/* The Fortran value of a user attribute: a box's value, else the pointer. */
static MPI_Aint wf_user_value(void *v)
{
    MPI_Aint value;
    return wf_box_get(v, &value) ? value : (MPI_Aint)(intptr_t)v;
}

static int wf_copy(int old, int keyval, void *extra, void *in, void *out, int *flag)
{
    struct wf_keyval *k = extra;
    MPI_Fint fold = old, fkey = keyval, fflag = 0, ierr = MPI_SUCCESS;
    MPI_Aint vin = wf_user_value(in), vout = 0;
    if (k->legacy) {
        MPI_Fint ein = (MPI_Fint)k->extra, in4 = (MPI_Fint)vin, out4 = 0;
        k->copy(&fold, &fkey, &ein, &in4, &out4, &fflag, &ierr);
        vout = out4;
    } else {
        k->copy(&fold, &fkey, &k->extra, &vin, &vout, &fflag, &ierr);
    }
    *flag = fflag != 0;
    if (fflag && ierr == MPI_SUCCESS) {
        void *box = wf_box_new(vout);
        if (box == NULL)
            return WF_OOM;
        *(void **)out = box;
    }
    return ierr;
}

static int wf_delete(int obj, int keyval, void *value, void *extra)
{
    struct wf_keyval *k = extra;
    MPI_Fint fobj = obj, fkey = keyval, ierr = MPI_SUCCESS;
    MPI_Aint v = wf_user_value(value);
    if (k->legacy) {
        MPI_Fint e4 = (MPI_Fint)k->extra, v4 = (MPI_Fint)v;
        k->del(&fobj, &fkey, &v4, &e4, &ierr);
    } else {
        k->del(&fobj, &fkey, &v, &k->extra, &ierr);
    }
    if (ierr == MPI_SUCCESS)
        wf_box_free(value);
    return ierr;
}

static struct wf_keyval *wf_keyval_new(void *copy, void *del, MPI_Aint extra, int legacy)
{
    struct wf_keyval *k = malloc(sizeof *k);
    if (k != NULL) {
        k->copy = (wf_copy_fn)copy;
        k->del = (wf_delete_fn)del;
        k->extra = extra;
        k->legacy = legacy;
    }
    return k;
}

void pmpi_comm_create_keyval_(void *copy, void *del, MPI_Fint *keyval, MPI_Aint *extra, MPI_Fint *ierror)
{
    struct wf_keyval *k = wf_keyval_new(copy, del, *extra, 0);
    wf_set(ierror, k == NULL ? WF_OOM
                             : MPI_Comm_create_keyval((MPI_Comm_copy_attr_function *)wf_copy,
                                                      (MPI_Comm_delete_attr_function *)wf_delete, keyval, k));
}
WF_NAMES(mpi_comm_create_keyval, MPI_COMM_CREATE_KEYVAL)

void pmpi_type_create_keyval_(void *copy, void *del, MPI_Fint *keyval, MPI_Aint *extra, MPI_Fint *ierror)
{
    struct wf_keyval *k = wf_keyval_new(copy, del, *extra, 0);
    wf_set(ierror, k == NULL ? WF_OOM
                             : MPI_Type_create_keyval((MPI_Type_copy_attr_function *)wf_copy,
                                                      (MPI_Type_delete_attr_function *)wf_delete, keyval, k));
}
WF_NAMES(mpi_type_create_keyval, MPI_TYPE_CREATE_KEYVAL)

void pmpi_win_create_keyval_(void *copy, void *del, MPI_Fint *keyval, MPI_Aint *extra, MPI_Fint *ierror)
{
    struct wf_keyval *k = wf_keyval_new(copy, del, *extra, 0);
    wf_set(ierror, k == NULL ? WF_OOM
                             : MPI_Win_create_keyval((MPI_Win_copy_attr_function *)wf_copy,
                                                     (MPI_Win_delete_attr_function *)wf_delete, keyval, k));
}
WF_NAMES(mpi_win_create_keyval, MPI_WIN_CREATE_KEYVAL)

void pmpi_keyval_create_(void *copy, void *del, MPI_Fint *keyval, MPI_Fint *extra, MPI_Fint *ierror)
{
    struct wf_keyval *k = wf_keyval_new(copy, del, *extra, 1);
    wf_set(ierror, k == NULL ? WF_OOM
                             : MPI_Comm_create_keyval((MPI_Comm_copy_attr_function *)wf_copy,
                                                      (MPI_Comm_delete_attr_function *)wf_delete, keyval, k));
}
WF_NAMES(mpi_keyval_create, MPI_KEYVAL_CREATE)

/* The Fortran value of an attribute C returned as v. */
static MPI_Aint wf_comm_value(int keyval, void *v)
{
    switch (keyval) {
    case MPI_TAG_UB:
    case MPI_HOST:
    case MPI_IO:
    case MPI_WTIME_IS_GLOBAL:
    case MPI_UNIVERSE_SIZE:
    case MPI_LASTUSEDCODE:
    case MPI_APPNUM:
        return *(int *)v;
    default:
        return wf_user_value(v);
    }
}

static MPI_Aint wf_win_value(int keyval, void *v)
{
    switch (keyval) {
    case MPI_WIN_DISP_UNIT:
    case MPI_WIN_CREATE_FLAVOR:
    case MPI_WIN_MODEL:
        return *(int *)v;
    case MPI_WIN_SIZE:
        return *(MPI_Aint *)v;
    default:
        return wf_user_value(v); /* MPI_WIN_BASE (C's) and user values */
    }
}

void pmpi_comm_get_attr_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Aint *value, MPI_Fint *flag, MPI_Fint *ierror)
{
    void *v = NULL;
    int f = 0;
    int rc = MPI_Comm_get_attr(*comm, *keyval, &v, &f);
    if (rc == MPI_SUCCESS) {
        *flag = f != 0;
        if (f)
            *value = wf_comm_value(*keyval, v);
    }
    wf_set(ierror, rc);
}
WF_NAMES(mpi_comm_get_attr, MPI_COMM_GET_ATTR)

void pmpi_attr_get_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Fint *value, MPI_Fint *flag, MPI_Fint *ierror)
{
    MPI_Aint v = 0;
    pmpi_comm_get_attr_(comm, keyval, &v, flag, ierror);
    if (*flag)
        *value = (MPI_Fint)v;
}
WF_NAMES(mpi_attr_get, MPI_ATTR_GET)

/* Sets a Fortran value through one of C's set functions. */
typedef int (*wf_setter)(int obj, int keyval, void *value);

static int wf_set_boxed(wf_setter set, int obj, int keyval, MPI_Aint value)
{
    void *box = wf_box_new(value);
    if (box == NULL)
        return WF_OOM;
    int rc = set(obj, keyval, box);
    if (rc != MPI_SUCCESS)
        wf_box_free(box);
    return rc;
}

void pmpi_attr_put_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Fint *value, MPI_Fint *ierror)
{
    wf_set(ierror, wf_set_boxed((wf_setter)MPI_Comm_set_attr, *comm, *keyval, *value));
}
WF_NAMES(mpi_attr_put, MPI_ATTR_PUT)

void pmpi_comm_set_attr_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Aint *value, MPI_Fint *ierror)
{
    wf_set(ierror, wf_set_boxed((wf_setter)MPI_Comm_set_attr, *comm, *keyval, *value));
}
WF_NAMES(mpi_comm_set_attr, MPI_COMM_SET_ATTR)

void pmpi_type_set_attr_(MPI_Fint *type, MPI_Fint *keyval, MPI_Aint *value, MPI_Fint *ierror)
{
    wf_set(ierror, wf_set_boxed((wf_setter)MPI_Type_set_attr, *type, *keyval, *value));
}
WF_NAMES(mpi_type_set_attr, MPI_TYPE_SET_ATTR)

void pmpi_win_set_attr_(MPI_Fint *win, MPI_Fint *keyval, MPI_Aint *value, MPI_Fint *ierror)
{
    wf_set(ierror, wf_set_boxed((wf_setter)MPI_Win_set_attr, *win, *keyval, *value));
}
WF_NAMES(mpi_win_set_attr, MPI_WIN_SET_ATTR)

void pmpi_type_get_attr_(MPI_Fint *type, MPI_Fint *keyval, MPI_Aint *value, MPI_Fint *flag, MPI_Fint *ierror)
{
    void *v = NULL;
    int f = 0;
    int rc = MPI_Type_get_attr(*type, *keyval, &v, &f);
    if (rc == MPI_SUCCESS) {
        *flag = f != 0;
        if (f)
            *value = wf_user_value(v);
    }
    wf_set(ierror, rc);
}
WF_NAMES(mpi_type_get_attr, MPI_TYPE_GET_ATTR)

void pmpi_win_get_attr_(MPI_Fint *win, MPI_Fint *keyval, MPI_Aint *value, MPI_Fint *flag, MPI_Fint *ierror)
{
    void *v = NULL;
    int f = 0;
    int rc = MPI_Win_get_attr(*win, *keyval, &v, &f);
    if (rc == MPI_SUCCESS) {
        *flag = f != 0;
        if (f)
            *value = wf_win_value(*keyval, v);
    }
    wf_set(ierror, rc);
}
WF_NAMES(mpi_win_get_attr, MPI_WIN_GET_ATTR)
