/* The mailbox on the simulated transport: the scenarios of tests/mpi/test_mailbox.c
 * at P = 1 .. 1024 virtual ranks, each under many scheduler seeds, with exact
 * conservation checks; and one world of 4096 ranks under the hypercube route.
 *
 * Handlers run inside the virtual ranks, so they only record what they see; every
 * assertion runs after cr_sim_run has returned. A failure names the scenario, P,
 * the configuration and the seed: rerun with that seed to replay it exactly. */
#include <courier.h>
#include <courier/tune.h>

#include "courier/rng.h"

#include "../darray_scenarios.h"
#include "../exchange_scenarios.h"
#include "../container_scenarios.h"
#include "../requests_scenarios.h"
#include "../node_scenarios.h"
#include "../tune_expect.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

/* A deadlocked simulation abandons its ranks where they wait, with what they hold:
 * the tests that provoke one on purpose tell the leak checker so. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define ABANDONED_BEGIN() __lsan_disable()
#define ABANDONED_END() __lsan_enable()
#else
#define ABANDONED_BEGIN() ((void)0)
#define ABANDONED_END() ((void)0)
#endif

/* ---------------------------------------------------------------- configurations */

typedef struct named_config {
    const char *name;
    cr_config cfg;
} named_config;

static named_config config(const char *name)
{
    named_config n = {.name = name};
    cr_config_init(&n.cfg);
    cr_config *c = &n.cfg;
    if (!strcmp(name, "tiny")) { /* every record is its own send */
        c->buffer_bytes = 1;
        c->max_inflight = 4;
    } else if (!strcmp(name, "inflight1")) { /* back-pressure, deferred and cap flushes */
        c->buffer_bytes = 256;
        c->max_inflight = 1;
        c->buffer_cap_bytes = 1024;
    } else if (!strcmp(name, "huge")) { /* only barriers send */
        c->buffer_bytes = 64 << 20;
        c->buffer_cap_bytes = (size_t)1 << 30;
        c->flush_interval = 0;
    } else if (!strcmp(name, "nlnr")) {
        cr_route_parse("nlnr", &c->route, NULL, 0);
        c->node_size = 2;
    } else if (!strcmp(name, "nr3")) {
        cr_route_parse("nr", &c->route, NULL, 0);
        c->node_size = 3;
    } else if (!strcmp(name, "grid")) {
        cr_route_parse("grid", &c->route, NULL, 0);
        c->node_size = 2;
    } else if (!strcmp(name, "waits")) { /* the other flow policy, with back-pressure */
        c->flow = CR_FLOW_WAITS;
        c->buffer_bytes = 256;
        c->max_inflight = 2;
        c->buffer_cap_bytes = 1024;
    } else if (!strcmp(name, "hypercube")) {
        cr_route_parse("hypercube", &c->route, NULL, 0);
        c->node_size = 2;
        c->buffer_bytes = 512;
    } else if (!strcmp(name, "auto")) { /* route and buffer chosen by the cost model */
        cr_route_parse("auto", &c->route, NULL, 0);
        c->buffer_auto = true;
        c->node_size = 2;
    }
    return n;
}

/* ---------------------------------------------------------------- shared state */

/* What one virtual rank saw. The scenarios index it by cr_comm_rank. */
typedef struct seen {
    uint64_t count, sum, bad;
    uint64_t hops;
    uint64_t bound;  /* cr_memory_bound, as the rank took it at its end */
    int32_t round;   /* the barrier round this rank is in */
    int h;           /* the scenario's handler id */
} seen;

typedef struct world {
    int p;
    seen *ranks;
    uint64_t sent_count, sent_sum; /* what the senders created, summed */
    int param;
} world;

static world W;

/* The run being checked ("trees, P=2, tiny, seed 15845"), named in every failure so
 * that it can be replayed. */
static char ctx[160];
/* Unequal speeds for the runs that take them (test_unequal_speeds): every rank's
 * slowness drawn from the seed up to this, and the chance of a stall. */
static double sim_slowness, sim_stall;
#define EXPECT_EQ(a, b)                                                                  \
    do {                                                                                 \
        unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b);   \
        if (a_ != b_)                                                                    \
            fail_msg("%s: %s is %llu, expected %llu (%s)", ctx, #a, a_, b_, #b);        \
    } while (0)

static void world_reset(int p, int param)
{
    free(W.ranks);
    W = (world){.p = p, .ranks = calloc((size_t)p, sizeof(seen)), .param = param};
}

static uint64_t check_of(uint64_t a, uint64_t b, uint64_t c)
{
    return cr_rng_hash64(a * 0x9e3779b97f4a7c15ULL ^ cr_rng_hash64(b * 31 + c));
}

/* Over all ranks: no bad record anywhere; the records handled and the sum of what
 * they carried. */
static void seen_totals(int p, uint64_t *count, uint64_t *sum)
{
    *count = *sum = 0;
    for (int r = 0; r < p; r++) {
        EXPECT_EQ(W.ranks[r].bad, 0);
        *count += W.ranks[r].count;
        *sum += W.ranks[r].sum;
    }
}

/* ---------------------------------------------------------------- scenarios */

/* All to some: rank r sends K messages to each of D destinations drawn from its own
 * seed (all ranks when P is small). The payload carries a checksum of its fields. */
typedef struct a2a_msg {
    uint64_t src, dst, seq, check;
} a2a_msg;

static int a2a_fanout(int p)
{
    return p <= 64 ? p : 16;
}

static int a2a_dest(int src, int i, int p)
{
    return p <= 64 ? (src + i) % p : (int)cr_rng_bounded(cr_rng_hash64((uint64_t)src * 1000003 + (uint64_t)i), (uint64_t)p);
}

static void on_a2a(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)user;
    seen *s = &W.ranks[cr_comm_rank(comm)];
    a2a_msg m;
    memcpy(&m, payload, sizeof m);
    if (len != sizeof m || m.src != (uint64_t)src || m.dst != (uint64_t)cr_comm_rank(comm) ||
        m.check != check_of(m.src, m.dst, m.seq))
        s->bad++;
    s->count++;
    s->sum += m.check;
}

/* Send this rank's all-to-some messages, then wait in the barrier: message number
 * seq of each destination goes to handler `h`, or to `h_fifth` when seq % 5 == 2
 * (pass h twice for one handler). */
static void send_a2a(cr_comm *comm, int h, int h_fifth)
{
    int me = cr_comm_rank(comm), p = cr_comm_size(comm), k = W.param;
    for (int i = 0; i < a2a_fanout(p); i++)
        for (int seq = 0; seq < k; seq++) {
            int d = a2a_dest(me, i, p);
            a2a_msg m = {(uint64_t)me, (uint64_t)d, (uint64_t)(i * k + seq), 0};
            m.check = check_of(m.src, m.dst, m.seq);
            W.sent_count++;
            W.sent_sum += m.check;
            cr_async(comm, d, seq % 5 == 2 ? h_fifth : h, &m, sizeof m);
        }
    cr_barrier(comm);
}

static void run_a2a(cr_comm *comm, void *user)
{
    (void)user;
    seen *s = &W.ranks[cr_comm_rank(comm)];
    s->h = cr_register(comm, on_a2a, NULL);
    send_a2a(comm, s->h, s->h);
}

static void check_a2a(int p)
{
    uint64_t *want = calloc((size_t)p, sizeof *want);
    for (int r = 0; r < p; r++)
        for (int i = 0; i < a2a_fanout(p); i++)
            want[a2a_dest(r, i, p)] += (uint64_t)W.param;
    for (int r = 0; r < p; r++)
        if (W.ranks[r].count != want[r])
            fail_msg("%s: rank %d handled %llu messages, expected %llu", ctx, r,
                     (unsigned long long)W.ranks[r].count, (unsigned long long)want[r]);
    uint64_t count, sum;
    seen_totals(p, &count, &sum);
    EXPECT_EQ(count, W.sent_count);
    EXPECT_EQ(sum, W.sent_sum);
    free(want);
}

/* All to some through a batch handler: the same messages and checks as above, to
 * the rank itself too, every fifth one to an ordinary handler instead (which splits
 * the runs); the sender of each record in a batch comes from cr_batch_src, which
 * under a route reads the record's own route block. */
static void on_a2a_batch(cr_comm *comm, const cr_batch *b, void *user)
{
    for (size_t k = 0; k < b->count; k++)
        on_a2a(comm, cr_batch_src(b, k), cr_batch_payload(b, k), b->len, user);
}

static void run_a2a_batch(cr_comm *comm, void *user)
{
    (void)user;
    int hb = cr_register_type(comm, &(cr_handler_type){.batch = on_a2a_batch}, NULL);
    int hs = cr_register(comm, on_a2a, NULL);
    send_a2a(comm, hb, hs);
}

/* Combining: every rank adds to the same 10 counters (key k owned by rank k % P),
 * param rounds each, through a summing handler: records merge at their source and,
 * under routes, where they meet on the way. The owners' sums must be exact. */
#define COMBINE_KEYS 10

static int64_t combine_value(int r, uint64_t k, int i)
{
    return (int64_t)(cr_rng_hash64((uint64_t)r * 7919u + k * 104729u + (uint64_t)i) % 1001) - 500;
}

static void on_combined(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)src, (void)user;
    seen *s = &W.ranks[cr_comm_rank(comm)];
    uint64_t m[2];
    memcpy(m, payload, sizeof m);
    if (len != sizeof m || m[0] >= COMBINE_KEYS || (int)(m[0] % (uint64_t)W.p) != cr_comm_rank(comm))
        s->bad++;
    s->count++;
    s->sum += m[1]; /* int64 sums, wrapping alike */
}

static void run_combining(cr_comm *comm, void *user)
{
    (void)user;
    int me = cr_comm_rank(comm), p = cr_comm_size(comm);
    cr_dedup_rule rule = {.key_len = 8, .op = CR_OP_SUM, .type = CR_INT64};
    int h = cr_dedup_register(comm, &(cr_handler_type){.fn = on_combined}, &rule, NULL);
    for (int i = 0; i < W.param; i++)
        for (uint64_t k = 0; k < COMBINE_KEYS; k++) {
            int64_t v = combine_value(me, k, i);
            uint64_t m[2] = {k, (uint64_t)v};
            W.sent_sum += (uint64_t)v;
            W.sent_count++;
            cr_async(comm, (int)(k % (uint64_t)p), h, m, sizeof m);
        }
    cr_barrier(comm);
}

static void check_combining(int p)
{
    uint64_t handled, sum;
    seen_totals(p, &handled, &sum);
    EXPECT_EQ(sum, W.sent_sum);
    if (handled > W.sent_count)
        fail_msg("%s: %llu records handled, more than the %llu sent", ctx,
                 (unsigned long long)handled, (unsigned long long)W.sent_count);
}

/* Chains: tokens hop from handler to handler through random ranks. */
typedef struct token {
    uint64_t id;
    int32_t left;
    int32_t done;
} token;

static void on_token(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)src, (void)len, (void)user;
    seen *s = &W.ranks[cr_comm_rank(comm)];
    token t;
    memcpy(&t, payload, sizeof t);
    s->hops++;
    if (t.left > 0) {
        t.left--;
        t.done++;
        int next = (int)cr_rng_bounded(cr_rng_hash64(t.id * 977 + (uint64_t)t.done), (uint64_t)cr_comm_size(comm));
        cr_async(comm, next, s->h, &t, sizeof t);
    } else {
        s->count++;
        s->sum += t.id;
    }
}

static void run_chains(cr_comm *comm, void *user)
{
    (void)user;
    int me = cr_comm_rank(comm);
    seen *s = &W.ranks[me];
    s->h = cr_register(comm, on_token, NULL);
    for (int i = 0; i < 3; i++) {
        token t = {.id = (uint64_t)me * 3 + (uint64_t)i, .left = W.param};
        W.sent_count++;
        W.sent_sum += t.id;
        cr_async(comm, (me + i + 1) % cr_comm_size(comm), s->h, &t, sizeof t);
    }
    cr_barrier(comm);
}

static void check_chains(int p)
{
    uint64_t ends = 0, sum = 0, hops = 0;
    for (int r = 0; r < p; r++)
        ends += W.ranks[r].count, sum += W.ranks[r].sum, hops += W.ranks[r].hops;
    EXPECT_EQ(ends, W.sent_count);
    EXPECT_EQ(sum, W.sent_sum);
    EXPECT_EQ(hops, W.sent_count * (uint64_t)(W.param + 1));
}

/* Fan-out trees: every handler sends two children to random ranks until the depth
 * is used up, so handlers that run after their rank joined a barrier wave send
 * more than they received: the case the barrier's counting rule exists for. */
static void on_tree(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)src, (void)len, (void)user;
    seen *s = &W.ranks[cr_comm_rank(comm)];
    token t;
    memcpy(&t, payload, sizeof t);
    s->count++;
    s->sum += t.id;
    if (t.left == 0)
        return;
    for (int k = 0; k < 2; k++) {
        token child = {.id = t.id * 2 + (uint64_t)k, .left = t.left - 1, .done = t.done + 1};
        int next = (int)cr_rng_bounded(cr_rng_hash64(child.id * 131 + (uint64_t)child.left), (uint64_t)cr_comm_size(comm));
        cr_async(comm, next, s->h, &child, sizeof child);
    }
}

static void run_trees(cr_comm *comm, void *user)
{
    (void)user;
    int me = cr_comm_rank(comm);
    seen *s = &W.ranks[me];
    s->h = cr_register(comm, on_tree, NULL);
    token t = {.id = (uint64_t)me + 1, .left = W.param};
    cr_async(comm, (me + 1) % cr_comm_size(comm), s->h, &t, sizeof t);
    cr_barrier(comm);
    /* every node of every tree has been handled once the barrier returns */
    s->hops = s->count;
}

/* The trees, then a check that the barrier left nothing held: every send has
 * completed and every buffer to itself was handled, so the peaks of a reset start
 * from zero (a block the memory accounting lost would show here). */
static void run_trees_then_reset(cr_comm *comm, void *user)
{
    run_trees(comm, user);
    cr_stats_reset(comm);
    cr_stats st;
    cr_stats_get(comm, &st);
    W.ranks[cr_comm_rank(comm)].bad +=
        st.peak_memory_bytes + st.peak_inflight_bytes + st.peak_self_bytes;
}

static void check_trees(int p)
{
    uint64_t nodes = 0, want_sum = 0, done = 0;
    for (int r = 0; r < p; r++) {
        nodes += W.ranks[r].count;
        done += W.ranks[r].hops;
        /* ids of the tree rooted at i: i * 2^l + j for level l */
        for (int l = 0; l <= W.param; l++)
            for (uint64_t j = 0; j < (1ULL << l); j++)
                want_sum += ((uint64_t)r + 1) * (1ULL << l) + j;
    }
    uint64_t per_tree = (1ULL << (W.param + 1)) - 1, sum = 0;
    for (int r = 0; r < p; r++)
        sum += W.ranks[r].sum;
    EXPECT_EQ(nodes, (uint64_t)p * per_tree);
    EXPECT_EQ(done, nodes); /* nothing arrived after the barrier returned */
    EXPECT_EQ(sum, want_sum);
    uint64_t bad = 0;
    for (int r = 0; r < p; r++)
        bad += W.ranks[r].bad;
    EXPECT_EQ(bad, 0);
}

/* Hot spot: every rank sends everything to rank 0. */
static void run_hot(cr_comm *comm, void *user)
{
    (void)user;
    int me = cr_comm_rank(comm);
    seen *s = &W.ranks[me];
    s->h = cr_register(comm, on_a2a, NULL);
    for (int i = 0; i < W.param; i++) {
        a2a_msg m = {(uint64_t)me, 0, (uint64_t)i, check_of((uint64_t)me, 0, (uint64_t)i)};
        W.sent_count++;
        W.sent_sum += m.check;
        cr_async(comm, 0, s->h, &m, sizeof m);
    }
    cr_barrier(comm);
}

static void check_hot(int p)
{
    EXPECT_EQ(W.ranks[0].count, (uint64_t)p * (uint64_t)W.param);
    EXPECT_EQ(W.ranks[0].sum, W.sent_sum);
    EXPECT_EQ(W.ranks[0].bad, 0);
}

/* Random payload sizes, 0 to 3000 bytes, every byte checked. */
static void fill(uint8_t *b, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)cr_rng_hash64(seed + i);
}

static void on_sized(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)user;
    seen *s = &W.ranks[cr_comm_rank(comm)];
    uint64_t seed;
    if (len < sizeof seed) {
        s->count++;
        return;
    }
    memcpy(&seed, payload, sizeof seed);
    uint8_t want[3000];
    fill(want, len - sizeof seed, seed);
    if (memcmp(want, (const uint8_t *)payload + sizeof seed, len - sizeof seed) ||
        seed >> 40 != (uint64_t)src)
        s->bad++;
    s->count++;
    s->sum += len;
}

