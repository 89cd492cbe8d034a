/* scale_model: what the distributed array's lock-step steps do at thousands of
 * ranks, counted on the simulated transport (one process, no mpirun). The product's
 * own darray code runs on P virtual ranks (its stages move as mailbox records
 * there, with the same counts as the MPI collectives: docs/darray.md); for each
 * route and aggregation the model reports per rank (max and mean) the messages, the
 * bytes and the requests reaching the owner, and a predicted time
 * from an alpha-beta-gamma model of those counts. Every run is verified.
 *
 * Patterns (thesis 5.4): overload (every rank reads and adds to every index rank 0
 * holds), neighborhood (every vertex reads the entries of its neighbours) and
 * pointer doubling (every vertex points to its lightest neighbour, then
 * p(u) = p(p(u)) until every vertex points to a root: Boruvka's first round) on an
 * R-MAT, GNM or RGG graph (--generator) built on the virtual ranks. */
#include "cli.h"
#include "lightest.h"
#include "shapes.h"

#include <courier.h>

#include <courier/rng.h>

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] =
    "Usage: scale_model [options]        (one process: do not start it with mpirun)\n"
    "\n"
    "Runs the distributed array's benchmark patterns in lock-step on P virtual ranks\n"
    "of the simulated transport, under each route and aggregation, and prints per\n"
    "rank (max and mean)\n"
    "the messages, bytes and requests reaching the busiest owner, with a time\n"
    "predicted from those counts: alpha per message + beta per byte on the busiest\n"
    "rank, plus gamma per request the owner merges. Every read is verified.\n"
    "\n"
    "  --patterns L      overload, neighborhood, doubling, bfs, boruvka (default\n"
    "                    overload); bfs: the level-synchronous search on the mailbox,\n"
    "                    routed by the route, aggregation none or hash (visits merged\n"
    "                    at hops); boruvka: doubling at the thesis's size, the graph\n"
    "                    never stored (one pass over its generated edges keeps each\n"
    "                    vertex's lightest), the roots checked against the lightest\n"
    "                    edges\n"
    "  --ranks L         comma list of virtual rank counts, powers of two (default\n"
    "                    64,256,1024,4096)\n"
    "  --vertices-per-rank V  the graph patterns: vertices per rank (default\n"
    "                    1024; the thesis uses 8192); boruvka: a power of two, at most\n"
    "                    2^32 vertices in all\n"
    "  --edgefactor E    edges per vertex (default 16)\n"
    "  --generator G     the graph patterns' instance, the thesis's three families:\n"
    "                    rmat (default), gnm (uniform endpoints) or rgg (random\n"
    "                    geometric, --edgefactor its average degree: 32 for 2^17\n"
    "                    edges per 2^13 vertices; ids numbered by region, as a\n"
    "                    distributed generator gives them; at most 2^26 vertices)\n"
    "  --entries E       indices of rank 0, each read and written by every rank\n"
    "                    (default 256; the thesis also uses 8192)\n"
    "  --route L         direct, grid (2D), grid3 (3D), hypercube, nlnr (the BFS\n"
    "                    only: the mailbox's node-aware route, nodes of 48 ranks; the\n"
    "                    lock-step darray has no node-aware stage) (default those);\n"
    "                    auto (the cost model of courier/tune.h chooses, with the\n"
    "                    costs --alpha, --beta and --gamma: the BFS's comm on nodes\n"
    "                    of 48 ranks; the darray's patterns each step among direct,\n"
    "                    grid, grid3 and hypercube, the route column naming what ran);\n"
    "                    and the thesis's six-dimension grids increase (2x2x2x4x8x16\n"
    "                    at 4096), decrease, hourglass (8x4x2x2x4x8), inverse-hourglass\n"
    "                    (2x4x8x8x4x2), scaled for other P >= 64; and locality (a\n"
    "                    hypercube between groups of 16 ranks, then one exchange\n"
    "                    within the group; P a power of two >= 32). direct with sort is\n"
    "                    the thesis's plain all-to-all (sorted by recipient and index,\n"
    "                    merged locally, one exchange)\n"
    "  --aggregation L   none, hash, sort, auto (default the first three; auto merges\n"
    "                    a step only where requests repeat, docs/darray.md)\n"
    "  --alpha US        microseconds per message (default 2: an off-node start-up)\n"
    "  --beta NS         nanoseconds per byte (default 0.1: 10 GB/s)\n"
    "  --gamma NS        nanoseconds per request merged at the owner (default 10)\n"
    "  --exchanges X     how the darray's exchanges are charged: sparse (default: a\n"
    "                    message per partner with data) or dense (n - 1 per exchange\n"
    "                    in a dimension of n, empty or not, as MPI_Alltoallv's\n"
    "                    pairwise algorithm starts them: the thesis's all-to-all); the\n"
    "                    messages columns show what is charged (bfs: always sparse)\n"
    "\n"
    "The COURIER_* variables configure the virtual ranks' mailboxes (not\n"
    "COURIER_ROUTE: the routes are the runs'). All ranks live in this one process, so\n"
    "their send buffers add up; smaller ones (COURIER_BUFFER_SIZE, COURIER_BUFFER_CAP)\n"
    "save memory. The darray's counts do not depend on them (its graph is built over\n"
    "a hypercube comm); the BFS's do.\n";

