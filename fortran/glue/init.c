/* Fortran glue for the environment functions whose Fortran form differs
 * from C's: MPI_INIT and MPI_INIT_THREAD take no argc/argv, MPI_WTIME,
 * MPI_WTICK, MPI_AINT_ADD and MPI_AINT_DIFF are functions without ierror,
 * MPI_PCONTROL takes only the level, MPI_INFO_CREATE_ENV no arguments. */
#include "glue.h"

void pmpi_init_(MPI_Fint *ierror)
{
    wf_set(ierror, MPI_Init(NULL, NULL));
}
WF_NAMES(mpi_init, MPI_INIT)

void pmpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierror)
{
    wf_set(ierror, MPI_Init_thread(NULL, NULL, *required, provided));
}
WF_NAMES(mpi_init_thread, MPI_INIT_THREAD)

void pmpi_info_create_env_(MPI_Fint *info, MPI_Fint *ierror)
{
    wf_set(ierror, MPI_Info_create_env(0, NULL, info));
}
WF_NAMES(mpi_info_create_env, MPI_INFO_CREATE_ENV)

void pmpi_pcontrol_(MPI_Fint *level)
{
    MPI_Pcontrol(*level);
}
WF_NAMES(mpi_pcontrol, MPI_PCONTROL)

double pmpi_wtime_(void)
{
    return MPI_Wtime();
}
WF_NAMES(mpi_wtime, MPI_WTIME)

double pmpi_wtick_(void)
{
    return MPI_Wtick();
}
WF_NAMES(mpi_wtick, MPI_WTICK)

MPI_Aint pmpi_aint_add_(MPI_Aint *base, MPI_Aint *disp)
{
    return MPI_Aint_add(*base, *disp);
}
WF_NAMES(mpi_aint_add, MPI_AINT_ADD)

MPI_Aint pmpi_aint_diff_(MPI_Aint *a, MPI_Aint *b)
{
    return MPI_Aint_diff(*a, *b);
}
WF_NAMES(mpi_aint_diff, MPI_AINT_DIFF)
