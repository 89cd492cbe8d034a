/* The two other forms of connected components (cr_graph_cc_with), kept for the
 * aggregation studies; cc.c has the default.
 *
 * Label propagation: every vertex starts with its own id and offers it to its larger
 * neighbours; a vertex offered a smaller label takes it and offers it on, from the
 * handler. Offers are records of a combining handler keyed by the target with rule
 * min, so offers to one vertex that meet in a buffer become one. One barrier ends
 * it: when no offer is left anywhere, every label is its component's minimum.
 *
 * SV: pointer jumping in lock-step darray steps, in the spirit of FastSV (Zhang,
 * Azad and Hu, 2020): grandparents gf[v] = f[f[v]]; each vertex takes the smallest
 * grandparent among its neighbours (and its own); stochastic hooking f[f[u]] <= m and
 * aggressive hooking f[u] <= m, by writes merged with min; until no parent changes.
 * The steps' identical reads of the few roots are what the darray's aggregation
 * merges ("Communication-efficient distributed array with aggregation and
 * indirection", section 5.4). */
#include "graph/graph_internal.h"

#include "common/fatal.h"
#include "courier/darray.h"
#include "courier/dedup.h"
#include "courier/mailbox.h"
#include "mailbox/module.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- label propagation */

/* One label propagation: its labels and counter, and the comm's handler. */
typedef struct offer_run {
    cr_graph *g;
    int h_offer;
    uint64_t *label;  /* my labels */
    uint64_t updates; /* labels this rank lowered */
} offer_run;

typedef struct offer_state {
    int h_offer;
    offer_run *run; /* the call in progress, for the handler */
} offer_state;

/* Offer `label` to every neighbour of my vertex i that could take it. */
static void offer(offer_run *r, uint64_t i, uint64_t label)
{
    cr_graph *g = r->g;
    for (uint64_t e = g->offsets[i]; e < g->offsets[i + 1]; e++) {
        uint64_t v = graph_nbr(g, e);
        if (v <= label)
            continue; /* its own id is already at most this label */
        uint64_t rec[2] = {v, label};
        cr_async(g->comm, cr_block_owner(g->n, g->size, v), r->h_offer, rec, sizeof rec);
    }
}

static void on_offers(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    offer_run *r = ((offer_state *)user)->run;
    for (size_t k = 0; k < b->count; k++) {
        uint64_t rec[2];
        memcpy(rec, cr_batch_payload(b, k), sizeof rec);
        uint64_t i = rec[0] - r->g->first;
        if (rec[1] >= r->label[i])
            continue;
        r->label[i] = rec[1];
        r->updates++;
        offer(r, i, rec[1]);
    }
}

static const cr_module_type offer_module = {.name = "graph cc offers", .destroy = cr_module_state_free};

static offer_state *offer_state_of(cr_comm *comm, offer_run *run)
{
    bool fresh;
    offer_state *s = cr_module_state_or_new(comm, &offer_module, sizeof *s, &fresh);
    s->run = run;
    if (!fresh)
        return s;
    cr_dedup_rule min = {.key_len = 8, .op = CR_OP_MIN, .type = CR_UINT64};
    s->h_offer = cr_dedup_register(comm, &(cr_handler_type){.batch = on_offers,
                                                             .name = "cc offer"}, &min, s);
    return s;
}

/* A handler may run inside its own registration, before cr_register has returned
 * the id it sends with: so no rank offers before every rank has registered and set
 * its labels (the first barrier). */
static uint64_t label_propagation(cr_graph *g, uint64_t *label)
{
    offer_run r = {.g = g, .label = label};
    for (uint64_t i = 0; i < g->count; i++)
        label[i] = g->first + i;
    offer_state *s = offer_state_of(g->comm, &r);
    r.h_offer = s->h_offer;
    cr_barrier(g->comm); /* every rank's labels are set before the first offer */
    for (uint64_t i = 0; i < g->count; i++)
        offer(&r, i, label[i]);
    cr_barrier(g->comm);
    s->run = NULL;
    return r.updates;
}

