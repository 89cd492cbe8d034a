/* MPI's nodes against the processor names (src/transport/node_check.c): they agree
 * exactly when two ranks share a node whenever they share a name, and the counts and
 * the first differing rank are reported. */
#include "transport/node_check.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

enum { MAXP = 16 };

/* Runs the check on p ranks named by names[r] and grouped by MPI as node_of[r]. */
static bool check(const int *node_of, const char *const *names, int p, cr_node_check *k)
{
    uint64_t hash[MAXP], scratch[MAXP];
    for (int r = 0; r < p; r++)
        hash[r] = cr_node_name_hash(names[r], strlen(names[r]));
    return cr_node_check_run(node_of, hash, p, scratch, k);
}

static void test_agree(void **state)
{
    (void)state;
    const int node_of[] = {0, 0, 2, 2, 2, 5};
    const char *const names[] = {"a", "a", "b", "b", "b", "c"};
    cr_node_check k;
    assert_true(check(node_of, names, 6, &k));
    assert_int_equal(k.mpi_nodes, 3);
    assert_int_equal(k.name_nodes, 3);
    assert_int_equal(k.first_rank, -1);
}

static void test_one_rank(void **state)
{
    (void)state;
    const int node_of[] = {0};
    const char *const names[] = {"solo"};
    cr_node_check k;
    assert_true(check(node_of, names, 1, &k));
    assert_int_equal(k.mpi_nodes, 1);
    assert_int_equal(k.name_nodes, 1);
}

/* An MPI that answers one rank per node where two ranks share a host. */
static void test_mpi_splits_a_host(void **state)
{
    (void)state;
    const int node_of[] = {0, 1, 2, 3};
    const char *const names[] = {"h1", "h1", "h2", "h2"};
    cr_node_check k;
    assert_false(check(node_of, names, 4, &k));
    assert_int_equal(k.mpi_nodes, 4);
    assert_int_equal(k.name_nodes, 2);
    assert_int_equal(k.first_rank, 1);
}

/* One node by MPI's split, two names on it. */
static void test_names_split_a_node(void **state)
{
    (void)state;
    const int node_of[] = {0, 0, 0};
    const char *const names[] = {"x", "x", "y"};
    cr_node_check k;
    assert_false(check(node_of, names, 3, &k));
    assert_int_equal(k.mpi_nodes, 1);
    assert_int_equal(k.name_nodes, 2);
    assert_int_equal(k.first_rank, 2);
}

/* Same counts, different groupings: {0,1},{2,3} by MPI, {0,2},{1,3} by name. */
static void test_same_counts_other_groups(void **state)
{
    (void)state;
    const int node_of[] = {0, 0, 2, 2};
    const char *const names[] = {"p", "q", "p", "q"};
    cr_node_check k;
    assert_false(check(node_of, names, 4, &k));
    assert_int_equal(k.mpi_nodes, 2);
    assert_int_equal(k.name_nodes, 2);
    assert_int_equal(k.first_rank, 1);
}

static void test_hash(void **state)
{
    (void)state;
    assert_true(cr_node_name_hash("node-a", 6) != cr_node_name_hash("node-b", 6));
    /* the length MPI gives bounds the name; a NUL ends it earlier */
    assert_true(cr_node_name_hash("node-a", 6) == cr_node_name_hash("node-a\0zz", 9));
    assert_true(cr_node_name_hash("node-a", 6) == cr_node_name_hash("node-ab", 6));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agree),
        cmocka_unit_test(test_one_rank),
        cmocka_unit_test(test_mpi_splits_a_host),
        cmocka_unit_test(test_names_split_a_node),
        cmocka_unit_test(test_same_counts_other_groups),
        cmocka_unit_test(test_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
