/* Courier graphs: generators, edge-list files, a distributed CSR graph built through
 * the mailbox, and a breadth-first search with Graph500 validation.
 *
 * Generators are communication-free: edge i of a graph is a pure function of the
 * seed and i, and rank r of P generates edges [i*r/P ...), so the same edge multiset
 * comes out for any number of ranks (docs/graph.md).
 *
 * Errors (docs/architecture.md): what depends on input (parameters, files, weights,
 * a root or source that is not a vertex) returns -1 with one line in `err`, the same
 * on every rank for collective calls; misuse ends the job with one line. */
#ifndef COURIER_GRAPH_H
#define COURIER_GRAPH_H

#include "courier/darray.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_comm cr_comm;

/* ---------------------------------------------------------------- edge lists */

/* The most vertices a graph may have (ids below 2^62): the readers refuse larger ids
 * and headers, and cr_graph_build ends the job with one line on a larger count. */
#define CR_GRAPH_MAX_VERTICES ((uint64_t)1 << 62)

typedef struct cr_edge {
    uint64_t u, v;
} cr_edge;

/* A rank's share of a graph's edges. weights is NULL for unweighted graphs. */
typedef struct cr_edge_list {
    cr_edge *edges;
    float *weights;
    size_t count, cap;
    uint64_t nvertices; /* ids are in [0, nvertices) */
} cr_edge_list;

void cr_graph_edges_free(cr_edge_list *list);

typedef enum cr_gen_kind {
    CR_GEN_RMAT, /* Kronecker / R-MAT with Graph500 parameters */
    CR_GEN_GNM,  /* m edges with uniform endpoints */
    CR_GEN_RGG,  /* random geometric graph in the unit square */
} cr_gen_kind;

typedef struct cr_gen_params {
    cr_gen_kind kind;
    int scale;          /* 2^scale vertices, 1 .. 40 (RGG: 1 .. 26) */
    double edgefactor;  /* edges = edgefactor * 2^scale (RGG: the target average degree) */
    uint64_t seed;
    double a, b, c;     /* R-MAT quadrant probabilities (d = 1 - a - b - c) */
    bool permute;       /* R-MAT: relabel vertices by a seeded bijection */
    bool weights;       /* one weight per edge, from the seed: uniform in [0, 1) */
    uint32_t weight_max; /* with weights: 0 (the default) as above, or k > 0 for integers
                            uniform in [1, k], exact in a float (GAP draws 1 .. 255;
                            at most 2^24) */
    bool spatial_ids;   /* RGG: number the points cell by cell (strips of the square),
                           so that a rank's block of ids is a region of it, as a
                           distributed generator numbers them; the same graph
                           relabelled, each edge keeping its weight (default false) */
} cr_gen_params;

/* Defaults: R-MAT, scale 16, edge factor 16, seed 1, A, B, C = 0.57, 0.19, 0.19,
 * permuted, unweighted, RGG ids by point. */
void cr_graph_gen_params_init(cr_gen_params *p);

/* Generate rank `rank`'s share of the graph among `size` ranks. Returns 0, or -1
 * with a one-line message in err for bad parameters. */
int cr_graph_generate(const cr_gen_params *p, int rank, int size, cr_edge_list *out, char *err,
                      size_t errlen);

/* Read this rank's share of an edge-list file. Formats:
 *   CR_FILE_TEXT      "u v" or "u v w" per line; '#' starts a comment; or a Matrix
 *                     Market coordinate file (its banner says so; ids from 1);
 *   CR_FILE_BINARY    Courier's binary form (cr_graph_write_edges);
 *   CR_FILE_GRAPH500  the Graph500 reference's dump: 12 bytes per edge, three
 *                     little-endian uint32 (v0 low, v1 low, high: bits 32..47 of v0
 *                     in its low 16 bits, of v1 in its high 16 bits);
 *   CR_FILE_AUTO      binary if the file starts with Courier's magic, Graph500 if the
 *                     name ends in ".g500", text otherwise.
 * `weights_path` (Graph500 only, may be NULL): float32 weights, one per edge.
 * Each rank parses the text lines that begin in its 1/size of the file's bytes
 * (cr_io_read_share), after the file's first lines (read by every rank) settle its
 * form; binary and Graph500 files are read in blocks of records. nvertices is 1 + the largest id this rank
 * saw (binary: from the header); cr_graph_build takes the maximum over ranks.
 * Returns 0, or -1 with a one-line error naming the file (and line). A malformed
 * line is reported by the rank that reads it: the caller makes the ranks agree
 * (the lowest failing rank's message names the file's first bad line). Local. */