/* ---------------------------------------------------------------- SV */

static uint64_t sv(cr_graph *g, const cr_cc_opts *opts, uint64_t *label)
{
    uint64_t nl = g->count;
    cr_darray_opts base;
    cr_darray_opts_init(&base);
    base.route = opts->route;
    base.aggregation = opts->aggregation;
    cr_darray_opts o = base;
    o.merge = CR_OP_MIN;
    o.type = CR_UINT64;
    cr_darray *f = cr_darray_create(g->comm, g->n, 8, &o);     /* parents; min writes hook */
    cr_darray *gf = cr_darray_create(g->comm, g->n, 8, &base); /* grandparents */
    uint64_t first, *fl = cr_darray_local(f, &first, NULL), *gl = cr_darray_local(gf, NULL, NULL);
    for (uint64_t i = 0; i < nl; i++)
        fl[i] = first + i;
    uint64_t edges = g->offsets[nl];
    uint64_t *ngf = cr_xmalloc((edges ? edges : 1) * sizeof *ngf);
    uint64_t *old = cr_xmalloc((nl ? nl : 1) * sizeof *old), rounds = 0;
    for (;;) {
        rounds++;
        for (uint64_t i = 0; i < nl; i++) /* gf[v] = f[f[v]] */
            cr_darray_read(f, fl[i], &gl[i]);
        cr_darray_step(f);
        graph_sum(g->comm, 0); /* every gf block written before anyone reads it */
        uint64_t k = 0;
        for (uint64_t i = 0; i < nl; i++)
            for (uint64_t e = g->offsets[i]; e < g->offsets[i + 1]; e++)
                cr_darray_read(gf, graph_nbr(g, e), &ngf[k++]);
        cr_darray_step(gf);
        memcpy(old, fl, nl * sizeof *old);
        k = 0;
        for (uint64_t i = 0; i < nl; i++) {
            uint64_t m = gl[i]; /* shortcut: f[u] <= gf[u] */
            for (uint64_t e = g->offsets[i]; e < g->offsets[i + 1]; e++, k++)
                m = ngf[k] < m ? ngf[k] : m;
            cr_darray_write(f, old[i], &m);    /* stochastic hooking: f[f[u]] <= m */
            cr_darray_write(f, first + i, &m); /* aggressive hooking: f[u] <= m */
        }
        cr_darray_step(f);
        uint64_t changed = 0;
        for (uint64_t i = 0; i < nl; i++)
            changed += fl[i] != old[i];
        if (!graph_sum(g->comm, changed))
            break;
    }
    memcpy(label, fl, nl * sizeof *label);
    free(ngf);
    free(old);
    cr_darray_destroy(f);
    cr_darray_destroy(gf);
    return rounds;
}

/* ---------------------------------------------------------------- the call */

void cr_graph_cc_opts_init(cr_cc_opts *o)
{
    *o = (cr_cc_opts){.algorithm = CR_CC_LOCAL, .aggregation = CR_DARRAY_AGG_HASH};
    o->route.kind = CR_ROUTE_DIRECT;
}

void cr_graph_cc_with(cr_graph *g, const cr_cc_opts *o, uint64_t *label, cr_graph_cc_stats *stats)
{
    cr_cc_opts defaults;
    if (!o) {
        cr_graph_cc_opts_init(&defaults);
        o = &defaults;
    }
    switch (o->algorithm) {
    case CR_CC_LOCAL:
        cr_graph_cc(g, label, stats);
        return;
    case CR_CC_LABEL: {
        uint64_t updates = label_propagation(g, label);
        if (stats)
            *stats = (cr_graph_cc_stats){.rounds = 1, .updates = updates};
        return;
    }
    case CR_CC_SV: {
        uint64_t rounds = sv(g, o, label);
        if (stats)
            *stats = (cr_graph_cc_stats){.rounds = rounds};
        return;
    }
    }
    cr_fatal("cr_graph_cc_with: algorithm %d is not valid", (int)o->algorithm);
}
