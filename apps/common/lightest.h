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
    uint64_t deg, best = u, bw = UINT64_MAX;
    const uint64_t *nb = cr_graph_neighbours(g, u_local, &deg);
    for (uint64_t j = 0; j < deg; j++) {
        if (nb[j] == u)
            continue;
        uint64_t w = app_edge_weight(u, nb[j]);
        if (w < bw || (w == bw && nb[j] < best))
            bw = w, best = nb[j];
    }
    return best;
}

#endif