typedef enum cr_file_format { CR_FILE_AUTO, CR_FILE_TEXT, CR_FILE_BINARY, CR_FILE_GRAPH500 } cr_file_format;
int cr_graph_read_edges(const char *path, cr_file_format format, const char *weights_path,
                        int rank, int size, cr_edge_list *out, char *err, size_t errlen);

/* Write an edge list (all of it, from one process) as text or binary. */
int cr_graph_write_edges(const char *path, cr_file_format format, const cr_edge_list *list,
                         char *err, size_t errlen);

/* ---------------------------------------------------------------- distributed graph */

typedef struct cr_graph cr_graph;

/* Build the undirected graph whose edges are the union of every rank's `local`
 * edges: vertices are block-distributed (the first nvertices % P ranks own one
 * more), each edge is sent through `comm` to the owners of both ends and stored in
 * both directions (self-loops twice too, so degrees count edge ends). Collective. */
cr_graph *cr_graph_build(cr_comm *comm, const cr_edge_list *local);

/* cr_graph_build for a caller that is done with its list: the build takes it and
 * leaves it empty (freed; nvertices kept). The list's arrays must come from malloc,
 * as those of the readers and generators do, with room for cap (at least count). While the adjacency is filled the list is
 * held packed to 4-byte ids (when the graph has at most 2^32 vertices) and the rest
 * of its memory is returned to the system, so the build's peak is the graph plus
 * half the list, not the graph plus the list (docs/graph.md). Collective. */
cr_graph *cr_graph_build_consume(cr_comm *comm, cr_edge_list *local);

/* How the edges reach their owners: one cr_async per edge half (the default), or
 * bucketed by owner and moved with one cr_nbx_exchange (docs/graph.md compares
 * the two). */
typedef enum cr_graph_shuffle { CR_SHUFFLE_MAILBOX, CR_SHUFFLE_EXCHANGE } cr_graph_shuffle;
cr_graph *cr_graph_build_with(cr_comm *comm, const cr_edge_list *local, cr_graph_shuffle shuffle);

/* Read an edge-list file (the forms and shares of cr_graph_read_edges) and build its
 * graph without holding the edge list: the file is read three times in chunks of
 * 1 MiB (the vertex count, the degrees, the edges), so a rank's peak is its part of
 * the graph plus buffers, where cr_graph_read_edges and cr_graph_build_consume hold
 * the list (16 bytes an edge) while the graph is built. The graph is the one
 * cr_graph_build makes from the same file. `o` may be NULL (CR_FILE_AUTO, no weights
 * file, no check). *edges_read (may be NULL): the file's edges over all ranks.
 * Collective. A bad file, or one the check refuses: NULL on every rank, err holding
 * one line; a file that changes between the readings ends the job with one line. */
typedef struct cr_graph_read_opts {
    cr_file_format format;    /* CR_FILE_AUTO */
    const char *weights_path; /* Graph500 only, or NULL */
    uint64_t nvertices;       /* 0: 1 + the largest id; else this many (ids below it) */
    /* Called on every rank after the first reading, with 1 + the largest id and the
     * edges over all ranks, before anything is allocated for them: NULL to go on, or
     * a one-line refusal (the same on every rank). May be NULL. */
    const char *(*check)(void *user, uint64_t nvertices, uint64_t edges);
    void *user;
} cr_graph_read_opts;
cr_graph *cr_graph_read(cr_comm *comm, const char *path, const cr_graph_read_opts *o,
                        uint64_t *edges_read, char *err, size_t errlen);
void cr_graph_destroy(cr_graph *g);

/* Make g the simple graph under it, as GAP's builder does: self-loops and repeated
 * edges removed (of a repeated weighted edge, the lightest copy stays), each list
 * sorted by neighbour (weighted: lightest first, ties by neighbour). Local: both ends
 * of an edge hold the same copies, so the ranks drop them alike without a message.
 * The kernels then run on the simple graph; without it, on the multigraph. */
void cr_graph_simplify(cr_graph *g);

