/* Boruvka's rounds on the distributed array (the lock-step and asynchronous forms of
 * cr_graph_msf, and the last phase of its filtering form).
 *
 * Each round: every component finds its lightest incident edge (a write of the edge
 * to the component's entry, merged by "lighter": key, then id); each component
 * points to the component across that edge; of two components that chose each other
 * the smaller becomes the root; pointer doubling makes every component point to its
 * root; the edges are relabelled to the new components and contracted (self-loops
 * dropped, of the parallel edges a rank holds the lightest kept). The rounds end when
 * no edge joins two components. Pointer doubling makes many ranks read the same few
 * entries, which is what merging removes ("Communication-efficient distributed array
 * with aggregation and indirection", section 5.4). Its only collectives are the
 * arrays' steps or cr_barrier, and the transport's sum, so the asynchronous form runs
 * on either transport. */
#include "graph/msf_rounds.h"
#include "graph/graph_internal.h"

#include "common/fatal.h"
#include "mailbox/module.h"

#include <stdlib.h>
#include <string.h>

float msf_key_weight(uint32_t key)
{
    uint32_t bits = (key & 0x80000000u) ? key & 0x7fffffffu : ~key;
    float w;
    memcpy(&w, &bits, sizeof w);
    return w;
}

void msf_forest_add(msf_forest *f, uint64_t id, uint32_t key)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 1024;
        f->ids = cr_xrealloc(f->ids, f->cap * sizeof *f->ids);
    }
    f->ids[f->n++] = id;
    f->weight += msf_key_weight(key);
}

/* A component's lightest edge so far: the array's element, merged by "lighter". */
typedef struct choice {
    uint64_t key, id, a, b;
} choice;

static const choice NONE = {UINT64_MAX, UINT64_MAX, 0, 0};

static int lighter(const choice *x, const choice *y)
{
    return x->key < y->key || (x->key == y->key && x->id < y->id);
}

static void keep_lighter(void *dst, const void *src, size_t len, void *user)
{
    (void)len, (void)user;
    choice d, s;
    memcpy(&d, dst, sizeof d);
    memcpy(&s, src, sizeof s);
    if (lighter(&s, &d))
        memcpy(dst, &s, sizeof s);
}

struct msf_rounds {
    cr_comm *comm;
    bool async;
    cr_darray *best, *parent;
};

static void got_u64(cr_comm *comm, const void *data, size_t len, void *ctx)
{
    (void)comm, (void)len;
    memcpy(ctx, data, 8);
}

static void read_u64(msf_rounds *s, cr_darray *a, uint64_t i, uint64_t *dst)
{
    if (s->async)
        cr_darray_async_read(a, i, got_u64, dst);
    else
        cr_darray_read(a, i, dst);
}

static void write_choice(msf_rounds *s, uint64_t i, const choice *c)
{
    if (s->async)
        cr_darray_async_write(s->best, i, c);
    else
        cr_darray_write(s->best, i, c);
}

static void complete(msf_rounds *s, cr_darray *a)
{
    if (s->async)
        cr_barrier(s->comm);
    else
        cr_darray_step(a);
}

static uint64_t lo_end(const msf_edge *e)
{
    return e->u < e->v ? e->u : e->v;
}

static uint64_t hi_end(const msf_edge *e)
{
    return e->u < e->v ? e->v : e->u;
}

static int by_pair(const void *x, const void *y)
{
    const msf_edge *p = x, *q = y;
    uint64_t pa = lo_end(p), pb = hi_end(p), qa = lo_end(q), qb = hi_end(q);
    if (pa != qa)
        return pa < qa ? -1 : 1;
    if (pb != qb)
        return pb < qb ? -1 : 1;
    return msf_lighter(p, q) ? -1 : msf_lighter(q, p);
}

/* Drop self-loops; of the parallel edges this rank holds, keep the lightest. */
static size_t contract(msf_edge *e, size_t m)
{
    size_t k = 0;
    for (size_t j = 0; j < m; j++)
        if (e[j].u != e[j].v)
            e[k++] = e[j];
    qsort(e, k, sizeof *e, by_pair);
    size_t u = 0;
    for (size_t j = 0; j < k; j++)
        if (u == 0 || lo_end(&e[u - 1]) != lo_end(&e[j]) || hi_end(&e[u - 1]) != hi_end(&e[j]))
            e[u++] = e[j];
    return u;
}

/* Asynchronous: the ranks' local writes must be done before any rank reads them (a
 * lock-step read happens inside the collective step, after them). The transport's
 * sum is a barrier, cheaper than cr_barrier, which also waits for the mailbox to
 * drain: nothing is in flight here. */
static void writes_done(msf_rounds *s)
{
    if (s->async)
        graph_sum(s->comm, 0);
}

/* Every component's lightest edge, and each component points across it; the two
 * ends of an edge chosen from both sides: the smaller becomes the root. Adds the
 * chosen edges to the forest. */
