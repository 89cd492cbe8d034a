/* Collective schedules, checked by simulating all ranks at once.
 *
 * Allreduce: every slot holds a multiset of inputs (a count per rank) and a hash of
 * the expression tree that produced it. A schedule is right when every rank's result
 * holds every input exactly once; that is what makes a non-idempotent reduction such
 * as a sum correct. Equal expression hashes on all ranks mean the ranks perform the
 * same sequence of operations, so floating-point results are bit-identical.
 *
 * Allgather: every rank must end with every block, receive none twice, and send only
 * blocks it has.
 *
 * The simulator runs the ranks' rounds with rendezvous semantics (a send completes
 * when its receive is posted, messages between two ranks match in order), so a schedule
 * that could deadlock fails here too. */
#include "coll/coll_internal.h"
#include "coll/schedule.h"
#include "courier/nbx.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define MAXP 128

/* ---------------------------------------------------------------- message matching */

typedef struct channel {
    int nsent, nrecv;   /* posted so far */
    int cap;
    void **payload;     /* snapshot of each send */
} channel;

static channel chans[MAXP][MAXP]; /* [src][dst] */

static void chans_reset(int p)
{
    for (int s = 0; s < p; s++)
        for (int d = 0; d < p; d++) {
            for (int i = 0; i < chans[s][d].nsent; i++)
                free(chans[s][d].payload[i]);
            free(chans[s][d].payload);
            memset(&chans[s][d], 0, sizeof chans[s][d]);
        }
}

static int post_send(int src, int dst, void *snapshot)
{
    channel *c = &chans[src][dst];
    if (c->nsent == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 8;
        c->payload = realloc(c->payload, (size_t)c->cap * sizeof *c->payload);
    }
    c->payload[c->nsent] = snapshot;
    return c->nsent++;
}

/* ---------------------------------------------------------------- allreduce */

typedef struct value {
    int count[MAXP];
    uint64_t shape;
} value;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

typedef struct red_rank {
    cr_red_schedule schedule;
    value *slots;
    int round;
    bool posted;
    int seq[64];   /* per op of the current round: message sequence number */
} red_rank;

static red_rank rr[MAXP];

static bool red_round_done(int p, int r)
{
    cr_red_schedule *pl = &rr[r].schedule;
    int a = pl->round_start[rr[r].round], b = pl->round_start[rr[r].round + 1];
    for (int i = a; i < b; i++) {
        cr_red_op *op = &pl->ops[i];
        if (op->code == CR_RED_SEND && chans[r][op->peer].nrecv <= rr[r].seq[i - a])
            return false;
        if (op->code == CR_RED_RECV && chans[op->peer][r].nsent <= rr[r].seq[i - a])
            return false;
    }
    (void)p;
    return true;
}

static void red_post(int r)
{
    cr_red_schedule *pl = &rr[r].schedule;
    int a = pl->round_start[rr[r].round], b = pl->round_start[rr[r].round + 1];
    assert_true(b - a <= 64);
    for (int i = a; i < b; i++) {
        cr_red_op *op = &pl->ops[i];
        if (op->code == CR_RED_SEND) {
            value *v = malloc(sizeof *v);
            *v = rr[r].slots[op->a];
            rr[r].seq[i - a] = post_send(r, op->peer, v);
        } else if (op->code == CR_RED_RECV) {
            rr[r].seq[i - a] = chans[op->peer][r].nrecv++;
        }
    }
    rr[r].posted = true;
}

static void red_finish_round(int p, int r)
{
    cr_red_schedule *pl = &rr[r].schedule;
    int a = pl->round_start[rr[r].round], b = pl->round_start[rr[r].round + 1];
    for (int i = a; i < b; i++) {
        cr_red_op *op = &pl->ops[i];
        value *s = rr[r].slots;
        switch (op->code) {
        case CR_RED_SEND: break;
        case CR_RED_RECV: s[op->dst] = *(value *)chans[op->peer][r].payload[rr[r].seq[i - a]]; break;
        case CR_RED_COPY: s[op->dst] = s[op->a]; break;
        case CR_RED_COMBINE: {
            value v;
            for (int k = 0; k < p; k++)
                v.count[k] = s[op->a].count[k] + s[op->b].count[k];
            v.shape = mix(s[op->a].shape * 31 + mix(s[op->b].shape) + 0x9e37);
            s[op->dst] = v;
            break;
        }
        }
    }
    rr[r].round++;
    rr[r].posted = false;
}

