/* The mailbox end to end, under mpirun: exact message counts, payload contents and
 * checksums, across several buffer configurations. */
#include "harness.h"

#include "../tune_expect.h"
#include "courier/rng.h"

#include <courier.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- configurations */

typedef struct named_config {
    const char *name;
    cr_config cfg;
} named_config;

static named_config configs[5];
static int nconfigs;

static void add_config(const char *name, void (*tweak)(cr_config *))
{
    named_config *n = &configs[nconfigs++];
    n->name = name;
    cr_config_init(&n->cfg);
    char err[256];
    if (cr_config_from_env(&n->cfg, err, sizeof err))
        fprintf(stderr, "%s\n", err), exit(2);
    if (tweak)
        tweak(&n->cfg);
}

static void t_prepost(cr_config *c) { c->recv_mode = CR_RECV_PREPOST; }
/* every record is its own send */
static void t_tiny(cr_config *c) { c->buffer_bytes = 1; c->max_inflight = 4; }
/* only barriers send */
static void t_huge(cr_config *c) { c->buffer_bytes = 64 << 20; c->buffer_cap_bytes = 1ULL << 30; c->flush_interval = 0; }
/* one send in flight, small cap: back-pressure, deferred and cap flushes */
static void t_inflight1(cr_config *c) { c->buffer_bytes = 256; c->max_inflight = 1; c->buffer_cap_bytes = 1024; c->recv_mode = CR_RECV_PREPOST; }

static void setup_configs(void)
{
    add_config("default", NULL);
    add_config("prepost", t_prepost);
    add_config("tiny", t_tiny);
    add_config("huge", t_huge);
    add_config("inflight1", t_inflight1);
}

/* The slots each of this rank's node peers would get by docs/shared_memory.md's
 * rule (a buffer of 4 KiB to 1 MiB and its header, rounded up to 64 bytes, per
 * slot; 20 KiB of the segment for the collectives left out): 2 or more and the path
 * is on. */
static size_t ring_slots_per_peer(const cr_config *cfg, const cr_layout *l)
{
    int peers = cr_layout_node_size(l, cr_layout_node_of(l, test_rank)) - 1;
    size_t buffer = cfg->buffer_bytes < 4096 ? 4096 : cfg->buffer_bytes;
    buffer = buffer > ((size_t)1 << 20) ? (size_t)1 << 20 : buffer;
    size_t slot = (buffer + 8 + 63) / 64 * 64, room = cfg->shm_bytes - (20u << 10);
    return peers <= 0 ? SIZE_MAX : room / slot / (size_t)peers;
}

/* Counters must balance over the job after every scenario. */
static void check_conservation(cr_comm *comm)
{
    check_conserved(comm, UINT64_MAX);
    cr_stats s;
    cr_stats_get(comm, &s);
    const cr_config *cfg = cr_comm_config(comm);
    const cr_layout *l = cr_comm_layout(comm);
    /* (a comm under COURIER_ROUTE=auto may have run other routes before this one) */
    bool one_route = s.tune_switches == 0;
    if (cfg->route.kind == CR_ROUTE_DIRECT && one_route)
        CHECK(s.forwarded == 0, "%llu records forwarded under the direct route",
              (unsigned long long)s.forwarded);
    /* NLNR's promise: one channel per pair of nodes */
    if (cfg->route.kind == CR_ROUTE_NLNR && one_route)
        CHECK(s.partners_off_node + 1 <= (uint64_t)cr_layout_nodes(l),
              "%llu off-node partners with %d nodes", (unsigned long long)s.partners_off_node,
              cr_layout_nodes(l));
    CHECK(s.partners <= (uint64_t)test_size && s.partners_off_node <= s.partners &&
              s.mpi_sends_off_node <= s.mpi_sends &&
              s.mpi_bytes_on_node + s.mpi_bytes_off_node == s.mpi_bytes_sent,
          "partner and byte counters do not add up");
    CHECK(s.peak_inflight <= cfg->max_inflight, "peak in flight %llu above the cap %u",
          (unsigned long long)s.peak_inflight, cfg->max_inflight);
    /* The path within the node (docs/shared_memory.md): never used when off; when on
     * with room for its rings (the default 16 MiB is room for 2 slots of the largest
     * buffer, 1 MiB, at 8 ranks), every send within the node goes through a ring. */
    uint64_t on_node = s.mpi_sends - s.mpi_sends_off_node;
    if (!cfg->shm || cfg->shm_bytes == 0)
        CHECK(s.shm_sends == 0, "%llu ring sends with COURIER_SHM off",
              (unsigned long long)s.shm_sends);
    else if (cfg->shm_bytes >= ((size_t)16 << 20))
        CHECK(s.shm_sends == on_node, "%llu ring sends of %llu sends within the node",
              (unsigned long long)s.shm_sends, (unsigned long long)on_node);
    else if (ring_slots_per_peer(cfg, l) >= 3) /* on by a margin: every send */
        CHECK(s.shm_sends == on_node, "%llu ring sends of %llu sends within the node (%zu "
              "bytes for the rings)", (unsigned long long)s.shm_sends,
              (unsigned long long)on_node, cfg->shm_bytes);
    else
        CHECK(s.shm_sends <= on_node, "%llu ring sends of %llu sends within the node",
              (unsigned long long)s.shm_sends, (unsigned long long)on_node);
}

/* seen[src * per_rank + seq] counts deliveries: each must have arrived exactly once. */
static void check_each_once(const uint8_t *seen, int per_rank, const char *what)
{
    for (size_t i = 0; i < (size_t)test_size * (size_t)per_rank; i++)
        CHECK(seen[i] == 1, "%s %zu from rank %zu seen %d times", what, i % (size_t)per_rank,
              i / (size_t)per_rank, seen[i]);
}

/* ---------------------------------------------------------------- all to all */

#define A2A_K 40

typedef struct a2a_msg {
    int32_t src, dst;
    uint32_t seq;
    uint32_t check;
} a2a_msg;

typedef struct a2a_state {
    uint8_t *seen; /* [src][seq] */
} a2a_state;

static uint32_t a2a_check(int src, int dst, uint32_t seq)
{
    return (uint32_t)cr_rng_hash64(((uint64_t)src << 40) ^ ((uint64_t)dst << 20) ^ seq);
}

