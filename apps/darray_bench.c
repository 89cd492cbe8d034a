/* darray_bench: the distributed array's three benchmarks (the thesis behind
 * src/darray, Peters 2024, docs/references.md, section 5.4):
 * neighborhood (every vertex reads its neighbours' entries), pointer doubling (the
 * first round of Boruvka: every vertex points to its lightest neighbour, then
 * doubling until every vertex points to a root) and overload (every rank reads and
 * writes every index rank 0 holds). Each runs lock-step under every route and
 * aggregation asked for, and asynchronously on the mailbox; every run is verified.
 * Prints time (slowest rank, median of the repetitions), messages and bytes per
 * rank, requests merged and requests reaching their owners, and the speedup over
 * lock-step direct without aggregation. */
#include "cli.h"
#include "shapes.h"
#include "lightest.h"
#include <courier/rng.h>

#include <courier.h>

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: mpirun -np P darray_bench [options]\n"
    "\n"
    "The distributed array's benchmarks, each verified:\n"
    "  neighborhood      every vertex reads the entries of all its neighbours\n"
    "  doubling          pointer doubling: every vertex points to its lightest\n"
    "                    neighbour, then p(u) = p(p(u)) until every vertex points to a\n"
    "                    root (the first round of Boruvka)\n"
    "  overload          every rank reads and adds to every index rank 0 holds\n"
    "\n"
    "  --patterns L      comma list of the above (default all three)\n"
    "  --generator G     rmat, gnm or rgg (default rmat)\n"
    "  --vertices-per-rank V  2^13 by default (thesis 5.4.1): the graph has the\n"
    "                    power of two nearest V * P vertices\n"
    "  --edgefactor E    edges per vertex (default 16: 2^17 edges per rank)\n"
    "  --entries E       overload: entries per rank (default 256; the thesis also\n"
    "                    uses 8192)\n"
    "  --route L         lock-step routes: comma list of direct, grid, hypercube\n"
    "                    (default those three), and the thesis's six-dimension grids\n"
    "                    increase, decrease, hourglass, inverse-hourglass (P a power\n"
    "                    of two >= 64; 2x2x2x4x8x16 ... at 4096, scaled for other P),\n"
    "                    and locality (a hypercube between groups of 16 ranks, then\n"
    "                    one exchange within the group; P a power of two >= 32), and\n"
    "                    auto (the cost model chooses: each lock-step step among\n"
    "                    direct, grid, grid3 and hypercube; async, the comm's route\n"
    "                    and buffer, docs/tuning.md)\n"
    "  --aggregation L   comma list of none, hash, sort, auto (default the first three;\n"
    "                    auto merges a step only where requests repeat)\n"
    "  --mode M          lockstep, async or both (default both); async runs on the\n"
    "                    mailbox under each route of --route (grid and hypercube as\n"
    "                    mailbox routes, with virtual nodes of --node-size)\n"
    "  --node-size K     async: virtual nodes of K ranks (default 2)\n"
    "  --in-place        lockstep: the ranks of a node (COURIER_NODE_SIZE, or MPI's)\n"
    "                    write and read each other's elements in place, in the node's\n"
    "                    shared memory (cr_darray_opts.node; docs/darray.md); async\n"
    "                    runs keep records (the neighborhood reads without a barrier)\n"
    "  --reps R          repetitions; the median time is reported (default 3)\n"
    "  --seed S          graph seed (default 1)\n";

enum { PAT_NEIGHBORHOOD, PAT_DOUBLING, PAT_OVERLOAD, NPATTERNS };
static const char *const pattern_names[] = {"neighborhood", "doubling", "overload", NULL};
static const char *const route_names[] = {"direct", "grid", "hypercube", "increase", "decrease",
                                          "hourglass", "inverse-hourglass", "locality", "auto",
                                          NULL};
#define NROUTES 9
#define ROUTE_SHAPES 3 /* from here: the thesis's grids (apps/common/shapes.h) */
#define ROUTE_AUTO 8   /* the cost model's choice (docs/tuning.md) */

/* The route spec of route number `route` at p ranks (shapes checked in main). */
static void route_spec(int route, int p, char *spec, size_t len)
{
    if (route >= ROUTE_SHAPES && route < ROUTE_AUTO)
        app_shape_spec(route_names[route], p, spec, len);
    else
        snprintf(spec, len, "%s", route_names[route]);
}
static const char *const agg_names[] = {"none", "hash", "sort", "auto", NULL};
static const char *const mode_names[] = {"lockstep", "async", "both", NULL};
static const char *const gen_names[] = {"rmat", "gnm", "rgg", NULL};

