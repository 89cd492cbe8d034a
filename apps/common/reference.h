/* Sequential references for the graph kernels, on a whole graph in one process: what
 * the apps' --validate and the tests compare the distributed results with. Written
 * from the textbook definitions, apart from the library's code. */
#ifndef COURIER_APPS_REFERENCE_H
#define COURIER_APPS_REFERENCE_H

#include <courier/graph.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A whole undirected multigraph: both directions of every edge, a self-loop twice. */
typedef struct ref_graph {
    uint64_t n;
    uint64_t *off, *adj; /* neighbours of v: adj[off[v] .. off[v + 1]) */
    float *w;            /* their weights, or NULL */
} ref_graph;

/* From edges[0 .. m) (weights may be NULL). Returns 0, or -1 when memory fails. */
int ref_graph_build(ref_graph *r, uint64_t n, const cr_edge *edges, const float *weights,
                    size_t m);
void ref_graph_free(ref_graph *r);

/* Dijkstra's distances from root (weight 1 for an unweighted graph; INFINITY when
 * unreachable) into dist[0 .. n). */
void ref_sssp(const ref_graph *r, uint64_t root, double *dist);
/* GAP's PageRank: `iterations` sweeps at most, stopping below the L1 `tolerance`;
 * Gauss-Seidel in vertex order (each new score read at once), each sweep followed by
 * the mass correction, as cr_graph_pagerank on one rank sweeps by default; else
 * Jacobi. Returns the sweeps done. */
int ref_pagerank(const ref_graph *r, double damping, int iterations, double tolerance,
                 bool gauss_seidel, double *score);
/* The L1 change one more serial iteration makes to `score` (GAP's check). */
double ref_pagerank_change(const ref_graph *r, double damping, const double *score);
/* Triangles of the simple graph (repeated edges and self-loops left out). */
uint64_t ref_triangles(const ref_graph *r);
/* Brandes' dependencies summed over the sources, the sources' own left out. */
void ref_betweenness(const ref_graph *r, const uint64_t *sources, size_t nsources,
                     double *score);

#endif