static void on_a2a(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    a2a_state *st = user;
    a2a_msg m;
    CHECK(len == sizeof m, "length %zu", len);
    memcpy(&m, p, sizeof m);
    CHECK(m.src == src && m.dst == cr_comm_rank(comm) && m.seq < A2A_K, "bad header");
    CHECK(m.check == a2a_check(m.src, m.dst, m.seq), "bad checksum");
    if (m.src == src && m.seq < A2A_K)
        st->seen[(size_t)src * A2A_K + m.seq]++;
}

static void all_to_all(const cr_config *cfg)
{
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, cfg);
    a2a_state st = {.seen = calloc((size_t)test_size * A2A_K, 1)};
    int h = cr_register(comm, on_a2a, &st);
    for (uint32_t seq = 0; seq < A2A_K; seq++)
        for (int d = 0; d < test_size; d++) {
            int dst = (test_rank + d) % test_size;
            a2a_msg m = {test_rank, dst, seq, a2a_check(test_rank, dst, seq)};
            cr_async(comm, dst, h, &m, sizeof m);
        }
    cr_barrier(comm);
    check_each_once(st.seen, A2A_K, "message");
    check_conservation(comm);
    cr_comm_destroy(comm);
    free(st.seen);
}

/* ---------------------------------------------------------------- recursive chains */

typedef struct token {
    int32_t origin;
    int32_t hops_left;
    int32_t hops_done;
    int32_t total;
} token;

typedef struct chain_state {
    int h;
    uint64_t hops;
    uint64_t finished;
} chain_state;

static void on_token(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    chain_state *st = user;
    token t;
    CHECK(len == sizeof t, "length %zu", len);
    memcpy(&t, p, sizeof t);
    int me = cr_comm_rank(comm), size = cr_comm_size(comm);
    CHECK(src == (me - 1 + size) % size, "token from %d", src);
    CHECK(t.hops_done + t.hops_left == t.total, "token counts %d + %d", t.hops_done, t.hops_left);
    CHECK((t.origin + t.hops_done) % size == me, "token off its path");
    st->hops++;
    if (t.hops_left == 0) {
        st->finished++;
        return;
    }
    t.hops_left--;
    t.hops_done++;
    cr_async(comm, (me + 1) % size, st->h, &t, sizeof t);
}

static void chains(const cr_config *cfg)
{
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, cfg);
    chain_state st = {0};
    st.h = cr_register(comm, on_token, &st);
    int k = 3 * test_size + 5; /* handled hops per token */
    token t = {test_rank, k - 1, 1, k};
    cr_async(comm, (test_rank + 1) % test_size, st.h, &t, sizeof t);
    cr_barrier(comm);
    /* Token from rank r visits r+1 .. r+k: each rank is visited exactly k times. */
    CHECK(st.hops == (uint64_t)k, "rank handled %llu hops, expected %d",
          (unsigned long long)st.hops, k);
    uint64_t finished = sum_all(st.finished);
    CHECK(finished == (uint64_t)test_size, "%llu tokens finished, expected %d",
          (unsigned long long)finished, test_size);
    check_conservation(comm);
    cr_comm_destroy(comm);
}

/* ---------------------------------------------------------------- hot spot */

#define HOT_M 3000

typedef struct hot_state {
    uint64_t *count; /* per source */
    uint64_t sum;
} hot_state;

static void on_hot(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    (void)comm;
    hot_state *st = user;
    uint64_t v[2];
    CHECK(len == sizeof v, "length %zu", len);
    memcpy(v, p, sizeof v);
    CHECK(v[0] == (uint64_t)src, "payload names source %llu", (unsigned long long)v[0]);
    st->count[src]++;
    st->sum += v[1];
}

static void hot_spot(const cr_config *cfg)
{
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, cfg);
    hot_state st = {.count = calloc((size_t)test_size, sizeof(uint64_t))};
    int h = cr_register(comm, on_hot, &st);
    uint64_t expect = 0;
    for (uint64_t i = 0; i < HOT_M; i++) {
        uint64_t v[2] = {(uint64_t)test_rank, cr_rng_hash64(i * 977 + (uint64_t)test_rank)};
        cr_async(comm, 0, h, v, sizeof v);
        expect += v[1];
    }
    cr_barrier(comm);
    if (test_rank == 0)
        for (int r = 0; r < test_size; r++)
            CHECK(st.count[r] == HOT_M, "rank 0 got %llu from %d", (unsigned long long)st.count[r], r);
    uint64_t sum = sum_all(st.sum), want = sum_all(expect);
    CHECK(sum == want, "payload checksum differs");
    cr_stats s;
    cr_stats_get(comm, &s);
    /* A sending rank holds at most one buffer's worth (plus one record, with its route
     * block under routing). Forwarding ranks are not bounded by this: they re-buffer
     * what they receive (docs/routing.md, memory). */
    size_t rec = 8 + 8 + 16, limit = cfg->buffer_bytes < cfg->buffer_cap_bytes
                                         ? cfg->buffer_bytes
                                         : cfg->buffer_cap_bytes;
    if (s.forwarded == 0)
        CHECK(s.peak_buffered_bytes <= limit + rec, "peak buffered %llu above %zu",
              (unsigned long long)s.peak_buffered_bytes, limit + rec);
    check_conservation(comm);
    cr_comm_destroy(comm);
    free(st.count);
}

/* Counts one increment per message, whatever its source. */
static void on_incr(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    (void)comm;
    hot_state *st = user;
    CHECK(len == 8, "length %zu", len);
    uint64_t v;
    memcpy(&v, p, 8);
    st->count[src] += v;
}

/* ---------------------------------------------------------------- random sizes */

#define RND_R 150

