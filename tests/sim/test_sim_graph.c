/* The graph apps' algorithms on the simulated transport, at up to 256 virtual ranks
 * under several routes and many scheduler seeds, on random multigraphs with ties,
 * self-loops, parallel edges and isolated vertices:
 *  - the minimum spanning forest (cr_graph_msf: the filtering form, merged all the
 *    way, merged part of the way and then Boruvka's rounds, and Boruvka's rounds
 *    alone): exactly the forest and the components of a sequential Kruskal;
 *  - connected components (cr_graph_cc_with: the default, and label propagation): every label
 *    the smallest id of its component, as a sequential union-find gives it;
 *  - the BFS (src/graph/bfs.c, level-synchronous, merged, label-correcting and
 *    direction-optimizing): every level as a sequential BFS gives it, and the counts
 *    it sums by the transport's reductions (reached, edges, levels) equal the
 *    sequential ones.
 * The lock-step forms (the forest's Boruvka rounds, SV components) run too: their
 * darray steps and the hybrid BFS's allgather move on the transport's channels. */
#include "components.h"
#include "reference.h"

#include <courier.h>
#include <courier/sim.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <math.h>

static char ctx[160];

static int seeds_wanted(void)
{
    const char *s = getenv("SIM_SEEDS");
    return s && atoi(s) > 0 ? atoi(s) : 20;
}

/* The largest P a test runs at: SIM_MAX_P, or no limit. The sanitizer build sets
 * it, since each step there costs several times more. */
static int largest_p(void)
{
    const char *s = getenv("SIM_MAX_P");
    return s && atoi(s) > 0 ? atoi(s) : 1 << 20;
}

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---- the graph, known to every virtual rank; rank r holds edges j = r mod P ---- */

typedef struct sim_edge {
    uint64_t a, b;
    uint32_t w; /* the float weight's bits (weights >= 0: ordered as the weights) */
    uint64_t id;
} sim_edge;

typedef struct graph {
    uint64_t n, m;
    sim_edge *edges; /* id = index */
} graph;

/* n vertices (the last few isolated), m edges among the rest, weights in eighths
 * (many ties), one edge in 16 a self-loop, one in 8 a copy of an earlier edge with
 * another weight. */
static graph make_graph(uint64_t n, uint64_t m, uint64_t seed)
{
    graph g = {n, m, calloc(m, sizeof(sim_edge))};
    uint64_t s = seed, used = n - 3;
    for (uint64_t j = 0; j < m; j++) {
        uint64_t r = splitmix(&s);
        uint64_t a = r % used, b = (r >> 20) % used;
        if (j % 16 == 5)
            b = a;
        if (j % 8 == 3 && j > 0) {
            const sim_edge *old = &g.edges[(r >> 40) % j];
            a = old->b, b = old->a;
        }
        float w = (float)((r >> 50) % 8) / 8.0f;
        uint32_t bits;
        memcpy(&bits, &w, sizeof bits);
        g.edges[j] = (sim_edge){a, b, bits, j};
    }
    return g;
}

/* ---- what the virtual ranks found ---- */

typedef struct result {
    const graph *g;
    cr_msf_algorithm algorithm;
    uint64_t gather_limit;
    uint64_t *label;      /* n: every vertex's component root */
    uint8_t *in_forest;   /* m: edge ids the ranks put in the forest */
    uint64_t forest_edges, duplicates;
} result;

/* Hand each rank's edges over in descending id order (the library's path for ids
 * that do not ascend with the position). */
static bool reverse_lists;

static void run_msf(cr_comm *comm, void *user)
{
    result *res = user;
    const graph *g = res->g;
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    cr_edge_list list = {.edges = calloc(g->m / (uint64_t)p + 1, sizeof(cr_edge)),
                         .weights = calloc(g->m / (uint64_t)p + 1, sizeof(float))};
    uint64_t *ids = calloc(g->m / (uint64_t)p + 1, 8);
    for (uint64_t j = (uint64_t)me; j < g->m; j += (uint64_t)p) {
        list.edges[list.count] = (cr_edge){g->edges[j].a, g->edges[j].b};
        memcpy(&list.weights[list.count], &g->edges[j].w, 4);
        ids[list.count++] = g->edges[j].id;
    }
    for (size_t k = 0; reverse_lists && k < list.count / 2; k++) {
        size_t o = list.count - 1 - k;
        cr_edge e = list.edges[k];
        float w = list.weights[k];
        uint64_t id = ids[k];
        list.edges[k] = list.edges[o], list.weights[k] = list.weights[o], ids[k] = ids[o];
        list.edges[o] = e, list.weights[o] = w, ids[o] = id;
    }
    list.nvertices = g->n; /* the last vertices are isolated */
    cr_msf_opts o;
    cr_graph_msf_opts_init(&o);
    o.algorithm = res->algorithm;
    o.gather_limit = res->gather_limit;
    cr_msf_result f;
    char err[200];
    if (cr_graph_msf(comm, &list, ids, &o, &f, err, sizeof err))
        res->duplicates += 1000000; /* reported as differences */
    memcpy(&res->label[f.first], f.label, f.count * 8);
    for (size_t k = 0; k < f.nforest; k++) {
        res->duplicates += res->in_forest[f.forest[k]];
        res->in_forest[f.forest[k]] = 1;
    }
    res->forest_edges += f.nforest;
    cr_graph_msf_result_free(&f);
    free(list.edges), free(list.weights), free(ids);
}

