/* boruvka: the minimum spanning forest of a weighted graph, by Boruvka's rounds on
 * the distributed array (include/courier/darray.h), validated against a sequential
 * Kruskal.
 *
 * Each round: every component finds its lightest incident edge (a write of the
 * edge to the component's entry, merged by "lightest": weight, then edge id, so the
 * forest is unique); each component points to the component across that edge; the
 * two ends of a component's lightest edge that chose each other break the tie (the
 * smaller becomes the root); pointer doubling makes every component point to its
 * root; the edges are relabelled to the new components and contracted (self-loops
 * dropped, of the parallel edges a rank holds the lightest kept). The rounds end
 * when no edge joins two components. Pointer doubling makes many ranks read the
 * same few entries, which is what merging removes (the thesis behind src/darray,
 * section 5.4). */
#include "cli.h"
#include "components.h"
#include "common/rng.h"

#include <courier.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: mpirun -np P boruvka [options]\n"
    "\n"
    "Minimum spanning forest of a weighted graph by Boruvka's rounds on the\n"
    "distributed array; prints the forest's weight, its trees, the rounds, the time\n"
    "of each phase and the array's merging, and checks the forest against a\n"
    "sequential Kruskal when the graph fits on one rank.\n"
    "\n"
    "  --scale S         2^S vertices (default 16)\n"
    "  --edgefactor E    edges per vertex (default 16)\n"
    "  --generator G     rmat, gnm or rgg (default rmat); weights uniform in [0, 1)\n"
    "  --graph FILE      read weighted edges instead: text 'u v w' per line, or a\n"
    "                    Graph500 dump (FILE.g500) with --weights\n"
    "  --weights FILE    the Graph500 dump's weights (float32 per edge)\n"
    "  --mode M          lockstep (default) or async\n"
    "  --route R         lock-step: direct (default), grid, grid:AxB..., hypercube;\n"
    "                    async: the comm's route, any of COURIER_ROUTE's\n"
    "  --node-size K     async: virtual nodes of K ranks\n"
    "  --aggregation A   lock-step: none, hash (default) or sort\n"
    "  --validate V      auto (default): check the invariants distributedly (every\n"
    "                    edge within one tree, forest edges = vertices - trees) and,\n"
    "                    when the graph has at most 2^22 edges, against Kruskal on\n"
    "                    rank 0; yes: always against Kruskal too; no: neither\n"
    "  --seed S          graph seed (default 1)\n"
    "  --help            this text\n";

/* An edge between two components: the order key is (weight bits, id). */
typedef struct edge {
    uint64_t a, b; /* components (vertices at first) */
    uint64_t w;    /* the weight's float bits: ordered as the weight for w >= 0 */
    uint64_t id;   /* unique over the graph */
} edge;

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

typedef struct opts {
    cr_gen_params gen;
    const char *graph, *weights, *route;
    int async;
    int aggregation;
    unsigned node_size;
    int validate; /* 0 no, 1 yes, 2 auto */
} opts;

/* ---- access in either mode -------------------------------------------------------- */

typedef struct arrays {
    cr_comm *comm;
    int async;
    cr_darray *best, *parent;
} arrays;

static void got_u64(cr_comm *comm, const void *data, size_t len, void *ctx)
{
    (void)comm, (void)len;
    memcpy(ctx, data, 8);
}

static void read_u64(arrays *s, cr_darray *a, uint64_t i, uint64_t *dst)
{
    if (s->async)
        cr_darray_async_read(a, i, got_u64, dst);
    else
        cr_darray_read(a, i, dst);
}

static void write_choice(arrays *s, uint64_t i, const choice *c)
{
    if (s->async)
        cr_darray_async_write(s->best, i, c);
    else
        cr_darray_write(s->best, i, c);
}

static void complete(arrays *s, cr_darray *a)
{
    if (s->async)
        cr_barrier(s->comm);
    else
        cr_darray_step(a);
}

