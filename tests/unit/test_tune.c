/* The cost model of include/courier/tune.h on cases worked out by hand: where the
 * hypercube must win, where direct must win, and where the buffer must shrink. */
#include <courier/tune.h>

#include <math.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

static const cr_tune_shape two_procs = {.processors = 2, .ranks_per_node = 2, .machine_ranks = 3};

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
                       .route_record = 7e-9, .forward = 9e-9}, back;
    cr_tune_shape shape;
    char err[256];
    assert_int_equal(cr_tune_costs_save(tune_path, &c, &two_procs, err, sizeof err), 0);
    assert_int_equal(cr_tune_costs_load(tune_path, &two_procs, &back, &shape, err, sizeof err), 0);
    assert_true(back.alpha_on == c.alpha_on && back.alpha_off == c.alpha_off &&
                back.beta_on == c.beta_on && back.beta_off == c.beta_off &&
                back.append == c.append && back.handle == c.handle &&
                back.route_record == c.route_record && back.forward == c.forward);
    assert_int_equal(shape.processors, 2);
    assert_int_equal(shape.ranks_per_node, 2);
    assert_int_equal(shape.machine_ranks, 3);
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

/* The file's head up to its costs. */
#define HEAD "courier-tune 3\nprocessors 2\nranks_per_node 2\nmachine_ranks 2\n"

#define GOOD_COSTS                                                                      \
    "alpha_on 1e-6\nalpha_off 2e-6\nbeta_on 1e-10\nbeta_off 1e-10\nappend 5e-9\nhandle 5e-9\n"  \
    "route_record 3e-9\nforward 4e-9\n"

static void test_file_refusals(void **state)
{
    (void)state;
    refused("courier-tune 2\nprocessors 2\nranks_per_node 2\n" GOOD_COSTS,
            "format version 2; this library reads version 3");
    refused("courier-tune 3\nprocessors 64\nranks_per_node 2\nmachine_ranks 2\n" GOOD_COSTS,
            "calibrated on nodes of 64 processors; this node has 2");
    refused(HEAD "alpha_on 1e-6\n", "is missing");
    refused(HEAD GOOD_COSTS "handle 1e-9\n",
            "'handle' is given twice");
    refused(HEAD GOOD_COSTS "speed 3\n",
            "unknown key 'speed'");
    refused(HEAD "alpha_on fast\n",
            "alpha_on 'fast' is not a cost in seconds");
    refused(HEAD "alpha_on -1e-6\n",
            "is not a cost in seconds");
    refused("courier-tune 3\nprocessors 2\nranks_per_node 2\n" GOOD_COSTS,
            "'machine_ranks' is missing");
    refused("processors 2\n" GOOD_COSTS, "'processors' before the first 'courier-tune' line");
    refused("# nothing but a comment\n", "no 'courier-tune' line");
    /* the second calibration of a file is checked as the first is, with its line */
    refused(HEAD GOOD_COSTS "courier-tune 3\nprocessors 2\nranks_per_node 2\nmachine_ranks 4\n"
                 "alpha_on 1e-6\n",
            ":13: 'alpha_off' is missing");
    refused(HEAD GOOD_COSTS HEAD GOOD_COSTS,
            ":13: a second calibration of 2 ranks on 2 processors (2 to a node; the first at "
            "line 1)");
    refused("courier-tune\n", "expected 'key value'");
    char nul[] = "courier-tune 3\n\0processors 2\n";
    FILE *f = fopen(tune_path, "w");
    assert_non_null(f);
    fwrite(nul, 1, sizeof nul, f);
    fclose(f);
    refused(NULL, "holds a NUL byte");
    unlink(tune_path);
    refused(NULL, "cannot read the calibration");
}

/* A calibration per machine ranks 2, 4 and 8 (alpha_on says which), added in the
 * order 8, 2, 4. */
static void add_three_shapes(void)
{
    char err[256];
    static const int ranks[] = {8, 2, 4};
    for (int i = 0; i < 3; i++) {
        cr_tune_costs c = {.alpha_on = ranks[i] * 1e-6, .forward = 1e-9};
        cr_tune_shape s = {.processors = 2, .ranks_per_node = 2, .machine_ranks = ranks[i]};
        if (cr_tune_costs_add(tune_path, &c, &s, err, sizeof err))
            fail_msg("%s", err);
    }
}

