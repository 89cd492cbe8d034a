/* Minimum spanning forests (cr_graph_msf, docs/graph.md).
 *
 * The filtering form does the local part locally and sends only what may belong to
 * the forest, as the filtering method does (Lattanzi, Moseley, Suri and
 * Vassilvitskii, "Filtering: a method for solving graph problems in MapReduce",
 * SPAA 2011) and as KaMSTa's local preprocessing does (Sanders and Schimek,
 * "Engineering massively parallel MST algorithms", IPDPS 2023):
 * 1. Each rank keeps the minimum spanning forest of its own edges (Kruskal: a radix
 *    sort by weight, then union-find). By the cycle property an edge it drops is the
 *    heaviest on a cycle of its edges, so of the whole graph too: no forest holds it.
 * 2. Up a binomial tree, rank r + 2^k sends its forest to rank r, which filters the
 *    union the same way; each level halves the ranks that hold edges and leaves at
 *    most one edge per vertex less one on each. At the root the forest is the answer.
 * 3. The root labels the trees (each by its smallest vertex) and sends each vertex
 *    not its tree's label to the vertex's owner.
 * When a merge would make one rank hold more than the gather limit, the merging
 * stops and Boruvka's rounds (msf_rounds.c) finish on the forests where they are.
 * Everything travels as mailbox records, and the decisions are the transport's
 * reductions, so it runs on either transport. */
#include "graph/graph_internal.h"
#include "graph/msf_rounds.h"

#include "common/fatal.h"
#include "mailbox/module.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_GATHER_LIMIT (UINT64_C(1) << 24)
#define DIGIT_BITS 11
#define DIGITS (1u << DIGIT_BITS)

/* ---------------------------------------------------------------- the comm's state */

/* What one call receives: the handlers write here. */
typedef struct msf_call {
    uint64_t first;
    uint64_t *label;
    msf_edge *recv; /* forest edges from the partner of this level */
    size_t nrecv, recv_cap;
    uint64_t prefix[2]; /* the id scan's value of this round (by parity) */
} msf_call;

typedef struct msf_state {
    int h_edges, h_labels, h_prefix;
    msf_call *call;
} msf_state;

static void on_edges(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    msf_call *c = ((msf_state *)user)->call;
    if (c->nrecv + b->count > c->recv_cap) {
        c->recv_cap = 2 * (c->nrecv + b->count);
        c->recv = cr_xrealloc(c->recv, c->recv_cap * sizeof *c->recv);
    }
    for (size_t k = 0; k < b->count; k++)
        memcpy(&c->recv[c->nrecv++], cr_batch_payload(b, k), sizeof(msf_edge));
}

static void on_labels(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    msf_call *c = ((msf_state *)user)->call;
    for (size_t k = 0; k < b->count; k++) {
        uint64_t m[2];
        memcpy(m, cr_batch_payload(b, k), sizeof m);
        c->label[m[0] - c->first] = m[1];
    }
}

static void on_prefix(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm, (void)len;
    msf_call *c = ((msf_state *)user)->call;
    uint64_t m[2];
    memcpy(m, payload, sizeof m);
    c->prefix[m[0] & 1] += m[1];
    (void)src;
}

static const cr_module_type msf_module = {.name = "graph msf", .destroy = cr_module_state_free};

/* The handlers, registered at the first call on this comm (collective), and the call
 * they write to. */
static msf_state *state_of(cr_comm *comm, msf_call *call)
{
    bool fresh;
    msf_state *s = cr_module_state_or_new(comm, &msf_module, sizeof *s, &fresh);
    s->call = call; /* a faster rank's record may arrive inside the registration */
    if (!fresh)
        return s;
    s->h_edges = cr_register_type(comm, &(cr_handler_type){.batch = on_edges,
                                                            .name = "msf forest edges"}, s);
    s->h_labels = cr_register_type(comm, &(cr_handler_type){.batch = on_labels,
                                                             .name = "msf labels"}, s);
    s->h_prefix = cr_register_type(comm, &(cr_handler_type){.fn = on_prefix,
                                                             .name = "msf id scan"}, s);
    return s;
}