/* Run the schedules of all p ranks; returns false (with a message) on any error. */
static bool simulate_allreduce(cr_allreduce_algo algo, int p, int n, bool *same_shape,
                               int *max_rounds)
{
    chans_reset(p);
    for (int r = 0; r < p; r++) {
        memset(&rr[r], 0, sizeof rr[r]);
        if (!cr_schedule_allreduce(&rr[r].schedule, algo, p, r, n))
            return false;
        rr[r].slots = calloc((size_t)rr[r].schedule.nslots, sizeof(value));
        rr[r].slots[0].count[r] = 1;
        rr[r].slots[0].shape = mix((uint64_t)r + 1);
    }
    *max_rounds = 0;
    for (bool progress = true; progress;) {
        progress = false;
        for (int r = 0; r < p; r++) {
            if (rr[r].round == rr[r].schedule.nrounds)
                continue;
            if (!rr[r].posted) {
                red_post(r);
                progress = true;
            }
            if (red_round_done(p, r)) {
                red_finish_round(p, r);
                progress = true;
            }
        }
    }
    bool ok = true;
    for (int r = 0; r < p; r++) {
        if (rr[r].round != rr[r].schedule.nrounds)
            fail_msg("algo %d p=%d n=%d: rank %d stuck in round %d (deadlock)", algo, p, n, r,
                     rr[r].round);
        value *res = &rr[r].slots[rr[r].schedule.result];
        for (int k = 0; k < p; k++)
            if (res->count[k] != 1)
                fail_msg("algo %d p=%d n=%d: rank %d has input %d %d times", algo, p, n, r, k,
                         res->count[k]);
        if (res->shape != rr[0].slots[rr[0].schedule.result].shape)
            ok = false;
        if (rr[r].schedule.nrounds > *max_rounds)
            *max_rounds = rr[r].schedule.nrounds;
    }
    for (int s = 0; s < p; s++)
        for (int d = 0; d < p; d++)
            if (chans[s][d].nsent != chans[s][d].nrecv)
                fail_msg("algo %d p=%d: %d sends from %d to %d, %d receives", algo, p,
                         chans[s][d].nsent, s, d, chans[s][d].nrecv);
    *same_shape = ok;
    for (int r = 0; r < p; r++) {
        free(rr[r].slots);
        cr_red_schedule_free(&rr[r].schedule);
    }
    return true;
}

static int ceil_log(int p, int base)
{
    int k = 0;
    for (long m = 1; m < p; m *= base)
        k++;
    return k;
}

static const int sizes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16, 17, 21, 27, 31, 32, 33, 64, 100};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))

static void test_tree_and_pairwise_exact_and_identical(void **state)
{
    (void)state;
    for (int i = 0; i < NSIZES; i++) {
        int p = sizes[i], rounds;
        bool same;
        assert_true(simulate_allreduce(CR_SCHEDULE_AR_TREE, p, 0, &same, &rounds));
        assert_true(same); /* bit-identical on every rank */
        assert_true(rounds <= 2 * ceil_log(p, 2) + 1);
        assert_true(simulate_allreduce(CR_SCHEDULE_AR_PAIRWISE, p, 0, &same, &rounds));
        assert_true(same);
        int p2 = 1;
        while (2 * p2 <= p)
            p2 *= 2;
        /* the butterfly, and one round in and one out for the leftovers (no round to
         * copy the input: it is read where it is) */
        assert_true(rounds <= ceil_log(p2, 2) + (p > p2 ? 2 : 0));
    }
}

/* Every allreduce schedule only reads its input (slot 0), so the executor reads it where
 * the caller holds it; a schedule that writes slot 0 (the broadcast's receivers) says so. */
