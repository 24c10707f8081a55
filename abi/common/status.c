/* MPI_Status between the ABIs. The foreign one: source, tag, error, then
 * where its profile.h keeps the cancelled flag and the byte count. The
 * core's (MPICH's): the byte count split over two ints, the cancelled flag
 * in the low bit of the second, then source, tag, error. Ranks, tags and
 * error codes have values of their own in each ABI, so they are translated
 * too. */
#include "wabi.h"

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

void wo_statuses_keep_error(wc_status *c, const MPI_Status *o, int n)
{
    for (int i = 0; i < n; i++)
        c[i].MPI_ERROR = wo_err_in(o[i].MPI_ERROR);
}

void wo_status_out(MPI_Status *o, const wc_status *c)
{
    uint64_t bytes = (uint64_t)(uint32_t)c->count_lo | ((uint64_t)((uint32_t)c->count_hi_and_cancelled >> 1) << 32);
    o->MPI_SOURCE = wo_rank_out(c->MPI_SOURCE);
    o->MPI_TAG = wo_tag_out(c->MPI_TAG);
    o->MPI_ERROR = wo_err_out(c->MPI_ERROR);
    WO_STATUS_SET_CANCELLED(o, c->count_hi_and_cancelled & 1);
    WO_STATUS_SET_COUNT(o, bytes);
}

void wo_statuses_out(MPI_Status *o, const wc_status *c, int n)
{
    for (int i = 0; i < n; i++)
        wo_status_out(&o[i], &c[i]);
}

void wo_status_in(wc_status *c, const MPI_Status *o)
{
    uint64_t bytes = WO_STATUS_COUNT(o);
    c->count_lo = (int)(uint32_t)bytes;
    c->count_hi_and_cancelled = (int)(((uint32_t)(bytes >> 32) << 1) | (WO_STATUS_CANCELLED(o) ? 1u : 0u));
    c->MPI_SOURCE = wo_rank_in(o->MPI_SOURCE);
    c->MPI_TAG = wo_tag_in(o->MPI_TAG);
    c->MPI_ERROR = wo_err_in(o->MPI_ERROR);
}

/* The Fortran status of both ABIs is their C status as integers (Open
 * MPI's MPI_STATUS_SIZE 6, the standard's 8): a copy either way. */
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
