/* The GAP kernels beside BFS and components (shortest paths, PageRank, triangles,
 * betweenness) under mpirun, against the sequential references of apps/common
 * (reference.c): on R-MAT, GNM and RGG graphs under every route (direct, NR, NLNR,
 * hypercube, grid), and on small graphs
 * whose answers are known (zero and tied weights, an unreachable part, self-loops,
 * repeated edges, no triangles). Two kernels' results outlive each other on one
 * graph. */
#include "harness.h"

#include "reference.h"

#include "graph/graph_internal.h" /* graph_ids_force_wide */

#include <courier.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const routes[] = {"direct", "nr", "nlnr", "hypercube", "grid"};
#define NROUTES 5

static cr_comm *open_comm(const char *route)
{
    cr_config cfg;
    cr_config_init(&cfg);
    char err[256];
    if (cr_route_parse(route, &cfg.route, err, sizeof err))
        fail_msg("%s", err);
    /* direct: the job one node (MPI's), where PageRank reads the node's memory in
     * place; the other routes: nodes of 2 */
    cfg.node_size = strcmp(route, "direct") ? 2 : 0;
    return cr_comm_create(MPI_COMM_WORLD, &cfg);
}

/* A whole graph (every rank holds all of it) and this rank's share of it. */
typedef struct case_graph {
    cr_edge_list all, mine;
    ref_graph ref;
} case_graph;

static void share(case_graph *c)
{
    c->mine = (cr_edge_list){.nvertices = c->all.nvertices};
    size_t m = c->all.count;
    c->mine.cap = m + 1;
    c->mine.edges = malloc(c->mine.cap * sizeof *c->mine.edges);
    if (c->all.weights)
        c->mine.weights = malloc(c->mine.cap * sizeof *c->mine.weights);
    for (size_t k = (size_t)test_rank; k < m; k += (size_t)test_size) {
        c->mine.edges[c->mine.count] = c->all.edges[k];
        if (c->all.weights)
            c->mine.weights[c->mine.count] = c->all.weights[k];
        c->mine.count++;
    }
    if (ref_graph_build(&c->ref, c->all.nvertices, c->all.edges, c->all.weights, m))
        fail_msg("out of memory");
}

static case_graph generated(cr_gen_kind kind, int scale, double ef, uint32_t weight_max)
{
    cr_gen_params p;
    cr_graph_gen_params_init(&p);
    p.kind = kind, p.scale = scale, p.edgefactor = ef, p.seed = 7;
    p.weights = true, p.weight_max = weight_max;
    case_graph c = {0};
    char err[256];
    if (cr_graph_generate(&p, 0, 1, &c.all, err, sizeof err))
        fail_msg("%s", err);
    share(&c);
    return c;
}

/* A small graph from a list of {u, v, w} (w < 0: unweighted graph). */
static case_graph listed(uint64_t n, const double (*e)[3], size_t m)
{
    case_graph c = {0};
    c.all.nvertices = n;
    c.all.cap = m + 1;
    c.all.edges = malloc(c.all.cap * sizeof *c.all.edges);
    if (m && e[0][2] >= 0)
        c.all.weights = malloc(c.all.cap * sizeof *c.all.weights);
    for (size_t k = 0; k < m; k++) {
        c.all.edges[k] = (cr_edge){(uint64_t)e[k][0], (uint64_t)e[k][1]};
        if (c.all.weights)
            c.all.weights[k] = (float)e[k][2];
    }
    c.all.count = m;
    share(&c);
    return c;
}

static void case_free(case_graph *c)
{
    cr_graph_edges_free(&c->all);
    cr_graph_edges_free(&c->mine);
    ref_graph_free(&c->ref);
}

static bool close_to(double a, double b, double rel)
{
    if (isinf(a) || isinf(b))
        return a == b;
    return fabs(a - b) <= rel * (fabs(b) > 1 ? fabs(b) : 1);
}

/* ---------------------------------------------------------------- the checks */

static void check_sssp(cr_graph *g, const case_graph *c, uint64_t root, double delta)
{
    uint64_t n = c->ref.n, first = cr_graph_first(g), nl = cr_graph_local_count(g);
    double *want = malloc((n + 1) * sizeof *want), *dist = malloc((nl + 1) * sizeof *dist);
    ref_sssp(&c->ref, root, want);
    cr_sssp_opts o;
    cr_graph_sssp_opts_init(&o);
    o.delta = delta;
    cr_sssp_stats st;
    char err[256];
    CHECK(cr_graph_sssp(g, &o, root, dist, &st, err, sizeof err) == 0, "sssp: %s", err);
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < nl; i++)
        if (!close_to(dist[i], want[first + i], 1e-9) && wrong++ < 3)
            CHECK(0, "root %llu delta %g: vertex %llu at %.17g, Dijkstra %.17g",
                  (unsigned long long)root, delta, (unsigned long long)(first + i), dist[i],
                  want[first + i]);
    CHECK(st.buckets >= 1, "%llu buckets", (unsigned long long)st.buckets);
    free(want), free(dist);
}

/* Room for Gauss-Seidel over the node, whose order the ranks' speeds decide: ranks
 * that sweep side by side read one another's last values and need more sweeps. */
