/* The MPI standard ABI (MPI 5.0, libmpi_abi.so): our generated mpi_abi.h
 * and how a handle is read (docs/standard-abi.md). Included by wabi.h. */
#ifndef WO_PROFILE_H
#define WO_PROFILE_H

#include "mpi_abi.h"

/* The core's byte count in the two first internal ints, cancelled in the
 * third: the standard leaves the five to the implementation. */
#define WO_STATUS_COUNT(o) ((uint64_t)(uint32_t)(o)->MPI_internal[0] | ((uint64_t)(uint32_t)(o)->MPI_internal[1] << 32))
#define WO_STATUS_SET_COUNT(o, n) \
    ((o)->MPI_internal[0] = (int)(uint32_t)(n), (o)->MPI_internal[1] = (int)(uint32_t)((uint64_t)(n) >> 32))
#define WO_STATUS_CANCELLED(o) ((o)->MPI_internal[2])
#define WO_STATUS_SET_CANCELLED(o, c) ((o)->MPI_internal[2] = (c))

/* The standard's MPI_COMM_DUP_FN (and the other DUP_FNs) is the sentinel 1. */
#define WO_COPY_IS_DUP(f) ((uintptr_t)(f) == 1)

/* Predefined handles are small integers (below 0x400 in ABI 1.0): the core
 * handle of each, by value (generated: predefined.c). */
#define WO_SMALL 0x400
extern const int wo_small[WO_SMALL];

static inline int wo_dec(const void *p)
{
    uintptr_t v = (uintptr_t)p;
    if ((v >> 48) == WO_TAG)
        return (int)(uint32_t)v;
    if (v >= WO_SMALL)
        return 0;
    int c = wo_small[v];
    return c == WO_UNAVAILABLE ? wo_unavailable_type() : c;
}

/* What MPI_Get_library_version says the program came through. */
#define WO_ABI_NAME "MPI standard ABI 1.0"

#endif