static uint64_t sum_u64(uint64_t x)
{
    uint64_t y;
    MPI_Allreduce(&x, &y, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return y;
}

/* ---- the rounds ------------------------------------------------------------------ */

typedef struct forest {
    uint64_t *ids; /* this rank's forest edges (ids), for validation */
    size_t n, cap;
    double weight;  /* their weights, summed */
    uint64_t rounds;
    double t_choose, t_double, t_relabel;
} forest;

static int by_pair(const void *x, const void *y)
{
    const edge *p = x, *q = y;
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

static int same_pair(const edge *p, const edge *q)
{
    uint64_t pa = p->a < p->b ? p->a : p->b, pb = p->a < p->b ? p->b : p->a;
    uint64_t qa = q->a < q->b ? q->a : q->b, qb = q->a < q->b ? q->b : q->a;
    return pa == qa && pb == qb;
}

/* Drop self-loops; of the parallel edges this rank holds, keep the lightest. */
static size_t contract(edge *e, size_t m)
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

static void add_to_forest(forest *f, uint64_t id, uint64_t wbits)
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
 * reads them (a lock-step read happens inside the collective step, after them). */
static void writes_done(const arrays *s)
{
    if (s->async)
        MPI_Barrier(MPI_COMM_WORLD);
}

/* Every component's lightest edge, and each component points across it; the two
 * ends of an edge chosen from both sides: the smaller becomes the root. Adds the
 * chosen edges to the forest. */
static void choose(arrays *s, const edge *e, size_t m, uint64_t *q, forest *f)
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
static void double_pointers(arrays *s, uint64_t *q)
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
        if (sum_u64(changed) == 0)
            return;
    }
}

