/* Open MPI 4.1's ABI (libmpi.so.40): its own mpi.h, the predefined objects
 * and how a handle is read (docs/openmpi-abi.md). Included by wabi.h. */
#ifndef WO_PROFILE_H
#define WO_PROFILE_H

#include <mpi.h>

#include "compat.h"
#include "objects.h"

/* Open MPI's status: a cancelled flag and a size_t byte count. */
#define WO_STATUS_COUNT(o) ((uint64_t)(o)->_ucount)
#define WO_STATUS_SET_COUNT(o, n) ((o)->_ucount = (size_t)(n))
#define WO_STATUS_CANCELLED(o) ((o)->_cancelled)
#define WO_STATUS_SET_CANCELLED(o, c) ((o)->_cancelled = (c))

/* Open MPI's MPI_COMM_DUP_FN is a function (OMPI_C_MPI_COMM_DUP_FN, called
 * like any program's), not a sentinel. */
#define WO_COPY_IS_DUP(f) 0

/* The address ranges that hold predefined objects: those of the program
 * (objects it copied) and of this library. A pointer outside both is no
 * handle of ours and is never read (handles.c). */
struct wo_range {
    uintptr_t lo, span;
};
extern struct wo_range wo_ranges[2];

static inline int wo_dec(const void *p)
{
    uintptr_t v = (uintptr_t)p;
    if ((v >> 48) == WO_TAG)
        return (int)(uint32_t)v;
    if (v - wo_ranges[0].lo >= wo_ranges[0].span && v - wo_ranges[1].lo >= wo_ranges[1].span)
        return 0;
    const struct wo_head *h = p;
    if (h->magic != WO_MAGIC)
        return 0;
    return h->core == WO_UNAVAILABLE ? wo_unavailable_type() : h->core;
}

/* What MPI_Get_library_version says the program came through. */
#define WO_ABI_NAME "Open MPI 4.1 ABI"

#endif