static const char *const route_names[] = {"direct", "grid", "grid3", "hypercube", "nlnr",
                                          "auto", "increase", "decrease", "hourglass",
                                          "inverse-hourglass", "locality", NULL};
#define NROUTES 11
#define ROUTE_NLNR 4  /* the mailbox's node-aware route: the BFS only */
#define ROUTE_AUTO 5  /* the comm's choice (courier/tune.h), nodes as nlnr's: the BFS only */
#define ROUTE_SHAPES 6 /* from here: the thesis's grids (apps/common/shapes.h) */
#define NLNR_NODE 48  /* ranks per node under nlnr */
static const char *const agg_names[] = {"none", "hash", "sort", "auto", NULL};
static const char *const graph_names[] = {"rmat", "gnm", "rgg", NULL}; /* by cr_gen_kind */
static const char *const pattern_names[] = {"overload", "neighborhood", "doubling", "bfs",
                                            "boruvka", NULL};
enum { PAT_OVERLOAD, PAT_NEIGHBORHOOD, PAT_DOUBLING, PAT_BFS, PAT_BORUVKA, NPAT };

typedef struct world {
    uint64_t entries;
    int route, agg, pattern;
    uint64_t vertices_per_rank;
    double edgefactor;
    cr_gen_kind graph;   /* the graph patterns' generator */
    uint8_t *changed[2]; /* [P] per round parity: doubling's "did my pointers move" */
    char error[256];     /* a virtual rank's failure (graph generation) */
    cr_darray_stats *stats; /* [P] */
    uint64_t *bad;          /* [P] wrong reads */
    uint64_t reached;       /* bfs: vertices the search reached */
    uint64_t *lightest;     /* boruvka: [n] each vertex's lightest neighbour (or itself) */
    uint64_t *root;         /* boruvka: [n] each vertex's root after the doubling */
} world;

static world W;

/* Wall-clock seconds, for the progress lines on stderr. */
static double wall_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* calloc for the virtual ranks (no app handle there): one line and exit on failure. */
static void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size);
    if (!p) {
        fprintf(stderr, "scale_model: out of memory for %zu x %zu bytes (fewer --ranks or "
                "--vertices-per-rank)\n", count, size);
        exit(1);
    }
    return p;
}

/* 3D grid dimensions for a power of two P: as equal as they go. */
static void grid3(int p, char *spec, size_t len)
{
    int e = 0;
    while ((1 << e) < p)
        e++;
    int a = e / 3 + (e % 3 > 0), b = e / 3 + (e % 3 > 1), c = e / 3;
    snprintf(spec, len, "grid:%dx%dx%d", 1 << a, 1 << b, 1 << c);
}

/* The route spec of route number `route` at p ranks (the shapes checked in main). */
static void route_spec(int route, int p, char *spec, size_t len)
{
    if (route == 2)
        grid3(p, spec, len);
    else if (route >= ROUTE_SHAPES)
        app_shape_spec(route_names[route], p, spec, len);
    else
        snprintf(spec, len, "%s", route_names[route]);
}

/* The array's options for this run: the merge rule, the route (3D grid dimensions
 * for P), the aggregation. */
static cr_darray_opts array_opts(int p, cr_op merge)
{
    cr_darray_opts o;
    cr_darray_opts_init(&o);
    o.merge = merge;
    o.type = CR_UINT64;
    o.aggregation = (cr_darray_aggregation)W.agg;
    char spec[128];
    route_spec(W.route, p, spec, sizeof spec);
    char err[200];
    if (cr_route_parse(spec, &o.route, err, sizeof err)) { /* checked in main: a bug here */
        fprintf(stderr, "scale_model: internal error: %s\n", err);
        exit(1);
    }
    return o;
}

static void run_overload(cr_comm *comm, void *user)
{
    (void)user;
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    cr_darray_opts o = array_opts(p, CR_OP_SUM);
    uint64_t n = W.entries * (uint64_t)p; /* rank 0 holds `entries` of them */
    cr_darray *a = cr_darray_create(comm, n, 8, &o);
    uint64_t first0, count0, one = 1;
    cr_darray_block(n, p, 0, &first0, &count0);
    uint64_t *got = xcalloc(count0, 8);
    for (uint64_t i = 0; i < count0; i++) {
        cr_darray_write(a, first0 + i, &one);
        cr_darray_read(a, first0 + i, &got[i]);
    }
    cr_darray_step(a);
    for (uint64_t i = 0; i < count0; i++)
        W.bad[me] += got[i] != (uint64_t)p;
    cr_darray_stats_get(a, &W.stats[me]);
    free(got);
    cr_darray_destroy(a);
}

/* ---- the graph patterns ------------------------------------------------------------ */