/* ---- Kruskal on the same edges ---- */

static const sim_edge *sorting;

static int by_weight_then_id(const void *x, const void *y)
{
    const sim_edge *p = &sorting[*(const uint64_t *)x], *q = &sorting[*(const uint64_t *)y];
    if (p->w != q->w)
        return p->w < q->w ? -1 : 1;
    return (p->id > q->id) - (p->id < q->id);
}

/* Compares with Kruskal; returns the number of differences (0: the same forest
 * edges, and labels that partition the vertices as Kruskal's components do, each
 * label a vertex of its component labelled with itself). */
static uint64_t compare(const graph *g, const result *res)
{
    uint64_t *order = calloc(g->m, 8), *uf = calloc(g->n, 8), bad = res->duplicates;
    for (uint64_t j = 0; j < g->m; j++)
        order[j] = j;
    sorting = g->edges;
    qsort(order, g->m, 8, by_weight_then_id);
    for (uint64_t v = 0; v < g->n; v++)
        uf[v] = v;
    uint64_t kruskal = 0;
    for (uint64_t k = 0; k < g->m; k++) {
        const sim_edge *e = &g->edges[order[k]];
        uint64_t x = app_uf_find(uf, e->a), y = app_uf_find(uf, e->b);
        int joins = x != y;
        if (joins)
            uf[x] = y, kruskal++;
        bad += joins != res->in_forest[e->id];
    }
    bad += kruskal != res->forest_edges;
    for (uint64_t v = 0; v < g->n; v++) {
        uint64_t l = res->label[v];
        bad += l >= g->n || res->label[l] != l || app_uf_find(uf, l) != app_uf_find(uf, v);
    }
    free(order), free(uf);
    return bad;
}

/* The virtual ranks' configuration in every test here: the route, nodes of 2 (so
 * nlnr has several nodes at small P), and small buffers (many sends). */
static void sim_config(cr_config *cfg, const char *route)
{
    cr_config_init(cfg);
    cr_route_parse(route, &cfg->route, NULL, 0);
    cfg->node_size = 2;
    cfg->buffer_bytes = 256;
}

static const char *const algorithm_names[] = {"filter", "Boruvka async", "lock-step"};

static void run_at(int p, const char *route, uint64_t seed, uint64_t n, uint64_t m,
                   cr_msf_algorithm algorithm, uint64_t gather_limit)
{
    graph g = make_graph(n, m, seed);
    result res = {&g, algorithm, gather_limit, calloc(n, 8), calloc(m, 1), 0, 0};
    cr_config cfg;
    sim_config(&cfg, route);
    cr_sim_opts o = {.ranks = p, .seed = seed, .cfg = &cfg};
    char err[256];
    snprintf(ctx, sizeof ctx, "%s (gather limit %llu), P=%d, %s, seed %llu, %llu vertices, "
             "%llu edges", algorithm_names[algorithm], (unsigned long long)gather_limit, p,
             route, (unsigned long long)seed, (unsigned long long)n, (unsigned long long)m);
    if (cr_sim_run(&o, run_msf, &res, NULL, err, sizeof err))
        fail_msg("%s: %s", ctx, err);
    uint64_t bad = compare(&g, &res);
    if (bad)
        fail_msg("%s: %llu differences from Kruskal", ctx, (unsigned long long)bad);
    free(res.label), free(res.in_forest), free(g.edges);
}

/* Boruvka's rounds in lock-step darray steps (the darray thesis's benchmark). */
static void test_msf_lockstep(void **state)
{
    (void)state;
    static const char *const routes[] = {"direct", "grid", "hypercube"};
    static const int ps[] = {1, 2, 3, 5, 8, 17, 64};
    int seeds = seeds_wanted() < 3 ? seeds_wanted() : 3;
    for (size_t rt = 0; rt < 3; rt++)
        for (size_t k = 0; k < sizeof ps / sizeof ps[0] && ps[k] <= largest_p(); k++)
            for (int seed = 1; seed <= seeds; seed++)
                run_at(ps[k], routes[rt], (uint64_t)seed * 109 + (uint64_t)ps[k], 200, 600,
                       CR_MSF_LOCKSTEP, 0);
}