uint64_t cr_graph_vertices(const cr_graph *g);
uint64_t cr_graph_first(const cr_graph *g);       /* global id of my first vertex */
uint64_t cr_graph_local_count(const cr_graph *g); /* vertices I own */
int cr_graph_owner(const cr_graph *g, uint64_t v);
/* How many neighbours my local vertex i has (a repeated edge counted each time, a
 * self-loop twice), and the k-th of them (k below that) as a global id. The graph
 * keeps its lists as 4-byte ids when it has fewer than 2^32 vertices, 8-byte ones
 * otherwise, so it hands out ids one at a time. Local. */
uint64_t cr_graph_degree(const cr_graph *g, uint64_t i);
uint64_t cr_graph_neighbour(const cr_graph *g, uint64_t i, uint64_t k);
cr_comm *cr_graph_comm(const cr_graph *g);
/* This rank's edges as the graph holds them, each once (from its smaller end's list;
 * a self-loop's two ends make one edge), with their weights when the graph has them;
 * nvertices is the graph's. `out` is overwritten; free it with cr_graph_edges_free.
 * Local. */
void cr_graph_edges(const cr_graph *g, cr_edge_list *out);
/* Whether the graph has weights: some rank's edge list had them, and every rank's
 * that had edges. Local. */
bool cr_graph_weighted(const cr_graph *g);
/* The weights of my local vertex i's neighbours, in cr_graph_neighbour's order, or
 * NULL when the graph has none. Owned by the graph. Local. */
const float *cr_graph_weights(const cr_graph *g, uint64_t i);

/* ---------------------------------------------------------------- BFS */

typedef struct cr_bfs_result {
    int64_t *parent;  /* per local vertex: parent's global id, itself for the root, -1 unreached */
    int32_t *level;   /* per local vertex: distance from the root, -1 unreached */
    uint64_t reached; /* vertices reached, over all ranks */
    uint64_t edges;   /* input edges in the root's component (Graph500's count) */
    int levels;       /* levels traversed (the largest level + 1) */
    uint64_t visits;  /* level assignments over all ranks: reached, plus re-visits of async */
    double seconds;   /* time of the search, slowest rank */
    int bottom_up_levels; /* CR_BFS_HYBRID: levels done bottom-up */
    /* CR_BFS_HYBRID, this rank's seconds in the search's parts (the rest of `seconds`
     * is the levels' reductions, the frontier lists and waiting for slower ranks): */
    double scan_seconds;     /* bottom-up levels: scanning the unvisited vertices */
    double frontier_seconds; /* bottom-up levels: the frontier bitmap, built and allgathered */
    double top_down_seconds; /* top-down levels: visits, in place and by message, and the
                                level's barrier */
} cr_bfs_result;

typedef enum cr_bfs_algorithm {
    CR_BFS_LEVELS, /* level-synchronous: one barrier per level (the default) */
    CR_BFS_ASYNC,  /* label-correcting: no level barriers, a vertex is re-visited
                      whenever a shorter path reaches it; one barrier in total */
    CR_BFS_LEVELS_DEDUP, /* level-synchronous, but the visits of one vertex are merged by
                      the mailbox (a combining handler keyed on the vertex, keeping the
                      first parent) instead of a bitmap of the visits each rank sent */
    CR_BFS_HYBRID, /* direction-optimizing (Beamer et al., SC 2012): level-synchronous,
                      each level either top-down (visit messages, as CR_BFS_LEVELS) or
                      bottom-up (every unvisited vertex looks for a parent in the
                      frontier, allgathered as a bitmap; no messages), chosen per level */
} cr_bfs_algorithm;

/* CR_BFS_HYBRID: how each level's direction is chosen. */
typedef enum cr_bfs_direction {
    CR_BFS_AUTO,      /* Beamer's rule with alpha and beta (cr_bfs_opts) */
    CR_BFS_TOP_DOWN,  /* always top-down (for tests and comparisons) */
    CR_BFS_BOTTOM_UP, /* always bottom-up */
    CR_BFS_ALTERNATE, /* top-down, bottom-up, top-down, ... */
} cr_bfs_direction;

typedef struct cr_bfs_opts {
    cr_bfs_algorithm algorithm;
    cr_bfs_direction direction;
    double alpha; /* go bottom-up when the frontier's edges exceed the unvisited vertices'
                     edges / alpha (default 14, Beamer's) */
    double beta;  /* go back top-down when the frontier has fewer than n / beta vertices
                     (default 24) */
} cr_bfs_opts;

