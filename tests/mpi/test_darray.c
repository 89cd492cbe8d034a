/* The distributed array (include/courier/darray.h) under mpirun: lock-step steps
 * against a sequential model, under every route and aggregation and several merge
 * rules; hash and sort give identical arrays; the overload pattern reaches the owner
 * once per index when aggregating; the asynchronous mode's writes, reads and visits. */
#include "harness.h"

#include "../darray_scenarios.h"
#include "courier/rng.h"

#include <courier.h>

#include <stdlib.h>
#include <string.h>

static cr_comm *make_comm(void)
{
    cr_config cfg;
    cr_config_init(&cfg);
    return cr_comm_create(MPI_COMM_WORLD, &cfg);
}

static bool same_stats(const cr_darray_stats *x, const cr_darray_stats *y)
{
    return x->steps == y->steps && x->requests == y->requests &&
           x->merged_local == y->merged_local && x->merged_hops == y->merged_hops &&
           x->reached_owner == y->reached_owner && x->messages == y->messages &&
           x->bytes == y->bytes;
}

/* Every rule, route and aggregation against the model; hash and sort leave the same
 * array; the mailbox exchange gives the same array and the same statistics as the
 * collective one. */
static void test_lockstep_against_model(void **state)
{
    (void)state;
    for (int rule = 0; rule < NRULES; rule++)
        for (int route = 0; route < NROUTES; route++) {
            uint64_t sums[NAGGS];
            for (int agg = 0; agg < NAGGS; agg++) {
                cr_comm *comm = make_comm();
                cr_darray_stats coll, mbox;
                darray_fails = 0;
                sums[agg] = darray_run_steps(comm, rule, route, agg,
                                             CR_DARRAY_EXCHANGE_COLLECTIVE, &coll);
                uint64_t again = darray_run_steps(comm, rule, route, agg,
                                                  CR_DARRAY_EXCHANGE_MAILBOX, &mbox);
                test_errors += darray_fails;
                CHECK(again == sums[agg], "rule %d, %s, aggregation %d: the mailbox exchange "
                      "leaves another array", rule, darray_routes[route], agg);
                CHECK(same_stats(&coll, &mbox), "rule %d, %s, aggregation %d: the exchanges "
                      "count differently (messages %llu / %llu, reached %llu / %llu)", rule,
                      darray_routes[route], agg, (unsigned long long)coll.messages,
                      (unsigned long long)mbox.messages, (unsigned long long)coll.reached_owner,
                      (unsigned long long)mbox.reached_owner);
                cr_comm_destroy(comm);
            }
            CHECK(sums[0] == sums[1] && sums[1] == sums[2] && sums[2] == sums[3],
                  "rule %d, %s: the aggregations leave different arrays", rule,
                  darray_routes[route]);
        }
    verdict();
}

/* The size of the last dimension of a lock-step route at P ranks, as
 * include/courier/darray.h defines the routes: direct P; grid [P/b, b] with b the
 * largest divisor of P not above its square root; hypercube P's prime factors in
 * ascending order. Dimensions of 1 do not count. */
static int last_dim(int route, int p)
{
    if (route == 0 || p == 1)
        return p;
    if (route == 1) {
        int b = 1;
        for (int f = 1; f * f <= p; f++)
            if (p % f == 0)
                b = f;
        return b > 1 ? b : p;
    }
    int largest = 1, rest = p;
    for (int f = 2; rest > 1; f++)
        while (rest % f == 0)
            largest = f, rest /= f;
    return largest;
}

/* Route auto: every step's writes and reads take the grid the cost model names
 * (docs/tuning.md, "Lock-step"); the values are the model's, the array the one
 * direct leaves, under every aggregation and both exchanges, and every step's
 * writes and reads are counted under one of the candidates. */