static void test_msf_async(void **state)
{
    (void)state;
    static const char *const routes[] = {"direct", "nlnr", "hypercube"};
    static const int ps[] = {1, 2, 3, 5, 8, 17, 64};
    int seeds = seeds_wanted() < 8 ? seeds_wanted() : 8;
    for (size_t rt = 0; rt < 3; rt++)
        for (size_t k = 0; k < sizeof ps / sizeof ps[0] && ps[k] <= largest_p(); k++)
            for (int seed = 1; seed <= seeds; seed++)
                run_at(ps[k], routes[rt], (uint64_t)seed * 101 + (uint64_t)ps[k], 200, 600,
                       CR_MSF_BORUVKA, 0);
    for (int seed = 1; seed <= (seeds < 2 ? seeds : 2) && 256 <= largest_p(); seed++) {
        /* sparse: many rounds */
        run_at(256, "hypercube", (uint64_t)seed * 7919, 2000, 2400, CR_MSF_BORUVKA, 0);
        run_at(256, "nlnr", (uint64_t)seed * 7927, 2000, 2400, CR_MSF_BORUVKA, 0);
    }
}

/* The filtering form: merged to one rank (no limit), merged part of the way (a limit
 * that a few levels reach: Boruvka's rounds finish on the merged forests), and not
 * merged at all (limit 0: Boruvka's rounds on the filtered edges); with each rank's
 * ids ascending and descending. */
static void test_msf_filter(void **state)
{
    (void)state;
    static const char *const routes[] = {"direct", "nlnr", "hypercube"};
    static const int ps[] = {1, 2, 3, 5, 8, 17, 64};
    static const uint64_t limits[] = {UINT64_MAX, 300, 0};
    int seeds = seeds_wanted() < 6 ? seeds_wanted() : 6;
    for (size_t rt = 0; rt < 3; rt++)
        for (size_t k = 0; k < sizeof ps / sizeof ps[0] && ps[k] <= largest_p(); k++)
            for (size_t l = 0; l < 3; l++)
                for (int seed = 1; seed <= seeds; seed++)
                    run_at(ps[k], routes[rt], (uint64_t)seed * 103 + (uint64_t)ps[k], 200, 600,
                           CR_MSF_FILTER, limits[l]);
    for (int seed = 1; seed <= (seeds < 2 ? seeds : 2) && 256 <= largest_p(); seed++) {
        run_at(256, "hypercube", (uint64_t)seed * 7919, 2000, 2400, CR_MSF_FILTER, UINT64_MAX);
        run_at(256, "nlnr", (uint64_t)seed * 7927, 2000, 2400, CR_MSF_FILTER, 600);
    }
    reverse_lists = true;
    for (size_t k = 0; k < sizeof ps / sizeof ps[0] && ps[k] <= largest_p(); k++)
        for (size_t l = 0; l < 3; l++)
            for (int seed = 1; seed <= seeds; seed++)
                run_at(ps[k], "direct", (uint64_t)seed * 107 + (uint64_t)ps[k], 200, 600,
                       CR_MSF_FILTER, limits[l]);
    reverse_lists = false;
}

/* The whole graph as adjacency lists (both directions), and a block distribution. */
typedef struct csr {
    uint64_t n, *offset, *target;
    int p;
} csr;

static csr make_csr(const graph *g, int p)
{
    csr c = {g->n, calloc(g->n + 1, 8), calloc(2 * g->m + 1, 8), p};
    uint64_t *fill = calloc(g->n + 1, 8);
    for (uint64_t j = 0; j < g->m; j++)
        c.offset[g->edges[j].a + 1]++, c.offset[g->edges[j].b + 1]++;
    for (uint64_t v = 0; v < g->n; v++)
        c.offset[v + 1] += c.offset[v];
    for (uint64_t j = 0; j < g->m; j++) {
        uint64_t a = g->edges[j].a, b = g->edges[j].b;
        c.target[c.offset[a] + fill[a]++] = b;
        c.target[c.offset[b] + fill[b]++] = a;
    }
    free(fill);
    return c;
}


/* ---- connected components ---- */

typedef struct cc_result {
    uint64_t *label; /* n */
} cc_result;

/* The distributed graph of g: virtual rank r contributes edges r, r + P, ... */
static cr_graph *build_share(cr_comm *comm, const graph *g)
{
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    cr_edge_list local = {.nvertices = g->n};
    local.cap = g->m / (uint64_t)p + 1;
    local.edges = calloc(local.cap, sizeof *local.edges);
    for (uint64_t j = (uint64_t)me; j < g->m; j += (uint64_t)p)
        local.edges[local.count++] = (cr_edge){g->edges[j].a, g->edges[j].b};
    cr_graph *cg = cr_graph_build(comm, &local);
    cr_graph_edges_free(&local);
    return cg;
}

