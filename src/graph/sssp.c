/* Single-source shortest paths by delta-stepping (Meyer and Sanders, "Delta-stepping:
 * a parallelizable shortest path algorithm", J. Algorithms 2003), asynchronous within
 * a bucket as GAP's form is (Beamer, Asanovic and Patterson, "The GAP benchmark
 * suite", 2015: every edge of a vertex relaxed when the vertex is taken, no split of
 * light and heavy edges).
 *
 * Bucket k holds the vertices whose tentative distance lies in [k delta, (k+1) delta).
 * The ranks agree on the smallest bucket any of them holds, then settle it in one
 * wave: a vertex taken relaxes its edges, in place for my own vertices and by a record
 * {vertex, distance} to the owner for the others; a distance lowered into the current
 * bucket is taken at once (the handler drains), one lowered into a later bucket waits
 * in its bin. The barrier that ends the wave finds every rank idle
 * and no record in flight: the bucket is settled, since every distance below
 * (k+1) delta is then final (weights are not negative).
 *
 * Across ranks a vertex taken sends one record {slot, distance} to each rank that
 * copies it (ghosts.c), which relaxes its own edges from that copy through the
 * reverse index. On a comm whose ranks are one node there is no index: every
 * vertex's distance lies in the node's memory, the owner alone writes it, and a rank
 * relaxing an edge to another rank's vertex reads that distance in place and sends
 * the owner a record {vertex, distance} only when it would lower it. */
#include "graph/ghosts.h"

#include "common/fatal.h"
#include "courier/mailbox.h"
#include "mailbox/module.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A vertex waiting in a later bucket (lazily deleted: stale once its distance has
 * moved to another bucket or been relaxed). In a bin the bucket is the bin's, and an
 * entry is the vertex alone; beyond the bins' reach it is both. */
typedef struct waiting {
    uint64_t bucket, local;
} waiting;

typedef struct far_list {
    waiting *items;
    size_t n, cap;
} far_list;

/* {a ghost's slot at the receiver, its distance}. */
typedef struct slot_distance {
    uint64_t slot;
    double d;
} slot_distance;

/* {the owner's local index of a vertex, a distance}: a record within one node. */
typedef struct local_distance {
    uint64_t local;
    double d;
} local_distance;

/* Waiting entries live in chunks of one pool kept with the comm across calls: a
 * list emptied gives its chunks back, so a call touches fresh memory only for the
 * most entries waiting at once, and a later call none. A fresh page is dear (12-20
 * microseconds a small page on a virtual machine: docs/design-notes.md, "Page
 * faults"); the pool's blocks are huge pages. An entry is 4 bytes: a vertex of a
 * rank's first 2^32 (any other waits in the far list). */
enum { CHUNK_ITEMS = 253, POOL_BLOCK = 2 << 20 };

typedef struct wait_chunk {
    struct wait_chunk *next;
    uint32_t n;
    uint32_t items[CHUNK_ITEMS]; /* my vertices, by local index */
} wait_chunk; /* 1 KiB */

typedef struct wait_pool {
    wait_chunk *free;        /* chunks given back */
    wait_chunk *fresh, *end; /* the newest block's chunks never handed out */
    void **blocks;
    size_t nblocks;
} wait_pool;

typedef struct waiting_list {
    wait_chunk *top; /* the chunk being filled; the others follow it */
} waiting_list;

/* What a call needs beyond the graph, kept with the comm for the next call (the
 * first call's set-up, which later ones reuse). */
typedef struct sssp_scratch {
    wait_pool pool;
    waiting_list *bins;
    uint64_t nbins;
    uint64_t *queue;
    size_t qcap;
    uint64_t *settled;  /* across nodes: room for every vertex of the rank */
    double *relaxed_at; /* the same */
    uint64_t vertices;  /* how many settled and relaxed_at hold */
    uint64_t *queued;   /* on one node: a bit per vertex of the rank */
    uint64_t queued_bits;
} sssp_scratch;

