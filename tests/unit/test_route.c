/* Routes as pure functions: every (me, dest) pair is delivered, within the documented
 * number of hops, for every P from 1 to 64 and every kind of node layout. */
#include "courier/route.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define PMAX 64

static cr_route parse(const char *text)
{
    cr_route r;
    char err[256] = "";
    if (cr_route_parse(text, &r, err, sizeof err))
        fail_msg("cannot parse %s: %s", text, err);
    return r;
}

/* Follow next_hop from me to dest; returns the number of hops, or -1 if a hop leaves
 * [0, P), stands still or the walk exceeds the bound. */
static int walk(const cr_router *rt, int p, int me, int dest, int bound, int *path)
{
    int at = me, hops = 0;
    while (at != dest) {
        int next = cr_router_next_hop(rt, at, dest);
        if (next < 0 || next >= p || next == at || hops >= bound)
            return -1;
        if (path)
            path[hops] = next;
        at = next;
        hops++;
    }
    return hops;
}

/* Walk every pair under one route and layout. */
static void check_all_pairs(const char *route_text, const cr_layout *l)
{
    cr_route r = parse(route_text);
    char err[256] = "";
    cr_router *rt = cr_router_create(&r, l, err, sizeof err);
    int p = cr_layout_ranks(l);
    if (!rt)
        fail_msg("%s at P=%d: %s", route_text, p, err);
    int bound = cr_router_max_hops(rt);
    for (int me = 0; me < p; me++)
        for (int dest = 0; dest < p; dest++) {
            if (me == dest)
                continue;
            int hops = walk(rt, p, me, dest, bound, NULL);
            if (hops < 1)
                fail_msg("%s, P=%d, %d nodes: %d -> %d not delivered in %d hops", route_text, p,
                         cr_layout_nodes(l), me, dest, bound);
        }
    cr_router_destroy(rt);
}

/* Layouts for one P: node sizes 1, 2, 3, the whole job, and an uneven, interleaved one. */
static void for_each_layout(int p, void (*fn)(const cr_layout *, void *), void *arg)
{
    int sizes[] = {1, 2, 3, p};
    for (int i = 0; i < 4; i++) {
        cr_layout *l = cr_layout_create_blocks(p, sizes[i]);
        fn(l, arg);
        cr_layout_destroy(l);
    }
    /* ranks dealt round-robin to ceil(P/3) nodes, then the last rank alone */
    int *node_of = malloc((size_t)p * sizeof *node_of);
    int nodes = (p + 2) / 3;
    for (int r = 0; r < p; r++)
        node_of[r] = r == p - 1 ? p - 1 : r % nodes;
    cr_layout *l = cr_layout_create(p, node_of);
    assert_non_null(l);
    fn(l, arg);
    cr_layout_destroy(l);
    free(node_of);
}

static void pairs_for_layout(const cr_layout *l, void *arg)
{
    const char **routes = arg;
    for (int i = 0; routes[i]; i++)
        check_all_pairs(routes[i], l);
}

static void test_every_route_delivers_every_pair(void **state)
{
    (void)state;
    const char *routes[] = {"direct", "nr", "nlnr", "grid", "hypercube", NULL};
    for (int p = 1; p <= PMAX; p++)
        for_each_layout(p, pairs_for_layout, routes);
}

/* Grids of several shapes with and without holes. */
static void test_grid_shapes(void **state)
{
    (void)state;
    for (int p = 1; p <= PMAX; p++) {
        cr_layout *l = cr_layout_create_blocks(p, 1);
        char text[64];
        /* 3-D, 4-D and a long 1-D grid, each just large enough */
        int c3 = 1;
        while (c3 * c3 * c3 < p)
            c3++;
        snprintf(text, sizeof text, "grid:%dx%dx%d", c3, c3, c3);
        check_all_pairs(text, l);
        int c4 = 1;
        while (c4 * c4 * c4 * c4 < p)
            c4++;
        snprintf(text, sizeof text, "grid:%dx%dx%dx%d", c4, c4, c4, c4);
        check_all_pairs(text, l);
        snprintf(text, sizeof text, "grid:%d", p);
        check_all_pairs(text, l);
        snprintf(text, sizeof text, "grid:1x%dx1", p);
        check_all_pairs(text, l);
        /* a grid of 2s with holes */
        int bits = 0;
        while ((1 << bits) < p)
            bits++;
        strcpy(text, "grid:2");
        for (int b = 1; b < bits; b++)
            strcat(text, "x2");
        check_all_pairs(text, l);
        /* the most dimensions a grid may have, most of them 1 */
        strcpy(text, "grid:");
        for (int d = 0; d < CR_ROUTE_MAX_DIMS - 1; d++)
            strcat(text, d == 7 ? "2x" : "1x");
        snprintf(text + strlen(text), sizeof text - strlen(text), "%d", (p + 1) / 2);
        check_all_pairs(text, l);
        cr_layout_destroy(l);
    }
}

