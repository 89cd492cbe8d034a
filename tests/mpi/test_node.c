/* Memory shared by the ranks of a node (cr_module_node_segment_*) under mpirun: every
 * scenario of tests/node_scenarios.h under virtual nodes of 1, 2 and 3 ranks (unequal
 * nodes at most rank counts) and on MPI's own node, on the direct route and through
 * NLNR's node hops. */
#include "harness.h"

#include "../node_scenarios.h"

#include <stdlib.h>

static void run_with(unsigned node_size, const char *route)
{
    cr_config cfg;
    cr_config_init(&cfg);
    char err[200];
    if (cr_route_parse(route, &cfg.route, err, sizeof err))
        fprintf(stderr, "%s\n", err), exit(2);
    cfg.node_size = node_size;
    cfg.buffer_bytes = 1024; /* records to a rank waiting at the node barrier fill the
                                sends in flight: the barrier must keep receiving */
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, &cfg);
    long f = ns_all(comm, 4096, 20, 20000);
    if (f)
        fprintf(stderr, "rank %d: node size %u, route %s: %ld checks failed\n", test_rank,
                node_size, route, f);
    test_errors += f;
    cr_comm_destroy(comm);
    verdict();
}

static void test_nodes_of_1(void **state) { (void)state; run_with(1, "direct"); }
static void test_nodes_of_2(void **state) { (void)state; run_with(2, "direct"); }
static void test_nodes_of_3(void **state) { (void)state; run_with(3, "nlnr"); }
static void test_one_node(void **state) { (void)state; run_with(0, "nlnr"); }

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nodes_of_1),
        cmocka_unit_test(test_nodes_of_2),
        cmocka_unit_test(test_nodes_of_3),
        cmocka_unit_test(test_one_node),
    };
    return RUN_MPI_TESTS(argc, argv, tests);
}
