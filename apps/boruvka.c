/* boruvka: the minimum spanning forest of a weighted graph (cr_graph_msf,
 * include/courier/graph.h), validated against a sequential Kruskal. A front-end:
 * the algorithms are the library's (src/graph/msf.c, msf_rounds.c; docs/graph.md).
 *
 *   --mode filter    (default) each rank's edges filtered to their own forest, the
 *                    forests merged up a tree; Boruvka's rounds finish if the merged
 *                    forests would pass --gather-limit
 *   --mode async     Boruvka's rounds on every edge, on the mailbox
 *   --mode lockstep  Boruvka's rounds in lock-step darray steps, with --route and
 *                    --aggregation: the darray thesis's benchmark (section 5.4) */
#include "cli.h"
#include "components.h"
#include <courier/rng.h>

#include <courier.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: mpirun -np P boruvka [options]\n"
    "\n"
    "Minimum spanning forest of a weighted graph; prints the forest's weight, its\n"
    "trees, the time of each phase and the messages, and checks the forest against\n"
    "a sequential Kruskal when the graph fits on one rank.\n"
    "\n"
    "  --scale S         2^S vertices (default 16)\n"
    "  --edgefactor E    edges per vertex (default 16)\n"
    "  --generator G     rmat, gnm or rgg (default rmat); weights uniform in [0, 1)\n"
    "  --graph FILE      read weighted edges instead: text 'u v w' per line, or a\n"
    "                    Graph500 dump (FILE.g500) with --weights\n"
    "  --weights FILE    the Graph500 dump's weights (float32 per edge)\n"
    "  --write-graph F   write the graph's edges to F, 'u v w' per line (readable\n"
    "                    with --graph; the weights exactly, as %.9g)\n"
    "  --mode M          filter (default): each rank keeps the forest of its own\n"
    "                    edges, pairs of ranks merge their forests up a tree;\n"
    "                    async: Boruvka's rounds on every edge, on the mailbox;\n"
    "                    lockstep: Boruvka's rounds in lock-step darray steps\n"
    "  --gather-limit N  filter: the most forest edges one rank may hold while the\n"
    "                    forests merge (default 16777216); beyond it, Boruvka's\n"
    "                    rounds finish; 0: no merging\n"
    "  --route R         lockstep: direct (default), grid, grid:AxB..., hypercube;\n"
    "                    filter and async: the comm's route, any of COURIER_ROUTE's\n"
    "  --node-size K     filter and async: virtual nodes of K ranks\n"
    "  --aggregation A   lock-step: none, hash (default) or sort\n"
    "  --seed S          graph seed (default 1)\n"
    "\n"
    "--validate: auto (the default) checks the invariants distributedly (every edge\n"
    "within one tree, forest edges = vertices - trees) and, when the graph has at most\n"
    "2^22 edges, against Kruskal on rank 0; yes: always against Kruskal too; no:\n"
    "neither.\n";

enum { MODE_FILTER, MODE_ASYNC, MODE_LOCKSTEP };

/* An input edge, as the check against Kruskal orders them. */
typedef struct wedge {
    uint64_t a, b; /* the two ends first (app_check_components reads them) */
    uint32_t key;  /* the weight's bits, ordered as the weight */
    uint64_t id;   /* its position in the ranks' lists, one after the other */
} wedge;

typedef struct opts {
    cr_gen_params gen;
    const char *graph, *weights, *route, *write_graph;
    int route_given; /* --route was given: it overrides COURIER_ROUTE */
    int mode; /* MODE_* */
    uint64_t gather_limit;
    int aggregation;
    unsigned node_size;
    int validate; /* APP_VALIDATE_*: no, yes, auto */
    bool stats;   /* --stats */
    const char *csv;
} opts;