/* cr_graph_cc_with on a virtual rank's share: the default (local union-find, then
 * cut edges) or label propagation. */
static const graph *cc_graph;
static cr_cc_algorithm cc_algorithm;
static bool cc_sv; /* run_cc_at_with runs SV instead */

static void run_cc(cr_comm *comm, void *user)
{
    cc_result *res = user;
    cr_graph *cg = build_share(comm, cc_graph);
    uint64_t first = cr_graph_first(cg), count = cr_graph_local_count(cg);
    uint64_t *label = malloc((count + 1) * 8);
    memset(label, 0x5a, (count + 1) * 8); /* what label holds before the call must not matter */
    cr_cc_opts o;
    cr_graph_cc_opts_init(&o);
    o.algorithm = cc_algorithm;
    cr_graph_cc_with(cg, &o, label, NULL);
    memcpy(&res->label[first], label, count * 8);
    free(label);
    cr_barrier(comm);
    cr_graph_destroy(cg);
}

static void run_cc_at_with(int p, const char *route, uint64_t seed, uint64_t n, uint64_t m,
                           bool local)
{
    graph g = make_graph(n, m, seed);
    cc_result res = {calloc(n, 8)};
    cr_config cfg;
    sim_config(&cfg, route);
    cr_sim_opts o = {.ranks = p, .seed = seed, .cfg = &cfg};
    char err[256];
    snprintf(ctx, sizeof ctx, "CC %s, P=%d, %s, seed %llu, %llu vertices, %llu edges",
             cc_sv ? "SV" : local ? "cr_graph_cc" : "label propagation", p, route, (unsigned long long)seed,
             (unsigned long long)n, (unsigned long long)m);
    cc_graph = &g;
    cc_algorithm = cc_sv ? CR_CC_SV : local ? CR_CC_LOCAL : CR_CC_LABEL;
    if (cr_sim_run(&o, run_cc, &res, NULL, err, sizeof err))
        fail_msg("%s: %s", ctx, err);
    uint64_t *uf = calloc(n, 8), bad = 0;
    for (uint64_t v = 0; v < n; v++)
        uf[v] = v;
    for (uint64_t j = 0; j < m; j++) { /* the smaller root stays: the component's minimum */
        uint64_t x = app_uf_find(uf, g.edges[j].a), y = app_uf_find(uf, g.edges[j].b);
        if (x != y)
            x < y ? (uf[y] = x) : (uf[x] = y);
    }
    for (uint64_t v = 0; v < n; v++)
        bad += res.label[v] != app_uf_find(uf, v);
    if (bad)
        fail_msg("%s: %llu vertices without their component's smallest id", ctx,
                 (unsigned long long)bad);
    free(uf), free(res.label), free(g.edges);
}

static void run_cc_at(int p, const char *route, uint64_t seed, uint64_t n, uint64_t m)
{
    run_cc_at_with(p, route, seed, n, m, false);
}

/* cr_graph_cc on sparse graphs (many small components, cut edges between them) and
 * dense ones (a giant component per rank, joined by few edges). */
static void test_cc_local(void **state)
{
    (void)state;
    static const char *const routes[] = {"direct", "nlnr", "hypercube"};
    static const int ps[] = {1, 2, 3, 5, 8, 17, 64, 256};
    int seeds = seeds_wanted() < 3 ? seeds_wanted() : 3;
    for (size_t rt = 0; rt < 3; rt++)
        for (size_t k = 0; k < sizeof ps / sizeof ps[0] && ps[k] <= largest_p(); k++)
            for (int seed = 1; seed <= seeds; seed++) {
                uint64_t n = ps[k] >= 64 ? 1000 : 200, s = (uint64_t)seed * 211 + (uint64_t)ps[k];
                run_cc_at_with(ps[k], routes[rt], s, n, n / 2, true);
                run_cc_at_with(ps[k], routes[rt], s + 1, n, n + n / 2, true);
                if (ps[k] <= 17)
                    run_cc_at_with(ps[k], routes[rt], s + 2, n, 8 * n, true);
            }
}

/* SV: pointer jumping in lock-step darray steps. */
static void test_cc_sv(void **state)
{
    (void)state;
    static const char *const routes[] = {"direct", "grid", "hypercube"};
    static const int ps[] = {1, 2, 3, 5, 8, 17, 64};
    int seeds = seeds_wanted() < 3 ? seeds_wanted() : 3;
    cc_sv = true;
    for (size_t rt = 0; rt < 3; rt++)
        for (size_t k = 0; k < sizeof ps / sizeof ps[0] && ps[k] <= largest_p(); k++)
            for (int seed = 1; seed <= seeds; seed++)
                run_cc_at(ps[k], routes[rt], (uint64_t)seed * 113 + (uint64_t)ps[k], 200, 300);
    cc_sv = false;
}