/* Defaults: CR_BFS_LEVELS, CR_BFS_AUTO, alpha 14, beta 24. Local. */
void cr_graph_bfs_opts_init(cr_bfs_opts *o);
/* BFS from `root` as `o` says; NULL: the defaults. Its state is a run of its own
 * (the result arrays belong to `out`); the first search or validation on the graph's
 * comm registers five handlers there (may run handlers, as cr_register). Collective. */
void cr_graph_bfs_run(cr_graph *g, const cr_bfs_opts *o, uint64_t root, cr_bfs_result *out);

/* BFS from `root` with asynchronous visits; level-synchronous. Collective. */
void cr_graph_bfs(cr_graph *g, uint64_t root, cr_bfs_result *out);
/* The same with a choice of algorithm. Both give exact levels. */
void cr_graph_bfs_with(cr_graph *g, cr_bfs_algorithm algorithm, uint64_t root, cr_bfs_result *out);
void cr_graph_bfs_result_free(cr_bfs_result *r);

/* Check a BFS tree with the Graph500 rules; returns the number of violations over
 * all ranks (0: valid), and the first one this rank found in `why`. Collective. */
uint64_t cr_graph_bfs_validate(cr_graph *g, uint64_t root, const int64_t *parent,
                               const int32_t *level, char *why, size_t whylen);

/* ---------------------------------------------------------------- connected components */

/* What one cr_graph_cc call did on this rank. */
typedef struct cr_graph_cc_stats {
    uint64_t giant_vertices; /* of my vertices, those in my largest local component */
    uint64_t cut_records;    /* records I sent for cut edges (both ends outside giants) */
    uint64_t super_edges;    /* distinct edges between components, over all ranks */
    uint64_t rounds;         /* CR_CC_SV: pointer-jumping rounds; 1 for the others */
    uint64_t updates;        /* CR_CC_LABEL: labels I lowered */
} cr_graph_cc_stats;

/* Connected components: label[i] = the smallest vertex id in the component of my
 * local vertex i (label has cr_graph_local_count(g) entries, owned by the caller;
 * during the call it also holds each component's smallest id, so its contents
 * before the call do not matter).
 * The local part is done locally (union-find over the edges both of whose ends
 * this rank owns, Afforest's sampling to skip the largest component's edges), then
 * only what crosses ranks travels: each rank's largest component as a bitmap, at
 * most one record per cut edge between two vertices outside those components, and
 * the few edges between components (docs/forest.md). Memory per rank, besides label:
 * 16 bytes per local vertex, one bit per vertex of the graph, 16 bytes per edge between
 * components over all ranks. Collective; registers four handlers on the graph's
 * comm at its first call (may run handlers, as cr_register); `stats` may be NULL. */
void cr_graph_cc(cr_graph *g, uint64_t *label, cr_graph_cc_stats *stats);

typedef enum cr_cc_algorithm {
    CR_CC_LOCAL, /* cr_graph_cc's: the local part locally, then the cut edges */
    CR_CC_LABEL, /* label propagation: offers of smaller labels, merged by a combining
                    handler (min) at every hop; one barrier (either transport) */
    CR_CC_SV,    /* pointer jumping in lock-step darray steps with `route` and
                    `aggregation`, after FastSV */
} cr_cc_algorithm;

typedef struct cr_cc_opts {
    cr_cc_algorithm algorithm;
    cr_route route;                    /* CR_CC_SV */
    cr_darray_aggregation aggregation; /* CR_CC_SV */
} cr_cc_opts;

/* Defaults: CR_CC_LOCAL, direct, hash aggregation. Local. */
void cr_graph_cc_opts_init(cr_cc_opts *o);
/* Connected components by the algorithm `o` names (NULL: the defaults), each ending
 * with every label the smallest id of its component, as cr_graph_cc. The other forms
 * are kept for the aggregation studies (docs/graph.md): label propagation's memory is
 * its offers in flight; SV holds two distributed arrays of 8 bytes per vertex and 8
 * bytes per local edge end. Collective; CR_CC_LABEL registers a handler on the
 * graph's comm at its first call (may run handlers). */
void cr_graph_cc_with(cr_graph *g, const cr_cc_opts *o, uint64_t *label,
                      cr_graph_cc_stats *stats);

/* ---------------------------------------------------------------- shortest paths */

/* The GAP kernels beside BFS and components (docs/graph.md, "The GAP kernels"). Each
 * keeps its state in a run of its own for the length of the call, so their results
 * outlive each other and the graph holds only the graph. Each registers its handlers
 * on the graph's comm at its first call there (collective, may run handlers, as
 * cr_register). A graph is the multigraph its edges make: a repeated edge is that
 * many edges, and a self-loop is an edge from a vertex to itself. */