/* FNV-1a over the bytes, mixed with the length. */
static uint64_t digest(const void *p, size_t len)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ULL ^ len;
    for (size_t i = 0; i < len; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

static void body_bytes(char *p, size_t len, int src, uint64_t seq)
{
    uint64_t s = cr_rng_hash64(((uint64_t)src << 32) ^ seq);
    for (size_t i = 0; i < len; i++)
        p[i] = (char)(i % 8 == 0 ? (s = cr_rng_next(&s)) : s >> (8 * (i % 8)));
}

typedef struct rnd_state {
    uint64_t *count, *sum; /* per source */
} rnd_state;

static void on_random(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    (void)comm;
    rnd_state *st = user;
    if (len >= 8) {
        uint64_t seq;
        memcpy(&seq, p, 8);
        char *expect = malloc(len);
        body_bytes(expect, len - 8, src, seq);
        CHECK(memcmp(expect, (const char *)p + 8, len - 8) == 0, "payload %llu from %d corrupt",
              (unsigned long long)seq, src);
        free(expect);
    }
    st->count[src]++;
    st->sum[src] += digest(p, len);
}

static size_t random_size(uint64_t *s)
{
    uint64_t r = cr_rng_bounded(cr_rng_next(s), 100);
    if (r < 40)
        return (size_t)cr_rng_bounded(cr_rng_next(s), 17);
    if (r < 70)
        return 17 + (size_t)cr_rng_bounded(cr_rng_next(s), 300);
    if (r < 97)
        return 317 + (size_t)cr_rng_bounded(cr_rng_next(s), 70000);
    return ((size_t)1 << 20) + (size_t)cr_rng_bounded(cr_rng_next(s), (size_t)1 << 20);
}

static void random_sizes(const cr_config *cfg)
{
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, cfg);
    size_t n = (size_t)test_size;
    rnd_state st = {calloc(n, 8), calloc(n, 8)};
    uint64_t *sent_count = calloc(n, 8), *sent_sum = calloc(n, 8);
    int h = cr_register(comm, on_random, &st);
    uint64_t s = cr_rng_hash64(12345 + (uint64_t)test_rank);
    char *buf = malloc((size_t)2 << 20);
    for (uint64_t seq = 0; seq < RND_R; seq++) {
        size_t len = random_size(&s);
        int dst = (int)cr_rng_bounded(cr_rng_next(&s), n);
        if (len >= 8) {
            memcpy(buf, &seq, 8);
            body_bytes(buf + 8, len - 8, test_rank, seq);
        } else {
            body_bytes(buf, len, test_rank, seq);
        }
        cr_async(comm, dst, h, buf, len);
        sent_count[dst]++;
        sent_sum[dst] += digest(buf, len);
    }
    cr_barrier(comm);
    /* What rank r sent to me must equal what I received from r, pair by pair. */
    uint64_t *exp_count = calloc(n, 8), *exp_sum = calloc(n, 8);
    MPI_Alltoall(sent_count, 1, MPI_UINT64_T, exp_count, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    MPI_Alltoall(sent_sum, 1, MPI_UINT64_T, exp_sum, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    for (size_t r = 0; r < n; r++) {
        CHECK(st.count[r] == exp_count[r], "from %zu: %llu messages, expected %llu", r,
              (unsigned long long)st.count[r], (unsigned long long)exp_count[r]);
        CHECK(st.sum[r] == exp_sum[r], "from %zu: checksum differs", r);
    }
    check_conservation(comm);
    cr_comm_destroy(comm);
    free(buf);
    free(st.count), free(st.sum), free(sent_count), free(sent_sum), free(exp_count), free(exp_sum);
}

/* ---------------------------------------------------------------- many barriers */

#define ROUNDS 30

typedef struct round_state {
    uint64_t got[ROUNDS];
} round_state;

static void on_round(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    round_state *st = user;
    int32_t r;
    CHECK(len == sizeof r, "length");
    memcpy(&r, p, sizeof r);
    int size = cr_comm_size(comm), me = cr_comm_rank(comm);
    CHECK(r >= 0 && r < ROUNDS, "round %d", r);
    CHECK(src == ((me - r) % size + size) % size, "round %d from %d", r, src);
    if (r >= 0 && r < ROUNDS)
        st->got[r]++;
}

static void many_barriers(const cr_config *cfg)
{
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, cfg);
    round_state st = {{0}};
    int h = cr_register(comm, on_round, &st);
    for (int32_t r = 0; r < ROUNDS; r++) {
        int count = r % 3 == 0 ? 0 : r % 5 + 1;
        for (int i = 0; i < count; i++)
            cr_async(comm, (test_rank + r) % test_size, h, &r, sizeof r);
        cr_barrier(comm);
        /* the round is complete now, and nothing of later rounds has arrived */
        CHECK(st.got[r] == (uint64_t)count, "round %d: got %llu, expected %d", r,
              (unsigned long long)st.got[r], count);
        for (int later = r + 1; later < ROUNDS; later++)
            CHECK(st.got[later] == 0, "round %d arrived during round %d", later, r);
    }
    check_conservation(comm);
    cr_comm_destroy(comm);
}

/* ---------------------------------------------------------------- broadcast */

#define BCAST_B 25

typedef struct bcast_state {
    uint8_t *seen;
} bcast_state;

static void on_bcast(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    (void)comm;
    bcast_state *st = user;
    int32_t v[2];
    CHECK(len == sizeof v, "length");
    memcpy(v, p, sizeof v);
    CHECK(v[0] == src && v[1] >= 0 && v[1] < BCAST_B, "bad bcast payload");
    if (v[0] == src && v[1] >= 0 && v[1] < BCAST_B)
        st->seen[(size_t)src * BCAST_B + (size_t)v[1]]++;
}

static void bcast(const cr_config *cfg)
{
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, cfg);
    bcast_state st = {calloc((size_t)test_size * BCAST_B, 1)};
    int h = cr_register(comm, on_bcast, &st);
    for (int32_t i = 0; i < BCAST_B; i++) {
        int32_t v[2] = {test_rank, i};
        cr_async_bcast(comm, h, v, sizeof v);
    }
    cr_barrier(comm);
    check_each_once(st.seen, BCAST_B, "bcast");
    check_conservation(comm);
    cr_comm_destroy(comm);
    free(st.seen);
}

/* ---------------------------------------------------------------- multicast */

#define MCAST_B 30

/* Whether rank d is on the list of multicast i from rank r: about half the ranks,
 * sometimes none, sometimes all, the sender itself sometimes. */
static bool mcast_member(int r, int i, int d)
{
    if (i % 7 == 0)
        return false;
    if (i % 7 == 1)
        return true;
    uint64_t x = ((uint64_t)r * 1000003u + (uint64_t)i * 7919u + (uint64_t)d * 104729u) * 0x9e3779b97f4a7c15ull;
    return (x >> 61) & 1;
}

typedef struct mcast_state {
    int h, h_echo;
    uint8_t *seen; /* [src][i] */
    uint64_t echoes, bad;
} mcast_state;