/* ---------------------------------------------------------------- sorting */

/* Digit d (DIGIT_BITS wide) of the 96-bit order key: key above, id below. */
static inline uint32_t digit_of(const msf_edge *e, unsigned d)
{
    unsigned off = d * DIGIT_BITS;
    uint64_t bits;
    if (off + DIGIT_BITS <= 64)
        bits = e->id >> off;
    else if (off >= 64)
        bits = (uint64_t)e->key >> (off - 64);
    else
        bits = (e->id >> off) | ((uint64_t)e->key << (64 - off));
    return (uint32_t)(bits & (DIGITS - 1));
}

/* A digit's counts become the first position of each value (a pass's bucket starts).
 * Returns false when one value holds all m items: the pass would keep the order. */
static bool bucket_starts(size_t *count, size_t m, uint32_t any_value)
{
    if (count[any_value] == m)
        return false;
    size_t pos = 0;
    for (unsigned v = 0; v < DIGITS; v++) {
        size_t c = count[v];
        count[v] = pos;
        pos += c;
    }
    return true;
}

/* Sort by (key, id): least significant digit first, each pass stable; a digit that
 * is the same in every edge costs no pass (ids of a graph of 2^22 edges use 2 of the
 * 6 id digits). */
static void sort_edges(msf_edge *e, size_t m)
{
    enum { NDIGITS = (96 + DIGIT_BITS - 1) / DIGIT_BITS };
    size_t(*count)[DIGITS] = cr_xcalloc(NDIGITS, sizeof *count);
    for (size_t j = 0; j < m; j++)
        for (unsigned d = 0; d < NDIGITS; d++)
            count[d][digit_of(&e[j], d)]++;
    msf_edge *tmp = NULL, *from = e;
    for (unsigned d = 0; d < NDIGITS; d++) {
        if (!bucket_starts(count[d], m, digit_of(&e[0], d)))
            continue;
        if (!tmp)
            tmp = cr_xmalloc(m * sizeof *tmp);
        msf_edge *to = from == e ? tmp : e;
        for (size_t j = 0; j < m; j++)
            to[count[d][digit_of(&from[j], d)]++] = from[j];
        from = to;
    }
    if (from != e)
        memcpy(e, from, m * sizeof *e);
    free(tmp);
    free(count);
}

/* The local filter's compact edge: 16 bytes, so a sort pass moves half as much. */
typedef struct compact {
    uint32_t key, idx, u, v;
} compact;

/* Sort by key, stable (ties keep the order of idx, which is the order of the ids). */
static void sort_compact(compact *c, size_t m)
{
    size_t count[3][DIGITS] = {{0}};
    for (size_t j = 0; j < m; j++)
        for (unsigned d = 0; d < 3; d++)
            count[d][(c[j].key >> (d * DIGIT_BITS)) & (DIGITS - 1)]++;
    compact *tmp = NULL, *from = c;
    for (unsigned d = 0; d < 3; d++) {
        unsigned shift = d * DIGIT_BITS;
        if (!bucket_starts(count[d], m, (c[0].key >> shift) & (DIGITS - 1)))
            continue;
        if (!tmp)
            tmp = cr_xmalloc(m * sizeof *tmp);
        compact *to = from == c ? tmp : c;
        for (size_t j = 0; j < m; j++)
            to[count[d][(from[j].key >> shift) & (DIGITS - 1)]++] = from[j];
        from = to;
    }
    if (from != c)
        memcpy(c, from, m * sizeof *c);
    free(tmp);
}

static int by_id(const void *x, const void *y)
{
    const msf_edge *p = x, *q = y;
    return (p->id > q->id) - (p->id < q->id);
}