static void test_schedules_keep_their_input(void **state)
{
    (void)state;
    for (int i = 0; i < NSIZES; i++)
        for (int rank = 0; rank < sizes[i]; rank++)
            for (int algo = CR_SCHEDULE_AR_TREE; algo <= CR_SCHEDULE_AR_BRUCK; algo++)
                for (int n = 1; n <= 3; n++) {
                    cr_red_schedule schedule = {0};
                    if (!cr_schedule_allreduce(&schedule, (cr_allreduce_algo)algo, sizes[i], rank, n)) {
                        cr_red_schedule_free(&schedule);
                        continue;
                    }
                    if (!schedule.keeps_input)
                        fail_msg("algorithm %d, %d ports, p %d, rank %d writes its input", algo,
                                 n, sizes[i], rank);
                    cr_red_schedule_free(&schedule);
                }
    cr_red_schedule bcast = {0};
    cr_schedule_bcast(&bcast, 4, 0);
    assert_true(bcast.keeps_input);
    cr_red_schedule_free(&bcast);
    cr_schedule_bcast(&bcast, 4, 1);
    assert_false(bcast.keeps_input);
    cr_red_schedule_free(&bcast);
}

static void test_bruck_exact_for_every_n(void **state)
{
    (void)state;
    for (int i = 0; i < NSIZES; i++)
        for (int n = 1; n <= 5; n++) {
            int p = sizes[i], rounds;
            bool same;
            assert_true(simulate_allreduce(CR_SCHEDULE_AR_BRUCK, p, n, &same, &rounds));
            /* a local copy, then ceil(log_{n+1} p) communication rounds */
            assert_int_equal(rounds, 1 + ceil_log(p, n + 1));
        }
}

/* The adapted dissemination counts every input once, also where p is not a power
 * of n+1; where no adaption exists, the scheduler says so. */
static void test_dissemination_adapted_is_exact(void **state)
{
    (void)state;
    int adapted = 0, refused = 0, not_power = 0;
    for (int p = 1; p <= 100; p++)
        for (int n = 1; n <= 5; n++) {
            cr_dissem_adaption a;
            bool exists = cr_dissem_adaption_for(p, n, &a);
            int rounds;
            bool same;
            bool scheduled = simulate_allreduce(CR_SCHEDULE_AR_DISSEM, p, n, &same, &rounds);
            assert_int_equal(scheduled, exists);
            if (!exists) {
                refused++;
                continue;
            }
            adapted++;
            assert_int_equal(rounds, 1 + ceil_log(p, n + 1));
            long power = 1;
            while (power < p)
                power *= n + 1;
            not_power += power != p && a.rest != 0;
        }
    print_message("dissemination: %d (p, n) pairs adapted (%d with a partial block), %d refused\n",
                  adapted, not_power, refused);
    assert_true(not_power > 100);
    assert_true(refused > 0);
}

/* The paper's example: 8 ranks, n = 2 (Table I, Figure 3): the last round's second
 * sender sends only x2 o x1 (two inputs), nothing is taken out. */
static void test_dissemination_paper_example(void **state)
{
    (void)state;
    cr_dissem_adaption a;
    assert_true(cr_dissem_adaption_for(8, 2, &a));
    assert_int_equal(a.rounds, 2);
    assert_int_equal(a.block, 3);
    assert_int_equal(a.full, 1);
    assert_int_equal(a.rest, 2);
    assert_int_equal(a.send_len, 2);
    assert_int_equal(a.drop_len, 0);
    /* 9 = 3^2 ranks need no adaption */
    assert_true(cr_dissem_adaption_for(9, 2, &a));
    assert_int_equal(a.rest, 0);
    assert_int_equal(a.full, 2);
    /* n = 1 is a plain dissemination: fine for powers of two */
    assert_int_equal(cr_dissem_smallest_n(16, 4), 1);
    for (int p = 1; p <= 64; p++) {
        int n = cr_dissem_smallest_n(p, 8);
        assert_true(n >= 1); /* some n <= 8 always works up to 64 ranks */
        assert_true(cr_dissem_adaption_for(p, n, &a));
        if (n > 1)
            assert_false(cr_dissem_adaption_for(p, n - 1, &a));
    }
}

/* ---------------------------------------------------------------- allgather */

typedef struct ag_rank {
    cr_ag_schedule schedule;
    int *have; /* times each block arrived (own block counts 1) */
    int round;
    bool posted;
    int seq[8];
} ag_rank;

