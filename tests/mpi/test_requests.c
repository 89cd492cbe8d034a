/* Requests with replies (include/courier/dedup.h) under mpirun, under every route
 * with virtual nodes of 2 and small buffers: every request gets exactly one right
 * reply, merged or not; the coalescing rule; nothing waits over a barrier; the
 * counters balance. The scenarios are shared with the simulated transport
 * (tests/requests_scenarios.h). */
#include "harness.h"

#include "../requests_scenarios.h"

#include <courier.h>

#include <stdlib.h>

static const char *const routes[] = {"direct", "nr", "nlnr", "grid", "hypercube"};
#define NROUTES (sizeof routes / sizeof routes[0])

/* Small buffers so that requests leave in many buffers and meet at forwarding ranks;
 * no flush timer, so a buffer leaves only by size, cap or a flush (the coalescing
 * rule's test needs that). */
static cr_config config_for(const char *route)
{
    cr_config cfg;
    config_on_route(&cfg, route, 256);
    cfg.flush_interval = 0;
    return cfg;
}

typedef long (*scenario)(cr_comm *comm, int route);

static void each_route(scenario run)
{
    for (size_t rt = 0; rt < NROUTES; rt++) {
        cr_config cfg = config_for(routes[rt]);
        cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, &cfg);
        cr_stats_reset(comm);
        req_fails = 0;
        run(comm, (int)rt);
        cr_dedup_stats st;
        cr_dedup_stats_get(comm, &st);
        cr_dedup_stats sum = {
            .requests = sum_all(st.requests),
            .requests_served = sum_all(st.requests_served),
            .requests_merged_at_source = sum_all(st.requests_merged_at_source),
            .requests_merged_at_hops = sum_all(st.requests_merged_at_hops),
            .requests_coalesced = sum_all(st.requests_coalesced),
            .replies_fanned_out = sum_all(st.replies_fanned_out),
        };
        req_check_totals(comm, &sum);
        check_conserved(comm, UINT64_MAX);
        if (req_fails)
            fprintf(stderr, "rank %d: route %s failed\n", test_rank, routes[rt]);
        test_errors += req_fails;
        cr_comm_destroy(comm);
    }
    verdict();
}

static long overload_on(cr_comm *c, int rt)
{
    (void)rt;
    long f = req_overload(c, 300, 3, 1);
    cr_dedup_stats st;
    cr_dedup_stats_get(c, &st);
    /* rank 0 serves at most what was asked of it; the rest merged on the way */
    uint64_t asked = sum_all(st.requests), served = sum_all(st.requests_served);
    REQ_CHECK(c, served <= asked, "served %llu of %llu", (unsigned long long)served,
              (unsigned long long)asked);
    REQ_CHECK(c, asked == (uint64_t)test_size * 900, "%llu requests", (unsigned long long)asked);
    return f;
}

static long overload_off(cr_comm *c, int rt)
{
    (void)rt;
    long f = req_overload(c, 300, 3, 0);
    cr_dedup_stats st;
    cr_dedup_stats_get(c, &st);
    REQ_CHECK(c, sum_all(st.requests_coalesced) == 0, "coalesced with coalescing off");
    return f;
}

static long shapes(cr_comm *c, int rt)
{
    (void)rt;
    return req_shapes(c, cr_comm_config(c)->buffer_bytes, 12);
}

static long chains(cr_comm *c, int rt)
{
    (void)rt;
    return req_chains(c, 40, 12);
}

static long coalesce_on(cr_comm *c, int rt)
{
    (void)rt;
    return req_coalesce_rule(c, 24, 1);
}

static long coalesce_off(cr_comm *c, int rt)
{
    (void)rt;
    return req_coalesce_rule(c, 24, 0);
}

static long coalesce_many(cr_comm *c, int rt)
{
    (void)rt;
    return req_coalesce_many(c, 2048, 4);
}

static long rest(cr_comm *c, int rt)
{
    (void)rt;
    return req_rest(c, 5000, 600);
}

static long waiting_bound(cr_comm *c, int rt)
{
    (void)rt;
    return req_waiting_bound(c, 20000);
}