/* The machine ranks of the calibration a job of `machine_ranks` (on 2 processors,
 * `per_node` to a node) reads. */
static int ranks_read(int machine_ranks, int per_node)
{
    cr_tune_costs c;
    cr_tune_shape here = {.processors = 2, .ranks_per_node = per_node,
                          .machine_ranks = machine_ranks}, got;
    char err[256];
    if (cr_tune_costs_load(tune_path, &here, &c, &got, err, sizeof err))
        fail_msg("%s", err);
    assert_true(c.alpha_on == got.machine_ranks * 1e-6);
    return got.machine_ranks;
}

static int lines_starting(const char *prefix)
{
    FILE *f = fopen(tune_path, "r");
    assert_non_null(f);
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += !strncmp(line, prefix, strlen(prefix));
    fclose(f);
    return n;
}

/* A job reads the calibration of its own shape, else the nearest in ratio of ranks
 * on the machine (3 is nearer 4 than 2; 6 nearer 8 than 4), then in ranks to a
 * node; the first of the file (kept in order of ranks) when it does not say. */
static void test_file_picks_the_shape(void **state)
{
    (void)state;
    unlink(tune_path);
    add_three_shapes();
    assert_int_equal(lines_starting("courier-tune 3"), 3);
    assert_int_equal(ranks_read(2, 2), 2);
    assert_int_equal(ranks_read(4, 2), 4);
    assert_int_equal(ranks_read(8, 2), 8);
    assert_int_equal(ranks_read(1, 2), 2);
    assert_int_equal(ranks_read(3, 2), 4);
    assert_int_equal(ranks_read(5, 2), 4);
    assert_int_equal(ranks_read(6, 2), 8);
    assert_int_equal(ranks_read(100, 2), 8);
    assert_int_equal(ranks_read(0, 2), 2);
    /* the same shape again replaces its calibration, and only it */
    char err[256];
    cr_tune_costs c = {.alpha_on = 40e-6};
    cr_tune_shape four = {.processors = 2, .ranks_per_node = 2, .machine_ranks = 4};
    assert_int_equal(cr_tune_costs_add(tune_path, &c, &four, err, sizeof err), 0);
    assert_int_equal(lines_starting("courier-tune 3"), 3);
    cr_tune_costs back;
    assert_int_equal(cr_tune_costs_load(tune_path, &four, &back, NULL, err, sizeof err), 0);
    assert_true(back.alpha_on == 40e-6);
    assert_int_equal(ranks_read(8, 2), 8);
    /* 4 ranks to a node beside 2 to a node, of 4 ranks: the node size decides */
    c.alpha_on = 4e-6;
    four.ranks_per_node = 4;
    assert_int_equal(cr_tune_costs_add(tune_path, &c, &four, err, sizeof err), 0);
    cr_tune_shape got;
    cr_tune_shape here = {.processors = 2, .ranks_per_node = 4, .machine_ranks = 4};
    assert_int_equal(cr_tune_costs_load(tune_path, &here, &back, &got, err, sizeof err), 0);
    assert_int_equal(got.ranks_per_node, 4);
    here.ranks_per_node = 1;
    assert_int_equal(cr_tune_costs_load(tune_path, &here, &back, &got, err, sizeof err), 0);
    assert_int_equal(got.ranks_per_node, 2);
    assert_true(back.alpha_on == 40e-6);
}

/* Only a calibration of the node's processors is read; a file of others only is
 * refused; a file of CR_TUNE_FILE_MOST takes no more, and a bad file is not replaced. */
/* Four processes add four shapes each at once: with the lock every one of the
 * sixteen calibrations is in the file afterwards (without it, a read-modify-write
 * that overlaps another loses its shapes). */