/* ---------------------------------------------------------------- Kruskal */

/* Union-find over vertex ids (the graph has fewer than 2^32 vertices here), with
 * path halving; a union keeps the smaller root, so a root is its tree's smallest
 * vertex. */
static inline uint32_t find(uint32_t *p, uint32_t x)
{
    while (p[x] != x) {
        p[x] = p[p[x]];
        x = p[x];
    }
    return x;
}

static inline bool unite(uint32_t *p, uint32_t a, uint32_t b)
{
    a = find(p, a), b = find(p, b);
    if (a == b)
        return false;
    if (a < b)
        p[b] = a;
    else
        p[a] = b;
    return true;
}

/* The minimum spanning forest of e[0 .. m), which is sorted: kept in place, in
 * order; returns how many. `p` holds every vertex as its own root on entry for the
 * vertices of e and is left so again. */
static size_t filter_sorted(msf_edge *e, size_t m, uint32_t *p)
{
    size_t k = 0;
    for (size_t j = 0; j < m; j++)
        if (unite(p, (uint32_t)e[j].u, (uint32_t)e[j].v))
            e[k++] = e[j];
    for (size_t j = 0; j < m; j++)
        p[e[j].u] = (uint32_t)e[j].u, p[e[j].v] = (uint32_t)e[j].v;
    return k;
}

/* Kruskal over compact edges: sorts them, returns how many join two trees, their
 * idx in kept[] in (key, id) order. `p` is left as it was. */
static size_t kruskal_compact(compact *c, size_t m, uint32_t *p, uint32_t *kept)
{
    sort_compact(c, m);
    size_t k = 0;
    for (size_t j = 0; j < m; j++)
        if (unite(p, c[j].u, c[j].v))
            kept[k++] = c[j].idx;
    for (size_t j = 0; j < m; j++)
        p[c[j].u] = c[j].u, p[c[j].v] = c[j].v;
    return k;
}

static void check_local_count(size_t m)
{
    if (m > UINT32_MAX)
        cr_fatal("cr_graph_msf: this rank holds %zu edges, more than 2^32 - 1", m);
}

/* Step 1: this rank's forest of its own edges (e sorted by id; self-loops gone).
 * Returns how many edges stay, in (key, id) order at the front of e. */
static size_t filter_own(msf_edge *e, size_t m, uint32_t *p)
{
    check_local_count(m);
    compact *c = cr_xmalloc((m ? m : 1) * sizeof *c);
    for (size_t j = 0; j < m; j++)
        c[j] = (compact){e[j].key, (uint32_t)j, (uint32_t)e[j].u, (uint32_t)e[j].v};
    uint32_t *kept = cr_xmalloc((m ? m : 1) * sizeof *kept);
    size_t k = kruskal_compact(c, m, p, kept);
    free(c);
    /* kept[] is in (key, id) order, positions anywhere in e: copied out first */
    msf_edge *f = cr_xmalloc((k ? k : 1) * sizeof *f);
    for (size_t j = 0; j < k; j++)
        f[j] = e[kept[j]];
    memcpy(e, f, k * sizeof *e);
    free(f);
    free(kept);
    return k;
}

/* ---------------------------------------------------------------- the phases */

typedef struct run {
    cr_comm *comm;
    msf_state *st;
    msf_call *call;
    int rank, size;
    uint64_t n;
    msf_edge *e; /* the edges this rank holds (capacity cap) */
    size_t m, cap;
    uint32_t *p; /* union-find over the graph's vertices */
} run;

/* The order key of edge j's weight. */
static uint32_t key_of(const cr_edge_list *list, size_t j)
{
    uint32_t bits;
    memcpy(&bits, &list->weights[j], sizeof bits);
    return msf_weight_key(bits);
}

/* Step 1 straight from the caller's list when its ids ascend with the position (the
 * default numbering does): no 32-byte record per edge, only per edge kept. */