static ag_rank ar[MAXP];

static void ag_post(int r)
{
    cr_ag_schedule *pl = &ar[r].schedule;
    int a = pl->round_start[ar[r].round], b = pl->round_start[ar[r].round + 1];
    assert_true(b - a <= 8);
    for (int i = a; i < b; i++) {
        cr_ag_xfer *x = &pl->xfers[i];
        if (x->send) {
            int *blocks = malloc(((size_t)x->count + 1) * sizeof(int));
            blocks[0] = x->count;
            for (int k = 0; k < x->count; k++) {
                int blk = pl->blocks[x->first + k];
                if (ar[r].have[blk] == 0)
                    fail_msg("rank %d sends block %d it does not have (round %d)", r, blk,
                             ar[r].round);
                blocks[1 + k] = blk;
            }
            ar[r].seq[i - a] = post_send(r, x->peer, blocks);
        } else {
            ar[r].seq[i - a] = chans[x->peer][r].nrecv++;
        }
    }
    ar[r].posted = true;
}

static bool ag_round_done(int r)
{
    cr_ag_schedule *pl = &ar[r].schedule;
    int a = pl->round_start[ar[r].round], b = pl->round_start[ar[r].round + 1];
    for (int i = a; i < b; i++) {
        cr_ag_xfer *x = &pl->xfers[i];
        if (x->send && chans[r][x->peer].nrecv <= ar[r].seq[i - a])
            return false;
        if (!x->send && chans[x->peer][r].nsent <= ar[r].seq[i - a])
            return false;
    }
    return true;
}

static void ag_finish_round(int r)
{
    cr_ag_schedule *pl = &ar[r].schedule;
    int a = pl->round_start[ar[r].round], b = pl->round_start[ar[r].round + 1];
    for (int i = a; i < b; i++) {
        cr_ag_xfer *x = &pl->xfers[i];
        if (x->send)
            continue;
        int *got = chans[x->peer][r].payload[ar[r].seq[i - a]];
        if (got[0] != x->count)
            fail_msg("rank %d expects %d blocks from %d, gets %d", r, x->count, x->peer, got[0]);
        for (int k = 0; k < x->count; k++) {
            if (got[1 + k] != pl->blocks[x->first + k])
                fail_msg("rank %d expects block %d from %d, gets %d", r,
                         pl->blocks[x->first + k], x->peer, got[1 + k]);
            ar[r].have[got[1 + k]]++;
        }
    }
    ar[r].round++;
    ar[r].posted = false;
}

static int simulate_allgather(cr_allgather_algo algo, int p)
{
    chans_reset(p);
    for (int r = 0; r < p; r++) {
        memset(&ar[r], 0, sizeof ar[r]);
        if (!cr_schedule_allgather(&ar[r].schedule, algo, p, r))
            return -1;
        ar[r].have = calloc((size_t)p, sizeof(int));
        ar[r].have[r] = 1;
    }
    for (bool progress = true; progress;) {
        progress = false;
        for (int r = 0; r < p; r++) {
            if (ar[r].round == ar[r].schedule.nrounds)
                continue;
            if (!ar[r].posted) {
                ag_post(r);
                progress = true;
            }
            if (ag_round_done(r)) {
                ag_finish_round(r);
                progress = true;
            }
        }
    }
    int rounds = 0;
    for (int r = 0; r < p; r++) {
        if (ar[r].round != ar[r].schedule.nrounds)
            fail_msg("allgather %d p=%d: rank %d stuck in round %d", algo, p, r, ar[r].round);
        for (int b = 0; b < p; b++)
            if (ar[r].have[b] != 1)
                fail_msg("allgather %d p=%d: rank %d has block %d %d times", algo, p, r, b,
                         ar[r].have[b]);
        if (ar[r].schedule.nrounds > rounds)
            rounds = ar[r].schedule.nrounds;
        free(ar[r].have);
        cr_ag_schedule_free(&ar[r].schedule);
    }
    return rounds;
}

