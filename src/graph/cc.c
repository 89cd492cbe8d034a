/* Connected components with the local part done locally (cr_graph_cc, docs/graph.md).
 *
 * 1. Local union-find over the edges whose two ends this rank owns, in the manner of
 *    Afforest (Sutton, Ben-Nun and Barak, IPDPS 2018): link every vertex with its
 *    first two neighbours, find the most frequent root among sampled vertices (the
 *    rank's giant component), then link every other vertex through all its local
 *    edges. A giant vertex's remaining local edges are skipped: the graph is
 *    symmetric, so the other end's own pass links them when it is not in the giant.
 * 2. Every rank learns every rank's giant (a bitmap of its vertices and its smallest
 *    id, broadcast). A cut edge then costs at most one record: a local component
 *    with an edge to another rank's giant is attached to that giant (it is part of
 *    it), and its further edges to giants become edges between giants; an edge
 *    between two non-giant vertices is sent once, by the end with the smaller id, to
 *    the other end's owner, which knows both components; an edge between two giants
 *    is found by a scan that stops as soon as every other rank's giant has been met.
 * 3. The super-edges (pairs of giants and of unattached components: few where giants
 *    exist) and, per giant, the smallest id attached to it are broadcast; every rank
 *    runs a union-find over them. A vertex's label is the smallest id of its
 *    component, as the sequential check expects.
 * Everything travels as mailbox records, so it runs on either transport. */
#include "graph/graph_internal.h"

#include "common/fatal.h"
#include "courier/rng.h"
#include "courier/mailbox.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT64_MAX
#define NO_ROOT UINT32_MAX
#define SAMPLE_NEIGHBOURS 2 /* Afforest's neighbour rounds */
#define SAMPLE_SPAN 8       /* the list entries they look at: a cache line */
#define SAMPLE_VERTICES 1024 /* vertices sampled to find the giant component */
#define PAIRS_PER_RECORD 4096 /* super-edges per broadcast record (64 KiB) */

/* ---------------------------------------------------------------- union-find */

/* Indices are 32 bits: a rank holds fewer than 2^32 vertices (cr_graph_cc refuses
 * more), and the parents of 2^17 vertices then fit in half a megabyte of cache. */
static uint32_t find(uint32_t *p, uint32_t x)
{
    while (p[x] != x) {
        p[x] = p[p[x]]; /* path halving */
        x = p[x];
    }
    return x;
}

/* Union under the giant's root when one side is it (so it stays the giant's root),
 * else under the smaller root. */
static void unite(uint32_t *p, uint32_t a, uint32_t b, uint32_t giant)
{
    a = find(p, a), b = find(p, b);
    if (a == b)
        return;
    if (b == giant || (a != giant && b < a)) {
        uint32_t t = a;
        a = b, b = t;
    }
    p[b] = a;
}

/* ---------------------------------------------------------------- state */

typedef struct pair {
    uint64_t a, b;
} pair;

typedef struct cc_state cc_state;

typedef struct cc_run {
    cr_graph *g;
    const cc_state *st; /* the comm's handlers */
    uint32_t *parent;  /* local union-find over local indices; after the local phase
                          every entry is its vertex's root */
    uint32_t giant;    /* the root of my giant, NO_ROOT if I have no vertices */
    uint64_t *min_id;  /* per local root: the smallest global id in its component;
                          the caller's label array (only roots' entries are used, and
                          the last step turns it into labels in place), so a call
                          touches no fresh 8 bytes per vertex of its own */
    uint64_t *giant_bits; /* bit v: vertex v is in its owner's giant (n bits) */
    uint64_t *giant_id;   /* per rank: its giant's smallest id, NONE if it has none */
    int32_t *attach;      /* per local root outside the giant: the rank whose giant it
                             has an edge to, or -1 */
    uint64_t *involved;   /* bit per local root: a cut-edge record named its component */
    uint32_t *outside;    /* my vertices outside the giant that have edges: the only
                             ones the later phases visit (the rest keep their labels) */
    uint64_t noutside;
    uint32_t *attached;   /* local roots attached to a giant, in attach order */
    uint64_t nattached;
    uint64_t *attached_min; /* per rank: the smallest id of the components attached to
                             its giant (here, then over all ranks), NONE if none */
    pair *super;          /* super-edges: this rank's, then (after the broadcast) all */
    size_t nsuper, super_cap;
    pair *all;
    size_t nall, all_cap;
    uint64_t records;     /* cut-edge records this rank sent */
} cc_run;

