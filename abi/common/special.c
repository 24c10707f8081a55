/* Procedures whose translation depends on more than their parameters'
 * names: attribute values that carry ranks or constants, a derived type's
 * contents (its integers carry constants of the combiner), spawn's error
 * codes, and the helpers the generated code calls. */
#include <pthread.h>

#include "wabi.h"

int wo_peer_count(int comm, int neighbor, int side)
{
    int n = 0, flag = 0;
    if (!neighbor) {
        if (wcore_PMPI_Comm_test_inter(comm, &flag) != CORE_MPI_SUCCESS)
            return 0;
        if (flag)
            wcore_PMPI_Comm_remote_size(comm, &n);
        else
            wcore_PMPI_Comm_size(comm, &n);
        return n;
    }
    int topo = CORE_MPI_UNDEFINED;
    if (wcore_PMPI_Topo_test(comm, &topo) != CORE_MPI_SUCCESS)
        return 0;
    if (topo == CORE_MPI_CART) {
        wcore_PMPI_Cartdim_get(comm, &n);
        return 2 * n;
    }
    if (topo == CORE_MPI_GRAPH) {
        int rank = 0;
        wcore_PMPI_Comm_rank(comm, &rank);
        wcore_PMPI_Graph_neighbors_count(comm, rank, &n);
        return n;
    }
    if (topo == CORE_MPI_DIST_GRAPH) {
        int in = 0, out = 0, weighted = 0;
        wcore_PMPI_Dist_graph_neighbors_count(comm, &in, &out, &weighted);
        return side == WO_OUT ? out : in;
    }
    return 0;
}

/* ---- attributes ---- */

/* The values of predefined attributes that differ between the ABIs (a
 * rank or MPI_PROC_NULL; the memory model), kept where the program's
 * pointer can go on pointing at them. */
static int host_value, io_value, model_value, flavor_value;

static void predefined_value(int keyval, void *attribute_val, int flag)
{
    if (!flag || !attribute_val)
        return;
    int **out = attribute_val;
    if (keyval == MPI_HOST) {
        host_value = wo_rank_out(**out);
        *out = &host_value;
    } else if (keyval == MPI_IO) {
        io_value = wo_rank_out(**out);
        *out = &io_value;
    } else if (keyval == MPI_WIN_MODEL) {
        model_value = wo_model_out(**out);
        *out = &model_value;
    } else if (keyval == MPI_WIN_CREATE_FLAVOR) {
        flavor_value = wo_flavor_out(**out);
        *out = &flavor_value;
    }
}

int PMPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag)
{
    int rc = wcore_PMPI_Comm_get_attr(wo_comm_in(comm), wo_keyval_in(comm_keyval), attribute_val, flag);
    if (rc == CORE_MPI_SUCCESS && flag)
        predefined_value(comm_keyval, attribute_val, *flag);
    return wo_err_out(rc);
}
WO_WEAK(Comm_get_attr)

int PMPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
    return PMPI_Comm_get_attr(comm, keyval, attribute_val, flag);
}
WO_WEAK(Attr_get)

int PMPI_Win_get_attr(MPI_Win win, int win_keyval, void *attribute_val, int *flag)
{
    int rc = wcore_PMPI_Win_get_attr(wo_win_in(win), wo_keyval_in(win_keyval), attribute_val, flag);
    if (rc == CORE_MPI_SUCCESS && flag)
        predefined_value(win_keyval, attribute_val, *flag);
    return wo_err_out(rc);
}
WO_WEAK(Win_get_attr)

int PMPI_Type_get_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val, int *flag)
{
    return wo_err_out(wcore_PMPI_Type_get_attr(wo_type_in(datatype), type_keyval, attribute_val, flag));
}
WO_WEAK(Type_get_attr)

/* ---- a derived type's contents ---- */

/* Subarray and darray keep their order (and darray its distributions and
 * distribution arguments) among the integers: those are constants. */
static void contents_out(int combiner, int *ints, int n)
{
    if (combiner == CORE_MPI_COMBINER_SUBARRAY && n >= 1) {
        int nd = ints[0];
        if (1 + 3 * nd < n)
            ints[1 + 3 * nd] = wo_order_out(ints[1 + 3 * nd]);
    } else if (combiner == CORE_MPI_COMBINER_DARRAY && n >= 3) {
        int nd = ints[2];
        for (int i = 0; i < nd && 3 + nd + i < n; i++)
            ints[3 + nd + i] = wo_distrib_out(ints[3 + nd + i]);
        for (int i = 0; i < nd && 3 + 2 * nd + i < n; i++)
            ints[3 + 2 * nd + i] = wo_darg_out(ints[3 + 2 * nd + i]);
        if (3 + 4 * nd < n)
            ints[3 + 4 * nd] = wo_order_out(ints[3 + 4 * nd]);
    }
}

