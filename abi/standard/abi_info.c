/* The procedures only the standard ABI has (MPI 5.0 §20): which ABI this
 * library implements, and the sizes of its integer types. */
#include <stdio.h>

#include "wabi.h"

int PMPI_Abi_get_version(int *abi_major, int *abi_minor)
{
    if (!abi_major || !abi_minor)
        return MPI_ERR_ARG;
    *abi_major = MPI_ABI_VERSION;
    *abi_minor = MPI_ABI_SUBVERSION;
    return MPI_SUCCESS;
}
WO_WEAK(Abi_get_version)

int PMPI_Abi_get_info(MPI_Info *info)
{
    if (!info)
        return MPI_ERR_ARG;
    int c = 0;
    int rc = wcore_PMPI_Info_create(&c);
    static const struct {
        const char *key;
        size_t size;
    } sizes[] = {{"mpi_aint_size", sizeof(MPI_Aint)},
                 {"mpi_count_size", sizeof(MPI_Count)},
                 {"mpi_offset_size", sizeof(MPI_Offset)}};
    for (size_t i = 0; rc == CORE_MPI_SUCCESS && i < sizeof sizes / sizeof sizes[0]; i++) {
        char v[8];
        snprintf(v, sizeof v, "%zu", sizes[i].size);
        rc = wcore_PMPI_Info_set(c, sizes[i].key, v);
    }
    if (rc == CORE_MPI_SUCCESS)
        *info = wo_info_out(c);
    return wo_err_out(rc);
}
WO_WEAK(Abi_get_info)