typedef struct bench {
    app a;
    cr_graph *g;
    uint64_t n;         /* graph vertices */
    uint64_t entries;   /* overload: per rank */
    int reps;
    unsigned node_size;
    bool in_place; /* --in-place: lock-step arrays reach the node's elements in place */
    bool stats; /* --stats: the comms print their counters */
} bench;

/* What one run measured, reduced over the ranks. */
typedef struct result {
    double seconds;
    double msgs_max, msgs_mean, mib_max, mib_mean;
    double merged, reached, reached_max;
    int verified;
} result;

/* ---- a run's context: the array and how it is accessed -------------------------- */

typedef struct run {
    bench *b;
    cr_comm *comm;
    cr_darray *arr;
    int lockstep;
    uint64_t bad; /* wrong values seen on this rank */
} run;

static void got_checked(cr_comm *comm, const void *data, size_t len, void *ctx)
{
    (void)comm, (void)len;
    memcpy(ctx, data, 8);
}

/* Read element i into *dst: queued (lock-step) or requested (async). */
static void read_into(run *r, uint64_t i, uint64_t *dst)
{
    if (r->lockstep)
        cr_darray_read(r->arr, i, dst);
    else
        cr_darray_async_read(r->arr, i, got_checked, dst);
}

/* Complete what was queued or sent. */
static void complete(run *r)
{
    if (r->lockstep)
        cr_darray_step(r->arr);
    else
        cr_barrier(r->comm);
}

/* ---- neighborhood -------------------------------------------------------------- */

static void neighborhood(run *r)
{
    cr_graph *g = r->b->g;
    uint64_t first, count, *local = cr_darray_local(r->arr, &first, &count);
    for (uint64_t i = 0; i < count; i++)
        local[i] = cr_rng_hash64(first + i);
    uint64_t nloc = cr_graph_local_count(g), total = 0;
    for (uint64_t u = 0; u < nloc; u++) {
        uint64_t deg = cr_graph_degree(g, u);
        total += deg;
    }
    uint64_t *got = app_calloc(&r->b->a, total ? total : 1, 8, "the neighbours' entries");
    uint64_t k = 0;
    for (uint64_t u = 0; u < nloc; u++) {
        uint64_t deg = cr_graph_degree(g, u);
        for (uint64_t j = 0; j < deg; j++)
            read_into(r, cr_graph_neighbour(g, u, j), &got[k++]);
    }
    complete(r);
    k = 0;
    for (uint64_t u = 0; u < nloc; u++) {
        uint64_t deg = cr_graph_degree(g, u);
        for (uint64_t j = 0; j < deg; j++)
            r->bad += got[k++] != cr_rng_hash64(cr_graph_neighbour(g, u, j));
    }
    free(got);
}

/* ---- pointer doubling ------------------------------------------------------------ */

static int any_rank(int mine)
{
    int any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    return any;
}

static void doubling(run *r)
{
    cr_graph *g = r->b->g;
    uint64_t first, count, *p = cr_darray_local(r->arr, &first, &count);
    for (uint64_t i = 0; i < count; i++) /* the graph's blocks are the array's */
        p[i] = app_lightest_neighbour(g, i, first + i);
    uint64_t *q = app_calloc(&r->b->a, count ? count : 1, 8, "the pointers");
    /* The lightest edges form trees whose roots are 2-cycles (the two ends of a
     * component's lightest edge point at each other): the smaller end becomes the
     * root. */
    for (uint64_t i = 0; i < count; i++)
        read_into(r, p[i], &q[i]);
    complete(r);
    for (uint64_t i = 0; i < count; i++)
        if (q[i] == first + i && first + i < p[i])
            p[i] = first + i;
    MPI_Barrier(MPI_COMM_WORLD); /* every root is set before anyone reads again */
    for (;;) {
        for (uint64_t i = 0; i < count; i++)
            read_into(r, p[i], &q[i]);
        complete(r);
        int changed = 0;
        for (uint64_t i = 0; i < count; i++)
            changed |= q[i] != p[i];
        MPI_Barrier(MPI_COMM_WORLD); /* all reads of this round done before writes */
        for (uint64_t i = 0; i < count; i++)
            p[i] = q[i];
        if (!any_rank(changed))
            break;
    }
    /* every pointer names a root: p(p(u)) == p(u) held in the last round */
    for (uint64_t i = 0; i < count; i++)
        r->bad += p[i] >= r->b->n;
    free(q);
}

/* ---- overload ------------------------------------------------------------------- */