static void test_cc_label(void **state)
{
    (void)state;
    static const char *const routes[] = {"direct", "nlnr", "hypercube"};
    static const int ps[] = {1, 2, 3, 5, 8, 17, 64, 256};
    int seeds = seeds_wanted() < 8 ? seeds_wanted() : 8;
    for (size_t rt = 0; rt < 3; rt++)
        for (size_t k = 0; k < sizeof ps / sizeof ps[0] && ps[k] <= largest_p(); k++)
            for (int seed = 1; seed <= seeds; seed++)
                run_cc_at(ps[k], routes[rt], (uint64_t)seed * 103 + (uint64_t)ps[k],
                          ps[k] >= 64 ? 2000 : 200, ps[k] >= 64 ? 2400 : 300);
}

/* ---- the BFS, whose sums are the simulated transport's reductions ---- */

typedef struct bfs_case {
    const graph *g;
    cr_bfs_algorithm algorithm;
    uint64_t root;
    int32_t *level;   /* n: what the virtual ranks found */
    uint64_t reached, edges, levels, invalid, disagree;
} bfs_case;

static void run_bfs(cr_comm *comm, void *user)
{
    bfs_case *bc = user;
    const graph *g = bc->g;
    int me = cr_comm_rank(comm);
    cr_graph *cg = build_share(comm, g);
    cr_bfs_opts o;
    cr_graph_bfs_opts_init(&o);
    o.algorithm = bc->algorithm;
    cr_bfs_result res;
    cr_graph_bfs_run(cg, &o, bc->root, &res);
    uint64_t first = cr_graph_first(cg), count = cr_graph_local_count(cg);
    memcpy(&bc->level[first], res.level, count * sizeof *res.level);
    /* Every rank must get the same sums: rank 0 keeps its own before the collective
     * validation, the others compare theirs after it. */
    if (me == 0)
        bc->reached = res.reached, bc->edges = res.edges, bc->levels = (uint64_t)res.levels;
    char why[256];
    uint64_t bad = cr_graph_bfs_validate(cg, bc->root, res.parent, res.level, why, sizeof why);
    if (me == 0)
        bc->invalid = bad;
    else
        bc->disagree += res.reached != bc->reached || res.edges != bc->edges ||
                        (uint64_t)res.levels != bc->levels;
    cr_graph_bfs_result_free(&res);
    cr_graph_destroy(cg);
}

/* The sequential BFS: levels (-1 unreached), and the Graph500 counts. */
static void sequential_bfs(const graph *g, uint64_t root, int32_t *level, uint64_t *reached,
                           uint64_t *edges, uint64_t *levels)
{
    csr c = make_csr(g, 1);
    uint64_t *queue = calloc(g->n, 8), head = 0, tail = 0;
    for (uint64_t v = 0; v < g->n; v++)
        level[v] = -1;
    level[root] = 0;
    queue[tail++] = root;
    while (head < tail) {
        uint64_t u = queue[head++];
        for (uint64_t k = c.offset[u]; k < c.offset[u + 1]; k++)
            if (level[c.target[k]] < 0) {
                level[c.target[k]] = level[u] + 1;
                queue[tail++] = c.target[k];
            }
    }
    *reached = tail;
    *levels = (uint64_t)level[queue[tail - 1]] + 1;
    *edges = 0;
    for (uint64_t j = 0; j < g->m; j++) /* Graph500: the component's edges, no self-loops */
        *edges += level[g->edges[j].a] >= 0 && g->edges[j].a != g->edges[j].b;
    free(queue), free(c.offset), free(c.target);
}

static void run_bfs_at(int p, const char *route, cr_bfs_algorithm algorithm, uint64_t seed,
                       uint64_t n, uint64_t m)
{
    graph g = make_graph(n, m, seed);
    bfs_case bc = {&g, algorithm, g.edges[0].a, calloc(n, sizeof(int32_t)), 0, 0, 0, 0, 0};
    cr_config cfg;
    sim_config(&cfg, route);
    cr_sim_opts o = {.ranks = p, .seed = seed, .cfg = &cfg};
    char err[256];
    snprintf(ctx, sizeof ctx, "BFS (algorithm %d), P=%d, %s, seed %llu, %llu vertices",
             (int)algorithm, p, route, (unsigned long long)seed, (unsigned long long)n);
    if (cr_sim_run(&o, run_bfs, &bc, NULL, err, sizeof err))
        fail_msg("%s: %s", ctx, err);
    int32_t *want = calloc(n, sizeof(int32_t));
    uint64_t reached, edges, levels, wrong = 0;
    sequential_bfs(&g, bc.root, want, &reached, &edges, &levels);
    for (uint64_t v = 0; v < n; v++)
        wrong += want[v] != bc.level[v];
    if (wrong || bc.invalid || bc.disagree)
        fail_msg("%s: %llu levels differ from a sequential BFS, %llu violations, %llu ranks "
                 "with other sums", ctx, (unsigned long long)wrong,
                 (unsigned long long)bc.invalid, (unsigned long long)bc.disagree);
    if (bc.reached != reached || bc.edges != edges || bc.levels != levels)
        fail_msg("%s: reached %llu, edges %llu, levels %llu; sequentially %llu, %llu, %llu", ctx,
                 (unsigned long long)bc.reached, (unsigned long long)bc.edges,
                 (unsigned long long)bc.levels, (unsigned long long)reached,
                 (unsigned long long)edges, (unsigned long long)levels);
    free(want), free(bc.level), free(g.edges);
}

