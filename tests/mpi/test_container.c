/* The containers (include/courier/container.h) under mpirun, under every route with
 * virtual nodes of 2 and small buffers, so inserts meet and merge at their source and
 * at forwarding ranks: exact counts, merge rules with combining on and off, erase,
 * look-ups, visits that send from inside visitors, the bag's rebalance and gather,
 * and the disjoint set against a sequential union-find. The scenarios are shared
 * with the simulated transport (tests/container_scenarios.h). */
#include "harness.h"

#include "../container_scenarios.h"

#include <courier.h>

#include <stdlib.h>

static const char *const routes[] = {"direct", "nr", "nlnr", "grid", "hypercube"};
#define NROUTES (sizeof routes / sizeof routes[0])

static cr_comm *comm_for(const char *route)
{
    cr_config cfg;
    config_on_route(&cfg, route, 512);
    return cr_comm_create(MPI_COMM_WORLD, &cfg);
}

typedef long (*scenario)(cr_comm *comm);

static void each_route(scenario run)
{
    for (size_t rt = 0; rt < NROUTES; rt++) {
        cr_comm *comm = comm_for(routes[rt]);
        ct_fails = 0;
        long f = run(comm);
        if (f)
            fprintf(stderr, "rank %d: route %s: %ld checks failed\n", test_rank, routes[rt], f);
        test_errors += f;
        cr_comm_destroy(comm);
    }
    verdict();
}

static long counting(cr_comm *c) { return ct_counting(c, 300, 3000); }
static long counting_few_keys(cr_comm *c) { return ct_counting(c, 5, 4000); }
static long count_cache(cr_comm *c) { return ct_count_cache(c, 5000); }
static long units_wait(cr_comm *c) { return ct_units_wait(c, 5000); }
static long insert_many(cr_comm *c) { return ct_insert_many(c, 300, 3000, 5000); }
static long map_rules(cr_comm *c) { return ct_map_rules(c, 300) + ct_double_sums(c, 200); }
static long erase_and_get(cr_comm *c) { return ct_erase_and_get(c, 700); }
static long visits(cr_comm *c) { return ct_visits_chain(c, 50, 8); }
static long bag(cr_comm *c) { return ct_bag(c); }
static long disjoint(cr_comm *c) { return ct_disjoint(c, 3000, 2500, 7); }

static void test_counting_set(void **state) { (void)state; each_route(counting); }
static void test_counting_set_few_keys(void **state) { (void)state; each_route(counting_few_keys); }
static void test_count_cache(void **state) { (void)state; each_route(count_cache); }
static void test_units_wait(void **state) { (void)state; each_route(units_wait); }
static void test_insert_many(void **state) { (void)state; each_route(insert_many); }
static void test_map_rules(void **state) { (void)state; each_route(map_rules); }
static void test_erase_and_get(void **state) { (void)state; each_route(erase_and_get); }
static void test_visits(void **state) { (void)state; each_route(visits); }
static void test_bag(void **state) { (void)state; each_route(bag); }
static void test_disjoint_set(void **state) { (void)state; each_route(disjoint); }

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counting_set), cmocka_unit_test(test_counting_set_few_keys),
        cmocka_unit_test(test_map_rules),    cmocka_unit_test(test_erase_and_get),
        cmocka_unit_test(test_visits),       cmocka_unit_test(test_bag),
        cmocka_unit_test(test_disjoint_set), cmocka_unit_test(test_count_cache),
        cmocka_unit_test(test_units_wait),   cmocka_unit_test(test_insert_many),
    };
    return RUN_MPI_TESTS(argc, argv, tests);
}