#define PR_SWEEPS 40

/* Every rank's scores, by vertex, on every rank. */
static double *all_scores(cr_graph *g, const double *score, uint64_t n)
{
    int *counts = malloc((size_t)test_size * sizeof *counts);
    int *at = malloc((size_t)test_size * sizeof *at), mine = (int)cr_graph_local_count(g);
    MPI_Allgather(&mine, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0, sum = 0; r < test_size; sum += counts[r], r++)
        at[r] = sum;
    double *all = malloc((n + 1) * sizeof *all);
    MPI_Allgatherv(score, mine, MPI_DOUBLE, all, counts, at, MPI_DOUBLE, MPI_COMM_WORLD);
    free(counts), free(at);
    return all;
}

/* One run of PageRank against the sequential sweeps of the same form: exact when
 * they are the same on every run (Jacobi, or Gauss-Seidel at one rank); Gauss-Seidel
 * on one node at more ranks reads contributions as they are written, so only GAP's
 * check applies: one more Jacobi step moves the scores by less than the tolerance. A
 * contribution lost or left at its first value moves them by far more. */
static void check_pagerank_form(cr_graph *g, const case_graph *c, bool jacobi)
{
    uint64_t n = c->ref.n, first = cr_graph_first(g), nl = cr_graph_local_count(g);
    double *want = malloc((n + 1) * sizeof *want), *score = malloc((nl + 1) * sizeof *score);
    cr_pagerank_opts o;
    cr_graph_pagerank_opts_init(&o);
    o.jacobi = jacobi;
    o.max_iterations = PR_SWEEPS;
    cr_pagerank_stats st;
    cr_graph_pagerank(g, &o, score, &st);
    CHECK(!jacobi || !st.in_place, "Jacobi asked, Gauss-Seidel done");
    int iterations = ref_pagerank(&c->ref, 0.85, PR_SWEEPS, 1e-4, st.in_place, want);
    if (!st.in_place || test_size == 1) {
        CHECK(st.iterations == iterations, "%d sweeps, the reference %d", st.iterations,
              iterations);
        for (uint64_t i = 0; i < nl; i++)
            CHECK(fabs(score[i] - want[first + i]) <= 1e-6 * want[first + i], /* float sums */
                  "vertex %llu: %.17g, reference %.17g",
                  (unsigned long long)(first + i), score[i], want[first + i]);
    } else {
        double *all = all_scores(g, score, n);
        double change = ref_pagerank_change(&c->ref, 0.85, all);
        CHECK(st.change < 1e-4 && change < 1e-4, "last change %g, one more step %g",
              st.change, change);
        free(all);
    }
    free(want), free(score);
}

static void check_pagerank(cr_graph *g, const case_graph *c)
{
    check_pagerank_form(g, c, true);
    check_pagerank_form(g, c, false);
}

static void check_tc(cr_graph *g, const case_graph *c)
{
    uint64_t want = ref_triangles(&c->ref);
    cr_tc_stats st;
    uint64_t got = cr_graph_tc(g, &st);
    CHECK(got == want, "%llu triangles, the reference %llu", (unsigned long long)got,
          (unsigned long long)want);
}

static void check_bc(cr_graph *g, const case_graph *c, const uint64_t *sources, size_t k)
{
    uint64_t n = c->ref.n, first = cr_graph_first(g), nl = cr_graph_local_count(g);
    double *want = malloc((n + 1) * sizeof *want), *score = malloc((nl + 1) * sizeof *score);
    ref_betweenness(&c->ref, sources, k, want);
    char err[256];
    CHECK(cr_graph_bc(g, sources, k, score, NULL, err, sizeof err) == 0, "bc: %s", err);
    for (uint64_t i = 0; i < nl; i++)
        CHECK(close_to(score[i], want[first + i], 1e-9), "vertex %llu: %.17g, Brandes %.17g",
              (unsigned long long)(first + i), score[i], want[first + i]);
    free(want), free(score);
}

/* ---------------------------------------------------------------- generated graphs */

static void all_kernels(case_graph *c, const char *route)
{
    cr_comm *comm = open_comm(route);
    cr_graph *g = cr_graph_build(comm, &c->mine);
    uint64_t n = c->ref.n;
    uint64_t roots[3] = {0, n / 3, n - 1};
    for (int k = 0; k < 3; k++)
        check_sssp(g, c, roots[k], k == 1 ? 0.25 : 0);
    check_pagerank(g, c);
    check_tc(g, c);
    check_bc(g, c, roots, 3);
    cr_graph_destroy(g);
    cr_comm_destroy(comm);
}

static void test_rmat(void **state)
{
    (void)state;
    for (int r = 0; r < NROUTES; r++) {
        case_graph c = generated(CR_GEN_RMAT, 8, 8, 255);
        all_kernels(&c, routes[r]);
        case_free(&c);
    }
    verdict();
}

static void test_gnm(void **state)
{
    (void)state;
    for (int r = 0; r < NROUTES; r++) {
        case_graph c = generated(CR_GEN_GNM, 8, 4, 0); /* weights in [0, 1) */
        all_kernels(&c, routes[r]);
        case_free(&c);
    }
    verdict();
}