static void test_route_auto(void **state)
{
    (void)state;
    for (int rule = 0; rule < NRULES; rule += 3) { /* overwrite and the user rule */
        cr_comm *comm = make_comm();
        cr_darray_stats st;
        darray_fails = 0;
        uint64_t want = darray_run_steps(comm, rule, 0, 0, CR_DARRAY_EXCHANGE_COLLECTIVE, &st);
        for (int agg = 0; agg < NAGGS; agg++)
            for (int ex = CR_DARRAY_EXCHANGE_COLLECTIVE; ex <= CR_DARRAY_EXCHANGE_MAILBOX; ex++) {
                uint64_t got = darray_run_steps(comm, rule, ROUTE_AUTO_INDEX, agg,
                                                (cr_darray_exchange)ex, &st);
                CHECK(got == want, "rule %d, route auto, aggregation %d, exchange %d: another "
                      "array than direct's", rule, agg, ex);
                uint64_t counted = 0;
                for (int k = 0; k < CR_DARRAY_AUTO_ROUTES; k++)
                    counted += st.auto_routes[k];
                CHECK(counted == 2 * st.steps, "rule %d, aggregation %d: %llu choices in %llu "
                      "steps, not one for the writes and one for the reads of each", rule, agg,
                      (unsigned long long)counted, (unsigned long long)st.steps);
            }
        test_errors += darray_fails;
        cr_comm_destroy(comm);
    }
}

/* Overload (thesis 5.4.3): every rank reads and adds to every index rank 0 holds.
 * With aggregation, each index reaches rank 0 once per step for the writes and once
 * for the reads from each partner of the last dimension (under the hypercube, one);
 * without, once from every other rank. */
static void test_overload(void **state)
{
    (void)state;
    for (int route = 0; route < NROUTES; route++)
        for (int agg = 0; agg < NAGGS; agg++) {
            cr_comm *comm = make_comm();
            uint64_t n = 64 * (uint64_t)test_size;
            cr_darray_opts o = opts_for(RULE_ADD, route, agg, CR_DARRAY_EXCHANGE_AUTO);
            cr_darray *a = cr_darray_create(comm, n, 8, &o);
            uint64_t first0, count0;
            cr_darray_block(n, test_size, 0, &first0, &count0);
            uint64_t *got = calloc(count0, 8), one = 1;
            for (int s = 1; s <= 2; s++) {
                cr_darray_stats before, after;
                cr_darray_stats_get(a, &before);
                for (uint64_t i = 0; i < count0; i++) {
                    cr_darray_write(a, first0 + i, &one);
                    cr_darray_read(a, first0 + i, &got[i]);
                }
                cr_darray_step(a);
                cr_darray_stats_get(a, &after);
                for (uint64_t i = 0; i < count0; i++)
                    CHECK(got[i] == (uint64_t)(s * test_size), "%s agg %d: index %llu read %llu",
                          darray_routes[route], agg, (unsigned long long)i, (unsigned long long)got[i]);
                uint64_t reached = after.reached_owner - before.reached_owner;
                /* In the last exchange, from its partners there: with aggregation one
                 * request per index from each (under the hypercube, one partner);
                 * without, the requests of every rank whose last coordinate differs
                 * from the owner's (the others came through the owner itself). */
                uint64_t last = (uint64_t)last_dim(route, test_size), p = (uint64_t)test_size;
                uint64_t senders = darray_aggs[agg] == CR_DARRAY_AGG_NONE ? p - p / last : last - 1;
                uint64_t expect = test_rank != 0 ? 0 : 2 * count0 * senders;
                CHECK(reached == expect, "%s agg %d: %llu requests reached rank %d, expected %llu",
                      darray_routes[route], agg, (unsigned long long)reached, test_rank,
                      (unsigned long long)expect);
            }
            free(got);
            cr_darray_destroy(a);
            cr_comm_destroy(comm);
        }
    verdict();
}

/* Aggregation auto merges where requests repeat over the ranks and not where each
 * is for another index: a step of distinct writes and reads is sent unmerged (both
 * kinds counted in auto_plain), a step where every rank asks for rank 0's indices
 * is merged from 2 ranks on (auto_merged), and both leave the exact sums. */
