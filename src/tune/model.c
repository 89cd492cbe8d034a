/* The cost model of include/courier/tune.h: what an epoch of uniform traffic costs the
 * busiest rank under a route and a buffer size, from the route's own next-hop
 * function: alpha + beta * bytes per message, summed over a rank's messages as the
 * scale model does (docs/scaling.md), plus a cost per record appended and handled
 * (docs/tuning.md). */
#include "courier/tune.h"

#include "common/fatal.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

const size_t cr_tune_buffer_sizes[CR_TUNE_NBUFFERS] = {1 << 10, 4 << 10, 16 << 10, 64 << 10};

void cr_tune_costs_default(cr_tune_costs *c)
{
    *c = (cr_tune_costs){.alpha_on = 1e-6, .alpha_off = 2e-6, .beta_on = 0.2e-9,
                         .beta_off = 0.1e-9, .append = 10e-9, .handle = 10e-9,
                         .route_record = 0, .forward = 0};
}

/* One rank's view of a route: to whom its records go first (dests[p] of its
 * destinations go through partner p) and how far they travel; and, as a
 * destination, the tree its records come in by: how many sources' paths to it pass
 * each rank (through[x], counting x's own), and which ranks hand records to it
 * (last[x]). */
typedef struct rank_view {
    int me;
    int *partner;    /* the distinct first hops */
    double *share;   /* the part of the rank's destinations behind each */
    int npartners;
    double mean_hops;
    int *through;          /* [P] */
    unsigned char *last;   /* [P] */
    /* ... summed up: ranks passed by s sources' paths, for each s that occurs */
    int *sizes;            /* [nsizes] the s */
    double *passing;       /* how many ranks have s */
    double *handing;       /* how many of those hand records to `me` */
    int nsizes;
} rank_view;

static bool view_alloc(rank_view *v, int p)
{
    *v = (rank_view){0};
    v->partner = malloc((size_t)p * sizeof *v->partner);
    v->share = malloc((size_t)p * sizeof *v->share);
    v->through = calloc((size_t)p, sizeof *v->through);
    v->last = calloc((size_t)p, 1);
    v->sizes = malloc((size_t)p * sizeof *v->sizes);
    v->passing = calloc((size_t)p, sizeof *v->passing);
    v->handing = calloc((size_t)p, sizeof *v->handing);
    return v->partner && v->share && v->through && v->last && v->sizes && v->passing &&
           v->handing;
}

static void view_free(rank_view *v)
{
    free(v->partner), free(v->share), free(v->through), free(v->last);
    free(v->sizes), free(v->passing), free(v->handing);
}

/* The tree of paths into `me`: every source's path walked to it. */
static void tree_of(const cr_router *rt, int p, int me, rank_view *v)
{
    for (int x = 0; x < p; x++)
        v->through[x] = 0, v->last[x] = 0;
    for (int k = 0; k < v->nsizes; k++) /* the last tree's, packed */
        v->passing[k] = v->handing[k] = 0;
    v->nsizes = 0;
    for (int src = 0; src < p; src++) {
        if (src == me)
            continue;
        int x = src;
        for (int h = 0; x != me && h <= p; h++) {
            v->through[x]++;
            int next = cr_router_next_hop(rt, x, me);
            if (next == me)
                v->last[x] = 1;
            x = next;
        }
    }
    /* summed up by s (passing[] and handing[] indexed by s first, then packed) */
    for (int x = 0; x < p; x++)
        if (x != me && v->through[x] > 0) {
            v->passing[v->through[x]] += 1;
            v->handing[v->through[x]] += v->last[x];
        }
    v->nsizes = 0;
    for (int size = 1; size < p; size++)
        if (v->passing[size] > 0) {
            double pass = v->passing[size], hand = v->handing[size];
            v->passing[size] = v->handing[size] = 0;
            v->sizes[v->nsizes] = size;
            v->passing[v->nsizes] = pass;
            v->handing[v->nsizes++] = hand;
        }
}