static void filter_list(run *r, const cr_edge_list *list, const uint64_t *ids, uint64_t before)
{
    check_local_count(list->count);
    compact *c = cr_xmalloc((list->count ? list->count : 1) * sizeof *c);
    size_t m = 0;
    for (size_t j = 0; j < list->count; j++) {
        const cr_edge *x = &list->edges[j];
        if (x->u != x->v)
            c[m++] = (compact){key_of(list, j), (uint32_t)j, (uint32_t)x->u, (uint32_t)x->v};
    }
    uint32_t *kept = cr_xmalloc((m ? m : 1) * sizeof *kept);
    size_t k = kruskal_compact(c, m, r->p, kept);
    free(c);
    r->cap = k ? k : 1;
    r->e = cr_xmalloc(r->cap * sizeof *r->e);
    for (size_t j = 0; j < k; j++) {
        size_t at = kept[j];
        r->e[j] = (msf_edge){list->edges[at].u, list->edges[at].v, ids ? ids[at] : before + at,
                             key_of(list, at), 0};
    }
    r->m = k;
    free(kept);
}

static bool ids_ascend(const uint64_t *ids, size_t count)
{
    for (size_t j = 1; ids && j < count; j++)
        if (ids[j] <= ids[j - 1])
            return false;
    return true;
}

/* Step 2, one level: senders send, receivers filter the union. Returns false (on
 * every rank) when the merged forests would exceed the limit. */
static bool merge_level(run *r, uint64_t step, uint64_t limit)
{
    uint64_t mine = r->m, most;
    cr_module_allreduce_u64(r->comm, &mine, &most, 1, CR_OP_MAX);
    if (limit == 0 || 2 * most > limit)
        return false;
    uint64_t rel = (uint64_t)r->rank & (2 * step - 1);
    if (rel == step) {
        for (size_t j = 0; j < r->m; j++)
            cr_async(r->comm, (int)((uint64_t)r->rank - step), r->st->h_edges, &r->e[j],
                     sizeof r->e[j]);
        r->m = 0;
    }
    cr_barrier(r->comm);
    msf_call *c = r->call;
    if (rel == 0 && c->nrecv > 0) {
        if (r->m + c->nrecv > r->cap) {
            r->cap = r->m + c->nrecv;
            r->e = cr_xrealloc(r->e, r->cap * sizeof *r->e);
        }
        memcpy(&r->e[r->m], c->recv, c->nrecv * sizeof *c->recv);
        r->m += c->nrecv;
        c->nrecv = 0;
        sort_edges(r->e, r->m);
        r->m = filter_sorted(r->e, r->m, r->p);
    }
    return true;
}

/* Step 3: rank 0 holds the forest; every vertex gets its tree's smallest vertex. */
static void label_from_root(run *r, uint64_t *label, uint64_t first, uint64_t count)
{
    for (uint64_t i = 0; i < count; i++)
        label[i] = first + i;
    if (r->rank == 0) {
        for (size_t j = 0; j < r->m; j++)
            unite(r->p, (uint32_t)r->e[j].u, (uint32_t)r->e[j].v);
        uint64_t *sent = cr_xcalloc(r->n / 64 + 1, sizeof *sent);
        for (size_t j = 0; j < 2 * r->m; j++) {
            uint64_t x = j & 1 ? r->e[j / 2].v : r->e[j / 2].u;
            uint64_t root = find(r->p, (uint32_t)x);
            if (root == x || (sent[x / 64] >> (x % 64) & 1))
                continue;
            sent[x / 64] |= UINT64_C(1) << (x % 64);
            uint64_t m[2] = {x, root};
            cr_async(r->comm, cr_darray_owner(r->n, r->size, x), r->st->h_labels, m, sizeof m);
        }
        free(sent);
        for (size_t j = 0; j < r->m; j++) /* leave the union-find clean */
            r->p[r->e[j].u] = (uint32_t)r->e[j].u, r->p[r->e[j].v] = (uint32_t)r->e[j].v;
    }
    cr_barrier(r->comm);
}