static long direct(cr_comm *c, int rt)
{
    (void)rt;
    return req_direct(c, 3000, false, 0, false) + req_direct(c, 3000, true, 0, false) +
           req_direct(c, 3000, true, 100, false) + req_direct(c, 3000, false, 0, true) +
           req_direct(c, 3000, true, 100, true);
}

static long route_move(cr_comm *c, int rt)
{
    (void)rt;
    return req_route_move(c, 3000);
}

static long many(cr_comm *c, int rt)
{
    (void)rt;
    return req_many(c, 6000, false) + req_many(c, 6000, true);
}

static long phases(cr_comm *c, int rt)
{
    (void)rt;
    return req_phases(c, 4, 50);
}

/* The request counters are the dedup module's: cr_stats_reset zeroes them, and so
 * does cr_dedup_stats_reset; the print is collective and prints every counter. */
static long counters_reset(cr_comm *c, int rt)
{
    (void)rt;
    long f = req_overload(c, 50, 2, 1);
    cr_dedup_stats st;
    cr_dedup_stats_get(c, &st);
    REQ_CHECK(c, sum_all(st.requests) == (uint64_t)test_size * 100, "%llu requests before reset",
              (unsigned long long)sum_all(st.requests));
    FILE *sink = fopen("/dev/null", "w");
    REQ_CHECK(c, sink != NULL, "open /dev/null");
    if (sink) {
        cr_dedup_stats_print(c, sink);
        fclose(sink);
    }
    cr_stats_reset(c);
    cr_dedup_stats_get(c, &st);
    REQ_CHECK(c, st.requests == 0 && st.requests_served == 0 && st.replies_fanned_out == 0 &&
                     st.request_bytes_saved == 0,
              "cr_stats_reset left request counters: %llu requests",
              (unsigned long long)st.requests);
    f += req_overload(c, 50, 2, 1);
    cr_dedup_stats_reset(c);
    cr_dedup_stats_get(c, &st);
    REQ_CHECK(c, st.requests == 0 && st.requests_served == 0, "cr_dedup_stats_reset left %llu",
              (unsigned long long)st.requests);
    return f;
}

static void test_counters_reset(void **state) { (void)state; each_route(counters_reset); }
static void test_overload(void **state) { (void)state; each_route(overload_on); }
static void test_overload_no_coalescing(void **state) { (void)state; each_route(overload_off); }
static void test_reply_shapes(void **state) { (void)state; each_route(shapes); }
static void test_requests_from_handlers(void **state) { (void)state; each_route(chains); }
static void test_coalescing_rule(void **state) { (void)state; each_route(coalesce_on); }
static void test_coalescing_off(void **state) { (void)state; each_route(coalesce_off); }
static void test_coalescing_many(void **state) { (void)state; each_route(coalesce_many); }
static void test_never_across_barrier(void **state) { (void)state; each_route(phases); }
static void test_rest_when_nothing_merges(void **state) { (void)state; each_route(rest); }
static void test_direct_requests(void **state) { (void)state; each_route(direct); }
static void test_waiting_bound(void **state) { (void)state; each_route(waiting_bound); }
static void test_route_move(void **state) { (void)state; each_route(route_move); }
static void test_request_many(void **state) { (void)state; each_route(many); }

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overload),
        cmocka_unit_test(test_rest_when_nothing_merges),
        cmocka_unit_test(test_waiting_bound),
        cmocka_unit_test(test_request_many),
        cmocka_unit_test(test_direct_requests), cmocka_unit_test(test_route_move),
        cmocka_unit_test(test_counters_reset),
        cmocka_unit_test(test_overload_no_coalescing),
        cmocka_unit_test(test_reply_shapes),
        cmocka_unit_test(test_requests_from_handlers),
        cmocka_unit_test(test_coalescing_rule),
        cmocka_unit_test(test_coalescing_off),
        cmocka_unit_test(test_coalescing_many),
        cmocka_unit_test(test_never_across_barrier),
    };
    return RUN_MPI_TESTS(argc, argv, tests);
}