static void on_mcast(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    mcast_state *st = user;
    int32_t v[3];
    if (len != sizeof v) {
        st->bad++;
        return;
    }
    memcpy(v, p, sizeof v);
    int me = cr_comm_rank(comm);
    if (v[0] != src || v[1] < 0 || v[1] >= MCAST_B || !mcast_member(src, v[1], me) ||
        v[2] != src * 31 + v[1]) {
        st->bad++;
        return;
    }
    st->seen[(size_t)src * MCAST_B + (size_t)v[1]]++;
    /* every fifth one is answered by a multicast from the handler: to the sender and
     * the rank after this one */
    if (v[1] % 5 == 2) {
        int to[2] = {src, (me + 1) % cr_comm_size(comm)};
        int32_t w = me;
        cr_async_mcast(comm, to, to[0] == to[1] ? 1 : 2, st->h_echo, &w, sizeof w);
    }
}

static void on_mcast_echo(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    (void)comm;
    mcast_state *st = user;
    int32_t w;
    memcpy(&w, p, sizeof w);
    if (len != sizeof w || w != src)
        st->bad++;
    st->echoes++;
}

static void mcast(const cr_config *cfg)
{
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, cfg);
    mcast_state st = {.seen = calloc((size_t)test_size * MCAST_B, 1)};
    st.h = cr_register(comm, on_mcast, &st);
    st.h_echo = cr_register(comm, on_mcast_echo, &st);
    int *list = malloc((size_t)test_size * sizeof *list);
    for (int32_t i = 0; i < MCAST_B; i++) {
        size_t n = 0;
        for (int k = 0; k < test_size; k++) { /* listed in a rotated order */
            int d = (k + test_rank + i) % test_size;
            if (mcast_member(test_rank, i, d))
                list[n++] = d;
        }
        int32_t v[3] = {test_rank, i, test_rank * 31 + i};
        cr_async_mcast(comm, list, n, st.h, v, sizeof v);
    }
    cr_barrier(comm);
    /* exactly once where listed, nowhere else; the echoes: one per (sender, listed
     * receiver) of the multicasts i % 5 == 2, to one or two ranks */
    uint64_t want_echoes = 0;
    for (int r = 0; r < test_size; r++)
        for (int i = 0; i < MCAST_B; i++) {
            uint8_t want = mcast_member(r, i, test_rank);
            uint8_t got = st.seen[(size_t)r * MCAST_B + (size_t)i];
            CHECK(got == want, "multicast %d from rank %d arrived %u times, expected %u", i, r,
                  got, want);
            if (i % 5 != 2)
                continue;
            for (int d = 0; d < test_size; d++) /* d answered r's multicast i */
                if (mcast_member(r, i, d))
                    want_echoes += (r == test_rank) + ((d + 1) % test_size == test_rank &&
                                                       (d + 1) % test_size != r);
        }
    CHECK(st.bad == 0, "%llu multicast records were wrong", (unsigned long long)st.bad);
    CHECK(st.echoes == want_echoes, "%llu echoes, expected %llu", (unsigned long long)st.echoes,
          (unsigned long long)want_echoes);
    check_conservation(comm);
    cr_comm_destroy(comm);
    free(list);
    free(st.seen);
}

/* ---------------------------------------------------------------- large payloads from handlers */

#define BIG 100001

typedef struct big_state {
    int h;
    uint64_t hops;
    char *expect;
} big_state;

static void on_big(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    (void)src;
    big_state *st = user;
    CHECK(len == BIG, "length %zu", len);
    int32_t left;
    memcpy(&left, p, sizeof left);
    CHECK(len == BIG && memcmp((const char *)p + 4, st->expect + 4, BIG - 4) == 0, "body corrupt");
    st->hops++;
    if (left > 0) {
        char *copy = malloc(len);
        memcpy(copy, p, len);
        left--;
        memcpy(copy, &left, sizeof left);
        cr_async(comm, (cr_comm_rank(comm) + 1) % cr_comm_size(comm), st->h, copy, len);
        free(copy);
    }
}

static void large_from_handlers(const cr_config *cfg)
{
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, cfg);
    big_state st = {.expect = malloc(BIG)};
    body_bytes(st.expect, BIG, 7, 7);
    st.h = cr_register(comm, on_big, &st);
    int32_t hops = 2 * test_size;
    char *msg = malloc(BIG);
    memcpy(msg, st.expect, BIG);
    int32_t left = hops - 1;
    memcpy(msg, &left, sizeof left);
    cr_async(comm, (test_rank + 1) % test_size, st.h, msg, BIG);
    cr_barrier(comm);
    CHECK(st.hops == (uint64_t)hops, "handled %llu hops, expected %d", (unsigned long long)st.hops,
          hops);
    check_conservation(comm);
    cr_comm_destroy(comm);
    free(msg);
    free(st.expect);
}

/* ---------------------------------------------------------------- cr_async_many */

/* Each rank sends MANY_K 16-byte records through cr_async_many, in chunks of 1 to 97
 * records to destinations drawn at random, and between chunks an 8-byte record of
 * another handler through cr_async, which closes the open runs the chunks join. Every
 * record must arrive exactly once with its checksum, whatever the buffers do (a
 * 1-byte buffer makes every record its own send; a small cap makes the fast loop
 * stop at the cap). */
#define MANY_K 3000

typedef struct many_state {
    uint8_t *seen;  /* [src][seq] of the 16-byte records */
    uint8_t *seen8; /* [src][chunk] of the 8-byte ones */
} many_state;

static void on_many(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    many_state *st = user;
    a2a_msg m;
    CHECK(len == sizeof m, "length %zu", len);
    memcpy(&m, p, sizeof m);
    CHECK(m.src == src && m.dst == cr_comm_rank(comm) && m.seq < MANY_K &&
              m.check == a2a_check(m.src, m.dst, m.seq),
          "record from %d: bad header or checksum", src);
    if (m.src == src && m.seq < MANY_K)
        st->seen[(size_t)src * MANY_K + m.seq]++;
}

static void on_many8(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    (void)comm;
    many_state *st = user;
    uint64_t w;
    CHECK(len == sizeof w, "length %zu", len);
    memcpy(&w, p, sizeof w);
    CHECK(w >> 32 == (uint64_t)src && (w & 0xffffffffu) < MANY_K, "8-byte record from %d: %llx",
          src, (unsigned long long)w);
    if (w >> 32 == (uint64_t)src && (w & 0xffffffffu) < MANY_K)
        st->seen8[(size_t)src * MANY_K + (w & 0xffffffffu)]++;
}

/* The chunk sizes of rank r's cr_async_many calls, one after the other; the
 * receivers replay them to know how many 8-byte records each source sent. */
