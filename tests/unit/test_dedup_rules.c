/* The built-in combining rules of include/courier/dedup.h, as pure functions. */
#include "courier/dedup.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static cr_handler_type rule_type(cr_op op, cr_dtype t, size_t key_len)
{
    cr_handler_type type = {0};
    cr_dedup_rule rule = {.key_len = key_len, .op = op, .type = t};
    char err[200];
    assert_int_equal(cr_dedup_rule_apply(&rule, &type, err, sizeof err), 0);
    assert_int_equal(type.key_len, key_len);
    assert_non_null(type.combine);
    return type;
}

/* {key, v0, v1} merged with {key, w0, w1}: each value by the rule, the key kept. */
static void merge_i64(cr_op op, int64_t a0, int64_t a1, int64_t b0, int64_t b1,
                      int64_t want0, int64_t want1)
{
    cr_handler_type t = rule_type(op, CR_INT64, 8);
    int64_t dst[3] = {42, a0, a1}, src[3] = {42, b0, b1};
    t.combine(dst, src, sizeof dst, t.combine_user);
    assert_int_equal(dst[0], 42);
    assert_int_equal(dst[1], want0);
    assert_int_equal(dst[2], want1);
}

static void test_integer_rules(void **state)
{
    (void)state;
    merge_i64(CR_OP_SUM, 5, -7, 10, 3, 15, -4);
    merge_i64(CR_OP_MIN, 5, -7, 10, -9, 5, -9);
    merge_i64(CR_OP_MAX, 5, -7, 10, -9, 10, -7);
    merge_i64(CR_OP_BOR, 0x0f, 0x100, 0xf0, 0x1, 0xff, 0x101);
    merge_i64(CR_OP_BAND, 0x0f, 0x101, 0xfc, 0x1, 0x0c, 0x1);
    merge_i64(CR_OP_FIRST, 1, 2, 3, 4, 1, 2);
    merge_i64(CR_OP_LAST, 1, 2, 3, 4, 3, 4);
    /* signed sums wrap instead of trapping */
    merge_i64(CR_OP_SUM, INT64_MAX, 0, 1, 0, INT64_MIN, 0);
    /* unsigned order differs from signed */
    cr_handler_type t = rule_type(CR_OP_MIN, CR_UINT64, 8);
    uint64_t dst[2] = {1, UINT64_MAX - 1}, src[2] = {1, 3};
    t.combine(dst, src, sizeof dst, t.combine_user);
    assert_int_equal(dst[1], 3);
}

static void test_double_rules(void **state)
{
    (void)state;
    cr_handler_type t = rule_type(CR_OP_SUM, CR_DOUBLE, 8);
    double dst[2] = {0, 1.5}, src[2] = {0, 2.25};
    uint64_t key = 77;
    memcpy(dst, &key, 8);
    memcpy(src, &key, 8);
    t.combine(dst, src, sizeof dst, t.combine_user);
    assert_true(dst[1] == 3.75);
    t = rule_type(CR_OP_MAX, CR_DOUBLE, 8);
    src[1] = -1;
    t.combine(dst, src, sizeof dst, t.combine_user);
    assert_true(dst[1] == 3.75);
}

/* A key of 3 bytes: numeric values start at byte 8, LAST copies from byte 3. */
static void test_short_keys(void **state)
{
    (void)state;
    cr_handler_type t = rule_type(CR_OP_SUM, CR_UINT64, 3);
    uint64_t dst[2] = {0x00aabbcc, 5}, src[2] = {0x11aabbcc, 6};
    t.combine(dst, src, sizeof dst, t.combine_user);
    assert_int_equal(dst[0], 0x00aabbcc); /* bytes 3-7 are neither key nor value */
    assert_int_equal(dst[1], 11);
    t = rule_type(CR_OP_LAST, CR_UINT64, 3);
    unsigned char a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 2, 3, 7, 8, 9};
    t.combine(a, b, sizeof a, t.combine_user);
    unsigned char want[6] = {1, 2, 3, 7, 8, 9};
    assert_memory_equal(a, want, sizeof a);
}

static void count_calls(void *dst, const void *src, size_t len, void *user)
{
    (void)dst, (void)src, (void)len;
    (*(int *)user)++;
}

static void test_user_rule_and_errors(void **state)
{
    (void)state;
    int calls = 0;
    cr_handler_type t = {0};
    char err[200];
    cr_dedup_rule user = {.key_len = 8, .op = CR_OP_USER, .combine = count_calls,
                          .combine_user = &calls};
    assert_int_equal(cr_dedup_rule_apply(&user, &t, err, sizeof err), 0);
    uint64_t a[2] = {0}, b[2] = {0};
    t.combine(a, b, sizeof a, t.combine_user);
    assert_int_equal(calls, 1);

    cr_handler_type untouched = {0};
    cr_dedup_rule bad[] = {
        {.key_len = 0, .op = CR_OP_SUM, .type = CR_INT64},
        {.key_len = CR_MAX_KEY + 1, .op = CR_OP_SUM, .type = CR_INT64},
        {.key_len = 8, .op = CR_OP_BOR, .type = CR_DOUBLE},
        {.key_len = 8, .op = CR_OP_SUM, .type = 0},
        {.key_len = 8, .op = CR_OP_USER},
        {.key_len = 8, .op = 99},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        assert_int_equal(cr_dedup_rule_apply(&bad[i], &untouched, err, sizeof err), -1);
        assert_true(strlen(err) > 0);
        assert_int_equal(untouched.key_len, 0);
        assert_null(untouched.combine);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_integer_rules),
        cmocka_unit_test(test_double_rules),
        cmocka_unit_test(test_short_keys),
        cmocka_unit_test(test_user_rule_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
