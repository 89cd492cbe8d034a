/* Ghosts: copies of other ranks' vertices for the kernels that read a value of every
 * neighbour (ghosts.c). Internal to the graph module. */
#ifndef COURIER_GRAPH_GHOSTS_H
#define COURIER_GRAPH_GHOSTS_H

#include "graph/graph_internal.h"

#include <stdint.h>

/* A rank that copies one of my vertices, into its slot. 4 bytes each: a rank's
 * vertices and ghosts number under 2^32 together (graph_ghosts_build checks). */
typedef struct graph_subscriber {
    uint32_t local, rank, slot;
} graph_subscriber;

/* From a ghost's id to its slot: open addressing over the sorted ids. */
typedef struct graph_id_index {
    uint32_t *cell; /* a slot, or UINT32_MAX: empty */
    uint64_t mask;
    const uint64_t *ids;
} graph_id_index;

/* How a kernel's lists name vertices when not by global id: 4-byte keys, each rank's
 * own, in an order that agrees with the ids' (so a sorted list stays sorted). */
typedef struct graph_list_keys {
    uint64_t (*id_of)(const void *ctx, uint32_t key); /* a key of mine: its id */
    uint32_t (*key_of)(const void *ctx, uint64_t id); /* my key, UINT32_MAX if none */
    const void *ctx;
} graph_list_keys;

/* A vertex's edges to my own vertices as one run of its sorted list. */
typedef struct graph_run {
    uint32_t from, count; /* adj[offsets[i] + from ..) */
} graph_run;

typedef struct graph_ghosts {
    cr_graph *g;
    uint64_t nghost; /* slots: the distinct remote ids of the adjacency */
    uint64_t *ids;   /* slot -> global id, in increasing order */
    uint32_t *col;   /* per adjacency entry: the local index, or count + its slot (4
                        bytes: half the bytes a kernel's inner loop streams) */
    graph_subscriber *sub; /* who copies my vertices, by local vertex */
    uint64_t nsub, sub_cap;
    uint64_t *sub_off;     /* local i's subscribers: sub[sub_off[i] .. sub_off[i + 1]) */
    int *dests;            /* the ranks that copy some of my vertices, */
    uint64_t ndests;
    uint64_t *dest_off;    /* and which: dest_local[dest_off[d] .. dest_off[d + 1]), */
    uint32_t *dest_local;  /* in order of vertex (the copier's slot order) */
    uint64_t *local_off;   /* graph_ghosts_reverse: local i's edges to my own vertices */
    uint32_t *local_col;   /* are local_col[local_off[i] .. local_off[i + 1]) (local */
    float *local_w;        /* indices), with their weights (weighted), in list order */
    graph_run *local_runs; /* graph_ghosts_reverse_index_of, sorted lists: instead */
    uint64_t *rev_off;     /* graph_ghosts_reverse: slot s's edges to my vertices are */
    uint32_t *rev_local;   /* rev_local[rev_off[s] .. rev_off[s + 1]) (the local ends) */
    float *rev_w;          /* and, on a weighted graph's own adjacency, their weights */
    uint32_t *list;        /* graph_ghosts_fetch_lists: slot s's copy, in my keys, is */
    uint64_t *list_off;    /* list[list_off[s] .. list_off[s + 1]) */
    graph_id_index by_id;  /* graph_ghosts_build_indexed: id -> slot (no col) */
} graph_ghosts;

/* Number the remote ids of the adjacency (offsets, adj: a CSR over my vertices, of
 * global ids of either width; the graph's own or one derived from it) and subscribe to them at their
 * owners. Collective (registers three handlers on the graph's comm at the first call
 * there). */
void graph_ghosts_build(cr_graph *g, const uint64_t *offsets, graph_ids adj,
                        graph_ghosts *gh);
/* The same without col (NULL), with an index from a remote id to its slot instead
 * (graph_ghosts_slot): 6 bytes or so per ghost, not 4 per adjacency entry. Collective. */
void graph_ghosts_build_indexed(cr_graph *g, const uint64_t *offsets, graph_ids adj,
                                graph_ghosts *gh);
/* After graph_ghosts_build_indexed: the slot of id, or UINT64_MAX if it is no ghost.
 * Local. */
uint64_t graph_ghosts_slot(const graph_ghosts *gh, uint64_t id);
/* Ghosts of given other ranks' vertices: ids sorted and distinct, malloc'd; gh takes
 * them. No col, no index. Collective (every rank calls, with its own ids). */
void graph_ghosts_subscribe(cr_graph *g, uint64_t *ids, uint64_t n, graph_ghosts *gh);
/* Index the adjacency (the one gh was built on) by ghost: for each slot, my vertices
 * whose lists name it (on a weighted graph's own adjacency, with the edges' weights,
 * lightest first); and each vertex's edges to my own vertices apart, so that a kernel
 * that handles the edges to ghosts through their owners' records walks only these. A value a ghost's owner
 * sends once per rank then reaches every edge it has to this rank. Local. */
void graph_ghosts_reverse(graph_ghosts *gh, const uint64_t *offsets);
/* values[0 .. count) are my vertices' words; fill values[count + slot] with the
 * owners' words for every slot: one message per pair of ranks (cr_nbx_exchange), the
 * words alone, in the slots' order. Collective. */
void graph_ghosts_push(const graph_ghosts *gh, uint64_t *values);
/* The same with floats. Collective. */
void graph_ghosts_push_floats(const graph_ghosts *gh, float *values);
/* Copy the lists of a CSR over the owners' vertices (offsets, adj in the owner's
 * keys, on every rank) into gh->list by slot, in the receiver's keys: an id the
 * receiver has no key for is dropped, the others keep their order. Ids travel (8
 * bytes each), keys are stored (4). Returns the ids received. Collective. */
uint64_t graph_ghosts_fetch_lists(graph_ghosts *gh, const uint64_t *offsets,
                                  const uint32_t *adj, const graph_list_keys *keys);
void graph_ghosts_free(graph_ghosts *gh);
/* The ghosts of g's own adjacency with col: built at the first call (collective, as
 * graph_ghosts_build), then kept with the graph and freed by cr_graph_destroy; col
 * filled locally if the ghosts came from graph_ghosts_reversed_of. */
const graph_ghosts *graph_ghosts_of(cr_graph *g);
/* The same with the reverse index (graph_ghosts_reverse): for the kernels that handle
 * an owner's value at the edges it reaches (bc, sssp). Built first here, the ghosts
 * get no col, which those kernels never read (col is NULL); built from col when
 * graph_ghosts_of came first. Collective at the first call on a graph. */
const graph_ghosts *graph_ghosts_reversed_of(cr_graph *g);
/* The same, with the edges to my own vertices as local_runs where the graph's lists
 * are sorted by id (a simple unweighted graph; local_off may then be NULL), else as
 * local_off and local_col. Collective at the first call on a graph. */
const graph_ghosts *graph_ghosts_reverse_index_of(cr_graph *g);

#endif