static void test_allgather_schedules(void **state)
{
    (void)state;
    for (int p = 1; p <= MAXP; p++) {
        int lg = ceil_log(p, 2);
        assert_int_equal(simulate_allgather(CR_SCHEDULE_AG_RING, p), p - 1);
        assert_int_equal(simulate_allgather(CR_SCHEDULE_AG_BRUCK, p), lg);
        assert_int_equal(simulate_allgather(CR_SCHEDULE_AG_SPARBIT, p), lg);
        assert_int_equal(simulate_allgather(CR_SCHEDULE_AG_NEIGHBOR, p), p % 2 ? -1 : p / 2);
        assert_int_equal(simulate_allgather(CR_SCHEDULE_AG_RECDOUBLE, p), (p & (p - 1)) ? -1 : lg);
    }
}

/* ---------------------------------------------------------------- Sparbit's ignore rule */

/* The thesis's rules (section 4.2), from the binary representation of p: subtrees
 * are its set bits; with s0 the smallest, the step with distance d ignores a block
 * if d == s0, or d > s0 and no subtree has size d. */
static uint64_t ignore_by_rules(uint64_t p)
{
    if ((p & (p - 1)) == 0)
        return 0;
    uint64_t s0 = p & -p, mask = 0;
    for (uint64_t d = 1; d < p; d <<= 1)
        if (d == s0 || (d > s0 && !(p & d)))
            mask |= d;
    return mask;
}

static void test_sparbit_ignore_steps(void **state)
{
    (void)state;
    /* Table 4 of the thesis: subtrees are the set bits */
    struct {
        uint64_t p;
        int subtrees;
        uint64_t sizes;
    } table4[] = {{5, 2, 4 | 1}, {12, 2, 8 | 4}, {16, 1, 16}, {21, 3, 16 | 4 | 1},
                  {31, 5, 16 | 8 | 4 | 2 | 1}};
    for (size_t i = 0; i < sizeof table4 / sizeof table4[0]; i++) {
        assert_int_equal(__builtin_popcountll(table4[i].p), table4[i].subtrees);
        assert_int_equal(table4[i].p, table4[i].sizes);
    }
    /* The bit trick of Algorithm 1 (lines 4-5) agrees with the rules at every
     * distance a run of p ranks uses, for the thesis's examples and beyond. */
    uint64_t examples[] = {5, 12, 16, 21, 31, 66, 84};
    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++) {
        uint64_t p = examples[i], used = 0;
        for (uint64_t d = 1; d < p; d <<= 1)
            used |= d;
        assert_int_equal(cr_sparbit_ignore_steps(p) & used, ignore_by_rules(p));
    }
    /* Figure 14: 84 = 0b1010100 ignores at distances 32, 8, 4; 66 = 0b1000010 at 32..2 */
    assert_int_equal(cr_sparbit_ignore_steps(84) & 127, 32 | 8 | 4);
    assert_int_equal(cr_sparbit_ignore_steps(66) & 127, 32 | 16 | 8 | 4 | 2);
    assert_int_equal(cr_sparbit_ignore_steps(5) & 7, 2 | 1);
    assert_int_equal(cr_sparbit_ignore_steps(16), 0);
    for (uint64_t p = 1; p <= 4096; p++) {
        uint64_t used = 0;
        for (uint64_t d = 1; d < p; d <<= 1)
            used |= d;
        assert_int_equal(cr_sparbit_ignore_steps(p) & used, ignore_by_rules(p));
    }
}

