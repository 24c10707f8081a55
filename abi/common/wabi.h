/* Another ABI over wanmpi's core: what both translators share (Open MPI's,
 * abi/ompi, and the MPI standard's, abi/standard; docs/openmpi-abi.md and
 * docs/standard-abi.md).
 *
 * profile.h (found on the include path of the ABI being built) includes
 * that ABI's mpi.h, so that MPI_Comm, MPI_INT, MPI_Status and every constant
 * here are the foreign ABI's; the core's (MPICH's) are the CORE_ names of
 * the generated core.h. A foreign handle is a pointer: a predefined one
 * (an object of ours for Open MPI, a small integer for the standard ABI)
 * that profile.h's wo_dec turns into the core handle it stands for, or a
 * core handle encoded in a pointer no process can map (WO_TAG in its top
 * 16 bits). Translating is therefore a shift, a load or a table index,
 * never a lookup under a lock. */
#ifndef WABI_H
#define WABI_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Top 16 bits of a core handle carried in a foreign handle: a
 * non-canonical x86-64 address, so never that of a real object. */
#define WO_TAG 0x5741ULL

static inline void *wo_enc(int c)
{
    return (void *)(uintptr_t)((WO_TAG << 48) | (uint32_t)c);
}

/* The core handle of a predefined datatype the core lacks (no core handle
 * is 1): translated to a zero-size type made at first use. */
#define WO_UNAVAILABLE 1
int wo_unavailable_type(void);

/* The ABI's mpi.h and its wo_dec (the core handle of a foreign handle; 0,
 * no valid core handle, for anything that is not one, so that the core
 * reports the invalid handle with its usual error). */
#include "profile.h"

#include "core.h"

#define wo_comm_in(h) wo_dec(h)
#define wo_group_in(h) wo_dec(h)
#define wo_type_in(h) wo_dec(h)
#define wo_op_in(h) wo_dec(h)
#define wo_req_in(h) wo_dec(h)
#define wo_msg_in(h) wo_dec(h)
#define wo_eh_in(h) wo_dec(h)
#define wo_info_in(h) wo_dec(h)
#define wo_win_in(h) wo_dec(h)
#define wo_sess_in(h) ((h) == MPI_SESSION_NULL ? CORE_MPI_SESSION_NULL : wo_dec(h))

/* Files are pointers in the core too: Open MPI's null file is ours. */
static inline void *wo_file_in(MPI_File f)
{
    return f == MPI_FILE_NULL ? NULL : (void *)f;
}

static inline MPI_File wo_file_out(void *f)
{
    return f ? (MPI_File)f : MPI_FILE_NULL;
}

static inline void *wo_buf_in(const void *b)
{
    return b == MPI_IN_PLACE ? CORE_IN_PLACE : (void *)b;
}

extern int *const wcore_MPI_UNWEIGHTED;
extern int *const wcore_MPI_WEIGHTS_EMPTY;

static inline int *wo_weights_in(const int *w)
{
    if (w == MPI_UNWEIGHTED)
        return wcore_MPI_UNWEIGHTED;
    if (w == MPI_WEIGHTS_EMPTY)
        return wcore_MPI_WEIGHTS_EMPTY;
    return (int *)w;
}

static inline int wo_len(long n)
{
    return n < 0 ? 0 : (int)n;
}

/* Scratch arrays for translated handles and statuses: on the stack when
 * small (a call's usual case), else on the heap. */
#define WO_STACK 32
#define WO_TMP(type, name, n)                                                                  \
    type name##_stack[WO_STACK];                                                               \
    type *name = (n) <= WO_STACK ? name##_stack : (type *)malloc(sizeof(type) * (size_t)(n)); \
    if (!name)                                                                                 \
    return MPI_ERR_NO_MEM
#define WO_FREE(name)             \
    do {                          \
        if (name != name##_stack) \
            free(name);           \
    } while (0)

/* MPI_X is a weak alias of PMPI_X, so that a tool's MPI_X wrapper can call
 * PMPI_X (the profiling interface). */
#define WO_WEAK(name) extern __typeof__(PMPI_##name) MPI_##name __attribute__((weak, alias("PMPI_" #name)));

#include "maps.h"

/* Statuses (status.c). */
void wo_status_clear(wc_status *c);
void wo_statuses_clear(wc_status *c, int n);
/* The program's MPI_ERROR fields into the core's statuses, where the call
 * may leave them. */
void wo_statuses_keep_error(wc_status *c, const MPI_Status *o, int n);
void wo_status_out(MPI_Status *o, const wc_status *c);
void wo_statuses_out(MPI_Status *o, const wc_status *c, int n);
void wo_status_in(wc_status *c, const MPI_Status *o);

/* How many send (WO_OUT) or receive (WO_IN) types an alltoallw-like call
 * on core communicator comm reads: the group's size, the remote group's
 * on an inter-communicator, the topology's degrees for neighbourhood
 * collectives. */
enum { WO_IN = 0, WO_OUT = 1 };
int wo_peer_count(int comm, int neighbor, int side);

/* Copies a string the core wrote into a caller's buffer of Open MPI's
 * bound (which may be shorter than the core's). */
void wo_str_out(char *dst, int max, const char *src, int *resultlen);

#endif