typedef struct cr_sssp_opts {
    double delta; /* the bucket width; 0 (the default): the largest weight over 4 times
                     the average degree (Meyer and Sanders: Theta(1 / degree) for random
                     weights up to 1) */
} cr_sssp_opts;

typedef struct cr_sssp_stats {
    double delta;         /* the bucket width used */
    uint64_t buckets;     /* buckets processed (each ends with a barrier), over all ranks */
    uint64_t relaxations; /* distances lowered, over all ranks */
    uint64_t messages;    /* relaxations sent to other ranks, over all ranks */
    uint64_t taken;       /* vertices whose edges were relaxed, a vertex once for each
                             distance it was taken at, over all ranks */
} cr_sssp_stats;

/* Defaults: delta 0 (automatic). Local. */
void cr_graph_sssp_opts_init(cr_sssp_opts *o);

/* Single-source shortest paths from `root` by delta-stepping (Meyer and Sanders,
 * 2003): the buckets of width delta are settled in order, each by one asynchronous
 * wave ended by a barrier; a lowered distance in the current bucket relaxes its
 * vertex's edges at once (in place for my vertices, by a message to the owner for
 * the others), one in a later bucket waits there. Relaxations of one vertex that meet
 * in a buffer are merged by a combining handler (min) at every hop. An unweighted
 * graph has weight 1 on every edge. dist[i] is my local vertex i's distance (INFINITY
 * when unreachable); `dist` has cr_graph_local_count(g) entries, owned by the caller.
 * Memory per rank: 16 bytes per local vertex across nodes, and the buckets' lists (4
 * bytes per lowered distance waiting). On a comm whose ranks are one node, every
 * vertex's distance lies in the node's shared memory (8 bytes per vertex of the
 * graph, once per node, kept with the comm until cr_comm_destroy; on a comm of one
 * rank, in `dist` itself): a rank reads
 * another's distance in place and sends a record only when it would lower it; a rank
 * keeps a bit per local vertex (waiting or not), and a vertex waits in a bucket's list
 * once however often it drops within that bucket. Returns 0, or -1 on every rank with
 * one line in err when root is not a vertex, delta is negative or not a number, or a
 * weight is negative or not a number. `o` and `stats` may be NULL. On one node a
 * graph whose weights are all whole numbers from 0 to 255 is relaxed from the
 * graph's copy of them in one byte (docs/graph.md). Collective. */
int cr_graph_sssp(cr_graph *g, const cr_sssp_opts *o, uint64_t root, double *dist,
                  cr_sssp_stats *stats, char *err, size_t errlen);

/* ---------------------------------------------------------------- PageRank */

typedef struct cr_pagerank_opts {
    double damping;     /* 0.85 */
    int max_iterations; /* 20 */
    double tolerance;   /* stop when the L1 change of an iteration is below it: 1e-4 */
    bool jacobi;        /* false: Gauss-Seidel where the ranks share a node, as GAP */
} cr_pagerank_opts;

typedef struct cr_pagerank_stats {
    int iterations;   /* done */
    double change;    /* the L1 change of the last iteration, over all ranks */
    uint64_t ghosts;  /* other ranks' vertices my vertices are adjacent to */
    uint64_t records; /* contributions sent per iteration, over all ranks */
    bool in_place;    /* the sweeps were Gauss-Seidel (on one node, jacobi false) */
} cr_pagerank_stats;

/* Defaults as GAP's: damping 0.85, 20 iterations, tolerance 1e-4. Local. */
void cr_graph_pagerank_opts_init(cr_pagerank_opts *o);