static void test_rgg(void **state)
{
    (void)state;
    for (int r = 0; r < NROUTES; r++) {
        case_graph c = generated(CR_GEN_RGG, 8, 8, 16); /* many tied weights */
        all_kernels(&c, routes[r]);
        case_free(&c);
    }
    verdict();
}

/* ---------------------------------------------------------------- known answers */

/* 0 -0- 1 -2- 2, 0 -2- 2 (a tie), 2 -0- 3, 3 -5- 4 and 3 -1- 4 (a repeated edge), a
 * self-loop at 1, and 5 - 6 apart: distances from 0 are 0 0 2 2 3 inf inf. */
static void test_sssp_known(void **state)
{
    (void)state;
    static const double e[][3] = {{0, 1, 0}, {1, 2, 2}, {0, 2, 2}, {2, 3, 0}, {3, 4, 5},
                                  {3, 4, 1}, {1, 1, 3}, {5, 6, 1}};
    case_graph c = listed(7, e, sizeof e / sizeof e[0]);
    cr_comm *comm = open_comm("direct");
    cr_graph *g = cr_graph_build(comm, &c.mine);
    static const double want[] = {0, 0, 2, 2, 3, INFINITY, INFINITY};
    double dist[8];
    char err[256];
    for (int k = 0; k < 3; k++) {
        cr_sssp_opts o = {.delta = k == 0 ? 0 : k == 1 ? 0.5 : 100};
        CHECK(cr_graph_sssp(g, &o, 0, dist, NULL, err, sizeof err) == 0, "%s", err);
        for (uint64_t i = 0; i < cr_graph_local_count(g); i++)
            CHECK(dist[i] == want[cr_graph_first(g) + i], "delta %g: vertex %llu at %g",
                  o.delta, (unsigned long long)(cr_graph_first(g) + i), dist[i]);
    }
    /* bad input: every rank refuses with one line */
    CHECK(cr_graph_sssp(g, NULL, 7, dist, NULL, err, sizeof err) == -1 &&
              strstr(err, "root 7 is not a vertex"), "root 7: %s", err);
    cr_sssp_opts bad = {.delta = -1};
    CHECK(cr_graph_sssp(g, &bad, 0, dist, NULL, err, sizeof err) == -1 &&
              strstr(err, "delta -1 is not valid"), "delta -1: %s", err);
    cr_graph_destroy(g);
    cr_comm_destroy(comm);
    case_free(&c);
    verdict();
}

/* A vertex is taken once for each distance it is taken at: 0 -1- 2 -1- 1 and
 * 0 -10- 1, one bucket (delta 100). Taking 0 queues 2 and 1 (at 10); taking 2 lowers
 * 1 to 2 while it is still queued, and 1 is then taken once, at 2: 3 vertices taken
 * at one rank, where taking every entry would make 4. At every count, a vertex is
 * taken only after a distance was lowered for it. */
static void test_sssp_waits_once(void **state)
{
    (void)state;
    static const double e[][3] = {{0, 2, 1}, {0, 1, 10}, {2, 1, 1}};
    case_graph c = listed(3, e, 3);
    cr_comm *comm = open_comm("direct");
    cr_graph *g = cr_graph_build(comm, &c.mine);
    static const double want[] = {0, 2, 1};
    double dist[4];
    char err[256];
    cr_sssp_opts o = {.delta = 100};
    cr_sssp_stats st;
    CHECK(cr_graph_sssp(g, &o, 0, dist, &st, err, sizeof err) == 0, "%s", err);
    for (uint64_t i = 0; i < cr_graph_local_count(g); i++)
        CHECK(dist[i] == want[cr_graph_first(g) + i], "vertex %llu at %g",
              (unsigned long long)(cr_graph_first(g) + i), dist[i]);
    CHECK(st.relaxations == 4, "%llu distances lowered, expected 4 (the root's and three)",
          (unsigned long long)st.relaxations);
    CHECK(st.taken <= st.relaxations, "%llu vertices taken for %llu distances lowered",
          (unsigned long long)st.taken, (unsigned long long)st.relaxations);
    if (test_size == 1)
        CHECK(st.taken == 3, "%llu vertices taken, expected 3 (vertex 1 queued twice?)",
              (unsigned long long)st.taken);
    cr_graph_destroy(g);
    cr_comm_destroy(comm);
    case_free(&c);
    verdict();
}

/* Every rank lowers one vertex at once: root 0 reaches m middles at 1, and middle i
 * reaches the target t at 1 + (M - i), so each middle taken lowers t again, from
 * every rank of the node in turn; t must end at 1 + M - m, every call. An offer
 * applied without checking it against the distance of the moment (an owner's, or a
 * store where ranks lower in place) leaves t higher. In one bucket and in many. */
