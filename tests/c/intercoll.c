/* Collectives on an inter-communicator (MPI-4.0 §6.6 and §5.2.2): the
 * world split into even and odd ranks joined by MPI_Intercomm_create.
 * Each group's result comes from the other group: rooted calls take
 * MPI_ROOT at the root, MPI_PROC_NULL at the rest of its group and the
 * root's remote rank in the other group. Blocking, nonblocking and
 * persistent forms. */
#include "check.h"

static int wrank, wsize, rank, size, rsize, even;
static MPI_Comm inter;

/* The world rank of rank r of the remote group. */
static int remote_world(int r)
{
    return 2 * r + (even ? 1 : 0);
}

static void rooted(void)
{
    /* Bcast from rank 0 of the even group. */
    int v = -1, root;
    if (even)
        root = rank == 0 ? MPI_ROOT : MPI_PROC_NULL;
    else
        root = 0;
    if (even && rank == 0)
        v = 4242;
    OK(MPI_Bcast(&v, 1, MPI_INT, root, inter));
    CHECK(even ? (rank == 0 ? v == 4242 : v == -1) : v == 4242, "inter Bcast");

    /* Reduce to rank 0 of the odd group: the even group's world ranks summed. */
    int sum = -1, mine = wrank;
    int rroot = even ? 0 : (rank == 0 ? MPI_ROOT : MPI_PROC_NULL);
    OK(MPI_Reduce(&mine, &sum, 1, MPI_INT, MPI_SUM, rroot, inter));
    if (!even && rank == 0) {
        int want = 0;
        for (int r = 0; r < rsize; r++)
            want += remote_world(r);
        CHECK(sum == want, "inter Reduce");
    }

    /* Gather to the odd group's rank 0, scatter back from it. */
    int *all = malloc(sizeof(int) * (size_t)(rsize + 1));
    for (int i = 0; i < rsize; i++)
        all[i] = -1;
    OK(MPI_Gather(&mine, 1, MPI_INT, all, 1, MPI_INT, rroot, inter));
    if (!even && rank == 0)
        for (int r = 0; r < rsize; r++)
            CHECK(all[r] == remote_world(r), "inter Gather");
    int back = -1;
    if (!even && rank == 0)
        for (int r = 0; r < rsize; r++)
            all[r] = 1000 + r;
    OK(MPI_Scatter(all, 1, MPI_INT, &back, 1, MPI_INT, rroot, inter));
    if (even)
        CHECK(back == 1000 + rank, "inter Scatter");
    free(all);
}