/* Every rank's flag of this round, read by every rank after a barrier: the model's
 * stand-in for an allreduce (its messages are not the array's, so not counted). Two
 * sets by round parity: a rank writes round k + 1's flags only after the barrier of
 * round k + 1, which waits for every rank to have read round k's. */
static int any_changed(cr_comm *comm, int round, int mine)
{
    int p = cr_comm_size(comm);
    uint8_t *flags = W.changed[round & 1];
    flags[cr_comm_rank(comm)] = (uint8_t)mine;
    cr_barrier(comm);
    int any = 0;
    for (int r = 0; r < p && !any; r++)
        any = flags[r];
    return any;
}

static uint64_t neighborhood(cr_graph *g, cr_darray *a)
{
    uint64_t first, count, *local = cr_darray_local(a, &first, &count), bad = 0, total = 0;
    for (uint64_t i = 0; i < count; i++)
        local[i] = cr_rng_hash64(first + i);
    uint64_t nloc = cr_graph_local_count(g);
    for (uint64_t u = 0; u < nloc; u++) {
        uint64_t deg = cr_graph_degree(g, u);
        total += deg;
    }
    uint64_t *got = xcalloc(total, 8), k = 0;
    for (uint64_t u = 0; u < nloc; u++) {
        uint64_t deg = cr_graph_degree(g, u);
        for (uint64_t j = 0; j < deg; j++)
            cr_darray_read(a, cr_graph_neighbour(g, u, j), &got[k++]);
    }
    cr_darray_step(a);
    k = 0;
    for (uint64_t u = 0; u < nloc; u++) {
        uint64_t deg = cr_graph_degree(g, u);
        for (uint64_t j = 0; j < deg; j++)
            bad += got[k++] != cr_rng_hash64(cr_graph_neighbour(g, u, j));
    }
    free(got);
    return bad;
}

/* Pointer doubling from the first pointers p[] of this rank's block (the thesis's
 * Boruvka round after the lightest edges): 2-cycles are broken (the smaller end is
 * the root), then p(u) = p(p(u)) until no pointer moves. Returns the pointers that
 * end outside the array (0 when right). */
static uint64_t double_pointers(cr_comm *comm, cr_darray *a, uint64_t *p)
{
    uint64_t first, count, bad = 0;
    cr_darray_local(a, &first, &count);
    uint64_t *q = xcalloc(count, 8);
    for (uint64_t i = 0; i < count; i++)
        cr_darray_read(a, p[i], &q[i]);
    cr_darray_step(a);
    for (uint64_t i = 0; i < count; i++) /* 2-cycles: the smaller end is the root */
        if (q[i] == first + i && first + i < p[i])
            p[i] = first + i;
    for (int round = 0;; round++) {
        any_changed(comm, round, 0); /* every root is set before anyone reads again */
        for (uint64_t i = 0; i < count; i++)
            cr_darray_read(a, p[i], &q[i]);
        cr_darray_step(a);
        int changed = 0;
        for (uint64_t i = 0; i < count; i++)
            changed |= q[i] != p[i];
        int any = any_changed(comm, ++round, changed); /* all reads done before writes */
        for (uint64_t i = 0; i < count; i++)
            p[i] = q[i];
        if (!any)
            break;
    }
    for (uint64_t i = 0; i < count; i++)
        bad += p[i] >= cr_darray_length(a);
    free(q);
    return bad;
}

static uint64_t doubling(cr_comm *comm, cr_graph *g, cr_darray *a)
{
    uint64_t first, count, *p = cr_darray_local(a, &first, &count);
    for (uint64_t i = 0; i < count; i++) /* the graph's blocks are the array's */
        p[i] = app_lightest_neighbour(g, i, first + i);
    return double_pointers(comm, a, p);
}

/* ---- Boruvka's first round at the thesis's size ------------------------------------ */

/* The graph of the boruvka pattern is never stored: its edges are generated a
 * million at a time and only each vertex's lightest edge is kept. An edge's weight is the high
 * half of app_edge_weight, packed above the other end's id, so that the minimum of
 * the packed words is the lightest edge, ties to the smaller neighbour. */
#define NO_EDGE UINT64_MAX

/* The generator's parameters for n vertices of the chosen family (an RGG's edge
 * factor is its average degree). The thesis's RGG instances come from a
 * distributed generator that gives each rank a region of the square, so its
 * vertices are numbered by region here too. */
static void gen_params(cr_gen_params *gp, uint64_t n)
{
    cr_graph_gen_params_init(gp);
    gp->kind = W.graph;
    gp->scale = (int)lround(log2((double)n));
    gp->edgefactor = W.edgefactor;
    gp->spatial_ids = true;
}

static uint64_t packed_edge(uint64_t u, uint64_t v)
{
    return (app_edge_weight(u, v) >> 32) << 32 | v;
}

/* The first pointers of the boruvka pattern, for every vertex (W.lightest), found
 * in one pass over the generated edges, a million at a time (part k of K of
 * the generator is a contiguous block of its edges, so the graph is the one any
 * number of ranks generates). Setup, outside the simulation: the thesis finds the
 * lightest edges locally and times only the pointer doubling's array accesses.
 * Returns 0, or -1 with the generator's refusal in W.error. */