static void test_sssp_one_vertex_lowered_by_all(void **state)
{
    (void)state;
    enum { M = 4000, m = 3000 };
    double (*e)[3] = malloc(2 * m * sizeof *e);
    for (int i = 1; i <= m; i++) {
        e[2 * (i - 1)][0] = 0, e[2 * (i - 1)][1] = i, e[2 * (i - 1)][2] = 1;
        e[2 * (i - 1) + 1][0] = i, e[2 * (i - 1) + 1][1] = m + 1, e[2 * (i - 1) + 1][2] = M - i;
    }
    case_graph c = listed(m + 2, e, 2 * m);
    free(e);
    cr_comm *comm = open_comm("direct");
    cr_graph *g = cr_graph_build(comm, &c.mine);
    double *dist = malloc((cr_graph_local_count(g) + 1) * sizeof *dist);
    char err[256];
    for (int call = 0; call < 20; call++) {
        cr_sssp_opts o = {.delta = call % 2 ? 1e9 : 50};
        cr_sssp_stats st;
        CHECK(cr_graph_sssp(g, &o, 0, dist, &st, err, sizeof err) == 0, "%s", err);
        for (uint64_t i = 0; i < cr_graph_local_count(g); i++) {
            uint64_t v = cr_graph_first(g) + i;
            double want = v == 0 ? 0 : v <= m ? 1 : 1 + M - m;
            CHECK(dist[i] == want, "call %d: vertex %llu at %g, expected %g", call,
                  (unsigned long long)v, dist[i], want);
        }
        CHECK(st.taken <= st.relaxations, "%llu vertices taken for %llu distances lowered",
              (unsigned long long)st.taken, (unsigned long long)st.relaxations);
    }
    free(dist);
    cr_graph_destroy(g);
    cr_comm_destroy(comm);
    case_free(&c);
    verdict();
}

/* Whole weights 0..255 are relaxed from a copy in one byte; any other weight keeps
 * every weight in floats. Weights just outside (256, 255.5, 0.25) beside whole ones:
 * a byte copy of them would make vertex 1 0 (256 wraps), vertex 2 255 and vertex 3 0. */
static void test_sssp_weights_beyond_a_byte(void **state)
{
    (void)state;
    static const double e[][3] = {{0, 1, 256}, {0, 2, 255.5}, {0, 3, 0.25}, {3, 4, 255},
                                  {4, 5, 0}};
    case_graph c = listed(6, e, sizeof e / sizeof e[0]);
    cr_comm *comm = open_comm("direct");
    cr_graph *g = cr_graph_build(comm, &c.mine);
    static const double want[] = {0, 256, 255.5, 0.25, 255.25, 255.25};
    double dist[8];
    char err[256];
    CHECK(cr_graph_sssp(g, NULL, 0, dist, NULL, err, sizeof err) == 0, "%s", err);
    for (uint64_t i = 0; i < cr_graph_local_count(g); i++)
        CHECK(dist[i] == want[cr_graph_first(g) + i], "vertex %llu at %g, expected %g",
              (unsigned long long)(cr_graph_first(g) + i), dist[i], want[cr_graph_first(g) + i]);
    cr_graph_destroy(g);
    cr_comm_destroy(comm);
    case_free(&c);
    verdict();
}

static void test_negative_weight(void **state)
{
    (void)state;
    static const double e[][3] = {{0, 1, 1}, {1, 2, -1}, {2, 3, 1}};
    case_graph c = listed(4, e, 3);
    cr_comm *comm = open_comm("direct");
    cr_graph *g = cr_graph_build(comm, &c.mine);
    double dist[5];
    char err[256] = "";
    CHECK(cr_graph_sssp(g, NULL, 0, dist, NULL, err, sizeof err) == -1, "a negative weight "
          "passes");
    CHECK(strstr(err, "has weight -1: weights must be numbers of at least 0") != NULL, "%s", err);
    cr_graph_destroy(g);
    cr_comm_destroy(comm);
    case_free(&c);
    verdict();
}

/* A weighted graph's lists hold their lightest edge first, ties by neighbour: a star
 * whose weights are negative, zero of both signs (-0 kept as 0), tiny, tied and
 * infinite. */
static void test_lists_lightest_first(void **state)
{
    (void)state;
    static const float w[] = {3, -2.5f, 0.0f, -0.0f, INFINITY, 3, 1e-30f, -INFINITY};
    static const uint64_t want_v[] = {8, 2, 3, 4, 7, 1, 6, 5};
    static const float want_w[] = {-INFINITY, -2.5f, 0, 0, 1e-30f, 3, 3, INFINITY};
    cr_edge_list l = {.nvertices = 9};
    if (test_rank == 0) {
        l.edges = malloc(8 * sizeof *l.edges), l.weights = malloc(8 * sizeof *l.weights);
        for (size_t k = 0; k < 8; k++)
            l.edges[k] = (cr_edge){0, k + 1}, l.weights[k] = w[k];
        l.count = l.cap = 8;
    }
    cr_comm *comm = open_comm("direct");
    cr_graph *g = cr_graph_build(comm, &l);
    if (cr_graph_first(g) == 0 && cr_graph_local_count(g) > 0) {
        CHECK(cr_graph_degree(g, 0) == 8, "vertex 0 has %llu edges",
              (unsigned long long)cr_graph_degree(g, 0));
        const float *got = cr_graph_weights(g, 0);
        for (uint64_t j = 0; j < 8 && cr_graph_degree(g, 0) == 8; j++)
            CHECK(cr_graph_neighbour(g, 0, j) == want_v[j] && got[j] == want_w[j] &&
                      !signbit(got[j]) == !signbit(want_w[j]),
                  "place %llu: neighbour %llu weight %g, expected %llu weight %g",
                  (unsigned long long)j, (unsigned long long)cr_graph_neighbour(g, 0, j),
                  (double)got[j], (unsigned long long)want_v[j], (double)want_w[j]);
    }
    cr_graph_destroy(g);
    cr_comm_destroy(comm);
    cr_graph_edges_free(&l);
    verdict();
}