static int hops_of(const char *route_text, int p, int me, int dest, int *path)
{
    cr_layout *l = cr_layout_create_blocks(p, 1);
    cr_route r = parse(route_text);
    cr_router *rt = cr_router_create(&r, l, NULL, 0);
    assert_non_null(rt);
    int h = walk(rt, p, me, dest, 64, path);
    cr_router_destroy(rt);
    cr_layout_destroy(l);
    return h;
}

/* In a complete grid a record takes one hop per coordinate that differs. */
static void test_complete_grid_hops_are_exact(void **state)
{
    (void)state;
    unsigned dims[3] = {3, 4, 5};
    int p = 60;
    for (int me = 0; me < p; me++)
        for (int dest = 0; dest < p; dest++) {
            if (me == dest)
                continue;
            int differ = 0, a = me, b = dest;
            for (int s = 2; s >= 0; s--) {
                differ += a % (int)dims[s] != b % (int)dims[s];
                a /= (int)dims[s];
                b /= (int)dims[s];
            }
            assert_int_equal(hops_of("grid:3x4x5", p, me, dest, NULL), differ);
        }
}

/* Exact paths from the thesis's figures: dimension 0 first, holes spread over the
 * remaining ranks of their block. */
static void test_known_paths(void **state)
{
    (void)state;
    int path[8];
    /* 3x3 grid, P = 7: row 2 holds only rank 6. 1 -> 6 goes to row 2 first: cell 7
     * is a hole, so (7 - 6) mod 1 picks rank 6 directly. */
    assert_int_equal(hops_of("grid:3x3", 7, 1, 6, path), 1);
    assert_int_equal(path[0], 6);
    /* 5 -> 0: row 0 column 2 (rank 2), then column 0. */
    assert_int_equal(hops_of("grid:3x3", 7, 5, 0, path), 2);
    assert_int_equal(path[0], 2);
    assert_int_equal(path[1], 0);
    /* 3x4 grid, P = 10: row 2 holds ranks 8 and 9. Column 3 of row 2 is a hole, so
     * 3 -> 8 enters row 2 at 8 + (3 mod 2) = 9: the hole's traffic is spread. */
    assert_int_equal(hops_of("grid:3x4", 10, 3, 8, path), 2);
    assert_int_equal(path[0], 9);
    assert_int_equal(path[1], 8);
    assert_int_equal(hops_of("grid:3x4", 10, 2, 9, path), 2);
    assert_int_equal(path[0], 8);
    /* hypercube P = 5: rank 4 is represented by 0. */
    assert_int_equal(hops_of("hypercube", 5, 4, 3, path), 3);
    assert_int_equal(path[0], 0);
    assert_int_equal(path[1], 2);
    assert_int_equal(path[2], 3);
    assert_int_equal(hops_of("hypercube", 5, 3, 4, path), 3);
    assert_int_equal(path[0], 1);
    assert_int_equal(path[1], 0);
    assert_int_equal(path[2], 4);
    /* complete hypercube: highest bit first */
    assert_int_equal(hops_of("hypercube", 8, 0, 7, path), 3);
    assert_int_equal(path[0], 4);
    assert_int_equal(path[1], 6);
    assert_int_equal(path[2], 7);
}

/* NLNR: each rank's off-node next hops (over all pairs through it) are at most the
 * number of nodes, and node pairs use one link in both directions. */