/* The ids when the caller gives none: an exclusive prefix sum of the edge counts
 * (Hillis and Steele's scan, one barrier per doubling). */
static uint64_t ids_before(run *r, uint64_t count)
{
    uint64_t sum = count;
    unsigned round = 0;
    for (uint64_t d = 1; d < (uint64_t)r->size; d *= 2, round++) {
        if ((uint64_t)r->rank + d < (uint64_t)r->size) {
            uint64_t m[2] = {round, sum};
            cr_async(r->comm, (int)((uint64_t)r->rank + d), r->st->h_prefix, m, sizeof m);
        }
        cr_barrier(r->comm);
        sum += r->call->prefix[round & 1];
        r->call->prefix[round & 1] = 0;
    }
    return sum - count;
}

static int agree_error(cr_comm *comm, const char *mine, char *err, size_t errlen)
{
    uint64_t me = mine ? (uint64_t)cr_comm_rank(comm) : UINT64_MAX, first;
    cr_module_allreduce_u64(comm, &me, &first, 1, CR_OP_MIN);
    if (first == UINT64_MAX)
        return 0;
    if (err && errlen) {
        if (mine)
            snprintf(err, errlen, "%s", mine);
        else
            snprintf(err, errlen, "cr_graph_msf: the edges of rank %llu are invalid",
                     (unsigned long long)first);
    }
    return -1;
}

/* A one-line error if this rank's edges cannot make a forest, else NULL. */
static const char *check(const run *r, const cr_edge_list *list, char *why, size_t whylen)
{
    if (list->count && !list->weights)
        return "cr_graph_msf: the edge list has no weights";
    for (size_t j = 0; j < list->count; j++)
        if (isnan(list->weights[j])) {
            snprintf(why, whylen, "cr_graph_msf: edge %zu of rank %d has a NaN weight", j,
                     r->rank);
            return why;
        }
    return NULL;
}

/* This rank's edges as the algorithm's records, self-loops left out, in id order. */
static void fill(run *r, const cr_edge_list *list, const uint64_t *ids, uint64_t before)
{
    r->cap = list->count ? list->count : 1;
    r->e = cr_xmalloc(r->cap * sizeof *r->e);
    bool sorted = true;
    for (size_t j = 0; j < list->count; j++) {
        const cr_edge *x = &list->edges[j];
        if (x->u == x->v)
            continue;
        uint64_t id = ids ? ids[j] : before + j;
        sorted = sorted && (r->m == 0 || r->e[r->m - 1].id < id);
        r->e[r->m++] = (msf_edge){x->u, x->v, id, key_of(list, j), 0};
    }
    if (!sorted)
        qsort(r->e, r->m, sizeof *r->e, by_id);
}

void cr_graph_msf_opts_init(cr_msf_opts *o)
{
    *o = (cr_msf_opts){.algorithm = CR_MSF_FILTER, .gather_limit = DEFAULT_GATHER_LIMIT,
                       .aggregation = CR_DARRAY_AGG_HASH};
    o->route.kind = CR_ROUTE_DIRECT;
}

/* Boruvka's rounds on the edges this rank holds. */
static void boruvka(run *r, bool lockstep, const cr_msf_opts *o, cr_msf_result *out,
                    msf_forest *f)
{
    cr_darray_opts d;
    cr_darray_opts_init(&d);
    if (lockstep) {
        d.route = o->route;
        d.aggregation = o->aggregation;
    }
    msf_rounds *s = msf_rounds_create(r->comm, r->n, lockstep, &d);
    double t0 = cr_module_now(r->comm);
    msf_rounds_run(s, r->e, r->m, out->label, f);
    out->t_rounds = cr_module_now(r->comm) - t0;
    if (lockstep)
        msf_rounds_stats(s, &out->best, &out->parent);
    msf_rounds_destroy(s);
}

