/* The distributed graph and BFS under mpirun: exact levels on small known graphs,
 * and a validator that rejects broken trees. */
#include "harness.h"

#include <courier.h>

#include <stdlib.h>
#include <string.h>

/* Every rank holds every k-th edge of the list, as a file reader would. */
static cr_graph *build(cr_comm *comm, const uint64_t (*e)[2], size_t m, uint64_t nvertices)
{
    cr_edge_list l = {0};
    l.nvertices = nvertices;
    l.cap = m + 1;
    l.edges = malloc(l.cap * sizeof *l.edges);
    for (size_t k = (size_t)test_rank; k < m; k += (size_t)test_size)
        l.edges[l.count++] = (cr_edge){e[k][0], e[k][1]};
    cr_graph *g = cr_graph_build(comm, &l);
    cr_graph_edges_free(&l);
    return g;
}

static cr_comm *open_comm(void)
{
    return cr_comm_create(MPI_COMM_WORLD, NULL);
}

/* Run a BFS and compare every local level with `want` (-1: unreached). */
static void expect_levels_with(cr_graph *g, const cr_bfs_opts *o, uint64_t root,
                               const int *want, uint64_t reached, uint64_t edges)
{
    cr_bfs_result r;
    cr_graph_bfs_run(g, o, root, &r);
    uint64_t first = cr_graph_first(g);
    for (uint64_t i = 0; i < cr_graph_local_count(g); i++) {
        CHECK(r.level[i] == want[first + i], "root %llu: vertex %llu has level %d, expected %d",
              (unsigned long long)root, (unsigned long long)(first + i), r.level[i],
              want[first + i]);
        CHECK((r.parent[i] < 0) == (want[first + i] < 0), "vertex %llu: parent %lld",
              (unsigned long long)(first + i), (long long)r.parent[i]);
    }
    CHECK(r.reached == reached, "root %llu: %llu reached, expected %llu", (unsigned long long)root,
          (unsigned long long)r.reached, (unsigned long long)reached);
    CHECK(r.edges == edges, "root %llu: %llu edges in the component, expected %llu",
          (unsigned long long)root, (unsigned long long)r.edges, (unsigned long long)edges);
    char why[256];
    uint64_t bad = cr_graph_bfs_validate(g, root, r.parent, r.level, why, sizeof why);
    CHECK(bad == 0, "root %llu: %llu violations: %s", (unsigned long long)root,
          (unsigned long long)bad, why);
    CHECK(r.visits >= r.reached, "%llu visits for %llu reached", (unsigned long long)r.visits,
          (unsigned long long)r.reached);
    cr_graph_bfs_result_free(&r);
}

/* Every algorithm, and the hybrid one in every direction, is one of these. */
static cr_bfs_opts variant(int k)
{
    cr_bfs_opts o;
    cr_graph_bfs_opts_init(&o);
    static const cr_bfs_algorithm algos[] = {CR_BFS_LEVELS, CR_BFS_ASYNC, CR_BFS_LEVELS_DEDUP};
    if (k < 3) {
        o.algorithm = algos[k];
    } else {
        o.algorithm = CR_BFS_HYBRID;
        o.direction = (cr_bfs_direction)(k - 3); /* auto, top-down, bottom-up, alternate */
    }
    return o;
}
#define NVARIANTS 7

/* Every algorithm must give the same exact levels. */
static void expect_levels(cr_graph *g, uint64_t root, const int *want, uint64_t reached,
                          uint64_t edges)
{
    for (int k = 0; k < NVARIANTS; k++) {
        cr_bfs_opts o = variant(k);
        expect_levels_with(g, &o, root, want, reached, edges);
    }
}

static void test_path(void **state)
{
    (void)state;
    cr_comm *comm = open_comm();
    uint64_t e[9][2];
    for (int i = 0; i < 9; i++)
        e[i][0] = (uint64_t)i + 1, e[i][1] = (uint64_t)i; /* both orientations must work */
    cr_graph *g = build(comm, (const uint64_t(*)[2])e, 9, 10);
    int want[10];
    for (int v = 0; v < 10; v++)
        want[v] = v;
    expect_levels(g, 0, want, 10, 9);
    for (int v = 0; v < 10; v++)
        want[v] = abs(v - 5);
    expect_levels(g, 5, want, 10, 9);
    cr_graph_destroy(g);
    cr_comm_destroy(comm);
    verdict();
}

