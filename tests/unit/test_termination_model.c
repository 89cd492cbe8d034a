/* A randomized model of cr_barrier's termination protocol, in one process.
 *
 * P simulated ranks buffer, issue, receive and handle messages whose handlers spawn
 * more messages; a global scheduler picks one random action at a time, so every
 * interleaving the real runtime can produce is possible. Ranks join waves of a
 * simulated non-blocking allreduce exactly as src/nbx/termination.c does (buffers
 * empty, synchronous sends complete) and, when their wave completes, decide with the
 * production function cr_term_barrier_quiet fed the wave's sums. A checker asserts that when a rank decides to stop, every message ever
 * created has been handled.
 *
 * Two receive designs are modelled: in "probe" mode a message is matched only when
 * its receiver handles it; in "prepost" mode it is matched (and the sender's
 * synchronous send completes) on arrival, before it is handled. The counting rule
 * (S_k == R_{k-1}) must be safe in both. The naive rule "nobody sent in this wave"
 * is safe only for probe mode; the test shows the model catches its failure under
 * prepost mode, which proves the checker can fail. */
#include "mailbox/termination.h"

#include "courier/rng.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define MAXP 8
#define MAXMSG 4096

typedef enum { BUFFERED, TRANSIT, ARRIVED, HANDLED } msg_state;
typedef enum { RULE_COUNTING, RULE_NAIVE } rule;

typedef struct msg {
    int src, dest, budget;
    msg_state state;
    bool matched;       /* the sender's synchronous send can complete */
    bool send_done;     /* the sender has noticed */
} msg;

typedef struct rank {
    uint64_t sent, handled;
    uint64_t sent_at_last_join;
    bool joined;
    uint64_t wave;      /* waves this rank has joined */
    bool done;
} rank;

typedef struct model {
    int p;
    bool prepost;
    rule r;
    uint64_t rng;
    msg m[MAXMSG];
    int nmsg;
    rank rk[MAXP];
    /* wave bookkeeping: contributions per wave */
    uint64_t wave_sent[1024], wave_handled[1024], wave_new[1024];
    int wave_joined[1024];
    cr_term term[MAXP]; /* each rank's production decision state (cr_term_barrier_quiet) */
} model;

static int rnd(model *md, int n)
{
    return (int)cr_rng_bounded(cr_rng_next(&md->rng), (uint64_t)n);
}

static void create(model *md, int src, int budget)
{
    if (md->nmsg == MAXMSG)
        return;
    md->m[md->nmsg++] = (msg){.src = src, .dest = rnd(md, md->p), .budget = budget,
                              .state = BUFFERED};
}

static bool rank_has(model *md, int i, msg_state st, bool by_src)
{
    for (int k = 0; k < md->nmsg; k++)
        if (md->m[k].state == st && (by_src ? md->m[k].src : md->m[k].dest) == i)
            return true;
    return false;
}

static bool sends_incomplete(model *md, int i)
{
    for (int k = 0; k < md->nmsg; k++)
        if (md->m[k].src == i && md->m[k].state != BUFFERED && !md->m[k].send_done)
            return true;
    return false;
}

/* One action of rank i, chosen at random among what it can do. Returns true if the
 * rank decided the barrier is over. */
static bool step_rank(model *md, int i)
{
    rank *r = &md->rk[i];
    switch (rnd(md, 4)) {
    case 0: /* issue a buffered message */
        for (int k = 0; k < md->nmsg; k++)
            if (md->m[k].src == i && md->m[k].state == BUFFERED) {
                md->m[k].state = TRANSIT;
                r->sent++;
                return false;
            }
        return false;
    case 1: /* handle one message that has arrived (probe mode: match it now) */
        for (int k = 0; k < md->nmsg; k++)
            if (md->m[k].dest == i && md->m[k].state == ARRIVED) {
                md->m[k].matched = true;
                md->m[k].state = HANDLED;
                int spawn = md->m[k].budget > 0 ? rnd(md, 3) : 0;
                for (int s = 0; s < spawn; s++)
                    create(md, i, md->m[k].budget - 1);
                r->handled++;
                return false;
            }
        return false;
    case 2: /* notice completed synchronous sends */
        for (int k = 0; k < md->nmsg; k++)
            if (md->m[k].src == i && md->m[k].matched)
                md->m[k].send_done = true;
        return false;
    default: /* the barrier's step */
        if (!r->joined) {
            if (rank_has(md, i, BUFFERED, true) || sends_incomplete(md, i))
                return false;
            uint64_t w = r->wave++;
            if (w >= 1024)
                fail_msg("more than 1024 waves");
            md->wave_sent[w] += r->sent;
            md->wave_handled[w] += r->handled;
            md->wave_new[w] += r->sent - r->sent_at_last_join;
            md->wave_joined[w]++;
            r->sent_at_last_join = r->sent;
            r->joined = true;
            return false;
        }
        uint64_t w = r->wave - 1;
        if (md->wave_joined[w] < md->p)
            return false; /* the allreduce has not completed */
        r->joined = false;
        /* The production decision, fed the wave's sums as the allreduce would. */
        cr_term *t = &md->term[i];
        t->global[1] = md->wave_sent[w];
        t->global[2] = md->wave_handled[w];
        bool quiet = cr_term_barrier_quiet(t);
        if (md->r == RULE_NAIVE)
            quiet = md->wave_new[w] == 0;
        r->done = quiet;
        return quiet;
    }
}