/* PageRank as the GAP benchmark defines it: every score starts at 1/n; a sweep
 * gives vertex v (1 - damping)/n + damping * (sum over v's edges {u, v} of
 * score(u)/degree(u)); it stops after max_iterations sweeps or when the L1 change of
 * one is below the tolerance. Across nodes the sweeps are Jacobi (all vertices at
 * once from the last sweep's scores). On one node they are Gauss-Seidel, as GAP's
 * (each new score read at once by the vertices swept after it; fewer sweeps), unless
 * o->jacobi: at more than one rank the scores then differ from run to run within the
 * tolerance, as GAP's threads' do, where Jacobi's are the same on every run. A vertex without edges gives nothing away (as
 * in GAP, the scores then sum to less than 1). Pulled with ghosts: each rank holds a
 * copy of the contribution of every other rank's vertex its vertices are adjacent to,
 * refreshed each iteration by one record per such vertex and rank (not one per
 * edge), then sums over its adjacency in place. score[i] is my local vertex i's
 * (cr_graph_local_count(g) entries, owned by the caller). Memory per rank: 4 bytes
 * per adjacency entry (the adjacency in local slots, kept with the graph), 16 per
 * local vertex, 16 per ghost and 16 per subscriber. On a comm whose ranks are one
 * node (and a graph under 2^32 vertices) there are no ghosts: every vertex's
 * contribution lies in the node's shared memory (4 bytes per vertex of the graph,
 * 8 with `jacobi`, once per node, kept with the comm until cr_comm_destroy) and is
 * read in place; 4
 * bytes per adjacency entry and 8 per local vertex per rank. `o` and `stats` may be
 * NULL. Collective. */
void cr_graph_pagerank(cr_graph *g, const cr_pagerank_opts *o, double *score,
                       cr_pagerank_stats *stats);

/* ---------------------------------------------------------------- triangles */

typedef struct cr_tc_stats {
    uint64_t oriented_edges; /* edges kept after orienting by degree, over all ranks */
    uint64_t fetched_ids;    /* other ranks' oriented lists fetched, ids over all ranks */
    uint64_t intersections;  /* list intersections done, over all ranks */
} cr_tc_stats;

/* The number of triangles of the simple graph under g (repeated edges and
 * self-loops left out), exactly. Each edge is oriented from the endpoint of lower
 * degree to the higher (ties by id), as GAP orders by degree, so each triangle is
 * found once, from its lowest corner u and middle corner v, in the intersection of
 * their oriented lists; a hub's list is short. Every rank fetches, once, the
 * oriented list of each other rank's vertex its own lists name: the requests of one
 * rank are merged before they leave. Memory per rank: the simple lists (g's own when
 * cr_graph_simplify made it and it has no weights, else a copy: 8 bytes per entry),
 * 4 bytes per oriented entry and per fetched id the rank knows, 16 per local vertex
 * and about 30 per ghost. Returns the count on every
 * rank; `stats` may be NULL. Collective. */
uint64_t cr_graph_tc(cr_graph *g, cr_tc_stats *stats);

/* ---------------------------------------------------------------- betweenness */

typedef struct cr_bc_stats {
    uint64_t levels;  /* BFS levels over all sources */
    uint64_t records; /* path counts and dependencies sent to other ranks, all ranks */
} cr_bc_stats;

/* Betweenness centrality from `nsources` sources (Brandes, 2001), as GAP computes it
 * from a sample: score[i] of my local vertex i is the sum, over the sources s, of
 * the dependency of s on it (the fraction of shortest paths from s to every other
 * vertex that pass through it), unnormalised. Per source, a level-synchronous BFS
 * counts shortest paths (a vertex's count is the sum of its parents', sent by
 * message and summed on their way), then the levels are walked back, each vertex
 * sending (1 + its dependency) / its count to its neighbours one level up, who
 * multiply by their own count. Every source must be a vertex (the same list on
 * every rank). Memory per rank: 24 bytes per local vertex, the levels' lists (8
 * bytes per local vertex), the graph's ghosts with a reverse index (4 bytes per edge
 * to another rank's vertex), and 8 bytes per local vertex on a simple unweighted
 * graph, else 4 per edge between two of mine (docs/kernels.md). On a comm whose ranks
 * are one node there are no ghosts and no records: every vertex's level, count and
 * share of dependency lie in the node's shared memory (20 bytes per vertex of the
 * graph, once per node, kept with the comm until cr_comm_destroy), levels are
 * marked in place and counts and dependencies pulled by each vertex's owner, with a
 * node barrier per level; memory per rank is then the levels' lists and the graph's
 * lists as 32-bit ids. Returns 0, or -1 on every rank with one line in err. `stats`
 * may be NULL. Collective. */
int cr_graph_bc(cr_graph *g, const uint64_t *sources, size_t nsources, double *score,
                cr_bc_stats *stats, char *err, size_t errlen);

/* ---------------------------------------------------------------- spanning forest */