/* K4 on 0..3 (4 triangles), with every edge twice and self-loops; 4..9 a cycle of six
 * and a star: no triangle. */
static void test_tc_known(void **state)
{
    (void)state;
    static const double e[][3] = {{0, 1, -1}, {0, 2, -1}, {0, 3, -1}, {1, 2, -1}, {1, 3, -1},
                                  {2, 3, -1}, {1, 0, -1}, {3, 2, -1}, {0, 0, -1}, {2, 2, -1},
                                  {3, 1, -1}, {4, 5, -1}, {5, 6, -1}, {6, 7, -1}, {7, 8, -1},
                                  {8, 9, -1}, {9, 4, -1}, {4, 10, -1}, {4, 11, -1}};
    case_graph c = listed(12, e, sizeof e / sizeof e[0]);
    cr_comm *comm = open_comm("direct");
    cr_graph *g = cr_graph_build(comm, &c.mine);
    CHECK(cr_graph_tc(g, NULL) == 4, "K4 with repeats: %llu", (unsigned long long)cr_graph_tc(g, NULL));
    cr_graph_destroy(g);
    cr_comm_destroy(comm);
    case_free(&c);
    static const double bip[][3] = {{0, 3, -1}, {0, 4, -1}, {0, 5, -1}, {1, 3, -1}, {1, 4, -1},
                                    {1, 5, -1}, {2, 3, -1}, {2, 4, -1}, {2, 5, -1}};
    c = listed(6, bip, 9);
    comm = open_comm("direct");
    g = cr_graph_build(comm, &c.mine);
    CHECK(cr_graph_tc(g, NULL) == 0, "K3,3 has triangles");
    cr_graph_destroy(g);
    cr_comm_destroy(comm);
    case_free(&c);
    verdict();
}

/* A path 0 - 1 - 2 - 3 - 4 and a diamond 5 - {6, 7} - 8: from 0, dependencies 3 2 1 0
 * on 1 .. 4; from 5, half of the one path to 8 through each of 6 and 7. */
static void test_bc_known(void **state)
{
    (void)state;
    static const double e[][3] = {{0, 1, -1}, {1, 2, -1}, {2, 3, -1}, {3, 4, -1},
                                  {5, 6, -1}, {5, 7, -1}, {6, 8, -1}, {7, 8, -1}};
    case_graph c = listed(9, e, 8);
    cr_comm *comm = open_comm("direct");
    cr_graph *g = cr_graph_build(comm, &c.mine);
    uint64_t sources[2] = {0, 5};
    static const double want[] = {0, 3, 2, 1, 0, 0, 0.5, 0.5, 0};
    double score[10];
    char err[256];
    CHECK(cr_graph_bc(g, sources, 2, score, NULL, err, sizeof err) == 0, "%s", err);
    for (uint64_t i = 0; i < cr_graph_local_count(g); i++)
        CHECK(score[i] == want[cr_graph_first(g) + i], "vertex %llu: %g",
              (unsigned long long)(cr_graph_first(g) + i), score[i]);
    uint64_t bad = 9;
    CHECK(cr_graph_bc(g, &bad, 1, score, NULL, err, sizeof err) == -1 &&
              strstr(err, "source 9 is not a vertex"), "%s", err);
    cr_graph_destroy(g);
    cr_comm_destroy(comm);
    case_free(&c);
    verdict();
}

/* cr_graph_simplify: the kernels on the simple graph equal the references on the
 * edge list without its self-loops and repeats (of a repeated weighted edge, the
 * lightest). */
static int by_pair(const void *a, const void *b)
{
    const double *x = a, *y = b;
    for (int k = 0; k < 3; k++)
        if (x[k] != y[k])
            return x[k] < y[k] ? -1 : 1;
    return 0;
}

