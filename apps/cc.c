/* cc: connected components of a graph (cr_graph_cc_with, include/courier/graph.h),
 * validated against a sequential union-find. A front-end: the algorithms are the
 * library's (src/graph/cc.c, cc_forms.c; docs/graph.md):
 *  - local (default): union-find over each rank's own edges with Afforest's
 *    sampling, then only the cut edges' components travel;
 *  - label: asynchronous label propagation, offers merged by a min combining handler;
 *  - sv: pointer jumping in lock-step darray steps, after FastSV;
 *  - disjoint-set: every edge a union in a distributed disjoint set
 *    (cr_disjoint_set, include/courier/container.h), then compress and one find
 *    per vertex: the container's own algorithm, for comparison.
 * All end with every vertex labelled by the smallest id of its component. */
#include "cli.h"
#include "components.h"
#include <courier/rng.h>

#include <courier.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: mpirun -np P cc [options]\n"
    "\n"
    "Connected components: every vertex gets the smallest id of its component.\n"
    "Prints the number of components, the size of the largest, the rounds and the\n"
    "time; checks the labels against a sequential union-find when the graph fits\n"
    "on one rank.\n"
    "\n"
    "  --algorithm A     local (default: union-find over each rank's own edges with\n"
    "                    Afforest's sampling, then only cut edges travel; cr_graph_cc),\n"
    "                    label (asynchronous label propagation), sv (lock-step\n"
    "                    pointer jumping on the distributed array) or disjoint-set\n"
    "                    (every edge a union in cr_disjoint_set, then compress)\n"
    "  --scale S         2^S vertices (default 16)\n"
    "  --edgefactor E    edges per vertex (default 16)\n"
    "  --generator G     rmat, gnm or rgg (default rmat)\n"
    "  --graph FILE      read the edges instead (text 'u v' per line, Courier binary,\n"
    "                    or a Graph500 dump FILE.g500)\n"
    "  --route R         sv: the lock-step route, direct (default), grid, hypercube;\n"
    "                    local, label: the comm's route, any of COURIER_ROUTE's\n"
    "  --node-size K     local, label: virtual nodes of K ranks\n"
    "  --aggregation A   sv: none, hash (default) or sort\n"
    "  --seed S          graph seed (default 1)\n"
    "  --write-graph F   write the graph's edges to F, 'u v' per line (GAP's .el)\n"
    "  --trials T        run the components T times on the same graph (default 1);\n"
    "                    the time printed is the mean of every trial, the first\n"
    "                    included, as GAP reports it, with each trial's time\n"
    "\n"
    "--validate: auto (the default) checks the invariants distributedly (every edge\n"
    "within one component, every label a root and at most its vertex's id) and, up to\n"
    "2^22 edges, against a union-find on rank 0; yes: always against the union-find\n"
    "too; no: neither.\n";

enum { ALG_SV, ALG_LABEL, ALG_LOCAL, ALG_DSET };
static const char *const algos[] = {"sv", "label", "local", "disjoint-set", NULL};

typedef struct ccopts {
    cr_gen_params gen;
    const char *graph, *route, *write_graph, *csv;
    int route_given; /* --route was given: it overrides COURIER_ROUTE */
    int algorithm;  /* ALG_LOCAL (cr_graph_cc), ALG_LABEL or ALG_SV */
    int stats;      /* --stats: the runtime's counters at the end */
    int aggregation;
    unsigned node_size;
    int validate;
    int trials;     /* --trials: runs of the components on the same graph */
} ccopts;

/* ---- validation and sizes ------------------------------------------------------------- */