/* The records left of s sources' draws for one destination where they meet. */
static double held(double s, const cr_tune_traffic *t)
{
    double draws = s * t->records_per_dest, keys = t->keys_per_dest;
    return keys > 0 ? keys * -expm1(-draws / keys) : draws;
}

/* With merging on the way: the records a rank appends (by symmetry, what all ranks
 * send towards one destination) and those that reach it. */
static void merged_counts(const rank_view *v, const cr_tune_traffic *t, double *appended,
                          double *arriving)
{
    *appended = *arriving = 0;
    for (int k = 0; k < v->nsizes; k++) {
        double h = held(v->sizes[k], t);
        *appended += v->passing[k] * h;
        *arriving += v->handing[k] * h;
    }
}

/* Walk every destination's path from `me`. Returns false if the route loops (a
 * broken router: more hops than ranks). */
static bool view_of(const cr_router *rt, const cr_layout *l, int me, int *count, rank_view *v)
{
    int p = cr_layout_ranks(l);
    double hops = 0;
    v->me = me;
    v->npartners = 0;
    for (int d = 0; d < p; d++) {
        if (d == me)
            continue;
        int first = cr_router_next_hop(rt, me, d), h = 1;
        for (int x = first; x != d; x = cr_router_next_hop(rt, x, d))
            if (++h > p)
                return false;
        hops += h;
        if (count[first]++ == 0)
            v->partner[v->npartners++] = first;
    }
    for (int k = 0; k < v->npartners; k++) {
        v->share[k] = (double)count[v->partner[k]] / (double)(p - 1);
        count[v->partner[k]] = 0;
    }
    v->mean_hops = p > 1 ? hops / (double)(p - 1) : 0;
    return true;
}

static size_t pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* The epoch's cost to the rank `v` describes, with buffers of `buffer` bytes. */
static cr_tune_prediction cost_of(const cr_layout *l, const rank_view *v, bool routed,
                                  size_t buffer, size_t cap, const cr_tune_traffic *t,
                                  const cr_tune_costs *c)
{
    int p = cr_layout_ranks(l);
    cr_tune_prediction out = {.buffer_bytes = buffer, .partners = v->npartners,
                              .mean_hops = v->mean_hops};
    double own = t->records_per_dest * (double)(p - 1);
    /* Uniform traffic over a route every rank uses alike: a rank forwards as many
     * records as the others forward for it, so it appends its own once per hop;
     * records that merge on their way leave fewer at every hop (cr_tune_traffic). */
    double records = own * v->mean_hops, arriving = own;
    if (t->keys_per_dest > 0)
        merged_counts(v, t, &records, &arriving);
    double record_bytes = (double)(pad8(t->record_bytes) + (routed ? 8 : 0));
    double room = v->npartners ? (double)cap / v->npartners : (double)buffer;
    double buffer_bytes = fmax(1, fmin((double)buffer, room));
    /* what the rank passes on for others: all it appends but its own records, which
     * leave their source once each (fewer, merged, when they merge there) */
    double at_source = t->keys_per_dest > 0 ? held(1, t) * (double)(p - 1) : own;
    double forwarded = fmax(0, records - at_source);
    double seconds = records * (c->append + (routed ? c->route_record : 0)) +
                     forwarded * c->forward + arriving * c->handle;
    int my_node = cr_layout_node_of(l, v->me);
    for (int k = 0; k < v->npartners; k++) {
        bool off = cr_layout_node_of(l, v->partner[k]) != my_node;
        double bytes = records * v->share[k] * record_bytes;
        double messages = bytes > 0 ? fmax(1, ceil(bytes / buffer_bytes)) : 0;
        out.messages += messages;
        out.off_node += off;
        seconds += messages * (off ? c->alpha_off : c->alpha_on) +
                   bytes * (off ? c->beta_off : c->beta_on);
    }
    out.records = records;
    out.arriving = arriving;
    /* ranks that share a processor share its time: everything above takes longer */
    out.seconds = seconds * (c->slowdown > 1 ? c->slowdown : 1);
    return out;
}

