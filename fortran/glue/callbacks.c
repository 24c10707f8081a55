/* The predefined attribute callbacks as Fortran procedures
 * (MPI_COMM_NULL_COPY_FN, MPI_COMM_DUP_FN, MPI_NULL_DELETE_FN, ... and
 * MPI-1's MPI_NULL_COPY_FN, MPI_DUP_FN with INTEGER values), called by the
 * keyval glue of attr.c like any user procedure. */
#include "glue.h"

static void wf_null_copy(void *old, void *key, void *extra, void *in, void *out, MPI_Fint *flag, MPI_Fint *ierror)
{
    (void)old, (void)key, (void)extra, (void)in, (void)out;
    *flag = 0;
    *ierror = MPI_SUCCESS;
}

static void wf_dup(void *old, void *key, void *extra, MPI_Aint *in, MPI_Aint *out, MPI_Fint *flag,
                   MPI_Fint *ierror)
{
    (void)old, (void)key, (void)extra;
    *out = *in;
    *flag = 1;
    *ierror = MPI_SUCCESS;
}

static void wf_dup_int(void *old, void *key, void *extra, MPI_Fint *in, MPI_Fint *out, MPI_Fint *flag,
                       MPI_Fint *ierror)
{
    (void)old, (void)key, (void)extra;
    *out = *in;
    *flag = 1;
    *ierror = MPI_SUCCESS;
}

static void wf_null_delete(void *obj, void *key, void *value, void *extra, MPI_Fint *ierror)
{
    (void)obj, (void)key, (void)value, (void)extra;
    *ierror = MPI_SUCCESS;
}

static void wf_conversion_null(void)
{
}

/* gfortran's name and MPICH's double-underscore one (the upper-case names
 * are mpi.h's C constants). */
#define WF_CALLBACK(name, target) \
    extern __typeof__(target) name##_ __attribute__((alias(#target))); \
    extern __typeof__(target) name##__ __attribute__((alias(#target)));

WF_CALLBACK(mpi_null_copy_fn, wf_null_copy)
WF_CALLBACK(mpi_comm_null_copy_fn, wf_null_copy)
WF_CALLBACK(mpi_type_null_copy_fn, wf_null_copy)
WF_CALLBACK(mpi_win_null_copy_fn, wf_null_copy)
WF_CALLBACK(mpi_dup_fn, wf_dup_int)
WF_CALLBACK(mpi_comm_dup_fn, wf_dup)
WF_CALLBACK(mpi_type_dup_fn, wf_dup)
WF_CALLBACK(mpi_win_dup_fn, wf_dup)
WF_CALLBACK(mpi_null_delete_fn, wf_null_delete)
WF_CALLBACK(mpi_comm_null_delete_fn, wf_null_delete)
WF_CALLBACK(mpi_type_null_delete_fn, wf_null_delete)
WF_CALLBACK(mpi_win_null_delete_fn, wf_null_delete)
WF_CALLBACK(mpi_conversion_fn_null, wf_conversion_null)
