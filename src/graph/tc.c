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
    uint64_t *off;
    graph_ids adj;
} csr;

/* Each vertex's distinct neighbours other than itself, sorted by id: the graph's own
 * lists when it is simple and unweighted (*copied false), else a copy. */
static csr simple_lists(cr_graph *g, bool *copied)
{
    *copied = !g->simple || g->weighted; /* weighted lists are sorted by weight */
    if (!*copied)
        return (csr){g->offsets, g->adj};
    csr s = {cr_xmalloc((g->count + 1) * sizeof *s.off), graph_ids_alloc(g->nadj, g->n)};
    uint64_t at = 0;
    for (uint64_t i = 0; i < g->count; i++) {
        uint64_t start = at, self = g->first + i;
        s.off[i] = start;
        for (uint64_t k = g->offsets[i]; k < g->offsets[i + 1]; k++)
            if (graph_nbr(g, k) != self)
                graph_id_set(s.adj, at++, graph_nbr(g, k));
        graph_ids_sort(s.adj, start, at - start);
        uint64_t kept = start;
        for (uint64_t k = start; k < at; k++)
            if (k == start || graph_id_at(s.adj, k) != graph_id_at(s.adj, kept - 1))
                graph_id_set(s.adj, kept++, graph_id_at(s.adj, k));
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

/* A rank's 4-byte keys for the vertices it knows (its own and its ghosts), in order
 * of id: the ghosts below my first vertex, my vertices, the ghosts above. The lists
 * hold keys, half the bytes of ids; a list copied from another rank keeps the ids
 * this rank knows, the only ones a list of mine can have in common with it. */
typedef struct numbering {
    const cr_graph *g;
    const graph_ghosts *gh;
    uint64_t below; /* ghosts of an id below my first vertex */
} numbering;

static uint32_t key_of_slot(const numbering *nb, uint64_t slot)
{
    return (uint32_t)(slot < nb->below ? slot : slot + nb->g->count);
}

static uint32_t key_of(const void *ctx, uint64_t id)
{
    const numbering *nb = ctx;
    if (id - nb->g->first < nb->g->count)
        return (uint32_t)(nb->below + id - nb->g->first);
    uint64_t slot = graph_ghosts_slot(nb->gh, id);
    return slot == UINT64_MAX ? UINT32_MAX : key_of_slot(nb, slot);
}

static uint64_t id_of(const void *ctx, uint32_t key)
{
    const numbering *nb = ctx;
    if (key < nb->below)
        return nb->gh->ids[key];
    if (key - nb->below < nb->g->count)
        return nb->g->first + key - nb->below;
    return nb->gh->ids[key - nb->g->count];
}

/* A ghost's key: its slot. */
static uint64_t slot_of_key(const numbering *nb, uint32_t key)
{
    return key < nb->below ? key : key - nb->g->count;
}

/* My key's local vertex, or UINT64_MAX for a ghost's. */
static uint64_t local_of(const numbering *nb, uint32_t key)
{
    return key - nb->below < nb->g->count ? key - nb->below : UINT64_MAX;
}

typedef struct oriented {
    uint64_t *off;
    uint32_t *adj; /* keys */
} oriented;

/* The oriented lists: of each vertex's neighbours, those after it; degree[] holds my
 * vertices' and then the ghosts' by slot. */
static oriented oriented_lists(const numbering *nb, const csr *s, const uint64_t *degree)
{
    const cr_graph *g = nb->g;
    oriented o = {cr_xmalloc((g->count + 1) * sizeof *o.off),
                  cr_xmalloc((s->off[g->count] ? s->off[g->count] : 1) * sizeof *o.adj)};
    uint64_t at = 0;
    for (uint64_t i = 0; i < g->count; i++) {
        o.off[i] = at;
        for (uint64_t k = s->off[i]; k < s->off[i + 1]; k++) {
            uint64_t v = graph_id_at(s->adj, k), local = v - g->first;
            uint64_t slot = local < g->count ? UINT64_MAX : graph_ghosts_slot(nb->gh, v);
            uint64_t dv = slot == UINT64_MAX ? degree[local] : degree[g->count + slot];
            if (before(degree[i], g->first + i, dv, v))
                o.adj[at++] = slot == UINT64_MAX ? (uint32_t)(nb->below + local)
                                                 : key_of_slot(nb, slot);
        }
    }
    o.off[g->count] = at;
    return o;
}

/* The ghosts whose oriented lists my oriented lists name, subscribed to; far_of[s]
 * is near slot s's place among them. */
static void subscribe_far(cr_graph *g, const numbering *nb, const oriented *o,
                          graph_ghosts *far, uint32_t *far_of)
{
    const graph_ghosts *near = nb->gh;
    memset(far_of, 0xff, (near->nghost ? near->nghost : 1) * sizeof *far_of); /* none */
    for (uint64_t k = 0; k < o->off[g->count]; k++)
        if (local_of(nb, o->adj[k]) == UINT64_MAX)
            far_of[slot_of_key(nb, o->adj[k])] = 0; /* named: numbered below */
    uint64_t n = 0;
    for (uint64_t slot = 0; slot < near->nghost; slot++)
        if (far_of[slot] == 0)
            far_of[slot] = (uint32_t)n++;
    uint64_t *ids = cr_xmalloc((n ? n : 1) * sizeof *ids);
    for (uint64_t slot = 0; slot < near->nghost; slot++)
        if (far_of[slot] != UINT32_MAX)
            ids[far_of[slot]] = near->ids[slot];
    graph_ghosts_subscribe(g, ids, n, far);
}

/* The elements of the sorted list b marked in `mark` (b's keys are distinct). */
static uint64_t marked(const uint8_t *mark, const uint32_t *b, uint64_t nb)
{
    uint64_t n = 0;
    for (uint64_t j = 0; j < nb; j++)
        n += mark[b[j]];
    return n;
}

/* Every triangle at its first vertex i: i's oriented list marked once, then each
 * neighbour's list read against the marks. A merge of the two lists per pair reads
 * i's list again for each of its neighbours, the square of its length per vertex;
 * the marks (a byte per key this rank knows, in cache) read it twice. */
static uint64_t count_triangles(const numbering *nb, const oriented *o, const graph_ghosts *far,
                                const uint32_t *far_of)
{
    const cr_graph *g = nb->g;
    uint8_t *mark = cr_xcalloc(g->count + nb->gh->nghost + 1, 1);
    uint64_t triangles = 0;
    for (uint64_t i = 0; i < g->count; i++) {
        const uint32_t *mine = o->adj + o->off[i];
        uint64_t nmine = o->off[i + 1] - o->off[i];
        if (nmine < 2)
            continue; /* a triangle at i needs two of its later neighbours */
        for (uint64_t k = 0; k < nmine; k++)
            mark[mine[k]] = 1;
        for (uint64_t k = 0; k < nmine; k++) {
            uint32_t key = mine[k];
            uint64_t c = local_of(nb, key);
            if (c != UINT64_MAX) {
                triangles += marked(mark, o->adj + o->off[c], o->off[c + 1] - o->off[c]);
                continue;
            }
            uint64_t f = far_of[slot_of_key(nb, key)];
            triangles += marked(mark, far->list + far->list_off[f],
                                far->list_off[f + 1] - far->list_off[f]);
        }
        for (uint64_t k = 0; k < nmine; k++)
            mark[mine[k]] = 0;
    }
    free(mark);
    return triangles;
}

uint64_t cr_graph_tc(cr_graph *g, cr_tc_stats *stats)
{
    bool copied;
    csr s = simple_lists(g, &copied);
    graph_ghosts near;
    graph_ghosts_build_indexed(g, s.off, s.adj, &near);
    uint64_t *degree = cr_xmalloc((g->count + near.nghost + 1) * sizeof *degree);
    for (uint64_t i = 0; i < g->count; i++)
        degree[i] = s.off[i + 1] - s.off[i];
    graph_ghosts_push(&near, degree);
    numbering nb = {g, &near, cr_lower_bound_u64(near.ids, 0, near.nghost, g->first)};
    oriented o = oriented_lists(&nb, &s, degree);
    free(degree);
    if (copied)
        free(s.off), graph_ids_free(s.adj);

    graph_ghosts far;
    uint32_t *far_of = cr_xmalloc((near.nghost ? near.nghost : 1) * sizeof *far_of);
    subscribe_far(g, &nb, &o, &far, far_of);
    graph_list_keys keys = {id_of, key_of, &nb};
    uint64_t fetched = graph_ghosts_fetch_lists(&far, o.off, o.adj, &keys);
    uint64_t triangles = count_triangles(&nb, &o, &far, far_of);
    uint64_t mine[4] = {triangles, o.off[g->count], fetched, o.off[g->count]};
    uint64_t all[4];
    cr_module_allreduce_u64(g->comm, mine, all, 4, CR_OP_SUM);
    if (stats)
        *stats = (cr_tc_stats){.oriented_edges = all[1], .fetched_ids = all[2],
                               .intersections = all[3]};
    free(o.off), free(o.adj), free(far_of);
    graph_ghosts_free(&far);
    graph_ghosts_free(&near);
    return all[0];
}