static void all_of_them(void)
{
    /* Allreduce: each group gets the sum of the other group's world ranks. */
    int mine = wrank, sum = -1, want = 0;
    for (int r = 0; r < rsize; r++)
        want += remote_world(r);
    OK(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, inter));
    CHECK(sum == want, "inter Allreduce");

    int *ag = malloc(sizeof(int) * (size_t)rsize), *s = malloc(sizeof(int) * (size_t)rsize), *r = malloc(sizeof(int) * (size_t)rsize);
    OK(MPI_Allgather(&mine, 1, MPI_INT, ag, 1, MPI_INT, inter));
    for (int i = 0; i < rsize; i++)
        CHECK(ag[i] == remote_world(i), "inter Allgather");
    for (int i = 0; i < rsize; i++)
        s[i] = 100 * wrank + i;
    OK(MPI_Alltoall(s, 1, MPI_INT, r, 1, MPI_INT, inter));
    for (int i = 0; i < rsize; i++)
        CHECK(r[i] == 100 * remote_world(i) + rank, "inter Alltoall");
    OK(MPI_Barrier(inter));

    /* Nonblocking and persistent. */
    MPI_Request rq;
    sum = -1;
    OK(MPI_Iallreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, inter, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK(sum == want, "inter Iallreduce");
    OK(MPI_Allgather_init(&mine, 1, MPI_INT, ag, 1, MPI_INT, inter, MPI_INFO_NULL, &rq));
#ifdef WANMPI
    int rounds = 2;
#else
    int rounds = 1; /* MPICH 4.0.2 gives the first round's data again on an inter-communicator */
#endif
    for (int round = 0; round < rounds; round++) {
        mine = wrank + 10 * round;
        OK(MPI_Start(&rq));
        OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        for (int i = 0; i < rsize; i++)
            CHECK(ag[i] == remote_world(i) + 10 * round, "inter Allgather_init");
    }
    OK(MPI_Request_free(&rq));
    OK(MPI_Ibarrier(inter, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    free(ag), free(s), free(r);
}

/* Splitting the inter-communicator, and MPI-4's creation from groups. */
static void creation(void)
{
    /* Color by parity of the group rank: color c pairs the ranks of color c on both sides. */
    MPI_Comm half;
    OK(MPI_Comm_split(inter, rank % 2, -rank, &half));
    int theirs = (rsize + 1 - rank % 2) / 2;
    if (theirs == 0) {
        CHECK(half == MPI_COMM_NULL, "no partner of this color: MPI_COMM_NULL");
    } else {
        int flag, hs, hr, hrs;
        OK(MPI_Comm_test_inter(half, &flag));
        OK(MPI_Comm_size(half, &hs));
        OK(MPI_Comm_rank(half, &hr));
        OK(MPI_Comm_remote_size(half, &hrs));
        CHECK(flag && hs == (size + 1 - rank % 2) / 2 && hrs == theirs, "MPI_Comm_split of an inter-communicator");
        CHECK(hr == hs - 1 - rank / 2, "keys order the new group (negated ranks: reversed)");
        int sum = -1, mine = wrank;
        OK(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, half));
        int want = 0;
        for (int r = rank % 2; r < rsize; r += 2)
            want += remote_world(r);
        CHECK(sum == want, "traffic on the split inter-communicator");
        OK(MPI_Comm_free(&half));
    }

    /* The same two groups as an inter-communicator made from groups alone. */
    MPI_Group world, evens, odds;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    int ne = (wsize + 1) / 2, no = wsize / 2, *e = malloc(sizeof(int) * (size_t)ne), *o = malloc(sizeof(int) * (size_t)no);
    for (int i = 0; i < ne; i++)
        e[i] = 2 * i;
    for (int i = 0; i < no; i++)
        o[i] = 2 * i + 1;
    OK(MPI_Group_incl(world, ne, e, &evens));
    OK(MPI_Group_incl(world, no, o, &odds));
    MPI_Comm ic, mine;
    OK(MPI_Intercomm_create_from_groups(even ? evens : odds, 0, even ? odds : evens, 0, "wanmpi-test", MPI_INFO_NULL,
                                        MPI_ERRORS_ARE_FATAL, &ic));
    int v = even && rank == 0 ? 31 : -1;
    OK(MPI_Bcast(&v, 1, MPI_INT, even ? (rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, ic));
    CHECK(even ? (rank == 0 || v == -1) : v == 31, "a bcast over MPI_Intercomm_create_from_groups");
    OK(MPI_Comm_create_from_group(even ? evens : odds, "wanmpi-half", MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &mine));
    int ms;
    OK(MPI_Comm_size(mine, &ms));
    CHECK(ms == size, "MPI_Comm_create_from_group");
    OK(MPI_Comm_free(&mine));
    OK(MPI_Comm_free(&ic));
    OK(MPI_Group_free(&evens));
    OK(MPI_Group_free(&odds));
    OK(MPI_Group_free(&world));
    free(e), free(o);
}

/* Reduce-scatter (MPI-4.0 §6.11.1): each group gets the blocks of the
 * reduction of the other group's vectors. Both groups' vectors have the
 * same length (7 elements, or 2 * rsize per rank for the block form);
 * element j at world rank w is 100 * w + j. */
static void reduce_scatter(void)
{
    enum { TOTAL = 7 };
    int counts[8], send[64], got[64], off = 0, sum_w = 0;
    CHECK(size <= 8, "at most 8 ranks per group");
    for (int k = 0; k < size; k++)
        counts[k] = TOTAL / size + (k < TOTAL % size);
    for (int k = 0; k < rank; k++)
        off += counts[k];
    for (int r = 0; r < rsize; r++)
        sum_w += 100 * remote_world(r);
    for (int j = 0; j < TOTAL; j++)
        send[j] = 100 * wrank + j;
    for (int nb = 0; nb < 2; nb++) {
        for (int i = 0; i < 64; i++)
            got[i] = -1;
        if (nb) {
            MPI_Request r;
            OK(MPI_Ireduce_scatter(send, got, counts, MPI_INT, MPI_SUM, inter, &r));
            OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        } else {
            OK(MPI_Reduce_scatter(send, got, counts, MPI_INT, MPI_SUM, inter));
        }
        for (int i = 0; i < counts[rank]; i++)
            CHECK(got[i] == sum_w + rsize * (off + i), "inter Reduce_scatter block");
        CHECK(got[counts[rank]] == -1, "inter Reduce_scatter writes only its block");
    }
    int per = 2 * rsize, n = per * size;
    CHECK(n <= 64, "block vectors fit");
    for (int j = 0; j < n; j++)
        send[j] = 100 * wrank + j;
    for (int nb = 0; nb < 2; nb++) {
        for (int i = 0; i < 64; i++)
            got[i] = -1;
        if (nb) {
            MPI_Request r;
            OK(MPI_Ireduce_scatter_block(send, got, per, MPI_INT, MPI_SUM, inter, &r));
            OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        } else {
            OK(MPI_Reduce_scatter_block(send, got, per, MPI_INT, MPI_SUM, inter));
        }
        for (int i = 0; i < per; i++)
            CHECK(got[i] == sum_w + rsize * (rank * per + i), "inter Reduce_scatter_block");
        CHECK(got[per] == -1, "inter Reduce_scatter_block writes only its block");
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    CHECK(wsize >= 2, "at least 2 ranks");
    even = wrank % 2 == 0;
    MPI_Comm local;
    OK(MPI_Comm_split(MPI_COMM_WORLD, even ? 0 : 1, wrank, &local));
    OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, even ? 1 : 0, 77, &inter));
    OK(MPI_Comm_rank(inter, &rank));
    OK(MPI_Comm_size(inter, &size));
    OK(MPI_Comm_remote_size(inter, &rsize));
    rooted();
    all_of_them();
    reduce_scatter();
    creation();
    OK(MPI_Comm_free(&inter));
    OK(MPI_Comm_free(&local));
    pass("intercoll");
    MPI_Finalize();
    return 0;
}