/* Bins held at once: buckets further than this from the first wait in a list. */
#define MAX_BINS ((uint64_t)1 << 16)

typedef struct sssp_run {
    cr_graph *g;
    const graph_ghosts *gh;
    int h_light, h_heavy;
    int h_near;
    double *dist;           /* my vertices' (on one node: my range of node_dist) */
    const double *node_dist; /* on one node: every vertex's, by id; else NULL */
    double *relaxed_at; /* across nodes: the distance at which the vertex's edges were
                           last relaxed */
    uint64_t *queued; /* on one node: my vertices waiting to be taken (bit i: local i) */
    double delta, per_delta; /* the bucket width and 1 / it */
    uint64_t bucket; /* the one being settled */
    bool heavy;      /* relaxing the settled vertices' heavy edges */
    uint64_t *queue; /* my vertices to take in this bucket, first in first out */
    size_t head, nqueue, qcap;
    uint64_t *settled; /* my vertices taken in this bucket, for their heavy edges */
    size_t nsettled;
    wait_pool *pool;
    waiting_list *bins; /* the later buckets: bins[k] holds bucket base + k */
    uint64_t nbins, base;
    far_list far;       /* buckets beyond the bins' reach */
    uint64_t relaxations, messages, taken;
} sssp_run;

typedef struct sssp_state {
    int h_light, h_heavy, h_near;
    sssp_run *run; /* the call in progress, for the handler */
    sssp_scratch scratch;
} sssp_state;

/* ---------------------------------------------------------------- the buckets */

static uint64_t bucket_of(const sssp_run *r, double d)
{
    double b = d * r->per_delta; /* d >= 0: the conversion rounds down, as floor would */
    return b < 1.8e19 ? (uint64_t)b : UINT64_MAX - 1;
}

static wait_chunk *chunk_take(wait_pool *p)
{
    wait_chunk *c = p->free;
    if (c) {
        p->free = c->next;
    } else {
        if (p->fresh == p->end) {
            p->blocks = cr_xrealloc(p->blocks, (p->nblocks + 1) * sizeof *p->blocks);
            p->fresh = cr_xmalloc_huge(POOL_BLOCK / sizeof *c, sizeof *c); /* kept */
            p->end = p->fresh + POOL_BLOCK / sizeof *c;
            p->blocks[p->nblocks++] = p->fresh;
        }
        c = p->fresh++;
    }
    c->next = NULL;
    c->n = 0;
    return c;
}

static void pool_free(wait_pool *p)
{
    for (size_t k = 0; k < p->nblocks; k++)
        free(p->blocks[k]);
    free(p->blocks);
    *p = (wait_pool){0};
}

static void push_to(wait_pool *p, waiting_list *l, uint32_t local)
{
    wait_chunk *c = l->top;
    if (!c || c->n == CHUNK_ITEMS) {
        c = chunk_take(p);
        c->next = l->top;
        l->top = c;
    }
    c->items[c->n++] = local;
}

/* The list's chunks back to the pool. */
static void clear_list(wait_pool *p, waiting_list *l)
{
    wait_chunk *last = l->top;
    if (!last)
        return;
    while (last->next)
        last = last->next;
    last->next = p->free;
    p->free = l->top;
    l->top = NULL;
}

#define EACH_WAITING(l, c, j)                                                             \
    for (wait_chunk *c = (l)->top; c; c = c->next)                                        \
        for (size_t j = 0; j < c->n; j++)

static void push_far(far_list *l, waiting w)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->items = cr_xrealloc(l->items, l->cap * sizeof *l->items);
    }
    l->items[l->n++] = w;
}

/* Wait in bucket b: in its bin when b is within MAX_BINS of the bins' base (and the
 * vertex's index fits an entry), else in the far list. */