/* The handlers, registered on the comm by the first call there (collective), and the
 * call in progress, for them. */
struct cc_state {
    int h_cc_giant, h_cc_cut, h_cc_super, h_cc_minima;
    cc_run *run;
};

static void push_pair(pair **v, size_t *n, size_t *cap, uint64_t a, uint64_t b)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 1024;
        *v = cr_xrealloc(*v, *cap * sizeof **v);
    }
    (*v)[(*n)++] = (pair){a < b ? a : b, a < b ? b : a};
}

static bool is_giant(const cc_run *r, uint64_t v)
{
    return r->giant_bits[v >> 6] >> (v & 63) & 1;
}

/* The super-graph node a local component stands for: its own id, or, attached to a
 * giant, that giant's id. */
static uint64_t node_of(cc_run *r, uint64_t local)
{
    uint32_t root = r->parent[local];
    int32_t s = r->attach[root];
    return s >= 0 ? r->giant_id[s] : r->min_id[root];
}

/* ---------------------------------------------------------------- handlers */

/* A rank's giant: {giant id, first word, words of the bitmap covering its vertices}.
 * Every bit in them is a fact (other ranks' bits the sender already had are right
 * too), so they are or-ed in. */
static void on_giant(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm;
    cc_run *r = ((cc_state *)user)->run;
    const uint64_t *m = payload;
    r->giant_id[src] = m[0];
    uint64_t w0 = m[1], nwords = len / sizeof *m - 2;
    for (uint64_t k = 0; k < nwords; k++)
        r->giant_bits[w0 + k] |= m[2 + k];
}

/* A component named in a cut-edge record: if it is attached to a giant, it needs an
 * edge to that giant in the super-graph (added after the cut phase). */
static void involve(cc_run *r, uint32_t root)
{
    r->involved[root >> 6] |= UINT64_C(1) << (root & 63);
}

/* A cut edge between two non-giant vertices: {v (mine), the sender's component's
 * id}. Components are named by their own ids here: attachments may still be made. */
static void on_cut_edges(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    cc_run *r = ((cc_state *)user)->run;
    cr_graph *g = r->g;
    for (size_t k = 0; k < b->count; k++) {
        uint64_t m[2];
        memcpy(m, cr_batch_payload(b, k), sizeof m);
        uint32_t root = r->parent[m[0] - g->first];
        involve(r, root);
        if (r->min_id[root] != m[1])
            push_pair(&r->super, &r->nsuper, &r->super_cap, r->min_id[root], m[1]);
    }
}

/* A rank's smallest attached id per giant: P values. */
static void on_minima(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm, (void)src;
    cc_run *r = ((cc_state *)user)->run;
    for (size_t s = 0; s < len / sizeof(uint64_t); s++) {
        uint64_t m;
        memcpy(&m, (const char *)payload + s * sizeof m, sizeof m);
        if (m < r->attached_min[s])
            r->attached_min[s] = m;
    }
}

/* A run of some rank's super-edges. */
static void on_super_edges(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm, (void)src;
    cc_run *r = ((cc_state *)user)->run;
    size_t n = len / sizeof(pair);
    for (size_t k = 0; k < n; k++) {
        pair p;
        memcpy(&p, (const char *)payload + k * sizeof p, sizeof p);
        push_pair(&r->all, &r->nall, &r->all_cap, p.a, p.b);
    }
}

static const cr_module_type cc_module = {.name = "graph cc", .destroy = cr_module_state_free};

/* The comm's handlers, registered at the first call (the run is set first, for a
 * faster rank's record). */