static void test_auto_choice(void **state)
{
    (void)state;
    for (int route = 0; route < NROUTES; route++) {
        cr_comm *comm = make_comm();
        uint64_t per = 256, n = per * (uint64_t)test_size, one = 1;
        cr_darray_opts o = opts_for(RULE_ADD, route, 3, CR_DARRAY_EXCHANGE_AUTO);
        cr_darray *a = cr_darray_create(comm, n, 8, &o);
        uint64_t *got = calloc(per, 8);
        for (uint64_t k = 0; k < per; k++) { /* rank r: indices r, r + P, ...: all distinct */
            cr_darray_write(a, k * (uint64_t)test_size + (uint64_t)test_rank, &one);
            cr_darray_read(a, k * (uint64_t)test_size + (uint64_t)test_rank, &got[k]);
        }
        cr_darray_step(a);
        cr_darray_stats st;
        cr_darray_stats_get(a, &st);
        CHECK(st.auto_plain == 2 && st.auto_merged == 0,
              "%s: distinct requests: %llu kinds plain, %llu merged (expected 2 and 0)",
              darray_routes[route], (unsigned long long)st.auto_plain,
              (unsigned long long)st.auto_merged);
        for (uint64_t k = 0; k < per; k++)
            CHECK(got[k] == 1, "%s: distinct read %llu gave %llu", darray_routes[route],
                  (unsigned long long)k, (unsigned long long)got[k]);
        for (uint64_t k = 0; k < per; k++) { /* every rank: the same indices */
            cr_darray_write(a, k * (uint64_t)test_size, &one);
            cr_darray_read(a, k * (uint64_t)test_size, &got[k]);
        }
        cr_darray_step(a);
        cr_darray_stats_get(a, &st);
        uint64_t merged = test_size > 1 ? 2 : 0;
        CHECK(st.auto_merged == merged && st.auto_plain == 4 - merged,
              "%s: repeated requests: %llu kinds merged, %llu plain (expected %llu merged)",
              darray_routes[route], (unsigned long long)st.auto_merged,
              (unsigned long long)st.auto_plain, (unsigned long long)merged);
        for (uint64_t k = 0; k < per; k++)
            CHECK(got[k] == 1 + (uint64_t)test_size, "%s: repeated read %llu gave %llu",
                  darray_routes[route], (unsigned long long)k, (unsigned long long)got[k]);
        free(got);
        cr_darray_destroy(a);
        cr_comm_destroy(comm);
    }
    verdict();
}

/* Every rank writes (adds 1) twice to index 0 and reads it twice, in one step: the
 * reads see all 2P writes; with aggregation rank 0 receives one write and one read
 * from each partner of its last dimension. */
static void test_one_index(void **state)
{
    (void)state;
    for (int route = 0; route < NROUTES; route++)
        for (int agg = 0; agg < NAGGS; agg++) {
            cr_comm *comm = make_comm();
            cr_darray_opts o = opts_for(RULE_ADD, route, agg, CR_DARRAY_EXCHANGE_AUTO);
            cr_darray *a = cr_darray_create(comm, 5 + (uint64_t)test_size, 8, &o);
            uint64_t one = 1, got[2] = {0, 0};
            cr_darray_write(a, 0, &one);
            cr_darray_write(a, 0, &one);
            cr_darray_read(a, 0, &got[0]);
            cr_darray_read(a, 0, &got[1]);
            cr_darray_step(a);
            cr_darray_stats st;
            cr_darray_stats_get(a, &st);
            for (int k = 0; k < 2; k++)
                CHECK(got[k] == 2 * (uint64_t)test_size, "%s agg %d: read %llu", darray_routes[route],
                      agg, (unsigned long long)got[k]);
            uint64_t last = (uint64_t)last_dim(route, test_size), p = (uint64_t)test_size;
            uint64_t expect = test_rank != 0 ? 0
                              : darray_aggs[agg] == CR_DARRAY_AGG_NONE ? 4 * (p - p / last)
                                                                 : 2 * (last - 1);
            CHECK(st.reached_owner == expect, "%s agg %d: %llu requests reached rank %d, "
                  "expected %llu", darray_routes[route], agg, (unsigned long long)st.reached_owner,
                  test_rank, (unsigned long long)expect);
            cr_darray_destroy(a);
            cr_comm_destroy(comm);
        }
    verdict();
}

/* ---- asynchronous mode ---- */