typedef enum cr_msf_algorithm {
    CR_MSF_FILTER,   /* each rank's edges filtered locally, the forests merged up a tree
                        (the default; docs/graph.md) */
    CR_MSF_BORUVKA,  /* Boruvka's rounds on every edge, asynchronous (either transport) */
    CR_MSF_LOCKSTEP, /* Boruvka's rounds in lock-step darray steps with `route` and
                        `aggregation` (the darray thesis's benchmark) */
} cr_msf_algorithm;

typedef struct cr_msf_opts {
    cr_msf_algorithm algorithm;
    /* CR_MSF_FILTER: the most forest edges one rank may hold while the forests merge
       (2^24 by default: 512 MiB of edges); when a merge would exceed it, the merging
       stops and Boruvka's rounds (asynchronous) finish on the forests where they are.
       0 never merges. */
    uint64_t gather_limit;
    cr_route route;                    /* CR_MSF_LOCKSTEP */
    cr_darray_aggregation aggregation; /* CR_MSF_LOCKSTEP */
} cr_msf_opts;

/* Defaults: CR_MSF_FILTER, a gather limit of 2^24 edges, direct, hash aggregation.
 * Local. */
void cr_graph_msf_opts_init(cr_msf_opts *o);

typedef struct cr_msf_result {
    uint64_t *forest;    /* this rank's forest edges, as edge ids (owned by the result) */
    size_t nforest;
    uint64_t *label;     /* per vertex of my block: a vertex of its tree, the same for the
                            whole tree and labelled with itself (owned by the result) */
    uint64_t first, count; /* my block of vertices (cr_darray_block over nvertices) */
    uint64_t nvertices;    /* 1 + the largest id over all ranks' edge lists */
    uint64_t forest_edges; /* over all ranks */
    double weight;         /* of the forest, over all ranks */
    uint64_t filtered;     /* CR_MSF_FILTER: edges left by the local filter, all ranks */
    uint64_t merge_levels; /* CR_MSF_FILTER: levels of the merging tree done */
    uint64_t rounds;       /* Boruvka's rounds */
    /* seconds on this rank (the transport's clock: virtual in the simulation): the
       local filter, the merging, Boruvka's rounds (and in them choosing the lightest
       edges, pointer doubling, relabelling), the labels */
    double t_filter, t_merge, t_rounds, t_choose, t_double, t_relabel, t_label;
    cr_darray_stats best, parent; /* CR_MSF_LOCKSTEP: the two arrays' merging */
} cr_msf_result;

/* The minimum spanning forest of the undirected graph whose edges are the union of
 * every rank's `edges` (with weights; self-loops ignored). Edge j of rank r has the
 * id ids[j], unique over the graph, or, when ids is NULL, its position in the
 * ranks' lists put one after the other in rank order. Edges are ordered by weight,
 * ties by id, so the forest is unique. CR_MSF_FILTER follows the filtering method
 * (Lattanzi, Moseley, Suri and Vassilvitskii, SPAA 2011) with the cycle property: a
 * rank keeps only the minimum spanning forest of its own edges (an edge heaviest on
 * a cycle of any subgraph is in no minimum spanning forest), then pairs of ranks
 * merge their forests and filter again up a binomial tree, while the merged forests
 * fit `gather_limit`. Memory per rank, besides the caller's list: 36 bytes per own
 * edge while the local filter sorts (16-byte records, twice, and 4 for the result),
 * 32 bytes per edge kept or received (twice while a merge sorts), 4 bytes per vertex
 * of the graph (its union-find); 32 bytes more per own edge when `ids` do not
 * ascend with the position, and for the Boruvka forms. `o` may be NULL (the
 * defaults). Returns 0, or -1 on every rank with a one-line error in err when a
 * rank's edges have no weights or a NaN weight. Collective; registers two handlers
 * on the comm at its first call (may run handlers, as cr_register). */
int cr_graph_msf(cr_comm *comm, const cr_edge_list *edges, const uint64_t *ids,
                 const cr_msf_opts *o, cr_msf_result *out, char *err, size_t errlen);
/* The same on a weighted graph's edges (cr_graph_edges: edge ids are positions in
 * the ranks' lists put one after the other in rank order). Collective. */
int cr_graph_msf_of(cr_graph *g, const cr_msf_opts *o, cr_msf_result *out, char *err,
                    size_t errlen);
/* Free what the result owns. Local. */
void cr_graph_msf_result_free(cr_msf_result *r);

#ifdef __cplusplus
}
#endif

#endif