static int find_lightest(uint64_t n)
{
    for (uint64_t u = 0; u < n; u++)
        W.lightest[u] = NO_EDGE;
    cr_gen_params gp;
    gen_params(&gp, n);
    uint64_t edges = (uint64_t)llround(W.edgefactor * (double)n / (W.graph == CR_GEN_RGG ? 2 : 1));
    /* An RGG call places every vertex, so fewer, larger parts there. */
    int parts = (int)((edges >> (W.graph == CR_GEN_RGG ? 24 : 20)) + 1);
    for (int k = 0; k < parts; k++) {
        cr_edge_list list = {0};
        if (cr_graph_generate(&gp, k, parts, &list, W.error, sizeof W.error))
            return -1;
        for (size_t e = 0; e < list.count; e++) {
            uint64_t u = list.edges[e].u, v = list.edges[e].v;
            if (u == v)
                continue;
            uint64_t to_u = packed_edge(u, v), to_v = packed_edge(v, u);
            W.lightest[u] = to_u < W.lightest[u] ? to_u : W.lightest[u];
            W.lightest[v] = to_v < W.lightest[v] ? to_v : W.lightest[v];
        }
        cr_graph_edges_free(&list);
    }
    for (uint64_t u = 0; u < n; u++)
        W.lightest[u] = W.lightest[u] == NO_EDGE ? u : (W.lightest[u] & UINT32_MAX);
    return 0;
}

/* Boruvka's first round as the thesis benchmarks it (section 5.4.1): from the
 * lightest edges, pointer doubling on the array under test; the roots go to W.root. */
static void run_boruvka(cr_comm *comm, void *user)
{
    (void)user;
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    uint64_t n = W.vertices_per_rank * (uint64_t)p;
    cr_darray_opts o = array_opts(p, CR_OP_LAST);
    cr_darray *a = cr_darray_create(comm, n, 8, &o);
    uint64_t first, count, *ptr = cr_darray_local(a, &first, &count);
    memcpy(ptr, W.lightest + first, count * 8);
    W.bad[me] = double_pointers(comm, a, ptr);
    memcpy(W.root + first, ptr, count * 8);
    cr_darray_stats_get(a, &W.stats[me]);
    cr_darray_destroy(a);
}

/* The roots are right when every vertex's root is a root and is its lightest
 * neighbour's root too: the components of the lightest-edge forest, each named by
 * one vertex. Returns the vertices where that fails. */
static uint64_t check_roots(uint64_t n)
{
    uint64_t bad = 0;
    for (uint64_t u = 0; u < n; u++) {
        uint64_t r = W.root[u];
        bad += r >= n || W.root[r] != r || W.root[W.lightest[u]] != r;
    }
    return bad;
}

/* The graph of the graph patterns (--generator), built on the virtual ranks; NULL (with
 * W.error set, the same on every rank) if the generator refuses the size. */
static cr_graph *build_graph(cr_comm *comm, cr_gen_params *gp)
{
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    gen_params(gp, W.vertices_per_rank * (uint64_t)p);
    cr_edge_list edges = {0};
    char err[256];
    if (cr_graph_generate(gp, me, p, &edges, err, sizeof err)) {
        snprintf(W.error, sizeof W.error, "%s", err);
        return NULL;
    }
    cr_graph *g = cr_graph_build(comm, &edges);
    cr_graph_edges_free(&edges);
    return g;
}

static void run_graph_pattern(cr_comm *comm, void *user)
{
    (void)user;
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    cr_gen_params gp;
    cr_graph *g = build_graph(comm, &gp);
    if (!g)
        return;
    cr_darray_opts o = array_opts(p, CR_OP_LAST);
    cr_darray *a = cr_darray_create(comm, cr_graph_vertices(g), 8, &o);
    W.bad[me] = W.pattern == 1 ? neighborhood(g, a) : doubling(comm, g, a);
    cr_darray_stats_get(a, &W.stats[me]);
    cr_darray_destroy(a);
    cr_graph_destroy(g);
}

/* The BFS's root: the first end of the first edge the generator makes (the same on
 * every rank, and never isolated). */
static uint64_t bfs_root(const cr_gen_params *gp)
{
    cr_edge_list first = {0};
    char err[256];
    if (cr_graph_generate(gp, 0, 1 << 20, &first, err, sizeof err) || first.count == 0) {
        cr_graph_edges_free(&first);
        return 0;
    }
    uint64_t root = first.edges[0].u;
    cr_graph_edges_free(&first);
    return root;
}

/* The level-synchronous BFS from one root on the mailbox, routed by the comm's route;
 * "none" sends one visit per remote neighbour (a bitmap of the visits sent), "hash"
 * merges the visits of one vertex wherever they meet (CR_BFS_LEVELS_DEDUP). Counts
 * what the search alone sends: the mailbox's statistics before and after it. */
