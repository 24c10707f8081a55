/* Open MPI's predefined attribute functions: its mpi.h makes
 * MPI_COMM_DUP_FN, MPI_COMM_NULL_COPY_FN, ... these functions, which
 * programs pass to the keyval calls and the translator calls like the
 * program's own (callbacks.c). */
#include "wabi.h"

/* Open MPI's predefined attribute functions (MPI_COMM_DUP_FN is
 * OMPI_C_MPI_COMM_DUP_FN in its mpi.h). */
static int null_copy(void *in, void *out, int *flag)
{
    (void)in, (void)out;
    *flag = 0;
    return MPI_SUCCESS;
}

static int dup_copy(void *in, void *out, int *flag)
{
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

#define WO_COPY_FN(name, htype, body)                                                             \
    int name(htype h, int k, void *extra, void *in, void *out, int *flag)                        \
    {                                                                                             \
        (void)h, (void)k, (void)extra;                                                            \
        return body(in, out, flag);                                                               \
    }
#define WO_DELETE_FN(name, htype)                                                                 \
    int name(htype h, int k, void *value, void *extra)                                           \
    {                                                                                             \
        (void)h, (void)k, (void)value, (void)extra;                                               \
        return MPI_SUCCESS;                                                                       \
    }
WO_COPY_FN(OMPI_C_MPI_COMM_NULL_COPY_FN, MPI_Comm, null_copy)
WO_COPY_FN(OMPI_C_MPI_COMM_DUP_FN, MPI_Comm, dup_copy)
WO_DELETE_FN(OMPI_C_MPI_COMM_NULL_DELETE_FN, MPI_Comm)
WO_COPY_FN(OMPI_C_MPI_TYPE_NULL_COPY_FN, MPI_Datatype, null_copy)
WO_COPY_FN(OMPI_C_MPI_TYPE_DUP_FN, MPI_Datatype, dup_copy)
WO_DELETE_FN(OMPI_C_MPI_TYPE_NULL_DELETE_FN, MPI_Datatype)
WO_COPY_FN(OMPI_C_MPI_WIN_NULL_COPY_FN, MPI_Win, null_copy)
WO_COPY_FN(OMPI_C_MPI_WIN_DUP_FN, MPI_Win, dup_copy)
WO_DELETE_FN(OMPI_C_MPI_WIN_NULL_DELETE_FN, MPI_Win)
WO_COPY_FN(OMPI_C_MPI_NULL_COPY_FN, MPI_Comm, null_copy)
WO_COPY_FN(OMPI_C_MPI_DUP_FN, MPI_Comm, dup_copy)
WO_DELETE_FN(OMPI_C_MPI_NULL_DELETE_FN, MPI_Comm)