static void wait_in(sssp_run *r, uint64_t b, uint64_t local)
{
    if (b < r->base || b - r->base >= MAX_BINS || local > UINT32_MAX) {
        push_far(&r->far, (waiting){b, local});
        return;
    }
    uint64_t at = b - r->base;
    if (at >= r->nbins) {
        uint64_t n = r->nbins ? r->nbins : 16;
        while (n <= at)
            n *= 2;
        r->bins = cr_xrealloc(r->bins, n * sizeof *r->bins);
        memset(r->bins + r->nbins, 0, (n - r->nbins) * sizeof *r->bins);
        r->nbins = n;
    }
    push_to(r->pool, &r->bins[at], (uint32_t)local);
}

static bool is_queued(const sssp_run *r, uint64_t local)
{
    return r->queued[local >> 6] >> (local & 63) & 1;
}

/* A waiting entry still stands for work: its vertex's distance is in that bucket and
 * its edges have not been relaxed at that distance (on one node: the vertex waits to
 * be taken, and an entry of another bucket is stale). */
static bool live(const sssp_run *r, uint64_t bucket, uint64_t local)
{
    double d = r->dist[local];
    if (bucket_of(r, d) != bucket)
        return false;
    return r->queued ? is_queued(r, local) : r->relaxed_at[local] != d;
}

/* Start the bins at bucket `base`: every waiting entry re-placed (rare: only when the
 * far list holds the smallest bucket). */
static void rebase(sssp_run *r, uint64_t base)
{
    for (uint64_t at = 0; at < r->nbins; at++) {
        EACH_WAITING(&r->bins[at], c, j)
            push_far(&r->far, (waiting){r->base + at, c->items[j]});
        clear_list(r->pool, &r->bins[at]);
    }
    far_list far = r->far;
    r->far = (far_list){0};
    r->base = base;
    for (size_t j = 0; j < far.n; j++)
        if (live(r, far.items[j].bucket, far.items[j].local))
            wait_in(r, far.items[j].bucket, far.items[j].local);
    free(far.items);
}

static bool any_live(const sssp_run *r, const waiting_list *l, uint64_t bucket)
{
    EACH_WAITING(l, c, j)
        if (live(r, bucket, c->items[j]))
            return true;
    return false;
}

/* The smallest bucket with live work on this rank, UINT64_MAX for none. */
static uint64_t next_bucket(sssp_run *r)
{
    uint64_t best = UINT64_MAX, far = UINT64_MAX;
    uint64_t at = r->bucket > r->base ? r->bucket - r->base : 0;
    for (; at < r->nbins && best == UINT64_MAX; at++) {
        if (any_live(r, &r->bins[at], r->base + at))
            best = r->base + at;
        else
            clear_list(r->pool, &r->bins[at]); /* nothing live: empty it */
    }
    for (size_t j = 0; j < r->far.n; j++)
        if (r->far.items[j].bucket < far && live(r, r->far.items[j].bucket, r->far.items[j].local))
            far = r->far.items[j].bucket;
    if (far < best) {
        rebase(r, far);
        best = far;
    }
    return best;
}

/* (A vertex is noted once a call: settled has room for every vertex.) */
static void note_settled(sssp_run *r, uint64_t local)
{
    r->settled[r->nsettled++] = local;
}

static void enqueue(sssp_run *r, uint64_t local)
{
    if (r->nqueue == r->qcap) {
        r->qcap = r->qcap ? 2 * r->qcap : 1024;
        r->queue = cr_xrealloc(r->queue, r->qcap * sizeof *r->queue);
    }
    r->queue[r->nqueue++] = local;
}

/* ---------------------------------------------------------------- relaxing */

/* Offer my vertex `local`, at distance `was`, the lower distance d. On one node the
 * other ranks read my distances while I write them: the store is atomic (a plain one
 * on x86). There a vertex waits once for each bucket it enters: one still waiting in
 * the bucket it stays in is not queued again (its entry is taken at its distance of
 * the moment), where a list per bucket would otherwise hold it as often as it drops. */
