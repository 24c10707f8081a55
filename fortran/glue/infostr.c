/* MPI_INFO_GET_STRING with Fortran's lengths (MPI-4.0 10.2): BUFLEN counts
 * characters, not a NUL; on return it is the value's length; a BUFLEN of 0
 * leaves VALUE as it was, a shorter one truncates (the rest of VALUE is
 * blanks); a key not found leaves VALUE and BUFLEN alone. C's buflen
 * counts the NUL, so the generated glue would be one off. */
#include <stdlib.h>
#include <string.h>
#include "glue.h"

void pmpi_info_get_string_(MPI_Fint *info, char *key, MPI_Fint *buflen, char *value, MPI_Fint *flag, MPI_Fint *ierror,
                           size_t len_key, size_t len_value)
{
    char *c_key = wf_str_in(key, len_key);
    if (c_key == NULL) {
        wf_set(ierror, WF_OOM);
        return;
    }
    int vlen = 0;
    int rc = MPI_Info_get_valuelen(*info, c_key, &vlen, flag);
    if (rc == MPI_SUCCESS && *flag && *buflen > 0) {
        char *c_value = calloc((size_t)vlen + 1, 1);
        int n = vlen + 1;
        if (c_value == NULL)
            rc = WF_OOM;
        else
            rc = MPI_Info_get_string(*info, c_key, &n, c_value, flag);
        if (rc == MPI_SUCCESS && *flag) {
            size_t keep = (size_t)*buflen < len_value ? (size_t)*buflen : len_value;
            if (strlen(c_value) > keep)
                c_value[keep] = '\0';
            wf_str_out(value, len_value, c_value);
        }
        free(c_value);
    }
    if (rc == MPI_SUCCESS && *flag)
        *buflen = vlen;
    free(c_key);
    wf_set(ierror, rc);
}
WF_NAMES(mpi_info_get_string, MPI_INFO_GET_STRING)