/* The sample of ranks predicted: the first, the middle and the last. */
static int sample_of(int p, int *ranks)
{
    int n = 0;
    int candidates[3] = {0, p / 2, p - 1};
    for (int i = 0; i < 3; i++) {
        bool seen = false;
        for (int j = 0; j < n; j++)
            seen |= ranks[j] == candidates[i];
        if (!seen)
            ranks[n++] = candidates[i];
    }
    return n;
}

static bool valid(const cr_layout *l, const cr_tune_traffic *t, const cr_tune_costs *c)
{
    return l && t && c && t->records_per_dest >= 0 && isfinite(t->records_per_dest) &&
           t->keys_per_dest >= 0 && isfinite(t->keys_per_dest) &&
           c->alpha_on >= 0 && c->alpha_off >= 0 && c->beta_on >= 0 && c->beta_off >= 0 &&
           c->append >= 0 && c->handle >= 0 && c->route_record >= 0 && c->forward >= 0 &&
           c->slowdown >= 0 && isfinite(c->slowdown);
}

/* Add one epoch's prediction to a sum over epochs: the counts and the time add up;
 * partners and hops are the route's, the same for every epoch. */
static void add_epoch(cr_tune_prediction *sum, const cr_tune_prediction *x, bool first)
{
    if (first) {
        *sum = *x;
        return;
    }
    sum->messages += x->messages;
    sum->records += x->records;
    sum->arriving += x->arriving;
    sum->seconds += x->seconds;
}

/* The predictions of `route` for each of the nbuffers buffer sizes, summed over the
 * ntraffic epochs of t: the busiest rank of the sample for each. Returns -1 if the
 * route cannot serve the layout. */
static int predict_route(const cr_layout *l, const cr_route *route, const size_t *buffers,
                         int nbuffers, size_t cap, const cr_tune_traffic *t, int ntraffic,
                         const cr_tune_costs *c, cr_tune_prediction *out)
{
    cr_router *rt = cr_router_create(route, l, NULL, 0);
    if (!rt)
        return -1;
    int p = cr_layout_ranks(l);
    int *count = cr_xcalloc((size_t)p, sizeof *count);
    rank_view v = {0};
    if (!view_alloc(&v, p))
        cr_fatal("courier tune: out of memory for a view of %d ranks", p);
    bool merging = false;
    for (int e = 0; e < ntraffic; e++)
        merging |= t[e].keys_per_dest > 0;
    int sample[3], ns = sample_of(p, sample), rc = 0;
    for (int b = 0; b < nbuffers; b++)
        out[b] = (cr_tune_prediction){.seconds = -1};
    for (int s = 0; s < ns && rc == 0; s++) {
        if (!view_of(rt, l, sample[s], count, &v)) {
            rc = -1;
            break;
        }
        if (merging)
            tree_of(rt, p, sample[s], &v);
        for (int b = 0; b < nbuffers; b++) {
            cr_tune_prediction x;
            for (int e = 0; e < ntraffic; e++) {
                cr_tune_prediction one = cost_of(l, &v, route->kind != CR_ROUTE_DIRECT,
                                                 buffers[b], cap, &t[e], c);
                add_epoch(&x, &one, e == 0);
            }
            if (x.seconds > out[b].seconds)
                out[b] = x;
        }
    }
    for (int b = 0; b < nbuffers; b++)
        out[b].route = *cr_router_route(rt);
    free(count);
    view_free(&v);
    cr_router_destroy(rt);
    return rc;
}

int cr_tune_predict(const cr_layout *layout, const cr_route *route, size_t buffer_bytes,
                    size_t cap_bytes, const cr_tune_traffic *t, const cr_tune_costs *c,
                    cr_tune_prediction *out)
{
    if (!valid(layout, t, c) || !route || !out || buffer_bytes == 0 || cap_bytes == 0)
        return -1;
    return predict_route(layout, route, &buffer_bytes, 1, cap_bytes, t, 1, c, out);
}

int cr_tune_choose(const cr_layout *layout, const cr_route *route, size_t buffer_bytes,
                   size_t cap_bytes, const cr_tune_traffic *t, const cr_tune_costs *c,
                   cr_tune_prediction *table, int *ntable)
{
    return cr_tune_choose_over(layout, route, buffer_bytes, cap_bytes, t, 1, c, table, ntable);
}

