/* cr_sparse_exchange under mpirun: every pattern under every protocol. Each rank can
 * recompute what every rank sends, so it knows exactly which messages, in which
 * order and with which bytes, it must receive; results are compared in full. */
#include "harness.h"

#include "common/rng.h"

#include <courier.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const cr_sx_protocol protocols[] = {CR_SX_NBX, CR_SX_PEX, CR_SX_PCX, CR_SX_DEFAULT};
#define NPROTOCOLS (sizeof protocols / sizeof protocols[0])

typedef enum pattern {
    P_NEIGHBOURS, /* k random distinct neighbours, random sizes */
    P_NOBODY,     /* no rank sends */
    P_HALF_EMPTY, /* even ranks send nothing */
    P_SELF,       /* to itself and to the next rank */
    P_LARGE,      /* 1.5 MiB to the next rank, 64 KiB + 1 to itself */
    P_ALL_TO_ONE, /* two messages each to rank 0, one of them empty */
    P_REPEATS,    /* several messages to the same ranks, in a fixed order */
} pattern;

typedef struct outgoing {
    size_t n;
    int dests[64];
    size_t sizes[64];
} outgoing;

static uint64_t message_seed(int src, size_t i, uint64_t round)
{
    return cr_hash64(((uint64_t)src << 40) ^ ((uint64_t)i << 16) ^ (round * 0x9e3779b97f4a7c15ULL));
}

/* What rank `src` sends in this pattern and round: the same answer on every rank. */
static void plan(pattern p, int src, int size, uint64_t round, outgoing *o)
{
    uint64_t s = message_seed(src, 999, round) ^ (uint64_t)p;
    o->n = 0;
#define ADD(d, len) (o->dests[o->n] = (d), o->sizes[o->n] = (len), o->n++)
    switch (p) {
    case P_NEIGHBOURS: {
        int k = size < 3 ? size : 3;
        int start = (int)cr_bounded(cr_splitmix64(&s), (uint64_t)size);
        int step = 1 + (int)cr_bounded(cr_splitmix64(&s), (uint64_t)(size > 1 ? size - 1 : 1));
        /* distinct: walk with a step; repeats of a rank are dropped */
        for (int j = 0, d = start; j < k; j++, d = (d + step) % size) {
            bool seen = false;
            for (size_t q = 0; q < o->n; q++)
                seen |= o->dests[q] == d;
            if (!seen)
                ADD(d, (size_t)cr_bounded(cr_splitmix64(&s), 300));
        }
        break;
    }
    case P_NOBODY: break;
    case P_HALF_EMPTY:
        if (src % 2)
            for (int j = 0; j < 2; j++)
                ADD((int)cr_bounded(cr_splitmix64(&s), (uint64_t)size), 1 + (size_t)j * 17);
        break;
    case P_SELF:
        ADD(src, 40);
        ADD((src + 1) % size, 24);
        break;
    case P_LARGE:
        ADD((src + 1) % size, (size_t)3 << 19);
        ADD(src, (64 << 10) + 1);
        break;
    case P_ALL_TO_ONE:
        ADD(0, 8 + (size_t)src);
        ADD(0, 0);
        break;
    case P_REPEATS:
        for (int j = 0; j < 7; j++)
            ADD((src + j / 2) % size, (size_t)(j * 13) % 50);
        break;
    }
#undef ADD
}

static void fill(uint8_t *buf, size_t len, uint64_t seed)
{
    for (size_t b = 0; b < len; b += 8) {
        uint64_t v = cr_splitmix64(&seed);
        memcpy(buf + b, &v, len - b < 8 ? len - b : 8);
    }
}

/* Run one exchange of pattern p and compare the result with the expected list. */
static void exchange_and_check(cr_comm *comm, cr_sx_protocol proto, pattern p, uint64_t round)
{
    outgoing o = {0};
    plan(p, test_rank, test_size, round, &o);
    void *bufs[64] = {0};
    for (size_t i = 0; i < o.n; i++) {
        bufs[i] = malloc(o.sizes[i] ? o.sizes[i] : 1);
        fill(bufs[i], o.sizes[i], message_seed(test_rank, i, round));
    }
    cr_sx_result r;
    cr_sparse_exchange_with(comm, proto, o.n, o.dests, (const void *const *)bufs, o.sizes, &r);

    size_t k = 0, bytes = 0;
    uint8_t *want = malloc((size_t)2 << 20);
    for (int src = 0; src < test_size; src++) {
        outgoing theirs;
        plan(p, src, test_size, round, &theirs);
        for (size_t i = 0; i < theirs.n; i++) {
            if (theirs.dests[i] != test_rank)
                continue;
            bytes += theirs.sizes[i];
            if (k >= r.count) {
                k++;
                continue;
            }
            fill(want, theirs.sizes[i], message_seed(src, i, round));
            CHECK(r.sources[k] == src && r.sizes[k] == theirs.sizes[i] &&
                      memcmp(r.data[k], want, theirs.sizes[i]) == 0,
                  "%s pattern %d: message %zu is from %d with %zu bytes, expected %zu bytes of "
                  "message %zu from %d",
                  cr_sx_protocol_name(proto), p, k, r.sources[k], r.sizes[k], theirs.sizes[i], i,
                  src);
            k++;
        }
    }
    CHECK(r.count == k, "%s pattern %d: %zu messages received, expected %zu",
          cr_sx_protocol_name(proto), p, r.count, k);
    CHECK(r.total_bytes == bytes, "%s pattern %d: %zu bytes received, expected %zu",
          cr_sx_protocol_name(proto), p, r.total_bytes, bytes);
    free(want);
    cr_sx_result_free(&r);
    CHECK(r.count == 0 && r.data == NULL, "cr_sx_result_free leaves an empty result");
    for (size_t i = 0; i < o.n; i++)
        free(bufs[i]);
}