static void lowered(sssp_run *r, uint64_t local, double was, double d)
{
    __atomic_store(&r->dist[local], &d, __ATOMIC_RELAXED);
    r->relaxations++;
    uint64_t b = bucket_of(r, d);
    if (r->queued) {
        uint64_t bit = (uint64_t)1 << (local & 63);
        if ((r->queued[local >> 6] & bit) && bucket_of(r, was) == b)
            return;
        r->queued[local >> 6] |= bit;
    }
    if (b <= r->bucket && !r->heavy) /* (a heavy edge leads past the bucket, unless
                                        rounding says otherwise: then it waits) */
        enqueue(r, local);
    else
        wait_in(r, b, local);
}

static void relax(sssp_run *r, uint64_t local, double d)
{
    double was = r->dist[local];
    if (d < was)
        lowered(r, local, was, d);
}

/* The first of entries [from, to) heavier than delta (unweighted: every edge weighs
 * 1); a weighted graph's lists are lightest first. A forward scan, not a binary
 * search: the scan's loads run in the list's order and its first is the load the
 * relaxation makes anyway, where a search's loads each wait on the one before (a
 * third of the relaxation's time at scale 18, docs/design-notes-kernels.md); light
 * edges are the few (weights up to delta, about largest / (4 average degree)). */
static uint64_t first_heavy(const sssp_run *r, const float *w, uint64_t from, uint64_t to)
{
    if (!w)
        return 1.0 <= r->delta ? to : from;
    while (from < to && (double)w[from] <= r->delta)
        from++;
    return from;
}

/* How far ahead the relaxations ask for memory (measured at scale 18, 2 ranks on
 * one node: 8 to 32 edges within 5%, none 25-35% slower; docs/design-notes-kernels.md,
 * "sssp's prefetch"). */
enum { PREFETCH_EDGES = 16, PREFETCH_LIST = 4, PREFETCH_OFFSETS = 8 };

/* Relax my vertex i's edges of one class (light: weight at most delta) at distance d:
 * to my vertices in place, to the others by one record {slot, d} per rank that
 * copies i, which relaxes its own edges from i. */
static void relax_edges(sssp_run *r, uint64_t i, double d, bool light)
{
    cr_graph *g = r->g;
    /* in locals: the stores of lowered() could otherwise alias them */
    const uint32_t *col = r->gh->local_col;
    const float *w = r->gh->local_w;
    const double *dist = r->dist;
    uint64_t from = r->gh->local_off[i], to = r->gh->local_off[i + 1];
    uint64_t cut = first_heavy(r, w, from, to); /* lists are lightest first */
    if (light)
        to = cut;
    else
        from = cut;
    for (uint64_t k = from; k < to; k++) {
        if (k + PREFETCH_EDGES < to) /* as in relax_all_on_node */
            __builtin_prefetch(&dist[col[k + PREFETCH_EDGES]]);
        uint32_t c = col[k];
        double nd = d + (w ? (double)w[k] : 1.0);
        if (nd < dist[c])
            lowered(r, c, dist[c], nd);
    }
    const graph_ghosts *gh = r->gh;
    for (uint64_t j = gh->sub_off[i]; j < gh->sub_off[i + 1]; j++) {
        slot_distance m = {gh->sub[j].slot, d};
        cr_async(g->comm, (int)gh->sub[j].rank, light ? r->h_light : r->h_heavy, &m, sizeof m);
        r->messages++;
    }
}

/* A record to the owner of v, a vertex of another rank of my node: d would lower
 * its distance. */
static void send_lower(sssp_run *r, uint64_t v, double d)
{
    const cr_graph *g = r->g;
    int owner = cr_block_owner(g->n, g->size, v);
    local_distance m = {v - cr_block_first(g->n, g->size, owner), d};
    cr_async(g->comm, owner, r->h_near, &m, sizeof m);
    r->messages++;
}