static void test_simplify(void **state)
{
    (void)state;
    case_graph multi = generated(CR_GEN_RMAT, 8, 8, 16); /* repeats, loops, ties */
    size_t m = multi.all.count, kept = 0;
    double (*e)[3] = malloc((m + 1) * sizeof *e);
    for (size_t k = 0; k < m; k++) {
        uint64_t u = multi.all.edges[k].u, v = multi.all.edges[k].v;
        e[k][0] = (double)(u < v ? u : v), e[k][1] = (double)(u < v ? v : u);
        e[k][2] = multi.all.weights[k];
    }
    qsort(e, m, sizeof *e, by_pair);
    for (size_t k = 0; k < m; k++)
        if (e[k][0] != e[k][1] && (kept == 0 || e[k][0] != e[kept - 1][0] ||
                                   e[k][1] != e[kept - 1][1]))
            memcpy(e[kept++], e[k], sizeof *e);
    case_graph simple = listed(multi.all.nvertices, (const double (*)[3])e, kept);
    cr_comm *comm = open_comm("nlnr");
    cr_graph *g = cr_graph_build(comm, &multi.mine);
    cr_graph_simplify(g);
    uint64_t ends = 0;
    for (uint64_t i = 0; i < cr_graph_local_count(g); i++) {
        uint64_t degree = cr_graph_degree(g, i);
        const float *w = cr_graph_weights(g, i);
        ends += degree;
        for (uint64_t j = 0; j < degree; j++) {
            uint64_t v = cr_graph_neighbour(g, i, j);
            CHECK(v != cr_graph_first(g) + i, "a self-loop stays");
            CHECK(j == 0 || w[j - 1] < w[j] ||
                      (w[j - 1] == w[j] && cr_graph_neighbour(g, i, j - 1) < v),
                  "vertex %llu: list not lightest first, or a neighbour twice",
                  (unsigned long long)(cr_graph_first(g) + i));
        }
    }
    CHECK(sum_all(ends) == 2 * kept, "%llu edge ends, %zu simple edges",
          (unsigned long long)sum_all(ends), kept);
    uint64_t roots[2] = {1, simple.ref.n / 2};
    for (int k = 0; k < 2; k++)
        check_sssp(g, &simple, roots[k], 0);
    check_pagerank(g, &simple);
    check_tc(g, &simple);
    check_bc(g, &simple, roots, 2);
    cr_graph_destroy(g);
    /* Unweighted, the simple graph's lists are sorted by neighbour and the triangle
     * count reads them in place instead of copying them. */
    for (size_t k = 0; k < kept; k++)
        e[k][2] = -1;
    case_graph plain = listed(multi.all.nvertices, (const double (*)[3])e, kept);
    cr_edge_list unweighted = multi.mine;
    unweighted.weights = NULL;
    g = cr_graph_build(comm, &unweighted);
    cr_graph_simplify(g);
    check_tc(g, &plain);
    check_pagerank(g, &plain); /* the ghosts numbered with col: the reverse index */
    check_bc(g, &plain, roots, 2); /* is built from col (after sssp, from their ids) */
    cr_graph_destroy(g);
    /* Betweenness first: the reverse index from the ids, each list's run of my own
     * vertices; shortest paths after it add the edges to my vertices apart. */
    g = cr_graph_build(comm, &unweighted);
    cr_graph_simplify(g);
    check_bc(g, &plain, roots, 2);
    check_sssp(g, &plain, roots[1], 0);
    check_bc(g, &plain, roots, 2);
    cr_graph_destroy(g);
    case_free(&plain);
    cr_comm_destroy(comm);
    free(e);
    case_free(&multi);
    case_free(&simple);
    verdict();
}

/* Kruskal on the whole list, written here apart from the library: the forest's
 * weight and edge count. */
static const float *kruskal_w;

static int by_kruskal_weight(const void *x, const void *y)
{
    float a = kruskal_w[*(const size_t *)x], b = kruskal_w[*(const size_t *)y];
    return (a > b) - (a < b);
}

static uint64_t kruskal_root(uint64_t *parent, uint64_t v)
{
    while (parent[v] != v)
        v = parent[v] = parent[parent[v]];
    return v;
}

static void kruskal(const cr_edge_list *all, double *weight, uint64_t *edges)
{
    size_t m = all->count, *order = malloc((m + 1) * sizeof *order);
    uint64_t *parent = malloc((all->nvertices + 1) * sizeof *parent);
    for (size_t i = 0; i < m; i++)
        order[i] = i;
    for (uint64_t v = 0; v < all->nvertices; v++)
        parent[v] = v;
    kruskal_w = all->weights;
    qsort(order, m, sizeof *order, by_kruskal_weight);
    *weight = 0, *edges = 0;
    for (size_t i = 0; i < m; i++) {
        uint64_t a = kruskal_root(parent, all->edges[order[i]].u);
        uint64_t b = kruskal_root(parent, all->edges[order[i]].v);
        if (a != b) {
            parent[a] = b;
            *weight += all->weights[order[i]];
            ++*edges;
        }
    }
    free(order);
    free(parent);
}

/* cr_graph_msf_of: the forest of the graph's own edges weighs what the forest of the
 * edge list it was built from weighs (the multigraph's edges, each once), and what
 * Kruskal on the whole list gives (weights are integers: the sums are exact). */