/* The automatic choices of docs/collectives.md, and that each applies to its P. */
static void test_auto_choices(void **state)
{
    (void)state;
    int ports;
    assert_int_equal(cr_allreduce_auto(8, 4, true, &ports), CR_ALLREDUCE_DISSEMINATION);
    assert_int_equal(cr_allreduce_auto(8, 4, false, &ports), CR_ALLREDUCE_BUTTERFLY);
    assert_int_equal(cr_allreduce_auto(2, 4, true, &ports), CR_ALLREDUCE_BUTTERFLY);
    assert_int_equal(cr_allreduce_auto(8, 2040, true, &ports), CR_ALLREDUCE_BUTTERFLY);
    assert_int_equal(cr_allgather_auto(8, 8), CR_ALLGATHER_RECDOUBLING);
    assert_int_equal(cr_allgather_auto(7, 8), CR_ALLGATHER_SPARBIT);
    assert_int_equal(cr_allgather_auto(7, 4096), CR_ALLGATHER_BRUCK);
    assert_int_equal(cr_allgather_auto(6, 1 << 20), CR_ALLGATHER_RING);
    assert_int_equal(cr_allgather_auto(8, 1 << 20), CR_ALLGATHER_NEIGHBOR);
    static const cr_allgather_algo schedule_of[] = {
        [CR_ALLGATHER_RING] = CR_SCHEDULE_AG_RING, [CR_ALLGATHER_NEIGHBOR] = CR_SCHEDULE_AG_NEIGHBOR,
        [CR_ALLGATHER_RECDOUBLING] = CR_SCHEDULE_AG_RECDOUBLE, [CR_ALLGATHER_BRUCK] = CR_SCHEDULE_AG_BRUCK,
        [CR_ALLGATHER_SPARBIT] = CR_SCHEDULE_AG_SPARBIT};
    for (int p = 1; p <= 64; p++)
        for (size_t bytes = 1; bytes <= (1u << 22); bytes *= 4) {
            cr_ag_schedule schedule;
            assert_true(cr_schedule_allgather(&schedule, schedule_of[cr_allgather_auto(p, bytes)], p, 0));
            cr_ag_schedule_free(&schedule);
            cr_red_schedule rp;
            cr_allreduce_algorithm a = cr_allreduce_auto(p, bytes, true, &ports);
            if (a == CR_ALLREDUCE_DISSEMINATION) {
                assert_true(cr_schedule_allreduce(&rp, CR_SCHEDULE_AR_DISSEM, p, 0, cr_dissem_smallest_n(p, 8)));
                cr_red_schedule_free(&rp);
            }
        }
}

/* The names' parsers: every name back to itself, and an unknown one refused with a
 * line naming it and what is accepted. */
static void test_parsers_say_why(void **state)
{
    (void)state;
    char err[256];
    for (int i = CR_ALLREDUCE_AUTO; i <= CR_ALLREDUCE_SHARED; i++) {
        cr_allreduce_algorithm a = CR_ALLREDUCE_AUTO;
        assert_int_equal(cr_allreduce_parse(cr_allreduce_name((cr_allreduce_algorithm)i), &a,
                                            NULL, 0), 0);
        assert_int_equal(a, i);
    }
    cr_allreduce_algorithm a = CR_ALLREDUCE_BRUCK;
    assert_int_equal(cr_allreduce_parse("tree", &a, err, sizeof err), -1);
    assert_int_equal(a, CR_ALLREDUCE_BRUCK);
    assert_string_equal(err, "unknown allreduce algorithm 'tree': expected auto, binomial, "
                             "butterfly, dissemination, bruck or shared");
    cr_allgather_algorithm g = CR_ALLGATHER_RING;
    assert_int_equal(cr_allgather_parse("sparbit", &g, NULL, 0), 0);
    assert_int_equal(g, CR_ALLGATHER_SPARBIT);
    assert_int_equal(cr_allgather_parse(NULL, &g, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown allgather algorithm '(null)': expected auto, ring"));
    cr_nbx_protocol p = CR_NBX_PROTOCOL_NBX;
    assert_int_equal(cr_nbx_protocol_parse("pcx", &p, NULL, 0), 0);
    assert_int_equal(p, CR_NBX_PROTOCOL_PCX);
    assert_int_equal(cr_nbx_protocol_parse("nbx2", &p, err, sizeof err), -1);
    assert_string_equal(err, "unknown sparse-exchange protocol 'nbx2': expected default, nbx, "
                             "pex or pcx");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree_and_pairwise_exact_and_identical),
        cmocka_unit_test(test_parsers_say_why),
        cmocka_unit_test(test_auto_choices),
        cmocka_unit_test(test_bruck_exact_for_every_n),
        cmocka_unit_test(test_schedules_keep_their_input),
        cmocka_unit_test(test_dissemination_adapted_is_exact),
        cmocka_unit_test(test_dissemination_paper_example),
        cmocka_unit_test(test_allgather_schedules),
        cmocka_unit_test(test_sparbit_ignore_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
