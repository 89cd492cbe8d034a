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
 * in a heap of (bucket, vertex). The barrier that ends the wave finds every rank idle
 * and no record in flight: the bucket is settled, since every distance below
 * (k+1) delta is then final (weights are not negative). Records for one vertex that
 * meet in a buffer are merged by min (the combining handler's rule, at every hop). */
#include "graph/graph_internal.h"

#include "common/fatal.h"
#include "courier/dedup.h"
#include "courier/mailbox.h"
#include "mailbox/module.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A vertex waiting in a later bucket (lazily deleted: stale once its distance has
 * moved to another bucket or been relaxed). */
typedef struct waiting {
    uint64_t bucket, local;
} waiting;

typedef struct sssp_run {
    cr_graph *g;
    int h_relax;
    double *dist;
    double *relaxed_at; /* the distance at which the vertex's edges were last relaxed */
    double delta;
    uint64_t bucket; /* the one being settled */
    uint64_t *queue; /* my vertices to take in this bucket, first in first out */
    size_t head, nqueue, qcap;
    waiting *heap; /* the later buckets, a binary min-heap on bucket */
    size_t nheap, hcap;
    uint64_t relaxations, messages;
} sssp_run;

typedef struct sssp_state {
    int h_relax;
    sssp_run *run; /* the call in progress, for the handler */
} sssp_state;

/* ---------------------------------------------------------------- the buckets */

static uint64_t bucket_of(const sssp_run *r, double d)
{
    double b = floor(d / r->delta);
    return b < 1.8e19 ? (uint64_t)b : UINT64_MAX - 1;
}

