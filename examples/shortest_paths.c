/* Shortest paths on a weighted grid: vertex (x, y) of a W x W grid is joined to its
 * right neighbour by an edge of weight 1 and to the one below by an edge of weight 2,
 * so its distance from the corner (0, 0) is exactly x + 2y. Each rank holds every
 * P-th edge, as a file reader would; the graph is built, made simple, and
 * delta-stepping (cr_graph_sssp) finds the distances, which are checked exactly.
 *
 *   scripts/mpirun.sh -np 4 build/examples/shortest_paths [WIDTH]
 */
#include <courier.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The edges of the grid that rank `rank` of `size` holds: edge j for j = rank mod size. */
static void grid_edges(uint64_t w, int rank, int size, cr_edge_list *out)
{
    uint64_t m = 2 * w * w; /* two candidate edges per vertex, some off the grid */
    *out = (cr_edge_list){.nvertices = w * w};
    out->cap = m / (uint64_t)size + 1;
    out->edges = malloc(out->cap * sizeof *out->edges);
    out->weights = malloc(out->cap * sizeof *out->weights);
    if (!out->edges || !out->weights) {
        fprintf(stderr, "shortest_paths: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (uint64_t j = (uint64_t)rank; j < m; j += (uint64_t)size) {
        uint64_t v = j / 2, x = v % w, y = v / w;
        bool right = j % 2 == 0;
        if (right ? x + 1 == w : y + 1 == w)
            continue; /* off the grid */
        out->edges[out->count] = (cr_edge){v, right ? v + 1 : v + w};
        out->weights[out->count++] = right ? 1.0f : 2.0f;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    uint64_t w = argc > 1 ? strtoull(argv[1], NULL, 10) : 300;
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, NULL);
    int rank = cr_comm_rank(comm), size = cr_comm_size(comm);
    if (w < 2 || w > 100000) {
        if (rank == 0)
            fprintf(stderr, "shortest_paths: WIDTH must be 2 to 100000, not %s\n", argv[1]);
        cr_comm_destroy(comm);
        MPI_Finalize();
        return 2;
    }
    cr_edge_list edges;
    grid_edges(w, rank, size, &edges);
    /* collective; the build takes the list (malloc'd above) and frees it */
    cr_graph *g = cr_graph_build_consume(comm, &edges);
    cr_graph_simplify(g);

    uint64_t first = cr_graph_first(g), count = cr_graph_local_count(g);
    double *dist = malloc((count + 1) * sizeof *dist);
    char err[256];
    if (!dist || cr_graph_sssp(g, NULL, 0, dist, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "shortest_paths: %s\n", dist ? err : "out of memory");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    uint64_t wrong = 0, all_wrong;
    double far = 0, farthest;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t v = first + i;
        double want = (double)(v % w) + 2.0 * (double)(v / w);
        wrong += dist[i] != want;
        far = dist[i] > far ? dist[i] : far;
    }
    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&far, &farthest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("shortest paths: %llu vertices on %d ranks, farthest at %g; %s\n",
               (unsigned long long)(w * w), size, farthest,
               all_wrong ? "WRONG distances" : "every distance exact");
    free(dist);
    cr_graph_destroy(g);
    cr_comm_destroy(comm); /* collective */
    MPI_Finalize();
    return all_wrong ? 1 : 0;
}
