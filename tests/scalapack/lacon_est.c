/*
 * A preload library for running Debian 12's ScaLAPACK 2.2.1 test drivers
 * (package scalapack-mpi-test) under any MPI: it works around a bug of
 * ScaLAPACK 2.2.1, not of the MPI library.
 *
 * The bug: PSLACON and PDLACON (the norm estimator that PxGERFS and
 * PxPORFS call in a reverse-communication loop) start every call with
 * ESTWORK(1) = EST, where EST is the caller's argument; PSGERFS and
 * PSPORFS never set it before the loop, so it holds whatever an earlier
 * call left on the caller's stack (in a wanmpi run: bits of a pointer, a
 * different value on every rank, sometimes a NaN). On the loop's third
 * call that value becomes ESTOLD and decides whether the estimator goes
 * on (KASE=2) or stops (KASE=1), separately on every rank: ranks that
 * decide differently call PSGETRS with TRANS='T' and 'N', whose global
 * argument check (PCHK2MAT) then reports "parameter number 1 had an
 * illegal value" on every rank, and the ranks wait for each other in
 * different collectives for ever (xslu, xsllt). ScaLAPACK fixed it
 * upstream in March 2025 ("Fix uninitialized EST in Placon": EST = ZERO
 * before ESTWORK(1) = EST); 2.2.1 predates that.
 *
 * This library does what that fix does: it sets EST to zero before every
 * call of the real PSLACON / PDLACON (found with RTLD_NEXT). The complex
 * versions never read EST and are left alone.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef void (*slacon_fn)(int *, float *, int *, int *, int *, float *, int *, int *, int *, int *, float *, int *);
typedef void (*dlacon_fn)(int *, double *, int *, int *, int *, double *, int *, int *, int *, int *, double *, int *);

static void *next(const char *name) {
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        fprintf(stderr, "lacon_est: %s not found after this library\n", name);
        abort();
    }
    return f;
}

void pslacon_(int *n, float *v, int *iv, int *jv, int *descv, float *x, int *ix, int *jx, int *descx, int *isgn, float *est,
              int *kase) {
    static slacon_fn real;
    if (!real) real = (slacon_fn)next("pslacon_");
    *est = 0.0f;
    real(n, v, iv, jv, descv, x, ix, jx, descx, isgn, est, kase);
}

void pdlacon_(int *n, double *v, int *iv, int *jv, int *descv, double *x, int *ix, int *jx, int *descx, int *isgn, double *est,
              int *kase) {
    static dlacon_fn real;
    if (!real) real = (dlacon_fn)next("pdlacon_");
    *est = 0.0;
    real(n, v, iv, jv, descv, x, ix, jx, descx, isgn, est, kase);
}