/* The same on one node, in GAP's form: every edge of vertex i at once, light and
 * heavy, since a heavy edge's end lands in a later bucket where it waits. A vertex
 * whose distance drops again within the bucket relaxes its heavy edges twice, which
 * is rare; in exchange its list is read once, not once for each class (each list's
 * first lines are cache misses: half the time of the relaxations at scale 18,
 * docs/design-notes-kernels.md, "sssp on one node"), and the bucket ends in one
 * barrier, not two. My edges to my vertices are relaxed in place; to the node's other ranks'
 * vertices, their distance is read where it lies and a record goes to the owner only
 * when this one is lower (the owner, the only writer, checks it again). */
static void relax_all_on_node(sssp_run *r, uint64_t i, double d)
{
    /* in locals: lowered()'s stores could otherwise alias them, and the loop would
     * read them again at every edge */
    const cr_graph *g = r->g;
    const float *w = g->wadj;
    const uint8_t *w8 = g->w8;
    const uint32_t *adj32 = graph_adj32(g);
    const double *mine = r->dist, *all = r->node_dist;
    const uint64_t first = g->first, count = g->count;
    const uint64_t from = g->offsets[i], to = g->offsets[i + 1];
    for (uint64_t k = from; k < to; k++) {
        /* the distance PREFETCH_EDGES edges on, which the loop reaches after as many
         * independent loads (a distance another rank wrote is a transfer between
         * cores): written here, not in a helper, so the compiler keeps it */
        if (adj32 && k + PREFETCH_EDGES < to)
            __builtin_prefetch(&all[adj32[k + PREFETCH_EDGES]]);
        uint64_t v = adj32 ? adj32[k] : graph_nbr(g, k);
        double nd = d + (w8 ? (double)w8[k] : w ? (double)w[k] : 1.0);
        if (v - first < count) {
            double was = mine[v - first];
            if (nd < was)
                lowered(r, v - first, was, nd);
            continue;
        }
        double now;
        __atomic_load(&all[v], &now, __ATOMIC_RELAXED);
        if (nd < now)
            send_lower(r, v, nd);
    }
}

/* Take every queued vertex of the current bucket: relax its edges (again, if its
 * distance has dropped since). Across nodes only the light ones, and the vertex is
 * noted for the heavy ones; on one node all of them (relax_all_on_node). */
static void drain(sssp_run *r)
{
    while (r->head < r->nqueue) {
        uint64_t i = r->queue[r->head++];
        if (r->head == r->nqueue)
            r->head = r->nqueue = 0; /* empty: start over at the front */
        double d = r->dist[i];
        if (r->queued) {
            if (!is_queued(r, i))
                continue; /* taken already at this distance */
            r->queued[i >> 6] &= ~((uint64_t)1 << (i & 63));
            r->taken++;
            /* The vertices queued after this one: their offsets PREFETCH_OFFSETS on,
             * the head of their lists (and weights) PREFETCH_LIST on, so taking a
             * vertex does not wait on three misses in a row (offsets, list, distance
             * of its first neighbour). Written in place: see relax_all_on_node. */
            if (r->head + PREFETCH_OFFSETS < r->nqueue)
                __builtin_prefetch(&r->g->offsets[r->queue[r->head + PREFETCH_OFFSETS]]);
            if (r->head + PREFETCH_LIST < r->nqueue) {
                uint64_t at = r->g->offsets[r->queue[r->head + PREFETCH_LIST]];
                if (graph_adj32(r->g))
                    __builtin_prefetch(&graph_adj32(r->g)[at]);
                if (r->g->w8)
                    __builtin_prefetch(&r->g->w8[at]);
                else if (r->g->wadj)
                    __builtin_prefetch(&r->g->wadj[at]);
            }
            relax_all_on_node(r, i, d);
            continue;
        }
        if (r->relaxed_at[i] == d)
            continue; /* queued twice at one distance */
        bool first = isinf(r->relaxed_at[i]);
        r->relaxed_at[i] = d;
        r->taken++;
        if (first)
            note_settled(r, i);
        relax_edges(r, i, d, true);
    }
}

