/* The apps' distributed check of a component labelling (apps/common/components.c):
 * it passes a correct labelling and counts each kind of broken one exactly. The
 * graph is a path 0 - 1 - ... - n-1 split into two components by leaving out the
 * edge (h-1, h), h = n / 2; each rank holds its block of vertices and the edges that
 * start there. */
#include "harness.h"

#include "components.h"

#include <courier.h>

#include <stdlib.h>

typedef struct pair {
    uint64_t u, v;
} pair;

typedef struct world {
    app a;
    cr_comm *comm;
    uint64_t n, h, first, count;
    uint64_t *label;
    pair *edges;
    size_t m;
} world;

static void setup(world *w)
{
    w->a = (app){.name = "test", .rank = test_rank, .size = test_size};
    w->comm = cr_comm_create(MPI_COMM_WORLD, NULL);
    w->n = 10 * (uint64_t)test_size + 3, w->h = w->n / 2;
    uint64_t base = w->n / (uint64_t)test_size, extra = w->n % (uint64_t)test_size;
    uint64_t r = (uint64_t)test_rank;
    w->first = r * base + (r < extra ? r : extra);
    w->count = base + (r < extra);
    w->label = calloc(w->count + 1, 8);
    w->edges = calloc(w->count + 1, sizeof *w->edges);
    w->m = 0;
    for (uint64_t i = 0; i < w->count; i++) {
        uint64_t v = w->first + i;
        w->label[i] = v < w->h ? 0 : w->h; /* the smallest id of each half */
        if (v + 1 < w->n && v + 1 != w->h)
            w->edges[w->m++] = (pair){v, v + 1};
    }
}

static void teardown(world *w)
{
    free(w->label), free(w->edges);
    cr_comm_destroy(w->comm);
}

static app_components_check run(world *w, int smallest, uint64_t forest)
{
    return app_check_components(&w->a, w->comm, w->n, w->first, w->label, w->count, w->edges,
                                w->m, sizeof *w->edges, smallest, forest);
}

/* Relabel vertex v (on whichever rank holds it). */
static void set_label(world *w, uint64_t v, uint64_t label)
{
    if (v >= w->first && v < w->first + w->count)
        w->label[v - w->first] = label;
}

static void test_correct(void **state)
{
    (void)state;
    world w;
    setup(&w);
    app_components_check c = run(&w, 1, w.n - 2);
    CHECK(c.ok, "a correct labelling fails");
    CHECK(c.components == 2, "%llu components", (unsigned long long)c.components);
    CHECK(c.split_edges == 0 && c.stray_labels == 0 && c.above_self == 0, "counts");
    teardown(&w);
    verdict();
}

static void test_split_edge(void **state)
{
    (void)state;
    world w;
    setup(&w);
    set_label(&w, w.n - 1, w.n - 1); /* the last vertex alone: a root, one edge split */
    app_components_check c = run(&w, 1, UINT64_MAX);
    CHECK(!c.ok, "passes");
    CHECK(c.split_edges == 1, "%llu split edges", (unsigned long long)c.split_edges);
    CHECK(c.components == 3, "%llu components", (unsigned long long)c.components);
    teardown(&w);
    verdict();
}

static void test_stray_label(void **state)
{
    (void)state;
    world w;
    setup(&w);
    /* h and h + 1 labelled h; the rest of the second half h + 1, which is no root:
     * one split edge, (h + 1, h + 2), and n - h - 2 stray labels */
    for (uint64_t v = w.h + 2; v < w.n; v++)
        set_label(&w, v, w.h + 1);
    app_components_check c = run(&w, 0, UINT64_MAX);
    CHECK(!c.ok, "passes");
    CHECK(c.split_edges == 1, "%llu split edges", (unsigned long long)c.split_edges);
    CHECK(c.stray_labels == w.n - w.h - 2, "%llu stray labels", (unsigned long long)c.stray_labels);
    teardown(&w);
    verdict();
}

static void test_above_self(void **state)
{
    (void)state;
    world w;
    setup(&w);
    for (uint64_t v = 0; v < w.h; v++) /* the first half labelled by its largest id */
        set_label(&w, v, w.h - 1);
    app_components_check c = run(&w, 0, w.n - 2);
    CHECK(c.ok, "the largest id is a valid label when the smallest is not asked");
    c = run(&w, 1, w.n - 2);
    CHECK(!c.ok && c.above_self == w.h - 1, "%llu above", (unsigned long long)c.above_self);
    teardown(&w);
    verdict();
}

static void test_forest_size(void **state)
{
    (void)state;
    world w;
    setup(&w);
    CHECK(!run(&w, 1, w.n - 1).ok, "a forest with one edge too many passes");
    CHECK(!run(&w, 1, w.n - 3).ok, "a forest with one edge too few passes");
    set_label(&w, 0, w.n); /* not a vertex */
    app_components_check c = run(&w, 1, UINT64_MAX);
    CHECK(!c.ok, "a label out of range passes");
    teardown(&w);
    verdict();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_correct),     cmocka_unit_test(test_split_edge),
        cmocka_unit_test(test_stray_label), cmocka_unit_test(test_above_self),
        cmocka_unit_test(test_forest_size),
    };
    return RUN_MPI_TESTS(argc, argv, tests);
}
