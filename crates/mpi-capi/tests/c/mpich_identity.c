/*
 * Is this mpi.h the MPICH ABI a library was configured against? The
 * question PETSc's petscsys.h asks at every compile (written here from its
 * rule, not copied): a library configured with MPICH records that MPICH's
 * MPICH_NUMVERSION (CONFIGURED_MPICH_NUMVERSION here, given with -D) and
 * refuses an mpi.h that has no MPICH_NUMVERSION, that is MVAPICH2 or Intel
 * MPI, whose major version differs, or whose minor version is older.
 * STRICT asks the older rule: the very same number.
 *
 * Then, run on one rank: the library agrees with the header's MPI version,
 * and the header still says it is wanmpi.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#ifndef CONFIGURED_MPICH_NUMVERSION
#error "compile with -DCONFIGURED_MPICH_NUMVERSION=<the MPICH_NUMVERSION a library was configured with>"
#endif

#if !defined(MPICH_NUMVERSION)
#error "configured with MPICH, but this mpi.h is not MPICH's ABI (no MPICH_NUMVERSION)"
#elif defined(MVAPICH2_NUMVERSION) || defined(I_MPI_NUMVERSION)
#error "configured with MPICH, but this mpi.h says MVAPICH2 or Intel MPI"
#elif MPICH_NUMVERSION / 10000000 != CONFIGURED_MPICH_NUMVERSION / 10000000
#error "configured with another MPICH major version"
#elif MPICH_NUMVERSION / 100000 % 100 < CONFIGURED_MPICH_NUMVERSION / 100000 % 100
#error "configured with a newer MPICH minor version"
#elif defined(STRICT) && MPICH_NUMVERSION != CONFIGURED_MPICH_NUMVERSION
#error "configured with another MPICH version"
#endif

#if !defined(MPICH_NAME) || !defined(MPICH_VERSION) || !defined(MPICH_CALC_VERSION)
#error "MPICH_NAME, MPICH_VERSION and MPICH_CALC_VERSION go with MPICH_NUMVERSION"
#endif
#if MPICH_CALC_VERSION(4, 0, 2, MPICH_RELEASE_TYPE_PATCH, 0) != MPICH_NUMVERSION
#error "MPICH_CALC_VERSION(4, 0, 2, patch, 0) is not MPICH_NUMVERSION"
#endif
#if !defined(WANMPI) || !defined(WANMPI_VERSION)
#error "the header no longer says it is wanmpi"
#endif

int main(int argc, char **argv) {
    int version, subversion, fails = 0;
    MPI_Init(&argc, &argv);
    MPI_Get_version(&version, &subversion);
    if (version != MPI_VERSION || subversion != MPI_SUBVERSION) {
        printf("FAIL MPI_Get_version %d.%d, header %d.%d\n", version, subversion, MPI_VERSION, MPI_SUBVERSION);
        fails++;
    }
    if (strcmp(MPICH_VERSION, "4.0.2") != 0) {
        printf("FAIL MPICH_VERSION \"%s\"\n", MPICH_VERSION);
        fails++;
    }
    printf("wanmpi %s as MPICH %s (%d), MPI %d.%d\n", WANMPI_VERSION, MPICH_VERSION, MPICH_NUMVERSION, version, subversion);
    if (fails == 0)
        printf("PASS mpich_identity\n");
    MPI_Finalize();
    return fails != 0;
}