static void choose(msf_rounds *s, const msf_edge *e, size_t m, uint64_t *q, msf_forest *f)
{
    uint64_t first, count;
    choice *best = cr_darray_local(s->best, &first, &count);
    uint64_t *parent = cr_darray_local(s->parent, NULL, NULL);
    for (uint64_t i = 0; i < count; i++)
        best[i] = NONE;
    writes_done(s);
    for (size_t j = 0; j < m; j++) {
        choice c = {e[j].key, e[j].id, e[j].u, e[j].v};
        write_choice(s, e[j].u, &c);
        write_choice(s, e[j].v, &c);
    }
    complete(s, s->best);
    for (uint64_t i = 0; i < count; i++) {
        uint64_t c = first + i;
        parent[i] = best[i].key == UINT64_MAX ? c : (best[i].a == c ? best[i].b : best[i].a);
    }
    writes_done(s);
    for (uint64_t i = 0; i < count; i++)
        read_u64(s, s->parent, parent[i], &q[i]);
    complete(s, s->parent);
    for (uint64_t i = 0; i < count; i++) {
        uint64_t c = first + i;
        if (best[i].key == UINT64_MAX)
            continue;
        if (q[i] == c && c < parent[i])
            parent[i] = c; /* the smaller end of a mutual choice: a root */
        else
            msf_forest_add(f, best[i].id, (uint32_t)best[i].key);
    }
    writes_done(s);
}

/* Pointer doubling: parent[c] = parent[parent[c]] until nothing changes. */
static void double_pointers(msf_rounds *s, uint64_t *q)
{
    uint64_t count;
    uint64_t *parent = cr_darray_local(s->parent, NULL, &count);
    for (;;) {
        for (uint64_t i = 0; i < count; i++)
            read_u64(s, s->parent, parent[i], &q[i]);
        complete(s, s->parent);
        uint64_t changed = 0;
        for (uint64_t i = 0; i < count; i++) {
            changed += q[i] != parent[i];
            parent[i] = q[i];
        }
        writes_done(s);
        if (graph_sum(s->comm, changed) == 0)
            return;
    }
}

/* The edges' ends and the vertices' labels, renamed to their new components. */
static void relabel(msf_rounds *s, msf_edge *e, size_t m, uint64_t *label, uint64_t nlocal,
                    uint64_t *ends)
{
    for (size_t j = 0; j < m; j++) {
        read_u64(s, s->parent, e[j].u, &ends[2 * j]);
        read_u64(s, s->parent, e[j].v, &ends[2 * j + 1]);
    }
    for (uint64_t i = 0; i < nlocal; i++)
        read_u64(s, s->parent, label[i], &ends[2 * m + i]);
    complete(s, s->parent);
    for (size_t j = 0; j < m; j++)
        e[j].u = ends[2 * j], e[j].v = ends[2 * j + 1];
    for (uint64_t i = 0; i < nlocal; i++)
        label[i] = ends[2 * m + i];
}

void msf_rounds_run(msf_rounds *s, msf_edge *e, size_t m, uint64_t *label, msf_forest *f)
{
    uint64_t first, count;
    cr_darray_local(s->parent, &first, &count);
    for (uint64_t i = 0; i < count; i++)
        label[i] = first + i;
    uint64_t *q = cr_xcalloc(count ? count : 1, 8);
    uint64_t *ends = NULL;
    for (;;) {
        m = contract(e, m);
        if (graph_sum(s->comm, m) == 0)
            break;
        f->rounds++;
        double t0 = cr_module_now(s->comm);
        choose(s, e, m, q, f);
        double t1 = cr_module_now(s->comm);
        double_pointers(s, q);
        double t2 = cr_module_now(s->comm);
        free(ends);
        ends = cr_xcalloc(2 * m + count + 1, 8);
        relabel(s, e, m, label, count, ends);
        double t3 = cr_module_now(s->comm);
        f->t_choose += t1 - t0, f->t_double += t2 - t1, f->t_relabel += t3 - t2;
    }
    free(ends);
    free(q);
}

msf_rounds *msf_rounds_create(cr_comm *comm, uint64_t n, bool lockstep, const cr_darray_opts *d)
{
    msf_rounds *s = cr_xcalloc(1, sizeof *s);
    *s = (msf_rounds){.comm = comm, .async = !lockstep};
    cr_darray_opts bd = *d;
    bd.merge = CR_OP_USER;
    bd.combine = keep_lighter;
    s->best = cr_darray_create(comm, n, sizeof(choice), &bd);
    s->parent = cr_darray_create(comm, n, 8, d);
    return s;
}

void msf_rounds_stats(const msf_rounds *s, cr_darray_stats *best, cr_darray_stats *parent)
{
    cr_darray_stats_get(s->best, best);
    cr_darray_stats_get(s->parent, parent);
}

void msf_rounds_destroy(msf_rounds *s)
{
    if (!s)
        return;
    cr_darray_destroy(s->best);
    cr_darray_destroy(s->parent);
    free(s);
}
