/* Neighbourhood collectives (MPI-4.0 §8.6) on Cartesian grids (periodic,
 * where a rank of 2 is both neighbours of the other; and not, with
 * MPI_PROC_NULL edges whose blocks stay untouched), on a distributed graph
 * and on a graph: blocking, nonblocking and persistent forms. */
#include "check.h"

static int rank, size;

static void periodic_ring(void)
{
    MPI_Comm ring;
    int dims[1] = {size}, periods[1] = {1};
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    /* Block 0 goes to the -1 neighbour, block 1 to the +1 neighbour. */
    int s[2] = {100 * rank, 100 * rank + 1}, r[2] = {-1, -1};
    OK(MPI_Neighbor_alltoall(s, 1, MPI_INT, r, 1, MPI_INT, ring));
    CHECK(r[0] == 100 * left + 1 && r[1] == 100 * right, "Neighbor_alltoall on a periodic ring keeps directions apart");
    int g[2] = {-1, -1};
    MPI_Request rq;
    OK(MPI_Ineighbor_allgather(&rank, 1, MPI_INT, g, 1, MPI_INT, ring, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK(g[0] == left && g[1] == right, "Ineighbor_allgather");
    /* Persistent: the send buffer is read at each start. */
    OK(MPI_Neighbor_alltoall_init(s, 1, MPI_INT, r, 1, MPI_INT, ring, MPI_INFO_NULL, &rq));
    for (int round = 1; round <= 2; round++) {
        s[0] = 100 * rank + 10 * round;
        s[1] = 100 * rank + 10 * round + 1;
        OK(MPI_Start(&rq));
        OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        CHECK(r[0] == 100 * left + 10 * round + 1 && r[1] == 100 * right + 10 * round, "Neighbor_alltoall_init");
    }
    OK(MPI_Request_free(&rq));
    OK(MPI_Comm_free(&ring));
}

static void open_grid(void)
{
    MPI_Comm grid;
    int dims[2] = {0, 0}, periods[2] = {0, 0}, coords[2];
    OK(MPI_Dims_create(size, 2, dims));
    OK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid));
    OK(MPI_Cart_coords(grid, rank, 2, coords));
    int nb[4];
    for (int d = 0; d < 2; d++)
        OK(MPI_Cart_shift(grid, d, 1, &nb[2 * d], &nb[2 * d + 1]));
    int g[4] = {-7, -7, -7, -7};
    OK(MPI_Neighbor_allgather(&rank, 1, MPI_INT, g, 1, MPI_INT, grid));
    for (int k = 0; k < 4; k++)
        CHECK(g[k] == (nb[k] == MPI_PROC_NULL ? -7 : nb[k]), "Neighbor_allgather on an open grid");
    /* allgatherv: two ints from each neighbour, placed back to front. */
    int two[2] = {rank, -rank}, v[8], counts[4] = {2, 2, 2, 2}, displs[4] = {6, 4, 2, 0};
    for (int i = 0; i < 8; i++)
        v[i] = 99;
    OK(MPI_Neighbor_allgatherv(two, 2, MPI_INT, v, counts, displs, MPI_INT, grid));
    for (int k = 0; k < 4; k++) {
        int want = nb[k] == MPI_PROC_NULL ? 99 : nb[k];
        CHECK(v[displs[k]] == want && v[displs[k] + 1] == (nb[k] == MPI_PROC_NULL ? 99 : -nb[k]), "Neighbor_allgatherv");
    }
    OK(MPI_Comm_free(&grid));
}

static void dist_graph(void)
{
    /* Each rank hears from rank-1 and rank-2 (mod size) and sends to rank+1 and rank+2. */
    int src[2] = {(rank + size - 1) % size, (rank + size - 2) % size}, dst[2] = {(rank + 1) % size, (rank + 2) % size};
    MPI_Comm g;
    OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, MPI_UNWEIGHTED, 2, dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g));
    /* Block k (to dst[k]) carries 1000*rank + k: the receiver learns which edge it came over. */
    int s[2] = {1000 * rank, 1000 * rank + 1}, r[2] = {-1, -1}, ones[2] = {1, 1}, at[2] = {0, 1};
    MPI_Request rq;
    OK(MPI_Ineighbor_alltoallv(s, ones, at, MPI_INT, r, ones, at, MPI_INT, g, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    if (size >= 3)
        CHECK(r[0] == 1000 * src[0] && r[1] == 1000 * src[1] + 1, "Ineighbor_alltoallv on a distributed graph");
    /* alltoallw: doubles from rank-1, ints from rank-2, byte displacements. */
    struct {
        double d;
        int i;
    } in = {-1, -1};
    double sd = rank + 0.5;
    int si = rank * 3;
    MPI_Aint sdis[2] = {0, 0}, rdis[2] = {0, (MPI_Aint)((char *)&in.i - (char *)&in.d)};
    MPI_Datatype st[2] = {MPI_DOUBLE, MPI_INT}, rt[2] = {MPI_DOUBLE, MPI_INT};
    void *sbufs[2] = {&sd, &si};
    (void)sbufs;
    /* One send buffer: the double at 0, the int after it. */
    char sbuf[16];
    memcpy(sbuf, &sd, sizeof sd);
    memcpy(sbuf + 8, &si, sizeof si);
    sdis[1] = 8;
    OK(MPI_Neighbor_alltoallw(sbuf, ones, sdis, st, &in, ones, rdis, rt, g));
    if (size >= 3)
        CHECK(in.d == src[0] + 0.5 && in.i == src[1] * 3, "Neighbor_alltoallw");
    OK(MPI_Comm_free(&g));
}

static void graph(void)
{
    /* A star: node 0 linked with every other node. */
    int *index = malloc(sizeof(int) * (size_t)size), *edges = malloc(sizeof(int) * 2 * (size_t)size), e = 0;
    for (int i = 0; i < size; i++) {
        if (i == 0)
            for (int j = 1; j < size; j++)
                edges[e++] = j;
        else
            edges[e++] = 0;
        index[i] = e;
    }
    MPI_Comm star;
    OK(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &star));
    int n = rank == 0 ? size - 1 : (size > 1 ? 1 : 0);
    int *r = malloc(sizeof(int) * (size_t)(n + 1));
    OK(MPI_Neighbor_allgather(&rank, 1, MPI_INT, r, 1, MPI_INT, star));
    for (int k = 0; k < n; k++)
        CHECK(r[k] == (rank == 0 ? k + 1 : 0), "Neighbor_allgather on a graph");
    OK(MPI_Comm_free(&star));
    free(index), free(edges), free(r);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    periodic_ring();
    open_grid();
    dist_graph();
    graph();
    pass("neighbor");
    MPI_Finalize();
    return 0;
}