static uint32_t many_chunk(uint64_t *rng, uint32_t sent)
{
    uint32_t k = 1 + (uint32_t)(cr_rng_next(rng) % 97);
    return k < MANY_K - sent ? k : MANY_K - sent;
}

static uint32_t many_chunks_of(int rank)
{
    uint64_t rng = cr_rng_hash64((uint64_t)rank + 1000);
    uint32_t chunks = 0;
    for (uint32_t sent = 0; sent < MANY_K; chunks++)
        sent += many_chunk(&rng, sent);
    return chunks;
}

static void many(const cr_config *cfg)
{
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, cfg);
    many_state st = {.seen = calloc((size_t)test_size * MANY_K, 1),
                     .seen8 = calloc((size_t)test_size * MANY_K, 1)};
    int h = cr_register(comm, on_many, &st), h8 = cr_register(comm, on_many8, &st);
    int dests[97];
    a2a_msg msgs[97];
    uint64_t rng = cr_rng_hash64((uint64_t)test_rank + 1);
    uint64_t rng_k = cr_rng_hash64((uint64_t)test_rank + 1000);
    uint32_t seq = 0, chunks = 0;
    while (seq < MANY_K) {
        uint32_t k = many_chunk(&rng_k, seq);
        for (uint32_t j = 0; j < k; j++, seq++) {
            dests[j] = (int)(cr_rng_next(&rng) % (uint64_t)test_size);
            msgs[j] = (a2a_msg){test_rank, dests[j], seq, a2a_check(test_rank, dests[j], seq)};
        }
        cr_async_many(comm, h, dests, msgs, sizeof *msgs, k);
        uint64_t w = (uint64_t)test_rank << 32 | chunks;
        cr_async(comm, (int)(chunks++ % (uint32_t)test_size), h8, &w, sizeof w);
    }
    cr_async_many(comm, h, dests, msgs, sizeof *msgs, 0); /* nothing, and no error */
    cr_barrier(comm);
    /* record seq of rank src went to the seq-th rank its generator drew */
    for (int src = 0; src < test_size; src++) {
        uint64_t rng_src = cr_rng_hash64((uint64_t)src + 1);
        for (size_t q = 0; q < MANY_K; q++) {
            uint8_t want = cr_rng_next(&rng_src) % (uint64_t)test_size == (uint64_t)test_rank;
            CHECK(st.seen[(size_t)src * MANY_K + q] == want, "record %zu from %d seen %d times", q,
                  src, st.seen[(size_t)src * MANY_K + q]);
        }
    }
    /* rank r received the 8-byte records number r, r + P, ... of every source */
    for (int src = 0; src < test_size; src++) {
        size_t sent = many_chunks_of(src);
        for (size_t c = 0; c < MANY_K; c++) {
            uint8_t want = c < sent && c % (size_t)test_size == (size_t)test_rank;
            CHECK(st.seen8[(size_t)src * MANY_K + c] == want,
                  "8-byte record %zu from %d seen %d times", c, src,
                  st.seen8[(size_t)src * MANY_K + c]);
        }
    }
    check_conservation(comm);
    cr_comm_destroy(comm);
    free(st.seen);
    free(st.seen8);
}

/* ---------------------------------------------------------------- cases */

#define FOR_EACH_CONFIG(scenario)                                                        \
    static void test_##scenario(void **state)                                            \
    {                                                                                    \
        (void)state;                                                                     \
        for (int i = 0; i < nconfigs; i++) {                                             \
            scenario(&configs[i].cfg);                                                   \
            if (test_errors && test_rank == 0)                                           \
                fprintf(stderr, "  (failing configuration: %s)\n", configs[i].name);     \
            verdict();                                                                   \
        }                                                                                \
    }

FOR_EACH_CONFIG(all_to_all)
FOR_EACH_CONFIG(chains)
FOR_EACH_CONFIG(hot_spot)
FOR_EACH_CONFIG(random_sizes)
FOR_EACH_CONFIG(many_barriers)
FOR_EACH_CONFIG(bcast)
FOR_EACH_CONFIG(mcast)
FOR_EACH_CONFIG(many)
FOR_EACH_CONFIG(large_from_handlers)

/* A comm with one handler that counts what each source sent: the fixture of the
 * scenarios below. close() checks conservation and gives the verdict. */
typedef struct counting {
    cr_comm *comm;
    hot_state st;
    int h;
} counting;

static void counting_open(counting *k, const cr_config *cfg, cr_handler_fn fn)
{
    k->comm = cr_comm_create(MPI_COMM_WORLD, cfg);
    k->st = (hot_state){.count = calloc((size_t)test_size, sizeof(uint64_t))};
    k->h = cr_register(k->comm, fn, &k->st);
}

static uint64_t counting_total(const counting *k)
{
    uint64_t got = 0;
    for (int r = 0; r < test_size; r++)
        got += k->st.count[r];
    return got;
}

/* Progress without a barrier until n messages have been handled here. */
static void counting_progress_until(counting *k, uint64_t n)
{
    while (counting_total(k) < n)
        cr_progress(k->comm);
}

static void counting_close(counting *k)
{
    cr_barrier(k->comm);
    check_conservation(k->comm);
    cr_comm_destroy(k->comm);
    free(k->st.count);
    verdict();
}

/* Only the timer may send: the buffers never fill and no barrier is called until
 * everything has arrived. */
static void test_timer_only_flushing(void **state)
{
    (void)state;
    cr_config cfg = configs[0].cfg;
    cfg.buffer_bytes = 1 << 30;
    cfg.buffer_cap_bytes = 1ULL << 36;
    cfg.flush_interval = 0.001;
    counting k;
    counting_open(&k, &cfg, on_hot);
    for (int d = 0; d < test_size; d++)
        for (int i = 0; i < 3; i++) {
            uint64_t v[2] = {(uint64_t)test_rank, 1};
            cr_async(k.comm, d, k.h, v, sizeof v);
        }
    counting_progress_until(&k, 3 * (uint64_t)test_size);
    cr_stats s;
    cr_stats_get(k.comm, &s);
    CHECK(s.flushes_size == 0 && s.flushes_cap == 0 && s.flushes_barrier == 0,
          "flushes other than by timer: size %llu cap %llu barrier %llu",
          (unsigned long long)s.flushes_size, (unsigned long long)s.flushes_cap,
          (unsigned long long)s.flushes_barrier);
    CHECK(s.flushes_timer >= 1, "no timer flush");
    counting_close(&k);
}