static void got_value(cr_comm *comm, const void *data, size_t len, void *ctx)
{
    (void)comm;
    CHECK(len == 8, "reply of %zu bytes", len);
    memcpy(ctx, data, 8);
}

static void add_visit(cr_darray *a, uint64_t i, void *elem, const void *args, size_t len,
                      void *user)
{
    (void)a, (void)i, (void)user;
    uint64_t v, add;
    CHECK(len == 8, "visit args of %zu bytes", len);
    memcpy(&v, elem, 8);
    memcpy(&add, args, 8);
    v += add * 1000;
    memcpy(elem, &v, 8);
}

static void test_async(void **state)
{
    (void)state;
    static const char *const mroutes[] = {"direct", "nlnr", "hypercube"};
    for (int rt = 0; rt < 3; rt++) {
        cr_config cfg;
        cr_config_init(&cfg);
        cr_route_parse(mroutes[rt], &cfg.route, NULL, 0);
        cfg.node_size = 2;
        cfg.buffer_bytes = 512;
        cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, &cfg);
        cr_darray_opts o = opts_for(RULE_ADD, 0, 1, CR_DARRAY_EXCHANGE_AUTO);
        uint64_t n = 30 + (uint64_t)test_size;
        cr_darray *a = cr_darray_create(comm, n, 8, &o);
        int visit = cr_darray_register_visit(a, add_visit, NULL);
        /* every rank adds i + 1 to every element i, three times, and visits each once */
        for (int rep = 0; rep < 3; rep++)
            for (uint64_t i = 0; i < n; i++) {
                uint64_t v = i + 1;
                cr_darray_async_write(a, i, &v);
            }
        for (uint64_t i = 0; i < n; i++) {
            uint64_t one = 1;
            cr_darray_async_visit(a, i, visit, &one, sizeof one);
        }
        cr_barrier(comm);
        uint64_t *got = calloc(n, 8);
        for (uint64_t i = 0; i < n; i++)
            cr_darray_async_read(a, (i * 7 + (uint64_t)test_rank) % n, got_value, &got[i]);
        cr_barrier(comm);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t idx = (i * 7 + (uint64_t)test_rank) % n;
            uint64_t expect = 3 * (idx + 1) * (uint64_t)test_size + 1000 * (uint64_t)test_size;
            CHECK(got[i] == expect, "%s: element %llu is %llu, expected %llu", mroutes[rt],
                  (unsigned long long)idx, (unsigned long long)got[i],
                  (unsigned long long)expect);
        }
        CHECK(cr_dedup_pending(comm) == 0, "requests wait after the barrier");
        free(got);
        cr_darray_destroy(a);
        check_conserved(comm, UINT64_MAX);
        cr_comm_destroy(comm);
    }
    verdict();
}

/* ---- within a node: in-place access ---- */

/* The writes of in_place_round whose owner shares this rank's node. */
static uint64_t near_writes(cr_comm *comm, uint64_t n, uint64_t hot, int reps)
{
    const cr_layout *l = cr_comm_layout(comm);
    int me = cr_layout_node_of(l, test_rank);
    uint64_t near = 0;
    for (uint64_t i = 0; i < hot; i++)
        near += cr_layout_node_of(l, cr_darray_owner(n, test_size, i)) == me;
    near *= (uint64_t)reps;
    for (uint64_t i = 0; i < n; i++)
        near += cr_layout_node_of(l, cr_darray_owner(n, test_size, i)) == me;
    return near;
}

/* A comm of virtual nodes of node_size ranks (0: MPI's nodes) with two arrays of n
 * elements under this node access: a uint64 sum and a double min. */
static cr_comm *in_place_arrays(int node_size, cr_darray_node node, uint64_t n, cr_darray **sum,
                                cr_darray **low)
{
    cr_config cfg;
    cr_config_init(&cfg);
    cfg.node_size = (size_t)node_size;
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, &cfg);
    cr_darray_opts o;
    cr_darray_opts_init(&o);
    o.merge = CR_OP_SUM;
    o.type = CR_UINT64;
    o.node = node;
    *sum = cr_darray_create(comm, n, 8, &o);
    o.merge = CR_OP_MIN;
    o.type = CR_DOUBLE;
    *low = cr_darray_create(comm, n, 8, &o);
    return comm;
}

