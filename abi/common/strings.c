/* Strings the core writes under its own bounds, returned within Open MPI's
 * (MPI_MAX_OBJECT_NAME is 64 there and 128 in the core, MPI_MAX_ERROR_STRING
 * 256 and 512, MPI_MAX_LIBRARY_VERSION_STRING 256 and 8192,
 * MPI_MAX_INFO_KEY 36 and 255): an Open MPI program's buffer is only as
 * large as its header says. */
#include <stdio.h>

#include "wabi.h"

void wo_str_out(char *dst, int max, const char *src, int *resultlen)
{
    size_t n = strnlen(src, (size_t)max - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
    if (resultlen)
        *resultlen = (int)n;
}

int PMPI_Get_library_version(char *version, int *resultlen)
{
    char buf[CORE_MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    int rc = wcore_PMPI_Get_library_version(buf, &len);
    /* Say which ABI the program came through, not the core's. */
    char *abi = strstr(buf, "MPICH ABI");
    if (abi && strlen(buf) + strlen(WO_ABI_NAME) < sizeof buf) {
        char rest[CORE_MPI_MAX_LIBRARY_VERSION_STRING];
        snprintf(rest, sizeof rest, "%s%s", WO_ABI_NAME, abi + strlen("MPICH ABI"));
        strcpy(abi, rest);
    }
    if (rc == CORE_MPI_SUCCESS && version)
        wo_str_out(version, MPI_MAX_LIBRARY_VERSION_STRING, buf, resultlen);
    return wo_err_out(rc);
}
WO_WEAK(Get_library_version)

int PMPI_Error_string(int errorcode, char *string, int *resultlen)
{
    char buf[CORE_MPI_MAX_ERROR_STRING];
    int len = 0;
    int rc = wcore_PMPI_Error_string(wo_err_in(errorcode), buf, &len);
    if (rc == CORE_MPI_SUCCESS && string)
        wo_str_out(string, MPI_MAX_ERROR_STRING, buf, resultlen);
    return wo_err_out(rc);
}
WO_WEAK(Error_string)

int PMPI_Info_get_nthkey(MPI_Info info, int n, char *key)
{
    char buf[CORE_MPI_MAX_INFO_KEY + 1];
    int rc = wcore_PMPI_Info_get_nthkey(wo_info_in(info), n, buf);
    if (rc == CORE_MPI_SUCCESS && key)
        wo_str_out(key, MPI_MAX_INFO_KEY, buf, NULL);
    return wo_err_out(rc);
}
WO_WEAK(Info_get_nthkey)

#define WO_GET_NAME(fn, htype, conv)                                                \
    int PMPI_##fn(htype h, char *name, int *resultlen)                              \
    {                                                                               \
        char buf[CORE_MPI_MAX_OBJECT_NAME];                                         \
        int len = 0;                                                                \
        int rc = wcore_PMPI_##fn(conv(h), buf, &len);                               \
        if (rc == CORE_MPI_SUCCESS && name)                                         \
            wo_str_out(name, MPI_MAX_OBJECT_NAME, buf, resultlen);                  \
        return wo_err_out(rc);                                                      \
    }                                                                               \
    WO_WEAK(fn)
WO_GET_NAME(Comm_get_name, MPI_Comm, wo_comm_in)
WO_GET_NAME(Type_get_name, MPI_Datatype, wo_type_in)
WO_GET_NAME(Win_get_name, MPI_Win, wo_win_in)
