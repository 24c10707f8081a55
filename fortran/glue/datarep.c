/* Fortran glue for MPI_REGISTER_DATAREP: C calls the conversion and extent
 * functions with C conventions; these trampolines call the Fortran
 * procedures (everything by reference, the position an
 * INTEGER(KIND=MPI_OFFSET_KIND), an ierror argument). MPI_CONVERSION_FN_NULL
 * (a procedure of callbacks.c) becomes C's NULL. A representation cannot be
 * removed, so its record lives as long as the program. */
#include <stdlib.h>
#include "glue.h"

typedef void (*wf_conv_fn)(void *, MPI_Fint *, MPI_Fint *, void *, MPI_Offset *, MPI_Aint *, MPI_Fint *);
typedef void (*wf_extent_fn)(MPI_Fint *, MPI_Aint *, MPI_Aint *, MPI_Fint *);

struct wf_datarep {
    wf_conv_fn read;
    wf_conv_fn write;
    wf_extent_fn extent;
    MPI_Aint extra;
};

extern void mpi_conversion_fn_null_(void);

static int wf_convert(wf_conv_fn f, void *userbuf, MPI_Datatype type, int count, void *filebuf,
                      MPI_Offset position, struct wf_datarep *d)
{
    MPI_Fint ftype = type, fcount = count, ierr = MPI_SUCCESS;
    f(userbuf, &ftype, &fcount, filebuf, &position, &d->extra, &ierr);
    return ierr;
}

static int wf_read(void *userbuf, MPI_Datatype type, int count, void *filebuf, MPI_Offset position, void *extra)
{
    struct wf_datarep *d = extra;
    return wf_convert(d->read, userbuf, type, count, filebuf, position, d);
}

static int wf_write(void *userbuf, MPI_Datatype type, int count, void *filebuf, MPI_Offset position, void *extra)
{
    struct wf_datarep *d = extra;
    return wf_convert(d->write, userbuf, type, count, filebuf, position, d);
}

static int wf_extent(MPI_Datatype type, MPI_Aint *extent, void *extra)
{
    struct wf_datarep *d = extra;
    MPI_Fint ftype = type, ierr = MPI_SUCCESS;
    d->extent(&ftype, extent, &d->extra, &ierr);
    return ierr;
}

static int wf_is_null(void *f)
{
    return f == NULL || f == (void *)mpi_conversion_fn_null_;
}

void pmpi_register_datarep_(char *name, void *read, void *write, void *extent, MPI_Aint *extra, MPI_Fint *ierror,
                           size_t len_name)
{
    struct wf_datarep *d = malloc(sizeof *d);
    char *c_name = wf_str_in(name, len_name);
    int rc;
    if (d == NULL || c_name == NULL) {
        rc = WF_OOM;
        free(d);
    } else {
        d->read = (wf_conv_fn)read;
        d->write = (wf_conv_fn)write;
        d->extent = (wf_extent_fn)extent;
        d->extra = *extra;
        rc = MPI_Register_datarep(c_name, wf_is_null(read) ? MPI_CONVERSION_FN_NULL : wf_read,
                                  wf_is_null(write) ? MPI_CONVERSION_FN_NULL : wf_write, wf_extent, d);
        if (rc != MPI_SUCCESS)
            free(d);
    }
    free(c_name);
    wf_set(ierror, rc);
}
WF_NAMES(mpi_register_datarep, MPI_REGISTER_DATAREP)