static void run_sizes(cr_comm *comm, void *user)
{
    (void)user;
    int me = cr_comm_rank(comm), p = cr_comm_size(comm);
    seen *s = &W.ranks[me];
    s->h = cr_register(comm, on_sized, NULL);
    uint64_t rng = cr_rng_hash64((uint64_t)me + 17);
    uint8_t buf[3000];
    for (int i = 0; i < W.param; i++) {
        size_t len = (size_t)cr_rng_bounded(cr_rng_next(&rng), 3000);
        if (len < 8)
            len = 0;
        uint64_t seed = (uint64_t)me << 40 | (uint64_t)i;
        if (len) {
            memcpy(buf, &seed, sizeof seed);
            fill(buf + sizeof seed, len - sizeof seed, seed);
        }
        W.sent_count++;
        W.sent_sum += len;
        cr_async(comm, (int)cr_rng_bounded(cr_rng_next(&rng), (uint64_t)p), s->h, buf, len);
    }
    cr_barrier(comm);
}

static void check_sizes(int p)
{
    uint64_t count, sum;
    seen_totals(p, &count, &sum);
    EXPECT_EQ(count, W.sent_count);
    EXPECT_EQ(sum, W.sent_sum);
}

/* Many barriers: a message of round r must be handled in round r, never after its
 * receiver has left barrier r nor before it entered round r; every round's
 * messages are all handled when barrier r returns. */
static uint64_t *round_counts; /* [round * P + rank] handled in that round */
#define ROUNDS 12

static void on_round(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)src, (void)len, (void)user;
    int me = cr_comm_rank(comm);
    seen *s = &W.ranks[me];
    int32_t r;
    memcpy(&r, payload, sizeof r);
    if (r != s->round)
        s->bad++;
    else
        round_counts[(size_t)r * (size_t)W.p + (size_t)me]++;
}

static int round_fanout(int me, int round)
{
    return (me + round) % 3 == 0 ? 0 : (me * 7 + round) % 5 + 1;
}

static void run_rounds(cr_comm *comm, void *user)
{
    (void)user;
    int me = cr_comm_rank(comm), p = cr_comm_size(comm);
    seen *s = &W.ranks[me];
    s->h = cr_register(comm, on_round, NULL);
    for (int32_t r = 0; r < ROUNDS; r++) {
        s->round = r;
        for (int i = 0; i < round_fanout(me, r); i++)
            cr_async(comm, (int)cr_rng_bounded(cr_rng_hash64((uint64_t)me * 131 + (uint64_t)(r * 7 + i)), (uint64_t)p),
                     s->h, &r, sizeof r);
        cr_barrier(comm);
        /* everything of this round has arrived here */
        s->count += round_counts[(size_t)r * (size_t)p + (size_t)me];
    }
}

static void check_rounds(int p)
{
    uint64_t want = 0;
    for (int r = 0; r < ROUNDS; r++)
        for (int me = 0; me < p; me++)
            want += (uint64_t)round_fanout(me, r);
    uint64_t got = 0, bad = 0;
    for (int me = 0; me < p; me++)
        got += W.ranks[me].count, bad += W.ranks[me].bad;
    EXPECT_EQ(bad, 0);
    EXPECT_EQ(got, want);
}

/* Broadcast: every rank broadcasts B messages; everybody gets P * B. */
static void on_bcast_count(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)user, (void)len;
    seen *s = &W.ranks[cr_comm_rank(comm)];
    uint64_t v[4];
    memcpy(v, payload, sizeof v);
    if (v[0] != (uint64_t)src)
        s->bad++;
    s->count++;
    s->sum += v[0] * 1000 + v[2];
}

/* Beyond 64 ranks one rank in p/16 broadcasts: a broadcast costs P records. */
static bool broadcaster(int me, int p)
{
    return p <= 64 || me % (p / 16) == 0;
}

static void run_bcast_counted(cr_comm *comm, void *user)
{
    (void)user;
    int me = cr_comm_rank(comm);
    seen *s = &W.ranks[me];
    s->h = cr_register(comm, on_bcast_count, NULL);
    for (int i = 0; i < W.param && broadcaster(me, cr_comm_size(comm)); i++) {
        uint64_t v[4] = {(uint64_t)me, 0, (uint64_t)i, 0};
        cr_async_bcast(comm, s->h, v, sizeof v);
    }
    cr_barrier(comm);
}

static void check_bcast(int p)
{
    uint64_t want_sum = 0, senders = 0;
    for (int r = 0; r < p; r++)
        for (int i = 0; i < W.param && broadcaster(r, p); i++)
            want_sum += (uint64_t)r * 1000 + (uint64_t)i, senders += i == 0;
    for (int r = 0; r < p; r++) {
        EXPECT_EQ(W.ranks[r].bad, 0);
        EXPECT_EQ(W.ranks[r].count, senders * (uint64_t)W.param);
        EXPECT_EQ(W.ranks[r].sum, want_sum);
    }
}

/* Multicast: every rank (one in p/16 beyond 64 ranks) multicasts B messages, i to
 * the ranks mcast_listed(me, i, d) picks (none, all, or about half, the sender
 * sometimes among them); each listed rank gets each exactly once, with the sender
 * as src. */
static bool mcast_listed(int r, int i, int d)
{
    if (i % 5 == 0)
        return i % 10 == 0; /* everybody, or (i = 5, 15 ...) nobody */
    return cr_rng_hash64((uint64_t)r * 1000003u + (uint64_t)i * 7919u + (uint64_t)d) & 1;
}

static void on_mcast_count(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)user;
    int me = cr_comm_rank(comm);
    seen *s = &W.ranks[me];
    uint64_t v[2];
    memcpy(v, payload, sizeof v);
    if (len != sizeof v || v[0] != (uint64_t)src || !mcast_listed(src, (int)v[1], me))
        s->bad++;
    s->count++;
    s->sum += v[0] * 1000 + v[1];
}

static void run_mcast(cr_comm *comm, void *user)
{
    (void)user;
    int me = cr_comm_rank(comm), p = cr_comm_size(comm);
    seen *s = &W.ranks[me];
    s->h = cr_register(comm, on_mcast_count, NULL);
    int *list = malloc((size_t)p * sizeof *list);
    for (int i = 0; i < W.param && broadcaster(me, p); i++) {
        size_t n = 0;
        for (int k = 0; k < p; k++) {
            int d = (k + me + i) % p;
            if (mcast_listed(me, i, d))
                list[n++] = d;
        }
        uint64_t v[2] = {(uint64_t)me, (uint64_t)i};
        cr_async_mcast(comm, list, n, s->h, v, sizeof v);
    }
    free(list);
    cr_barrier(comm);
}

static void check_mcast(int p)
{
    for (int d = 0; d < p; d++) {
        uint64_t count = 0, sum = 0;
        for (int r = 0; r < p; r++)
            for (int i = 0; i < W.param && broadcaster(r, p); i++)
                if (mcast_listed(r, i, d))
                    count++, sum += (uint64_t)r * 1000 + (uint64_t)i;
        EXPECT_EQ(W.ranks[d].bad, 0);
        EXPECT_EQ(W.ranks[d].count, count);
        EXPECT_EQ(W.ranks[d].sum, sum);
    }
}

/* ---------------------------------------------------------------- the runner */

typedef struct scenario {
    const char *name;
    cr_sim_rank_fn run;
    void (*check)(int p);
    int param;
    /* the most payload bytes one handler call sends, over all ranks (known only for
     * some scenarios: -1 otherwise) */
    long handler_output;
} scenario;

static const scenario scenarios[] = {
    {"all-to-some", run_a2a, check_a2a, 3, 0},
    {"batch handlers", run_a2a_batch, check_a2a, 7, 0},
    {"combining", run_combining, check_combining, 4, -1},
    {"chains", run_chains, check_chains, 6, (long)sizeof(token)},
    {"hot spot", run_hot, check_hot, 40, -1},
    {"random sizes", run_sizes, check_sizes, 12, -1},
    {"rounds", run_rounds, check_rounds, 0, -1},
    {"broadcast", run_bcast_counted, check_bcast, 3, -1},
    {"multicast", run_mcast, check_mcast, 4, 0},
    {"trees", run_trees, check_trees, 5, 2 * (long)sizeof(token)},
    {"trees, then a reset", run_trees_then_reset, check_trees, 4, 0},
};
#define NSCENARIOS (sizeof scenarios / sizeof scenarios[0])

/* The memory peaks of one rank (cr_stats): the peak of the sum is at least each
 * component's peak and at most the sum of the peaks. */
static void check_memory_peaks(const cr_stats *s, int r)
{
    uint64_t all = s->peak_memory_bytes;
    if (all < s->peak_buffered_bytes || all < s->peak_inflight_bytes || all < s->peak_self_bytes ||
        all < s->peak_parked_bytes ||
        all > s->peak_buffered_bytes + s->peak_inflight_bytes + s->peak_self_bytes +
                  s->peak_parked_bytes)
        fail_msg("%s: rank %d: memory peak %llu against buffered %llu, in flight %llu, to "
                 "itself %llu",
                 ctx, r, (unsigned long long)all, (unsigned long long)s->peak_buffered_bytes,
                 (unsigned long long)s->peak_inflight_bytes, (unsigned long long)s->peak_self_bytes);
}

/* Run one scenario at P under one configuration and seed; check the scenario's
 * result and the runtime's conservation counters. */
static void run_one(const scenario *sc, int p, const named_config *nc, uint64_t seed)
{
    world_reset(p, sc->param);
    round_counts = calloc((size_t)ROUNDS * (size_t)p, sizeof *round_counts);
    cr_stats *stats = calloc((size_t)p, sizeof *stats);
    cr_sim_opts o = {.ranks = p, .seed = seed, .cfg = &nc->cfg, .max_slowness = sim_slowness,
                     .stall_chance = sim_stall};
    char err[256];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = cr_sim_run(&o, sc->run, NULL, stats, err, sizeof err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (getenv("SIM_TIMES"))
        print_message("%-12s P=%-4d %-9s seed %-6llu %.3f s, %llu steps\n", sc->name, p, nc->name,
                      (unsigned long long)seed, (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
                      (unsigned long long)cr_sim_last_steps());
    snprintf(ctx, sizeof ctx, "%s, P=%d, %s, seed %llu", sc->name, p, nc->name,
             (unsigned long long)seed);
    if (rc)
        fail_msg("%s: %s", ctx, err);
    sc->check(p);
    uint64_t sent = 0, handled = 0, bsent = 0, bhandled = 0, msent = 0, mrecv = 0;
    uint64_t most_output = 0;
    for (int r = 0; r < p; r++) {
        check_memory_peaks(&stats[r], r);
        if (stats[r].peak_handler_output > most_output)
            most_output = stats[r].peak_handler_output;
        sent += stats[r].msgs_sent;
        handled += stats[r].msgs_handled + stats[r].merged_at_source + stats[r].merged_at_hops;
        bsent += stats[r].bytes_sent, bhandled += stats[r].bytes_handled + stats[r].merged_bytes;
        msent += stats[r].mpi_sends, mrecv += stats[r].mpi_recvs;
        if (stats[r].peak_inflight > nc->cfg.max_inflight)
            fail_msg("%s: rank %d: %llu sends in flight, cap %u", ctx, r,
                     (unsigned long long)stats[r].peak_inflight, nc->cfg.max_inflight);
        if (nc->cfg.route.kind == CR_ROUTE_DIRECT && stats[r].forwarded)
            fail_msg("%s: rank %d forwarded under the direct route", ctx, r);
    }
    EXPECT_EQ(sent, handled);
    EXPECT_EQ(bsent, bhandled);
    EXPECT_EQ(msent, mrecv);
    if (sc->handler_output >= 0)
        EXPECT_EQ(most_output, (uint64_t)sc->handler_output);
    free(stats);
    free(round_counts);
}

static const char *const config_names[] = {"default", "tiny", "inflight1", "huge", "nlnr", "auto",
                                           "nr3", "grid", "hypercube", "waits"};
#define NCONFIGS (sizeof config_names / sizeof config_names[0])

/* Seeds per scenario: 20, or SIM_SEEDS (the sanitizer build runs fewer). */
static int seeds_wanted(void)
{
    const char *s = getenv("SIM_SEEDS");
    return s && atoi(s) > 0 ? atoi(s) : 20;
}

/* The largest P a scenario runs at: SIM_MAX_P, or no limit. The sanitizer build
 * stops at 16 (every path at fewer ranks, each step several times dearer there);
 * the plain build runs every size up to 1024. */
static int largest_p(void)
{
    const char *s = getenv("SIM_MAX_P");
    return s && atoi(s) > 0 ? atoi(s) : 1 << 30;
}

/* The plain build's full matrix (largest P and the extra sizes), or the sanitizer
 * build's cut (SIM_MAX_P of 16 or less: each step there costs several times more). */
static bool thorough(void)
{
    return largest_p() > 16;
}

/* Every scenario under every configuration, `seeds` seeds each, at P. */
static void sweep(int p, int seeds)
{
    seeds = seeds_wanted() < seeds ? seeds_wanted() : seeds;
    for (size_t c = 0; c < NCONFIGS; c++) {
        named_config nc = config(config_names[c]);
        for (size_t s = 0; s < NSCENARIOS; s++)
            for (int seed = 1; seed <= seeds; seed++)
                run_one(&scenarios[s], p, &nc, (uint64_t)seed * 7919 + (uint64_t)p);
    }
}

/* ---------------------------------------------------------------- bounded memory */

/* Scenarios whose handlers are reentrant (cr_handler_type.reentrant): over the cap
 * they wait by handling, and the memory the mailbox holds stays within the bound of
 * docs/flow_control.md as long as no call reached the nesting limit. */
static int register_reentrant(cr_comm *comm, cr_handler_fn fn)
{
    return cr_register_type(comm, &(cr_handler_type){.fn = fn, .reentrant = true}, NULL);
}

/* Three trees of the kind above (two children per handler) from every rank, their
 * handler `h`; returns after the barrier that ends them. */
static void grow_three_trees(cr_comm *comm, int h)
{
    int me = cr_comm_rank(comm);
    W.ranks[me].h = h;
    for (int i = 0; i < 3; i++) {
        token t = {.id = (uint64_t)me * 3 + (uint64_t)i + 1, .left = W.param};
        cr_async(comm, (me + i) % cr_comm_size(comm), h, &t, sizeof t);
    }
    cr_barrier(comm);
}

static void run_bounded_trees(cr_comm *comm, void *user)
{
    (void)user;
    grow_three_trees(comm, register_reentrant(comm, on_tree));
}

static uint64_t tree_nodes(int depth)
{
    uint64_t n = 0, level = 1;
    for (int d = 0; d <= depth; d++, level *= 2)
        n += level;
    return n;
}

static void check_bounded_trees(int p)
{
    uint64_t count, sum;
    seen_totals(p, &count, &sum);
    EXPECT_EQ(count, (uint64_t)p * 3 * tree_nodes(W.param));
    uint64_t want = 0;
    for (int r = 0; r < p; r++)
        for (int i = 0; i < 3; i++) {
            uint64_t first = (uint64_t)r * 3 + (uint64_t)i + 1, width = 1;
            for (int d = 0; d <= W.param; d++, width *= 2)
                for (uint64_t j = 0; j < width; j++)
                    want += first * width + j;
        }
    EXPECT_EQ(sum, want);
}

/* A ring: every handler passes its token to the next rank, W.param times round. */
static void on_ring(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)src, (void)len, (void)user;
    int me = cr_comm_rank(comm);
    seen *s = &W.ranks[me];
    token t;
    memcpy(&t, payload, sizeof t);
    s->hops++;
    if (t.left-- > 0)
        cr_async(comm, (me + 1) % cr_comm_size(comm), s->h, &t, sizeof t);
    else
        s->count++, s->sum += t.id;
}

static void run_ring(cr_comm *comm, void *user)
{
    (void)user;
    int me = cr_comm_rank(comm);
    seen *s = &W.ranks[me];
    s->h = register_reentrant(comm, on_ring);
    for (int i = 0; i < 40; i++) {
        token t = {.id = (uint64_t)me * 40 + (uint64_t)i, .left = W.param * cr_comm_size(comm)};
        cr_async(comm, (me + 1) % cr_comm_size(comm), s->h, &t, sizeof t);
    }
    cr_barrier(comm);
}

static void check_ring(int p)
{
    uint64_t ends = 0, sum = 0, hops = 0, tokens = (uint64_t)p * 40;
    for (int r = 0; r < p; r++)
        ends += W.ranks[r].count, sum += W.ranks[r].sum, hops += W.ranks[r].hops;
    EXPECT_EQ(ends, tokens);
    EXPECT_EQ(sum, tokens * (tokens - 1) / 2);
    EXPECT_EQ(hops, tokens * ((uint64_t)W.param * (uint64_t)p + 1));
}

/* All to one from handlers: every handler of a tree's node also reports it to rank 0. */
static void on_report(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)src, (void)len, (void)user;
    token t;
    memcpy(&t, payload, sizeof t);
    W.ranks[cr_comm_rank(comm)].hops += t.id;
}

static int h_report;

static void on_reporting_tree(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    token t;
    memcpy(&t, payload, sizeof t);
    cr_async(comm, 0, h_report, &t, sizeof t);
    on_tree(comm, src, payload, len, user);
}

static void run_hot_from_handlers(cr_comm *comm, void *user)
{
    (void)user;
    h_report = register_reentrant(comm, on_report);
    grow_three_trees(comm, register_reentrant(comm, on_reporting_tree));
}