/* Every rank adds 1 to the hot elements 0 .. hot-1 `reps` times each (the ranks of
 * a node racing on them), and i + 1 to every element once; a min array of doubles
 * takes every rank's (negative) guess. Exact totals catch an in-place merge lost or
 * applied twice; the count of in-place writes catches one sent as a record where the
 * node's memory reaches it, or the reverse. */
static void in_place_round(int node_size, cr_darray_node node)
{
    const uint64_t n = 11 + 3 * (uint64_t)test_size, hot = 3;
    const int reps = 20000;
    cr_darray *sum, *low;
    cr_comm *comm = in_place_arrays(node_size, node, n, &sum, &low);
    cr_darray_stats_reset(sum);
    for (int rep = 0; rep < reps; rep++)
        for (uint64_t i = 0; i < hot; i++) {
            uint64_t one = 1;
            cr_darray_async_write(sum, i, &one);
        }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = i + 1;
        double guess = -(double)((i * 7 + (uint64_t)test_rank * 3) % 29) - 0.5; /* below 0 */
        cr_darray_async_write(sum, i, &v);
        cr_darray_async_write(low, i, &guess);
    }
    cr_darray_stats st;
    cr_darray_stats_get(sum, &st);
    uint64_t expect_near = node == CR_DARRAY_NODE_RECORDS ? 0 : near_writes(comm, n, hot, reps);
    CHECK(st.in_place == expect_near, "node size %d, node %d: %llu writes in place, expected %llu",
          node_size, (int)node, (unsigned long long)st.in_place,
          (unsigned long long)expect_near);
    cr_barrier(comm);
    uint64_t *got = calloc(n, 8);
    double *got_low = calloc(n, 8);
    for (uint64_t i = 0; i < n; i++) {
        cr_darray_async_read(sum, i, got_value, &got[i]);
        cr_darray_async_read(low, i, got_value, &got_low[i]);
    }
    cr_barrier(comm);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t expect = (i + 1) * (uint64_t)test_size + (i < hot ? (uint64_t)reps * test_size : 0);
        double least = 0;
        for (int r = 0; r < test_size; r++) {
            double g = -(double)((i * 7 + (uint64_t)r * 3) % 29) - 0.5;
            least = g < least ? g : least;
        }
        CHECK(got[i] == expect, "node size %d, node %d: element %llu is %llu, expected %llu",
              node_size, (int)node, (unsigned long long)i, (unsigned long long)got[i],
              (unsigned long long)expect);
        CHECK(got_low[i] == least, "node size %d, node %d: min element %llu is %g, expected %g",
              node_size, (int)node, (unsigned long long)i, got_low[i], least);
    }
    /* the owner's block holds the same */
    uint64_t first, count;
    uint64_t *mine = cr_darray_local(sum, &first, &count);
    for (uint64_t k = 0; k < count; k++)
        CHECK(mine[k] == got[first + k], "node size %d: rank %d's block differs at %llu",
              node_size, test_rank, (unsigned long long)(first + k));
    free(got);
    free(got_low);
    cr_darray_destroy(low);
    cr_darray_destroy(sum);
    check_conserved(comm, UINT64_MAX);
    cr_comm_destroy(comm);
}

/* Whether some node of the comm holds two ranks or more (the array then keeps its
 * blocks in the node's memory and a step reaches the node's elements in place). */
static int some_node_shared(cr_comm *comm)
{
    const cr_layout *l = cr_comm_layout(comm);
    for (int k = 0; k < cr_layout_nodes(l); k++)
        if (cr_layout_node_size(l, k) >= 2)
            return 1;
    return 0;
}

/* The same totals through lock-step steps: the writes of a step whose owner shares the
 * writer's node merge in place (min and sum racing on the hot elements), the reads of
 * the node load in place; the counts of in-place writes and reads are exact, and the
 * owner's block holds the step's result when the step returns. */
