/* Handler registry: ids in order, lookups out of range give NULL. */
#include "mailbox/registry.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

static void h1(cr_comm *c, int s, const void *p, size_t l, void *u) { (void)c; (void)s; (void)p; (void)l; (void)u; }
static void h2(cr_comm *c, int s, const void *p, size_t l, void *u) { (void)c; (void)s; (void)p; (void)l; (void)u; }

static void test_ids_in_order(void **state)
{
    (void)state;
    cr_registry r;
    cr_registry_init(&r);
    int a = 1, b = 2;
    assert_int_equal(cr_registry_add(&r, h1, &a), 0);
    assert_int_equal(cr_registry_add(&r, h2, &b), 1);
    assert_ptr_equal(cr_registry_get(&r, 0)->fn, h1);
    assert_ptr_equal(cr_registry_get(&r, 0)->user, &a);
    assert_ptr_equal(cr_registry_get(&r, 1)->fn, h2);
    assert_ptr_equal(cr_registry_get(&r, 1)->user, &b);
    assert_null(cr_registry_get(&r, 2));
    assert_null(cr_registry_get(&r, 65535));
    assert_null(cr_registry_get(&r, UINT32_MAX));
    cr_registry_free(&r);
    assert_null(cr_registry_get(&r, 0));
}

static void test_limit(void **state)
{
    (void)state;
    cr_registry r;
    cr_registry_init(&r);
    for (int i = 0; i < CR_MAX_HANDLERS; i++)
        assert_int_equal(cr_registry_add(&r, h1, NULL), i);
    assert_int_equal(cr_registry_add(&r, h2, NULL), -1);
    assert_int_equal(r.count, CR_MAX_HANDLERS);
    assert_ptr_equal(cr_registry_get(&r, CR_MAX_HANDLERS - 1)->fn, h1);
    cr_registry_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids_in_order),
        cmocka_unit_test(test_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