static void test_concurrent_adds_keep_every_shape(void **state)
{
    (void)state;
    unlink(tune_path);
    cr_tune_costs c;
    cr_tune_costs_default(&c);
    pid_t kids[4];
    for (int k = 0; k < 4; k++) {
        kids[k] = fork();
        assert_true(kids[k] >= 0);
        if (kids[k] == 0) {
            char err[256];
            for (int i = 0; i < 4; i++) {
                cr_tune_shape s = {.processors = 2, .ranks_per_node = 1,
                                   .machine_ranks = 4 * k + i + 1};
                if (cr_tune_costs_add(tune_path, &c, &s, err, sizeof err))
                    _exit(1);
            }
            _exit(0);
        }
    }
    for (int k = 0; k < 4; k++) {
        int status;
        assert_int_equal(waitpid(kids[k], &status, 0), kids[k]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    assert_int_equal(lines_starting("courier-tune 3"), 16);
}

/* A link planted at the file's name is replaced, not followed: its target keeps
 * its bytes. */
static void test_save_does_not_follow_a_link(void **state)
{
    (void)state;
    char victim[96];
    snprintf(victim, sizeof victim, "%s.victim", tune_path);
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("untouched\n", f);
    fclose(f);
    unlink(tune_path);
    assert_int_equal(symlink(victim, tune_path), 0);
    cr_tune_costs c;
    cr_tune_costs_default(&c);
    char err[256];
    assert_int_equal(cr_tune_costs_save(tune_path, &c, &two_procs, err, sizeof err), 0);
    struct stat st;
    assert_int_equal(stat(victim, &st), 0);
    assert_int_equal(st.st_size, 10);
    assert_int_equal(lstat(tune_path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    unlink(victim);
}

static void test_file_of_shapes_refusals(void **state)
{
    (void)state;
    write_text("courier-tune 3\nprocessors 64\nranks_per_node 2\nmachine_ranks 4\n" GOOD_COSTS
               HEAD "alpha_on 3e-6\nalpha_off 2e-6\nbeta_on 1e-10\nbeta_off 1e-10\n"
               "append 5e-9\nhandle 5e-9\nroute_record 3e-9\nforward 4e-9\n");
    cr_tune_costs c;
    cr_tune_shape here = {.processors = 2, .ranks_per_node = 2, .machine_ranks = 4}, got;
    char err[256];
    assert_int_equal(cr_tune_costs_load(tune_path, &here, &c, &got, err, sizeof err), 0);
    assert_int_equal(got.processors, 2);
    assert_true(c.alpha_on == 3e-6);
    unlink(tune_path);
    for (int i = 1; i <= CR_TUNE_FILE_MOST; i++) {
        cr_tune_shape s = {.processors = 2, .ranks_per_node = 1, .machine_ranks = i};
        assert_int_equal(cr_tune_costs_add(tune_path, &c, &s, err, sizeof err), 0);
    }
    cr_tune_shape one_more = {.processors = 2, .ranks_per_node = 1, .machine_ranks = 99};
    assert_int_equal(cr_tune_costs_add(tune_path, &c, &one_more, err, sizeof err), -1);
    assert_non_null(strstr(err, "holds 16 calibrations already"));
    cr_tune_shape again = {.processors = 2, .ranks_per_node = 1, .machine_ranks = 5};
    assert_int_equal(cr_tune_costs_add(tune_path, &c, &again, err, sizeof err), 0);
    assert_int_equal(lines_starting("courier-tune 3"), CR_TUNE_FILE_MOST);
    write_text(HEAD "alpha_on soon\n");
    assert_int_equal(cr_tune_costs_add(tune_path, &c, &again, err, sizeof err), -1);
    assert_non_null(strstr(err, "is not a cost in seconds"));
    assert_int_equal(lines_starting("alpha_on soon"), 1);
    /* one more calibration than a file holds, written by hand */
    FILE *f = fopen(tune_path, "w");
    assert_non_null(f);
    for (int i = 0; i <= CR_TUNE_FILE_MOST; i++)
        fprintf(f, "courier-tune 3\nprocessors 2\nranks_per_node 2\nmachine_ranks %d\n"
                   GOOD_COSTS, i + 1);
    fclose(f);
    refused(NULL, "more than 16 calibrations in one file");
}

/* ---- the darray's lock-step steps ---- */

static bool near(double x, double want)
{
    return fabs(x - want) <= 1e-9 * fabs(want) + 1e-15;
}

static double step(const cr_layout *l, const int *dims, int nd, cr_tune_step t,
                   cr_tune_costs c)
{
    return cr_tune_step_predict(l, dims, nd, &t, &c);
}

/* 4096 ranks, one per node, a million reads a rank of a million distinct indices
 * each (nothing merges): every partner of every dimension gets a segment and sends
 * one back. Messages at 1 us only: direct 2 * 4095 us, the 64 x 64 grid 2 * 126,
 * 16 x 16 x 16 2 * 45, the hypercube 2 * 12. */
static void test_step_hypercube_wins_at_scale(void **state)
{
    (void)state;
    cr_layout *l = cr_layout_create_blocks(4096, 1);
    cr_tune_costs c = {.alpha_on = 1e-6, .alpha_off = 1e-6};
    cr_tune_step t = {.requests = 4096e6, .distinct = 4096e12, .request_bytes = 8,
                      .reply_bytes = 8};
    int direct[] = {4096}, grid[] = {64, 64}, grid3[] = {16, 16, 16}, cube[12];
    for (int d = 0; d < 12; d++)
        cube[d] = 2;
    assert_true(near(step(l, direct, 1, t, c), 2 * 4095e-6));
    assert_true(near(step(l, grid, 2, t, c), 2 * 126e-6));
    assert_true(near(step(l, grid3, 3, t, c), 2 * 45e-6));
    assert_true(near(step(l, cube, 12, t, c), 2 * 12e-6));
    t.reply_bytes = 0; /* writes: one way */
    assert_true(near(step(l, cube, 12, t, c), 12e-6));
    cr_layout_destroy(l);
}

/* 8 ranks on one node, a million 16-byte writes a rank, nothing merged, a byte at
 * 1 ns: bandwidth decides. Direct sends 7/8 of the records once (14 ms), the
 * hypercube half of them in each of three dimensions (24 ms), 4 x 2 sends 3/4 then
 * 1/2 (20 ms). Appends and handling add alike per record sent and received. */
static void test_step_direct_wins_on_one_node(void **state)
{
    (void)state;
    cr_layout *l = cr_layout_create_blocks(8, 8);
    cr_tune_costs c = {.alpha_on = 1e-6, .beta_on = 1e-9, .append = 2e-9, .handle = 3e-9};
    cr_tune_step t = {.requests = 8e6, .distinct = 8e12, .request_bytes = 16};
    int direct[] = {8}, grid[] = {4, 2}, cube[] = {2, 2, 2};
    double m = 1e6;
    assert_true(near(step(l, direct, 1, t, c), 7e-6 + m * 7 / 8 * (16e-9 + 2e-9) + m * 3e-9));
    assert_true(near(step(l, grid, 2, t, c),
                     4e-6 + m * (3.0 / 4 + 1.0 / 2) * (16e-9 + 2e-9) + m * 3e-9));
    assert_true(near(step(l, cube, 3, t, c), 3e-6 + m * 3.0 / 2 * (16e-9 + 2e-9) + m * 3e-9));
    /* off the node: the same dimension charged the costs between nodes */
    cr_layout *apart = cr_layout_create_blocks(8, 1);
    c.alpha_off = 10e-6, c.beta_off = 1e-9;
    assert_true(near(step(apart, direct, 1, t, c),
                     70e-6 + m * 7 / 8 * (16e-9 + 2e-9) + m * 3e-9));
    /* ranks sharing processors: everything slower alike */
    c.slowdown = 4;
    assert_true(near(step(apart, direct, 1, t, c),
                     4 * (70e-6 + m * 7 / 8 * (16e-9 + 2e-9) + m * 3e-9)));
    cr_layout_destroy(apart);
    cr_layout_destroy(l);
}

/* Merging decides: 8 ranks, a million reads a rank of only 8 indices (one on each
 * rank). Merged, a rank holds at dimension d the 8 / g indices of its part (g the
 * ranks gathered): direct sends 7 of 8 to 7 * (1 - (7/8)^8) partners on average, the
 * hypercube 4, 2 and 1 to one partner with probability 1 - 2^-8, 1 - 2^-4 and
 * 1 - 2^-2. Same bytes, fewer messages, and 2 requests reach each owner where
 * direct brings 8: the hypercube wins. Not merged, direct wins by bandwidth (the
 * case above). */
static void test_step_merging_decides(void **state)
{
    (void)state;
    cr_layout *l = cr_layout_create_blocks(8, 8);
    cr_tune_costs c = {.alpha_on = 1e-6, .beta_on = 1e-9, .handle = 5e-9};
    cr_tune_step t = {.requests = 8e6, .distinct = 8, .request_bytes = 8, .reply_bytes = 8,
                      .merged = true};
    int direct[] = {8}, cube[] = {2, 2, 2};
    double d = step(l, direct, 1, t, c), h = step(l, cube, 3, t, c);
    assert_true(near(d, 2 * 7 * (1 - pow(7.0 / 8, 8)) * 1e-6 + 7 * 16e-9 + 8 * 5e-9));
    assert_true(near(h, 2 * (3 - pow(2, -8) - pow(2, -4) - pow(2, -2)) * 1e-6 +
                            (4 + 2 + 1) * 16e-9 + 2 * 5e-9));
    assert_true(h < d);
    t.merged = false;
    assert_true(step(l, cube, 3, t, c) > step(l, direct, 1, t, c));
    cr_layout_destroy(l);
}

static void test_step_refuses_what_does_not_fit(void **state)
{
    (void)state;
    cr_layout *l = cr_layout_create_blocks(8, 8);
    cr_tune_costs c = {.alpha_on = 1e-6};
    cr_tune_step t = {.requests = 8, .distinct = 8, .request_bytes = 8};
    int six[] = {6}, over[] = {4, 4}, zero[] = {8, 0};
    assert_true(step(l, six, 1, t, c) < 0);
    assert_true(step(l, over, 2, t, c) < 0);
    assert_true(step(l, zero, 2, t, c) < 0);
    t.requests = -1;
    assert_true(step(l, (int[]){8}, 1, t, c) < 0);
    t.requests = 0; /* nothing to send costs nothing */
    assert_true(step(l, (int[]){8}, 1, t, c) == 0);
    cr_layout_destroy(l);
}

/* ---- records that merge on their way ---- */

/* Direct: records meet only at their source, s = 1: a rank sends each destination
 * K (1 - exp(-m / K)) of its m records, and receives as many from each of the others.
 * The 2 x 2 hypercube: into rank 0 come its two neighbours' records, one of them
 * carrying the far corner's too (s = 2 and s = 1), and the far corner hands its own
 * (s = 1) to one of them: appended held(2) + 2 held(1), arriving held(2) + held(1). */
static void test_merging_counts_by_hand(void **state)
{
    (void)state;
    cr_layout *l = cr_layout_create_blocks(4, 1);
    cr_tune_costs c = {.alpha_on = 1e-6, .alpha_off = 1e-6, .handle = 1e-9};
    cr_tune_traffic t = {.records_per_dest = 3, .record_bytes = 8, .keys_per_dest = 2};
    double h1 = 2 * -expm1(-3.0 / 2), h2 = 2 * -expm1(-6.0 / 2);
    cr_tune_prediction d, h;
    assert_int_equal(cr_tune_predict(l, &(cr_route){.kind = CR_ROUTE_DIRECT}, 1 << 16, GiB,
                                     &t, &c, &d), 0);
    assert_true(near(d.arriving, 3 * h1) && near(d.records, 3 * h1));
    assert_int_equal(cr_tune_predict(l, &(cr_route){.kind = CR_ROUTE_HYPERCUBE}, 1 << 16, GiB,
                                     &t, &c, &h), 0);
    assert_true(near(h.arriving, h2 + h1));
    assert_true(near(h.records, h2 + 2 * h1));
    /* nothing merges: every record arrives, once per hop appended */
    t.keys_per_dest = 0;
    assert_int_equal(cr_tune_predict(l, &(cr_route){.kind = CR_ROUTE_HYPERCUBE}, 1 << 16, GiB,
                                     &t, &c, &h), 0);
    assert_true(near(h.arriving, 9) && near(h.records, 9 * 4.0 / 3));
    cr_layout_destroy(l);
}

/* A record passed on costs `forward` more, once per rank that passes it: 4 ranks on
 * the hypercube, 3 records to each other rank, one destination of the three two hops
 * away: a rank appends its own 9 and passes on 3 for others, so with only `forward`
 * priced the epoch costs 3 of it (twice that where two ranks share a processor);
 * direct passes nothing on, nor does the hypercube of 2 ranks. */
static void test_forward_prices_what_passes_on(void **state)
{
    (void)state;
    cr_layout *four = cr_layout_create_blocks(4, 1), *two = cr_layout_create_blocks(2, 1);
    cr_tune_costs c = {.forward = 1e-6};
    cr_tune_traffic t = {.records_per_dest = 3, .record_bytes = 8};
    cr_route hyper = {.kind = CR_ROUTE_HYPERCUBE}, direct = {.kind = CR_ROUTE_DIRECT};
    cr_tune_prediction p;
    assert_int_equal(cr_tune_predict(four, &hyper, 1 << 16, GiB, &t, &c, &p), 0);
    assert_true(near(p.records, 12) && near(p.seconds, 3e-6));
    c.slowdown = 2;
    assert_int_equal(cr_tune_predict(four, &hyper, 1 << 16, GiB, &t, &c, &p), 0);
    assert_true(near(p.seconds, 6e-6));
    assert_int_equal(cr_tune_predict(four, &direct, 1 << 16, GiB, &t, &c, &p), 0);
    assert_true(p.seconds == 0);
    assert_int_equal(cr_tune_predict(two, &hyper, 1 << 16, GiB, &t, &c, &p), 0);
    assert_true(p.seconds == 0);
    c.forward = -1;
    assert_int_equal(cr_tune_predict(four, &hyper, 1 << 16, GiB, &t, &c, &p), -1);
    cr_layout_destroy(four);
    cr_layout_destroy(two);
}

/* The keys found from an epoch's merges are the keys that predict those merges, on
 * every route; no merges, no keys. */
static void test_keys_from_merges(void **state)
{
    (void)state;
    cr_layout *l = cr_layout_create_blocks(256, 4);
    cr_tune_costs c;
    cr_tune_costs_default(&c);
    static const cr_route_kind kinds[] = {CR_ROUTE_DIRECT, CR_ROUTE_NLNR, CR_ROUTE_GRID,
                                          CR_ROUTE_HYPERCUBE};
    for (int k = 0; k < 4; k++)
        for (double keys = 0.5; keys < 100; keys *= 7) {
            cr_route r = {.kind = kinds[k]};
            cr_tune_traffic t = {.records_per_dest = 10, .record_bytes = 8,
                                 .keys_per_dest = keys};
            cr_tune_prediction x;
            assert_int_equal(cr_tune_predict(l, &r, 1 << 16, GiB, &t, &c, &x), 0);
            double merged = 10.0 * 255 - x.arriving;
            double found = cr_tune_keys_per_dest(l, &r, 10, merged);
            assert_true(fabs(found - keys) <= 1e-6 * keys);
        }
    assert_true(cr_tune_keys_per_dest(l, &(cr_route){.kind = CR_ROUTE_GRID}, 10, 0) == 0);
    cr_layout_destroy(l);
}

/* 1024 ranks, one per node, 32 records of 16 bytes to every other rank: without
 * merging the 32 x 32 grid is cheapest (two hops, where the hypercube's records take
 * five on average); when they draw from 16 keys a destination, the hypercube merges
 * them down at every one of its ten levels and wins. */
static void test_merging_decides_the_route(void **state)
{
    (void)state;
    cr_layout *l = cr_layout_create_blocks(1024, 1);
    cr_tune_costs c = {.alpha_on = 2e-6, .alpha_off = 2e-6, .beta_on = 0.1e-9,
                       .beta_off = 0.1e-9, .handle = 10e-9};
    cr_tune_traffic t = {.records_per_dest = 32, .record_bytes = 16};
    assert_int_equal(choose(l, NULL, 64 << 10, 1 << 25, t, c).route.kind, CR_ROUTE_GRID);
    t.keys_per_dest = 16;
    assert_int_equal(choose(l, NULL, 64 << 10, 1 << 25, t, c).route.kind, CR_ROUTE_HYPERCUBE);
    cr_layout_destroy(l);
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
        cmocka_unit_test(test_file_picks_the_shape),
        cmocka_unit_test(test_file_of_shapes_refusals),
        cmocka_unit_test(test_concurrent_adds_keep_every_shape),
        cmocka_unit_test(test_save_does_not_follow_a_link),
        cmocka_unit_test(test_merging_counts_by_hand),
        cmocka_unit_test(test_forward_prices_what_passes_on),
        cmocka_unit_test(test_keys_from_merges),
        cmocka_unit_test(test_merging_decides_the_route),
        cmocka_unit_test(test_step_hypercube_wins_at_scale),
        cmocka_unit_test(test_step_direct_wins_on_one_node),
        cmocka_unit_test(test_step_merging_decides),
        cmocka_unit_test(test_step_refuses_what_does_not_fit),
    };
    snprintf(tune_path, sizeof tune_path, "/tmp/courier-test-tune-%ld.txt", (long)getpid());
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(tune_path);
    char lock[80];
    snprintf(lock, sizeof lock, "%s.lock", tune_path);
    unlink(lock);
    return failed;
}