static void heap_push(sssp_run *r, uint64_t bucket, uint64_t local)
{
    if (r->nheap == r->hcap) {
        r->hcap = r->hcap ? 2 * r->hcap : 1024;
        r->heap = cr_xrealloc(r->heap, r->hcap * sizeof *r->heap);
    }
    size_t k = r->nheap++;
    while (k > 0 && r->heap[(k - 1) / 2].bucket > bucket) {
        r->heap[k] = r->heap[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    r->heap[k] = (waiting){bucket, local};
}

static waiting heap_pop(sssp_run *r)
{
    waiting top = r->heap[0], last = r->heap[--r->nheap];
    size_t k = 0;
    for (;;) {
        size_t c = 2 * k + 1;
        if (c >= r->nheap)
            break;
        if (c + 1 < r->nheap && r->heap[c + 1].bucket < r->heap[c].bucket)
            c++;
        if (r->heap[c].bucket >= last.bucket)
            break;
        r->heap[k] = r->heap[c];
        k = c;
    }
    if (r->nheap)
        r->heap[k] = last;
    return top;
}

/* A waiting entry still stands for work: its vertex's distance is in that bucket and
 * its edges have not been relaxed at that distance. */
static bool live(const sssp_run *r, waiting w)
{
    double d = r->dist[w.local];
    return bucket_of(r, d) == w.bucket && r->relaxed_at[w.local] != d;
}

/* The smallest bucket with live work on this rank, UINT64_MAX for none. */
static uint64_t next_bucket(sssp_run *r)
{
    while (r->nheap && !live(r, r->heap[0]))
        heap_pop(r);
    return r->nheap ? r->heap[0].bucket : UINT64_MAX;
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

/* Offer my vertex `local` the distance d. */
static void relax(sssp_run *r, uint64_t local, double d)
{
    if (!(d < r->dist[local]))
        return;
    r->dist[local] = d;
    r->relaxations++;
    uint64_t b = bucket_of(r, d);
    if (b <= r->bucket)
        enqueue(r, local);
    else
        heap_push(r, b, local);
}

/* Take every queued vertex of the current bucket: relax its edges. */
static void drain(sssp_run *r)
{
    cr_graph *g = r->g;
    while (r->head < r->nqueue) {
        uint64_t i = r->queue[r->head++];
        if (r->head == r->nqueue)
            r->head = r->nqueue = 0; /* empty: start over at the front */
        double d = r->dist[i];
        if (r->relaxed_at[i] == d)
            continue; /* queued twice at one distance */
        r->relaxed_at[i] = d;
        const float *w = g->wadj ? g->wadj + g->offsets[i] : NULL;
        for (uint64_t e = g->offsets[i]; e < g->offsets[i + 1]; e++) {
            uint64_t v = g->adj[e];
            double nd = d + (w ? (double)w[e - g->offsets[i]] : 1.0);
            if (v - g->first < g->count) {
                relax(r, v - g->first, nd);
            } else {
                struct {
                    uint64_t v;
                    double d;
                } m = {v, nd};
                cr_async(g->comm, cr_block_owner(g->n, g->size, v), r->h_relax, &m, sizeof m);
                r->messages++;
            }
        }
    }
}

static void on_relax(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    sssp_run *r = ((sssp_state *)user)->run;
    for (size_t k = 0; k < b->count; k++) {
        struct {
            uint64_t v;
            double d;
        } m;
        memcpy(&m, cr_batch_payload(b, k), sizeof m);
        relax(r, m.v - r->g->first, m.d);
    }
    drain(r);
}

/* ---------------------------------------------------------------- the call */

static void destroy_state(cr_comm *comm, void *state)
{
    (void)comm;
    free(state);
}

static const cr_module_type sssp_module = {.name = "graph sssp", .destroy = destroy_state};

/* The handler, registered at the first call on this comm. Every rank has set its run
 * before it registers, so a faster rank's record finds it. */
static sssp_state *state_of(cr_comm *comm, sssp_run *run)
{
    sssp_state *s = cr_module_state(comm, &sssp_module);
    if (s) {
        s->run = run;
        return s;
    }
    s = cr_xcalloc(1, sizeof *s);
    s->run = run;
    cr_module_attach(comm, &sssp_module, s);
    cr_dedup_rule min = {.key_len = 8, .op = CR_DEDUP_MIN, .type = CR_DEDUP_DOUBLE};
    s->h_relax = cr_dedup_register(comm, &(cr_handler_type){.batch = on_relax,
                                                             .name = "sssp relax"},
                                   &min, s);
    return s;
}

/* A negative or NaN weight on this rank, as one line in why, or NULL. */
static const char *check_weights(const cr_graph *g, char *why, size_t whylen)
{
    for (uint64_t k = 0; g->wadj && k < g->nadj; k++)
        if (!(g->wadj[k] >= 0)) {
            snprintf(why, whylen, "cr_graph_sssp: an edge of vertex %llu has weight %g: "
                     "weights must be numbers of at least 0",
                     (unsigned long long)(g->first + graph_local_of_slot(g, k)),
                     (double)g->wadj[k]);
            return why;
        }
    return NULL;
}

/* Meyer and Sanders' width for random weights: about the largest weight over the
 * average degree, so a bucket's vertices relax few edges twice. */
static double automatic_delta(const cr_graph *g)
{
    double most = g->wadj ? 0 : 1;
    for (uint64_t k = 0; g->wadj && k < g->nadj; k++)
        most = g->wadj[k] > most ? g->wadj[k] : most;
    double all;
    cr_module_allreduce_double(g->comm, &most, &all, 1, CR_MODULE_MAX);
    uint64_t ends = graph_sum(g->comm, g->nadj);
    double degree = g->n ? (double)ends / (double)g->n : 0;
    double delta = degree > 1 ? all / degree : all;
    return delta > 0 ? delta : 1;
}

void cr_graph_sssp_opts_init(cr_sssp_opts *o)
{
    *o = (cr_sssp_opts){.delta = 0};
}

/* Settle bucket r->bucket: its waiting vertices taken, the wave ended by a barrier. */
static void settle(sssp_run *r)
{
    while (r->nheap && r->heap[0].bucket == r->bucket) {
        waiting w = heap_pop(r);
        if (live(r, w))
            enqueue(r, w.local);
    }
    drain(r);
    cr_barrier(r->g->comm);
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
    if (graph_agree(g->comm, bad, "cr_graph_sssp", err, errlen))
        return -1;

    sssp_run r = {.g = g, .dist = dist};
    r.delta = o->delta > 0 ? o->delta : automatic_delta(g);
    r.relaxed_at = cr_xmalloc((g->count ? g->count : 1) * sizeof *r.relaxed_at);
    for (uint64_t i = 0; i < g->count; i++)
        dist[i] = r.relaxed_at[i] = INFINITY;
    sssp_state *s = state_of(g->comm, &r);
    r.h_relax = s->h_relax;
    graph_sum(g->comm, 0); /* every rank's run is set before any record is sent */

    if (root - g->first < g->count) { /* the root waits in bucket 0 */
        dist[root - g->first] = 0;
        r.relaxations++;
        heap_push(&r, 0, root - g->first);
    }
    uint64_t buckets = 0;
    for (;;) {
        uint64_t mine = next_bucket(&r), next;
        cr_module_allreduce_u64(g->comm, &mine, &next, 1, CR_MODULE_MIN);
        if (next == UINT64_MAX)
            break;
        r.bucket = next;
        settle(&r);
        buckets++;
    }
    s->run = NULL;
    if (stats) {
        uint64_t mine[2] = {r.relaxations, r.messages}, all[2];
        cr_module_allreduce_u64(g->comm, mine, all, 2, CR_MODULE_SUM);
        *stats = (cr_sssp_stats){.delta = r.delta, .buckets = buckets, .relaxations = all[0],
                                 .messages = all[1]};
    }
    free(r.relaxed_at);
    free(r.queue);
    free(r.heap);
    return 0;
}