static int combiner_of(int type)
{
    int ni = 0, na = 0, nd = 0, combiner = 0;
    wcore_PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
    return combiner;
}

int PMPI_Type_get_contents(MPI_Datatype mtype, int max_integers, int max_addresses, int max_datatypes,
                           int array_of_integers[], MPI_Aint array_of_addresses[], MPI_Datatype array_of_datatypes[])
{
    int n = wo_len(max_datatypes), t = wo_type_in(mtype);
    WO_TMP(int, types, n);
    int rc = wcore_PMPI_Type_get_contents(t, max_integers, max_addresses, max_datatypes, array_of_integers,
                                          array_of_addresses, types);
    if (rc == CORE_MPI_SUCCESS) {
        for (int i = 0; i < n; i++)
            array_of_datatypes[i] = wo_type_out(types[i]);
        contents_out(combiner_of(t), array_of_integers, max_integers);
    }
    WO_FREE(types);
    return wo_err_out(rc);
}
WO_WEAK(Type_get_contents)

int PMPI_Type_get_contents_c(MPI_Datatype datatype, MPI_Count max_integers, MPI_Count max_addresses,
                             MPI_Count max_large_counts, MPI_Count max_datatypes, int array_of_integers[],
                             MPI_Aint array_of_addresses[], MPI_Count array_of_large_counts[],
                             MPI_Datatype array_of_datatypes[])
{
    int n = wo_len(max_datatypes), t = wo_type_in(datatype);
    WO_TMP(int, types, n);
    int rc = wcore_PMPI_Type_get_contents_c(t, max_integers, max_addresses, max_large_counts, max_datatypes,
                                            array_of_integers, array_of_addresses, array_of_large_counts, types);
    if (rc == CORE_MPI_SUCCESS) {
        for (int i = 0; i < n; i++)
            array_of_datatypes[i] = wo_type_out(types[i]);
        contents_out(combiner_of(t), array_of_integers, wo_len(max_integers));
    }
    WO_FREE(types);
    return wo_err_out(rc);
}
WO_WEAK(Type_get_contents_c)

/* ---- spawn ---- */

int PMPI_Comm_spawn(const char *command, char *argv[], int maxprocs, MPI_Info info, int root, MPI_Comm comm,
                    MPI_Comm *intercomm, int array_of_errcodes[])
{
    int c = 0;
    int rc = wcore_PMPI_Comm_spawn(command, argv, maxprocs, wo_info_in(info), wo_rank_in(root), wo_comm_in(comm),
                                   &c, array_of_errcodes);
    if (intercomm)
        *intercomm = wo_comm_out(c);
    if (array_of_errcodes)
        for (int i = 0; i < maxprocs; i++)
            array_of_errcodes[i] = wo_err_out(array_of_errcodes[i]);
    return wo_err_out(rc);
}
WO_WEAK(Comm_spawn)

int PMPI_Comm_spawn_multiple(int count, char *array_of_commands[], char **array_of_argv[],
                             const int array_of_maxprocs[], const MPI_Info array_of_info[], int root,
                             MPI_Comm comm, MPI_Comm *intercomm, int array_of_errcodes[])
{
    int n = array_of_info ? wo_len(count) : 0, c = 0, procs = 0;
    WO_TMP(int, infos, n);
    for (int i = 0; i < n; i++)
        infos[i] = wo_info_in(array_of_info[i]);
    for (int i = 0; array_of_maxprocs && i < count; i++)
        procs += array_of_maxprocs[i];
    int rc = wcore_PMPI_Comm_spawn_multiple(count, array_of_commands, array_of_argv, array_of_maxprocs,
                                            array_of_info ? infos : NULL, wo_rank_in(root), wo_comm_in(comm), &c,
                                            array_of_errcodes);
    if (intercomm)
        *intercomm = wo_comm_out(c);
    if (array_of_errcodes)
        for (int i = 0; i < procs; i++)
            array_of_errcodes[i] = wo_err_out(array_of_errcodes[i]);
    WO_FREE(infos);
    return wo_err_out(rc);
}
WO_WEAK(Comm_spawn_multiple)

int PMPI_Pcontrol(const int level, ...)
{
    return wo_err_out(wcore_PMPI_Pcontrol(level));
}
WO_WEAK(Pcontrol)

/* ---- datatypes the core lacks ---- */

/* One zero-size type for them all, made once MPI is initialized; before
 * that, no valid handle (the call fails as on any bad datatype). */
int wo_unavailable_type(void)
{
    static int made;
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    if (!made) {
        int t = 0, init = 0;
        wcore_PMPI_Initialized(&init);
        if (init && wcore_PMPI_Type_contiguous(0, CORE_MPI_BYTE, &t) == CORE_MPI_SUCCESS &&
            wcore_PMPI_Type_commit(&t) == CORE_MPI_SUCCESS)
            made = t;
    }
    pthread_mutex_unlock(&lock);
    return made;
}
