/* Boruvka's rounds on the distributed array (msf.h; the algorithm is described in
 * apps/boruvka.c and docs/graph.md). The same code runs lock-step under MPI and
 * asynchronously on either transport: its only collectives are the arrays' steps or
 * cr_barrier, and the sum the caller passes. */
#include "msf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A component's lightest edge so far: the array's element, merged by "lighter". */
typedef struct choice {
    uint64_t w, id, a, b;
} choice;

static const choice NONE = {UINT64_MAX, UINT64_MAX, 0, 0};

static int lighter(const choice *x, const choice *y)
{
    return x->w < y->w || (x->w == y->w && x->id < y->id);
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

struct msf {
    const app *a;
    cr_comm *comm;
    int async;
    cr_darray *best, *parent;
    msf_sum_fn sum;
    void *sum_ctx;
};

static void got_u64(cr_comm *comm, const void *data, size_t len, void *ctx)
{
    (void)comm, (void)len;
    memcpy(ctx, data, 8);
}

static void read_u64(msf *s, cr_darray *a, uint64_t i, uint64_t *dst)
{
    if (s->async)
        cr_darray_async_read(a, i, got_u64, dst);
    else
        cr_darray_read(a, i, dst);
}

static void write_choice(msf *s, uint64_t i, const choice *c)
{
    if (s->async)
        cr_darray_async_write(s->best, i, c);
    else
        cr_darray_write(s->best, i, c);
}

static void complete(msf *s, cr_darray *a)
{
    if (s->async)
        cr_barrier(s->comm);
    else
        cr_darray_step(a);
}


/* ---- the rounds ------------------------------------------------------------------ */

static int by_pair(const void *x, const void *y)
{
    const msf_edge *p = x, *q = y;
    uint64_t pa = p->a < p->b ? p->a : p->b, pb = p->a < p->b ? p->b : p->a;
    uint64_t qa = q->a < q->b ? q->a : q->b, qb = q->a < q->b ? q->b : q->a;
    if (pa != qa)
        return pa < qa ? -1 : 1;
    if (pb != qb)
        return pb < qb ? -1 : 1;
    if (p->w != q->w)
        return p->w < q->w ? -1 : 1;
    return (p->id > q->id) - (p->id < q->id);
}

static int same_pair(const msf_edge *p, const msf_edge *q)
{
    uint64_t pa = p->a < p->b ? p->a : p->b, pb = p->a < p->b ? p->b : p->a;
    uint64_t qa = q->a < q->b ? q->a : q->b, qb = q->a < q->b ? q->b : q->a;
    return pa == qa && pb == qb;
}

/* Drop self-loops; of the parallel edges this rank holds, keep the lightest. */
static size_t contract(msf_edge *e, size_t m)
{
    size_t k = 0;
    for (size_t j = 0; j < m; j++)
        if (e[j].a != e[j].b)
            e[k++] = e[j];
    qsort(e, k, sizeof *e, by_pair);
    size_t u = 0;
    for (size_t j = 0; j < k; j++)
        if (u == 0 || !same_pair(&e[u - 1], &e[j]))
            e[u++] = e[j];
    return u;
}

static void add_to_forest(msf_forest *f, uint64_t id, uint64_t wbits)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 1024;
        f->ids = realloc(f->ids, f->cap * sizeof *f->ids);
        if (!f->ids) {
            fprintf(stderr, "boruvka: out of memory for the forest\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    f->ids[f->n++] = id;
    float w;
    uint32_t bits = (uint32_t)wbits;
    memcpy(&w, &bits, sizeof w);
    f->weight += w;
}

/* Async mode: the ranks' local writes of the parents must be done before any rank
 * reads them (a lock-step read happens inside the collective step, after them). The
 * caller's sum is a barrier (under MPI an MPI_Allreduce, cheaper than cr_barrier,
 * which also waits for the mailbox to drain: nothing is in flight here). */
static void writes_done(const msf *s)
{
    if (s->async)
        s->sum(s->comm, 0, s->sum_ctx);
}

/* Every component's lightest edge, and each component points across it; the two
 * ends of an edge chosen from both sides: the smaller becomes the root. Adds the
 * chosen edges to the forest. */
static void choose(msf *s, const msf_edge *e, size_t m, uint64_t *q, msf_forest *f)
{
    uint64_t first, count;
    choice *best = cr_darray_local(s->best, &first, &count);
    uint64_t *parent = cr_darray_local(s->parent, NULL, NULL);
    for (uint64_t i = 0; i < count; i++)
        best[i] = NONE;
    writes_done(s);
    for (size_t j = 0; j < m; j++) {
        choice c = {e[j].w, e[j].id, e[j].a, e[j].b};
        write_choice(s, e[j].a, &c);
        write_choice(s, e[j].b, &c);
    }
    complete(s, s->best);
    for (uint64_t i = 0; i < count; i++) {
        uint64_t c = first + i;
        parent[i] = best[i].w == UINT64_MAX ? c : (best[i].a == c ? best[i].b : best[i].a);
    }
    writes_done(s);
    for (uint64_t i = 0; i < count; i++)
        read_u64(s, s->parent, parent[i], &q[i]);
    complete(s, s->parent);
    for (uint64_t i = 0; i < count; i++) {
        uint64_t c = first + i;
        if (best[i].w == UINT64_MAX)
            continue;
        if (q[i] == c && c < parent[i])
            parent[i] = c; /* the smaller end of a mutual choice: a root */
        else
            add_to_forest(f, best[i].id, best[i].w);
    }
    writes_done(s);
}

/* Pointer doubling: parent[c] = parent[parent[c]] until nothing changes. */
static void double_pointers(msf *s, uint64_t *q)
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
        if (s->sum(s->comm, changed, s->sum_ctx) == 0)
            return;
    }
}

