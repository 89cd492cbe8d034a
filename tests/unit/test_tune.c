/* The cost model of include/courier/tune.h on cases worked out by hand: where the
 * hypercube must win, where direct must win, and where the buffer must shrink. */
#include <courier/tune.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

static const size_t GiB = (size_t)1 << 30;

static cr_tune_prediction choose(cr_layout *l, const cr_route *route, size_t buffer,
                                 size_t cap, cr_tune_traffic t, cr_tune_costs c)
{
    cr_tune_prediction table[5 * CR_TUNE_NBUFFERS];
    int n = 0;
    int best = cr_tune_choose(l, route, buffer, cap, &t, &c, table, &n);
    assert_true(best >= 0 && best < n);
    return table[best];
}

/* 4096 ranks, each alone on its node, one 16-byte record to every other rank. Direct
 * sends 4095 messages of 2 us: 8.2 ms. The hypercube sends to 12 partners; a record
 * takes 12 * 2048 / 4095 hops on average (about 6), so 24,576 records are appended at
 * 5 ns: 0.12 ms, and about 21 messages leave: 0.04 ms; 0.25 ms in all. The 64 x 64
 * grid has 126 partners: 0.25 ms of messages alone. The hypercube must win. */
static void test_hypercube_wins_at_scale(void **state)
{
    (void)state;
    cr_layout *l = cr_layout_create_blocks(4096, 1);
    cr_tune_costs c = {.alpha_on = 1e-6, .alpha_off = 2e-6, .beta_on = 0.1e-9,
                       .beta_off = 0.1e-9, .append = 5e-9, .handle = 5e-9};
    cr_tune_traffic t = {.records_per_dest = 1, .record_bytes = 16};
    cr_tune_prediction best = choose(l, NULL, 64 << 10, GiB, t, c);
    assert_int_equal(best.route.kind, CR_ROUTE_HYPERCUBE);
    assert_int_equal((int)best.partners, 12);
    assert_true(best.mean_hops > 12.0 * 2048 / 4095 - 1e-9 &&
                best.mean_hops < 12.0 * 2048 / 4095 + 1e-9);
    assert_true(best.seconds > 0.2e-3 && best.seconds < 0.3e-3);
    cr_tune_prediction direct;
    assert_int_equal(cr_tune_predict(l, &(cr_route){.kind = CR_ROUTE_DIRECT}, 64 << 10, GiB,
                                     &t, &c, &direct),
                     0);
    assert_int_equal((int)direct.partners, 4095);
    assert_int_equal((int)direct.messages, 4095);
    assert_true(direct.seconds > 8.1e-3 && direct.seconds < 8.4e-3);
    cr_layout_destroy(l);
}

/* 8 ranks on one node, 10,000 records of 16 bytes to each: bandwidth, not messages.
 * Direct appends 70,000 records and sends 1.1 MB; every other route forwards (the
 * hypercube appends 120,000) or adds an 8-byte route block to every record. */
static void test_direct_wins_on_one_node(void **state)
{
    (void)state;
    cr_layout *l = cr_layout_create_blocks(8, 8);
    cr_tune_costs c = {.alpha_on = 1e-6, .alpha_off = 2e-6, .beta_on = 0.2e-9,
                       .beta_off = 0.1e-9, .append = 10e-9, .handle = 10e-9};
    cr_tune_traffic t = {.records_per_dest = 10000, .record_bytes = 16};
    cr_tune_prediction best = choose(l, NULL, 64 << 10, GiB, t, c);
    assert_int_equal(best.route.kind, CR_ROUTE_DIRECT);
    assert_int_equal((int)best.messages, 21); /* 160 KB to each of 7: 3 buffers each */
    assert_true(best.seconds > 1.6e-3 && best.seconds < 1.7e-3);
    cr_layout_destroy(l);
}

/* 1024 ranks under direct with a 1 MiB cap: a rank's buffers hold at most 1025 bytes
 * each, so a buffer larger than 1 KiB buys nothing and the smallest is chosen; with a
 * cap that does not bind, 1,600 bytes to each partner fit one 4 KiB buffer but not one
 * of 1 KiB, and the buffer grows. */
static void test_buffer_shrinks_under_the_cap(void **state)
{
    (void)state;
    cr_layout *l = cr_layout_create_blocks(1024, 32);
    cr_tune_costs c;
    cr_tune_costs_default(&c);
    cr_tune_traffic t = {.records_per_dest = 100, .record_bytes = 16};
    cr_route direct = {.kind = CR_ROUTE_DIRECT};
    cr_tune_prediction tight = choose(l, &direct, 0, (size_t)1 << 20, t, c);
    assert_int_equal((int)tight.buffer_bytes, 1024);
    assert_int_equal((int)tight.messages, 2 * 1023);
    cr_tune_prediction loose = choose(l, &direct, 0, GiB, t, c);
    assert_int_equal((int)loose.buffer_bytes, 4096);
    assert_int_equal((int)loose.messages, 1023);
    assert_true(loose.seconds < tight.seconds);
    cr_layout_destroy(l);
}

/* One rank: nothing to send, every configuration costs nothing; the tie goes to
 * direct and the smallest buffer. Bad arguments give -1. */
static void test_one_rank_and_bad_arguments(void **state)
{
    (void)state;
    cr_layout *l = cr_layout_create_blocks(1, 1);
    cr_tune_costs c;
    cr_tune_costs_default(&c);
    cr_tune_traffic t = {.records_per_dest = 5, .record_bytes = 8};
    cr_tune_prediction best = choose(l, NULL, 0, GiB, t, c);
    assert_int_equal(best.route.kind, CR_ROUTE_DIRECT);
    assert_int_equal((int)best.buffer_bytes, 1024);
    assert_true(best.seconds == 0);
    cr_tune_prediction p;
    cr_tune_traffic bad = {.records_per_dest = -1, .record_bytes = 8};
    assert_int_equal(cr_tune_predict(l, &(cr_route){.kind = CR_ROUTE_DIRECT}, 1024, GiB, &bad,
                                     &c, &p),
                     -1);
    assert_int_equal(cr_tune_predict(l, &(cr_route){.kind = (cr_route_kind)99}, 1024, GiB, &t,
                                     &c, &p),
                     -1);
    cr_layout_destroy(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hypercube_wins_at_scale),
        cmocka_unit_test(test_direct_wins_on_one_node),
        cmocka_unit_test(test_buffer_shrinks_under_the_cap),
        cmocka_unit_test(test_one_rank_and_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