static void test_star(void **state)
{
    (void)state;
    cr_comm *comm = open_comm();
    uint64_t e[20][2];
    for (int i = 0; i < 20; i++)
        e[i][0] = 0, e[i][1] = (uint64_t)i + 1;
    cr_graph *g = build(comm, (const uint64_t(*)[2])e, 20, 21);
    int want[21];
    want[0] = 0;
    for (int v = 1; v <= 20; v++)
        want[v] = 1;
    expect_levels(g, 0, want, 21, 20);
    for (int v = 0; v <= 20; v++)
        want[v] = v == 3 ? 0 : v == 0 ? 1 : 2;
    expect_levels(g, 3, want, 21, 20);
    cr_graph_destroy(g);
    cr_comm_destroy(comm);
    verdict();
}

/* Two paths and an isolated vertex; duplicate edges count as input edges of their
 * component, self-loops do not (the Graph500 reference's count); neither changes a
 * level. Vertex 4 has two loops. */
static void test_components_loops_duplicates(void **state)
{
    (void)state;
    cr_comm *comm = open_comm();
    const uint64_t e[][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {5, 6}, {6, 7}, {7, 8}, {8, 9},
                             {1, 1}, {0, 1}, {1, 0}, {4, 4}, {9, 9}, {6, 5}, {4, 4}};
    cr_graph *g = build(comm, e, sizeof e / sizeof e[0], 11);
    int want[11] = {0, 1, 2, 3, 4, -1, -1, -1, -1, -1, -1};
    expect_levels(g, 0, want, 5, 4 + 2); /* 4 path edges, 2 duplicates; 3 loops not */
    int want2[11] = {-1, -1, -1, -1, -1, 2, 1, 0, 1, 2, -1};
    expect_levels(g, 7, want2, 5, 4 + 1); /* and 1 duplicate; 1 loop not */
    int want3[11] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0};
    expect_levels(g, 10, want3, 1, 0);
    cr_graph_destroy(g);
    cr_comm_destroy(comm);
    verdict();
}

/* ---------------------------------------------------------------- broken trees */

typedef enum breakage { WRONG_PARENT, CYCLE, LEVEL_GAP, NOT_SPANNING, NOT_AN_EDGE, BAD_ROOT,
                        CHORD_GAP } breakage;

/* BFS on the path 0..9 from 0, break the tree, and expect the validator to object
 * with `expect` (or one of the alternatives it separates by '|') in its message on some rank. */
