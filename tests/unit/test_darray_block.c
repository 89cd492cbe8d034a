/* The darray's block distribution (cr_darray_block, cr_darray_owner): pure
 * functions, checked exhaustively for small n and P and at the edges. */
#include <courier.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

/* Blocks tile [0, n) in rank order, differ by at most one element (the larger
 * first), and owner() names the block that holds each index. */
static void check(uint64_t n, int p)
{
    uint64_t next = 0, small = UINT64_MAX, large = 0;
    for (int r = 0; r < p; r++) {
        uint64_t first, count;
        cr_darray_block(n, p, r, &first, &count);
        assert_int_equal(first, next);
        if (count < small)
            small = count;
        if (count > large)
            large = count;
        if (r > 0) {
            uint64_t pf, pc;
            cr_darray_block(n, p, r - 1, &pf, &pc);
            assert_true(pc >= count);
        }
        for (uint64_t i = first; i < first + count; i++)
            assert_int_equal(cr_darray_owner(n, p, i), r);
        next = first + count;
    }
    assert_int_equal(next, n);
    assert_true(large - small <= 1);
}

static void test_small(void **state)
{
    (void)state;
    for (uint64_t n = 0; n <= 70; n++)
        for (int p = 1; p <= 17; p++)
            check(n, p);
}

static void test_edges(void **state)
{
    (void)state;
    check(1000003, 7);
    check(1u << 20, 1024);
    uint64_t n = (1ULL << 40) + 5, first, count;
    cr_darray_block(n, 4096, 4095, &first, &count);
    assert_int_equal(first + count, n);
    assert_int_equal(cr_darray_owner(n, 4096, n - 1), 4095);
    assert_int_equal(cr_darray_owner(n, 4096, 0), 0);
}

static void test_aggregation_names(void **state)
{
    (void)state;
    cr_darray_aggregation a = CR_DARRAY_AGG_NONE;
    char err[128];
    assert_int_equal(cr_darray_aggregation_parse("sort", &a, NULL, 0), 0);
    assert_int_equal(a, CR_DARRAY_AGG_SORT);
    assert_int_equal(cr_darray_aggregation_parse("tree", &a, err, sizeof err), -1);
    assert_string_equal(err, "unknown darray aggregation 'tree': expected none, hash, sort or auto");
    assert_int_equal(a, CR_DARRAY_AGG_SORT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small),
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_aggregation_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
