/* The pointer-doubling pattern's first pointers, shared by darray_bench and
 * scale_model: every vertex points to its lightest neighbour, by a hash weight. */
#ifndef COURIER_APPS_LIGHTEST_H
#define COURIER_APPS_LIGHTEST_H

#include <courier/rng.h>

#include <courier.h>

#include <stdint.h>

/* The weight of edge {u, v}: a hash of the pair, ties broken by the endpoint. */
static inline uint64_t app_edge_weight(uint64_t u, uint64_t v)
{
    uint64_t lo = u < v ? u : v, hi = u < v ? v : u;
    return cr_rng_hash64(lo * 0x9e3779b97f4a7c15ULL ^ hi);
}

/* The lightest neighbour of local vertex u_local (global id u), or u itself. */
static inline uint64_t app_lightest_neighbour(cr_graph *g, uint64_t u_local, uint64_t u)
{
    uint64_t deg = cr_graph_degree(g, u_local), best = u, bw = UINT64_MAX;
    for (uint64_t j = 0; j < deg; j++) {
        uint64_t v = cr_graph_neighbour(g, u_local, j);
        if (v == u)
            continue;
        uint64_t w = app_edge_weight(u, v);
        if (w < bw || (w == bw && v < best))
            bw = w, best = v;
    }
    return best;
}

#endif