static void check_hot_from_handlers(int p)
{
    check_bounded_trees(p);
    uint64_t count, sum;
    seen_totals(p, &count, &sum);
    EXPECT_EQ(W.ranks[0].hops, sum); /* rank 0 got every node's report */
}

typedef struct bounded_scenario {
    const char *name;
    cr_sim_rank_fn run;
    void (*check)(int p);
    int param;
} bounded_scenario;

static const bounded_scenario bounded_scenarios[] = {
    {"reentrant trees", run_bounded_trees, check_bounded_trees, 7},
    {"reentrant ring", run_ring, check_ring, 3},
    {"all to one from handlers", run_hot_from_handlers, check_hot_from_handlers, 5},
};

/* The bound of docs/flow_control.md for records of `payload` bytes: the cap, one
 * call's record per level of waits and for the call that started them, and the
 * slack of the blocks the event loop sends or hands over (a block's capacity beyond
 * its records: less than one block each). */
static uint64_t memory_bound(const cr_config *cfg, size_t payload, int p)
{
    uint64_t record = 8 + 8 + ((payload + 7) & ~(size_t)7); /* run header, route, payload */
    uint64_t block = (cfg->buffer_bytes + 7) & ~(size_t)7;
    (void)p;
    return cfg->buffer_cap_bytes + ((uint64_t)cfg->nest_limit + 1) * record +
           ((uint64_t)cfg->max_inflight + 1) * block;
}

/* Small buffers, a cap of four of them, two sends in flight; reentrant handlers wait
 * by handling (COURIER_FLOW=waits). */
static named_config capped(const char *route)
{
    named_config nc = config(route ? route : "default");
    nc.name = route ? route : "capped";
    nc.cfg.flow = CR_FLOW_WAITS;
    nc.cfg.buffer_bytes = 64;
    nc.cfg.buffer_cap_bytes = 256;
    nc.cfg.max_inflight = 2;
    nc.cfg.nest_limit = 16;
    return nc;
}

typedef struct bounded_result {
    uint64_t overruns, peak, bound, nesting, waits;
} bounded_result;

/* Run one bounded scenario; check delivery, conservation and, on every rank whose
 * calls never reached the nesting limit, the memory bound. */
static bounded_result run_bounded(const bounded_scenario *sc, int p, const named_config *nc,
                                  uint64_t seed, int param, bool check_bound)
{
    world_reset(p, param);
    cr_stats *stats = calloc((size_t)p, sizeof *stats);
    cr_sim_opts o = {.ranks = p, .seed = seed, .cfg = &nc->cfg};
    char err[256];
    int rc = cr_sim_run(&o, sc->run, NULL, stats, err, sizeof err);
    snprintf(ctx, sizeof ctx, "%s, P=%d, %s, nest limit %u, seed %llu", sc->name, p, nc->name,
             nc->cfg.nest_limit, (unsigned long long)seed);
    if (rc)
        fail_msg("%s: %s", ctx, err);
    sc->check(p);
    bounded_result res = {.bound = memory_bound(&nc->cfg, sizeof(token), p)};
    uint64_t sent = 0, handled = 0;
    for (int r = 0; r < p; r++) {
        const cr_stats *s = &stats[r];
        check_memory_peaks(s, r);
        sent += s->msgs_sent;
        handled += s->msgs_handled;
        if (s->peak_nesting > nc->cfg.nest_limit)
            fail_msg("%s: rank %d nested %llu waits, the limit is %u", ctx, r,
                     (unsigned long long)s->peak_nesting, nc->cfg.nest_limit);
        res.overruns += s->cap_overruns;
        res.waits += s->handler_waits;
        if (s->peak_nesting > res.nesting)
            res.nesting = s->peak_nesting;
        if (s->cap_overruns == 0 && s->peak_memory_bytes > res.peak)
            res.peak = s->peak_memory_bytes;
    }
    EXPECT_EQ(sent, handled);
    if (check_bound && res.peak > res.bound)
        fail_msg("%s: a rank without cap overruns held %llu bytes, above the bound of %llu", ctx,
                 (unsigned long long)res.peak, (unsigned long long)res.bound);
    free(stats);
    return res;
}

/* One rank: the waits handle the newest records first, a depth-first order, so the
 * trees (depth 12, two children each) stay within the bound with no overrun. Without
 * the waits (a nest limit of 0) the same program holds far more than the bound:
 * the test fails if the rule is weakened. */
static void test_bound_one_rank(void **state)
{
    (void)state;
    named_config nc = capped(NULL);
    for (int seed = 1; seed <= 5; seed++) {
        bounded_result r = run_bounded(&bounded_scenarios[0], 1, &nc, (uint64_t)seed, 12, true);
        EXPECT_EQ(r.overruns, 0);
        assert_true(r.waits > 0);
        assert_true(r.peak <= r.bound);
    }
    nc.cfg.nest_limit = 0;
    bounded_result r = run_bounded(&bounded_scenarios[0], 1, &nc, 1, 12, false);
    if (r.peak <= 4 * r.bound)
        fail_msg("without waits the trees held %llu bytes, expected far above the bound of %llu",
                 (unsigned long long)r.peak, (unsigned long long)r.bound);
}

/* Every bounded scenario at P = 1 .. 256, direct and routed: exact delivery, no
 * deadlock (the simulation reports one), waits never nested past the limit, and the
 * bound on every rank that had no overrun. */
/* User code's cap flush waits for a slot, and the handlers it runs forward records
 * and wait by handling over the cap: such a wait must send without the cap flush
 * that is further out on the stack (one slot, a small cap, routed traffic from user
 * code). The regular scenarios under the grid route, P = 5 to 17. */
static void test_forwarding_inside_cap_flush(void **state)
{
    (void)state;
    named_config nc = config("grid");
    nc.name = "grid, one slot";
    nc.cfg.buffer_bytes = 256;
    nc.cfg.max_inflight = 1;
    nc.cfg.buffer_cap_bytes = 1024;
    static const int ps[] = {5, 8, 17};
    int seeds = seeds_wanted() < 8 ? seeds_wanted() : 8;
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
        for (size_t sc = 0; sc < NSCENARIOS; sc++)
            for (int seed = 1; seed <= seeds; seed++)
                run_one(&scenarios[sc], ps[i], &nc, (uint64_t)seed * 31 + (uint64_t)ps[i]);
}

static void test_bounded_sweep(void **state)
{
    (void)state;
    static const int ps[] = {1, 2, 3, 5, 8, 17, 64, 256};
    static const char *const routes[] = {NULL, "hypercube", "nlnr"};
    int seeds = seeds_wanted() < 8 ? seeds_wanted() : 8;
    uint64_t overruns = 0, runs = 0;
    for (size_t i = 0; i < sizeof ps / sizeof ps[0] && ps[i] <= largest_p(); i++)
        for (size_t k = 0; k < sizeof routes / sizeof routes[0]; k++) {
            named_config nc = capped(routes[k]);
            for (size_t s = 0; s < sizeof bounded_scenarios / sizeof bounded_scenarios[0]; s++)
                for (int seed = 1; seed <= (ps[i] >= 256 ? 1 : ps[i] >= 64 ? (seeds < 2 ? seeds : 2) : seeds); seed++) {
                    bounded_result r =
                        run_bounded(&bounded_scenarios[s], ps[i], &nc,
                                    (uint64_t)seed * 7919 + (uint64_t)ps[i],
                                    bounded_scenarios[s].param, true);
                    overruns += r.overruns > 0;
                    runs++;
                }
        }
    print_message("bounded memory: %llu of %llu runs had cap overruns\n",
                  (unsigned long long)overruns, (unsigned long long)runs);
}

/* ---------------------------------------------------------------- deep-held */

/* COURIER_FLOW=deep-held (docs/flow_control.md): records parked by generation, the
 * deepest handled first, handling paused while the send buffers and the sends in
 * flight hold the cap, other ranks' buffers refused while the park holds its cap,
 * and a relief when a paused, refusing rank makes no progress. */
static named_config deep(const char *route)
{
    named_config nc = config(route ? route : "default");
    nc.name = route ? route : "deep";
    nc.cfg.flow = CR_FLOW_DEEP_HELD;
    nc.cfg.buffer_bytes = 64;
    nc.cfg.buffer_cap_bytes = 256;
    nc.cfg.max_inflight = 8;
    return nc;
}

/* Every scenario under deep-held, small buffers and a small park, direct and
 * routed: exact results and conservation (the barrier counts a parked buffer once
 * its last run is handled). */
static void test_deep_scenarios(void **state)
{
    (void)state;
    static const int ps[] = {1, 2, 3, 5, 8, 17, 64};
    static const char *const routes[] = {NULL, "hypercube", "nlnr"};
    int seeds = seeds_wanted() < 6 ? seeds_wanted() : 6;
    for (size_t i = 0; i < sizeof ps / sizeof ps[0] && ps[i] <= largest_p(); i++)
        for (size_t k = 0; k < sizeof routes / sizeof routes[0]; k++) {
            named_config nc = deep(routes[k]);
            nc.cfg.park_cap_bytes = 512;
            for (size_t sc = 0; sc < NSCENARIOS; sc++)
                for (int seed = 1; seed <= (ps[i] >= 64 ? 1 : seeds); seed++)
                    run_one(&scenarios[sc], ps[i], &nc, (uint64_t)seed * 6007 + (uint64_t)ps[i]);
        }
}

/* A fan-out: every rank starts FAN_TREES trees; the handler of a record of depth d
 * below W.param sends fan_out records of depth d + 1 to ranks its key names. */
#define FAN_TREES 2
static uint64_t fan_out = 2;

typedef struct fan_rec {
    uint64_t depth, key;
} fan_rec;

static int fan_dest(uint64_t key, int p)
{
    return (int)(key % (uint64_t)p);
}

static void on_fan(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)src, (void)len, (void)user;
    seen *s = &W.ranks[cr_comm_rank(comm)];
    fan_rec r;
    memcpy(&r, payload, sizeof r);
    s->count++;
    s->sum += r.key;
    if (r.depth == (uint64_t)W.param)
        return;
    for (uint64_t j = 0; j < fan_out; j++) {
        fan_rec child = {r.depth + 1, cr_rng_hash64(r.key * 31 + j + 1)};
        cr_async(comm, fan_dest(child.key, cr_comm_size(comm)), s->h, &child, sizeof child);
    }
}

static uint64_t fan_root(int rank, int i)
{
    return cr_rng_hash64((uint64_t)rank * 1000 + (uint64_t)i + 1);
}

static void run_fan(cr_comm *comm, void *user)
{
    (void)user;
    int me = cr_comm_rank(comm);
    W.ranks[me].h = register_reentrant(comm, on_fan);
    cr_barrier(comm); /* every rank has registered before the first record */
    for (int i = 0; i < FAN_TREES; i++) {
        fan_rec r = {0, fan_root(me, i)};
        cr_async(comm, fan_dest(r.key, cr_comm_size(comm)), W.ranks[me].h, &r, sizeof r);
    }
    cr_barrier(comm);
    /* The bound of docs/flow_control.md for this rank, for the program's depth. */
    W.ranks[me].bound = cr_memory_bound(comm, (unsigned)W.param);
}

static void fan_expect(uint64_t key, uint64_t depth, uint64_t *count, uint64_t *sum)
{
    (*count)++;
    *sum += key;
    if (depth == (uint64_t)W.param)
        return;
    for (uint64_t j = 0; j < fan_out; j++)
        fan_expect(cr_rng_hash64(key * 31 + j + 1), depth + 1, count, sum);
}

static void check_fan(int p)
{
    uint64_t count, sum, want_count = 0, want_sum = 0;
    seen_totals(p, &count, &sum);
    for (int r = 0; r < p; r++)
        for (int i = 0; i < FAN_TREES; i++)
            fan_expect(fan_root(r, i), 0, &want_count, &want_sum);
    EXPECT_EQ(count, want_count);
    EXPECT_EQ(sum, want_sum);
}

typedef struct deep_result {
    uint64_t peak, bound, reliefs, worst_rank;
    int rc;
    char err[256];
} deep_result;

/* One fan-out run under deep-held; returns the highest peak over the ranks and the
 * bound of the rank that held it (its own reliefs counted), or the simulation's
 * error (rc != 0). */
static deep_result run_deep_fan(int p, int depth, const named_config *nc, uint64_t seed,
                                double slowness, double stall)
{
    world_reset(p, depth);
    cr_stats *stats = calloc((size_t)p, sizeof *stats);
    cr_sim_opts o = {.ranks = p, .seed = seed, .cfg = &nc->cfg, .max_slowness = slowness,
                     .stall_chance = stall};
    deep_result res = {0};
    res.rc = cr_sim_run(&o, run_fan, NULL, stats, res.err, sizeof res.err);
    snprintf(ctx, sizeof ctx, "deep-held fan-out, P=%d, depth %d, %s, seed %llu", p, depth,
             nc->name, (unsigned long long)seed);
    if (res.rc) {
        free(stats);
        return res;
    }
    check_fan(p);
    uint64_t sent = 0, handled = 0;
    for (int r = 0; r < p; r++) {
        const cr_stats *st = &stats[r];
        check_memory_peaks(st, r);
        sent += st->msgs_sent;
        handled += st->msgs_handled;
        res.reliefs += st->reliefs;
        uint64_t bound = W.ranks[r].bound;
        if (st->peak_memory_bytes > res.peak)
            res.peak = st->peak_memory_bytes, res.bound = bound, res.worst_rank = (uint64_t)r;
        if (st->peak_memory_bytes > bound)
            fail_msg("%s: rank %d held %llu bytes, above its bound of %llu (%llu reliefs)", ctx, r,
                     (unsigned long long)st->peak_memory_bytes, (unsigned long long)bound,
                     (unsigned long long)st->reliefs);
        if (st->handler_waits || st->cap_overruns)
            fail_msg("%s: rank %d waited by handling under deep-held", ctx, r);
    }
    EXPECT_EQ(sent, handled);
    free(stats);
    return res;
}

/* The fan-out at P = 1, 2, 4, 16 and 64, depth 8 and 10, ranks up to 10 times slower than
 * others and stalls: every rank within its bound, every record handled once, no
 * deadlock. A failure names the seed that replays it. DEEP_SEEDS=N runs N seeds at
 * every P (scripts/flow_sweep.sh; the suite runs fewer). */
static void test_deep_fanout(void **state)
{
    (void)state;
    static const int ps[] = {1, 2, 4, 16, 64};
    static const int depths[] = {8, 10};
    const char *sweep = getenv("DEEP_SEEDS");
    int seeds = seeds_wanted() < 8 ? seeds_wanted() : 8;
    named_config nc = deep(NULL);
    for (size_t i = 0; i < sizeof ps / sizeof ps[0] && ps[i] <= largest_p(); i++)
        for (size_t d = 0; d < sizeof depths / sizeof depths[0]; d++) {
            int n = sweep && atoi(sweep) > 0 ? atoi(sweep) : ps[i] >= 64 ? (seeds < 2 ? seeds : 2) : seeds;
            uint64_t reliefs = 0, worst = 0, worst_bound = 1;
            for (int seed = 1; seed <= n; seed++) {
                deep_result r = run_deep_fan(ps[i], depths[d], &nc,
                                             (uint64_t)seed * 4099 + (uint64_t)ps[i], 10, 0.002);
                if (r.rc)
                    fail_msg("%s: %s", ctx, r.err);
                reliefs += r.reliefs;
                if (r.peak * worst_bound > worst * r.bound)
                    worst = r.peak, worst_bound = r.bound;
            }
            print_message("deep-held fan-out P=%d depth %d: %d seeds, every rank within its bound; "
                          "the fullest held %llu of its %llu bytes; %llu reliefs in all\n",
                          ps[i], depths[d], n, (unsigned long long)worst,
                          (unsigned long long)worst_bound, (unsigned long long)reliefs);
        }
}

/* The trap: with a park of one buffer, ranks that are paused and refuse each other's
 * buffers wait for each other. Without the relief the simulation finds the
 * deadlock; with it the same schedule completes within the bound. */
static void test_deep_relief(void **state)
{
    (void)state;
    named_config nc = deep(NULL);
    nc.cfg.park_cap_bytes = nc.cfg.buffer_bytes;
    nc.cfg.max_inflight = 2;
    int deadlocks = 0;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        nc.cfg.park_relief_polls = 0;
        ABANDONED_BEGIN();
        deep_result r = run_deep_fan(4, 6, &nc, seed, 0, 0);
        ABANDONED_END();
        deadlocks += r.rc != 0 && strstr(r.err, "deadlock") != NULL;
        nc.cfg.park_relief_polls = 64;
        r = run_deep_fan(4, 6, &nc, seed, 0, 0);
        if (r.rc)
            fail_msg("%s: with reliefs: %s", ctx, r.err);
        if (r.reliefs == 0)
            fail_msg("%s: the schedule needed no relief, so it tests none", ctx);
    }
    if (deadlocks == 0)
        fail_msg("no schedule deadlocked without reliefs: the trap is not reproduced");
}