/* The edges' ends and the vertices' labels, renamed to their new components. */
static void relabel(arrays *s, edge *e, size_t m, uint64_t *label, uint64_t nlocal,
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

static void boruvka(const app *a, arrays *s, edge *e, size_t m, uint64_t *label, forest *f)
{
    uint64_t count;
    cr_darray_local(s->parent, NULL, &count);
    uint64_t *q = app_calloc(a, count ? count : 1, 8, "the pointers");
    uint64_t *ends = NULL;
    for (;;) {
        m = contract(e, m);
        if (sum_u64(m) == 0)
            break;
        f->rounds++;
        double t0 = MPI_Wtime();
        choose(s, e, m, q, f);
        double t1 = MPI_Wtime();
        double_pointers(s, q);
        double t2 = MPI_Wtime();
        free(ends);
        ends = app_calloc(a, 2 * m + count + 1, 8, "the relabelled ends");
        relabel(s, e, m, label, count, ends);
        double t3 = MPI_Wtime();
        f->t_choose += t1 - t0, f->t_double += t2 - t1, f->t_relabel += t3 - t2;
    }
    free(ends);
    free(q);
}

/* ---- validation: Kruskal on rank 0 ---------------------------------------------- */

static int by_key(const void *x, const void *y)
{
    const edge *p = x, *q = y;
    if (p->w != q->w)
        return p->w < q->w ? -1 : 1;
    return (p->id > q->id) - (p->id < q->id);
}

static int by_u64(const void *x, const void *y)
{
    uint64_t p = *(const uint64_t *)x, q = *(const uint64_t *)y;
    return (p > q) - (p < q);
}

/* Gather `count` items of `size` bytes from every rank to rank 0 (NULL elsewhere). */
static void *gather(const app *a, const void *mine, size_t count, size_t size, size_t *total)
{
    int c = (int)(count * size), *counts = NULL, *displs = NULL;
    if (a->rank == 0) {
        counts = app_calloc(a, (size_t)a->size, sizeof(int), "the gather counts");
        displs = app_calloc(a, (size_t)a->size, sizeof(int), "the gather counts");
    }
    MPI_Gather(&c, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    char *all = NULL;
    size_t bytes = 0;
    if (a->rank == 0) {
        for (int r = 0; r < a->size; r++)
            displs[r] = (int)bytes, bytes += (size_t)counts[r];
        all = app_calloc(a, bytes ? bytes : 1, 1, "the gathered graph");
    }
    MPI_Gatherv(mine, c, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
    free(counts), free(displs);
    *total = bytes / size;
    return all;
}

/* The same forest (edge ids) and the same components (as a partition) as Kruskal
 * on the gathered edges. Returns 1 on every rank if so. */
static int validate(const app *a, const edge *orig, size_t m, const forest *f,
                    const uint64_t *label, uint64_t nlocal, uint64_t n)
{
    size_t me, nf, nl;
    edge *all = gather(a, orig, m, sizeof *orig, &me);
    uint64_t *ids = gather(a, f->ids, f->n, 8, &nf);
    uint64_t *labels = gather(a, label, nlocal, 8, &nl);
    int ok = 1;
    if (a->rank == 0) {
        qsort(all, me, sizeof *all, by_key);
        uint64_t *uf = app_calloc(a, n, 8, "the union-find"), *kr = NULL;
        size_t nk = 0;
        kr = app_calloc(a, n ? n : 1, 8, "Kruskal's forest");
        for (uint64_t v = 0; v < n; v++)
            uf[v] = v;
        for (size_t j = 0; j < me; j++) {
            uint64_t x = app_uf_find(uf, all[j].a), y = app_uf_find(uf, all[j].b);
            if (x == y)
                continue;
            uf[x] = y;
            kr[nk++] = all[j].id;
        }
        qsort(kr, nk, 8, by_u64);
        qsort(ids, nf, 8, by_u64);
        ok = nk == nf && (nf == 0 || !memcmp(kr, ids, nf * 8));
        if (!ok)
            fprintf(stderr, "boruvka: VALIDATION FAILED: the forest has %zu edges, Kruskal's "
                    "%zu%s\n", nf, nk, nk == nf ? " (different edges)" : "");
        /* components: label[v] == label[w] exactly when Kruskal joins v and w */
        uint64_t *first_of = app_calloc(a, n, 8, "the partition check");
        for (uint64_t v = 0; v < n && ok; v++) {
            uint64_t r = app_uf_find(uf, v);
            if (!first_of[r])
                first_of[r] = v + 1;
            else if (labels[first_of[r] - 1] != labels[v])
                ok = 0;
        }
        memset(first_of, 0, n * 8); /* and no label spans two of Kruskal's components */
        for (uint64_t v = 0; v < n && ok; v++) {
            uint64_t l = labels[v] < n ? labels[v] : 0, r = app_uf_find(uf, v) + 1;
            if (!first_of[l])
                first_of[l] = r;
            else if (first_of[l] != r)
                ok = 0;
        }
        if (!ok && nk == nf)
            fprintf(stderr, "boruvka: VALIDATION FAILED: the components differ from Kruskal's\n");
        free(first_of), free(uf), free(kr);
    }
    free(all), free(ids), free(labels);
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return ok;
}

/* ---- main ------------------------------------------------------------------------- */

static void parse(app *a, int argc, char **argv, opts *o)
{
    static const char *const modes[] = {"lockstep", "async", NULL};
    static const char *const aggs[] = {"none", "hash", "sort", NULL};
    static const char *const validations[] = {"no", "yes", "auto", NULL};
    cr_gen_params_init(&o->gen);
    o->gen.weights = true;
    o->aggregation = CR_DARRAY_AGG_HASH;
    o->validate = 2;
    o->route = "direct";
    static const struct option lopts[] = {
        {"scale", required_argument, 0, 's'},     {"edgefactor", required_argument, 0, 'e'},
        {"generator", required_argument, 0, 'g'}, {"graph", required_argument, 0, 'G'},
        {"weights", required_argument, 0, 'W'},   {"mode", required_argument, 0, 'm'},
        {"route", required_argument, 0, 'R'},     {"node-size", required_argument, 0, 'N'},
        {"aggregation", required_argument, 0, 'A'}, {"validate", required_argument, 0, 'V'},
        {"seed", required_argument, 0, 'S'},      {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
        switch (ch) {
        case 'W': o->weights = optarg; break;
        case 'm': o->async = app_parse_choice(a, "--mode", optarg, modes); break;
        case 'R': o->route = optarg; break;
        case 'N': o->node_size = (unsigned)app_parse_u64(a, "--node-size", optarg, 1, 65536); break;
        case 'A': o->aggregation = app_parse_choice(a, "--aggregation", optarg, aggs); break;
        case 'V': o->validate = app_parse_choice(a, "--validate", optarg, validations); break;
        case 'h': app_help(a);
        default:
            if (!app_graph_option(a, ch, optarg, &o->gen, &o->graph))
                app_bad_option(a, argv);
        }
    }
    if (optind < argc)
        app_usage_error(a, "unexpected argument '%s'", argv[optind]);
    app_graph_check(a, &o->gen);
    if (!o->async)
        app_lockstep_route(a, o->route, "lock-step");
    else
        app_parse_route(a, o->route, &(cr_config){0});
}

/* This rank's weighted edges, numbered: ids are unique over the graph. */
static edge *load_edges(const app *a, const opts *o, size_t *m, uint64_t *n)
{
    cr_edge_list list = {0};
    char err[512];
    int rc = o->graph ? cr_read_edges(o->graph, CR_FILE_AUTO, o->weights, a->rank, a->size,
                                      &list, err, sizeof err)
                      : cr_generate(&o->gen, a->rank, a->size, &list, err, sizeof err);
    app_agree(a, rc ? err : NULL);
    app_agree(a, list.count && !list.weights ? "the graph has no weights (give --weights, or "
                                               "'u v w' lines)"
                                             : NULL);
    uint64_t mine = list.count, before = 0, nv = list.nvertices;
    MPI_Exscan(&mine, &before, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (a->rank == 0)
        before = 0;
    MPI_Allreduce(&nv, n, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    edge *e = app_calloc(a, list.count ? list.count : 1, sizeof *e, "the edges");
    for (size_t j = 0; j < list.count; j++) {
        float w = list.weights[j] < 0 ? 0 : list.weights[j];
        uint32_t bits;
        memcpy(&bits, &w, sizeof bits);
        e[j] = (edge){list.edges[j].u, list.edges[j].v, bits, before + j};
    }
    *m = list.count;
    cr_edge_list_free(&list);
    return e;
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "boruvka", usage, &argc, &argv);
    opts o = {0};
    parse(&a, argc, argv, &o);

    size_t m;
    uint64_t n;
    edge *orig = load_edges(&a, &o, &m, &n);
    edge *e = app_calloc(&a, m ? m : 1, sizeof *e, "the edges");
    memcpy(e, orig, m * sizeof *e);
    uint64_t total_edges = sum_u64(m);

    cr_config cfg;
    cr_config_init(&cfg);
    if (o.async) {
        app_parse_route(&a, o.route, &cfg);
        cfg.node_size = o.node_size;
    }
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, &cfg);
    cr_darray_opts d;
    cr_darray_opts_init(&d);
    if (!o.async)
        cr_route_parse(o.route, &d.route, NULL, 0);
    d.aggregation = (cr_darray_aggregation)o.aggregation;
    cr_darray_opts bd = d;
    bd.merge = CR_DARRAY_USER;
    bd.combine = keep_lighter;
    arrays s = {.comm = comm, .async = o.async};
    s.best = cr_darray_create(comm, n, sizeof(choice), &bd);
    s.parent = cr_darray_create(comm, n, 8, &d);
    uint64_t first, count;
    cr_darray_local(s.parent, &first, &count);
    uint64_t *label = app_calloc(&a, count ? count : 1, 8, "the labels");
    for (uint64_t i = 0; i < count; i++)
        label[i] = first + i;

    forest f = {0};
    cr_stats_reset(comm);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    boruvka(&a, &s, e, m, label, &f);
    double seconds = app_max_time(MPI_Wtime() - t0);

    cr_darray_stats b1, b2;
    cr_darray_stats_get(s.best, &b1);
    cr_darray_stats_get(s.parent, &b2);
    cr_stats cs;
    cr_stats_get(comm, &cs);
    double in[4] = {(double)(o.async ? cs.mpi_sends : b1.messages + b2.messages),
                    (double)(b1.reached_owner + b2.reached_owner),
                    o.async ? (double)(cs.merged_at_source + cs.merged_at_hops +
                                       cs.requests_merged_at_source +
                                       cs.requests_merged_at_hops + cs.requests_coalesced)
                            : (double)(b1.merged_local + b1.merged_hops + b2.merged_local +
                                       b2.merged_hops),
                    (double)f.n},
           mx[4], sum[4];
    MPI_Allreduce(in, mx, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(in, sum, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double weight = 0, phases[3] = {f.t_choose, f.t_double, f.t_relabel}, pmax[3];
    MPI_Reduce(&f.weight, &weight, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(phases, pmax, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    uint64_t forest_edges = (uint64_t)sum[3];

    int validated = o.validate == 1 || (o.validate == 2 && total_edges <= (1u << 22));
    int ok = validated ? validate(&a, orig, m, &f, label, count, n) : 1;
    app_components_check inv = {.ok = 1};
    if (o.validate)
        inv = app_check_components(&a, comm, n, first, label, count, orig, m, sizeof *orig, 0,
                                   forest_edges);
    if (a.rank == 0) {
        printf("boruvka: %d ranks, %llu vertices, %llu edges, %s, %s\n", a.size,
               (unsigned long long)n, (unsigned long long)total_edges,
               o.async ? "async" : "lock-step", o.route);
        printf("  forest weight %.6f, %llu edges, %llu trees, %llu rounds\n", weight,
               (unsigned long long)forest_edges, (unsigned long long)(n - forest_edges),
               (unsigned long long)f.rounds);
        printf("  time %.4f s: lightest edges %.4f, pointer doubling %.4f, relabel and "
               "contract %.4f (slowest rank)\n",
               seconds, pmax[0], pmax[1], pmax[2]);
        printf("  messages per rank max %.0f mean %.1f; requests merged %.0f; requests "
               "reaching owners %.0f (most on one rank %.0f)\n",
               mx[0], sum[0] / a.size, sum[2], sum[1], mx[1]);
        if (o.validate)
            printf("  invariants %s: every edge within one tree, every label a root, forest "
                   "edges = vertices - trees\n", inv.ok ? "hold" : "FAILED");
        printf("  %s\n", !validated ? "not checked against Kruskal (--validate no, or larger "
                                       "than --validate auto gathers)"
                         : ok       ? "validated against Kruskal: the same forest and components"
                                    : "VALIDATION FAILED");
    }
    cr_darray_destroy(s.best);
    cr_darray_destroy(s.parent);
    cr_comm_destroy(comm);
    free(orig), free(e), free(label), free(f.ids);
    if (!ok || !inv.ok) {
        MPI_Finalize();
        return 1;
    }
    MPI_Finalize();
    return 0;
}
