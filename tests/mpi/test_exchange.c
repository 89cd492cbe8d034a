/* cr_nbx_exchange under mpirun: every pattern under every protocol
 * (tests/exchange_scenarios.h). */
#include "harness.h"

#include "../exchange_scenarios.h"

#include <courier.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static cr_comm *open_comm(void)
{
    cr_config cfg;
    cr_config_init(&cfg);
    char err[256];
    if (cr_config_from_env(&cfg, err, sizeof err))
        fprintf(stderr, "%s\n", err), exit(2);
    return cr_comm_create(MPI_COMM_WORLD, &cfg);
}

static void run_pattern(sx_pattern p)
{
    cr_comm *comm = open_comm();
    for (size_t q = 0; q < NPROTOCOLS; q++)
        CHECK(exchange_and_check(comm, protocols[q], p, q) == 0, "pattern %d, %s", p,
              cr_nbx_protocol_name(protocols[q]));
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
        sx_pattern p = (sx_pattern)(round % 7 == 4 ? P_NEIGHBOURS : round % 7);
        CHECK(exchange_and_check(comm, protocols[round % 3], p, round + 100) == 0, "round %llu",
              (unsigned long long)round);
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
        CHECK(exchange_and_check(comm, protocols[q], P_NEIGHBOURS, 200 + q) == 0, "with traffic");
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