static void nlnr_partners(const cr_layout *l, void *arg)
{
    (void)arg;
    int p = cr_layout_ranks(l), nodes = cr_layout_nodes(l);
    cr_route r = parse("nlnr");
    cr_router *rt = cr_router_create(&r, l, NULL, 0);
    uint8_t *link = calloc((size_t)p * (size_t)p, 1);
    for (int me = 0; me < p; me++)
        for (int dest = 0; dest < p; dest++)
            if (me != dest) {
                int path[4], at = me;
                int hops = walk(rt, p, me, dest, 3, path);
                assert_true(hops >= 1 && hops <= 3);
                for (int h = 0; h < hops; h++) {
                    link[(size_t)at * (size_t)p + (size_t)path[h]] = 1;
                    at = path[h];
                }
            }
    for (int a = 0; a < p; a++) {
        int off = 0;
        for (int b = 0; b < p; b++)
            if (link[(size_t)a * (size_t)p + (size_t)b] &&
                cr_layout_node_of(l, a) != cr_layout_node_of(l, b)) {
                off++;
                assert_true(link[(size_t)b * (size_t)p + (size_t)a]);
            }
        if (off > nodes - 1)
            fail_msg("P=%d, %d nodes: rank %d has %d off-node partners", p, nodes, a, off);
    }
    /* between two nodes there is exactly one link per direction */
    for (int na = 0; na < nodes; na++)
        for (int nb = 0; nb < nodes; nb++) {
            if (na == nb)
                continue;
            int links = 0;
            for (int a = 0; a < p; a++)
                for (int b = 0; b < p; b++)
                    links += link[(size_t)a * (size_t)p + (size_t)b] &&
                             cr_layout_node_of(l, a) == na && cr_layout_node_of(l, b) == nb;
            assert_int_equal(links, 1);
        }
    free(link);
    cr_router_destroy(rt);
}

static void test_nlnr_partners_bounded(void **state)
{
    (void)state;
    for (int p = 1; p <= 40; p++)
        for_each_layout(p, nlnr_partners, NULL);
}

/* NR: the one off-node hop lands on the destination's node. */
static void test_nr_crosses_once(void **state)
{
    (void)state;
    cr_layout *l = cr_layout_create_blocks(11, 3);
    cr_route r = parse("nr");
    cr_router *rt = cr_router_create(&r, l, NULL, 0);
    for (int me = 0; me < 11; me++)
        for (int dest = 0; dest < 11; dest++) {
            if (me == dest)
                continue;
            int next = cr_router_next_hop(rt, me, dest);
            assert_int_equal(cr_layout_node_of(l, next), cr_layout_node_of(l, dest));
            if (cr_layout_node_of(l, me) != cr_layout_node_of(l, dest))
                assert_int_equal(cr_layout_local_index(l, next),
                                 cr_layout_local_index(l, me) %
                                     cr_layout_node_size(l, cr_layout_node_of(l, dest)));
        }
    cr_router_destroy(rt);
    cr_layout_destroy(l);
}

static void test_layouts(void **state)
{
    (void)state;
    cr_layout *l = cr_layout_create_blocks(8, 3);
    assert_int_equal(cr_layout_nodes(l), 3);
    assert_int_equal(cr_layout_node_size(l, 0), 3);
    assert_int_equal(cr_layout_node_size(l, 2), 2);
    assert_int_equal(cr_layout_member(l, 2, 1), 7);
    assert_int_equal(cr_layout_local_index(l, 7), 1);
    cr_layout_destroy(l);
    /* ids renumbered by lowest rank; interleaved members */
    int node_of[6] = {5, 2, 5, 2, 0, 5};
    l = cr_layout_create(6, node_of);
    assert_int_equal(cr_layout_nodes(l), 3);
    assert_int_equal(cr_layout_node_of(l, 0), 0);
    assert_int_equal(cr_layout_node_of(l, 1), 1);
    assert_int_equal(cr_layout_node_of(l, 4), 2);
    assert_int_equal(cr_layout_node_size(l, 0), 3);
    assert_int_equal(cr_layout_member(l, 0, 2), 5);
    assert_int_equal(cr_layout_local_index(l, 3), 1);
    cr_layout_destroy(l);
    int bad[2] = {0, 2};
    assert_null(cr_layout_create(2, bad));
    assert_null(cr_layout_create_blocks(0, 1));
    assert_null(cr_layout_create_cut(2, bad, 1));
    assert_null(cr_layout_create_cut(6, node_of, 0));
}