static const cc_state *start_run(cc_run *r)
{
    cr_comm *comm = r->g->comm;
    bool fresh;
    cc_state *s = cr_module_state_or_new(comm, &cc_module, sizeof *s, &fresh);
    s->run = r;
    if (!fresh)
        return s;
    s->h_cc_giant = cr_register_type(comm, &(cr_handler_type){.fn = on_giant,
                                                               .name = "cc giant"}, s);
    s->h_cc_cut = cr_register_type(comm, &(cr_handler_type){.batch = on_cut_edges,
                                                             .name = "cc cut edge"}, s);
    s->h_cc_super = cr_register_type(comm, &(cr_handler_type){.fn = on_super_edges,
                                                               .name = "cc super-edges"}, s);
    s->h_cc_minima = cr_register_type(comm, &(cr_handler_type){.fn = on_minima,
                                                                .name = "cc attached minima"}, s);
    return s;
}

/* ---------------------------------------------------------------- phase 1: local */

static bool owns(const cr_graph *g, uint64_t v)
{
    return v - g->first < g->count;
}

static int compare_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* The most frequent root among up to SAMPLE_VERTICES vertices drawn from the seed. */
static uint32_t most_frequent_root(cc_run *r, uint64_t seed)
{
    uint64_t nl = r->g->count, samples = nl < SAMPLE_VERTICES ? nl : SAMPLE_VERTICES;
    if (nl == 0)
        return NO_ROOT;
    uint64_t *roots = cr_xmalloc(samples * sizeof *roots), state = seed;
    for (uint64_t k = 0; k < samples; k++)
        roots[k] = find(r->parent,
                        (uint32_t)(samples == nl ? k : cr_rng_bounded(cr_rng_next(&state), nl)));
    /* The mode: the longest run of equal roots once sorted. (A majority vote is not
     * enough: the giant often holds less than half of the vertices, the rest being
     * isolated, and the vote then picks a small component.) */
    qsort(roots, samples, sizeof *roots, compare_u64);
    uint64_t best = roots[0], best_run = 0;
    for (uint64_t k = 0, run = 0; k < samples; k++) {
        run = k > 0 && roots[k] == roots[k - 1] ? run + 1 : 1;
        if (run > best_run)
            best = roots[k], best_run = run;
    }
    free(roots);
    return (uint32_t)best;
}

/* Link vertex i to its first SAMPLE_NEIGHBOURS neighbours of this rank among the
 * first SAMPLE_SPAN of its list (one cache line of ids). Afforest links the first
 * neighbours, whoever owns them; here the remote ones would link nothing, and at 2
 * ranks half of them are remote, which left a vertex in four outside the giant, to be
 * linked through its whole list after. All the rounds in one pass, so a list's first
 * line is read once. */
static void sample_local_neighbours(cc_run *r, uint64_t i)
{
    const cr_graph *g = r->g;
    uint64_t e = g->offsets[i], end = g->offsets[i + 1];
    if (end - e > SAMPLE_SPAN)
        end = e + SAMPLE_SPAN;
    for (int linked = 0; e < end && linked < SAMPLE_NEIGHBOURS; e++)
        if (owns(g, graph_nbr(g, e))) {
            unite(r->parent, (uint32_t)i, (uint32_t)(graph_nbr(g, e) - g->first), NO_ROOT);
            linked++;
        }
}

static void local_phase(cc_run *r, uint64_t seed)
{
    cr_graph *g = r->g;
    uint64_t nl = g->count;
    uint32_t *p = r->parent;
    for (uint64_t i = 0; i < nl; i++)
        p[i] = (uint32_t)i;
    /* Afforest's sampling: each vertex's first local neighbours. */
    for (uint64_t i = 0; i < nl; i++) {
        if (i + GRAPH_PREFETCH_AHEAD < nl)
            graph_prefetch_list(g, i + GRAPH_PREFETCH_AHEAD);
        sample_local_neighbours(r, i);
    }
    uint32_t giant = most_frequent_root(r, seed);
    /* Every vertex outside the giant through all its local edges (those sampled
     * again: a find each, which returns at once). */
    for (uint64_t i = 0; i < nl; i++) {
        if (find(p, (uint32_t)i) == giant)
            continue;
        for (uint64_t e = g->offsets[i]; e < g->offsets[i + 1]; e++)
            if (owns(g, graph_nbr(g, e)))
                unite(p, (uint32_t)i, (uint32_t)(graph_nbr(g, e) - g->first), giant);
    }
    /* Compress every path, note each component's smallest id (its first vertex in
     * this ascending pass; the giant's root need not be it: it stayed the root), mark
     * the giant's vertices and list the others that have edges. Branch-free where the
     * outcome is random: on R-MAT a mispredicted branch per vertex cost more than the
     * pass. */
    r->giant = giant;
    for (uint64_t i = 0; i < nl; i++)
        r->min_id[i] = NONE;
    uint64_t *bits = r->giant_bits, first = g->first, n_out = 0;
    uint32_t *outside = r->outside;
    for (uint64_t i = 0; i < nl; i++) {
        uint32_t root = find(p, (uint32_t)i);
        p[i] = root;
        if (r->min_id[root] == NONE)
            r->min_id[root] = first + i;
        uint64_t in_giant = root == giant;
        bits[(first + i) >> 6] |= in_giant << ((first + i) & 63);
        outside[n_out] = (uint32_t)i;
        n_out += !in_giant & (g->offsets[i] != g->offsets[i + 1]);
    }
    r->noutside = n_out;
}