/* Every label is the smallest id of its vertex's component (union-find on rank 0). */
static int validate(const app *a, const cr_edge_list *edges, const uint64_t *label,
                    uint64_t nl, uint64_t n)
{
    int c = (int)(edges->count * sizeof(cr_edge)), cl = (int)(nl * 8);
    int *cnt = calloc((size_t)a->size, sizeof(int)), *dsp = calloc((size_t)a->size, sizeof(int));
    int *lcnt = calloc((size_t)a->size, sizeof(int)), *ldsp = calloc((size_t)a->size, sizeof(int));
    MPI_Gather(&c, 1, MPI_INT, cnt, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gather(&cl, 1, MPI_INT, lcnt, 1, MPI_INT, 0, MPI_COMM_WORLD);
    size_t eb = 0, lb = 0;
    for (int r = 0; a->rank == 0 && r < a->size; r++)
        dsp[r] = (int)eb, eb += (size_t)cnt[r], ldsp[r] = (int)lb, lb += (size_t)lcnt[r];
    cr_edge *all = a->rank == 0 ? app_calloc(a, eb ? eb : 1, 1, "the gathered edges") : NULL;
    uint64_t *labels = a->rank == 0 ? app_calloc(a, lb ? lb : 1, 1, "the gathered labels") : NULL;
    MPI_Gatherv(edges->edges, c, MPI_BYTE, all, cnt, dsp, MPI_BYTE, 0, MPI_COMM_WORLD);
    MPI_Gatherv(label, cl, MPI_BYTE, labels, lcnt, ldsp, MPI_BYTE, 0, MPI_COMM_WORLD);
    int ok = 1;
    if (a->rank == 0) {
        uint64_t *uf = app_calloc(a, n ? n : 1, 8, "the union-find");
        for (uint64_t v = 0; v < n; v++)
            uf[v] = v;
        for (size_t j = 0; j < eb / sizeof(cr_edge); j++) {
            uint64_t x = app_uf_find(uf, all[j].u), y = app_uf_find(uf, all[j].v);
            if (x != y) /* the smaller id stays the root: it is the component's minimum */
                x < y ? (uf[y] = x) : (uf[x] = y);
        }
        for (uint64_t v = 0; v < n && ok; v++)
            if (labels[v] != app_uf_find(uf, v)) {
                fprintf(stderr, "cc: VALIDATION FAILED: vertex %llu has label %llu, the smallest "
                        "id of its component is %llu\n", (unsigned long long)v,
                        (unsigned long long)labels[v], (unsigned long long)app_uf_find(uf, v));
                ok = 0;
            }
        free(uf);
    }
    free(all), free(labels), free(cnt), free(dsp), free(lcnt), free(ldsp);
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return ok;
}

/* Components (roots: label == own id) and the largest one's size, counted on the
 * label's owner with an adding array. */
static void sizes(cr_comm *comm, uint64_t n, uint64_t first, const uint64_t *label, uint64_t nl,
                  uint64_t *components, uint64_t *largest)
{
    cr_darray_opts o;
    cr_darray_opts_init(&o);
    o.merge = CR_OP_SUM;
    o.type = CR_UINT64;
    cr_darray *count = cr_darray_create(comm, n, 8, &o);
    uint64_t one = 1, cnt, *c = cr_darray_local(count, NULL, &cnt), mine[2] = {0, 0}, all[2];
    for (uint64_t i = 0; i < nl; i++)
        cr_darray_write(count, label[i], &one);
    cr_darray_step(count);
    for (uint64_t i = 0; i < nl; i++)
        mine[0] += label[i] == first + i;
    for (uint64_t i = 0; i < cnt; i++)
        mine[1] = c[i] > mine[1] ? c[i] : mine[1];
    MPI_Allreduce(&mine[0], &all[0], 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&mine[1], &all[1], 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    *components = all[0], *largest = all[1];
    cr_darray_destroy(count);
}

/* ---- main ----------------------------------------------------------------------------- */

static void parse(app *a, int argc, char **argv, ccopts *o)
{
    static const char *const aggs[] = {"none", "hash", "sort", NULL};
    o->algorithm = ALG_LOCAL;
    o->aggregation = CR_DARRAY_AGG_HASH;
    o->validate = 2;
    o->route = "direct";
    o->trials = 1;
    static const struct option lopts[] = {
        APP_LONG_SCALE, APP_LONG_EDGEFACTOR, APP_LONG_GENERATOR, APP_LONG_GRAPH, APP_LONG_SEED,
        APP_LONG_ROUTE, APP_LONG_NODE_SIZE,
        {"algorithm", required_argument, 0, 'a'}, {"aggregation", required_argument, 0, 'A'},
        {"write-graph", required_argument, 0, 'W'}, {"trials", required_argument, 0, 'T'},
        APP_LONG_COMMON, {0, 0, 0, 0}};
    app_shared sh;
    app_shared_init(&sh);
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
        switch (ch) {
        case 'a': o->algorithm = app_parse_choice(a, "--algorithm", optarg, algos); break;
        case 'W': o->write_graph = optarg; break;
        case 'A': o->aggregation = app_parse_choice(a, "--aggregation", optarg, aggs); break;
        case 'T': o->trials = (int)app_parse_u64(a, "--trials", optarg, 1, 1000); break;
        default: app_other_option(a, ch, optarg, &sh, argv);
        }
    }
    app_no_operands(a, argc, argv);
    app_shared_graph_check(a, &sh);
    o->gen = sh.gen;
    o->graph = sh.graph;
    o->stats = sh.stats;
    o->validate = app_validate_or(&sh, APP_VALIDATE_AUTO);
    o->csv = sh.csv;
    o->node_size = (unsigned)sh.node_size;
    if (sh.route)
        o->route = sh.route, o->route_given = 1;
    if (o->algorithm == ALG_SV)
        app_lockstep_route(a, o->route, "sv's lock-step");
    else
        app_parse_route(a, o->route, &(cr_config){0});
}

static const char *const algorithm_names[] = {"sv", "label propagation",
                                              "local union-find, then cut edges",
                                              "distributed disjoint set"};

static void take_root(cr_disjoint_set *ds, uint64_t item, uint64_t root, void *ctx)
{
    (void)ds, (void)item;
    *(uint64_t *)ctx = root;
}

/* --algorithm disjoint-set: a union per edge, compress, then each rank asks for its
 * vertices' representatives (the smallest id of each set: cr_disjoint_set keeps
 * parents below their items). */
static void cc_disjoint_set(cr_comm *comm, const cr_edge_list *edges, uint64_t first,
                            uint64_t nl, uint64_t *label)
{
    cr_disjoint_set *ds = cr_disjoint_set_create(comm, NULL, NULL);
    for (uint64_t i = 0; i < edges->count; i++)
        cr_disjoint_set_union(ds, edges->edges[i].u, edges->edges[i].v);
    cr_disjoint_set_compress(ds);
    for (uint64_t i = 0; i < nl; i++)
        cr_disjoint_set_find(ds, first + i, take_root, &label[i]);
    cr_disjoint_set_destroy(ds); /* its barrier delivers every answer */
}

/* What main measured, for the report. */
typedef struct cc_summary {
    uint64_t n, total_edges, components, largest, rounds, giant, cut, super_edges;
    double seconds, t_gen, t_build, peak, peak_job;
    const double *times; /* each trial's */
    int validated, ok, invariants;
} cc_summary;

/* Rank 0's lines and CSV line. */
static void report(const app *a, const ccopts *o, const char *route_name, const cc_summary *s,
                   FILE *csv)
{
    printf("cc: %d ranks, %llu vertices, %llu edges, %s (%s)\n", a->size,
           (unsigned long long)s->n, (unsigned long long)s->total_edges,
           algorithm_names[o->algorithm], route_name);
    if (o->graph && s->t_gen == 0) /* read three times, not held (cr_graph_read) */
        printf("  read and built in %.4f s\n", s->t_build);
    else
        printf("  %s in %.4f s, built in %.4f s\n", o->graph ? "read" : "generated", s->t_gen,
               s->t_build);
    printf("  %llu components, the largest %llu vertices; %llu rounds, %.4f s\n",
           (unsigned long long)s->components, (unsigned long long)s->largest,
           (unsigned long long)s->rounds, s->seconds);
    if (o->trials > 1) {
        printf("  trial times (s):");
        for (int t = 0; t < o->trials; t++)
            printf(" %.4f", s->times[t]);
        printf("\n  %d trials: the time above is their mean, the first included\n", o->trials);
    }
    printf("  peak memory per rank %.1f MiB, of the job %.1f MiB (every rank's summed; graph "
           "and labels; before the checks)\n", s->peak, s->peak_job);
    if (o->algorithm == ALG_LOCAL)
        printf("  %llu vertices in the ranks' largest local components, %llu cut-edge "
               "records, %llu edges between components\n",
               (unsigned long long)s->giant, (unsigned long long)s->cut,
               (unsigned long long)s->super_edges);
    if (o->validate)
        printf("  invariants %s: every edge within one component, every label a root "
               "and at most its vertex's id\n", s->invariants ? "hold" : "FAILED");
    printf("  %s\n", !s->validated ? "not checked against union-find (--validate=no, or "
                                     "larger than --validate=auto gathers)"
                     : s->ok      ? "validated against union-find: every label is its "
                                    "component's smallest id"
                                  : "VALIDATION FAILED");
    if (csv) {
        fprintf(csv, "%d,%llu,%llu,%s,%s,%llu,%llu,%llu,%.6f,%.6f,%.1f,%d\n", a->size,
                (unsigned long long)s->n, (unsigned long long)s->total_edges,
                algos[o->algorithm], route_name, (unsigned long long)s->components,
                (unsigned long long)s->largest, (unsigned long long)s->rounds, s->seconds,
                s->t_build, s->peak, s->ok && s->invariants);
        fclose(csv);
    }
}

/* The comm, the graph, and (union-find, or a graph written out) the edge list. */
typedef struct cc_graph {
    cr_comm *comm;
    cr_config cfg;
    cr_graph *g;
    cr_edge_list edges;
    uint64_t total_edges;
    double t_gen, t_build;
} cc_graph;

static void open_comm(app *a, const ccopts *o, cc_graph *cg)
{
    /* sv: --route is the darray's lock-step route, and the comm keeps COURIER_ROUTE */
    bool sv = o->algorithm == ALG_SV;
    app_comm_flags flags = {.route = !sv && o->route_given ? o->route : NULL,
                            .node_size = sv ? 0 : o->node_size};
    cg->comm = app_comm_create(a, &flags, &cg->cfg);
}

typedef struct file_check {
    const app *a;
    const char *path;
} file_check;

/* cr_graph_read's check: ids used as they are, so refused before anything is
 * allocated when they cannot fit (per owned vertex: CSR offsets, labels, the
 * darray's or propagation's state). */
static const char *check_file(void *user, uint64_t nvertices, uint64_t edges)
{
    static char refusal[512];
    const file_check *f = user;
    return app_vertices_refusal(f->a, f->path, nvertices, edges, 0, 64, 0, refusal,
                                sizeof refusal);
}

/* A file read three times instead of held as a list (cr_graph_read): the job's peak
 * is the graph's. Reading and building are one step, timed as the build. */
static void read_streamed(app *a, const ccopts *o, cc_graph *cg)
{
    open_comm(a, o, cg);
    app_progress(a, "reading the graph and building it");
    file_check f = {a, o->graph};
    cr_graph_read_opts ro = {.check = check_file, .user = &f};
    char err[512];
    double t0 = MPI_Wtime();
    cg->g = cr_graph_read(cg->comm, o->graph, &ro, &cg->total_edges, err, sizeof err);
    if (!cg->g)
        app_error(a, "%s", err);
    cg->t_build = app_max_time(MPI_Wtime() - t0);
}

/* A list first (generated, or read and kept for union-find or --write-graph), then
 * the graph from it. */
static void read_then_build(app *a, const ccopts *o, FILE *write_to, cc_graph *cg)
{
    cr_edge_list *edges = &cg->edges;
    char err[512];
    app_progress(a, o->graph ? "reading the graph" : "generating the graph");
    double t_gen = MPI_Wtime();
    int rc = o->graph ? cr_graph_read_edges(o->graph, CR_FILE_AUTO, NULL, a->rank, a->size, edges,
                                            err, sizeof err)
                      : cr_graph_generate(&o->gen, a->rank, a->size, edges, err, sizeof err);
    app_agree(a, rc ? err : NULL);
    cg->t_gen = app_max_time(MPI_Wtime() - t_gen);
    if (o->graph) { /* ids used as they are: refuse what cannot fit before allocating */
        uint64_t mine = edges->count, all;
        MPI_Allreduce(&mine, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        edges->nvertices = app_file_vertices(a, o->graph, edges->nvertices, all, 0, 64, 0);
    }
    app_write_graph(a, write_to, o->write_graph, edges);
    open_comm(a, o, cg);
    app_progress(a, "%s in %.2f s; building the distributed graph", o->graph ? "read" : "generated",
                 cg->t_gen);
    uint64_t total = edges->count;
    MPI_Allreduce(&total, &cg->total_edges, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    /* The graph's build takes the list, unless the disjoint set's union-find reads it;
     * the checks then read the graph's own edges (the same edges, each once). */
    double t_build = MPI_Wtime();
    cg->g = o->algorithm == ALG_DSET ? cr_graph_build(cg->comm, edges)
                                     : cr_graph_build_consume(cg->comm, edges);
    cg->t_build = app_max_time(MPI_Wtime() - t_build);
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "cc", usage, &argc, &argv);
    ccopts o = {0};
    parse(&a, argc, argv, &o);
    FILE *write_to = app_open_graph_file(&a, o.write_graph);
    FILE *csv = app_open_csv(&a, o.csv, "ranks,vertices,edges,algorithm,route,components,"
                                        "largest,rounds,seconds,build_seconds,peak_mib,ok");
    cc_graph cg = {0};
    if (o.graph && !o.write_graph && o.algorithm != ALG_DSET)
        read_streamed(&a, &o, &cg);
    else
        read_then_build(&a, &o, write_to, &cg);
    cr_comm *comm = cg.comm;
    cr_config cfg = cg.cfg;
    cr_graph *g = cg.g;
    cr_edge_list edges = cg.edges;
    uint64_t total_edges = cg.total_edges;
    double t_gen = cg.t_gen, t_build = cg.t_build;
    bool keep_list = o.algorithm == ALG_DSET;
    uint64_t n = cr_graph_vertices(g), nl = cr_graph_local_count(g), first = cr_graph_first(g);
    uint64_t *label = app_alloc_large(&a, nl ? nl : 1, 8, "the labels");

    cr_cc_opts co;
    cr_graph_cc_opts_init(&co);
    co.algorithm = o.algorithm == ALG_LOCAL ? CR_CC_LOCAL
                   : o.algorithm == ALG_LABEL ? CR_CC_LABEL : CR_CC_SV;
    if (o.algorithm == ALG_SV)
        cr_route_parse(o.route, &co.route, NULL, 0);
    co.aggregation = (cr_darray_aggregation)o.aggregation;
    cr_graph_cc_stats st = {0};
    if (o.stats)
        cr_stats_reset(comm);
    app_progress(&a, "built in %.2f s; connected components (%s)", t_build,
                 algorithm_names[o.algorithm]);
    double *times = app_calloc(&a, (size_t)o.trials, sizeof *times, "the times");
    double seconds = 0, peak = 0, peak_job = 0;
    for (int t = 0; t < o.trials; t++) {
        st = (cr_graph_cc_stats){0};
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (o.algorithm == ALG_DSET)
            cc_disjoint_set(comm, &edges, first, nl, label);
        else
            cr_graph_cc_with(g, &co, label, &st);
        times[t] = app_max_time(MPI_Wtime() - t0);
        seconds += times[t] / o.trials;
        if (t == 0) { /* before the checks, which gather on rank 0 */
            peak = app_peak_mib();
            peak_job = app_peak_job_mib();
        }
    }
    uint64_t rounds = st.rounds;
    if (o.stats)
        cr_stats_print(comm, stdout);

    app_progress(&a, "done in %.4f s; counting and validating", seconds);
    uint64_t components, largest;
    sizes(comm, n, first, label, nl, &components, &largest);
    int validated = o.validate == 1 || (o.validate == 2 && total_edges <= (1u << 22));
    if (!keep_list && (validated || o.validate))
        cr_graph_edges(g, &edges);
    int ok = validated ? validate(&a, &edges, label, nl, n) : 1;
    app_components_check inv = {.ok = 1};
    if (o.validate)
        inv = app_check_components(&a, comm, n, first, label, nl, edges.edges, edges.count,
                                   sizeof *edges.edges, 1, UINT64_MAX);
    uint64_t mine[2] = {st.cut_records, st.giant_vertices}, sums[2];
    MPI_Allreduce(mine, sums, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    char route_name[128];
    if (o.algorithm == ALG_SV)
        snprintf(route_name, sizeof route_name, "%s", o.route);
    else
        cr_route_format(&cfg.route, route_name, sizeof route_name);
    if (a.rank == 0) {
        cc_summary sum = {.n = n, .total_edges = total_edges, .components = components,
                          .largest = largest, .rounds = rounds, .seconds = seconds,
                          .t_gen = t_gen, .t_build = t_build, .peak = peak, .peak_job = peak_job,
                          .times = times, .giant = sums[1], .cut = sums[0],
                          .super_edges = st.super_edges,
                          .validated = validated, .ok = ok, .invariants = inv.ok};
        report(&a, &o, route_name, &sum, csv);
    }
    free(label), free(times);
    cr_graph_destroy(g);
    app_comm_destroy(comm);
    cr_graph_edges_free(&edges);
    MPI_Finalize();
    return ok && inv.ok ? 0 : 1;
}