/* Receiving in place (docs/flow_control.md, deep-held rule 2): a rank that is never
 * paused handles every buffer where it arrived, its own included, and copies
 * nothing into its park. Handlers that send nothing, a cap no rank reaches. With
 * in_place_runs, the records alternate between two handlers, so every buffer holds
 * many runs, all of generation 0 like the rank's own buffers: a walk that stopped
 * after a run whenever its own buffers waited (not only deeper ones) parks them. */
#define IN_PLACE_RECORDS 3000
static uint64_t in_place_count[8], in_place_sum[8]; /* P up to 8 */
static bool in_place_runs;

static void on_sink(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)user;
    int me = cr_comm_rank(comm);
    for (size_t k = 0; k < b->count; k++) {
        uint64_t v;
        memcpy(&v, cr_batch_payload(b, k), sizeof v);
        in_place_count[me]++;
        in_place_sum[me] += v;
    }
}

static void run_in_place(cr_comm *comm, void *user)
{
    (void)user;
    int me = cr_comm_rank(comm), p = cr_comm_size(comm);
    cr_handler_type t = {.batch = on_sink};
    int h[2] = {cr_register_type(comm, &t, NULL), cr_register_type(comm, &t, NULL)};
    cr_barrier(comm);
    for (uint64_t i = 0; i < IN_PLACE_RECORDS; i++) {
        uint64_t v = cr_rng_hash64((uint64_t)me * IN_PLACE_RECORDS + i);
        cr_async(comm, (int)(v % (uint64_t)p), h[in_place_runs ? i & 1 : 0], &v, sizeof v);
    }
    cr_barrier(comm);
}

static void in_place_round(named_config *nc, int p, uint64_t seed, bool runs)
{
    in_place_runs = runs;
    memset(in_place_count, 0, sizeof in_place_count);
    memset(in_place_sum, 0, sizeof in_place_sum);
    cr_stats stats[8];
    char err[256];
    cr_sim_opts o = {.ranks = p, .seed = seed * 7 + (uint64_t)p, .cfg = &nc->cfg};
    snprintf(ctx, sizeof ctx, "receive in place%s, P=%d, seed %llu",
             runs ? " (many runs a buffer)" : "", p, (unsigned long long)o.seed);
    if (cr_sim_run(&o, run_in_place, NULL, stats, err, sizeof err))
        fail_msg("%s: %s", ctx, err);
    uint64_t count = 0, sum = 0, want_sum = 0;
    for (int r = 0; r < p; r++) {
        count += in_place_count[r];
        sum += in_place_sum[r];
        for (uint64_t k = 0; k < IN_PLACE_RECORDS; k++)
            want_sum += cr_rng_hash64((uint64_t)r * IN_PLACE_RECORDS + k);
        if (stats[r].peak_parked_bytes != 0)
            fail_msg("%s: rank %d parked %llu bytes without ever being paused", ctx, r,
                     (unsigned long long)stats[r].peak_parked_bytes);
    }
    EXPECT_EQ(count, (uint64_t)p * IN_PLACE_RECORDS);
    EXPECT_EQ(sum, want_sum);
}

static void test_deep_in_place(void **state)
{
    (void)state;
    named_config nc = deep(NULL);
    nc.cfg.buffer_cap_bytes = 1 << 20;
    static const int ps[] = {1, 2, 3, 4, 5, 7, 8};
    for (int runs = 0; runs < 2; runs++)
        for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
            for (uint64_t seed = 1; seed <= 3; seed++)
                in_place_round(&nc, ps[i], seed, runs);
}

/* Deepest first (docs/flow_control.md, deep-held rule 1): a buffer of records of a
 * reentrant handler is walked one record at a time, and what each record sends this
 * rank itself is handled before the next record of the buffer, as deeper work. Rank 0
 * sends rank 1 ORDER_PARENTS records of a reentrant handler in one buffer; each sends
 * rank 1 a child, and rank 1 logs the order it handles them in. A walk that did not
 * stop after a reentrant handler's record would log every parent first. */
#define ORDER_PARENTS 6
static int order_log[4 * ORDER_PARENTS], order_n;
static int order_child;

/* A child fills a buffer of its own (ORDER_CHILD_BYTES > the buffer size), so it is
 * flushed to this rank's own queue as soon as it is sent. */
#define ORDER_CHILD_BYTES 300

static void on_order_child(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    (void)comm, (void)src, (void)len, (void)user;
    uint32_t v;
    memcpy(&v, p, sizeof v);
    if (order_n < 4 * ORDER_PARENTS)
        order_log[order_n++] = -1 - (int)v; /* a child: negative */
}

static void on_order_parent(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    (void)src, (void)len, (void)user;
    uint32_t v;
    memcpy(&v, p, sizeof v);
    if (order_n < 4 * ORDER_PARENTS)
        order_log[order_n++] = (int)v;
    char child[ORDER_CHILD_BYTES] = {0};
    memcpy(child, &v, sizeof v);
    cr_async(comm, cr_comm_rank(comm), order_child, child, sizeof child);
}

static void run_order(cr_comm *comm, void *user)
{
    (void)user;
    int parent = cr_register_type(comm, &(cr_handler_type){.fn = on_order_parent,
                                                           .reentrant = true}, NULL);
    order_child = cr_register(comm, on_order_child, NULL);
    cr_barrier(comm);
    if (cr_comm_rank(comm) == 0)
        for (uint32_t v = 0; v < ORDER_PARENTS; v++)
            cr_async(comm, 1, parent, &v, sizeof v);
    cr_barrier(comm);
}

/* One run of an order test at 2 ranks under deep-held, its log in order_log. */
static void order_sim(void (*run)(cr_comm *, void *), const char *what, uint64_t seed)
{
    named_config nc = deep(NULL);
    nc.cfg.buffer_bytes = 256; /* the parents travel in one buffer */
    nc.cfg.buffer_cap_bytes = 1 << 20; /* and the rank is never paused */
    order_n = 0;
    char err[256];
    cr_sim_opts o = {.ranks = 2, .seed = seed, .cfg = &nc.cfg};
    snprintf(ctx, sizeof ctx, "%s, seed %llu", what, (unsigned long long)seed);
    if (cr_sim_run(&o, run, NULL, NULL, err, sizeof err))
        fail_msg("%s: %s", ctx, err);
}

static void test_deep_order(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        order_sim(run_order, "deep-held handling order", seed);
        EXPECT_EQ((uint64_t)order_n, 2 * ORDER_PARENTS);
        for (int k = 0; k < ORDER_PARENTS; k++)
            if (order_log[2 * k] != k || order_log[2 * k + 1] != -1 - k)
                fail_msg("%s: entry %d is %d, %d (parents k >= 0, children -1 - k): each "
                         "parent's child must be handled before the next parent", ctx, 2 * k,
                         order_log[2 * k], order_log[2 * k + 1]);
    }
}

/* Deepest first across the runs of one buffer: rank 0 sends rank 1 ORDER_PARENTS
 * records of two plain (not reentrant) handlers in turn, so the buffer holds one run
 * per record, all of generation 0; each even record's handler sends rank 1 a child
 * (generation 1) that fills a buffer of its own. The walk over the buffer must stop
 * before the next run while that deeper child waits, so each child is handled before
 * the parent after its own; a walk that went on regardless of its own buffers logs
 * the parents first. */
static int order_runs_child;

static void on_order_run(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    (void)src, (void)len, (void)user;
    uint32_t v;
    memcpy(&v, p, sizeof v);
    if (order_n < 4 * ORDER_PARENTS)
        order_log[order_n++] = (int)v;
    if (v % 2)
        return;
    char child[ORDER_CHILD_BYTES] = {0};
    memcpy(child, &v, sizeof v);
    cr_async(comm, cr_comm_rank(comm), order_runs_child, child, sizeof child);
}

static void run_order_runs(cr_comm *comm, void *user)
{
    (void)user;
    int h[2] = {cr_register(comm, on_order_run, NULL), cr_register(comm, on_order_run, NULL)};
    order_runs_child = cr_register(comm, on_order_child, NULL);
    cr_barrier(comm);
    if (cr_comm_rank(comm) == 0)
        for (uint32_t v = 0; v < ORDER_PARENTS; v++)
            cr_async(comm, 1, h[v % 2], &v, sizeof v);
    cr_barrier(comm);
}

static void test_deep_order_runs(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        order_sim(run_order_runs, "deep-held order across runs", seed);
        int want[4 * ORDER_PARENTS], n = 0;
        for (int v = 0; v < ORDER_PARENTS; v++) {
            want[n++] = v;
            if (v % 2 == 0)
                want[n++] = -1 - v;
        }
        EXPECT_EQ((uint64_t)order_n, (uint64_t)n);
        for (int k = 0; k < n; k++)
            if (order_log[k] != want[k])
                fail_msg("%s: entry %d is %d, expected %d (parents v >= 0, children -1 - v): "
                         "an even parent's child must be handled before the next parent", ctx,
                         k, order_log[k], want[k]);
    }
}

/* The pause counts the sends in flight: with many slots and small buffers, a pause
 * on the send buffers alone would let a rank put its whole window on its way, far
 * above the bound (the run of test_deep_fanout with 32 slots). */
static void test_deep_counts_inflight(void **state)
{
    (void)state;
    named_config nc = deep(NULL);
    nc.cfg.max_inflight = 32;
    nc.cfg.park_cap_bytes = 1024;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        deep_result r = run_deep_fan(4, 8, &nc, seed, 10, 0.002);
        if (r.rc)
            fail_msg("%s: %s", ctx, r.err);
    }
}

static void test_p1(void **state) { (void)state; sweep(1, 20); }
static void test_p2(void **state) { (void)state; sweep(2, 20); }
static void test_p3(void **state) { (void)state; sweep(3, 20); }
static void test_p5(void **state) { (void)state; sweep(5, 20); }
static void test_p8(void **state) { (void)state; sweep(8, 20); }

/* P = 64 and 1024: the lighter configurations (tiny buffers would make every record
 * its own block, a million scheduling steps per run at P = 1024). */
static void sweep_large(int p, int seeds, const char *const *names, size_t nnames)
{
    seeds = seeds_wanted() < seeds ? seeds_wanted() : seeds;
    for (size_t c = 0; c < nnames && p <= largest_p(); c++) {
        named_config nc = config(names[c]);
        for (size_t s = 0; s < NSCENARIOS; s++)
            for (int seed = 1; seed <= seeds; seed++)
                run_one(&scenarios[s], p, &nc, (uint64_t)seed * 104729 + (uint64_t)p);
    }
}

static void test_p64(void **state)
{
    (void)state;
    static const char *const names[] = {"default", "inflight1", "nlnr", "grid", "hypercube"};
    sweep_large(64, 20, names, 5);
}

/* P = 1024: every scenario under the default configuration, and the two that
 * stress forwarding and barriers under the hypercube route, 20 seeds each. */
static void test_p1024(void **state)
{
    (void)state;
    int seeds = seeds_wanted();
    static const char *const names[] = {"default"};
    sweep_large(1024, seeds, names, 1);
    named_config nc = config("hypercube");
    for (int seed = 1; seed <= seeds && 1024 <= largest_p(); seed++) {
        run_one(&scenarios[0], 1024, &nc, (uint64_t)seed * 104729 + 1024);
        run_one(&scenarios[4], 1024, &nc, (uint64_t)seed * 104729 + 1024);
    }
}

/* The same seed replays the same run: identical counters on every rank. */
static void test_replay(void **state)
{
    (void)state;
    named_config nc = config("inflight1");
    cr_stats *a = calloc(16, sizeof *a), *b = calloc(16, sizeof *b);
    uint64_t steps[2];
    for (int k = 0; k < 2; k++) {
        world_reset(16, 3);
        cr_sim_opts o = {.ranks = 16, .seed = 42, .cfg = &nc.cfg};
        assert_int_equal(cr_sim_run(&o, run_a2a, NULL, k ? b : a, NULL, 0), 0);
        steps[k] = cr_sim_last_steps();
    }
    assert_int_equal(steps[0], steps[1]);
    assert_memory_equal(a, b, 16 * sizeof *a);
    /* and another seed interleaves differently */
    world_reset(16, 3);
    cr_sim_opts o = {.ranks = 16, .seed = 43, .cfg = &nc.cfg};
    assert_int_equal(cr_sim_run(&o, run_a2a, NULL, b, NULL, 0), 0);
    assert_true(cr_sim_last_steps() != steps[0] || memcmp(a, b, 16 * sizeof *a) != 0);
    free(a);
    free(b);
}

/* A program that waits for a message nobody sends: reported, not hung. */
static void run_deadlock(cr_comm *comm, void *user)
{
    (void)user;
    /* Rank 0 waits in an allreduce nobody else joins, the others in a barrier it never
     * joins: each waits for the other for ever. (A rank that merely skips a barrier
     * is told by cr_comm_destroy's own collective, which is no deadlock.) */
    if (cr_comm_rank(comm) == 0) {
        int x = 1, y;
        cr_allreduce(comm, &x, &y, 1, CR_INT32, CR_OP_SUM, NULL);
    } else {
        cr_barrier(comm);
    }
}

static void test_deadlock_is_reported(void **state)
{
    (void)state;
    world_reset(4, 0);
    cr_sim_opts o = {.ranks = 4, .seed = 1};
    char err[256] = "";
    assert_int_equal(cr_sim_run(&o, run_deadlock, NULL, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "simulation stuck"));
}

/* 4096 virtual ranks, all to some (16 random destinations each, 3 messages per
 * destination) under the hypercube route: exact delivery and per-rank counts. */
static void test_4096_hypercube(void **state)
{
    (void)state;
    named_config nc = config("hypercube");
    nc.cfg.node_size = 16;
    nc.cfg.buffer_bytes = 4096;
    run_one(&scenarios[0], 4096, &nc, 4096);
    print_message("4096 ranks: %llu scheduling steps\n", (unsigned long long)cr_sim_last_steps());
}

/* Above COURIER_DENSE_RANKS a rank keeps send state only for the destinations it
 * used: under direct routing exactly its distinct destinations (itself included when
 * it sends to itself), under the hypercube at most its log2 P neighbours and itself;
 * at or below, one entry per rank. Fails if state is made for a pair that never
 * talks (P = 256 and, under direct routing, 255; all to some: 16 destinations each). */
static void check_send_states(const char *route, unsigned dense_ranks, int p)
{
    named_config nc = config(route);
    nc.cfg.dense_ranks = dense_ranks;
    world_reset(p, scenarios[0].param);
    cr_stats *stats = calloc((size_t)p, sizeof *stats);
    cr_sim_opts o = {.ranks = p, .seed = 3, .cfg = &nc.cfg};
    char err[256];
    snprintf(ctx, sizeof ctx, "send states, %s, dense up to %u, P=%d", route, dense_ranks, p);
    if (cr_sim_run(&o, scenarios[0].run, NULL, stats, err, sizeof err))
        fail_msg("%s: %s", ctx, err);
    scenarios[0].check(p);
    bool direct = !strcmp(route, "default");
    int log2p = 0;
    while ((1 << log2p) < p)
        log2p++;
    for (int r = 0; r < p; r++) {
        uint64_t want = (uint64_t)p;
        if (p > (int)dense_ranks && direct) {
            uint8_t *used = calloc((size_t)p, 1);
            want = 0;
            for (int i = 0; i < a2a_fanout(p); i++) {
                int d = a2a_dest(r, i, p);
                want += !used[d];
                used[d] = 1;
            }
            free(used);
        }
        if (p > (int)dense_ranks && !direct) {
            if (stats[r].send_states > (uint64_t)log2p + 1)
                fail_msg("%s: rank %d keeps state for %llu destinations, more than its %d "
                         "neighbours and itself", ctx, r,
                         (unsigned long long)stats[r].send_states, log2p);
            continue;
        }
        if (stats[r].send_states != want)
            fail_msg("%s: rank %d keeps state for %llu destinations, expected %llu", ctx, r,
                     (unsigned long long)stats[r].send_states, (unsigned long long)want);
    }
    free(stats);
}

static void test_send_state_follows_partners(void **state)
{
    (void)state;
    check_send_states("default", 0, 256);
    check_send_states("default", 0, 255);
    check_send_states("hypercube", 0, 256);
    check_send_states("default", 1024, 256);
    check_send_states("default", 64, 256);
}

/* The records a multicast from `at` to dests[0, n) (this rank excluded) sends, by the
 * rule of cr_async_mcast: one record per next hop, routed there, split again where it
 * arrives. Returns the transmissions (a record's hops); *forwards counts the records
 * passed on by a rank other than the sender (cr_stats.forwarded). */
static uint64_t mcast_model(const cr_router *rt, int at, int origin, const int *dests, size_t n,
                            uint64_t *forwards)
{
    uint64_t sends = 0;
    bool *done = calloc(n, sizeof *done);
    int *group = malloc(n * sizeof *group);
    for (size_t i = 0; i < n; i++) {
        if (done[i] || dests[i] == at)
            continue;
        int hop = cr_router_next_hop(rt, at, dests[i]);
        size_t m = 0;
        for (size_t j = i; j < n; j++)
            if (!done[j] && dests[j] != at && cr_router_next_hop(rt, at, dests[j]) == hop)
                group[m++] = dests[j], done[j] = true;
        for (int x = at; x != hop; x = cr_router_next_hop(rt, x, hop)) {
            *forwards += x != origin; /* the way to the hop: sent on by x */
            sends++;
        }
        sends += mcast_model(rt, hop, origin, group, m, forwards);
    }
    free(group);
    free(done);
    return sends;
}