/* ---------------------------------------------------------------- phase 2: cut edges */

/* Tell every rank which of my vertices are in my giant (the most frequent root of the
 * local phase, its bits set then) and its smallest id. */
static void share_giant(cc_run *r)
{
    cr_graph *g = r->g;
    uint64_t nl = g->count, first = g->first;
    uint64_t w0 = first >> 6, nwords = nl ? ((first + nl - 1) >> 6) - w0 + 1 : 0;
    uint64_t *m = cr_xmalloc((2 + nwords) * sizeof *m);
    m[0] = r->giant == NO_ROOT ? NONE : r->min_id[r->giant];
    m[1] = w0;
    memcpy(m + 2, r->giant_bits + w0, nwords * sizeof *m);
    cr_async_bcast(g->comm, r->st->h_cc_giant, m, (2 + nwords) * sizeof *m);
    free(m);
    cr_barrier(g->comm);
}

/* The cut edges of a vertex outside the giant. To another rank's giant: the first
 * attaches the vertex's component to that giant (it is part of it); later ones to
 * other giants become edges between giants. To a vertex outside the giants: one
 * record, from the end with the smaller id to the other end's owner, which pairs the
 * two components. */
static void cut_edges_outside(cc_run *r, uint64_t i)
{
    cr_graph *g = r->g;
    uint64_t u = g->first + i;
    uint32_t root = r->parent[i];
    for (uint64_t e = g->offsets[i]; e < g->offsets[i + 1]; e++) {
        uint64_t v = graph_nbr(g, e);
        if (owns(g, v) || (!is_giant(r, v) && v < u))
            continue;
        int s = cr_block_owner(g->n, g->size, v);
        if (!is_giant(r, v)) {
            uint64_t m[2] = {v, r->min_id[root]};
            cr_async(g->comm, s, r->st->h_cc_cut, m, sizeof m);
            involve(r, root);
            r->records++;
        } else if (r->attach[root] < 0) {
            r->attach[root] = s;
            r->attached[r->nattached++] = root;
            if (r->min_id[root] < r->attached_min[s])
                r->attached_min[s] = r->min_id[root];
        } else if (r->attach[root] != s) {
            push_pair(&r->super, &r->nsuper, &r->super_cap, r->giant_id[r->attach[root]],
                      r->giant_id[s]);
        }
    }
}

/* Edges between my giant and other ranks' giants: one super-edge per rank met. The
 * first neighbours usually meet them all; the scan goes on only while some rank's
 * giant has not been met, which may be because no edge joins the two. */
static void giant_to_giant(cc_run *r, uint64_t mine)
{
    cr_graph *g = r->g;
    bool *met = cr_xcalloc((size_t)g->size, sizeof *met);
    int missing = 0;
    for (int s = 0; s < g->size; s++) {
        met[s] = s == g->rank || r->giant_id[s] == NONE;
        missing += !met[s];
    }
    for (int pass = 0; pass < 2 && missing > 0; pass++)
        for (uint64_t i = 0; i < g->count && missing > 0; i++) {
            if (r->parent[i] != r->giant)
                continue;
            uint64_t lo = g->offsets[i], hi = g->offsets[i + 1];
            uint64_t from = pass == 0 ? lo : lo + SAMPLE_NEIGHBOURS;
            uint64_t to = pass == 0 && hi - lo > SAMPLE_NEIGHBOURS ? lo + SAMPLE_NEIGHBOURS : hi;
            for (uint64_t e = from; e < to; e++) {
                uint64_t v = graph_nbr(g, e);
                if (owns(g, v) || !is_giant(r, v))
                    continue;
                int s = cr_block_owner(g->n, g->size, v);
                if (!met[s]) {
                    met[s] = true, missing--;
                    push_pair(&r->super, &r->nsuper, &r->super_cap, mine, r->giant_id[s]);
                }
            }
        }
    free(met);
}