int cr_tune_choose_over(const cr_layout *layout, const cr_route *route, size_t buffer_bytes,
                        size_t cap_bytes, const cr_tune_traffic *t, int ntraffic,
                        const cr_tune_costs *c, cr_tune_prediction *table, int *ntable)
{
    *ntable = 0;
    if (ntraffic < 1 || !valid(layout, t, c) || cap_bytes == 0)
        return -1;
    for (int e = 1; e < ntraffic; e++)
        if (!valid(layout, &t[e], c))
            return -1;
    static const cr_route_kind kinds[] = {CR_ROUTE_DIRECT, CR_ROUTE_NR, CR_ROUTE_NLNR,
                                          CR_ROUTE_GRID, CR_ROUTE_HYPERCUBE};
    int nroutes = route ? 1 : 5;
    const size_t *buffers = buffer_bytes ? &buffer_bytes : cr_tune_buffer_sizes;
    int nbuffers = buffer_bytes ? 1 : CR_TUNE_NBUFFERS;
    for (int r = 0; r < nroutes; r++) {
        cr_route each = route ? *route : (cr_route){.kind = kinds[r]};
        if (predict_route(layout, &each, buffers, nbuffers, cap_bytes, t, ntraffic, c,
                          table + *ntable) == 0)
            *ntable += nbuffers;
    }
    int best = -1;
    for (int i = 0; i < *ntable; i++)
        if (best < 0 || table[i].seconds < table[best].seconds)
            best = i;
    if (best < 0)
        return -1;
    /* Ties (within 1%): the smaller buffer, then the earlier route. */
    int chosen = best;
    double limit = table[best].seconds * 1.01;
    for (int i = 0; i < *ntable; i++)
        if (table[i].seconds <= limit && table[i].buffer_bytes < table[chosen].buffer_bytes)
            chosen = i;
    for (int i = 0; i < chosen; i++)
        if (table[i].seconds <= limit && table[i].buffer_bytes == table[chosen].buffer_bytes) {
            chosen = i;
            break;
        }
    return chosen;
}

double cr_tune_keys_per_dest(const cr_layout *layout, const cr_route *route,
                             double records_per_dest, double merged_per_rank)
{
    if (!layout || !route || !(records_per_dest >= 0) || !isfinite(merged_per_rank))
        return -1;
    int p = cr_layout_ranks(layout);
    if (p < 2 || merged_per_rank <= 0 || records_per_dest <= 0)
        return 0;
    cr_router *rt = cr_router_create(route, layout, NULL, 0);
    if (!rt)
        return -1;
    int sample[3], ns = sample_of(p, sample);
    double own = records_per_dest * (p - 1), want = fmax(own - merged_per_rank, 0);
    /* what reaches a rank grows with the keys: bisect on their logarithm, between a
     * millionth of a key and a million times the draws (nothing merges there) */
    double lo = log(1e-6), hi = log(records_per_dest * 1e6 + 1);
    rank_view views[3];
    for (int s = 0; s < ns; s++) {
        if (!view_alloc(&views[s], p))
            cr_fatal("courier tune: out of memory for a view of %d ranks", p);
        views[s].me = sample[s];
        tree_of(rt, p, sample[s], &views[s]);
    }
    for (int it = 0; it < 60; it++) {
        double mid = 0.5 * (lo + hi), arriving = 0;
        cr_tune_traffic t = {.records_per_dest = records_per_dest, .keys_per_dest = exp(mid)};
        for (int s = 0; s < ns; s++) {
            double appended, in;
            merged_counts(&views[s], &t, &appended, &in);
            arriving += in / ns;
        }
        *(arriving < want ? &lo : &hi) = mid;
    }
    for (int s = 0; s < ns; s++)
        view_free(&views[s]);
    cr_router_destroy(rt);
    return exp(0.5 * (lo + hi));
}

bool cr_tune_worth_switching(double current, double best, double move)
{
    double saved = current - best;
    return saved > CR_TUNE_SWITCH_GAIN * current && saved > move;
}