static void run_bfs(cr_comm *comm, void *user)
{
    (void)user;
    int me = cr_comm_rank(comm);
    cr_gen_params gp;
    cr_graph *g = build_graph(comm, &gp);
    if (!g)
        return;
    uint64_t root = bfs_root(&gp);
    cr_bfs_opts o;
    cr_graph_bfs_opts_init(&o);
    o.algorithm = W.agg == 0 ? CR_BFS_LEVELS : CR_BFS_LEVELS_DEDUP;
    cr_stats before, after;
    cr_barrier(comm);
    cr_stats_get(comm, &before);
    cr_bfs_result res;
    cr_graph_bfs_run(g, &o, root, &res);
    cr_stats_get(comm, &after);
    W.stats[me].messages = after.mpi_sends - before.mpi_sends;
    W.stats[me].bytes = after.mpi_bytes_sent - before.mpi_bytes_sent;
    W.stats[me].reached_owner = after.msgs_handled - before.msgs_handled;
    char why[256];
    W.bad[me] = cr_graph_bfs_validate(g, root, res.parent, res.level, why, sizeof why);
    if (me == 0)
        W.reached = res.reached;
    cr_graph_bfs_result_free(&res);
    cr_graph_destroy(g);
}

/* The virtual ranks' configuration: the defaults, with the COURIER_* variables
 * applied (read once, in main). */
static cr_config base_config;

/* The configuration of one run: the base, with the route of a graph pattern run on
 * the mailbox (the BFS: the comm's own), or the hypercube for the darray's patterns,
 * which route inside the array: their counts are the array's own, and the comm's
 * route only carries the graph's construction, where the hypercube keeps log2 P
 * buffers per rank instead of P (all ranks live in this one process). */
static void route_config(int p, int route, bool comm_routes, cr_config *cfg)
{
    *cfg = base_config;
    char spec[128];
    if (!comm_routes)
        snprintf(spec, sizeof spec, "hypercube");
    else if (route == ROUTE_NLNR || route == ROUTE_AUTO)
        snprintf(spec, sizeof spec, "%s", route_names[route]), cfg->node_size = NLNR_NODE;
    else
        route_spec(route, p, spec, sizeof spec);
    char err[256];
    if (cr_route_parse(spec, &cfg->route, err, sizeof err)) {
        fprintf(stderr, "scale_model: %s\n", err);
        exit(1);
    }
}

typedef struct row {
    double msgs_max, msgs_mean, bytes_max, bytes_mean, reached_max, predicted;
    /* the model with local work: the busiest rank's time, and each phase's largest */
    double with_local, write, exchange, read;
} row;

/* Local work per record, from this run: every rank's timed work of a phase over
 * every rank's records of it (the mean cost on this machine, so that one rank's
 * page faults or a preemption do not decide the busiest rank). */
typedef struct local_costs {
    double write_ns, hop_ns, read_ns; /* per request queued, record reaching a hop,
                                         reply split */
} local_costs;

static local_costs measure_costs(int p)
{
    double t[3] = {0}, n[3] = {0};
    for (int r = 0; r < p; r++) {
        const cr_darray_stats *s = &W.stats[r];
        t[0] += (double)s->write_ns, n[0] += (double)s->requests;
        t[1] += (double)s->hop_ns, n[1] += (double)s->hop_records;
        t[2] += (double)s->read_ns, n[2] += (double)s->read_records;
    }
    return (local_costs){n[0] ? t[0] / n[0] : 0, n[1] ? t[1] / n[1] : 0, n[2] ? t[2] / n[2] : 0};
}

/* Two predictions per run. From the counts alone: per rank alpha per message, beta per
 * byte and gamma per request reaching it as the owner. With local work: alpha and beta
 * as before, and in place of gamma the product's own local work, each rank's records
 * of a phase at the cost per record measured in this run (measure_costs); per phase,
 * like the thesis's Figure 5.2: write (the source's aggregation), exchange (start-ups,
 * bytes and the merging at hops and owners), read (the split of replies). `dense`
 * charges every exchange as a dense all-to-all among its dimension's partners. */
static row model(int p, double alpha_us, double beta_ns, double gamma_ns, local_costs c,
                 bool dense)
{
    row w = {0};
    double busiest = 0;
    for (int r = 0; r < p; r++) {
        const cr_darray_stats *s = &W.stats[r];
        double m = (double)(dense ? s->alltoall_messages : s->messages), b = (double)s->bytes;
        w.msgs_max = m > w.msgs_max ? m : w.msgs_max;
        w.bytes_max = b > w.bytes_max ? b : w.bytes_max;
        w.msgs_mean += m / p, w.bytes_mean += b / p;
        double reached = (double)s->reached_owner;
        w.reached_max = reached > w.reached_max ? reached : w.reached_max;
        double net = alpha_us * 1e-6 * m + beta_ns * 1e-9 * b;
        double t = net + gamma_ns * 1e-9 * reached;
        busiest = t > busiest ? t : busiest;
        double write = 1e-9 * c.write_ns * (double)s->requests;
        double exchange = net + 1e-9 * c.hop_ns * (double)s->hop_records;
        double read = 1e-9 * c.read_ns * (double)s->read_records;
        w.write = write > w.write ? write : w.write;
        w.exchange = exchange > w.exchange ? exchange : w.exchange;
        w.read = read > w.read ? read : w.read;
        double all = write + exchange + read;
        w.with_local = all > w.with_local ? all : w.with_local;
    }
    w.predicted = busiest;
    return w;
}