static void step_network(model *md)
{
    int k = rnd(md, md->nmsg ? md->nmsg : 1);
    if (k < md->nmsg && md->m[k].state == TRANSIT) {
        md->m[k].state = ARRIVED;
        if (md->prepost)
            md->m[k].matched = true;
    }
}

typedef enum { OK, UNSAFE, STUCK } outcome;

/* What the runs exercised, so the test cannot pass on trivial executions. */
static long total_messages;
static uint64_t most_waves;

static outcome run(uint64_t seed, int p, bool prepost, rule r)
{
    static model md;
    memset(&md, 0, sizeof md);
    md.p = p;
    md.prepost = prepost;
    md.r = r;
    md.rng = seed;
    /* user sends before the barrier: a few messages per rank, some ranks none */
    for (int i = 0; i < p; i++)
        for (int n = rnd(&md, 4); n > 0; n--)
            create(&md, i, rnd(&md, 4));
    for (long step = 0; step < 2000000; step++) {
        if (rnd(&md, 3) == 0) {
            step_network(&md);
            continue;
        }
        int i = rnd(&md, p);
        if (md.rk[i].done)
            continue;
        if (step_rank(&md, i)) {
            for (int k = 0; k < md.nmsg; k++)
                if (md.m[k].state != HANDLED)
                    return UNSAFE;
        }
        bool all_done = true;
        for (int j = 0; j < p; j++)
            all_done &= md.rk[j].done;
        if (all_done) {
            total_messages += md.nmsg;
            for (int j = 0; j < p; j++)
                if (md.rk[j].wave > most_waves)
                    most_waves = md.rk[j].wave;
            return OK;
        }
    }
    return STUCK;
}

/* The rule itself, on wave sums that separate it from its tempting variants. */
static void test_production_rule_on_wave_sums(void **state)
{
    (void)state;
    cr_term t = {0};
    /* Wave 1: 5 sent, 5 handled at the snapshots. A handler that ran after its rank
     * joined may have sent a message this wave did not see, so S_1 == R_1 is not
     * enough: the previous wave's handled count (0) must equal S_1. */
    t.global[1] = 5, t.global[2] = 5;
    assert_false(cr_term_barrier_quiet(&t));
    assert_int_equal(t.handled_before, 5);
    /* Wave 2: one more message appeared (sent 6); handled caught up with wave 1's
     * sent count but not with this one's. */
    t.global[1] = 6, t.global[2] = 6;
    assert_false(cr_term_barrier_quiet(&t));
    /* Wave 3: nothing new since wave 2, and wave 2 had handled all 6: done. */
    t.global[1] = 6, t.global[2] = 6;
    assert_true(cr_term_barrier_quiet(&t));
    /* A rule that compared a wave's sent count with the same wave's handled count
     * would have ended at wave 1; one that ignored handled counts would end at once. */
    cr_term u = {0};
    u.global[1] = 3, u.global[2] = 1;
    assert_false(cr_term_barrier_quiet(&u));
    u.global[1] = 3, u.global[2] = 3;
    assert_false(cr_term_barrier_quiet(&u)); /* previous wave had handled only 1 */
    u.global[1] = 3, u.global[2] = 3;
    assert_true(cr_term_barrier_quiet(&u));
}

static void test_counting_rule_is_safe_and_live(void **state)
{
    (void)state;
    total_messages = 0;
    most_waves = 0;
    for (int prepost = 0; prepost <= 1; prepost++)
        for (int p = 1; p <= 6; p++)
            for (uint64_t seed = 1; seed <= 300; seed++) {
                outcome o = run(seed * 7919 + (uint64_t)p, p, prepost, RULE_COUNTING);
                if (o != OK)
                    fail_msg("counting rule %s: P=%d seed=%llu %s", o == UNSAFE ? "unsafe" : "stuck",
                             p, (unsigned long long)seed, prepost ? "prepost" : "probe");
            }
    print_message("model: %ld messages over all runs, most waves in one barrier: %llu\n",
                  total_messages, (unsigned long long)most_waves);
    assert_true(total_messages > 10000);
    assert_true(most_waves >= 4);
}

static void test_naive_rule_is_safe_with_probe(void **state)
{
    (void)state;
    for (int p = 1; p <= 6; p++)
        for (uint64_t seed = 1; seed <= 300; seed++)
            assert_int_equal(run(seed * 104729 + (uint64_t)p, p, false, RULE_NAIVE), OK);
}

static void test_model_catches_naive_rule_with_prepost(void **state)
{
    (void)state;
    int unsafe = 0;
    for (int p = 2; p <= 6; p++)
        for (uint64_t seed = 1; seed <= 300; seed++)
            unsafe += run(seed * 104729 + (uint64_t)p, p, true, RULE_NAIVE) == UNSAFE;
    assert_true(unsafe > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_production_rule_on_wave_sums),
        cmocka_unit_test(test_counting_rule_is_safe_and_live),
        cmocka_unit_test(test_naive_rule_is_safe_with_probe),
        cmocka_unit_test(test_model_catches_naive_rule_with_prepost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