typedef struct mcast_all {
    int h;
    uint64_t got[64];
} mcast_all;

static void on_mcast_all(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)payload, (void)len, (void)src;
    ((mcast_all *)user)->got[cr_comm_rank(comm)]++;
}

static void run_mcast_from_zero(cr_comm *comm, void *user)
{
    mcast_all *a = user;
    a->h = cr_register(comm, on_mcast_all, a);
    int p = cr_comm_size(comm), *all = malloc((size_t)p * sizeof *all);
    for (int d = 0; d < p; d++)
        all[d] = p - 1 - d;
    if (cr_comm_rank(comm) == 0)
        cr_async_mcast(comm, all, (size_t)p, a->h, all, sizeof(int));
    free(all);
    cr_barrier(comm);
}

/* A multicast from rank 0 to all 64 ranks shares the routes' hops: the records
 * forwarded are exactly those of one record per next hop (the model above), whose
 * transmissions are fewer than one record per destination would take (under the
 * hypercube and NLNR, also the records forwarded), and every rank gets one copy. */
static void test_mcast_shares_hops(void **state)
{
    (void)state;
    const char *routes[] = {"hypercube", "nlnr", "grid"};
    for (size_t k = 0; k < 3; k++) {
        named_config nc = config(routes[k]);
        int p = 64;
        mcast_all a = {0};
        cr_stats stats[64];
        cr_sim_opts o = {.ranks = p, .seed = 5, .cfg = &nc.cfg};
        char err[256];
        snprintf(ctx, sizeof ctx, "multicast from rank 0, P=64, %s", routes[k]);
        if (cr_sim_run(&o, run_mcast_from_zero, &a, stats, err, sizeof err))
            fail_msg("%s: %s", ctx, err);
        uint64_t forwarded = 0, per_dest = 0;
        for (int r = 0; r < p; r++) {
            EXPECT_EQ(a.got[r], 1);
            forwarded += stats[r].forwarded;
        }
        cr_layout *l = cr_layout_create_blocks(p, nc.cfg.node_size);
        cr_router *rt = cr_router_create(&nc.cfg.route, l, err, sizeof err);
        assert_non_null(rt);
        int dests[64];
        for (int d = 0; d < p; d++)
            dests[d] = d;
        uint64_t model = 0, per_dest_forwards = 0;
        uint64_t sends = mcast_model(rt, 0, 0, dests, (size_t)p, &model);
        for (int d = 1; d < p; d++) /* one record per destination */
            for (int x = 0; x != d; x = cr_router_next_hop(rt, x, d))
                per_dest++, per_dest_forwards += x != 0;
        EXPECT_EQ(forwarded, model);
        if (getenv("SIM_TIMES"))
            print_message("%s: %llu transmissions, %llu forwarded; one record per destination: "
                          "%llu and %llu\n",
                          ctx, (unsigned long long)sends, (unsigned long long)model,
                          (unsigned long long)per_dest, (unsigned long long)per_dest_forwards);
        if (!(sends < per_dest) || (k < 2 && !(model < per_dest_forwards)))
            fail_msg("%s: %llu transmissions and %llu forwards, against %llu and %llu one per "
                     "destination",
                     ctx, (unsigned long long)sends, (unsigned long long)model,
                     (unsigned long long)per_dest, (unsigned long long)per_dest_forwards);
        cr_router_destroy(rt);
        cr_layout_destroy(l);
    }
}

/* What a comm created with route and buffer `auto` chose (rank 0's view). */
static cr_config auto_seen;

static void record_auto(cr_comm *comm, void *user)
{
    (void)user;
    if (cr_comm_rank(comm) == 0)
        auto_seen = *cr_comm_config(comm);
    cr_barrier(comm);
}

/* COURIER_ROUTE=auto and COURIER_BUFFER_SIZE=auto: a comm runs the choice the cost
 * model makes for its layout and the traffic it assumes (courier/tune.h: 4096 records
 * of 16 bytes per rank, spread evenly), at 8, 64 and 1024 virtual ranks in nodes of 2. */
static void test_auto_applies_the_model(void **state)
{
    (void)state;
    const int sizes[] = {8, 64, 1024};
    for (int i = 0; i < 3; i++) {
        int p = sizes[i];
        named_config nc = config("auto");
        cr_sim_opts o = {.ranks = p, .seed = 3, .cfg = &nc.cfg};
        char err[256];
        snprintf(ctx, sizeof ctx, "auto at P=%d", p);
        if (cr_sim_run(&o, record_auto, NULL, NULL, err, sizeof err))
            fail_msg("%s: %s", ctx, err);
        cr_layout *l = cr_layout_create_blocks(p, 2);
        cr_tune_costs c;
        cr_tune_costs_default(&c);
        cr_tune_traffic t = {.records_per_dest = 4096.0 / (p - 1), .record_bytes = 16};
        cr_tune_prediction table[5 * CR_TUNE_NBUFFERS];
        int n = 0, best = cr_tune_choose(l, NULL, 0, nc.cfg.buffer_cap_bytes, &t, &c, table, &n);
        assert_true(best >= 0);
        EXPECT_EQ(auto_seen.route.kind, table[best].route.kind);
        EXPECT_EQ(auto_seen.buffer_bytes, table[best].buffer_bytes);
        if (p == 1024 && auto_seen.route.kind == CR_ROUTE_DIRECT)
            fail_msg("%s: direct chosen, but 4 records per destination at 1024 ranks are "
                     "latency-bound", ctx);
        cr_layout_destroy(l);
    }
}

/* A simulated machine's costs (cr_sim_opts: per message, byte and record handled)
 * are what auto chooses with: the comm runs cr_tune_choose's answer for those costs,
 * which here is not the answer for the defaults, at 64 and 1024 virtual ranks. */
static void test_auto_takes_the_machine_costs(void **state)
{
    (void)state;
    const int sizes[] = {64, 1024};
    for (int i = 0; i < 2; i++) {
        int p = sizes[i];
        named_config nc = config("auto");
        /* messages dear and bytes free: the fewest partners win */
        cr_sim_opts o = {.ranks = p, .seed = 5, .cfg = &nc.cfg, .message_cost = 1e-3,
                         .byte_cost = 1e-12, .record_cost = 1e-9};
        char err[256];
        snprintf(ctx, sizeof ctx, "auto on a simulated machine at P=%d", p);
        if (cr_sim_run(&o, record_auto, NULL, NULL, err, sizeof err))
            fail_msg("%s: %s", ctx, err);
        cr_layout *l = cr_layout_create_blocks(p, 2);
        cr_tune_costs machine = {.alpha_on = 1e-3, .alpha_off = 1e-3, .beta_on = 1e-12,
                                 .beta_off = 1e-12, .handle = 1e-9}, defaults;
        cr_tune_costs_default(&defaults);
        cr_tune_traffic t = {.records_per_dest = 4096.0 / (p - 1), .record_bytes = 16};
        cr_tune_prediction table[5 * CR_TUNE_NBUFFERS], other[5 * CR_TUNE_NBUFFERS];
        int n = 0, best = cr_tune_choose(l, NULL, 0, nc.cfg.buffer_cap_bytes, &t, &machine,
                                         table, &n);
        int m = 0, usual = cr_tune_choose(l, NULL, 0, nc.cfg.buffer_cap_bytes, &t, &defaults,
                                          other, &m);
        assert_true(best >= 0 && usual >= 0);
        EXPECT_EQ(auto_seen.route.kind, table[best].route.kind);
        EXPECT_EQ(auto_seen.buffer_bytes, table[best].buffer_bytes);
        if (table[best].route.kind == other[usual].route.kind &&
            table[best].buffer_bytes == other[usual].buffer_bytes)
            fail_msg("%s: the machine's costs and the defaults choose alike: the test "
                     "cannot tell them apart", ctx);
        cr_layout_destroy(l);
    }
    cr_sim_opts bad = {.ranks = 4, .seed = 1, .byte_cost = -1};
    char err[256];
    assert_int_equal(cr_sim_run(&bad, record_auto, NULL, NULL, err, sizeof err), -1);
    if (!strstr(err, "byte cost"))
        fail_msg("a negative byte cost: '%s'", err);
}

/* COURIER_ROUTE=auto's second choice. After each barrier every rank takes the same
 * configuration: the best that cr_tune_choose_over names for the last CR_TUNE_WINDOW
 * epochs' traffic, when cr_tune_worth_switching says it saves enough (a move of route
 * charged its extra reduction, 2 alpha log2 P). A light epoch after heavy ones moves
 * nothing; every record is delivered exactly across the moves. */
#define AUTO_EPOCHS 5
static const double auto_epoch_records[AUTO_EPOCHS] = {1, 1, 300, 300, 1};
static cr_config *auto_after; /* [rank * AUTO_EPOCHS + epoch]: the config after it */

static void run_auto_epochs(cr_comm *comm, void *user)
{
    (void)user;
    int me = cr_comm_rank(comm), p = cr_comm_size(comm);
    seen *s = &W.ranks[me];
    s->h = cr_register(comm, on_a2a, NULL);
    cr_barrier(comm); /* an empty epoch: nothing to learn from, nothing moves */
    uint64_t seq = 0;
    for (int e = 0; e < AUTO_EPOCHS; e++) {
        for (int k = 0; k < (int)auto_epoch_records[e]; k++)
            for (int i = 1; i < p; i++) {
                int d = (me + i) % p;
                a2a_msg m = {(uint64_t)me, (uint64_t)d, seq++, 0};
                m.check = check_of(m.src, m.dst, m.seq);
                W.sent_count++;
                W.sent_sum += m.check;
                cr_async(comm, d, s->h, &m, sizeof m);
            }
        cr_barrier(comm);
        auto_after[me * AUTO_EPOCHS + e] = *cr_comm_config(comm);
    }
}

/* The second choice knows merging (docs/tuning.md, "Records that merge"): two
 * epochs of records that do not merge, 256 to every other rank (the 8 x 8 grid is
 * predicted cheapest), then three epochs of 64 records to a combining handler whose
 * keys repeat (16 to a destination). The wave's merge count tells the model how
 * many keys explain the merges, and with merging the hypercube is cheapest: the comm
 * must move there after the second of them (the first starts a window of its own:
 * the epochs before it were of another kind). The same traffic to a handler that does not
 * combine must leave it where it was, and every value must arrive once. */
#define MERGE_EPOCHS 5
#define MERGE_PER_DEST 64
#define MERGE_KEYS 16
typedef struct merge_rec {
    uint64_t key, value;
} merge_rec;
static cr_config merge_after[1024][MERGE_EPOCHS];
static uint64_t merge_got[1024];

static void merge_add(void *dst, const void *src, size_t len, void *user)
{
    (void)len, (void)user;
    merge_rec a, b;
    memcpy(&a, dst, sizeof a);
    memcpy(&b, src, sizeof b);
    a.value += b.value;
    memcpy(dst, &a, sizeof a);
}

static void on_merge_rec(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)src, (void)len, (void)user;
    merge_rec r;
    memcpy(&r, payload, sizeof r);
    merge_got[cr_comm_rank(comm)] += r.value;
}

static void run_merge_epochs(cr_comm *comm, void *user)
{
    bool combining = *(const bool *)user;
    int me = cr_comm_rank(comm), p = cr_comm_size(comm);
    int plain = cr_register(comm, on_merge_rec, NULL);
    int merging = cr_register_type(comm, &(cr_handler_type){
        .fn = on_merge_rec, .key_len = 8, .combine = merge_add, .name = "merge test"}, NULL);
    for (int e = 0; e < MERGE_EPOCHS; e++) {
        int h = e >= 2 && combining ? merging : plain;
        int per_dest = e < 2 ? 4 * MERGE_PER_DEST : MERGE_PER_DEST;
        for (int i = 1; i < p; i++) /* a destination's records together: they meet */
            for (int k = 0; k < per_dest; k++) {
                merge_rec r = {.key = (uint64_t)(k % MERGE_KEYS), .value = 1};
                cr_async(comm, (me + i) % p, h, &r, sizeof r);
            }
        cr_barrier(comm);
        merge_after[me][e] = *cr_comm_config(comm);
    }
}

static bool same_config_route(const cr_config *a, const cr_config *b)
{
    return a->route.kind == b->route.kind && a->route.ndims == b->route.ndims &&
           !memcmp(a->route.dims, b->route.dims, sizeof a->route.dims) &&
           a->buffer_bytes == b->buffer_bytes;
}

/* One job of run_merge_epochs at p virtual ranks: every value arrives once, and after
 * every epoch every rank runs what rank 0 runs (its route kind; with `whole`, the
 * route's dimensions and the buffer too). */
static void run_merge_job(const named_config *nc, int p, uint64_t seed, bool combining,
                          bool whole, const char *what)
{
    memset(merge_got, 0, sizeof merge_got);
    cr_sim_opts o = {.ranks = p, .seed = seed, .cfg = &nc->cfg, .message_cost = 2e-6,
                     .byte_cost = 0.1e-9, .record_cost = 10e-9};
    char err[256];
    if (cr_sim_run(&o, run_merge_epochs, &combining, NULL, err, sizeof err))
        fail_msg("%s: %s", what, err);
    uint64_t total = 0;
    for (int r = 0; r < p; r++) {
        total += merge_got[r];
        for (int e = 0; e < MERGE_EPOCHS; e++) {
            const cr_config *mine = &merge_after[r][e], *first = &merge_after[0][e];
            if (whole ? !same_config_route(mine, first) : mine->route.kind != first->route.kind)
                fail_msg("%s: ranks 0 and %d run different routes after epoch %d", what, r, e);
        }
    }
    EXPECT_EQ(total, (uint64_t)(MERGE_EPOCHS + 6) * MERGE_PER_DEST * (uint64_t)p * (p - 1));
}

static void test_auto_learns_merging(void **state)
{
    (void)state;
    const int p = 64;
    named_config nc = config("auto");
    cr_route_kind last[2];
    for (int variant = 0; variant < 2; variant++) {
        bool combining = variant == 1;
        snprintf(ctx, sizeof ctx, "auto with%s merging, P=%d", combining ? "" : "out", p);
        run_merge_job(&nc, p, 11, combining, false, ctx);
        if (merge_after[0][1].route.kind != CR_ROUTE_GRID)
            fail_msg("%s: the records that do not merge leave route %d, not the grid", ctx,
                     (int)merge_after[0][1].route.kind);
        last[variant] = merge_after[0][MERGE_EPOCHS - 1].route.kind;
    }
    EXPECT_EQ(last[0], CR_ROUTE_GRID);
    EXPECT_EQ(last[1], CR_ROUTE_HYPERCUBE);
    /* and soon: the first epoch that merges starts a window of its own, not outweighed
     * by the two before it; the second pays for the move (2 log2 P message times) */
    EXPECT_EQ(merge_after[0][3].route.kind, CR_ROUTE_HYPERCUBE);
    /* Whatever the model chooses at odd and uneven sizes, every value arrives once
     * and every rank runs the same route after every epoch. */
    static const int others[] = {3, 5, 12};
    for (int i = 0; i < 3; i++) {
        int q = others[i];
        snprintf(ctx, sizeof ctx, "auto with merging, P=%d", q);
        run_merge_job(&nc, q, 5 + (uint64_t)q, true, true, ctx);
    }
}

static void test_auto_moves_between_epochs(void **state)
{
    (void)state;
    const int p = 64;
    named_config nc = config("auto");
    cr_route route[AUTO_EPOCHS];
    size_t buffer[AUTO_EPOCHS];
    cr_layout *l = cr_layout_create_blocks(p, nc.cfg.node_size);
    cr_tune_costs costs;
    cr_tune_costs_default(&costs);
    int moves = tune_expect_epochs(l, nc.cfg.buffer_bytes, nc.cfg.buffer_cap_bytes, &costs,
                                   auto_epoch_records, sizeof(a2a_msg), AUTO_EPOCHS, route,
                                   buffer);
    cr_layout_destroy(l);
    /* the sequence must move at least once, or this test checks nothing */
    assert_true(moves >= 1);
    /* one light epoch after heavy ones is judged with them (CR_TUNE_WINDOW): no move
     * back, though on its own it would pay for one */
    int last = AUTO_EPOCHS - 1;
    if (route[last].kind != route[last - 1].kind || buffer[last] != buffer[last - 1])
        fail_msg("a light epoch after heavy ones moved the comm");
    for (uint64_t seed = 1; seed <= 3; seed++) {
        world_reset(p, 0);
        auto_after = calloc((size_t)p * AUTO_EPOCHS, sizeof *auto_after);
        cr_stats *stats = calloc((size_t)p, sizeof *stats);
        cr_sim_opts o = {.ranks = p, .seed = seed, .cfg = &nc.cfg};
        char err[256];
        snprintf(ctx, sizeof ctx, "auto between epochs, P=%d, seed %llu", p,
                 (unsigned long long)seed);
        if (cr_sim_run(&o, run_auto_epochs, NULL, stats, err, sizeof err))
            fail_msg("%s: %s", ctx, err);
        uint64_t count, sum;
        seen_totals(p, &count, &sum);
        EXPECT_EQ(count, W.sent_count);
        EXPECT_EQ(sum, W.sent_sum);
        for (int r = 0; r < p; r++) {
            EXPECT_EQ(stats[r].tune_switches, moves);
            for (int e = 0; e < AUTO_EPOCHS; e++) {
                const cr_config *got = &auto_after[r * AUTO_EPOCHS + e];
                if (got->route.kind != route[e].kind || got->buffer_bytes != buffer[e])
                    fail_msg("%s: rank %d after epoch %d runs route %d with %zu-byte buffers, "
                             "expected route %d with %zu", ctx, r, e, (int)got->route.kind,
                             got->buffer_bytes, (int)route[e].kind, buffer[e]);
            }
        }
        free(stats);
        free(auto_after);
    }
}

