/* Attribute caching rules that programs and test suites lean on: a failing
 * copy callback fails the dup and yields a null handle; a failing delete
 * callback leaves the attribute in place; a keyval freed while attributes
 * use it lives on, and may be freed again by their delete callbacks; at
 * MPI_Finalize the attributes of MPI_COMM_SELF are deleted, last set first,
 * while MPI still runs. Passes on MPICH 4.0.2 too. */
#include "check.h"

#define NSELF 4
static int deleted[NSELF], order[NSELF], ndeleted, fail_delete = 1;

static int copy_fails(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag)
{
    (void)c, (void)k, (void)extra, (void)in, (void)out;
    *flag = 0;
    return MPI_ERR_OTHER;
}

static int delete_fails(MPI_Comm c, int k, void *v, void *extra)
{
    (void)c, (void)k, (void)v, (void)extra;
    return fail_delete ? MPI_ERR_OTHER : MPI_SUCCESS;
}

static int self_delete(MPI_Comm c, int k, void *v, void *extra)
{
    (void)c, (void)extra;
    int finalized = 1;
    MPI_Finalized(&finalized);
    int i = (int)(long)v;
    if (!finalized && i >= 0 && i < NSELF) {
        deleted[i]++;
        order[ndeleted++] = i;
    }
    MPI_Comm_free_keyval(&k); /* a second free, from the callback */
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm dup;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));

    int bomb;
    OK(MPI_Comm_create_keyval(copy_fails, delete_fails, &bomb, NULL));
    OK(MPI_Comm_set_attr(dup, bomb, (void *)1));
    CHECK(MPI_Comm_set_attr(dup, bomb, (void *)2) != MPI_SUCCESS, "a failing delete fails the set");
    CHECK(MPI_Comm_delete_attr(dup, bomb) != MPI_SUCCESS, "a failing delete fails the delete");
    void *v;
    int flag;
    OK(MPI_Comm_get_attr(dup, bomb, &v, &flag));
    CHECK(flag && v == (void *)1, "the attribute stays after a failed delete");
    MPI_Comm d2 = MPI_COMM_WORLD;
    CHECK(MPI_Comm_dup(dup, &d2) != MPI_SUCCESS, "a failing copy fails the dup");
    CHECK(d2 == MPI_COMM_NULL, "a failed dup yields MPI_COMM_NULL");
    fail_delete = 0;
    OK(MPI_Comm_free_keyval(&bomb));
    CHECK(bomb == MPI_KEYVAL_INVALID, "free_keyval resets the handle");
    OK(MPI_Comm_free(&dup)); /* runs the delete callback of the freed keyval */

    for (int i = 0; i < NSELF; i++) {
        int k;
        OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &k, NULL));
        OK(MPI_Comm_set_attr(MPI_COMM_SELF, k, (void *)(long)i));
        OK(MPI_Comm_free_keyval(&k));
    }
    MPI_Finalize();
    int good = ndeleted == NSELF;
    for (int i = 0; i < NSELF; i++)
        good = good && deleted[i] == 1 && order[i] == NSELF - 1 - i;
    if (!good) {
        fprintf(stderr, "rank %d: MPI_COMM_SELF's attributes were not deleted once each, last set first, before MPI_Finalize returned\n", rank);
        return 1;
    }
    if (rank == 0)
        printf("PASS attr\n");
    return 0;
}
