/* Fortran glue for generalized requests: C calls the query, free and
 * cancel callbacks with C conventions; these trampolines call the Fortran
 * procedures (extra state by reference, a LOGICAL complete, an ierror
 * argument). The record is freed after the free callback, MPI's last call
 * for the request. As in MPICH, the callbacks get the caller's own
 * extra_state variable (its address is kept), so what they store there the
 * program sees: MPICH's test suite counts on it. */
#include <stdlib.h>
#include "glue.h"

typedef void (*wf_query_fn)(MPI_Aint *, MPI_Status *, MPI_Fint *);
typedef void (*wf_free_fn)(MPI_Aint *, MPI_Fint *);
typedef void (*wf_cancel_fn)(MPI_Aint *, MPI_Fint *, MPI_Fint *);

struct wf_grequest {
    wf_query_fn query;
    wf_free_fn free;
    wf_cancel_fn cancel;
    MPI_Aint *extra;
};

static int wf_query(void *extra, MPI_Status *status)
{
    struct wf_grequest *g = extra;
    MPI_Fint ierr = MPI_SUCCESS;
    g->query(g->extra, status, &ierr);
    return ierr;
}

static int wf_free(void *extra)
{
    struct wf_grequest *g = extra;
    MPI_Fint ierr = MPI_SUCCESS;
    g->free(g->extra, &ierr);
    free(g);
    return ierr;
}

static int wf_cancel(void *extra, int complete)
{
    struct wf_grequest *g = extra;
    MPI_Fint ierr = MPI_SUCCESS, c = complete != 0;
    g->cancel(g->extra, &c, &ierr);
    return ierr;
}

void pmpi_grequest_start_(void *query, void *freefn, void *cancel, MPI_Aint *extra, MPI_Fint *request,
                         MPI_Fint *ierror)
{
    struct wf_grequest *g = malloc(sizeof *g);
    if (g == NULL) {
        wf_set(ierror, WF_OOM);
        return;
    }
    g->query = (wf_query_fn)query;
    g->free = (wf_free_fn)freefn;
    g->cancel = (wf_cancel_fn)cancel;
    g->extra = extra;
    int rc = MPI_Grequest_start(wf_query, wf_free, wf_cancel, g, request);
    if (rc != MPI_SUCCESS)
        free(g);
    wf_set(ierror, rc);
}
WF_NAMES(mpi_grequest_start, MPI_GREQUEST_START)