static cr_comm *open_comm(void)
{
    cr_config cfg;
    cr_config_init(&cfg);
    char err[256];
    if (cr_config_from_env(&cfg, err, sizeof err))
        fprintf(stderr, "%s\n", err), exit(2);
    return cr_comm_create(MPI_COMM_WORLD, &cfg);
}

static void run_pattern(pattern p)
{
    cr_comm *comm = open_comm();
    for (size_t q = 0; q < NPROTOCOLS; q++)
        exchange_and_check(comm, protocols[q], p, q);
    cr_comm_destroy(comm);
    verdict();
}

static void test_neighbours(void **state) { (void)state; run_pattern(P_NEIGHBOURS); }
static void test_nobody_sends(void **state) { (void)state; run_pattern(P_NOBODY); }
static void test_half_the_ranks_empty(void **state) { (void)state; run_pattern(P_HALF_EMPTY); }
static void test_self_messages(void **state) { (void)state; run_pattern(P_SELF); }
static void test_large_messages(void **state) { (void)state; run_pattern(P_LARGE); }
static void test_all_to_one(void **state) { (void)state; run_pattern(P_ALL_TO_ONE); }
static void test_repeated_destinations(void **state) { (void)state; run_pattern(P_REPEATS); }

/* Back-to-back exchanges with different protocols and patterns: a fast rank's next
 * exchange must not leak into a slow rank's current one (the two-tag rule). */
static void test_back_to_back(void **state)
{
    (void)state;
    cr_comm *comm = open_comm();
    for (uint64_t round = 0; round < 24; round++) {
        pattern p = (pattern)(round % 7 == 4 ? P_NEIGHBOURS : round % 7);
        exchange_and_check(comm, protocols[round % 3], p, round + 100);
    }
    cr_comm_destroy(comm);
    verdict();
}

/* Mailbox traffic sent before an exchange is handled while the exchange waits, and
 * neither disturbs the other. */
static uint64_t handled_sum;
static void on_value(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm;
    (void)src;
    (void)len;
    (void)user;
    uint64_t v;
    memcpy(&v, payload, sizeof v);
    handled_sum += v;
}

static void test_with_async_traffic(void **state)
{
    (void)state;
    cr_comm *comm = open_comm();
    /* Reset before cr_register: it runs the event loop, and a faster rank that has
     * already returned from it may be sending to this one. */
    handled_sum = 0;
    cr_stats_reset(comm);
    int h = cr_register(comm, on_value, NULL);
    for (size_t q = 0; q < 3; q++) {
        for (int i = 0; i < 5000; i++) {
            uint64_t v = (uint64_t)test_rank * 5000 + (uint64_t)i;
            cr_async(comm, i % test_size, h, &v, sizeof v);
        }
        exchange_and_check(comm, protocols[q], P_NEIGHBOURS, 200 + q);
    }
    cr_barrier(comm);
    uint64_t n = 5000ULL * (uint64_t)test_size;
    uint64_t expect = 3 * (n * (n - 1) / 2);
    uint64_t got = sum_all(handled_sum);
    CHECK(got == expect, "handled sum %llu, expected %llu", (unsigned long long)got,
          (unsigned long long)expect);
    check_conserved(comm, 3 * n);
    cr_comm_destroy(comm);
    verdict();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_neighbours),
        cmocka_unit_test(test_nobody_sends),
        cmocka_unit_test(test_half_the_ranks_empty),
        cmocka_unit_test(test_self_messages),
        cmocka_unit_test(test_large_messages),
        cmocka_unit_test(test_all_to_one),
        cmocka_unit_test(test_repeated_destinations),
        cmocka_unit_test(test_back_to_back),
        cmocka_unit_test(test_with_async_traffic),
    };
    return RUN_MPI_TESTS(argc, argv, tests);
}
