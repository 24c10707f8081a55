/* What every Fortran glue function shares: the sentinels' common blocks
 * (MPICH's names and layout, so that code compiled with MPICH's mpif.h finds
 * them too), their recognition by address, and Fortran string conversion.
 *
 * A Fortran caller cannot pass C's special pointers (MPI_BOTTOM is NULL,
 * MPI_STATUS_IGNORE is 1): it passes the address of a variable in a common
 * block, and the glue turns that address into the C value. */
#ifndef WANMPI_FORTRAN_GLUE_H
#define WANMPI_FORTRAN_GLUE_H

#include <stddef.h>
#include <stdint.h>
#include <mpi.h>

/* COMMON /MPIPRIV1/ MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS_IGNORE(5) */
struct wf_priv1 {
    MPI_Fint bottom;
    MPI_Fint in_place;
    MPI_Fint status_ignore[MPI_F_STATUS_SIZE];
};
/* COMMON /MPIPRIV2/ MPI_STATUSES_IGNORE(5,1), MPI_ERRCODES_IGNORE(1) */
struct wf_priv2 {
    MPI_Fint statuses_ignore[MPI_F_STATUS_SIZE];
    MPI_Fint errcodes_ignore;
};
/* COMMON /MPIPRIVC/ MPI_ARGVS_NULL(1,1), MPI_ARGV_NULL(1) (CHARACTER*1) */
struct wf_privc {
    char argvs_null;
    char argv_null;
};

extern struct wf_priv1 mpipriv1_;
extern struct wf_priv2 mpipriv2_;
extern struct wf_privc mpiprivc_;
extern MPI_Fint mpifcmb5_; /* MPI_UNWEIGHTED */
extern MPI_Fint mpifcmb9_; /* MPI_WEIGHTS_EMPTY */

static inline void *wf_buf(const void *p)
{
    if (p == &mpipriv1_.bottom)
        return MPI_BOTTOM;
    if (p == &mpipriv1_.in_place)
        return MPI_IN_PLACE;
    return (void *)p;
}

static inline MPI_Status *wf_status(void *p)
{
    if (p == mpipriv1_.status_ignore || p == mpipriv2_.statuses_ignore)
        return MPI_STATUS_IGNORE;
    return (MPI_Status *)p;
}

static inline int *wf_errcodes(void *p)
{
    return p == &mpipriv2_.errcodes_ignore ? MPI_ERRCODES_IGNORE : (int *)p;
}

static inline int *wf_weights(void *p)
{
    if (p == &mpifcmb5_)
        return MPI_UNWEIGHTED;
    if (p == &mpifcmb9_)
        return MPI_WEIGHTS_EMPTY;
    return (int *)p;
}

/* A NUL-terminated copy of a Fortran string without its leading and
 * trailing blanks;
 * NULL when memory is short (the caller fails with MPI_ERR_OTHER). */
char *wf_str_in(const char *s, size_t len);
/* A zeroed buffer for a C function to write a string into: big enough for
 * the Fortran variable and for any MPI_MAX_* length. */
char *wf_str_buf(size_t len);
/* Copies a C string into a Fortran variable of length len, blank padded. */
void wf_str_out(char *dst, size_t len, const char *src);

#define WF_OOM MPI_ERR_OTHER

/* Attribute values set from Fortran (boxes.c): a box holding the value,
 * whose address C's attribute functions store; NULL when memory is short. */
void *wf_box_new(MPI_Aint value);
/* Whether p is a box of ours, and if so its value. */
int wf_box_get(void *p, MPI_Aint *value);
/* Frees p if it is a box of ours. */
void wf_box_free(void *p);

/* The names of one Fortran procedure, whose glue is defined as pmpi_x_
 * (stem mpi_x, upper-case name MPI_X): the profiling names pmpi_x_,
 * pmpi_x__, PMPI_X and mpi_f08's pmpi_x_f08_ strong, the MPI names mpi_x_,
 * mpi_x__, MPI_X and mpi_x_f08_ weak aliases of it, as MPICH's are, so a
 * program or tool defining its own MPI_X (any mangling) replaces the MPI
 * name and still reaches the library through PMPI_X. */
#define WF_ALIAS(f, a) extern __typeof__(f) a __attribute__((alias(#f)));
#define WF_WEAK(f, a) extern __typeof__(f) a __attribute__((weak, alias(#f)));
#define WF_NAMES(s, S) \
    WF_ALIAS(p##s##_, p##s##__) WF_ALIAS(p##s##_, P##S) WF_ALIAS(p##s##_, p##s##_f08_) \
    WF_WEAK(p##s##_, s##_) WF_WEAK(p##s##_, s##__) WF_WEAK(p##s##_, S) WF_WEAK(p##s##_, s##_f08_)

static inline void wf_set(MPI_Fint *ierror, int rc)
{
    if (ierror)
        *ierror = rc;
}

#endif
