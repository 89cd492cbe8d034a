/* The cost model of include/courier/tune.h on cases worked out by hand: where the
 * hypercube must win, where direct must win, and where the buffer must shrink. */
#include <courier/tune.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Ranks that share processors: every cost of the prediction grows by the slowdown,
 * and the choice does not change (it scales every configuration alike). */
static void test_slowdown_scales_every_cost(void **state)
{
    (void)state;
    cr_layout *l = cr_layout_create_blocks(8, 2);
    cr_tune_costs c;
    cr_tune_costs_default(&c);
    cr_tune_traffic t = {.records_per_dest = 100, .record_bytes = 16};
    cr_route direct = {.kind = CR_ROUTE_DIRECT};
    cr_tune_prediction one, four;
    assert_int_equal(cr_tune_predict(l, &direct, 4096, GiB, &t, &c, &one), 0);
    cr_tune_prediction first = choose(l, NULL, 0, GiB, t, c);
    c.slowdown = 4;
    assert_int_equal(cr_tune_predict(l, &direct, 4096, GiB, &t, &c, &four), 0);
    assert_true(fabs(four.seconds - 4 * one.seconds) < 1e-12);
    assert_true(four.messages == one.messages);
    cr_tune_prediction slowed = choose(l, NULL, 0, GiB, t, c);
    assert_int_equal(slowed.route.kind, first.route.kind);
    assert_int_equal(slowed.buffer_bytes, first.buffer_bytes);
    c.slowdown = -1;
    assert_int_equal(cr_tune_predict(l, &direct, 4096, GiB, &t, &c, &four), -1);
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

/* ---- the calibration file ---------------------------------------------------- */

static char tune_path[64];

static void write_text(const char *text)
{
    FILE *f = fopen(tune_path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static const cr_tune_shape two_procs = {.processors = 2, .ranks_per_node = 2};

/* A file that loads must give back every cost as saved. */
/* The second choice moves only for a gain of more than 10% of the current time, and
 * only when the gain is larger than what the move costs. */
static void test_switch_needs_a_real_gain(void **state)
{
    (void)state;
    assert_true(cr_tune_worth_switching(100e-6, 89e-6, 0));
    assert_false(cr_tune_worth_switching(100e-6, 90e-6, 0)); /* exactly 10%: stay */
    assert_false(cr_tune_worth_switching(100e-6, 95e-6, 0));
    assert_false(cr_tune_worth_switching(100e-6, 100e-6, 0));
    assert_false(cr_tune_worth_switching(100e-6, 120e-6, 0));
    /* half the time saved, but the move costs more than that */
    assert_false(cr_tune_worth_switching(100e-6, 50e-6, 60e-6));
    assert_true(cr_tune_worth_switching(100e-6, 50e-6, 40e-6));
}

static void test_file_round_trip(void **state)
{
    (void)state;
    cr_tune_costs c = {.alpha_on = 1.25e-6, .alpha_off = 3.5e-6, .beta_on = 0.125e-9,
                       .beta_off = 0.25e-9, .append = 4e-9, .handle = 6e-9,
                       .route_record = 7e-9}, back;
    cr_tune_shape shape;
    char err[256];
    assert_int_equal(cr_tune_costs_save(tune_path, &c, &two_procs, err, sizeof err), 0);
    assert_int_equal(cr_tune_costs_load(tune_path, &two_procs, &back, &shape, err, sizeof err), 0);
    assert_true(back.alpha_on == c.alpha_on && back.alpha_off == c.alpha_off &&
                back.beta_on == c.beta_on && back.beta_off == c.beta_off &&
                back.append == c.append && back.handle == c.handle &&
                back.route_record == c.route_record);
    assert_int_equal(shape.processors, 2);
    assert_int_equal(shape.ranks_per_node, 2);
}

/* Each bad file is refused with its one line, and the costs are not touched. */
static void refused(const char *text, const char *expect)
{
    if (text)
        write_text(text);
    cr_tune_costs c = {.alpha_on = 7}, before = c;
    char err[256] = "";
    int rc = cr_tune_costs_load(tune_path, &two_procs, &c, NULL, err, sizeof err);
    if (rc != -1 || !strstr(err, expect) || !strstr(err, tune_path) || strchr(err, '\n'))
        fail_msg("expected a refusal with '%s', got %d: '%s'", expect, rc, err);
    assert_memory_equal(&c, &before, sizeof c);
}

#define GOOD_COSTS                                                                      \
    "alpha_on 1e-6\nalpha_off 2e-6\nbeta_on 1e-10\nbeta_off 1e-10\nappend 5e-9\nhandle 5e-9\n"  \
    "route_record 3e-9\n"

static void test_file_refusals(void **state)
{
    (void)state;
    refused("courier-tune 1\nprocessors 2\nranks_per_node 2\n" GOOD_COSTS,
            "format version 1; this library reads version 2");
    refused("courier-tune 2\nprocessors 64\nranks_per_node 2\n" GOOD_COSTS,
            "calibrated on nodes of 64 processors; this node has 2");
    refused("courier-tune 2\nprocessors 2\nranks_per_node 2\nalpha_on 1e-6\n", "is missing");
    refused("courier-tune 2\nprocessors 2\nranks_per_node 2\n" GOOD_COSTS "handle 1e-9\n",
            "'handle' is given twice");
    refused("courier-tune 2\nprocessors 2\nranks_per_node 2\n" GOOD_COSTS "speed 3\n",
            "unknown key 'speed'");
    refused("courier-tune 2\nprocessors 2\nranks_per_node 2\nalpha_on fast\n",
            "alpha_on 'fast' is not a cost in seconds");
    refused("courier-tune 2\nprocessors 2\nranks_per_node 2\nalpha_on -1e-6\n",
            "is not a cost in seconds");
    refused("processors 2\n" GOOD_COSTS, "no 'courier-tune' line");
    refused("courier-tune\n", "expected 'key value'");
    char nul[] = "courier-tune 2\n\0processors 2\n";
    FILE *f = fopen(tune_path, "w");
    assert_non_null(f);
    fwrite(nul, 1, sizeof nul, f);
    fclose(f);
    refused(NULL, "holds a NUL byte");
    unlink(tune_path);
    refused(NULL, "cannot read the calibration");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hypercube_wins_at_scale),
        cmocka_unit_test(test_direct_wins_on_one_node),
        cmocka_unit_test(test_buffer_shrinks_under_the_cap),
        cmocka_unit_test(test_one_rank_and_bad_arguments),
        cmocka_unit_test(test_slowdown_scales_every_cost),
        cmocka_unit_test(test_switch_needs_a_real_gain),
        cmocka_unit_test(test_file_round_trip),
        cmocka_unit_test(test_file_refusals),
    };
    snprintf(tune_path, sizeof tune_path, "/tmp/courier-test-tune-%ld.txt", (long)getpid());
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(tune_path);
    return failed;
}
