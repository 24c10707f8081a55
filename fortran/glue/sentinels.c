/* The common blocks that hold the Fortran sentinels (MPI_BOTTOM,
 * MPI_IN_PLACE, MPI_STATUS(ES)_IGNORE, MPI_ERRCODES_IGNORE, MPI_ARGV(S)_NULL,
 * MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY). A program compiled with mpif.h or the
 * modules defines the same blocks; the dynamic linker makes the program's
 * copy the one this library sees, so the glue can compare addresses. */
#include "glue.h"

/* Aligned as gfortran aligns its common blocks, which define the same
 * symbols in the module objects. */
struct wf_priv1 mpipriv1_ __attribute__((aligned(16)));
struct wf_priv2 mpipriv2_ __attribute__((aligned(16)));
struct wf_privc mpiprivc_ __attribute__((aligned(16)));
MPI_Fint mpifcmb5_ __attribute__((aligned(16)));
MPI_Fint mpifcmb9_ __attribute__((aligned(16)));