static void test_msf_of_graph(void **state)
{
    (void)state;
    case_graph c = generated(CR_GEN_RMAT, 8, 8, 255);
    cr_comm *comm = open_comm("hypercube");
    cr_graph *g = cr_graph_build(comm, &c.mine);
    cr_msf_result a, b;
    char err[256];
    CHECK(cr_graph_msf(comm, &c.mine, NULL, NULL, &a, err, sizeof err) == 0, "%s", err);
    CHECK(cr_graph_msf_of(g, NULL, &b, err, sizeof err) == 0, "%s", err);
    CHECK(a.weight == b.weight && a.forest_edges == b.forest_edges,
          "forest of the list %.9g (%llu edges), of the graph %.9g (%llu edges)", a.weight,
          (unsigned long long)a.forest_edges, b.weight, (unsigned long long)b.forest_edges);
    double want;
    uint64_t want_edges;
    kruskal(&c.all, &want, &want_edges);
    CHECK(b.weight == want && b.forest_edges == want_edges,
          "forest of the graph %.9g (%llu edges), Kruskal's %.9g (%llu edges)", b.weight,
          (unsigned long long)b.forest_edges, want, (unsigned long long)want_edges);
    cr_edge_list back;
    cr_graph_edges(g, &back);
    CHECK(sum_all(back.count) == c.all.count, "%llu edges back, %zu in",
          (unsigned long long)sum_all(back.count), c.all.count);
    cr_graph_edges_free(&back);
    cr_graph_msf_result_free(&a);
    cr_graph_msf_result_free(&b);
    cr_graph_destroy(g);
    cr_comm_destroy(comm);
    case_free(&c);
    verdict();
}

/* Results belong to their caller, not to the graph: a PageRank run between two
 * shortest-path runs and a BFS leaves both distance arrays as they were. */
static void test_two_kernels_one_graph(void **state)
{
    (void)state;
    case_graph c = generated(CR_GEN_RMAT, 7, 8, 255);
    cr_comm *comm = open_comm("direct");
    cr_graph *g = cr_graph_build(comm, &c.mine);
    uint64_t nl = cr_graph_local_count(g), first = cr_graph_first(g), n = c.ref.n;
    double *d0 = malloc((nl + 1) * 8), *d1 = malloc((nl + 1) * 8), *pr = malloc((nl + 1) * 8);
    double *w0 = malloc((n + 1) * 8), *w1 = malloc((n + 1) * 8);
    char err[256];
    cr_graph_sssp(g, NULL, 0, d0, NULL, err, sizeof err);
    cr_bfs_result b;
    cr_graph_bfs(g, 1, &b);
    cr_graph_pagerank(g, NULL, pr, NULL);
    cr_graph_sssp(g, NULL, 1, d1, NULL, err, sizeof err);
    ref_sssp(&c.ref, 0, w0);
    ref_sssp(&c.ref, 1, w1);
    for (uint64_t i = 0; i < nl; i++) {
        CHECK(d0[i] == w0[first + i] && d1[i] == w1[first + i], "vertex %llu",
              (unsigned long long)(first + i));
        CHECK((b.level[i] < 0) == isinf(d1[i]), "vertex %llu: level %d, distance %g",
              (unsigned long long)(first + i), b.level[i], d1[i]);
    }
    cr_graph_bfs_result_free(&b);
    free(d0), free(d1), free(pr), free(w0), free(w1);
    cr_graph_destroy(g);
    cr_comm_destroy(comm);
    case_free(&c);
    verdict();
}

/* ---------------------------------------------------------------- read, not held */

typedef struct end {
    uint64_t v;
    float w;
} end;

static int by_end(const void *x, const void *y)
{
    const end *a = x, *b = y;
    if (a->v != b->v)
        return a->v < b->v ? -1 : 1;
    return a->w < b->w ? -1 : a->w > b->w;
}

/* Vertex i's list in g, sorted by neighbour then weight (the multigraph's lists are
 * in the order the halves arrived). */
static end *sorted_list(cr_graph *g, uint64_t i)
{
    uint64_t d = cr_graph_degree(g, i);
    const float *w = cr_graph_weights(g, i);
    end *e = malloc((d + 1) * sizeof *e);
    for (uint64_t k = 0; k < d; k++)
        e[k] = (end){cr_graph_neighbour(g, i, k), w ? w[k] : 0};
    qsort(e, d, sizeof *e, by_end);
    return e;
}

/* Every list of a and b the same multiset of (neighbour, weight). */
static void check_same_graph(cr_graph *a, cr_graph *b, const char *what)
{
    CHECK(cr_graph_vertices(a) == cr_graph_vertices(b) &&
              cr_graph_local_count(a) == cr_graph_local_count(b) &&
              cr_graph_weighted(a) == cr_graph_weighted(b),
          "%s: %llu vertices, %llu", what, (unsigned long long)cr_graph_vertices(a),
          (unsigned long long)cr_graph_vertices(b));
    if (cr_graph_local_count(a) != cr_graph_local_count(b))
        return;
    for (uint64_t i = 0; i < cr_graph_local_count(a); i++) {
        uint64_t d = cr_graph_degree(a, i);
        CHECK(d == cr_graph_degree(b, i), "%s: vertex %llu: degree %llu, %llu", what,
              (unsigned long long)(cr_graph_first(a) + i), (unsigned long long)d,
              (unsigned long long)cr_graph_degree(b, i));
        if (d != cr_graph_degree(b, i))
            continue;
        end *x = sorted_list(a, i), *y = sorted_list(b, i);
        for (uint64_t k = 0; k < d; k++)
            CHECK(x[k].v == y[k].v && x[k].w == y[k].w, "%s: vertex %llu, entry %llu", what,
                  (unsigned long long)(cr_graph_first(a) + i), (unsigned long long)k);
        free(x), free(y);
    }
}