/* Records of a summing handler from many sources meet at the ranks that forward
 * them and merge there: on 64 virtual ranks under the hypercube route (nodes of 2,
 * 512-byte buffers), over 8 seeds, some records merge at hops, and the owners' sums
 * stay exact. Deterministic: the seeds fix every interleaving. */
static void test_merging_at_hops(void **state)
{
    (void)state;
    named_config nc = config("hypercube");
    const scenario *sc = NULL;
    for (size_t i = 0; i < NSCENARIOS; i++)
        if (!strcmp(scenarios[i].name, "combining"))
            sc = &scenarios[i];
    assert_non_null(sc);
    uint64_t at_hops = 0, at_source = 0, forwarded = 0;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        int p = 64;
        world_reset(p, 40);
        cr_stats *stats = calloc((size_t)p, sizeof *stats);
        cr_sim_opts o = {.ranks = p, .seed = seed, .cfg = &nc.cfg};
        char err[256];
        snprintf(ctx, sizeof ctx, "merging at hops, P=%d, seed %llu", p, (unsigned long long)seed);
        if (cr_sim_run(&o, sc->run, NULL, stats, err, sizeof err))
            fail_msg("%s: %s", ctx, err);
        check_combining(p);
        for (int r = 0; r < p; r++) {
            at_hops += stats[r].merged_at_hops;
            at_source += stats[r].merged_at_source;
            forwarded += stats[r].forwarded;
        }
        free(stats);
    }
    print_message("merging at hops: %llu records merged at their source, %llu at hops, %llu "
                  "forwarded\n", (unsigned long long)at_source, (unsigned long long)at_hops,
                  (unsigned long long)forwarded);
    assert_true(at_hops > 0);
}

/* ---------------------------------------------------------------- requests */

/* Requests with replies (tests/requests_scenarios.h, the same scenarios the MPI test
 * runs) on virtual ranks: every request gets exactly one right reply, under every
 * route, at P up to 1024, many seeds; the counters balance over all ranks. */
typedef struct req_params {
    int nidx, walks, shapes;
    cr_dedup_stats *counters; /* per virtual rank, at the end */
} req_params;

static void run_requests(cr_comm *comm, void *user)
{
    const req_params *rp = user;
    if (cr_comm_size(comm) <= 64) /* first: it zeroes the counters */
        req_waiting_bound(comm, 3000);
    req_overload(comm, rp->nidx, 2, 1);
    req_overload(comm, rp->nidx, 2, 0);
    req_chains(comm, rp->walks, 6);
    req_coalesce_rule(comm, 8, 1);
    req_coalesce_rule(comm, 8, 0);
    req_coalesce_many(comm, 256, 3);
    if (cr_comm_size(comm) <= 64) /* a rank's own rule: more ranks add only time */
        req_rest(comm, 1100, 100);
    req_direct(comm, 40, false, 0, false);
    req_direct(comm, 40, true, 0, false);
    req_direct(comm, 40, true, 100, false);
    req_direct(comm, 40, false, 0, true);
    req_direct(comm, 40, true, 100, true);
    req_route_move(comm, 40);
    req_many(comm, 300, false);
    req_many(comm, 300, true);
    req_phases(comm, 2, 16);
    if (rp->shapes)
        req_shapes(comm, cr_comm_config(comm)->buffer_bytes, rp->shapes);
    cr_dedup_stats_get(comm, &rp->counters[cr_comm_rank(comm)]);
}

static named_config request_config(const char *route)
{
    named_config nc = config("default");
    nc.name = route;
    cr_route_parse(route, &nc.cfg.route, NULL, 0);
    nc.cfg.node_size = 2;
    nc.cfg.buffer_bytes = 256;
    nc.cfg.flush_interval = 0; /* the coalescing rule's test needs it */
    return nc;
}

static void run_requests_at(int p, const char *route, uint64_t seed, req_params rp)
{
    named_config nc = request_config(route);
    rp.counters = calloc((size_t)p, sizeof *rp.counters);
    assert_non_null(rp.counters);
    cr_sim_opts o = {.ranks = p, .seed = seed, .cfg = &nc.cfg, .max_slowness = sim_slowness,
                     .stall_chance = sim_stall};
    char err[256];
    snprintf(ctx, sizeof ctx, "requests, P=%d, %s, seed %llu", p, route,
             (unsigned long long)seed);
    req_fails = 0;
    if (cr_sim_run(&o, run_requests, &rp, NULL, err, sizeof err))
        fail_msg("%s: %s", ctx, err);
    cr_dedup_stats sum = {0};
    for (int r = 0; r < p; r++) {
        const cr_dedup_stats *c = &rp.counters[r];
        sum.requests += c->requests;
        sum.requests_served += c->requests_served;
        sum.requests_merged_at_source += c->requests_merged_at_source;
        sum.requests_merged_at_hops += c->requests_merged_at_hops;
        sum.requests_coalesced += c->requests_coalesced;
        sum.replies_fanned_out += c->replies_fanned_out;
    }
    req_check_totals(NULL, &sum);
    free(rp.counters);
    if (req_fails)
        fail_msg("%s: %ld checks failed (see above)", ctx, req_fails);
}

static void test_requests(void **state)
{
    (void)state;
    static const char *const routes[] = {"direct", "nr", "nlnr", "grid", "hypercube"};
    int seeds = seeds_wanted();
    static const int small[] = {1, 2, 3, 5, 8};
    for (size_t rt = 0; rt < 5; rt++) {
        for (size_t k = 0; k < 5; k++)
            for (int seed = 1; seed <= seeds; seed++)
                run_requests_at(small[k], routes[rt], (uint64_t)seed * 31 + (uint64_t)small[k],
                                (req_params){.nidx = 60, .walks = 8, .shapes = 3});
        for (int seed = 1; seed <= (seeds + 3) / 4 && 64 <= largest_p(); seed++)
            run_requests_at(64, routes[rt], (uint64_t)seed * 131 + 64,
                            (req_params){.nidx = 40, .walks = 4, .shapes = 1});
    }
    /* P = 1024: one seed (SIM_SEEDS of 20 or more: two) */
    for (int seed = 1; seed <= (seeds >= 20 ? 2 : 1) && 1024 <= largest_p(); seed++) {
        run_requests_at(1024, "hypercube", (uint64_t)seed * 1031, (req_params){.nidx = 16, .walks = 2});
        run_requests_at(1024, "nlnr", (uint64_t)seed * 1031, (req_params){.nidx = 16, .walks = 2});
    }
}

/* ---------------------------------------------------------------- darray */

/* The distributed array's asynchronous mode on virtual ranks: every rank adds i + 1
 * to every element i twice and visits each once, then reads a permutation of the
 * elements; every value must be exact (tests/mpi/test_darray.c does the same under
 * MPI). */

static void darray_visit_add(cr_darray *a, uint64_t i, void *elem, const void *args, size_t len,
                             void *user)
{
    (void)a, (void)i, (void)user, (void)len;
    uint64_t v, add;
    memcpy(&v, elem, 8);
    memcpy(&add, args, 8);
    v += add;
    memcpy(elem, &v, 8);
}

static void darray_got(cr_comm *comm, const void *data, size_t len, void *ctx)
{
    (void)comm;
    if (len == 8)
        memcpy(ctx, data, 8);
}

static void run_darray_async(cr_comm *comm, void *user)
{
    (void)user;
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    cr_darray_opts o;
    cr_darray_opts_init(&o);
    o.merge = CR_OP_SUM;
    o.type = CR_UINT64;
    uint64_t n = p < 64 ? 3 * (uint64_t)p + 5 : 96; /* at large P, hot elements */
    cr_darray *a = cr_darray_create(comm, n, 8, &o);
    int visit = cr_darray_register_visit(a, darray_visit_add, NULL);
    for (int rep = 0; rep < 2; rep++)
        for (uint64_t i = 0; i < n; i++) {
            uint64_t v = i + 1;
            cr_darray_async_write(a, i, &v);
        }
    uint64_t thousand = 1000;
    for (uint64_t i = 0; i < n; i += 2)
        cr_darray_async_visit(a, i, visit, &thousand, 8);
    cr_barrier(comm);
    uint64_t *got = calloc(n, 8);
    for (uint64_t k = 0; k < n; k++)
        cr_darray_async_read(a, (k * 5 + (uint64_t)me) % n, darray_got, &got[k]);
    cr_barrier(comm);
    for (uint64_t k = 0; k < n; k++) {
        uint64_t i = (k * 5 + (uint64_t)me) % n;
        uint64_t expect = 2 * (i + 1) * (uint64_t)p + (i % 2 == 0 ? 1000 * (uint64_t)p : 0);
        if (got[k] != expect && darray_fails++ < 4)
            fprintf(stderr, "rank %d: element %llu is %llu, expected %llu\n", me,
                    (unsigned long long)i, (unsigned long long)got[k],
                    (unsigned long long)expect);
    }
    free(got);
    cr_darray_destroy(a);
}

static void test_darray_async(void **state)
{
    (void)state;
    static const char *const routes[] = {"direct", "nlnr", "hypercube"};
    static const int ps[] = {1, 3, 8, 64, 1024};
    int seeds = seeds_wanted() < 4 ? seeds_wanted() : 4;
    for (size_t rt = 0; rt < 3; rt++)
        for (size_t k = 0; k < 5 && ps[k] <= largest_p(); k++)
            for (int seed = 1; seed <= (ps[k] >= 1024 ? (thorough() || rt == 2) : seeds); seed++) {
                named_config nc = request_config(routes[rt]);
                cr_sim_opts o = {.ranks = ps[k], .seed = (uint64_t)seed * 17 + (uint64_t)ps[k],
                                 .cfg = &nc.cfg};
                char err[256];
                snprintf(ctx, sizeof ctx, "darray async, P=%d, %s, seed %d", ps[k], routes[rt],
                         seed);
                darray_fails = 0;
                if (cr_sim_run(&o, run_darray_async, NULL, NULL, err, sizeof err))
                    fail_msg("%s: %s", ctx, err);
                if (darray_fails)
                    fail_msg("%s: %ld wrong elements", ctx, darray_fails);
            }
}

/* In-place access on virtual nodes of 1, 4 and 48 ranks: every rank adds to three hot
 * elements and to every element, then reads them all; values exact, and each rank's
 * in-place count is exactly its writes whose owner shares its node (a write sent as a
 * record that the node's memory reaches, or the reverse, is caught). */
static long in_place_fails;

static void run_darray_in_place(cr_comm *comm, void *user)
{
    (void)user;
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    const cr_layout *l = cr_comm_layout(comm);
    cr_darray_opts o;
    cr_darray_opts_init(&o);
    o.merge = CR_OP_SUM;
    o.type = CR_UINT64;
    o.node = CR_DARRAY_NODE_IN_PLACE;
    uint64_t n = p < 64 ? 3 * (uint64_t)p + 5 : 2 * (uint64_t)p + 7, hot = 3, reps = 5;
    cr_darray *a = cr_darray_create(comm, n, 8, &o);
    uint64_t near = 0, one = 1;
    for (uint64_t r = 0; r < reps; r++)
        for (uint64_t i = 0; i < hot; i++) {
            cr_darray_async_write(a, i, &one);
            near += cr_layout_node_of(l, cr_darray_owner(n, p, i)) == cr_layout_node_of(l, me);
        }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = i + 1;
        cr_darray_async_write(a, i, &v);
        near += cr_layout_node_of(l, cr_darray_owner(n, p, i)) == cr_layout_node_of(l, me);
    }
    cr_darray_stats st;
    cr_darray_stats_get(a, &st);
    if (st.in_place != near && in_place_fails++ < 4)
        fprintf(stderr, "rank %d: %llu writes in place, expected %llu\n", me,
                (unsigned long long)st.in_place, (unsigned long long)near);
    cr_barrier(comm);
    uint64_t *got = calloc(n, 8);
    for (uint64_t k = 0; k < n; k++)
        cr_darray_async_read(a, (k * 5 + (uint64_t)me) % n, darray_got, &got[k]);
    cr_barrier(comm);
    for (uint64_t k = 0; k < n; k++) {
        uint64_t i = (k * 5 + (uint64_t)me) % n;
        uint64_t expect = (i + 1) * (uint64_t)p + (i < hot ? reps * (uint64_t)p : 0);
        if (got[k] != expect && in_place_fails++ < 4)
            fprintf(stderr, "rank %d: element %llu is %llu, expected %llu\n", me,
                    (unsigned long long)i, (unsigned long long)got[k],
                    (unsigned long long)expect);
    }
    /* a lock-step step: every rank adds 1 to every element, then reads them back; in
     * place are the writes and reads of the node's elements, when some node holds two
     * ranks (the blocks are then in the node's memory) */
    int shared = 0;
    for (int k = 0; k < cr_layout_nodes(l); k++)
        shared |= cr_layout_node_size(l, k) >= 2;
    cr_darray_stats_reset(a);
    uint64_t near_step = 0;
    for (uint64_t i = 0; i < n; i++) {
        cr_darray_write(a, i, &one);
        near_step += cr_layout_node_of(l, cr_darray_owner(n, p, i)) == cr_layout_node_of(l, me);
    }
    cr_darray_step(a);
    for (uint64_t k = 0; k < n; k++) {
        uint64_t i = (k * 3 + (uint64_t)me) % n;
        cr_darray_read(a, i, &got[k]);
        near_step += cr_layout_node_of(l, cr_darray_owner(n, p, i)) == cr_layout_node_of(l, me);
    }
    cr_darray_step(a);
    cr_darray_stats_get(a, &st);
    if (st.in_place != (shared ? near_step : 0) && in_place_fails++ < 4)
        fprintf(stderr, "rank %d: %llu lock-step writes and reads in place, expected %llu\n",
                me, (unsigned long long)st.in_place, (unsigned long long)(shared ? near_step : 0));
    for (uint64_t k = 0; k < n; k++) {
        uint64_t i = (k * 3 + (uint64_t)me) % n;
        uint64_t expect = (i + 2) * (uint64_t)p + (i < hot ? reps * (uint64_t)p : 0);
        if (got[k] != expect && in_place_fails++ < 4)
            fprintf(stderr, "rank %d: after the step, element %llu is %llu, expected %llu\n",
                    me, (unsigned long long)i, (unsigned long long)got[k],
                    (unsigned long long)expect);
    }
    free(got);
    cr_darray_destroy(a);
}

static void test_darray_in_place(void **state)
{
    (void)state;
    static const int ps[] = {1, 5, 64, 1024};
    static const unsigned node_sizes[] = {1, 4, 48};
    for (size_t k = 0; k < 4 && ps[k] <= largest_p(); k++)
        for (size_t ns = ps[k] >= 1024 ? 2 : 0; ns < 3; ns++) /* P = 1024: nodes of 48 */
            for (int seed = 1; seed <= (ps[k] >= 1024 ? 1 : 2); seed++) {
                named_config nc = request_config("direct");
                nc.cfg.node_size = node_sizes[ns];
                cr_sim_opts o = {.ranks = ps[k], .seed = (uint64_t)seed * 31 + (uint64_t)ps[k],
                                 .cfg = &nc.cfg, .max_slowness = 4};
                char err[256];
                snprintf(ctx, sizeof ctx, "darray in place, P=%d, nodes of %u, seed %d", ps[k],
                         node_sizes[ns], seed);
                in_place_fails = 0;
                if (cr_sim_run(&o, run_darray_in_place, NULL, NULL, err, sizeof err))
                    fail_msg("%s: %s", ctx, err);
                if (in_place_fails)
                    fail_msg("%s: %ld failures", ctx, in_place_fails);
            }
}

/* The lock-step mode on virtual ranks (its stages move as mailbox records here):
 * tests/darray_scenarios.h's model, every rule, route and aggregation; hash and sort
 * must leave the same arrays, rank by rank. */
typedef struct lockstep_run {
    int rule, route, agg;
    uint64_t *sums; /* [P]: each rank's checksum */
} lockstep_run;

static void run_darray_lockstep(cr_comm *comm, void *user)
{
    lockstep_run *r = user;
    cr_darray_stats st;
    r->sums[cr_comm_rank(comm)] =
        darray_run_steps(comm, r->rule, r->route, r->agg, CR_DARRAY_EXCHANGE_AUTO, &st);
}

