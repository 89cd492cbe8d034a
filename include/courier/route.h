/* Courier routing: which rank a message goes to next on its way to its destination.
 *
 * A route sends records through intermediate ranks so that each rank talks to few
 * partners and sends few, large buffers (docs/routing.md). The pieces are pure and
 * local, so they can be used and tested in one process:
 *
 *   cr_route   what the user asked for ("nlnr", "grid:4x2", ...), parsed from text;
 *   cr_layout  which ranks share a node (from MPI, or virtual: blocks of k ranks);
 *   cr_router  a route resolved for a layout: next_hop(me, dest) and the hop bound.
 *
 * A cr_comm builds its layout and router at creation from cr_config.route and
 * cr_config.node_size (COURIER_ROUTE, COURIER_NODE_SIZE) and forwards records by
 * itself; handlers always see the rank that called cr_async() as `src`.
 *
 * Errors (docs/architecture.md): routes and layouts come from text and data, so the
 * parser and the constructors return -1 or NULL (with one line where they take
 * `err`); nothing here ends the job.
 */
#ifndef COURIER_ROUTE_H
#define COURIER_ROUTE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cr_route_kind {
    CR_ROUTE_DIRECT = 0, /* one hop, straight to the destination */
    CR_ROUTE_NR,         /* node-remote: to my local index on the destination node, then on-node */
    CR_ROUTE_NLNR,       /* node-local, node-remote, node-local (YGM): one channel per node pair */
    CR_ROUTE_GRID,       /* k-dimensional grid, one coordinate fixed per hop (thesis 3.2, 4.2) */
    CR_ROUTE_HYPERCUBE,  /* grid of 2s; ranks past the largest power of two use a partner */
    CR_ROUTE_AUTO,       /* the comm chooses one of the above when it is created, by the
                            cost model of tune.h; no router takes it */
} cr_route_kind;

/* Most dimensions of a grid route. */
#define CR_ROUTE_MAX_DIMS 16

typedef struct cr_route {
    cr_route_kind kind;
    unsigned ndims;                   /* grid only; 0 = two dimensions chosen from P */
    unsigned dims[CR_ROUTE_MAX_DIMS]; /* grid only; dims[0] is fixed first */
} cr_route;

/* Parse "direct", "nr", "nlnr", "grid", "grid:AxBxC", "hypercube" or "auto". Returns 0, or
 * -1 with a one-line message in `err` (if not NULL); `out` is unchanged on error. */
int cr_route_parse(const char *text, cr_route *out, char *err, size_t errlen);

/* Write the route as cr_route_parse accepts it ("grid:4x2"). Returns snprintf's
 * result. */
int cr_route_format(const cr_route *route, char *buf, size_t len);

/* ---------------------------------------------------------------- layouts */

typedef struct cr_layout cr_layout;

/* A layout of `nranks` ranks where rank r lives on node node_of[r], an id in
 * [0, nranks). Ids are renumbered densely in order of each node's lowest rank; nodes
 * may have different sizes and need not be contiguous blocks of ranks. Returns NULL
 * if nranks < 1 or an id is out of range. */
cr_layout *cr_layout_create(int nranks, const int *node_of);

/* Local. Virtual nodes of k consecutive ranks: ranks [i*k, (i+1)*k) form node i; the
 * last node is shorter when k does not divide nranks (COURIER_NODE_SIZE=k on one
 * machine). */
cr_layout *cr_layout_create_blocks(int nranks, int node_size);

/* Local. Every node of node_of (as for cr_layout_create) cut into virtual nodes of
 * node_size of its ranks, in rank order; a node's last one is shorter when node_size
 * does not divide it. The layout of COURIER_NODE_SIZE=k on a job of several real
 * nodes: a virtual node never spans two real ones. Returns NULL where
 * cr_layout_create would, or if node_size < 1. */
cr_layout *cr_layout_create_cut(int nranks, const int *node_of, int node_size);

/* Local. One more holder of `layout` (it is immutable, so many comms may share it:
 * the simulated transport gives its P virtual ranks one layout instead of P copies
 * of O(P) each). Returns `layout`; every holder calls cr_layout_destroy once. */
cr_layout *cr_layout_share(cr_layout *layout);

/* Local. Lets go of `layout`; the last holder frees it. */
void cr_layout_destroy(cr_layout *layout);

int cr_layout_ranks(const cr_layout *layout);
int cr_layout_nodes(const cr_layout *layout);
int cr_layout_node_of(const cr_layout *layout, int rank);
/* Number of ranks on `node`, and the rank with index `local` on it. */
int cr_layout_node_size(const cr_layout *layout, int node);
int cr_layout_member(const cr_layout *layout, int node, int local);
/* Index of `rank` among the ranks of its node, in rank order. */
int cr_layout_local_index(const cr_layout *layout, int rank);

/* ---------------------------------------------------------------- routers */

typedef struct cr_router cr_router;

/* Resolve `route` for `layout`, which must outlive the router. Returns NULL with a
 * one-line message in `err` if the route cannot serve this many ranks (a grid with
 * fewer cells than ranks). */
cr_router *cr_router_create(const cr_route *route, const cr_layout *layout, char *err,
                            size_t errlen);
void cr_router_destroy(cr_router *router);

/* The rank a record at rank `me` bound for `dest` is sent to next; `dest` itself
 * when the next hop delivers. me != dest. */
int cr_router_next_hop(const cr_router *router, int me, int dest);

/* Most hops any record takes: direct 1, nr 2, nlnr 3, grid its number of
 * dimensions, hypercube log2(P) (+2 when P is not a power of two). */
int cr_router_max_hops(const cr_router *router);

/* The resolved route: for "grid" the dimensions chosen from P are filled in. */
const cr_route *cr_router_route(const cr_router *router);

#ifdef __cplusplus
}
#endif

#endif