static void test_bfs(void **state)
{
    (void)state;
    static const char *const routes[] = {"direct", "nlnr", "hypercube"};
    static const cr_bfs_algorithm algorithms[] = {CR_BFS_LEVELS, CR_BFS_LEVELS_DEDUP,
                                                  CR_BFS_ASYNC, CR_BFS_HYBRID};
    static const int ps[] = {1, 2, 3, 5, 17, 64};
    int seeds = seeds_wanted() < 4 ? seeds_wanted() : 4;
    for (size_t rt = 0; rt < 3; rt++)
        for (size_t a = 0; a < 4; a++)
            for (size_t k = 0; k < sizeof ps / sizeof ps[0] && ps[k] <= largest_p(); k++)
                for (int seed = 1; seed <= seeds; seed++)
                    run_bfs_at(ps[k], routes[rt], algorithms[a],
                               (uint64_t)seed * 107 + (uint64_t)ps[k], ps[k] >= 64 ? 2000 : 300,
                               ps[k] >= 64 ? 3000 : 500);
}

/* ---------------------------------------------------------------- kernels by layout */

/* fn on P virtual ranks in nodes of node_size (0: one node, the kernels' arrays in
 * the node's memory; 2: ghosts and records), under unequal rank speeds and stalls:
 * a rank that read a value before its writer's barrier, or wrote over one still
 * being read, moves a result from the sequential one. */
static void run_on_nodes(int p, unsigned node_size, uint64_t seed, const char *what,
                         void (*fn)(cr_comm *, void *), void *user)
{
    cr_config cfg;
    sim_config(&cfg, "direct");
    cfg.node_size = node_size;
    cr_sim_opts o = {.ranks = p, .seed = seed, .cfg = &cfg, .max_slowness = 10,
                     .stall_chance = 0.01};
    char err[256];
    snprintf(ctx, sizeof ctx, "%s, P=%d, nodes of %u, seed %llu", what, p, node_size,
             (unsigned long long)seed);
    if (cr_sim_run(&o, fn, user, NULL, err, sizeof err))
        fail_msg("%s: %s", ctx, err);
}

/* at(P, node size, seed) for P up to 17, one node and nodes of 2, two seeds. */
static void each_layout(void (*at)(int, unsigned, uint64_t), uint64_t salt)
{
    static const int ps[] = {1, 2, 3, 5, 8, 17};
    static const unsigned sizes[] = {0, 2};
    int seeds = seeds_wanted() < 2 ? seeds_wanted() : 2;
    for (size_t k = 0; k < sizeof ps / sizeof ps[0] && ps[k] <= largest_p(); k++)
        for (size_t n = 0; n < 2; n++)
            for (int seed = 1; seed <= seeds; seed++)
                at(ps[k], sizes[n], (uint64_t)seed * salt + (uint64_t)ps[k]);
}

/* The sequential reference's graph of g, with its weights or without. */
static void reference_of(const graph *g, bool weighted, ref_graph *ref)
{
    cr_edge *e = calloc(g->m, sizeof *e);
    float *w = weighted ? calloc(g->m, sizeof *w) : NULL;
    for (uint64_t j = 0; j < g->m; j++) {
        e[j] = (cr_edge){g->edges[j].a, g->edges[j].b};
        if (w)
            memcpy(&w[j], &g->edges[j].w, sizeof *w);
    }
    if (ref_graph_build(ref, g->n, e, w, g->m))
        fail_msg("out of memory");
    free(e), free(w);
}

/* ---------------------------------------------------------------- PageRank */

/* PageRank on one node (the contributions in the node's memory, read in place, a
 * node barrier between sweeps) and on nodes of 2 (ghosts), each form twice on one
 * graph (the second reuses the node's arrays). */
/* Room for Gauss-Seidel over the node at unequal speeds, whose order the speeds
 * decide: ranks that sweep side by side read one another's last values, and then
 * need more sweeps than one rank does (up to 15 seen, against 12). */