/* cr_flush sends without a barrier; progress alone then delivers. */
static void test_flush_then_progress(void **state)
{
    (void)state;
    cr_config cfg = configs[0].cfg;
    cfg.flush_interval = 0;
    cfg.buffer_bytes = 1 << 20;
    counting k;
    counting_open(&k, &cfg, on_hot);
    for (int d = 0; d < test_size; d++) {
        uint64_t v[2] = {(uint64_t)test_rank, 5};
        cr_async(k.comm, d, k.h, v, sizeof v);
    }
    cr_flush(k.comm);
    counting_progress_until(&k, (uint64_t)test_size);
    for (int r = 0; r < test_size; r++)
        CHECK(k.st.count[r] == 1, "got %llu from %d", (unsigned long long)k.st.count[r], r);
    counting_close(&k);
}

/* The cap sends the largest buffer first, and only as much as needed: 100 records
 * (one 8-byte run header + 800 bytes) to the next rank and 23 (8 + 184) to this rank
 * itself reach the 1000-byte cap on the last record; sending the 808 bytes brings the
 * total below 3/4 of the cap. On one rank both go to the rank itself, as one run of
 * 124 records (8 + 992 bytes), handed to its own loop without MPI. Under any
 * COURIER_ROUTE this test runs direct: routed records are larger. */
static void test_cap_flushes_largest_first(void **state)
{
    (void)state;
    cr_config cfg = configs[0].cfg;
    cfg.buffer_bytes = 4096;
    cfg.buffer_cap_bytes = 1000;
    cfg.flush_interval = 0;
    /* record sizes and buffer targets below assume unrouted records */
    cfg.route.kind = CR_ROUTE_DIRECT;
    counting k;
    counting_open(&k, &cfg, on_incr);
    uint64_t one = 1;
    int small = test_size == 1 ? 24 : 23;
    for (int i = 0; i < 100; i++)
        cr_async(k.comm, (test_rank + 1) % test_size, k.h, &one, sizeof one);
    for (int i = 0; i < small; i++)
        cr_async(k.comm, test_rank, k.h, &one, sizeof one);
    cr_stats s;
    cr_stats_get(k.comm, &s);
    CHECK(s.flushes_cap == 1 && s.flushes_size == 0 && s.mpi_sends + s.local_buffers == 1,
          "cap flushes %llu, size flushes %llu, sends %llu + %llu to itself",
          (unsigned long long)s.flushes_cap, (unsigned long long)s.flushes_size,
          (unsigned long long)s.mpi_sends, (unsigned long long)s.local_buffers);
    CHECK(test_size == 1 ? s.local_buffers == 1 && s.mpi_bytes_sent == 0
                         : s.mpi_sends == 1 && s.mpi_bytes_sent == 808u,
          "cap flush sent %llu bytes in %llu sends", (unsigned long long)s.mpi_bytes_sent,
          (unsigned long long)s.mpi_sends);
    CHECK(s.peak_buffered_bytes == 1000, "peak buffered %llu",
          (unsigned long long)s.peak_buffered_bytes);
    cr_barrier(k.comm);
    CHECK(sum_all(counting_total(&k)) == (uint64_t)(100 + small) * (uint64_t)test_size,
          "increments lost");
    counting_close(&k);
}

/* An empty barrier costs exactly one wave; after traffic, later empty barriers do too. */
static void test_empty_barriers_take_one_wave(void **state)
{
    (void)state;
    counting k;
    counting_open(&k, &configs[0].cfg, on_hot);
    for (int i = 0; i < 50; i++)
        cr_barrier(k.comm);
    cr_stats s;
    cr_stats_get(k.comm, &s);
    CHECK(s.barriers == 50 && s.barrier_epochs == 50, "%llu barriers took %llu waves",
          (unsigned long long)s.barriers, (unsigned long long)s.barrier_epochs);
    uint64_t v[2] = {(uint64_t)test_rank, 0};
    cr_async(k.comm, (test_rank + 1) % test_size, k.h, v, sizeof v);
    cr_barrier(k.comm);
    cr_stats_reset(k.comm);
    for (int i = 0; i < 10; i++)
        cr_barrier(k.comm);
    cr_stats_get(k.comm, &s);
    CHECK(s.barrier_epochs == 10, "10 empty barriers after traffic took %llu waves",
          (unsigned long long)s.barrier_epochs);
    counting_close(&k);
}

/* Two comms at once keep their traffic apart, whatever order they are used and
 * destroyed in. */
static void test_two_comms(void **state)
{
    (void)state;
    for (int order = 0; order < 2; order++) {
        counting a, b;
        counting_open(&a, &configs[0].cfg, on_incr);
        counting_open(&b, &configs[1].cfg, on_incr);
        uint64_t one = 1, two = 2;
        for (int d = 0; d < test_size; d++) {
            cr_async(a.comm, d, a.h, &one, sizeof one);
            cr_async(b.comm, d, b.h, &two, sizeof two);
            cr_async(b.comm, d, b.h, &two, sizeof two);
        }
        cr_barrier(order ? b.comm : a.comm);
        cr_barrier(order ? a.comm : b.comm);
        for (int r = 0; r < test_size; r++) {
            CHECK(a.st.count[r] == 1, "comm a got %llu from %d", (unsigned long long)a.st.count[r], r);
            CHECK(b.st.count[r] == 4, "comm b got %llu from %d", (unsigned long long)b.st.count[r], r);
        }
        counting_close(order ? &a : &b);
        counting_close(order ? &b : &a);
    }
}

/* COURIER_ROUTE=auto's second choice under MPI. Costs that make messages and bytes
 * dear (a file, as courier-calibrate writes one) let a heavy epoch move the comm to
 * larger buffers from 5 ranks on; after each barrier every rank runs what
 * tests/tune_expect.h works out from the model, cr_stats counts the moves, and every
 * record arrives once with its value. (At 8 ranks or fewer no route saves more in an
 * epoch than the move's reduction costs; the simulated test moves routes at 64.) */
static const double auto_epochs[] = {1, 3000, 3000, 1};
#define AUTO_NEPOCHS (int)(sizeof auto_epochs / sizeof auto_epochs[0])

