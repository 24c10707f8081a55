/* Types of MPI-4 that Open MPI 4.1's mpi.h (an MPI-3.1 header) lacks, named
 * as Open MPI 5 names them, so that the translator can also offer the MPI-4
 * procedures (sessions, large counts) that Open MPI 5 binaries call. */
#ifndef WO_COMPAT_H
#define WO_COMPAT_H

#if MPI_VERSION < 4
typedef struct ompi_instance_t *MPI_Session;
typedef void(MPI_User_function_c)(void *, void *, MPI_Count *, MPI_Datatype *);
typedef int(MPI_Datarep_conversion_function_c)(void *, MPI_Datatype, MPI_Count, void *, MPI_Offset, void *);
typedef void(MPI_Session_errhandler_function)(MPI_Session *, int *, ...);
#define MPI_SESSION_NULL ((MPI_Session)0)
#endif

#endif