int cr_graph_msf(cr_comm *comm, const cr_edge_list *edges, const uint64_t *ids,
                 const cr_msf_opts *o, cr_msf_result *out, char *err, size_t errlen)
{
    cr_msf_opts defaults;
    if (!o) {
        cr_graph_msf_opts_init(&defaults);
        o = &defaults;
    }
    *out = (cr_msf_result){0};
    msf_call call = {0};
    msf_state *st = state_of(comm, &call);
    run r = {.comm = comm, .st = st, .call = &call, .rank = cr_comm_rank(comm),
             .size = cr_comm_size(comm)};
    char why[160];
    if (agree_error(comm, check(&r, edges, why, sizeof why), err, errlen)) {
        st->call = NULL;
        return -1;
    }
    cr_module_allreduce_u64(comm, &edges->nvertices, &r.n, 1, CR_OP_MAX);
    uint64_t before = ids ? 0 : ids_before(&r, edges->count);
    bool filter = o->algorithm == CR_MSF_FILTER && r.n <= UINT32_MAX;
    bool from_list = filter && ids_ascend(ids, edges->count);
    if (!from_list)
        fill(&r, edges, ids, before);

    out->nvertices = r.n;
    cr_darray_block(r.n, r.size, r.rank, &out->first, &out->count);
    out->label = cr_xmalloc((out->count ? out->count : 1) * sizeof *out->label);
    call.first = out->first;
    call.label = out->label;
    msf_forest f = {0};

    if (filter) {
        double t0 = cr_module_now(comm);
        r.p = cr_xmalloc((r.n ? r.n : 1) * sizeof *r.p);
        for (uint64_t v = 0; v < r.n; v++)
            r.p[v] = (uint32_t)v;
        if (from_list)
            filter_list(&r, edges, ids, before);
        else
            r.m = filter_own(r.e, r.m, r.p);
        out->filtered = graph_sum(comm, r.m);
        double t1 = cr_module_now(comm);
        uint64_t step = 1;
        while (step < (uint64_t)r.size && merge_level(&r, step, o->gather_limit))
            step *= 2, out->merge_levels++;
        double t2 = cr_module_now(comm);
        out->t_filter = t1 - t0, out->t_merge = t2 - t1;
        if (step >= (uint64_t)r.size) {
            for (size_t j = 0; j < r.m; j++)
                msf_forest_add(&f, r.e[j].id, r.e[j].key);
            label_from_root(&r, out->label, out->first, out->count);
            out->t_label = cr_module_now(comm) - t2;
        } else {
            boruvka(&r, false, o, out, &f);
        }
    } else {
        boruvka(&r, o->algorithm == CR_MSF_LOCKSTEP, o, out, &f);
    }

    out->forest = f.ids;
    out->nforest = f.n;
    out->rounds = f.rounds;
    out->t_choose = f.t_choose, out->t_double = f.t_double, out->t_relabel = f.t_relabel;
    out->forest_edges = graph_sum(comm, f.n);
    cr_module_allreduce_double(comm, &f.weight, &out->weight, 1, CR_OP_SUM);
    st->call = NULL;
    free(call.recv);
    free(r.e);
    free(r.p);
    return 0;
}

void cr_graph_msf_result_free(cr_msf_result *r)
{
    if (!r)
        return;
    free(r->forest);
    free(r->label);
    r->forest = r->label = NULL;
}

int cr_graph_msf_of(cr_graph *g, const cr_msf_opts *o, cr_msf_result *out, char *err,
                    size_t errlen)
{
    cr_edge_list mine;
    cr_graph_edges(g, &mine);
    int rc = cr_graph_msf(cr_graph_comm(g), &mine, NULL, o, out, err, errlen);
    cr_graph_edges_free(&mine);
    return rc;
}