/* The boruvka pattern's lightest edges for P ranks, once for all its runs. */
static void lightest_edges(const app *a, int p)
{
    uint64_t n = W.vertices_per_rank * (uint64_t)p;
    W.lightest = app_calloc(a, n, 8, "the lightest edges (8 bytes per vertex)");
    W.root = app_calloc(a, n, 8, "the roots (8 bytes per vertex)");
    double started = wall_seconds();
    if (find_lightest(n))
        app_error(a, "boruvka, P=%d: %s", p, W.error);
    fprintf(stderr, "scale_model: boruvka, P=%d: the lightest edges of %llu vertices in %.1f s\n",
            p, (unsigned long long)n, wall_seconds() - started);
}

/* What the command line asked for. */
typedef struct model_opts {
    uint64_t ranks[16], entries, vpr;
    int nranks;
    double alpha, beta, gamma, edgefactor;
    int use_route[NROUTES], use_agg[4], use_pattern[NPAT];
    bool dense;
    app_shared sh; /* the common flags */
} model_opts;

/* --route, --aggregation, --patterns: a comma list of names into use[]. */
static void parse_names(const app *a, int ch, const char *value, model_opts *o)
{
    const char *const *names = ch == 'R' ? route_names : ch == 'A' ? agg_names : pattern_names;
    int *use = ch == 'R' ? o->use_route : ch == 'A' ? o->use_agg : o->use_pattern;
    const char *flag = ch == 'R' ? "--route" : ch == 'A' ? "--aggregation" : "--patterns";
    memset(use, 0, (size_t)(ch == 'R' ? NROUTES : ch == 'A' ? 4 : NPAT) * sizeof *use);
    char *list = xcalloc(strlen(value) + 1, 1), *save = NULL;
    strcpy(list, value);
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
        use[app_parse_choice(a, flag, t, names)] = 1;
    free(list);
}

static void parse_options(app *a, int argc, char **argv, model_opts *o)
{
    *o = (model_opts){.ranks = {64, 256, 1024, 4096}, .nranks = 4, .entries = 256,
                      .vpr = 1024, .alpha = 2, .beta = 0.1, .gamma = 10, .edgefactor = 16,
                      .use_route = {1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0}, .use_agg = {1, 1, 1, 0},
                      .use_pattern = {1, 0, 0, 0, 0}};
    app_shared_init(&o->sh);
    static const char *const exchange_names[] = {"sparse", "dense", NULL};
    static const struct option opts[] = {
        {"ranks", required_argument, 0, 'P'},   {"entries", required_argument, 0, 'e'},
        {"route", required_argument, 0, 'R'},   {"aggregation", required_argument, 0, 'A'},
        {"alpha", required_argument, 0, 'a'},   {"beta", required_argument, 0, 'b'},
        {"gamma", required_argument, 0, 'g'},
        {"patterns", required_argument, 0, 'T'}, {"vertices-per-rank", required_argument, 0, 'v'},
        {"edgefactor", required_argument, 0, 'E'}, {"generator", required_argument, 0, 'G'},
        {"exchanges", required_argument, 0, 'X'}, APP_LONG_COMMON, {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'P':
            o->nranks = app_parse_list(a, "--ranks", optarg, 1, 65536, o->ranks, 16);
            for (int k = 0; k < o->nranks; k++)
                if (o->ranks[k] & (o->ranks[k] - 1))
                    app_usage_error(a, "--ranks %llu is not a power of two (the 3D grid "
                                    "and the hypercube need one)", (unsigned long long)o->ranks[k]);
            break;
        case 'e': o->entries = app_parse_u64(a, "--entries", optarg, 1, 1u << 24); break;
        case 'R':
        case 'A':
        case 'T': parse_names(a, ch, optarg, o); break;
        case 'v': o->vpr = app_parse_u64(a, "--vertices-per-rank", optarg, 1, 1u << 24); break;
        case 'E': o->edgefactor = (double)app_parse_u64(a, "--edgefactor", optarg, 1, 1024); break;
        case 'G': W.graph = (cr_gen_kind)app_parse_choice(a, "--generator", optarg, graph_names); break;
        case 'a': o->alpha = app_parse_double(a, "--alpha", optarg, 0, 1e6); break;
        case 'b': o->beta = app_parse_double(a, "--beta", optarg, 0, 1e6); break;
        case 'g': o->gamma = app_parse_double(a, "--gamma", optarg, 0, 1e6); break;
        case 'X': o->dense = app_parse_choice(a, "--exchanges", optarg, exchange_names) == 1; break;
        default: app_other_option(a, ch, optarg, &o->sh, argv);
        }
    }
    app_no_operands(a, argc, argv);
}