static uint64_t sum_u64(uint64_t x)
{
    uint64_t y;
    MPI_Allreduce(&x, &y, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return y;
}

/* ---- validation: Kruskal on rank 0 ---------------------------------------------- */

static int by_key(const void *x, const void *y)
{
    const wedge *p = x, *q = y;
    if (p->key != q->key)
        return p->key < q->key ? -1 : 1;
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
static int validate(const app *a, const wedge *orig, size_t m, const cr_msf_result *f,
                    const uint64_t *label, uint64_t nlocal, uint64_t n)
{
    size_t me, nf, nl;
    wedge *all = gather(a, orig, m, sizeof *orig, &me);
    uint64_t *ids = gather(a, f->forest, f->nforest, 8, &nf);
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
            if (x == y) /* self-loops too */
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
    static const char *const modes[] = {"filter", "async", "lockstep", NULL};
    static const char *const aggs[] = {"none", "hash", "sort", NULL};
    app_shared sh;
    app_shared_init(&sh);
    o->aggregation = CR_DARRAY_AGG_HASH;
    o->validate = 2;
    o->route = "direct";
    o->gather_limit = UINT64_C(1) << 24;
    static const struct option lopts[] = {
        APP_LONG_SCALE, APP_LONG_EDGEFACTOR, APP_LONG_GENERATOR, APP_LONG_GRAPH, APP_LONG_SEED,
        APP_LONG_ROUTE, APP_LONG_NODE_SIZE,
        {"weights", required_argument, 0, 'W'},   {"mode", required_argument, 0, 'm'},
        {"aggregation", required_argument, 0, 'A'},
        {"gather-limit", required_argument, 0, 'L'}, {"write-graph", required_argument, 0, 'w'},
        APP_LONG_COMMON, {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
        switch (ch) {
        case 'W': o->weights = optarg; break;
        case 'w': o->write_graph = optarg; break;
        case 'm': o->mode = app_parse_choice(a, "--mode", optarg, modes); break;
        case 'L': o->gather_limit = app_parse_u64(a, "--gather-limit", optarg, 0, UINT64_MAX); break;
        case 'A': o->aggregation = app_parse_choice(a, "--aggregation", optarg, aggs); break;
        default: app_other_option(a, ch, optarg, &sh, argv);
        }
    }
    app_no_operands(a, argc, argv);
    sh.gen.weights = true;
    app_shared_graph_check(a, &sh);
    o->gen = sh.gen;
    o->graph = sh.graph;
    o->node_size = (unsigned)sh.node_size;
    if (sh.route)
        o->route = sh.route, o->route_given = 1;
    o->stats = sh.stats;
    o->csv = sh.csv;
    o->validate = app_validate_or(&sh, APP_VALIDATE_AUTO);
    if (o->mode == MODE_LOCKSTEP)
        app_lockstep_route(a, o->route, "lock-step");
    else
        app_parse_route(a, o->route, &(cr_config){0});
}

/* This rank's weighted edges, and the id of its first one (the library numbers the
 * edges by their position in the ranks' lists, one after the other). */
static cr_edge_list load_edges(const app *a, const opts *o, uint64_t *n, uint64_t *first_id)
{
    cr_edge_list list = {0};
    FILE *write_to = app_open_graph_file(a, o->write_graph);
    char err[512];
    app_progress(a, o->graph ? "reading the graph" : "generating the graph");
    int rc = o->graph ? cr_graph_read_edges(o->graph, CR_FILE_AUTO, o->weights, a->rank, a->size,
                                            &list, err, sizeof err)
                      : cr_graph_generate(&o->gen, a->rank, a->size, &list, err, sizeof err);
    app_agree(a, rc ? err : NULL);
    app_agree(a, list.count && !list.weights ? "the graph has no weights (give --weights, or "
                                               "'u v w' lines)"
                                             : NULL);
    uint64_t mine = list.count, before = 0, nv = list.nvertices, all;
    MPI_Exscan(&mine, &before, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (a->rank == 0)
        before = 0;
    if (o->graph) { /* ids used as they are: refuse what cannot fit before allocating */
        MPI_Allreduce(&mine, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        /* per owned vertex: component labels, the lightest edges, the darray's arrays */
        nv = app_file_vertices(a, o->graph, nv, all, 0, 96, 0);
    }
    MPI_Allreduce(&nv, n, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    list.nvertices = *n; /* a file's vertices beyond its largest id (app_file_vertices) */
    app_write_graph(a, write_to, o->write_graph, &list);
    *first_id = before;
    return list;
}

/* The edges as the check against Kruskal orders them: made after the forest, so the
 * peak memory the app reports is the library's. */
static wedge *numbered(const app *a, const cr_edge_list *list, uint64_t first_id)
{
    wedge *e = app_calloc(a, list->count ? list->count : 1, sizeof *e, "the edges");
    for (size_t j = 0; j < list->count; j++) {
        uint32_t bits;
        memcpy(&bits, &list->weights[j], sizeof bits);
        bits = (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
        e[j] = (wedge){list->edges[j].u, list->edges[j].v, bits, first_id + j};
    }
    return e;
}

static const char *const mode_names[] = {"filter", "async", "lock-step"};

/* What main measured, for the report. */
typedef struct msf_summary {
    uint64_t n, total_edges;
    double seconds, peak, peak_job;
    int validated, ok, invariants;
} msf_summary;

/* Rank 0's lines and CSV line: the forest, the phases' times (pmax, slowest rank's),
 * the messages (mx: maxima, sum: sums over ranks of messages, reached owners, merged). */
static void report(const app *a, const opts *o, const cr_msf_result *f, const msf_summary *s,
                   const double *pmax, const double *mx, const double *sum, FILE *csv)
{
    printf("boruvka: %d ranks, %llu vertices, %llu edges, %s, %s\n", a->size,
           (unsigned long long)s->n, (unsigned long long)s->total_edges, mode_names[o->mode],
           o->route);
    printf("  forest weight %.6f, %llu edges, %llu trees, %llu rounds\n", f->weight,
           (unsigned long long)f->forest_edges, (unsigned long long)(s->n - f->forest_edges),
           (unsigned long long)f->rounds);
    if (o->mode == MODE_FILTER)
        printf("  time %.4f s: local filter %.4f (%llu edges left), merging %.4f (%llu "
               "levels), Boruvka's rounds %.4f, labels %.4f (slowest rank)\n",
               s->seconds, pmax[0], (unsigned long long)f->filtered, pmax[1],
               (unsigned long long)f->merge_levels, pmax[2], pmax[3]);
    else
        printf("  time %.4f s: lightest edges %.4f, pointer doubling %.4f, relabel and "
               "contract %.4f (slowest rank)\n",
               s->seconds, pmax[4], pmax[5], pmax[6]);
    printf("  messages per rank max %.0f mean %.1f; requests merged %.0f; requests "
           "reaching owners %.0f (most on one rank %.0f)\n",
           mx[0], sum[0] / a->size, sum[2], sum[1], mx[1]);
    printf("  peak memory per rank %.1f MiB, of the job %.1f MiB (every rank's summed; graph, "
           "edges and forest; before the checks)\n", s->peak, s->peak_job);
    if (o->validate)
        printf("  invariants %s: every edge within one tree, every label a root, forest "
               "edges = vertices - trees\n", s->invariants ? "hold" : "FAILED");
    printf("  %s\n", !s->validated ? "not checked against Kruskal (--validate=no, or larger "
                                     "than --validate=auto gathers)"
                     : s->ok      ? "validated against Kruskal: the same forest and components"
                                  : "VALIDATION FAILED");
    if (csv) {
        fprintf(csv, "%d,%llu,%llu,%s,%s,%.6f,%llu,%llu,%.6f,%.0f,%.1f,%d\n", a->size,
                (unsigned long long)s->n, (unsigned long long)s->total_edges,
                mode_names[o->mode], o->route, f->weight, (unsigned long long)f->forest_edges,
                (unsigned long long)f->rounds, s->seconds, mx[0], s->peak,
                s->ok && s->invariants);
        fclose(csv);
    }
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "boruvka", usage, &argc, &argv);
    opts o = {0};
    parse(&a, argc, argv, &o);

    uint64_t n, first_id;
    cr_edge_list list = load_edges(&a, &o, &n, &first_id);
    size_t m = list.count;
    uint64_t total_edges = sum_u64(m);

    /* lock-step: --route is the darray's, and the comm keeps COURIER_ROUTE */
    bool lockstep = o.mode == MODE_LOCKSTEP;
    app_comm_flags flags = {.route = !lockstep && o.route_given ? o.route : NULL,
                            .node_size = lockstep ? 0 : o.node_size, .stats = o.stats};
    FILE *csv = app_open_csv(&a, o.csv, "ranks,vertices,edges,mode,route,weight,forest_edges,"
                                        "rounds,seconds,msgs_max,peak_mib,ok");
    cr_comm *comm = app_comm_create(&a, &flags, NULL);
    cr_msf_opts mo;
    cr_graph_msf_opts_init(&mo);
    mo.algorithm = o.mode == MODE_FILTER ? CR_MSF_FILTER
                   : o.mode == MODE_ASYNC ? CR_MSF_BORUVKA : CR_MSF_LOCKSTEP;
    mo.gather_limit = o.gather_limit;
    if (o.mode == MODE_LOCKSTEP)
        cr_route_parse(o.route, &mo.route, NULL, 0);
    mo.aggregation = (cr_darray_aggregation)o.aggregation;

    cr_msf_result f;
    char err[256];
    cr_stats_reset(comm);
    app_progress(&a, "loaded; the forest");
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int rc = cr_graph_msf(comm, &list, NULL, &mo, &f, err, sizeof err);
    double seconds = app_max_time(MPI_Wtime() - t0);
    app_agree(&a, rc ? err : NULL);
    app_progress(&a, "done in %.4f s; validating", seconds);

    cr_stats cs;
    cr_stats_get(comm, &cs);
    cr_dedup_stats rs;
    cr_dedup_stats_get(comm, &rs);
    double in[4] = {(double)(o.mode != MODE_LOCKSTEP ? cs.mpi_sends
                                                     : f.best.messages + f.parent.messages),
                    (double)(f.best.reached_owner + f.parent.reached_owner),
                    o.mode != MODE_LOCKSTEP
                        ? (double)(cs.merged_at_source + cs.merged_at_hops +
                                   rs.requests_merged_at_source + rs.requests_merged_at_hops +
                                   rs.requests_coalesced)
                        : (double)(f.best.merged_local + f.best.merged_hops +
                                   f.parent.merged_local + f.parent.merged_hops),
                    0},
           mx[4], sum[4];
    MPI_Allreduce(in, mx, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(in, sum, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double phases[7] = {f.t_filter, f.t_merge, f.t_rounds, f.t_label,
                        f.t_choose, f.t_double, f.t_relabel}, pmax[7];
    MPI_Reduce(phases, pmax, 7, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    double peak = app_peak_mib(); /* before the checks, which gather on rank 0 */
    double peak_job = app_peak_job_mib();
    int validated = o.validate == 1 || (o.validate == 2 && total_edges <= (1u << 22));
    wedge *orig = validated ? numbered(&a, &list, first_id) : NULL;
    int ok = validated ? validate(&a, orig, m, &f, f.label, f.count, n) : 1;
    free(orig);
    app_components_check inv = {.ok = 1};
    if (o.validate) /* the ends of each edge: cr_edge's two ids */
        inv = app_check_components(&a, comm, n, f.first, f.label, f.count, list.edges, m,
                                   sizeof *list.edges, 0, f.forest_edges);
    if (a.rank == 0)
        report(&a, &o, &f, &(msf_summary){.n = n, .total_edges = total_edges, .seconds = seconds,
                                          .peak = peak, .peak_job = peak_job,
                                          .validated = validated, .ok = ok, .invariants = inv.ok},
               pmax, mx, sum, csv);
    cr_graph_msf_result_free(&f);
    app_comm_destroy(comm);
    cr_graph_edges_free(&list);
    MPI_Finalize();
    return !ok || !inv.ok;
}
