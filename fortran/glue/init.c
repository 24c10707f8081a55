/* Fortran glue for the environment functions whose Fortran form differs
 * from C's: MPI_INIT and MPI_INIT_THREAD take no argc/argv, MPI_WTIME,
 * MPI_WTICK, MPI_AINT_ADD and MPI_AINT_DIFF are functions without ierror,
 * MPI_PCONTROL takes only the level, MPI_INFO_CREATE_ENV no arguments. */
#include "glue.h"

void mpi_init_(MPI_Fint *ierror)
{
    wf_set(ierror, MPI_Init(NULL, NULL));
}
WF_ALIASES(mpi_init_, pmpi_init_, mpi_init__, MPI_INIT, PMPI_INIT)

void mpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierror)
{
    wf_set(ierror, MPI_Init_thread(NULL, NULL, *required, provided));
}
WF_ALIASES(mpi_init_thread_, pmpi_init_thread_, mpi_init_thread__, MPI_INIT_THREAD, PMPI_INIT_THREAD)

void mpi_info_create_env_(MPI_Fint *info, MPI_Fint *ierror)
{
    wf_set(ierror, MPI_Info_create_env(0, NULL, info));
}
WF_ALIASES(mpi_info_create_env_, pmpi_info_create_env_, mpi_info_create_env__, MPI_INFO_CREATE_ENV,
           PMPI_INFO_CREATE_ENV)

void mpi_pcontrol_(MPI_Fint *level)
{
    MPI_Pcontrol(*level);
}
WF_ALIASES(mpi_pcontrol_, pmpi_pcontrol_, mpi_pcontrol__, MPI_PCONTROL, PMPI_PCONTROL)

double mpi_wtime_(void)
{
    return MPI_Wtime();
}
WF_ALIASES(mpi_wtime_, pmpi_wtime_, mpi_wtime__, MPI_WTIME, PMPI_WTIME)

double mpi_wtick_(void)
{
    return MPI_Wtick();
}
WF_ALIASES(mpi_wtick_, pmpi_wtick_, mpi_wtick__, MPI_WTICK, PMPI_WTICK)

MPI_Aint mpi_aint_add_(MPI_Aint *base, MPI_Aint *disp)
{
    return MPI_Aint_add(*base, *disp);
}
WF_ALIASES(mpi_aint_add_, pmpi_aint_add_, mpi_aint_add__, MPI_AINT_ADD, PMPI_AINT_ADD)

MPI_Aint mpi_aint_diff_(MPI_Aint *a, MPI_Aint *b)
{
    return MPI_Aint_diff(*a, *b);
}
WF_ALIASES(mpi_aint_diff_, pmpi_aint_diff_, mpi_aint_diff__, MPI_AINT_DIFF, PMPI_AINT_DIFF)