static void test_auto_moves_between_epochs(void **state)
{
    (void)state;
    char path[96], err[256];
    snprintf(path, sizeof path, "/tmp/courier-test-tune-%d-%d", (int)getpid(), test_rank);
    /* seconds per message and microseconds per byte: the predictions dwarf the real
     * time, so the program's own time the comm learns stays 0, as tune_expect.h takes it */
    cr_tune_costs costs = {.alpha_on = 10e-3, .alpha_off = 10e-3, .beta_on = 1e-6,
                           .beta_off = 1e-6};
    cr_tune_shape shape;
    cr_tune_shape_here(&shape, 2);
    CHECK(cr_tune_costs_save(path, &costs, &shape, err, sizeof err) == 0, "%s", err);
    cr_config cfg;
    cr_config_init(&cfg);
    cr_route_parse("auto", &cfg.route, NULL, 0);
    cfg.buffer_auto = true;
    cfg.node_size = 2;
    snprintf(cfg.tune_file, sizeof cfg.tune_file, "%s", path);
    counting k;
    counting_open(&k, &cfg, on_incr);
    cr_route route[AUTO_NEPOCHS];
    size_t buffer[AUTO_NEPOCHS];
    int moves = tune_expect_epochs(cr_comm_layout(k.comm), cfg.buffer_bytes,
                                   cfg.buffer_cap_bytes, &costs, auto_epochs, 8, AUTO_NEPOCHS,
                                   route, buffer);
    CHECK(moves >= (test_size >= 5 ? 1 : 0), "the model predicts %d moves at %d ranks", moves,
          test_size);
    uint64_t sent = 0;
    for (int e = 0; e < AUTO_NEPOCHS; e++) {
        uint64_t one = 1;
        for (int n = 0; n < (int)auto_epochs[e]; n++)
            for (int i = 1; i < test_size; i++)
                cr_async(k.comm, (test_rank + i) % test_size, k.h, &one, sizeof one);
        sent += (uint64_t)auto_epochs[e];
        cr_barrier(k.comm);
        const cr_config *now = cr_comm_config(k.comm);
        CHECK(now->route.kind == route[e].kind && now->buffer_bytes == buffer[e],
              "after epoch %d: route %d with %zu-byte buffers, expected route %d with %zu", e,
              (int)now->route.kind, now->buffer_bytes, (int)route[e].kind, buffer[e]);
        for (int r = 0; r < test_size; r++)
            CHECK(k.st.count[r] == (r == test_rank ? 0 : sent), "after epoch %d, %llu from %d",
                  e, (unsigned long long)k.st.count[r], r);
    }
    cr_stats s;
    cr_stats_get(k.comm, &s);
    CHECK(s.tune_switches == (uint64_t)moves, "%llu moves counted, %d expected",
          (unsigned long long)s.tune_switches, moves);
    counting_close(&k);
    remove(path);
}

/* cr_async copies the payload before it can run any handler: here the handler
 * scribbles over the very buffer the main loop passes to cr_async, and every record
 * must still arrive with the value it had at the call. A buffer that takes one
 * 24-byte record but not two, and one send slot, make cr_async send the previous
 * record and wait for a slot (running handlers) before it can append this one. */
static uint64_t shared_payload[2];
static uint64_t copy_sum, copy_count;
static void on_copied(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    (void)comm, (void)src, (void)len, (void)user;
    uint64_t v[2];
    memcpy(v, p, sizeof v);
    CHECK(v[1] == ~v[0], "record %llu arrived changed", (unsigned long long)v[0]);
    copy_sum += v[0];
    copy_count++;
    shared_payload[0] = shared_payload[1] = 0xdeadbeef; /* the caller's buffer, mid-send */
}

static void test_payload_copied_before_handlers(void **state)
{
    (void)state;
    cr_config cfg = configs[0].cfg;
    cfg.buffer_bytes = 40;
    cfg.max_inflight = 1;
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, &cfg);
    copy_sum = copy_count = 0;
    int h = cr_register(comm, on_copied, NULL);
    const uint64_t n = 400;
    for (uint64_t i = 0; i < n; i++) {
        shared_payload[0] = (uint64_t)test_rank * n + i;
        shared_payload[1] = ~shared_payload[0];
        cr_async(comm, (test_rank + 1 + (int)(i % 3)) % test_size, h, shared_payload,
                 sizeof shared_payload);
    }
    cr_barrier(comm);
    uint64_t total = n * (uint64_t)test_size;
    CHECK(sum_all(copy_count) == total, "%llu records handled, expected %llu",
          (unsigned long long)sum_all(copy_count), (unsigned long long)total);
    CHECK(sum_all(copy_sum) == total * (total - 1) / 2, "sum of values %llu, expected %llu",
          (unsigned long long)sum_all(copy_sum), (unsigned long long)(total * (total - 1) / 2));
    /* the same for broadcasts: every rank gets every value as it was at the call */
    copy_sum = copy_count = 0;
    const uint64_t nb = 40;
    for (uint64_t i = 0; i < nb; i++) {
        shared_payload[0] = (uint64_t)test_rank * nb + i;
        shared_payload[1] = ~shared_payload[0];
        cr_async_bcast(comm, h, shared_payload, sizeof shared_payload);
    }
    cr_barrier(comm);
    uint64_t values = nb * (uint64_t)test_size, p = (uint64_t)test_size;
    CHECK(sum_all(copy_count) == values * p, "%llu broadcast records handled, expected %llu",
          (unsigned long long)sum_all(copy_count), (unsigned long long)(values * p));
    CHECK(sum_all(copy_sum) == p * (values * (values - 1) / 2), "broadcast sum of values %llu",
          (unsigned long long)sum_all(copy_sum));
    check_conservation(comm);
    cr_comm_destroy(comm);
    verdict();
}

/* ---------------------------------------------------------------- batch handlers */

#define BATCH_K 3000

typedef struct batch_state {
    uint8_t *seen; /* [src][seq], over both handlers */
    uint64_t calls, records;
} batch_state;

/* Checks one record as on_a2a does, by the sender cr_batch_src reports. */
static void count_batch_record(cr_comm *comm, batch_state *st, const void *p, int src)
{
    a2a_msg m;
    memcpy(&m, p, sizeof m);
    CHECK((uintptr_t)p % 8 == 0, "payload not 8-byte aligned");
    CHECK(m.src == src && m.dst == cr_comm_rank(comm) && m.seq < BATCH_K,
          "record from %d (says %d) for %d, seq %u", src, m.src, m.dst, m.seq);
    CHECK(m.check == a2a_check(m.src, m.dst, m.seq), "bad checksum");
    if (m.src == src && m.seq < BATCH_K)
        st->seen[(size_t)src * BATCH_K + m.seq]++;
    st->records++;
}