/* {slot, d}: the ghost in that slot is at distance d; relax its edges to my vertices
 * of one class. */
static void relax_from_ghost(sssp_run *r, const cr_batch *b, bool light)
{
    const graph_ghosts *gh = r->gh;
    const float *weights = gh->rev_w;
    for (size_t k = 0; k < b->count; k++) {
        slot_distance m;
        memcpy(&m, cr_batch_payload(b, k), sizeof m);
        uint64_t e = gh->rev_off[m.slot], end = gh->rev_off[m.slot + 1];
        if (!weights) { /* every edge weighs 1 */
            if (light != (1.0 <= r->delta))
                continue;
            for (; e < end; e++)
                relax(r, gh->rev_local[e], m.d + 1);
            continue;
        }
        for (; e < end && !light && weights[e] <= r->delta; e++)
            ; /* skip the light prefix */
        const uint32_t *to = gh->rev_local;
        const double *dist = r->dist;
        double delta = r->delta;
        for (; e < end; e++) {
            double w = (double)weights[e];
            if (light && w > delta)
                break; /* lightest first: the rest are heavy */
            if (m.d + w < dist[to[e]])
                lowered(r, to[e], dist[to[e]], m.d + w);
        }
    }
}

/* {my vertex, a distance} from a rank of my node. */
static void relax_from_records(sssp_run *r, const cr_batch *b)
{
    for (size_t k = 0; k < b->count; k++) {
        local_distance m;
        memcpy(&m, cr_batch_payload(b, k), sizeof m);
        relax(r, m.local, m.d);
    }
}

static void on_near(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    sssp_run *r = ((sssp_state *)user)->run;
    relax_from_records(r, b);
    drain(r);
}

static void on_light(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    sssp_run *r = ((sssp_state *)user)->run;
    relax_from_ghost(r, b, true);
    drain(r);
}

static void on_heavy(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    relax_from_ghost(((sssp_state *)user)->run, b, false);
}

/* ---------------------------------------------------------------- the call */

static void sssp_state_free(cr_comm *comm, void *state)
{
    sssp_scratch *x = &((sssp_state *)state)->scratch;
    pool_free(&x->pool);
    free(x->bins);
    free(x->queue);
    free(x->settled);
    free(x->relaxed_at);
    free(x->queued);
    cr_module_state_free(comm, state);
}

static const cr_module_type sssp_module = {.name = "graph sssp", .destroy = sssp_state_free};

/* The handler, registered at the first call on this comm. Every rank has set its run
 * before it registers, so a faster rank's record finds it. */
static sssp_state *state_of(cr_comm *comm, sssp_run *run)
{
    bool fresh;
    sssp_state *s = cr_module_state_or_new(comm, &sssp_module, sizeof *s, &fresh);
    s->run = run;
    if (!fresh)
        return s;
    s->h_light = cr_register_type(comm, &(cr_handler_type){.batch = on_light,
                                                            .name = "sssp light"}, s);
    s->h_heavy = cr_register_type(comm, &(cr_handler_type){.batch = on_heavy,
                                                            .name = "sssp heavy"}, s);
    s->h_near = cr_register_type(comm, &(cr_handler_type){.batch = on_near,
                                                           .name = "sssp near"}, s);
    return s;
}

/* A negative or NaN weight on this rank, as one line in why, or NULL. */
static const char *check_weights(cr_graph *g, char *why, size_t whylen)
{
    graph_weights_scan(g);
    uint64_t k = g->weight_bad;
    if (k == UINT64_MAX)
        return NULL;
    snprintf(why, whylen, "cr_graph_sssp: an edge of vertex %llu has weight %g: weights "
             "must be numbers of at least 0",
             (unsigned long long)(g->first + graph_local_of_slot(g, k)), (double)g->wadj[k]);
    return why;
}

