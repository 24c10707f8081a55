/* MPI_Status between the ABIs. Open MPI's: source, tag, error, then a
 * cancelled flag and the byte count as a size_t. The core's (MPICH's): the
 * byte count split over two ints, the cancelled flag in the low bit of the
 * second, then source, tag, error. Ranks and error codes have values of
 * their own in each ABI, so they are translated too. */
#include "wompi.h"

void wo_status_clear(wc_status *c)
{
    c->count_lo = 0;
    c->count_hi_and_cancelled = 0;
    c->MPI_SOURCE = CORE_MPI_ANY_SOURCE;
    c->MPI_TAG = CORE_MPI_ANY_TAG;
    c->MPI_ERROR = CORE_MPI_SUCCESS;
}

void wo_statuses_clear(wc_status *c, int n)
{
    for (int i = 0; i < n; i++)
        wo_status_clear(&c[i]);
}

void wo_status_out(MPI_Status *o, const wc_status *c)
{
    uint64_t bytes = (uint64_t)(uint32_t)c->count_lo | ((uint64_t)((uint32_t)c->count_hi_and_cancelled >> 1) << 32);
    o->MPI_SOURCE = wo_rank_out(c->MPI_SOURCE);
    o->MPI_TAG = c->MPI_TAG;
    o->MPI_ERROR = wo_err_out(c->MPI_ERROR);
    o->_cancelled = c->count_hi_and_cancelled & 1;
    o->_ucount = (size_t)bytes;
}

void wo_statuses_out(MPI_Status *o, const wc_status *c, int n)
{
    for (int i = 0; i < n; i++)
        wo_status_out(&o[i], &c[i]);
}

void wo_status_in(wc_status *c, const MPI_Status *o)
{
    uint64_t bytes = (uint64_t)o->_ucount;
    c->count_lo = (int)(uint32_t)bytes;
    c->count_hi_and_cancelled = (int)(((uint32_t)(bytes >> 32) << 1) | (o->_cancelled ? 1u : 0u));
    c->MPI_SOURCE = wo_rank_in(o->MPI_SOURCE);
    c->MPI_TAG = o->MPI_TAG;
    c->MPI_ERROR = wo_err_in(o->MPI_ERROR);
}

/* Open MPI's Fortran status is its C status as integers (MPI_STATUS_SIZE
 * 6): a copy either way. */
int PMPI_Status_c2f(const MPI_Status *c_status, MPI_Fint *f_status)
{
    if (!c_status || !f_status)
        return MPI_ERR_ARG;
    memcpy(f_status, c_status, sizeof(MPI_Status));
    return MPI_SUCCESS;
}
WO_WEAK(Status_c2f)

int PMPI_Status_f2c(const MPI_Fint *f_status, MPI_Status *c_status)
{
    if (!c_status || !f_status)
        return MPI_ERR_ARG;
    memcpy(c_status, f_status, sizeof(MPI_Status));
    return MPI_SUCCESS;
}
WO_WEAK(Status_f2c)