#define PR_SWEEPS 40

typedef struct pr_case {
    const graph *g;
    bool jacobi;   /* asked */
    double *score; /* by vertex */
    int iterations;
    double change;
    bool in_place; /* Gauss-Seidel done */
} pr_case;

static void run_pagerank(cr_comm *comm, void *user)
{
    pr_case *pc = user;
    cr_graph *cg = build_share(comm, pc->g);
    cr_pagerank_opts o;
    cr_graph_pagerank_opts_init(&o);
    o.jacobi = pc->jacobi;
    o.max_iterations = PR_SWEEPS;
    cr_pagerank_stats st;
    for (int twice = 0; twice < 2; twice++)
        cr_graph_pagerank(cg, &o, &pc->score[cr_graph_first(cg)], &st);
    if (cr_comm_rank(comm) == 0) {
        pc->iterations = st.iterations;
        pc->change = st.change;
        pc->in_place = st.in_place;
    }
    cr_graph_destroy(cg);
}

/* Exact against the sequential sweeps of the same form when the result is the same
 * on every run (Jacobi; Gauss-Seidel at one rank); Gauss-Seidel over the node's
 * array at more ranks reads contributions as they are written, in an order the
 * ranks' speeds decide, so it gets GAP's check: one more Jacobi step moves the
 * scores by less than the tolerance (a lost contribution moves them by far more). */
static void check_pagerank_case(const pr_case *pc, int p, const ref_graph *ref)
{
    const graph *g = pc->g;
    double *want = calloc(g->n, sizeof *want);
    int iterations = ref_pagerank(ref, 0.85, PR_SWEEPS, 1e-4, pc->in_place, want);
    if (pc->jacobi && pc->in_place)
        fail_msg("%s: Jacobi asked, Gauss-Seidel done", ctx);
    if (pc->in_place && p > 1) {
        double change = ref_pagerank_change(ref, 0.85, pc->score);
        if (!(pc->change < 1e-4 && change < 1e-4))
            fail_msg("%s: Gauss-Seidel: last change %g, one more step %g, %d sweeps", ctx,
                     pc->change, change, pc->iterations);
    } else {
        uint64_t wrong = 0;
        for (uint64_t v = 0; v < g->n; v++)
            wrong += !(fabs(pc->score[v] - want[v]) <= 1e-6 * want[v]);
        if (wrong || pc->iterations != iterations)
            fail_msg("%s: %s: %llu scores differ from the sequential ones, %d sweeps (%d)",
                     ctx, pc->in_place ? "Gauss-Seidel" : "Jacobi", (unsigned long long)wrong,
                     pc->iterations, iterations);
    }
    free(want);
}

static void run_pagerank_at(int p, unsigned node_size, uint64_t seed)
{
    graph g = make_graph(300, 900, seed);
    ref_graph ref;
    reference_of(&g, false, &ref);
    for (int jacobi = 0; jacobi < 2; jacobi++) {
        pr_case pc = {&g, jacobi, calloc(g.n, sizeof(double)), 0, 0, false};
        run_on_nodes(p, node_size, seed, "PageRank", run_pagerank, &pc);
        check_pagerank_case(&pc, p, &ref);
        free(pc.score);
    }
    ref_graph_free(&ref);
    free(g.edges);
}

static void test_pagerank(void **state)
{
    (void)state;
    each_layout(run_pagerank_at, 131);
}

/* ---------------------------------------------------------------- shortest paths */

/* Delta-stepping on one node (distances in the node's memory, read in place by the
 * relaxing rank, records only for lowered ones) and on nodes of 2 (ghosts), with
 * weights in eighths (many ties), three calls in a row on one graph (the later ones
 * reuse the node's array and the scratch), the third with buckets so narrow that
 * most lie beyond the bins' reach (the far list, and the bins started again from
 * it): against Dijkstra. */
enum { SP_CALLS = 3 };
static const double sp_delta[SP_CALLS] = {0.25, 0.25, 1e-6};

typedef struct sp_case {
    const graph *g;
    uint64_t roots[SP_CALLS];
    double *dist[SP_CALLS]; /* by vertex */
} sp_case;