static void overload(run *r)
{
    uint64_t first, count, *local = cr_darray_local(r->arr, &first, &count);
    memset(local, 0, count * 8);
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t first0, count0, one = 1;
    cr_darray_block(cr_darray_length(r->arr), r->b->a.size, 0, &first0, &count0);
    uint64_t *got = app_calloc(&r->b->a, count0, 8, "the overload reads");
    if (r->lockstep) {
        for (uint64_t i = 0; i < count0; i++) {
            cr_darray_write(r->arr, first0 + i, &one);
            cr_darray_read(r->arr, first0 + i, &got[i]);
        }
        cr_darray_step(r->arr);
    } else { /* writes, then (after the barrier) reads: the same order as a step */
        for (uint64_t i = 0; i < count0; i++)
            cr_darray_async_write(r->arr, first0 + i, &one);
        cr_barrier(r->comm);
        for (uint64_t i = 0; i < count0; i++)
            cr_darray_async_read(r->arr, first0 + i, got_checked, &got[i]);
        cr_barrier(r->comm);
    }
    for (uint64_t i = 0; i < count0; i++)
        r->bad += got[i] != (uint64_t)r->b->a.size;
    free(got);
}

/* ---- one configuration ---------------------------------------------------------- */

static cr_comm *comm_for(bench *b, int lockstep, int route)
{
    cr_config cfg;
    app_config_from_env(&b->a, &cfg);
    if (!lockstep) {
        char spec[128];
        route_spec(route, b->a.size, spec, sizeof spec);
        app_parse_route(&b->a, spec, &cfg);
        cfg.node_size = route ? b->node_size : 0;
    }
    cfg.print_stats |= b->stats;
    return cr_comm_create(MPI_COMM_WORLD, &cfg);
}