/* What the patterns cannot run, refused before anything runs; the base configuration
 * from the environment. */
static void check_options(const app *a, const model_opts *o)
{
    if (o->use_pattern[PAT_BORUVKA]) {
        if (o->vpr & (o->vpr - 1))
            app_usage_error(a, "--vertices-per-rank %llu is not a power of two (boruvka "
                            "generates 2^k vertices)", (unsigned long long)o->vpr);
        for (int k = 0; k < o->nranks; k++)
            if (o->vpr * o->ranks[k] > ((uint64_t)1 << 32))
                app_usage_error(a, "boruvka at %llu ranks: %llu vertices, more than the 2^32 "
                                "its packed edges can name", (unsigned long long)o->ranks[k],
                                (unsigned long long)(o->vpr * o->ranks[k]));
    }
    for (int route = ROUTE_SHAPES; route < NROUTES; route++)
        for (int k = 0; k < o->nranks && o->use_route[route]; k++) {
            char why[160];
            if (app_shape_spec(route_names[route], (int)o->ranks[k], why, sizeof why))
                app_usage_error(a, "--route: %s", why);
        }
    app_require_one_process(a, "runs its virtual ranks");
    char cfg_err[256];
    cr_config_init(&base_config);
    if (cr_config_from_env(&base_config, cfg_err, sizeof cfg_err))
        app_usage_error(a, "%s", cfg_err);
}