/* Meyer and Sanders' width for random weights, Theta(largest weight / average degree):
 * the constant, 1/4, measured on R-MAT graphs of weights 1 .. 255 (docs/graph.md);
 * wider buckets relax more light edges twice, narrower ones cost more barriers. */
static double automatic_delta(cr_graph *g)
{
    graph_weights_scan(g);
    double most = g->wadj ? g->weight_most : 1, all;
    cr_module_allreduce_double(g->comm, &most, &all, 1, CR_OP_MAX);
    uint64_t ends = graph_sum(g->comm, g->nadj);
    double degree = g->n ? (double)ends / (double)g->n : 0;
    double delta = degree > 1 ? all / (4 * degree) : all;
    return delta > 0 ? delta : 1;
}

void cr_graph_sssp_opts_init(cr_sssp_opts *o)
{
    *o = (cr_sssp_opts){.delta = 0};
}

/* Settle bucket r->bucket (Meyer and Sanders, section 2): its waiting vertices taken
 * and their light edges relaxed until no distance in the bucket drops (one wave, ended
 * by a barrier); then the heavy edges of every vertex settled in it, once, at their
 * final distances: they lead only to later buckets. On one node the wave has relaxed
 * the heavy edges already (relax_all_on_node): the first barrier ends the bucket. */
static void settle(sssp_run *r)
{
    if (r->bucket >= r->base && r->bucket - r->base < r->nbins) {
        waiting_list *l = &r->bins[r->bucket - r->base];
        EACH_WAITING(l, c, j)
            if (live(r, r->bucket, c->items[j]))
                enqueue(r, c->items[j]);
        clear_list(r->pool, l);
    }
    drain(r);
    cr_barrier(r->g->comm);
    if (r->node_dist)
        return;
    r->heavy = true;
    for (size_t j = 0; j < r->nsettled; j++)
        relax_edges(r, r->settled[j], r->dist[r->settled[j]], false);
    r->nsettled = 0;
    cr_barrier(r->g->comm);
    r->heavy = false;
}

static const cr_module_type node_dist_module = {.name = "graph sssp on one node",
                                               .destroy = graph_node_array_free};

/* Every vertex's distance in the node's memory (held by its first rank), or NULL on
 * every rank when the comm spans nodes or cannot share memory. */
static cr_node_segment *node_distances(cr_graph *g)
{
    if (g->n > SIZE_MAX / sizeof(double))
        return NULL;
    return graph_node_array(g, &node_dist_module, g->n * sizeof(double));
}

/* The scratch of earlier calls for this one, grown to this graph's vertices: on one
 * node a bit per vertex, across nodes two words. */
static void take_scratch(sssp_run *r, sssp_scratch *x, bool on_node)
{
    uint64_t n = r->g->count ? r->g->count : 1;
    if (on_node && x->queued_bits < n) {
        free(x->queued);
        x->queued = cr_xmalloc((n + 63) / 64 * sizeof *x->queued); /* kept with the comm */
        x->queued_bits = (n + 63) / 64 * 64;
    }
    if (on_node) {
        memset(x->queued, 0, (n + 63) / 64 * sizeof *x->queued);
        r->queued = x->queued;
    } else if (x->vertices < n) {
        free(x->settled);
        free(x->relaxed_at);
        x->settled = cr_xmalloc_huge(n, sizeof *x->settled); /* kept with the comm */
        x->relaxed_at = cr_xmalloc_huge(n, sizeof *x->relaxed_at);
        x->vertices = n;
    }
    if (!x->queue) { /* grown as needed: a bucket's queue is a small part of the vertices */
        x->qcap = 1024;
        x->queue = cr_xmalloc(x->qcap * sizeof *x->queue);
    }
    r->pool = &x->pool;
    r->bins = x->bins, r->nbins = x->nbins;
    r->queue = x->queue, r->qcap = x->qcap;
    r->settled = x->settled;
    r->relaxed_at = x->relaxed_at;
}

