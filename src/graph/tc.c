/* Triangle counting on the simple graph under a cr_graph, after GAP's ordered count
 * (Beamer, Asanovic and Patterson, 2015; the orientation by degree is Schank and
 * Wagner's, 2005): each edge {u, v} is kept once, oriented from the lower to the
 * higher of (degree, id), and every triangle u < v < w in that order is found once,
 * as a common element w of the oriented lists of u and v, at u's owner.
 *
 * The orientation needs the degree of every neighbour, and the count the oriented
 * list of every neighbour v an oriented list names: both are ghosts (ghosts.c), so
 * each rank receives each remote degree and each remote list it needs once, however
 * many of its edges ask for it. Orienting by degree keeps a hub's own list short. */
#include "graph/ghosts.h"

#include "common/fatal.h"
#include "mailbox/module.h"

#include <stdlib.h>
#include <string.h>

typedef struct csr {
    uint64_t *off, *adj;
} csr;

/* Each vertex's distinct neighbours other than itself, sorted by id: the graph's own
 * lists when it is simple and unweighted (*copied false), else a copy. */
static csr simple_lists(cr_graph *g, bool *copied)
{
    *copied = !g->simple || g->weighted; /* weighted lists are sorted by weight */
    if (!*copied)
        return (csr){g->offsets, g->adj};
    csr s = {cr_xmalloc((g->count + 1) * sizeof *s.off),
             cr_xmalloc((g->nadj ? g->nadj : 1) * sizeof *s.adj)};
    uint64_t at = 0;
    for (uint64_t i = 0; i < g->count; i++) {
        uint64_t start = at, self = g->first + i;
        s.off[i] = start;
        for (uint64_t k = g->offsets[i]; k < g->offsets[i + 1]; k++)
            if (g->adj[k] != self)
                s.adj[at++] = g->adj[k];
        graph_sort_ids(s.adj + start, at - start);
        uint64_t kept = start;
        for (uint64_t k = start; k < at; k++)
            if (k == start || s.adj[k] != s.adj[kept - 1])
                s.adj[kept++] = s.adj[k];
        at = kept;
    }
    s.off[g->count] = at;
    return s;
}

/* (degree, id) order: does a come before b? */
static bool before(uint64_t da, uint64_t a, uint64_t db, uint64_t b)
{
    return da < db || (da == db && a < b);
}

/* The oriented lists: of each vertex's neighbours, those after it. */
static csr oriented_lists(const cr_graph *g, const csr *s, const graph_ghosts *gh,
                          const uint64_t *degree)
{
    csr o = {cr_xmalloc((g->count + 1) * sizeof *o.off),
             cr_xmalloc((s->off[g->count] ? s->off[g->count] : 1) * sizeof *o.adj)};
    uint64_t at = 0;
    for (uint64_t i = 0; i < g->count; i++) {
        o.off[i] = at;
        for (uint64_t k = s->off[i]; k < s->off[i + 1]; k++)
            if (before(degree[i], g->first + i, degree[gh->col[k]], s->adj[k]))
                o.adj[at++] = s->adj[k];
    }
    o.off[g->count] = at;
    return o;
}

/* Common elements of two sorted lists of distinct ids, by a merge without branches
 * on the data (the comparisons' outcomes are unpredictable). */
static uint64_t common(const uint64_t *a, uint64_t na, const uint64_t *b, uint64_t nb)
{
    uint64_t i = 0, j = 0, n = 0;
    while (i < na && j < nb) {
        uint64_t x = a[i], y = b[j];
        n += x == y;
        i += x <= y;
        j += y <= x;
    }
    return n;
}

uint64_t cr_graph_tc(cr_graph *g, cr_tc_stats *stats)
{
    bool copied;
    csr s = simple_lists(g, &copied);
    graph_ghosts near;
    graph_ghosts_build(g, s.off, s.adj, &near);
    uint64_t *degree = cr_xmalloc((g->count + near.nghost + 1) * sizeof *degree);
    for (uint64_t i = 0; i < g->count; i++)
        degree[i] = s.off[i + 1] - s.off[i];
    graph_ghosts_push(&near, degree);
    csr o = oriented_lists(g, &s, &near, degree);
    free(degree);
    graph_ghosts_free(&near);
    if (copied)
        free(s.off), free(s.adj);

    graph_ghosts far;
    graph_ghosts_build(g, o.off, o.adj, &far);
    graph_ghosts_fetch_lists(&far, o.off, o.adj);
    uint64_t triangles = 0;
    for (uint64_t i = 0; i < g->count; i++) {
        const uint64_t *mine = o.adj + o.off[i];
        uint64_t nmine = o.off[i + 1] - o.off[i];
        for (uint64_t k = o.off[i]; k < o.off[i + 1]; k++) {
            uint64_t c = far.col[k];
            if (c < g->count)
                triangles += common(mine, nmine, o.adj + o.off[c], o.off[c + 1] - o.off[c]);
            else
                triangles += common(mine, nmine, far.list + far.list_off[c - g->count],
                                    far.list_off[c - g->count + 1] - far.list_off[c - g->count]);
        }
    }
    uint64_t mine[4] = {triangles, o.off[g->count], far.list_off[far.nghost], o.off[g->count]};
    uint64_t all[4];
    cr_module_allreduce_u64(g->comm, mine, all, 4, CR_OP_SUM);
    if (stats)
        *stats = (cr_tc_stats){.oriented_edges = all[1], .fetched_ids = all[2],
                               .intersections = all[3]};
    free(o.off), free(o.adj);
    graph_ghosts_free(&far);
    return all[0];
}
