/* Fortran glue for MPI_COMM_SPAWN and MPI_COMM_SPAWN_MULTIPLE. Fortran
 * passes argument lists as arrays of blank-padded strings ended by a blank
 * string (array_of_argv: count rows of a 2-D array, row i being command i's
 * list), and MPI_ARGV(S)_NULL as the address of a common-block variable. */
#include <stdlib.h>
#include "glue.h"

/* A NULL-terminated C argv from a Fortran array of strings of length len;
 * stride is the distance between consecutive elements, in elements. */
static char **wf_argv(const char *a, size_t len, size_t stride, int *oom)
{
    size_t n = 0;
    while (1) {
        const char *s = a + n * stride * len;
        size_t i = 0;
        while (i < len && s[i] == ' ')
            i++;
        if (i == len)
            break;
        n++;
    }
    char **v = calloc(n + 1, sizeof *v);
    for (size_t i = 0; v != NULL && i < n; i++) {
        v[i] = wf_str_in(a + i * stride * len, len);
        if (v[i] == NULL) {
            *oom = 1;
            break;
        }
    }
    if (v == NULL)
        *oom = 1;
    return v;
}

static void wf_argv_free(char **v)
{
    for (size_t i = 0; v != NULL && v[i] != NULL; i++)
        free(v[i]);
    free(v);
}

void pmpi_comm_spawn_(char *command, char *argv, MPI_Fint *maxprocs, MPI_Fint *info, MPI_Fint *root,
                     MPI_Fint *comm, MPI_Fint *intercomm, MPI_Fint *errcodes, MPI_Fint *ierror,
                     size_t len_command, size_t len_argv)
{
    int oom = 0;
    char *c_command = wf_str_in(command, len_command);
    char **c_argv = argv == &mpiprivc_.argv_null ? NULL : wf_argv(argv, len_argv, 1, &oom);
    int rc = c_command == NULL || oom ? WF_OOM
                                      : MPI_Comm_spawn(c_command, c_argv, *maxprocs, *info, *root, *comm,
                                                       intercomm, wf_errcodes(errcodes));
    free(c_command);
    wf_argv_free(c_argv);
    wf_set(ierror, rc);
}
WF_NAMES(mpi_comm_spawn, MPI_COMM_SPAWN)

void pmpi_comm_spawn_multiple_(MPI_Fint *count, char *commands, char *argvs, MPI_Fint *maxprocs, MPI_Fint *infos,
                              MPI_Fint *root, MPI_Fint *comm, MPI_Fint *intercomm, MPI_Fint *errcodes,
                              MPI_Fint *ierror, size_t len_commands, size_t len_argvs)
{
    int n = *count > 0 ? *count : 0, oom = 0;
    char **c_commands = calloc((size_t)n + 1, sizeof *c_commands);
    char ***c_argvs = argvs == &mpiprivc_.argvs_null ? NULL : calloc((size_t)n + 1, sizeof *c_argvs);
    oom = c_commands == NULL || (argvs != &mpiprivc_.argvs_null && c_argvs == NULL);
    for (int i = 0; !oom && i < n; i++) {
        c_commands[i] = wf_str_in(commands + (size_t)i * len_commands, len_commands);
        oom = c_commands[i] == NULL;
        /* array_of_argv(count, *): command i's j-th argument is element
         * (i, j), count elements apart. */
        if (!oom && c_argvs != NULL)
            c_argvs[i] = wf_argv(argvs + (size_t)i * len_argvs, len_argvs, (size_t)n, &oom);
    }
    int rc = oom ? WF_OOM
                 : MPI_Comm_spawn_multiple(n, c_commands, c_argvs, maxprocs, infos, *root, *comm, intercomm,
                                           wf_errcodes(errcodes));
    for (int i = 0; i < n; i++) {
        if (c_commands != NULL)
            free(c_commands[i]);
        if (c_argvs != NULL)
            wf_argv_free(c_argvs[i]);
    }
    free(c_commands);
    free(c_argvs);
    wf_set(ierror, rc);
}
WF_NAMES(mpi_comm_spawn_multiple, MPI_COMM_SPAWN_MULTIPLE)