/* The call's scratch back for the next call, every list emptied into the pool. */
static void keep_scratch(sssp_run *r, sssp_scratch *x)
{
    for (uint64_t at = 0; at < r->nbins; at++)
        clear_list(r->pool, &r->bins[at]);
    free(r->far.items);
    r->far = (far_list){0};
    x->bins = r->bins, x->nbins = r->nbins;
    x->queue = r->queue, x->qcap = r->qcap;
}

int cr_graph_sssp(cr_graph *g, const cr_sssp_opts *o, uint64_t root, double *dist,
                  cr_sssp_stats *stats, char *err, size_t errlen)
{
    cr_sssp_opts defaults;
    if (!o) {
        cr_graph_sssp_opts_init(&defaults);
        o = &defaults;
    }
    char why[256];
    const char *bad = NULL;
    if (root >= g->n)
        snprintf(why, sizeof why, "cr_graph_sssp: root %llu is not a vertex (the graph has "
                 "%llu)", (unsigned long long)root, (unsigned long long)g->n), bad = why;
    else if (!(o->delta >= 0) || isinf(o->delta))
        snprintf(why, sizeof why, "cr_graph_sssp: delta %g is not valid: expected a finite "
                 "number of at least 0 (0: automatic)", o->delta), bad = why;
    else
        bad = check_weights(g, why, sizeof why);
    if (graph_agree(g->comm, bad, err, errlen))
        return -1;

    sssp_run r = {.g = g, .dist = dist};
    r.delta = o->delta > 0 ? o->delta : automatic_delta(g);
    r.per_delta = 1 / r.delta;
    sssp_state *s = state_of(g->comm, &r);
    r.h_light = s->h_light, r.h_heavy = s->h_heavy;
    r.h_near = s->h_near;
    /* a comm of one rank is a node of one: its distances are the caller's array */
    cr_node_segment *seg = g->size > 1 ? node_distances(g) : NULL;
    if (seg)
        r.node_dist = cr_module_node_segment_part(seg, 0);
    else if (g->size == 1)
        r.node_dist = dist;
    take_scratch(&r, &s->scratch, r.node_dist != NULL);
    if (r.node_dist) {
        r.dist = (double *)r.node_dist + g->first;
        for (uint64_t i = 0; i < g->count; i++)
            r.dist[i] = INFINITY;
    } else {
        for (uint64_t i = 0; i < g->count; i++)
            r.dist[i] = r.relaxed_at[i] = INFINITY;
    }
    if (seg)
        cr_module_node_segment_barrier(seg); /* no rank reads a distance left before */
    else if (!r.node_dist)
        r.gh = graph_ghosts_reversed_of(g);
    graph_sum(g->comm, 0); /* every rank's run is set before any record is sent */

    if (root - g->first < g->count) { /* the root waits in bucket 0 */
        r.dist[root - g->first] = 0;
        r.relaxations++;
        if (r.queued)
            r.queued[(root - g->first) >> 6] |= (uint64_t)1 << ((root - g->first) & 63);
        wait_in(&r, 0, root - g->first);
    }
    uint64_t buckets = 0;
    for (;;) {
        uint64_t mine = next_bucket(&r), next;
        cr_module_allreduce_u64(g->comm, &mine, &next, 1, CR_OP_MIN);
        if (next == UINT64_MAX)
            break;
        r.bucket = next;
        settle(&r);
        buckets++;
    }
    s->run = NULL;
    if (seg)
        memcpy(dist, r.dist, g->count * sizeof *dist);
    if (stats) {
        uint64_t mine[3] = {r.relaxations, r.messages, r.taken}, all[3];
        cr_module_allreduce_u64(g->comm, mine, all, 3, CR_OP_SUM);
        *stats = (cr_sssp_stats){.delta = r.delta, .buckets = buckets, .relaxations = all[0],
                                 .messages = all[1], .taken = all[2]};
    }
    keep_scratch(&r, &s->scratch);
    return 0;
}
