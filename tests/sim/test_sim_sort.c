/* cr_sort (include/courier/sort.h) on the simulated transport: every case of
 * tests/sort_scenarios.h at 1 to 64 virtual ranks, under the direct route and the
 * hypercube with small buffers, many scheduler seeds, and ranks of unequal speeds
 * that stall, so that a fast rank's samples, buckets and final records arrive while
 * a slow one still waits in the collective before that step. Each run checks order,
 * balance, stability and the multiset of records on every virtual rank.
 * SIM_SEEDS and SIM_MAX_P bound the work, as in tests/sim/test_sim.c. */
#include "../sort_scenarios.h"

#include <courier.h>
#include <courier/sim.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

static int env_int(const char *name, int fallback)
{
    const char *s = getenv(name);
    return s && atoi(s) > 0 ? atoi(s) : fallback;
}

typedef struct sim_job {
    uint64_t base;
    long fails;
} sim_job;

static void run_rank(cr_comm *comm, void *user)
{
    sim_job *j = user;
    long f = st_all(comm, j->base);
    j->fails += f; /* one process: the virtual ranks add up */
}

static void run_world(int p, uint64_t seed, const char *route, bool unequal)
{
    cr_config cfg;
    cr_config_init(&cfg);
    char err[200];
    if (cr_route_parse(route, &cfg.route, err, sizeof err))
        fail_msg("%s", err);
    cfg.node_size = 2;
    cfg.buffer_bytes = 768;
    cr_sim_opts o = {.ranks = p, .seed = seed, .cfg = &cfg};
    if (unequal) {
        o.max_slowness = 10;
        o.stall_chance = 0.05;
    }
    sim_job j = {.base = 40};
    if (cr_sim_run(&o, run_rank, &j, NULL, err, sizeof err))
        fail_msg("P=%d seed %llu route %s: %s", p, (unsigned long long)seed, route, err);
    if (j.fails)
        fail_msg("P=%d seed %llu route %s%s: %ld checks failed", p, (unsigned long long)seed,
                 route, unequal ? " (unequal speeds)" : "", j.fails);
}

static void test_sort_sim(void **state)
{
    (void)state;
    static const int ps[] = {1, 2, 3, 5, 8, 13, 16, 32, 64, 256};
    int seeds = env_int("SIM_SEEDS", 4), max_p = env_int("SIM_MAX_P", 64);
    for (size_t i = 0; i < sizeof ps / sizeof ps[0] && ps[i] <= max_p; i++)
        for (int seed = 1; seed <= seeds; seed++) {
            run_world(ps[i], (uint64_t)seed, seed % 2 ? "direct" : "hypercube", seed > 1);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_sort_sim)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