/* The edges' ends and the vertices' labels, renamed to their new components. */
static void relabel(msf *s, msf_edge *e, size_t m, uint64_t *label, uint64_t nlocal,
                    uint64_t *ends)
{
    for (size_t j = 0; j < m; j++) {
        read_u64(s, s->parent, e[j].a, &ends[2 * j]);
        read_u64(s, s->parent, e[j].b, &ends[2 * j + 1]);
    }
    for (uint64_t i = 0; i < nlocal; i++)
        read_u64(s, s->parent, label[i], &ends[2 * m + i]);
    complete(s, s->parent);
    for (size_t j = 0; j < m; j++)
        e[j].a = ends[2 * j], e[j].b = ends[2 * j + 1];
    for (uint64_t i = 0; i < nlocal; i++)
        label[i] = ends[2 * m + i];
}

void msf_run(msf *s, msf_edge *e, size_t m, uint64_t *label, msf_forest *f)
{
    const app *a = s->a;
    uint64_t first, count;
    cr_darray_local(s->parent, &first, &count);
    for (uint64_t i = 0; i < count; i++)
        label[i] = first + i;
    uint64_t *q = app_calloc(a, count ? count : 1, 8, "the pointers");
    uint64_t *ends = NULL;
    for (;;) {
        m = contract(e, m);
        if (s->sum(s->comm, m, s->sum_ctx) == 0)
            break;
        f->rounds++;
        double t0 = now();
        choose(s, e, m, q, f);
        double t1 = now();
        double_pointers(s, q);
        double t2 = now();
        free(ends);
        ends = app_calloc(a, 2 * m + count + 1, 8, "the relabelled ends");
        relabel(s, e, m, label, count, ends);
        double t3 = now();
        f->t_choose += t1 - t0, f->t_double += t2 - t1, f->t_relabel += t3 - t2;
    }
    free(ends);
    free(q);
}


/* ---- the arrays ------------------------------------------------------------------- */

msf *msf_create(const app *a, cr_comm *comm, uint64_t n, int async, const cr_darray_opts *d,
                msf_sum_fn sum, void *sum_ctx)
{
    msf *s = app_calloc(a, 1, sizeof *s, "Boruvka's state");
    *s = (msf){.a = a, .comm = comm, .async = async, .sum = sum, .sum_ctx = sum_ctx};
    cr_darray_opts bd = *d;
    bd.merge = CR_DARRAY_USER;
    bd.combine = keep_lighter;
    s->best = cr_darray_create(comm, n, sizeof(choice), &bd);
    s->parent = cr_darray_create(comm, n, 8, d);
    return s;
}

void msf_local(const msf *s, uint64_t *first, uint64_t *count)
{
    cr_darray_local(s->parent, first, count);
}

void msf_darray_stats(const msf *s, cr_darray_stats *best, cr_darray_stats *parent)
{
    cr_darray_stats_get(s->best, best);
    cr_darray_stats_get(s->parent, parent);
}

void msf_destroy(msf *s)
{
    if (!s)
        return;
    cr_darray_destroy(s->best);
    cr_darray_destroy(s->parent);
    free(s);
}