static void lockstep_in_place_round(int node_size, cr_darray_node node)
{
    const uint64_t n = 13 + 5 * (uint64_t)test_size, hot = 2;
    const int reps = 3000;
    cr_darray *sum, *low;
    cr_comm *comm = in_place_arrays(node_size, node, n, &sum, &low);
    int in_place = node == CR_DARRAY_NODE_IN_PLACE && some_node_shared(comm);
    for (int step = 0; step < 2; step++) {
        cr_darray_stats_reset(sum);
        for (int rep = 0; rep < reps; rep++)
            for (uint64_t i = 0; i < hot; i++) {
                uint64_t one = 1;
                cr_darray_write(sum, i, &one);
            }
        for (uint64_t i = 0; i < n; i++) {
            uint64_t v = i + 1;
            double guess = -(double)((i * 5 + (uint64_t)test_rank * 3 + step) % 31) - 0.25;
            cr_darray_write(sum, i, &v);
            cr_darray_write(low, i, &guess);
        }
        cr_darray_step(sum);
        cr_darray_step(low);
        uint64_t *got = calloc(n, 8);
        double *got_low = calloc(n, 8);
        for (uint64_t i = 0; i < n; i++) {
            cr_darray_read(sum, i, &got[i]);
            cr_darray_read(low, i, &got_low[i]);
        }
        cr_darray_step(sum);
        cr_darray_step(low);
        cr_darray_stats st;
        cr_darray_stats_get(sum, &st);
        uint64_t expect_near = in_place ? near_writes(comm, n, hot, reps) + near_writes(comm, n, 0, 0) : 0;
        CHECK(st.in_place == expect_near,
              "lock-step, node size %d, node %d: %llu writes and reads in place, expected %llu",
              node_size, (int)node, (unsigned long long)st.in_place,
              (unsigned long long)expect_near);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t s1 = (uint64_t)step + 1;
            uint64_t expect = s1 * ((i + 1) * (uint64_t)test_size +
                                    (i < hot ? (uint64_t)reps * test_size : 0));
            double least = 0;
            for (int t = 0; t <= step; t++)
                for (int r = 0; r < test_size; r++) {
                    double g = -(double)((i * 5 + (uint64_t)r * 3 + (uint64_t)t) % 31) - 0.25;
                    least = g < least ? g : least;
                }
            CHECK(got[i] == expect, "lock-step, node size %d, node %d: element %llu is %llu, "
                  "expected %llu", node_size, (int)node, (unsigned long long)i,
                  (unsigned long long)got[i], (unsigned long long)expect);
            CHECK(got_low[i] == least, "lock-step, node size %d, node %d: min element %llu is "
                  "%g, expected %g", node_size, (int)node, (unsigned long long)i, got_low[i], least);
        }
        uint64_t first, count;
        uint64_t *mine = cr_darray_local(sum, &first, &count);
        for (uint64_t k = 0; k < count; k++)
            CHECK(mine[k] == got[first + k], "lock-step, node size %d: rank %d's block differs "
                  "at %llu", node_size, test_rank, (unsigned long long)(first + k));
        free(got);
        free(got_low);
    }
    cr_darray_destroy(low);
    cr_darray_destroy(sum);
    check_conserved(comm, UINT64_MAX);
    cr_comm_destroy(comm);
}

static void test_in_place(void **state)
{
    (void)state;
    static const int node_sizes[] = {0, 1, 2, 3};
    for (int k = 0; k < 4; k++) {
        in_place_round(node_sizes[k], CR_DARRAY_NODE_IN_PLACE);
        in_place_round(node_sizes[k], CR_DARRAY_NODE_RECORDS);
        lockstep_in_place_round(node_sizes[k], CR_DARRAY_NODE_IN_PLACE);
        lockstep_in_place_round(node_sizes[k], CR_DARRAY_NODE_RECORDS);
    }
    verdict();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lockstep_against_model),
        cmocka_unit_test(test_auto_choice),
        cmocka_unit_test(test_route_auto),
        cmocka_unit_test(test_overload),
        cmocka_unit_test(test_one_index),
        cmocka_unit_test(test_async),
        cmocka_unit_test(test_in_place),
    };
    return RUN_MPI_TESTS(argc, argv, tests);
}
