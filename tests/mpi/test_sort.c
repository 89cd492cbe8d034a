/* cr_sort (include/courier/sort.h) under mpirun: every case of tests/sort_scenarios.h
 * (uniform, skewed, all-equal and signed keys; even, one-rank and partly empty
 * inputs; key fields, a key function and a comparator; stable and not; exact blocks
 * and a tolerance), on the direct route with the default buffers and on a routed
 * comm with small buffers, where chunks travel through other ranks. Each checks
 * order, balance, stability and that the multiset of records is unchanged. */
#include "harness.h"

#include "../sort_scenarios.h"

#include <courier.h>

#include <stdlib.h>

static cr_comm *comm_for(const char *route, size_t buffer_bytes)
{
    cr_config cfg;
    config_on_route(&cfg, route, buffer_bytes);
    return cr_comm_create(MPI_COMM_WORLD, &cfg);
}

static void run_on(const char *route, size_t buffer_bytes, uint64_t base)
{
    cr_comm *comm = comm_for(route, buffer_bytes);
    long f = st_all(comm, base);
    if (f)
        fprintf(stderr, "rank %d: route %s: %ld checks failed\n", test_rank, route, f);
    test_errors += f;
    /* two sorts in a row on one comm: the second's early records must not meet the
     * first's state */
    test_errors += st_all(comm, 50);
    cr_comm_destroy(comm);
    verdict();
}

static void test_sort_direct(void **state) { (void)state; run_on("direct", 0, 3000); }
static void test_sort_routed(void **state) { (void)state; run_on("nlnr", 1024, 1000); }
static void test_sort_hypercube(void **state) { (void)state; run_on("hypercube", 512, 500); }

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sort_direct),
        cmocka_unit_test(test_sort_routed),
        cmocka_unit_test(test_sort_hypercube),
    };
    return RUN_MPI_TESTS(argc, argv, tests);
}
