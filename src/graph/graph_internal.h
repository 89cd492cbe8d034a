/* Internals shared by the graph files. */
#ifndef COURIER_GRAPH_INTERNAL_H
#define COURIER_GRAPH_INTERNAL_H

#include "courier/graph.h"
#include "common/block.h"
#include "common/search.h"
#include "mailbox/module.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A CSR's neighbour ids: 4 bytes each when the graph has fewer than 2^32 vertices
 * (u32 set, GAP's width: half the memory and half the bytes a sweep reads), else 8
 * (u64 set). */
typedef struct graph_ids {
    uint32_t *u32;
    uint64_t *u64;
} graph_ids;

static inline uint64_t graph_id_at(graph_ids a, uint64_t k)
{
    return a.u32 ? a.u32[k] : a.u64[k];
}

static inline void graph_id_set(graph_ids a, uint64_t k, uint64_t v)
{
    if (a.u32)
        a.u32[k] = (uint32_t)v;
    else
        a.u64[k] = v;
}

/* Whether a graph of n vertices keeps 4-byte ids. */
bool graph_ids_narrow(uint64_t n);
/* Tests only: graphs built after this call keep 8-byte ids whatever their size, so
 * the wide lists' code runs on graphs small enough to test. Process-wide; call it on
 * every rank alike, between graphs. */
void graph_ids_force_wide(bool wide);

/* Room for n ids of a graph of `vertices` vertices (graph_xmalloc_large); free with
 * graph_ids_free. Local. */
graph_ids graph_ids_alloc(uint64_t n, uint64_t vertices);
void graph_ids_free(graph_ids a);
/* The bytes of ids [from, from + n) (for prefetching and releasing pages). */
static inline void *graph_ids_addr(graph_ids a, uint64_t k)
{
    return a.u32 ? (void *)(a.u32 + k) : (void *)(a.u64 + k);
}
static inline size_t graph_ids_width(graph_ids a)
{
    return a.u32 ? sizeof *a.u32 : sizeof *a.u64;
}

/* A local vertex with self-loops, and how many. */
typedef struct cr_graph_loops {
    uint64_t local, count;
} cr_graph_loops;

struct cr_graph {
    cr_comm *comm;
    int rank, size;
    uint64_t n;      /* vertices in the whole graph */
    uint64_t first;  /* my first vertex */
    uint64_t count;  /* vertices I own */
    uint64_t *offsets; /* CSR: neighbours of local i are adj[offsets[i] .. offsets[i+1]) */
    graph_ids adj;     /* 4-byte ids below 2^32 vertices (graph_nbr reads either) */
    uint64_t nadj;
    bool simple;     /* cr_graph_simplify made it: no self-loop or repeated edge, each
                        list sorted by neighbour (by weight when weighted) */
    bool weighted;   /* every rank's edge list had weights */
    float *wadj;     /* weighted: the weight of adj[k] is wadj[k]; else NULL */
    uint8_t *w8;     /* on a comm of one node, every weight a whole number in 0..255:
                        wadj again in one byte (sssp's relaxation loop on one node
                        reads a quarter of the bytes); else NULL */
    bool weights_scanned; /* graph_weights_scan has filled w8 and the two below */
    float weight_most;    /* my largest weight (0 unweighted or none) */
    uint64_t weight_bad;  /* the slot of my first negative or NaN weight, or UINT64_MAX */
    struct graph_ghosts *ghosts; /* graph_ghosts_of: built by the first kernel that
                                    needs them, kept with the graph */
    cr_graph_loops *loops; /* my vertices with self-loops, by local index */
    size_t nloops;
    /* Nothing else: each kernel keeps its run and its handlers to itself (a module
     * state on the comm). */
};



/* A sum over the comm's ranks: the transport's reduction, on either transport, and a
 * barrier that does not wait for the mailbox to drain. Collective. */
static inline uint64_t graph_sum(cr_comm *comm, uint64_t mine)
{
    uint64_t all;
    cr_module_allreduce_u64(comm, &mine, &all, 1, CR_OP_SUM);
    return all;
}


/* Scans that read each vertex's list from its start, and often only its first
 * entries, miss the cache at every vertex in a way the hardware does not foresee:
 * they ask for the list of the vertex this many ahead. */
#define GRAPH_PREFETCH_AHEAD 16

static inline void graph_prefetch_list(const cr_graph *g, uint64_t i)
{
    __builtin_prefetch(graph_ids_addr(g->adj, g->offsets[i]));
}

/* The id in slot k of my adjacency. */
static inline uint64_t graph_nbr(const cr_graph *g, uint64_t k)
{
    return graph_id_at(g->adj, k);
}

/* The longest of the n lists of a CSR's offsets (off[i] .. off[i + 1]). Local. */
uint64_t graph_longest_list(const uint64_t *off, uint64_t n);

/* Sort n ids in place (lists are mostly short). Local. */
void graph_sort_ids(uint64_t *a, uint64_t n);
void graph_sort_ids32(uint32_t *a, uint64_t n);
/* Sort ids [from, from + n) of a. Local. */
void graph_ids_sort(graph_ids a, uint64_t from, uint64_t n);
/* The first index in [lo, hi) of the ascending a whose value is not below key (hi if
 * none). Local. */
uint64_t graph_ids_lower_bound(graph_ids a, uint64_t lo, uint64_t hi, uint64_t key);
/* cr_xmalloc(n * size), asking the system for huge pages (2 MiB) over the whole
 * pages inside it, before they are first touched: the kernels read the adjacency
 * at each vertex's start, and with small pages nearly every vertex's start misses the
 * TLB as well as the cache. A hint; allocations under 1 MiB get none. */
void *graph_xmalloc_large(size_t n, size_t size);

/* A kernel's array in the node's memory on a comm whose ranks are one node: at least
 * `bytes` held in the first rank's part of a node segment (module.h; a larger one of
 * an earlier call is kept), every rank of the node
 * reading and writing it in place. Kept on the comm in the kernel's module state
 * `type` (whose destroy must be graph_node_array_free, run by cr_comm_destroy) from
 * one call to the next: a fresh mapping costs a page fault per page. Collective;
 * NULL on every rank when the comm spans nodes or its node cannot share memory. */
cr_node_segment *graph_node_array(cr_graph *g, const cr_module_type *type, size_t bytes);
void graph_node_array_free(cr_comm *comm, void *state);

/* adj as 32-bit ids (the graph has fewer than 2^32 vertices); NULL when it has more.
 * Local. */
static inline const uint32_t *graph_adj32(const cr_graph *g)
{
    return g->adj.u32;
}

/* This rank's largest weight and first bad (negative or NaN) one, scanned at the
 * first call and kept with the graph (its weights do not change). Local. */
void graph_weights_scan(cr_graph *g);

/* The local vertex whose adjacency holds slot k (0 <= k < nadj). Local. */
uint64_t graph_local_of_slot(const cr_graph *g, uint64_t k);

/* Collective: each rank passes its own one-line error, or NULL. Returns 0 when no
 * rank has one; else -1 on every rank, with err holding the lowest failing rank's
 * message (at most 255 bytes of it) on every rank. */
int graph_agree(cr_comm *comm, const char *mine, char *err, size_t errlen);

void cr_edge_list_push(cr_edge_list *l, uint64_t u, uint64_t v, const float *w);
/* Room for at least `count` edges (and weights, with `weighted`) in one allocation: a
 * list grown by doubling holds the old and the new array at once on every step, and
 * the allocator may keep the old ones resident for a while after. Local. */
void cr_edge_list_reserve(cr_edge_list *l, size_t count, bool weighted);

/* ---- building (dgraph.c) ---- */

/* A graph with no edges yet: the vertex count the largest of the ranks' `nvertices`
 * (refused with one line beyond what a rank can hold), weighted when some rank has
 * weights and every rank with edges has them, my block of vertices. Collective. */
cr_graph *graph_setup(cr_comm *comm, uint64_t nvertices, bool weights, bool edges);
/* After the CSR is filled: weighted lists lightest first, the self-loops found.
 * Local. */
void graph_finish(cr_graph *g);

/* The mailbox's two passes over a source of edges, one edge at a time: begin;
 * count every edge (its ends' degrees go to their owners); size (collective: a
 * barrier, then the CSR allocated); place every edge again, the same ones
 * (weights as the bits of their float); end (collective: a barrier, and the job
 * ends with one line when the halves did not match the counts). */
typedef struct graph_placer graph_placer;
graph_placer *graph_placer_begin(cr_graph *g);
void graph_placer_count(graph_placer *p, uint64_t u, uint64_t v);
void graph_placer_size(graph_placer *p);
void graph_placer_place(graph_placer *p, uint64_t u, uint64_t v, uint64_t wbits);
void graph_placer_end(graph_placer *p);

/* ---- reading in chunks (edge_files.c) ---- */

/* Called with each chunk of at most `chunk` edges of this rank's share of a file,
 * in the file's order (the list is emptied after; its weights are set when the file
 * has them). Returns 0, or -1 with a one-line error to stop the reading. */
typedef int (*graph_chunk_fn)(void *user, const cr_edge_list *chunk, char *err, size_t errlen);
/* cr_graph_read_edges, with the edges handed over in chunks instead of kept. Sets
 * *nvertices as cr_graph_read_edges sets nvertices. Local. */
int graph_read_chunks(const char *path, cr_file_format format, const char *weights_path,
                      int rank, int size, size_t chunk, graph_chunk_fn fn, void *user,
                      uint64_t *nvertices, char *err, size_t errlen);


#endif