static void expect_rejected(breakage b, const char *expect)
{
    cr_comm *comm = open_comm();
    uint64_t e[10][2];
    for (int i = 0; i < 9; i++)
        e[i][0] = (uint64_t)i, e[i][1] = (uint64_t)i + 1;
    e[9][0] = 2, e[9][1] = 7; /* a chord, so a non-edge parent can have the right level */
    cr_graph *g = build(comm, (const uint64_t(*)[2])e, 10, 10);
    cr_bfs_result r;
    cr_graph_bfs(g, 0, &r);
    uint64_t first = cr_graph_first(g), count = cr_graph_local_count(g);
#define SET(v, p, l)                                                                     \
    do {                                                                                 \
        if ((v) >= first && (v) < first + count)                                         \
            r.parent[(v) - first] = (p), r.level[(v) - first] = (l);                     \
    } while (0)
    switch (b) {
    case WRONG_PARENT: SET(5u, 3, 4); break;          /* 3 is at level 3, but not adjacent */
    case CYCLE: SET(4u, 5, 4); SET(5u, 4, 5); break; /* 4 and 5 each other's parent */
    case LEVEL_GAP: SET(5u, 4, 6); break;
    case NOT_SPANNING: SET(9u, -1, -1); break;
    case NOT_AN_EDGE: SET(4u, 8, 4); break;          /* 8 is not adjacent to 4 */
    case BAD_ROOT: SET(0u, 1, 1); break;
    case CHORD_GAP: /* the path alone as the tree: every parent is right, the chord is not */
        for (uint64_t v = 1; v < 10; v++)
            SET(v, (int64_t)v - 1, (int32_t)v);
        break;
    }
#undef SET
    char why[256];
    uint64_t bad = cr_graph_bfs_validate(g, 0, r.parent, r.level, why, sizeof why);
    CHECK(bad > 0, "breakage %d was not detected", b);
    int found = 0, any;
    for (const char *alt = expect; *alt; alt += strcspn(alt, "|") + (alt[strcspn(alt, "|")] != 0)) {
        char one[128];
        snprintf(one, sizeof one, "%.*s", (int)strcspn(alt, "|"), alt);
        found |= strstr(why, one) != NULL;
    }
    MPI_Allreduce(&found, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(any, "breakage %d: no rank reported '%s' (this rank: '%s')", b, expect, why);
    cr_graph_bfs_result_free(&r);
    cr_graph_destroy(g);
    cr_comm_destroy(comm);
    verdict();
}

static void test_rejects_wrong_parent(void **s) { (void)s; expect_rejected(WRONG_PARENT, "is not an input edge"); }
static void test_rejects_cycle(void **s) { (void)s; expect_rejected(CYCLE, "but its parent 5 has level 5"); }
static void test_rejects_level_gap(void **s) { (void)s; expect_rejected(LEVEL_GAP, "vertex 5 has level 6 but its parent 4 has level 4|edge (4, 5) joins levels 4 and 6|"
                                          "edge (5, 6) joins levels 6 and 4"); }
/* Only the edge check sees this one: every parent is an input edge one level up. */
static void test_rejects_edge_across_levels(void **s) { (void)s; expect_rejected(CHORD_GAP, "edge (2, 7) joins levels 2 and 7|edge (7, 2) joins levels 7 and 2"); }
static void test_rejects_unspanned_vertex(void **s) { (void)s; expect_rejected(NOT_SPANNING, "does not span the component"); }
static void test_rejects_non_edge(void **s) { (void)s; expect_rejected(NOT_AN_EDGE, "tree edge (8, 4) is not an input edge"); }
static void test_rejects_bad_root(void **s) { (void)s; expect_rejected(BAD_ROOT, "the root 0 has parent 1"); }

/* A generated graph: every search validates, and the reached counts agree with a
 * second search from the same root. */
static void test_rmat_validates(void **state)
{
    (void)state;
    cr_comm *comm = open_comm();
    cr_gen_params p;
    cr_graph_gen_params_init(&p);
    p.scale = 10;
    cr_edge_list l;
    CHECK(cr_graph_generate(&p, test_rank, test_size, &l, NULL, 0) == 0, "generate");
    cr_graph *g = cr_graph_build(comm, &l);
    cr_graph_edges_free(&l);
    for (uint64_t root = 0; root < 1024; root += 97) {
        cr_bfs_result r[NVARIANTS];
        for (int a = 0; a < NVARIANTS; a++) {
            cr_bfs_opts o = variant(a);
            cr_graph_bfs_run(g, &o, root, &r[a]);
            char why[256];
            uint64_t bad = cr_graph_bfs_validate(g, root, r[a].parent, r[a].level, why, sizeof why);
            CHECK(bad == 0, "root %llu, variant %d: %s", (unsigned long long)root, a, why);
        }
        /* the same levels (parents may differ) */
        for (int a = 1; a < NVARIANTS; a++) {
            int same = memcmp(r[0].level, r[a].level,
                              cr_graph_local_count(g) * sizeof *r[0].level) == 0;
            CHECK(same && r[0].reached == r[a].reached && r[0].levels == r[a].levels &&
                      r[0].edges == r[a].edges,
                  "root %llu: variant %d disagrees with the level-synchronous search",
                  (unsigned long long)root, a);
        }
        /* forced directions do what they say */
        CHECK(r[4].bottom_up_levels == 0 && r[5].bottom_up_levels == r[5].levels,
              "root %llu: top-down did %d bottom-up levels, bottom-up %d of %d",
              (unsigned long long)root, r[4].bottom_up_levels, r[5].bottom_up_levels,
              r[5].levels);
        for (int a = 0; a < NVARIANTS; a++)
            cr_graph_bfs_result_free(&r[a]);
    }
    cr_graph_destroy(g);
    cr_comm_destroy(comm);
    verdict();
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* A copy of local vertex i's neighbours (malloc'd, one spare slot), and how many. */
static uint64_t *neighbours_of(const cr_graph *g, uint64_t i, uint64_t *degree)
{
    *degree = cr_graph_degree(g, i);
    uint64_t *ids = malloc((*degree + 1) * sizeof *ids);
    for (uint64_t k = 0; k < *degree; k++)
        ids[k] = cr_graph_neighbour(g, i, k);
    return ids;
}

/* Both shuffles build the same graph: the same neighbours for every vertex. */
static void test_shuffles_agree(void **state)
{
    (void)state;
    cr_comm *comm = open_comm();
    cr_gen_params p;
    cr_graph_gen_params_init(&p);
    p.scale = 9;
    cr_edge_list l;
    CHECK(cr_graph_generate(&p, test_rank, test_size, &l, NULL, 0) == 0, "generate");
    cr_graph *a = cr_graph_build_with(comm, &l, CR_SHUFFLE_MAILBOX);
    cr_graph *b = cr_graph_build_with(comm, &l, CR_SHUFFLE_EXCHANGE);
    cr_graph_edges_free(&l);
    uint64_t ends = 0;
    for (uint64_t i = 0; i < cr_graph_local_count(a); i++) {
        uint64_t da, db;
        uint64_t *x = neighbours_of(a, i, &da), *y = neighbours_of(b, i, &db);
        qsort(x, da, sizeof *x, cmp_u64);
        qsort(y, db, sizeof *y, cmp_u64);
        CHECK(da == db && memcmp(x, y, da * sizeof *x) == 0, "vertex %llu differs",
              (unsigned long long)(cr_graph_first(a) + i));
        ends += da;
        free(x);
        free(y);
    }
    uint64_t total = sum_all(ends);
    CHECK(total == 2 * 16 * 512, "%llu edge ends in the graph", (unsigned long long)total);
    cr_graph_destroy(a);
    cr_graph_destroy(b);
    cr_comm_destroy(comm);
    verdict();
}

/* One end of an edge as a list holds it: the neighbour and the weight's bits. */
typedef struct end_w {
    uint64_t v, w;
} end_w;

static int cmp_end(const void *a, const void *b)
{
    const end_w *x = a, *y = b;
    return x->v != y->v ? (x->v < y->v ? -1 : 1) : (x->w < y->w ? -1 : x->w > y->w);
}

/* Every local vertex has the same neighbours with the same weights in a and b. */
static void check_same_graph(const cr_graph *a, const cr_graph *b, const char *what)
{
    CHECK(cr_graph_vertices(a) == cr_graph_vertices(b) &&
          cr_graph_local_count(a) == cr_graph_local_count(b) &&
          cr_graph_weighted(a) == cr_graph_weighted(b), "%s: other vertices or weights", what);
    for (uint64_t i = 0; i < cr_graph_local_count(a); i++) {
        uint64_t da = cr_graph_degree(a, i), db = cr_graph_degree(b, i);
        const float *wa = cr_graph_weights(a, i), *wb = cr_graph_weights(b, i);
        if (da != db) {
            CHECK(0, "%s: vertex %llu has %llu and %llu neighbours", what,
                  (unsigned long long)(cr_graph_first(a) + i), (unsigned long long)da,
                  (unsigned long long)db);
            continue;
        }
        end_w *x = calloc(da + 1, sizeof *x), *y = calloc(db + 1, sizeof *y);
        for (uint64_t k = 0; k < da; k++) {
            x[k].v = cr_graph_neighbour(a, i, k), y[k].v = cr_graph_neighbour(b, i, k);
            float fa = wa ? wa[k] : 0, fb = wb ? wb[k] : 0;
            memcpy(&x[k].w, &fa, sizeof fa);
            memcpy(&y[k].w, &fb, sizeof fb);
        }
        qsort(x, da, sizeof *x, cmp_end);
        qsort(y, db, sizeof *y, cmp_end);
        CHECK(memcmp(x, y, da * sizeof *x) == 0, "%s: vertex %llu's neighbours differ", what,
              (unsigned long long)(cr_graph_first(a) + i));
        free(x);
        free(y);
    }
}

static void push_edge(cr_edge_list *l, uint64_t u, uint64_t v, const float *w)
{
    if (l->count == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->edges = realloc(l->edges, l->cap * sizeof *l->edges);
        if (w)
            l->weights = realloc(l->weights, l->cap * sizeof *l->weights);
    }
    l->edges[l->count] = (cr_edge){u, v};
    if (w)
        l->weights[l->count] = *w;
    l->count++;
}

/* cr_graph_build_consume builds what cr_graph_build does from the same list (packed
 * to 4-byte ids on the way: ids up to 2^20 here, so a narrower packing fails), and
 * leaves the list empty with its vertex count. */
static void test_consume_agrees(void **state)
{
    (void)state;
    cr_comm *comm = open_comm();
    for (int weighted = 0; weighted < 2; weighted++) {
        cr_edge_list l = {.nvertices = 1u << 20}, mine = {.nvertices = 1u << 20};
        uint64_t x = 0x9e3779b97f4a7c15ULL * (uint64_t)(test_rank + 1);
        for (int k = 0; k < 3000 + 1000 * test_rank; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            uint64_t u = x % l.nvertices, v = (x >> 24) % l.nvertices;
            if (k % 97 == 0)
                v = u; /* self-loops */
            float w = (float)(1 + (x >> 50) % 255);
            push_edge(&l, u, v, weighted ? &w : NULL);
            push_edge(&mine, u, v, weighted ? &w : NULL);
            if (k % 31 == 0) { /* a repeated edge */
                push_edge(&l, v, u, weighted ? &w : NULL);
                push_edge(&mine, v, u, weighted ? &w : NULL);
            }
        }
        uint64_t edges = sum_all(l.count);
        cr_graph *a = cr_graph_build(comm, &l);
        cr_graph *b = cr_graph_build_consume(comm, &mine);
        CHECK(mine.count == 0 && mine.edges == NULL && mine.weights == NULL &&
              mine.nvertices == (1u << 20), "the consumed list is not left empty");
        check_same_graph(a, b, weighted ? "weighted" : "unweighted");
        uint64_t ends = 0;
        for (uint64_t i = 0; i < cr_graph_local_count(b); i++) {
            ends += cr_graph_degree(b, i);
        }
        CHECK(sum_all(ends) == 2 * edges, "%llu edge ends for %llu edges",
              (unsigned long long)sum_all(ends), (unsigned long long)edges);
        cr_graph_destroy(a);
        cr_graph_destroy(b);
        cr_graph_edges_free(&l);
    }
    cr_comm_destroy(comm);
    verdict();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path),
        cmocka_unit_test(test_star),
        cmocka_unit_test(test_components_loops_duplicates),
        cmocka_unit_test(test_rejects_wrong_parent),
        cmocka_unit_test(test_rejects_cycle),
        cmocka_unit_test(test_rejects_level_gap),
        cmocka_unit_test(test_rejects_edge_across_levels),
        cmocka_unit_test(test_rejects_unspanned_vertex),
        cmocka_unit_test(test_rejects_non_edge),
        cmocka_unit_test(test_rejects_bad_root),
        cmocka_unit_test(test_rmat_validates),
        cmocka_unit_test(test_shuffles_agree),
        cmocka_unit_test(test_consume_agrees),
    };
    return RUN_MPI_TESTS(argc, argv, tests);
}