static result measure(bench *b, int pattern, int lockstep, int route, int agg)
{
    cr_comm *comm = comm_for(b, lockstep, route);
    cr_darray_opts o;
    cr_darray_opts_init(&o);
    if (lockstep) {
        char spec[128];
        route_spec(route, b->a.size, spec, sizeof spec);
        char err[200];
        if (cr_route_parse(spec, &o.route, err, sizeof err)) /* checked in main: a bug here */
            app_fail(&b->a, "internal error: %s", err);
    }
    o.aggregation = (cr_darray_aggregation)agg;
    if (lockstep && b->in_place)
        o.node = CR_DARRAY_NODE_IN_PLACE;
    if (pattern == PAT_OVERLOAD)
        o.merge = CR_OP_SUM, o.type = CR_UINT64;
    uint64_t n = pattern == PAT_OVERLOAD ? b->entries * (uint64_t)b->a.size : b->n;
    run r = {.b = b, .comm = comm, .lockstep = lockstep};
    r.arr = cr_darray_create(comm, n, 8, &o);
    double *times = app_calloc(&b->a, (size_t)b->reps, sizeof *times, "the times");
    cr_darray_stats ds;
    cr_stats cs;
    cr_dedup_stats rs;
    for (int rep = 0; rep < b->reps; rep++) {
        cr_darray_stats_reset(r.arr);
        cr_stats_reset(comm);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        switch (pattern) {
        case PAT_NEIGHBORHOOD: neighborhood(&r); break;
        case PAT_DOUBLING: doubling(&r); break;
        default: overload(&r); break;
        }
        times[rep] = app_max_time(MPI_Wtime() - t0);
        cr_darray_stats_get(r.arr, &ds);
        cr_stats_get(comm, &cs);
        cr_dedup_stats_get(comm, &rs);
    }
    result res = {.seconds = app_median(times, b->reps)};
    double msgs = lockstep ? (double)ds.messages : (double)cs.mpi_sends;
    double bytes = lockstep ? (double)ds.bytes : (double)cs.mpi_bytes_sent;
    double merged = lockstep ? (double)(ds.merged_local + ds.merged_hops)
                             : (double)(cs.merged_at_source + cs.merged_at_hops +
                                        rs.requests_merged_at_source + rs.requests_merged_at_hops +
                                        rs.requests_coalesced);
    double in[5] = {msgs, bytes, merged, (double)ds.reached_owner, (double)r.bad}, sum[5], mx[5];
    MPI_Allreduce(in, sum, 5, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(in, mx, 5, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int p = b->a.size;
    res.msgs_max = mx[0], res.msgs_mean = sum[0] / p;
    res.mib_max = mx[1] / 1048576.0, res.mib_mean = sum[1] / p / 1048576.0;
    res.merged = sum[2], res.reached = sum[3], res.reached_max = mx[3];
    res.verified = sum[4] == 0;
    free(times);
    cr_darray_destroy(r.arr);
    cr_comm_destroy(comm);
    return res;
}

/* ---- main ------------------------------------------------------------------------ */

/* A comma list of names from `choices` into want[]. */
static void parse_list(const app *a, const char *flag, const char *value,
                       const char *const *choices, int *want, int n)
{
    memset(want, 0, (size_t)n * sizeof *want);
    char buf[256];
    if (snprintf(buf, sizeof buf, "%s", value) >= (int)sizeof buf)
        app_usage_error(a, "%s '%s' is too long", flag, value);
    for (char *tok = buf, *next; tok; tok = next) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        want[app_parse_choice(a, flag, tok, choices)] = 1;
    }
}

/* The graph of the neighborhood and doubling patterns: generated with about vpr
 * vertices per rank, built on a comm of its own; the header line. */
static void build_graph(bench *b, int generator, uint64_t vpr, double edgefactor,
                        uint64_t seed)
{
    cr_gen_params gp;
    cr_graph_gen_params_init(&gp);
    gp.kind = (cr_gen_kind)generator;
    gp.scale = (int)lround(log2((double)vpr * b->a.size));
    gp.scale = gp.scale < 1 ? 1 : gp.scale;
    gp.edgefactor = edgefactor;
    gp.seed = seed;
    if (gp.kind == CR_GEN_RGG && gp.scale > 26)
        app_usage_error(&b->a, "the graph's scale %d is too large for rgg (at most 26)",
                        gp.scale);
    cr_edge_list edges = {0};
    char err[256];
    if (cr_graph_generate(&gp, b->a.rank, b->a.size, &edges, err, sizeof err))
        app_error(&b->a, "%s", err);
    cr_comm *gcomm = comm_for(b, 1, 0);
    b->g = cr_graph_build(gcomm, &edges);
    cr_graph_edges_free(&edges);
    b->n = cr_graph_vertices(b->g);
    if (b->a.rank == 0)
        printf("darray_bench: %d ranks, %s graph of %llu vertices (scale %d), edge factor "
               "%g; overload %llu entries per rank; %d repetition(s)\n",
               b->a.size, gen_names[generator], (unsigned long long)b->n, gp.scale, edgefactor,
               (unsigned long long)b->entries, b->reps);
}

/* Rank 0's table row and CSV line of one run, its speedup against base. */
static void print_row(const bench *b, FILE *out, int pat, int mode, int rt, int agg,
                      const result *res, const result *base)
{
    const char *aname = mode ? "dedup" : agg_names[agg];
    printf("| %s | %s | %s | %s | %.4f | %.2f | %.0f | %.1f | %.2f | %.2f | %.0f "
           "| %.0f | %.0f | %s |\n",
           pattern_names[pat], mode ? "async" : "lockstep", route_names[rt], aname,
           res->seconds, base->seconds / res->seconds, res->msgs_max, res->msgs_mean,
           res->mib_max, res->mib_mean, res->merged, res->reached, res->reached_max,
           res->verified ? "yes" : "FAILED");
    fflush(stdout);
    if (out)
        fprintf(out, "%s,%s,%s,%s,%d,%llu,%.6f,%.3f,%.0f,%.1f,%.3f,%.3f,%.0f,%.0f,%.0f,%d\n",
                pattern_names[pat], mode ? "async" : "lockstep", route_names[rt], aname,
                b->a.size,
                (unsigned long long)(pat == PAT_OVERLOAD ? b->entries * (uint64_t)b->a.size
                                                         : b->n),
                res->seconds, base->seconds / res->seconds, res->msgs_max, res->msgs_mean,
                res->mib_max, res->mib_mean, res->merged, res->reached, res->reached_max,
                res->verified);
}

int main(int argc, char **argv)
{
    bench b = {.reps = 3, .entries = 256, .node_size = 2};
    app_init(&b.a, "darray_bench", usage, &argc, &argv);
    int want_pat[NPATTERNS] = {1, 1, 1}, want_route[NROUTES] = {1, 1, 1, 0, 0, 0, 0, 0, 0}, want_agg[4] = {1, 1, 1, 0};
    int modes = 2, generator = 0;
    uint64_t vpr = 1u << 13, seed = 1;
    double edgefactor = 16;
    const char *csv = NULL;
    app_shared sh; /* --seed and the common flags */
    app_shared_init(&sh);
    static const struct option opts[] = {
        {"patterns", required_argument, 0, 'p'},  {"generator", required_argument, 0, 'g'},
        {"vertices-per-rank", required_argument, 0, 'v'},
        {"edgefactor", required_argument, 0, 'e'}, {"entries", required_argument, 0, 'E'},
        {"route", required_argument, 0, 'R'},     {"aggregation", required_argument, 0, 'A'},
        {"mode", required_argument, 0, 'm'},      {"node-size", required_argument, 0, 'N'},
        {"reps", required_argument, 0, 'r'},      {"in-place", no_argument, 0, 'I'},
        APP_LONG_SEED,
        APP_LONG_COMMON, {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'p': parse_list(&b.a, "--patterns", optarg, pattern_names, want_pat, NPATTERNS); break;
        case 'g': generator = app_parse_choice(&b.a, "--generator", optarg, gen_names); break;
        case 'v': vpr = app_parse_u64(&b.a, "--vertices-per-rank", optarg, 1, 1u << 30); break;
        case 'e': edgefactor = app_parse_double(&b.a, "--edgefactor", optarg, 1, 1024); break;
        case 'E': b.entries = app_parse_u64(&b.a, "--entries", optarg, 1, 1u << 24); break;
        case 'R': parse_list(&b.a, "--route", optarg, route_names, want_route, NROUTES); break;
        case 'A': parse_list(&b.a, "--aggregation", optarg, agg_names, want_agg, 4); break;
        case 'm': modes = app_parse_choice(&b.a, "--mode", optarg, mode_names); break;
        case 'N': b.node_size = (unsigned)app_parse_u64(&b.a, "--node-size", optarg, 1, 65536); break;
        case 'r': b.reps = (int)app_parse_u64(&b.a, "--reps", optarg, 1, 100); break;
        case 'I': b.in_place = true; break;
        default: app_other_option(&b.a, ch, optarg, &sh, argv);
        }
    }
    app_no_operands(&b.a, argc, argv);
    for (int rt = ROUTE_SHAPES; rt < ROUTE_AUTO; rt++) {
        char why[160];
        if (want_route[rt] && app_shape_spec(route_names[rt], b.a.size, why, sizeof why))
            app_usage_error(&b.a, "--route: %s", why);
    }
    csv = sh.csv;
    seed = sh.seed;
    b.stats = sh.stats;

    FILE *out = app_open_csv(&b.a, csv, "pattern,mode,route,aggregation,ranks,vertices,seconds,"
                                         "speedup,msgs_max,msgs_mean,mib_max,mib_mean,merged,"
                                         "reached_owner,reached_owner_max,verified");
    if (want_pat[PAT_NEIGHBORHOOD] || want_pat[PAT_DOUBLING])
        build_graph(&b, generator, vpr, edgefactor, seed);
    else if (b.a.rank == 0)
        printf("darray_bench: %d ranks; overload %llu entries per rank; %d repetition(s)\n",
               b.a.size, (unsigned long long)b.entries, b.reps);
    if (b.a.rank == 0) {
        printf("\n| pattern | mode | route | aggregation | time s | speedup | msgs/rank max | "
               "mean | MiB/rank max | mean | requests merged | reach owners | most on a rank "
               "| verified |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        fflush(stdout);
    }
    int all_ok = 1;
    for (int pat = 0; pat < NPATTERNS; pat++) {
        if (!want_pat[pat])
            continue;
        /* the baseline: lock-step, direct, no aggregation */
        result base = measure(&b, pat, 1, 0, 0);
        for (int mode = 0; mode < 2; mode++) {
            if (modes != 2 && modes != mode)
                continue;
            for (int rt = 0; rt < NROUTES; rt++) {
                if (!want_route[rt])
                    continue;
                for (int agg = 0; agg < 4; agg++) {
                    if (mode == 1 && agg != 0)
                        continue; /* async: merging is the runtime's */
                    if (mode == 0 && !want_agg[agg])
                        continue;
                    result res = mode == 0 && rt == 0 && agg == 0 ? base
                                                                  : measure(&b, pat, !mode, rt, agg);
                    all_ok &= res.verified;
                    if (b.a.rank != 0)
                        continue;
                    print_row(&b, out, pat, mode, rt, agg, &res, &base);
                }
            }
        }
    }
    if (out)
        fclose(out);
    if (b.g) {
        cr_comm *gcomm = cr_graph_comm(b.g);
        cr_graph_destroy(b.g);
        cr_comm_destroy(gcomm);
    }
    if (!all_ok)
        app_error(&b.a, "VERIFICATION FAILED (see the table)");
    MPI_Finalize();
    return 0;
}