static void test_darray_lockstep(void **state)
{
    (void)state;
    static const int ps[] = {1, 3, 8, 12, 64, 256, 1024};
    int seeds = seeds_wanted() < 3 ? seeds_wanted() : 3;
    /* 1024 only in the plain build: under the sanitizers it alone takes minutes */
    size_t nps = sizeof ps / sizeof ps[0] - (thorough() ? 0 : 1);
    for (size_t k = 0; k < nps && ps[k] <= largest_p(); k++)
        for (int rule = 0; rule < (ps[k] > 256 ? 1 : NRULES); rule++) /* 1024: one rule */
            for (int route = 0; route < NROUTES; route++)
                for (int seed = 1; seed <= (ps[k] >= 64 ? 1 : seeds); seed++) {
                    uint64_t *sums[NAGGS];
                    for (int agg = 0; agg < NAGGS; agg++) {
                        lockstep_run r = {rule, route, agg, calloc((size_t)ps[k], 8)};
                        sums[agg] = r.sums;
                        /* small buffers on odd seeds: segments in many pieces,
                         * arriving in any order */
                        cr_config cfg;
                        cr_config_init(&cfg);
                        cfg.buffer_bytes = seed % 2 ? 128 : cfg.buffer_bytes;
                        cr_sim_opts o = {.ranks = ps[k], .seed = (uint64_t)seed * 13 + (uint64_t)k,
                                         .cfg = &cfg};
                        char err[256];
                        snprintf(ctx, sizeof ctx, "darray lock-step, P=%d, rule %d, %s, "
                                 "aggregation %d, seed %d", ps[k], rule, darray_routes[route],
                                 agg, seed);
                        darray_fails = 0;
                        if (cr_sim_run(&o, run_darray_lockstep, &r, NULL, err, sizeof err))
                            fail_msg("%s: %s", ctx, err);
                        if (darray_fails)
                            fail_msg("%s: %ld reads differ from the model", ctx, darray_fails);
                    }
                    for (int agg = 1; agg < NAGGS; agg++)
                        if (memcmp(sums[0], sums[agg], (size_t)ps[k] * 8))
                            fail_msg("P=%d, rule %d, %s: aggregation %d leaves another array "
                                     "than none", ps[k], rule, darray_routes[route], agg);
                    for (int agg = 0; agg < NAGGS; agg++)
                        free(sums[agg]);
                }
}

/* The lock-step route auto: every step's writes and reads take the grid the cost
 * model predicts cheapest (docs/tuning.md, "Lock-step"). First the scenarios' exact
 * values under it, every aggregation, 1 to 1024 ranks, the array the same as under
 * direct. Then the choice itself, on a machine whose costs the test knows: R reads a
 * rank of distinct indices spread evenly, no merging; the step must run the candidate
 * (direct, two dimensions, three, hypercube) that cr_tune_step_predict names, and
 * that is the hypercube for 1024 reads a rank at 1024 ranks (one to every owner:
 * under direct a message to each) and direct for 20,000 at 8 (bandwidth),
 * so that a comm which always ran one grid fails. */
static int auto_reads_per_rank;

static void run_route_auto_reads(cr_comm *comm, void *user)
{
    cr_darray_stats *stats = user;
    int p = cr_comm_size(comm), me = cr_comm_rank(comm), r = auto_reads_per_rank;
    cr_darray_opts o;
    cr_darray_opts_init(&o);
    o.route.kind = CR_ROUTE_AUTO;
    o.aggregation = CR_DARRAY_AGG_NONE;
    uint64_t n = (uint64_t)p * (uint64_t)r;
    cr_darray *a = cr_darray_create(comm, n, 8, &o);
    uint64_t first, count, *local = cr_darray_local(a, &first, &count);
    for (uint64_t i = 0; i < count; i++)
        local[i] = cr_rng_hash64(first + i);
    uint64_t *got = calloc((size_t)r, 8);
    for (int k = 0; k < r; k++)
        cr_darray_read(a, (uint64_t)k * (uint64_t)p + (uint64_t)me, &got[k]);
    cr_darray_step(a);
    for (int k = 0; k < r; k++)
        if (got[k] != cr_rng_hash64((uint64_t)k * (uint64_t)p + (uint64_t)me) &&
            darray_fails++ < 4)
            print_error("%s: rank %d read %d wrong", ctx, me, k);
    cr_darray_stats_get(a, &stats[me]);
    free(got);
    cr_darray_destroy(a);
}

/* The candidates' dimensions for a power of two P, as the array lays them out. */
static int auto_candidate_dims(int k, int p, int *dims)
{
    int e = 0;
    while ((1 << e) < p)
        e++;
    if (k == 0) {
        dims[0] = p;
        return 1;
    }
    if (k == 1) {
        dims[0] = 1 << (e - e / 2), dims[1] = 1 << (e / 2);
        return 2;
    }
    if (k == 2) {
        int c = e / 3, rest = e - c;
        dims[0] = 1 << (rest - rest / 2), dims[1] = 1 << (rest / 2), dims[2] = 1 << c;
        return 3;
    }
    for (int d = 0; d < e; d++)
        dims[d] = 2;
    return e;
}

static void test_darray_route_auto(void **state)
{
    (void)state;
    static const int ps[] = {1, 3, 8, 12, 64, 256, 1024};
    size_t nps = sizeof ps / sizeof ps[0] - (thorough() ? 0 : 1);
    for (size_t k = 0; k < nps && ps[k] <= largest_p(); k++) {
        uint64_t *sums[NAGGS + 1];
        for (int agg = 0; agg <= NAGGS; agg++) { /* NAGGS: direct, none, the reference */
            bool reference = agg == NAGGS;
            lockstep_run r = {RULE_ADD, reference ? 0 : ROUTE_AUTO_INDEX, reference ? 0 : agg,
                              calloc((size_t)ps[k], 8)};
            sums[agg] = r.sums;
            cr_config cfg;
            cr_config_init(&cfg);
            cr_sim_opts o = {.ranks = ps[k], .seed = 7 + (uint64_t)k, .cfg = &cfg};
            char err[256];
            snprintf(ctx, sizeof ctx, "darray route auto, P=%d, aggregation %d", ps[k], agg);
            darray_fails = 0;
            if (cr_sim_run(&o, run_darray_lockstep, &r, NULL, err, sizeof err))
                fail_msg("%s: %s", ctx, err);
            if (darray_fails)
                fail_msg("%s: %ld reads differ from the model", ctx, darray_fails);
        }
        for (int agg = 0; agg < NAGGS; agg++)
            if (memcmp(sums[NAGGS], sums[agg], (size_t)ps[k] * 8))
                fail_msg("P=%d: route auto, aggregation %d, leaves another array than direct",
                         ps[k], agg);
        for (int agg = 0; agg <= NAGGS; agg++)
            free(sums[agg]);
    }
    static const struct { int p, reads; } cases[] = {{1024, 1024}, {8, 20000}};
    int chosen[2];
    for (int i = 0; i < 2; i++) {
        int p = cases[i].p;
        if (p > largest_p() || (p > 256 && seeds_wanted() < 20))
            return;
        auto_reads_per_rank = cases[i].reads;
        cr_darray_stats *stats = calloc((size_t)p, sizeof *stats);
        cr_sim_opts o = {.ranks = p, .seed = 3, .message_cost = 2e-6, .byte_cost = 1e-9,
                         .record_cost = 10e-9};
        char err[256];
        snprintf(ctx, sizeof ctx, "darray route auto's choice, P=%d, %d reads a rank", p,
                 cases[i].reads);
        darray_fails = 0;
        if (cr_sim_run(&o, run_route_auto_reads, stats, NULL, err, sizeof err))
            fail_msg("%s: %s", ctx, err);
        if (darray_fails)
            fail_msg("%s: %ld reads wrong", ctx, darray_fails);
        cr_layout *l = cr_layout_create_blocks(p, 1);
        cr_tune_costs machine = {.alpha_on = 2e-6, .alpha_off = 2e-6, .beta_on = 1e-9,
                                 .beta_off = 1e-9, .handle = 10e-9};
        cr_tune_step t = {.requests = (double)p * cases[i].reads,
                          .distinct = (double)p * cases[i].reads, .request_bytes = 8,
                          .reply_bytes = 8};
        double best = -1;
        chosen[i] = -1;
        for (int c = 0; c < CR_DARRAY_AUTO_ROUTES; c++) {
            int dims[64], nd = auto_candidate_dims(c, p, dims);
            double s = cr_tune_step_predict(l, dims, nd, &t, &machine);
            assert_true(s > 0);
            if (chosen[i] < 0 || s < best * 0.99)
                chosen[i] = c, best = s;
        }
        cr_layout_destroy(l);
        for (int r = 0; r < p; r++)
            for (int c = 0; c < CR_DARRAY_AUTO_ROUTES; c++)
                if (stats[r].auto_routes[c] != (c == chosen[i]))
                    fail_msg("%s: rank %d ran candidate %d %llu times; the model names %d once",
                             ctx, r, c, (unsigned long long)stats[r].auto_routes[c], chosen[i]);
        free(stats);
    }
    EXPECT_EQ(chosen[0], 3); /* the hypercube at 1024 ranks, a read to every owner */
    EXPECT_EQ(chosen[1], 0); /* direct at 8 ranks, 20,000 reads each */
}

/* ---------------------------------------------------------------- sparse exchange */

/* The sparse exchange on virtual ranks (tests/exchange_scenarios.h, the scenarios the
 * MPI test runs): every pattern under every protocol, then back-to-back exchanges
 * with mixed protocols, each received message checked byte for byte. The seed
 * decides in which order each rank's probes see the sources. */
static void run_exchange(cr_comm *comm, void *user)
{
    (void)user;
    int p = cr_comm_size(comm);
    uint64_t round = 0;
    for (int pat = P_NEIGHBOURS; pat <= P_REPEATS; pat++) {
        if (pat == P_LARGE && p > 64)
            continue; /* 1.5 MiB per rank: kept to the smaller worlds */
        for (size_t q = 0; q < NPROTOCOLS; q++)
            exchange_and_check(comm, protocols[q], (sx_pattern)pat, round++);
    }
    for (int k = 0; k < 6; k++)
        exchange_and_check(comm, protocols[k % 3], k % 2 ? P_NEIGHBOURS : P_REPEATS, 100 + (uint64_t)k);
}

static void run_exchange_at(int p, uint64_t seed)
{
    named_config nc = config("default");
    cr_sim_opts o = {.ranks = p, .seed = seed, .cfg = &nc.cfg};
    char err[256];
    snprintf(ctx, sizeof ctx, "sparse exchange, P=%d, seed %llu", p, (unsigned long long)seed);
    sx_fails = 0;
    if (cr_sim_run(&o, run_exchange, NULL, NULL, err, sizeof err))
        fail_msg("%s: %s", ctx, err);
    if (sx_fails)
        fail_msg("%s: %ld checks failed (see above)", ctx, sx_fails);
}

static void test_exchange(void **state)
{
    (void)state;
    int seeds = seeds_wanted();
    static const int small[] = {1, 2, 3, 4, 5, 7, 8, 13};
    for (size_t k = 0; k < sizeof small / sizeof small[0]; k++)
        for (int seed = 1; seed <= seeds; seed++)
            run_exchange_at(small[k], (uint64_t)seed * 37 + (uint64_t)small[k]);
    for (int seed = 1; seed <= (seeds + 3) / 4 && 64 <= largest_p(); seed++)
        run_exchange_at(64, (uint64_t)seed * 139);
    if (1024 <= largest_p())
        run_exchange_at(1024, 1024);
}

/* ---------------------------------------------------------------- containers */

/* The containers on virtual ranks (tests/container_scenarios.h, the scenarios the MPI
 * test runs) under every route with small buffers, so that inserts merge at their
 * source and at forwarding ranks, and the seed decides the order records arrive in. */
static void run_containers(cr_comm *comm, void *user)
{
    const uint64_t *seed = user;
    ct_all(comm, *seed);
}

static void run_containers_at(int p, const char *route, uint64_t seed)
{
    named_config nc = config("default");
    cr_route_parse(route, &nc.cfg.route, NULL, 0);
    nc.cfg.node_size = 2;
    nc.cfg.buffer_bytes = 512;
    cr_sim_opts o = {.ranks = p, .seed = seed, .cfg = &nc.cfg, .max_slowness = sim_slowness,
                     .stall_chance = sim_stall};
    char err[256];
    snprintf(ctx, sizeof ctx, "containers, P=%d, %s, seed %llu", p, route,
             (unsigned long long)seed);
    ct_fails = 0;
    if (cr_sim_run(&o, run_containers, &seed, NULL, err, sizeof err))
        fail_msg("%s: %s", ctx, err);
    if (ct_fails)
        fail_msg("%s: %ld checks failed (see above)", ctx, ct_fails);
}

static void test_containers(void **state)
{
    (void)state;
    static const char *const routes[] = {"direct", "nr", "nlnr", "grid", "hypercube"};
    static const int small[] = {1, 2, 3, 4, 5, 7, 8, 13};
    int seeds = seeds_wanted();
    bool full = thorough(); /* the sanitizers' runs take far longer */
    for (size_t rt = 0; rt < sizeof routes / sizeof routes[0]; rt++) {
        for (size_t k = 0; k < sizeof small / sizeof small[0] && small[k] <= largest_p(); k++)
            for (int seed = 1; seed <= (full ? (seeds + 3) / 4 : 1); seed++)
                run_containers_at(small[k], routes[rt], (uint64_t)seed * 53 + (uint64_t)small[k]);
        if ((full || rt == 4) && 64 <= largest_p())
            run_containers_at(64, routes[rt], 64 + rt);
    }
    /* 256, not 1024: both are below COURIER_DENSE_RANKS, so 1024 reaches no other
     * path and costs the suite minutes (the 4096-rank test takes the sparse one) */
    if (full && 256 <= largest_p())
        run_containers_at(256, "hypercube", 256);
}

/* ---------------------------------------------------------------- unequal speeds */

/* Ranks at unequal speeds (cr_sim_opts.max_slowness, .stall_chance): the scenarios
 * with their exact results and conservation counters, the requests and the
 * containers, at P = 4, 16 and 64, when some ranks make a tenth of the progress of
 * others and any rank may stall. The speeds come from the seed: a run replays. */
static void test_unequal_speeds(void **state)
{
    (void)state;
    int seeds = seeds_wanted() < 6 ? seeds_wanted() : 6;
    named_config nc = config("default");
    sim_slowness = 10;
    sim_stall = 0.002;
    /* The same seed gives the same speeds and the same run; another seed others. */
    uint64_t steps[2];
    for (int k = 0; k < 2; k++) {
        run_one(&scenarios[0], 16, &nc, 99);
        steps[k] = cr_sim_last_steps();
    }
    assert_int_equal(steps[0], steps[1]);
    /* Slow ranks are picked and passed over: the same run takes more steps (a rank's
     * chance to run averages ln(10)/9, about a quarter). */
    sim_slowness = sim_stall = 0;
    run_one(&scenarios[0], 16, &nc, 99);
    uint64_t even = cr_sim_last_steps();
    if (steps[0] < 2 * even)
        fail_msg("unequal speeds took %llu steps, equal ones %llu: the speeds do not act",
                 (unsigned long long)steps[0], (unsigned long long)even);
    sim_slowness = 10;
    sim_stall = 0.002;
    run_one(&scenarios[0], 16, &nc, 99); /* for the slowness read below */
    double lo = 1e9, hi = 0;
    for (int r = 0; r < 16; r++) {
        double f = cr_sim_last_slowness(r);
        lo = f < lo ? f : lo;
        hi = f > hi ? f : hi;
    }
    if (!(lo >= 1 && hi <= 10 && hi - lo > 1))
        fail_msg("slowness of 16 ranks from %g to %g, expected spread over [1, 10]", lo, hi);
    static const int ps[] = {4, 16, 64};
    size_t nps = thorough() ? 3 : 2; /* 64 in the plain build only */
    for (size_t i = 0; i < nps; i++)
        for (int seed = 1; seed <= (ps[i] >= 64 ? 1 : seeds); seed++) {
            uint64_t sd = (uint64_t)seed * 7001 + (uint64_t)ps[i];
            for (size_t sc = 0; sc < NSCENARIOS; sc++)
                run_one(&scenarios[sc], ps[i], &nc, sd);
            run_requests_at(ps[i], "nlnr", sd, (req_params){.nidx = 40, .walks = 8, .shapes = 0});
            run_containers_at(ps[i], ps[i] % 2 ? "grid" : "hypercube", sd);
        }
    sim_slowness = sim_stall = 0;
}

/* ---------------------------------------------------------------- collectives */

/* The collectives on virtual ranks: every allreduce algorithm (and port count) and
 * every allgather(v) algorithm, results exact against a reference each rank computes
 * from every rank's input (integers bit for bit, doubles within rounding), and
 * byte-identical on all ranks (each rank leaves a digest of its result in a table
 * the world shares, compared after a barrier). */
typedef struct coll_variant {
    int algorithm, ports;
} coll_variant;