static void cut_phase(cc_run *r)
{
    cr_graph *g = r->g;
    for (uint64_t k = 0; k < r->noutside; k++)
        cut_edges_outside(r, r->outside[k]);
    if (r->giant != NO_ROOT)
        giant_to_giant(r, r->giant_id[g->rank]);
    cr_barrier(g->comm);
    /* Attached components that records named: their edge to their giant. */
    for (uint64_t k = 0; k < r->nattached; k++) {
        uint32_t root = r->attached[k];
        if (r->involved[root >> 6] >> (root & 63) & 1)
            push_pair(&r->super, &r->nsuper, &r->super_cap, r->min_id[root],
                      r->giant_id[r->attach[root]]);
    }
}

/* ---------------------------------------------------------------- phase 3: super-graph */

static int compare_pairs(const void *x, const void *y)
{
    const pair *a = x, *b = y;
    return a->a != b->a ? (a->a < b->a ? -1 : 1) : a->b != b->b ? (a->b < b->b ? -1 : 1) : 0;
}

/* Sort and drop repeated pairs, in place; returns how many are left. */
static size_t unique_pairs(pair *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, compare_pairs);
    size_t k = 1;
    for (size_t i = 1; i < n; i++)
        if (v[i].a != v[k - 1].a || v[i].b != v[k - 1].b)
            v[k++] = v[i];
    return k;
}

static void share_super_edges(cc_run *r)
{
    cr_graph *g = r->g;
    r->nsuper = unique_pairs(r->super, r->nsuper);
    size_t P = (size_t)g->size;
    uint64_t *minima = cr_xmalloc(P * sizeof *minima);
    memcpy(minima, r->attached_min, P * sizeof *minima);
    for (size_t s = 0; s < P; s++) /* the broadcast brings mine back too */
        r->attached_min[s] = NONE;
    cr_async_bcast(g->comm, r->st->h_cc_minima, minima, P * sizeof *minima);
    free(minima);
    for (size_t k = 0; k < r->nsuper; k += PAIRS_PER_RECORD) {
        size_t n = r->nsuper - k < PAIRS_PER_RECORD ? r->nsuper - k : PAIRS_PER_RECORD;
        cr_async_bcast(g->comm, r->st->h_cc_super, r->super + k, n * sizeof(pair));
    }
    cr_barrier(g->comm);
}

static uint64_t position(const uint64_t *ids, size_t n, uint64_t id)
{
    uint64_t lo = cr_lower_bound_u64(ids, 0, n, id);
    return lo < n && ids[lo] == id ? lo : NONE;
}

/* Union-find over the super-graph's nodes (sorted ids, so an index's order is its
 * id's), every giant among them; a set's label is the smallest of its ids and of the
 * ids attached to its giants. Then every vertex's label, once per local root. */