/* Virtual nodes cut from real ones never span two: hosts of 1, 2 and 1 ranks cut by 2
 * stay three nodes (cutting the ranks in blocks would pair ranks 0 and 1, which live
 * on different hosts); interleaved members are cut in rank order; one real node cut
 * by k is cr_layout_create_blocks. */
static void test_layout_cuts(void **state)
{
    (void)state;
    int hosts[4] = {0, 1, 1, 3};
    cr_layout *l = cr_layout_create_cut(4, hosts, 2);
    assert_int_equal(cr_layout_nodes(l), 3);
    assert_int_equal(cr_layout_node_of(l, 0), 0);
    assert_int_equal(cr_layout_node_of(l, 1), 1);
    assert_int_equal(cr_layout_node_of(l, 2), 1);
    assert_int_equal(cr_layout_node_of(l, 3), 2);
    cr_layout_destroy(l);
    int mixed[7] = {0, 1, 0, 1, 0, 1, 0}; /* evens on one node, odds on another */
    l = cr_layout_create_cut(7, mixed, 2);
    assert_int_equal(cr_layout_nodes(l), 4);
    assert_int_equal(cr_layout_member(l, 0, 1), 2);  /* {0, 2} */
    assert_int_equal(cr_layout_member(l, 1, 1), 3);  /* {1, 3} */
    assert_int_equal(cr_layout_member(l, 2, 1), 6);  /* {4, 6} */
    assert_int_equal(cr_layout_node_size(l, 3), 1);  /* {5} */
    assert_int_equal(cr_layout_node_of(l, 5), 3);
    cr_layout_destroy(l);
    int one[8] = {0};
    l = cr_layout_create_cut(8, one, 3);
    cr_layout *b = cr_layout_create_blocks(8, 3);
    assert_int_equal(cr_layout_nodes(l), cr_layout_nodes(b));
    for (int r = 0; r < 8; r++)
        assert_int_equal(cr_layout_node_of(l, r), cr_layout_node_of(b, r));
    cr_layout_destroy(b);
    cr_layout_destroy(l);
}

static void test_parse_and_format(void **state)
{
    (void)state;
    const char *good[] = {"direct", "nr", "nlnr", "grid", "hypercube", "grid:4x2", "grid:2x2x2",
                          "grid:16", "grid:2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x16"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        cr_route r = parse(good[i]);
        char back[64];
        cr_route_format(&r, back, sizeof back);
        assert_string_equal(back, good[i]);
    }
    const char *bad[] = {"", "Direct", "grid:", "grid:0x2", "grid:4x", "grid:4xx2", "grid:a",
                         "grid:1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1", "mesh", "nlnr ", "grid:2x3x"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_route r = {.kind = CR_ROUTE_NR};
        char err[256] = "";
        assert_int_equal(cr_route_parse(bad[i], &r, err, sizeof err), -1);
        assert_int_equal(r.kind, CR_ROUTE_NR);
        assert_non_null(strstr(err, "is not valid"));
    }
    /* a grid too small for the job */
    cr_layout *l = cr_layout_create_blocks(9, 1);
    cr_route r = parse("grid:2x4");
    char err[256] = "";
    assert_null(cr_router_create(&r, l, err, sizeof err));
    assert_non_null(strstr(err, "grid:2x4 has 8 cells but the job has 9 ranks"));
    r = parse("grid");
    cr_router *rt = cr_router_create(&r, l, err, sizeof err);
    char name[64];
    cr_route_format(cr_router_route(rt), name, sizeof name);
    assert_string_equal(name, "grid:3x3");
    assert_int_equal(cr_router_max_hops(rt), 2);
    cr_router_destroy(rt);
    cr_layout_destroy(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_route_delivers_every_pair),
        cmocka_unit_test(test_grid_shapes),
        cmocka_unit_test(test_complete_grid_hops_are_exact),
        cmocka_unit_test(test_known_paths),
        cmocka_unit_test(test_nlnr_partners_bounded),
        cmocka_unit_test(test_nr_crosses_once),
        cmocka_unit_test(test_layouts),
        cmocka_unit_test(test_layout_cuts),
        cmocka_unit_test(test_parse_and_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