static void run_sssp(cr_comm *comm, void *user)
{
    sp_case *sc = user;
    const graph *g = sc->g;
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    cr_edge_list local = {.nvertices = g->n};
    local.cap = g->m / (uint64_t)p + 1;
    local.edges = calloc(local.cap, sizeof *local.edges);
    local.weights = calloc(local.cap, sizeof *local.weights);
    for (uint64_t j = (uint64_t)me; j < g->m; j += (uint64_t)p) {
        memcpy(&local.weights[local.count], &g->edges[j].w, sizeof(float)); /* its bits */
        local.edges[local.count++] = (cr_edge){g->edges[j].a, g->edges[j].b};
    }
    cr_graph *cg = cr_graph_build(comm, &local);
    cr_graph_edges_free(&local);
    cr_sssp_opts o;
    cr_graph_sssp_opts_init(&o);
    char err[256];
    for (int k = 0; k < SP_CALLS; k++)
        if ((o.delta = sp_delta[k]), cr_graph_sssp(cg, &o, sc->roots[k], &sc->dist[k][cr_graph_first(cg)], NULL, err,
                          sizeof err))
            fail_msg("%s", err);
    cr_graph_destroy(cg);
}

static void run_sssp_at(int p, unsigned node_size, uint64_t seed)
{
    graph g = make_graph(300, 900, seed);
    sp_case sc = {&g, {g.edges[0].a, g.edges[1].b, g.edges[0].a}, {0}};
    for (int k = 0; k < SP_CALLS; k++)
        sc.dist[k] = calloc(g.n, sizeof(double));
    run_on_nodes(p, node_size, seed, "SSSP", run_sssp, &sc);
    ref_graph ref;
    reference_of(&g, true, &ref);
    double *want = calloc(g.n, sizeof *want);
    for (int k = 0; k < SP_CALLS; k++) {
        ref_sssp(&ref, sc.roots[k], want);
        uint64_t wrong = 0;
        for (uint64_t v = 0; v < g.n; v++)
            wrong += !(sc.dist[k][v] == want[v] || (isinf(want[v]) && isinf(sc.dist[k][v])) ||
                       fabs(sc.dist[k][v] - want[v]) <= 1e-9 * want[v]);
        if (wrong)
            fail_msg("%s: source %llu: %llu distances differ from Dijkstra's", ctx,
                     (unsigned long long)sc.roots[k], (unsigned long long)wrong);
    }
    ref_graph_free(&ref);
    for (int k = 0; k < SP_CALLS; k++)
        free(sc.dist[k]);
    free(want), free(g.edges);
}

static void test_sssp(void **state)
{
    (void)state;
    each_layout(run_sssp_at, 137);
}

/* ---------------------------------------------------------------- betweenness */

/* Brandes' dependencies on one node (levels, counts and shares in the node's memory;
 * levels pushed, counts and dependencies pulled by their owners) and on nodes of 2
 * (ghosts), over three sources, then the same three again on one graph (the node's
 * arrays reused, every level reset): against the sequential sums. */
typedef struct bc_case {
    const graph *g;
    uint64_t sources[3];
    double *score[2]; /* by vertex, per call */
} bc_case;

static void run_bc(cr_comm *comm, void *user)
{
    bc_case *bc = user;
    cr_graph *cg = build_share(comm, bc->g);
    char err[256];
    for (int k = 0; k < 2; k++)
        if (cr_graph_bc(cg, bc->sources, 3, &bc->score[k][cr_graph_first(cg)], NULL, err,
                        sizeof err))
            fail_msg("%s", err);
    cr_graph_destroy(cg);
}

static void run_bc_at(int p, unsigned node_size, uint64_t seed)
{
    graph g = make_graph(300, 900, seed);
    bc_case bc = {&g, {g.edges[0].a, g.edges[1].b, g.edges[2].a},
                  {calloc(g.n, sizeof(double)), calloc(g.n, sizeof(double))}};
    run_on_nodes(p, node_size, seed, "betweenness", run_bc, &bc);
    ref_graph ref;
    reference_of(&g, false, &ref);
    double *want = calloc(g.n, sizeof *want);
    ref_betweenness(&ref, bc.sources, 3, want);
    for (int k = 0; k < 2; k++) {
        uint64_t wrong = 0;
        for (uint64_t v = 0; v < g.n; v++)
            wrong += !(fabs(bc.score[k][v] - want[v]) <= 1e-9 * (1 + want[v]));
        if (wrong)
            fail_msg("%s: call %d: %llu scores differ from the sequential ones", ctx, k + 1,
                     (unsigned long long)wrong);
    }
    ref_graph_free(&ref);
    free(want), free(bc.score[0]), free(bc.score[1]), free(g.edges);
}

static void test_bc(void **state)
{
    (void)state;
    each_layout(run_bc_at, 139);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_msf_async),
                                       cmocka_unit_test(test_msf_lockstep),
                                       cmocka_unit_test(test_cc_sv),
                                       cmocka_unit_test(test_msf_filter),
                                       cmocka_unit_test(test_cc_label),
                                       cmocka_unit_test(test_cc_local),
                                       cmocka_unit_test(test_bfs),
                                       cmocka_unit_test(test_pagerank),
                                       cmocka_unit_test(test_sssp),
                                       cmocka_unit_test(test_bc)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