/* A path all ranks share, written by rank 0 (then every rank may read it). */
static void shared_file(char *path, const char *text, const cr_edge_list *l,
                        cr_file_format format)
{
    if (test_rank == 0) {
        int fd = mkstemp(path);
        FILE *f = fdopen(fd, "w");
        if (text)
            fputs(text, f);
        fclose(f);
        char err[256];
        if (l && cr_graph_write_edges(path, format, l, err, sizeof err))
            fail_msg("%s", err);
    }
    MPI_Bcast(path, (int)strlen(path) + 1, MPI_CHAR, 0, MPI_COMM_WORLD);
}

static void remove_file(const char *path)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank == 0)
        unlink(path);
}

static const char *refuse(void *user, uint64_t nvertices, uint64_t edges)
{
    (void)nvertices;
    *(uint64_t *)user = edges;
    return "refused by the check";
}

/* cr_graph_read builds from a file the graph cr_graph_build makes from its list, as
 * a multigraph and simplified, for text with and without weights and for the binary
 * form, at every rank count; it counts the file's edges; a bad line anywhere and a
 * refusal of the check give NULL on every rank with one line. */
static void test_read_streamed(void **state)
{
    (void)state;
    case_graph c = generated(CR_GEN_RMAT, 9, 8, 255);
    cr_edge_list plain = c.all;
    plain.weights = NULL;
    const cr_edge_list *lists[] = {&plain, &c.all, &c.all};
    cr_file_format forms[] = {CR_FILE_TEXT, CR_FILE_TEXT, CR_FILE_BINARY};
    cr_comm *comm = open_comm("direct");
    for (int f = 0; f < 3; f++) {
        char path[] = "/tmp/courier-read-XXXXXX", err[256];
        shared_file(path, NULL, lists[f], forms[f]);
        cr_edge_list mine = c.mine;
        if (f == 0)
            mine.weights = NULL;
        cr_graph *want = cr_graph_build(comm, &mine);
        uint64_t edges = 0;
        cr_graph *got = cr_graph_read(comm, path, NULL, &edges, err, sizeof err);
        CHECK(got != NULL, "%s", err);
        if (got) {
            CHECK(edges == c.all.count, "%llu edges read of %zu", (unsigned long long)edges,
                  c.all.count);
            check_same_graph(got, want, "the multigraph");
            cr_graph_simplify(got), cr_graph_simplify(want);
            check_same_graph(got, want, "the simple graph");
            cr_graph_destroy(got);
        }
        cr_graph_destroy(want);
        remove_file(path);
    }
    char bad[] = "/tmp/courier-read-XXXXXX", err[256] = "";
    shared_file(bad, "0 1\n1 2\n2 3\n3 4\n4 5\n5 six\n6 7\n", NULL, CR_FILE_TEXT);
    CHECK(cr_graph_read(comm, bad, NULL, NULL, err, sizeof err) == NULL && strstr(err, bad) &&
              strstr(err, "six"), "a bad line: '%s'", err);
    remove_file(bad);
    char good[] = "/tmp/courier-read-XXXXXX";
    shared_file(good, "0 1\n1 2\n", NULL, CR_FILE_TEXT);
    uint64_t seen = 0;
    cr_graph_read_opts o = {.check = refuse, .user = &seen};
    CHECK(cr_graph_read(comm, good, &o, NULL, err, sizeof err) == NULL &&
              !strcmp(err, "refused by the check") && seen == 2,
          "the check's refusal: '%s', %llu edges", err, (unsigned long long)seen);
    remove_file(good);
    cr_comm_destroy(comm);
    case_free(&c);
    verdict();
}

/* ---------------------------------------------------------------- 8-byte ids */

/* A graph of 2^32 vertices or more keeps its lists as 8-byte ids (and its kernels
 * keep their ghosts on one node): too large to test, so the same cases again with
 * the wide lists forced on small graphs. */
static void test_wide_ids(void **state)
{
    graph_ids_force_wide(true);
    static const char *const wide_routes[] = {"direct", "nlnr"}; /* one node; nodes of 2 */
    for (int r = 0; r < 2; r++) {
        case_graph c = generated(CR_GEN_RMAT, 8, 8, 255);
        all_kernels(&c, wide_routes[r]);
        case_free(&c);
    }
    verdict();
    test_simplify(state);
    test_two_kernels_one_graph(state);
    graph_ids_force_wide(false);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sssp_known),
        cmocka_unit_test(test_sssp_waits_once),
        cmocka_unit_test(test_sssp_weights_beyond_a_byte),
        cmocka_unit_test(test_sssp_one_vertex_lowered_by_all),
        cmocka_unit_test(test_negative_weight),
        cmocka_unit_test(test_lists_lightest_first),
        cmocka_unit_test(test_tc_known),
        cmocka_unit_test(test_bc_known),
        cmocka_unit_test(test_two_kernels_one_graph),
        cmocka_unit_test(test_simplify),
        cmocka_unit_test(test_msf_of_graph),
        cmocka_unit_test(test_rmat),
        cmocka_unit_test(test_gnm),
        cmocka_unit_test(test_rgg),
        cmocka_unit_test(test_wide_ids),
        cmocka_unit_test(test_read_streamed),
    };
    return RUN_MPI_TESTS(argc, argv, tests);
}