static void print_header(const model_opts *o)
{
    static const char *const graph_titles[] = {"R-MAT", "GNM", "RGG"};
    printf("overload: every rank reads and adds to each of rank 0's %llu indices; "
           "neighborhood, doubling, bfs, boruvka: %s, %llu vertices per rank, edge factor %g;\n"
           "alpha %g us, beta %g ns/B, gamma %g ns; exchanges charged %s\n\n",
           (unsigned long long)o->entries, graph_titles[W.graph], (unsigned long long)o->vpr,
           o->edgefactor, o->alpha, o->beta, o->gamma, o->dense ? "as dense all-to-alls" : "sparse");
    printf("| pattern | P | route | aggregation | messages max | mean | KiB max | mean | "
           "requests reaching the busiest owner | predicted ms | vs direct none | "
           "with local work: write ms | exchange ms | read ms | total ms | vs direct none |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
}

/* The baselines the rows are compared with: direct without aggregation. */
typedef struct baseline {
    double predicted, with_local;
} baseline;

/* The route column: the route's name; for the darray's patterns under auto, what
 * rank 0's steps ran ("auto: hypercube 2", or several). */
static void route_label(int route, int pat, char *label, size_t len)
{
    int at = snprintf(label, len, "%s", route_names[route]);
    if (route != ROUTE_AUTO || pat == PAT_BFS)
        return;
    const char *sep = ":";
    for (int k = 0; k < CR_DARRAY_AUTO_ROUTES; k++)
        if (W.stats[0].auto_routes[k] && at > 0 && (size_t)at < len) {
            at += snprintf(label + at, len - (size_t)at, "%s %s %llu", sep,
                           cr_darray_auto_route_names[k],
                           (unsigned long long)W.stats[0].auto_routes[k]);
            sep = ",";
        }
}

/* One configuration (pattern, P, route, aggregation) simulated, checked and printed
 * as a table row and a CSV line. Returns whether it read wrong values. */
static int run_config(const app *a, const model_opts *o, FILE *out, int pat, int p, int route,
                      int agg, baseline *base)
{
    W.route = route, W.agg = agg;
    memset(W.stats, 0, (size_t)p * sizeof *W.stats);
    memset(W.bad, 0, (size_t)p * sizeof *W.bad);
    W.error[0] = 0;
    cr_config cfg;
    route_config(p, route, pat == PAT_BFS, &cfg);
    /* the simulated machine charges what the model does: auto chooses with it */
    cr_sim_opts so = {.ranks = p, .seed = 1, .cfg = &cfg, .message_cost = o->alpha * 1e-6,
                      .byte_cost = o->beta * 1e-9, .record_cost = o->gamma * 1e-9};
    char err[256];
    cr_sim_rank_fn fn = pat == PAT_OVERLOAD ? run_overload
                      : pat == PAT_BFS      ? run_bfs
                      : pat == PAT_BORUVKA  ? run_boruvka
                                            : run_graph_pattern;
    double started = wall_seconds();
    if (cr_sim_run(&so, fn, NULL, NULL, err, sizeof err))
        app_error(a, "%s, P=%d, %s, %s: %s", pattern_names[pat], p, route_names[route],
                  agg_names[agg], err);
    if (W.error[0])
        app_error(a, "%s, P=%d: %s", pattern_names[pat], p, W.error);
    uint64_t bad = 0;
    for (int r = 0; r < p; r++)
        bad += W.bad[r];
    if (pat == PAT_BORUVKA)
        bad += check_roots(W.vertices_per_rank * (uint64_t)p);
    local_costs lc = measure_costs(p);
    bool charge_dense = o->dense && pat != PAT_BFS; /* the BFS's are the mailbox's */
    row w = model(p, o->alpha, o->beta, o->gamma, lc, charge_dense);
    if (route == 0 && agg == 0)
        base->predicted = w.predicted, base->with_local = w.with_local;
    char ratio[32] = "-", ratio_local[32] = "-";
    if (base->predicted > 0)
        snprintf(ratio, sizeof ratio, "%.2f", base->predicted / w.predicted);
    if (base->with_local > 0 && pat != PAT_BFS)
        snprintf(ratio_local, sizeof ratio_local, "%.2f", base->with_local / w.with_local);
    if (pat == PAT_BFS) /* its counts are the mailbox's, not the array's */
        w.write = w.exchange = w.read = w.with_local = 0;
    char label[96];
    route_label(route, pat, label, sizeof label);
    printf("| %s | %d | %s | %s | %.0f | %.1f | %.1f | %.1f | %.0f | %.3f | %s | "
           "%.3f | %.3f | %.3f | %.3f | %s |%s\n",
           pattern_names[pat], p, label, agg_names[agg], w.msgs_max, w.msgs_mean,
           w.bytes_max / 1024, w.bytes_mean / 1024, w.reached_max, w.predicted * 1e3, ratio,
           w.write * 1e3, w.exchange * 1e3, w.read * 1e3, w.with_local * 1e3, ratio_local,
           bad ? " WRONG" : "");
    if (out)
        fprintf(out, "%s,%d,%llu,%s,%s,%.0f,%.2f,%.0f,%.1f,%.0f,%.6f,%s,%.6f,%.6f,"
                "%.6f,%.6f,%.2f,%.2f,%.2f,%s,%s\n",
                pattern_names[pat], p, (unsigned long long)(pat ? o->vpr : o->entries),
                route_names[route], agg_names[agg], w.msgs_max, w.msgs_mean, w.bytes_max,
                w.bytes_mean, w.reached_max, w.predicted, bad ? "no" : "yes", w.write,
                w.exchange, w.read, w.with_local, lc.write_ns, lc.hop_ns, lc.read_ns,
                pat ? graph_names[W.graph] : "-", charge_dense ? "dense" : "sparse");
    if (!o->sh.quiet)
        fprintf(stderr, "scale_model: %s, P=%d, %s, %s: simulated in %.1f s\n",
                pattern_names[pat], p, route_names[route], agg_names[agg],
                wall_seconds() - started);
    fflush(stdout);
    return bad != 0;
}

/* Every route and aggregation asked for, for one pattern at P virtual ranks. Returns
 * the runs that read wrong values. */
static int run_pattern(const app *a, const model_opts *o, FILE *out, int pat, int p)
{
    W.pattern = pat;
    W.stats = app_calloc(a, (size_t)p, sizeof *W.stats, "the ranks' statistics");
    W.bad = app_calloc(a, (size_t)p, sizeof *W.bad, "the ranks' checks");
    W.changed[0] = app_calloc(a, (size_t)p, 1, "the ranks' flags");
    W.changed[1] = app_calloc(a, (size_t)p, 1, "the ranks' flags");
    if (pat == PAT_BORUVKA)
        lightest_edges(a, p);
    baseline base = {0, 0};
    int failed = 0;
    for (int route = 0; route < NROUTES; route++)
        for (int agg = 0; agg < 4; agg++) {
            if (!o->use_route[route] || !o->use_agg[agg])
                continue;
            if (pat == PAT_BFS && agg == 2)
                continue; /* the BFS merges by hashing only: "hash" */
            if (pat != PAT_BFS && route == ROUTE_NLNR)
                continue; /* the lock-step grid has no node-aware stage */
            failed += run_config(a, o, out, pat, p, route, agg, &base);
        }
    free(W.stats), free(W.bad), free(W.changed[0]), free(W.changed[1]);
    free(W.lightest), free(W.root);
    W.lightest = W.root = NULL;
    return failed;
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "scale_model", usage, &argc, &argv);
    model_opts o;
    parse_options(&a, argc, argv, &o);
    check_options(&a, &o);
    FILE *out = app_open_csv(&a, o.sh.csv, "pattern,ranks,entries,route,aggregation,msgs_max,"
                             "msgs_mean,bytes_max,bytes_mean,reached_owner_max,predicted_s,"
                             "verified,write_s,exchange_s,read_s,with_local_s,write_ns_per_request,"
                             "hop_ns_per_record,read_ns_per_reply,graph,exchanges");
    print_header(&o);
    W.entries = o.entries, W.vertices_per_rank = o.vpr, W.edgefactor = o.edgefactor;
    int failed = 0;
    for (int pat = 0; pat < NPAT; pat++)
        for (int k = 0; k < o.nranks && o.use_pattern[pat]; k++)
            failed += run_pattern(&a, &o, out, pat, (int)o.ranks[k]);
    if (out)
        fclose(out);
    if (failed)
        fprintf(stderr, "scale_model: %d runs read wrong values\n", failed);
    MPI_Finalize();
    return failed ? 1 : 0;
}
