/* Fortran glue for MPI-1's address functions, whose Fortran forms take
 * default INTEGERs where C takes MPI_Aint (MPI_ADDRESS, MPI_TYPE_EXTENT,
 * MPI_TYPE_LB, MPI_TYPE_UB, MPI_TYPE_HVECTOR, MPI_TYPE_HINDEXED,
 * MPI_TYPE_STRUCT). Removed from MPI 3.0, still found in old codes. */
#include <stdlib.h>
#include "glue.h"

void pmpi_address_(void *location, MPI_Fint *address, MPI_Fint *ierror)
{
    MPI_Aint a = 0;
    int rc = MPI_Get_address(location, &a);
    if (rc == MPI_SUCCESS)
        *address = (MPI_Fint)a;
    wf_set(ierror, rc);
}
WF_NAMES(mpi_address, MPI_ADDRESS)

typedef int (*wf_aint_query)(MPI_Datatype, MPI_Aint *);

static void wf_type_query(wf_aint_query f, MPI_Fint *type, MPI_Fint *out, MPI_Fint *ierror)
{
    MPI_Aint a = 0;
    int rc = f(*type, &a);
    if (rc == MPI_SUCCESS)
        *out = (MPI_Fint)a;
    wf_set(ierror, rc);
}

void pmpi_type_extent_(MPI_Fint *type, MPI_Fint *extent, MPI_Fint *ierror)
{
    wf_type_query(MPI_Type_extent, type, extent, ierror);
}
WF_NAMES(mpi_type_extent, MPI_TYPE_EXTENT)

void pmpi_type_lb_(MPI_Fint *type, MPI_Fint *lb, MPI_Fint *ierror)
{
    wf_type_query(MPI_Type_lb, type, lb, ierror);
}
WF_NAMES(mpi_type_lb, MPI_TYPE_LB)

void pmpi_type_ub_(MPI_Fint *type, MPI_Fint *ub, MPI_Fint *ierror)
{
    wf_type_query(MPI_Type_ub, type, ub, ierror);
}
WF_NAMES(mpi_type_ub, MPI_TYPE_UB)

void pmpi_type_hvector_(MPI_Fint *count, MPI_Fint *blocklength, MPI_Fint *stride, MPI_Fint *oldtype,
                       MPI_Fint *newtype, MPI_Fint *ierror)
{
    wf_set(ierror, MPI_Type_create_hvector(*count, *blocklength, *stride, *oldtype, newtype));
}
WF_NAMES(mpi_type_hvector, MPI_TYPE_HVECTOR)

/* The displacements widened to MPI_Aint; NULL when memory is short. */
static MPI_Aint *wf_widen(const MPI_Fint *d, int n)
{
    MPI_Aint *w = malloc(sizeof(MPI_Aint) * (n > 0 ? (size_t)n : 1));
    for (int i = 0; w != NULL && i < n; i++)
        w[i] = d[i];
    return w;
}

void pmpi_type_hindexed_(MPI_Fint *count, MPI_Fint *blocklengths, MPI_Fint *displacements, MPI_Fint *oldtype,
                        MPI_Fint *newtype, MPI_Fint *ierror)
{
    MPI_Aint *w = wf_widen(displacements, *count);
    int rc = w == NULL ? WF_OOM : MPI_Type_create_hindexed(*count, blocklengths, w, *oldtype, newtype);
    free(w);
    wf_set(ierror, rc);
}
WF_NAMES(mpi_type_hindexed, MPI_TYPE_HINDEXED)

void pmpi_type_struct_(MPI_Fint *count, MPI_Fint *blocklengths, MPI_Fint *displacements, MPI_Fint *types,
                      MPI_Fint *newtype, MPI_Fint *ierror)
{
    MPI_Aint *w = wf_widen(displacements, *count);
    int rc = w == NULL ? WF_OOM : MPI_Type_create_struct(*count, blocklengths, w, types, newtype);
    free(w);
    wf_set(ierror, rc);
}
WF_NAMES(mpi_type_struct, MPI_TYPE_STRUCT)