static const coll_variant coll_reduce_variants[] = {
    {CR_ALLREDUCE_AUTO, 0},          {CR_ALLREDUCE_BINOMIAL, 0},      {CR_ALLREDUCE_BUTTERFLY, 0},
    {CR_ALLREDUCE_DISSEMINATION, 0}, {CR_ALLREDUCE_DISSEMINATION, 1}, {CR_ALLREDUCE_DISSEMINATION, 2},
    {CR_ALLREDUCE_DISSEMINATION, 3}, {CR_ALLREDUCE_BRUCK, 1},         {CR_ALLREDUCE_BRUCK, 2},
    {CR_ALLREDUCE_BRUCK, 3},
};
static const int coll_gather_algos[] = {CR_ALLGATHER_AUTO, CR_ALLGATHER_RING, CR_ALLGATHER_NEIGHBOR,
                                        CR_ALLGATHER_RECDOUBLING, CR_ALLGATHER_BRUCK,
                                        CR_ALLGATHER_SPARBIT};
static long coll_fails;
static uint64_t *coll_digest; /* [P]: each rank's last result */

#define COLL_CHECK(comm, cond, ...) SCENARIO_CHECK(coll_fails, cr_comm_rank(comm), cond, __VA_ARGS__)

static uint64_t coll_input(int rank, size_t i, uint64_t seed)
{
    return cr_rng_hash64(seed * 7919 + (uint64_t)rank * 1000003 + i);
}

/* Element i of rank r's input of type t, widened: int64 for the integer types. */
static int64_t coll_int(int rank, size_t i, uint64_t seed, cr_dtype t)
{
    uint64_t r = coll_input(rank, i, seed);
    return t == CR_INT32 ? (int64_t)(r % 2000003) - 1000000 : (int64_t)r;
}

static double coll_double(int rank, size_t i, uint64_t seed)
{
    return (double)(coll_input(rank, i, seed) % 10000000) / 3.0 - 1e6;
}

static void coll_fill(void *buf, int rank, size_t count, uint64_t seed, cr_dtype t)
{
    for (size_t i = 0; i < count; i++) {
        if (t == CR_DOUBLE)
            ((double *)buf)[i] = coll_double(rank, i, seed);
        else if (t == CR_INT32)
            ((int32_t *)buf)[i] = (int32_t)coll_int(rank, i, seed, t);
        else
            ((uint64_t *)buf)[i] = (uint64_t)coll_int(rank, i, seed, t);
    }
}

static int64_t coll_combine_int(int64_t a, int64_t b, cr_dtype t, cr_op op)
{
    if (t == CR_UINT64 && (op == CR_OP_MIN || op == CR_OP_MAX)) {
        uint64_t x = (uint64_t)a, y = (uint64_t)b;
        return (int64_t)(op == CR_OP_MIN ? (x < y ? x : y) : (x > y ? x : y));
    }
    switch (op) {
    case CR_OP_SUM: return (int64_t)((uint64_t)a + (uint64_t)b);
    case CR_OP_MIN: return a < b ? a : b;
    case CR_OP_MAX: return a > b ? a : b;
    case CR_OP_BAND: return a & b;
    default: return a | b;
    }
}

/* Digest of this rank's result, compared with rank 0's after a barrier. */
static void coll_same_everywhere(cr_comm *comm, const void *buf, size_t bytes, const char *what)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < bytes; i++)
        h = (h ^ ((const unsigned char *)buf)[i]) * 1099511628211ULL;
    coll_digest[cr_comm_rank(comm)] = h;
    cr_barrier(comm);
    COLL_CHECK(comm, coll_digest[0] == h, "%s: the result differs from rank 0's", what);
    cr_barrier(comm); /* before anyone writes the next digest */
}

static void coll_check_allreduce(cr_comm *comm, const coll_variant *v, cr_dtype t, cr_op op,
                                 size_t count, uint64_t seed)
{
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    size_t width = t == CR_INT32 ? 4 : 8, bytes = count * width;
    char *in = malloc(bytes + 1), *out = malloc(bytes + 1);
    coll_fill(in, me, count, seed, t);
    cr_coll_opts o = {.algorithm = v->algorithm, .ports = v->ports};
    cr_request *q = cr_iallreduce(comm, in, out, count, t, op, &o);
    char name[96];
    snprintf(name, sizeof name, "allreduce %s, type %d, op %d, %zu elements",
             cr_request_algorithm(q), (int)t, (int)op, count);
    cr_request_wait(&q);
    for (size_t i = 0; i < count; i++) {
        if (t == CR_DOUBLE) {
            double want = 0;
            for (int r = 0; r < p; r++)
                want += coll_double(r, i, seed);
            double got = ((double *)out)[i], tol = 1e-10 * (1 + (want < 0 ? -want : want)) * p;
            COLL_CHECK(comm, got - want <= tol && want - got <= tol, "%s: element %zu", name, i);
            continue;
        }
        int64_t want = coll_int(0, i, seed, t);
        for (int r = 1; r < p; r++)
            want = coll_combine_int(want, coll_int(r, i, seed, t), t, op);
        int64_t got = t == CR_INT32 ? ((int32_t *)out)[i] : (int64_t)((uint64_t *)out)[i];
        if (t == CR_INT32)
            want = (int32_t)want;
        COLL_CHECK(comm, got == want, "%s: element %zu is %lld, expected %lld", name, i,
                   (long long)got, (long long)want);
    }
    coll_same_everywhere(comm, out, bytes, name);
    free(in);
    free(out);
}

static void coll_fill_bytes(char *buf, size_t len, uint64_t seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (char)cr_rng_hash64(seed * 1000003 + i);
}

/* Block-size distributions of the Sparbit thesis (as tests/mpi/test_coll.c). */
static size_t coll_block_size(int dist, int r, int p, size_t s)
{
    switch (dist) {
    case 0: return r == 0 ? s * (size_t)p : 0;       /* broadcast-like */
    case 1: return r == p / 2 ? s * (size_t)p / 2 + 1 : 3; /* one spike */
    case 2: return r < (p + 1) / 2 ? s : 0;          /* half full */
    case 3: return s * (size_t)(p - r) / (size_t)p;  /* linear */
    default: return s >> (r < 20 ? r : 20);          /* geometric */
    }
}

static void coll_check_allgatherv(cr_comm *comm, int algorithm, int dist, size_t s)
{
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    size_t *sizes = malloc((size_t)p * sizeof *sizes), *offsets = malloc((size_t)p * sizeof *offsets);
    size_t total = 0;
    for (int r = 0; r < p; r++)
        sizes[r] = coll_block_size(dist, r, p, s);
    for (int r = p - 1; r >= 0; r--) { /* reversed layout with gaps */
        offsets[r] = total;
        total += sizes[r] + 5;
    }
    char *mine = malloc(sizes[me] + 1), *got = calloc(total + 1, 1), *want = calloc(total + 1, 1);
    coll_fill_bytes(mine, sizes[me], (uint64_t)me + 77);
    for (int r = 0; r < p; r++)
        coll_fill_bytes(want + offsets[r], sizes[r], (uint64_t)r + 77);
    cr_coll_opts o = {.algorithm = algorithm};
    cr_allgatherv(comm, mine, got, sizes, offsets, &o);
    COLL_CHECK(comm, memcmp(got, want, total) == 0, "allgatherv algorithm %d, distribution %d, %zu",
               algorithm, dist, s);
    free(mine);
    free(got);
    free(want);
    free(sizes);
    free(offsets);
}

static void coll_check_allgather(cr_comm *comm, int algorithm, size_t n)
{
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    size_t total = n * (size_t)p;
    char *mine = malloc(n + 1), *got = malloc(total + 1), *want = malloc(total + 1);
    coll_fill_bytes(mine, n, (uint64_t)me);
    for (int r = 0; r < p; r++)
        coll_fill_bytes(want + (size_t)r * n, n, (uint64_t)r);
    cr_coll_opts o = {.algorithm = algorithm};
    cr_allgather(comm, mine, n, got, &o);
    COLL_CHECK(comm, memcmp(got, want, total) == 0, "allgather algorithm %d, %zu bytes", algorithm, n);
    free(mine);
    free(got);
    free(want);
}

static void run_coll(cr_comm *comm, void *user)
{
    (void)user;
    int p = cr_comm_size(comm);
    bool large = p > 64; /* fewer and smaller cases: the reference costs P per element */
    size_t nv = sizeof coll_reduce_variants / sizeof coll_reduce_variants[0];
    const size_t counts[] = {0, 1, 7, 255};
    for (size_t v = 0; v < nv; v++)
        for (size_t c = 0; c < (large ? 3 : 4); c++) {
            uint64_t seed = v * 131 + c;
            coll_check_allreduce(comm, &coll_reduce_variants[v], CR_INT64, CR_OP_SUM, counts[c], seed);
            coll_check_allreduce(comm, &coll_reduce_variants[v], CR_UINT64, CR_OP_MIN, counts[c], seed);
            coll_check_allreduce(comm, &coll_reduce_variants[v], CR_INT32, CR_OP_MAX, counts[c], seed);
            coll_check_allreduce(comm, &coll_reduce_variants[v], CR_UINT64, CR_OP_BOR, counts[c], seed);
            coll_check_allreduce(comm, &coll_reduce_variants[v], CR_DOUBLE, CR_OP_SUM, counts[c], seed);
        }
    for (size_t a = 0; a < sizeof coll_gather_algos / sizeof coll_gather_algos[0]; a++) {
        const size_t sizes[] = {0, 1, 8, 1000, 70000};
        /* every rank computes the whole expected result: P^2 bytes over the world */
        for (size_t k = 0; k < (large ? 3 : 5); k++)
            coll_check_allgather(comm, coll_gather_algos[a], sizes[k]);
        for (int dist = 0; dist < 5; dist++)
            coll_check_allgatherv(comm, coll_gather_algos[a], dist, large ? 2 : 64);
        if (!large)
            coll_check_allgatherv(comm, coll_gather_algos[a], 2, 20000); /* vector transfers */
    }
}

static void run_coll_at(int p, uint64_t seed)
{
    named_config nc = config("default");
    cr_sim_opts o = {.ranks = p, .seed = seed, .cfg = &nc.cfg};
    char err[256];
    snprintf(ctx, sizeof ctx, "collectives, P=%d, seed %llu", p, (unsigned long long)seed);
    coll_fails = 0;
    coll_digest = calloc((size_t)p, sizeof *coll_digest);
    if (cr_sim_run(&o, run_coll, NULL, NULL, err, sizeof err))
        fail_msg("%s: %s", ctx, err);
    free(coll_digest);
    coll_digest = NULL;
    if (coll_fails)
        fail_msg("%s: %ld checks failed (see above)", ctx, coll_fails);
}

static void test_coll(void **state)
{
    (void)state;
    int seeds = thorough() ? 3 : 1;
    static const int small[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 16, 17};
    for (size_t k = 0; k < sizeof small / sizeof small[0]; k++)
        for (int seed = 1; seed <= seeds; seed++)
            run_coll_at(small[k], (uint64_t)seed * 41 + (uint64_t)small[k]);
    int big = thorough() ? 1024 : 256;
    if (64 <= largest_p())
        run_coll_at(64, 64);
    if (100 <= largest_p())
        run_coll_at(100, 100);
    if (big <= largest_p())
        run_coll_at(big, 1024);
}

/* ---------------------------------------------------------------- node segments */

/* Memory shared within a node on virtual ranks (tests/node_scenarios.h): nodes of 1,
 * 4 and 48 ranks, unequal rank speeds and stalls, so a barrier that lets a rank
 * through early meets a slower one's stale round; small buffers and a cap of 2 sends
 * in flight, so records to a rank waiting at the barrier need it to keep receiving. */
typedef struct node_run {
    int records;
    long failed;
} node_run;

static void run_node(cr_comm *comm, void *user)
{
    node_run *r = user;
    long f = ns_all(comm, 256, 6, r->records);
    r->failed += f; /* the virtual ranks share the process: one sum */
}

static void run_node_at(int p, unsigned node_size, uint64_t seed)
{
    named_config nc = config("default");
    nc.cfg.node_size = node_size;
    nc.cfg.buffer_bytes = 256;
    nc.cfg.max_inflight = 2;
    cr_sim_opts o = {.ranks = p, .seed = seed, .cfg = &nc.cfg, .max_slowness = 10,
                     .stall_chance = 0.01};
    node_run r = {.records = p <= 16 ? 200 : 20};
    char err[256];
    snprintf(ctx, sizeof ctx, "node segments, P=%d, nodes of %u, seed %llu", p, node_size,
             (unsigned long long)seed);
    if (cr_sim_run(&o, run_node, &r, NULL, err, sizeof err))
        fail_msg("%s: %s", ctx, err);
    if (r.failed)
        fail_msg("%s: %ld checks failed (see above)", ctx, r.failed);
}

static void test_node_segments(void **state)
{
    (void)state;
    static const int ps[] = {1, 2, 3, 5, 8, 13, 64, 200, 1024};
    static const unsigned sizes[] = {1, 4, 48};
    for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++)
        for (size_t n = 0; n < sizeof sizes / sizeof sizes[0]; n++)
            for (int seed = 1; seed <= (ps[k] <= 16 ? seeds_wanted() : 1); seed++)
                if (ps[k] <= largest_p())
                    run_node_at(ps[k], sizes[n], (uint64_t)seed * 31 + (uint64_t)ps[k]);
}

/* Groups a test run may ask for by name (argv[1]); with none, the main group. The
 * deadlock case abandons its stuck ranks (and their memory): it runs alone, so that
 * a leak checker can be told to ignore just that run. The cost model's tests run
 * alone as "tune" and also in the main group. */
static const struct CMUnitTest node_group[] = {cmocka_unit_test(test_node_segments)};
static const struct CMUnitTest coll_group[] = {cmocka_unit_test(test_coll)};
static const struct CMUnitTest deadlock_group[] = {cmocka_unit_test(test_deadlock_is_reported)};
static const struct CMUnitTest tune_group[] = {cmocka_unit_test(test_auto_takes_the_machine_costs),
                                               cmocka_unit_test(test_auto_moves_between_epochs),
                                               cmocka_unit_test(test_auto_learns_merging)};
static const struct CMUnitTest requests_group[] = {cmocka_unit_test(test_requests),
                                                   cmocka_unit_test(test_darray_async),
                                                   cmocka_unit_test(test_darray_in_place),
                                                   cmocka_unit_test(test_darray_lockstep),
                                                   cmocka_unit_test(test_darray_route_auto)};
static const struct CMUnitTest bounded_group[] = {cmocka_unit_test(test_bound_one_rank),
                                                  cmocka_unit_test(test_bounded_sweep),
                                                  cmocka_unit_test(test_forwarding_inside_cap_flush)};
static const struct CMUnitTest exchange_group[] = {cmocka_unit_test(test_exchange)};
static const struct CMUnitTest deep_group[] = {cmocka_unit_test(test_deep_order),
                                               cmocka_unit_test(test_deep_order_runs),
                                               cmocka_unit_test(test_deep_relief),
                                               cmocka_unit_test(test_deep_in_place),
                                               cmocka_unit_test(test_deep_counts_inflight),
                                               cmocka_unit_test(test_deep_fanout),
                                               cmocka_unit_test(test_deep_scenarios)};
static const struct CMUnitTest speeds_group[] = {cmocka_unit_test(test_unequal_speeds)};
static const struct CMUnitTest containers_group[] = {cmocka_unit_test(test_containers)};
static const struct CMUnitTest p4096_group[] = {cmocka_unit_test(test_4096_hypercube)};
static const struct CMUnitTest main_group[] = {
    cmocka_unit_test(test_replay),
    cmocka_unit_test(test_p1),
    cmocka_unit_test(test_p2),
    cmocka_unit_test(test_p3),
    cmocka_unit_test(test_p5),
    cmocka_unit_test(test_p8),
    cmocka_unit_test(test_p64),
    cmocka_unit_test(test_merging_at_hops),
    cmocka_unit_test(test_mcast_shares_hops),
    cmocka_unit_test(test_auto_applies_the_model),
    cmocka_unit_test(test_auto_takes_the_machine_costs),
    cmocka_unit_test(test_auto_moves_between_epochs),
    cmocka_unit_test(test_auto_learns_merging),
    cmocka_unit_test(test_send_state_follows_partners),
    cmocka_unit_test(test_p1024),
};

#define GROUP(name, tests) {name, tests, sizeof tests / sizeof tests[0]}
static const struct {
    const char *name;
    const struct CMUnitTest *tests;
    size_t count;
} groups[] = {
    GROUP("node", node_group),         GROUP("coll", coll_group),
    GROUP("deadlock", deadlock_group), GROUP("tune", tune_group),
    GROUP("requests", requests_group), GROUP("bounded", bounded_group),
    GROUP("exchange", exchange_group), GROUP("deep", deep_group),
    GROUP("speeds", speeds_group),     GROUP("containers", containers_group),
    GROUP("4096", p4096_group),
};

int main(int argc, char **argv)
{
    for (size_t g = 0; argc > 1 && g < sizeof groups / sizeof groups[0]; g++)
        if (!strcmp(argv[1], groups[g].name))
            return _cmocka_run_group_tests(groups[g].name, groups[g].tests, groups[g].count,
                                           NULL, NULL);
    if (argc > 1) {
        fprintf(stderr, "test_sim: no group '%s'\n", argv[1]);
        return 2;
    }
    return cmocka_run_group_tests(main_group, NULL, NULL);
}