static void on_batch(cr_comm *comm, const cr_batch *b, void *user)
{
    batch_state *st = user;
    st->calls++;
    CHECK(b->count >= 1 && b->len == sizeof(a2a_msg) && b->stride >= b->len &&
              b->stride % 8 == 0,
          "batch of %zu records of %zu bytes, stride %zu", b->count, b->len, b->stride);
    for (size_t k = 0; k < b->count; k++)
        count_batch_record(comm, st, cr_batch_payload(b, k), cr_batch_src(b, k));
}

static void on_single(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    CHECK(len == sizeof(a2a_msg), "length %zu", len);
    count_batch_record(comm, user, p, src);
}

/* A batch handler gets every record once, with its true sender (under routes, the
 * origin in each record's route block), in batches: with 64 KiB buffers, thousands
 * of records to a rank arrive in far fewer calls than records. Every seventh record
 * goes to an ordinary handler instead, which splits the runs. */
static void batch_handlers(const named_config *nc, bool count_calls)
{
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, &nc->cfg);
    batch_state batched = {.seen = calloc((size_t)test_size * BATCH_K, 1)};
    int hb = cr_register_type(comm, &(cr_handler_type){.batch = on_batch}, &batched);
    int hs = cr_register_type(comm, &(cr_handler_type){.fn = on_single}, &batched);
    for (uint32_t seq = 0; seq < BATCH_K; seq++)
        for (int d = 0; d < test_size; d++) {
            int dst = (test_rank + d) % test_size;
            a2a_msg m = {test_rank, dst, seq, a2a_check(test_rank, dst, seq)};
            cr_async(comm, dst, seq % 7 == 3 ? hs : hb, &m, sizeof m);
        }
    cr_barrier(comm);
    check_each_once(batched.seen, BATCH_K, "record");
    cr_stats s;
    cr_stats_get(comm, &s);
    CHECK(s.batches == batched.calls, "%llu batches counted, %llu calls",
          (unsigned long long)s.batches, (unsigned long long)batched.calls);
    uint64_t calls = sum_all(batched.calls), records = sum_all(batched.records);
    /* 6 of every 7 records to a destination in a row go to the batch handler; with
     * one buffer per destination, sent only by the barrier, that makes about one
     * call per 6 records, whatever the timing */
    if (count_calls)
        CHECK(calls * 4 <= records, "%llu batch calls for %llu records",
              (unsigned long long)calls, (unsigned long long)records);
    check_conservation(comm);
    cr_comm_destroy(comm);
    free(batched.seen);
}

static void test_batch_handlers(void **state)
{
    (void)state;
    for (int i = 0; i < nconfigs; i++)
        batch_handlers(&configs[i], false);
    /* The number of calls depends on how full buffers are when they leave: count it
     * where only the barrier sends them (direct route, no timer, 3000 records of 16
     * bytes to each rank fit in one 64 KiB buffer). */
    named_config whole = configs[0];
    whole.cfg.route.kind = CR_ROUTE_DIRECT;
    whole.cfg.flush_interval = 0;
    whole.cfg.buffer_bytes = 64 << 10;
    batch_handlers(&whole, true);
    verdict();
}

/* ---------------------------------------------------------------- messages to self */

typedef struct self_state {
    int h;
    int depth;       /* handlers of this kind running now */
    uint64_t handled;
    uint64_t nested; /* a handler that started while another ran */
} self_state;

static void on_self(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    self_state *st = user;
    if (++st->depth > 1)
        st->nested++;
    CHECK(src == cr_comm_rank(comm) && len == sizeof(uint32_t), "from %d, %zu bytes", src, len);
    uint32_t left;
    memcpy(&left, p, sizeof left);
    if (left > 0) {
        left--;
        cr_async(comm, cr_comm_rank(comm), st->h, &left, sizeof left);
    }
    st->handled++;
    st->depth--;
}

/* Records a rank sends itself, from user code and from handlers, are handled by its
 * own loop: exactly once, never inside a running handler, never through MPI (no MPI
 * send at all, under any route), and covered by the barrier. */
static void self_messages(const named_config *nc)
{
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, &nc->cfg);
    self_state st = {0};
    st.h = cr_register(comm, on_self, &st);
    const uint32_t chains = 300, length = 20;
    for (uint32_t i = 0; i < chains; i++)
        cr_async(comm, test_rank, st.h, &length, sizeof length);
    cr_barrier(comm);
    CHECK(st.handled == chains * (length + 1), "%s: %llu handled, expected %u", nc->name,
          (unsigned long long)st.handled, chains * (length + 1));
    CHECK(st.nested == 0, "%s: %llu handlers ran inside another", nc->name,
          (unsigned long long)st.nested);
    cr_stats s;
    cr_stats_get(comm, &s);
    CHECK(s.mpi_sends == 0 && s.mpi_recvs == 0 && s.local_buffers >= 1,
          "%s: %llu MPI sends, %llu receives, %llu buffers to itself", nc->name,
          (unsigned long long)s.mpi_sends, (unsigned long long)s.mpi_recvs,
          (unsigned long long)s.local_buffers);
    check_conserved(comm, (uint64_t)test_size * chains * (length + 1));
    cr_comm_destroy(comm);
}

static void test_self_messages(void **state)
{
    (void)state;
    for (int i = 0; i < nconfigs; i++)
        self_messages(&configs[i]);
    verdict();
}

int main(int argc, char **argv)
{
    setup_configs();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_to_all),
        cmocka_unit_test(test_chains),
        cmocka_unit_test(test_hot_spot),
        cmocka_unit_test(test_random_sizes),
        cmocka_unit_test(test_many_barriers),
        cmocka_unit_test(test_bcast),
        cmocka_unit_test(test_mcast),
        cmocka_unit_test(test_many),
        cmocka_unit_test(test_large_from_handlers),
        cmocka_unit_test(test_timer_only_flushing),
        cmocka_unit_test(test_flush_then_progress),
        cmocka_unit_test(test_empty_barriers_take_one_wave),
        cmocka_unit_test(test_cap_flushes_largest_first),
        cmocka_unit_test(test_two_comms),
        cmocka_unit_test(test_auto_moves_between_epochs),
        cmocka_unit_test(test_payload_copied_before_handlers),
        cmocka_unit_test(test_batch_handlers),
        cmocka_unit_test(test_self_messages),
    };
    return RUN_MPI_TESTS(argc, argv, tests);
}