static void label_vertices(cc_run *r, uint64_t *label)
{
    cr_graph *g = r->g;
    r->nall = unique_pairs(r->all, r->nall);
    size_t nids = 0, P = (size_t)g->size;
    uint64_t *ids = cr_xmalloc((2 * r->nall + P + 1) * sizeof *ids);
    for (size_t k = 0; k < r->nall; k++)
        ids[nids++] = r->all[k].a, ids[nids++] = r->all[k].b;
    for (size_t s = 0; s < P; s++)
        if (r->giant_id[s] != NONE)
            ids[nids++] = r->giant_id[s];
    qsort(ids, nids, sizeof *ids, compare_u64);
    size_t n = 0;
    for (size_t k = 0; k < nids; k++)
        if (n == 0 || ids[k] != ids[n - 1])
            ids[n++] = ids[k];
    if (n >= NO_ROOT)
        cr_fatal("cr_graph_cc: %zu components are joined across ranks, more than 2^32 - 1", n);
    uint32_t *p = cr_xmalloc((n + 1) * sizeof *p);
    uint64_t *best = cr_xmalloc((n + 1) * sizeof *best);
    for (size_t k = 0; k < n; k++)
        p[k] = (uint32_t)k, best[k] = ids[k];
    for (size_t s = 0; s < P; s++) {
        uint64_t at = r->giant_id[s] == NONE ? NONE : position(ids, n, r->giant_id[s]);
        if (at != NONE && r->attached_min[s] < best[at])
            best[at] = r->attached_min[s];
    }
    for (size_t k = 0; k < r->nall; k++)
        unite(p, (uint32_t)position(ids, n, r->all[k].a), (uint32_t)position(ids, n, r->all[k].b),
              NO_ROOT);
    for (size_t k = 0; k < n; k++) {
        uint32_t root = find(p, (uint32_t)k);
        if (best[k] < best[root])
            best[root] = best[k];
    }
    /* The label of each root whose component may have joined others (the giant's, and
     * those of the listed vertices; the rest keep their smallest id), into min_id,
     * each root once: node_of reads the root's entry, which this loop overwrites.
     * Then every vertex's label: its root's. */
    uint64_t nroots = r->noutside + (r->giant != NO_ROOT);
    for (uint64_t k = 0; k < nroots; k++) {
        uint32_t i = k < r->noutside ? r->outside[k] : r->giant, root = r->parent[i];
        if (k < r->noutside && r->min_id[root] != g->first + i)
            continue; /* once per root: at its smallest vertex, listed whenever any is */
        uint64_t node = node_of(r, i), at = position(ids, n, node);
        r->min_id[root] = at == NONE ? node : best[find(p, (uint32_t)at)];
    }
    /* min_id is label: a root's entry is final, and a vertex that is no root is
     * nobody's root, so writing its entry loses nothing still to be read. */
    for (uint64_t i = 0; i < g->count; i++)
        label[i] = label[r->parent[i]];
    free(best);
    free(p);
    free(ids);
}

/* ---------------------------------------------------------------- the call */

void cr_graph_cc(cr_graph *g, uint64_t *label, cr_graph_cc_stats *stats)
{
    uint64_t nl = g->count;
    if (nl >= NO_ROOT)
        cr_fatal("cr_graph_cc: this rank holds %llu vertices, more than 2^32 - 1",
                 (unsigned long long)nl);
    cc_run r = {.g = g};
    r.parent = cr_xmalloc_large(nl + 1, sizeof *r.parent);
    r.min_id = label;
    r.giant_bits = cr_xcalloc((g->n + 63) / 64 + 1, sizeof *r.giant_bits);
    r.giant_id = cr_xmalloc((size_t)g->size * sizeof *r.giant_id);
    r.attached_min = cr_xmalloc((size_t)g->size * sizeof *r.attached_min);
    r.attach = cr_xmalloc_large(nl + 1, sizeof *r.attach);
    r.involved = cr_xcalloc(nl / 64 + 1, sizeof *r.involved);
    r.outside = cr_xmalloc_large(nl + 1, sizeof *r.outside);
    r.attached = cr_xmalloc_large(nl + 1, sizeof *r.attached);
    for (int s = 0; s < g->size; s++)
        r.giant_id[s] = r.attached_min[s] = NONE;
    for (uint64_t i = 0; i < nl; i++)
        r.attach[i] = -1;
    r.st = start_run(&r);

    local_phase(&r, 0x243f6a8885a308d3ULL ^ g->first);
    share_giant(&r);
    cut_phase(&r);
    share_super_edges(&r);
    label_vertices(&r, label);

    if (stats) {
        uint64_t in_giant = 0;
        for (uint64_t i = 0; i < nl; i++)
            in_giant += is_giant(&r, g->first + i);
        *stats = (cr_graph_cc_stats){.cut_records = r.records, .super_edges = r.nall, .rounds = 1,
                                     .giant_vertices = in_giant};
    }
    ((cc_state *)r.st)->run = NULL;
    free(r.parent);
    free(r.giant_bits);
    free(r.giant_id);
    free(r.attached_min);
    free(r.attach);
    free(r.involved);
    free(r.outside);
    free(r.attached);
    free(r.super);
    free(r.all);
}
