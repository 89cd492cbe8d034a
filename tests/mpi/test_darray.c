/* The distributed array (include/courier/darray.h) under mpirun: lock-step steps
 * against a sequential model, under every route and aggregation and several merge
 * rules; hash and sort give identical arrays; the overload pattern reaches the owner
 * once per index when aggregating; the asynchronous mode's writes, reads and visits. */
#include "harness.h"

#include "common/rng.h"

#include <courier.h>

#include <stdlib.h>
#include <string.h>

static const char *const routes[] = {"direct", "grid", "hypercube"};
static const cr_darray_aggregation aggs[] = {CR_DARRAY_AGG_NONE, CR_DARRAY_AGG_HASH,
                                              CR_DARRAY_AGG_SORT};
#define NROUTES 3
#define NAGGS 3

static cr_comm *make_comm(void)
{
    cr_config cfg;
    cr_config_init(&cfg);
    return cr_comm_create(MPI_COMM_WORLD, &cfg);
}

/* 16-byte elements under a user rule: {sum, xor} of what was written. */
typedef struct pair {
    uint64_t sum, xor;
} pair;

static void combine_pairs(void *dst, const void *src, size_t len, void *user)
{
    (void)len, (void)user;
    pair d, s;
    memcpy(&d, dst, sizeof d);
    memcpy(&s, src, sizeof s);
    d.sum += s.sum;
    d.xor ^= s.xor;
    memcpy(dst, &d, sizeof d);
}

enum { RULE_OVERWRITE, RULE_ADD, RULE_MIN, RULE_USER, NRULES };

static cr_darray_opts opts_for(int rule, int route, int agg)
{
    cr_darray_opts o;
    cr_darray_opts_init(&o);
    cr_route_parse(routes[route], &o.route, NULL, 0);
    o.aggregation = aggs[agg];
    switch (rule) {
    case RULE_ADD: o.merge = CR_DARRAY_ADD, o.type = CR_DEDUP_UINT64; break;
    case RULE_MIN: o.merge = CR_DARRAY_MIN, o.type = CR_DEDUP_INT64; break;
    case RULE_USER: o.merge = CR_DARRAY_USER, o.combine = combine_pairs; break;
    default: break;
    }
    return o;
}

/* Rank r's requests in step s: the same stream on every rank, so every rank can
 * replay every other rank's writes. */
static uint64_t stream_of(int r, int s)
{
    return cr_hash64((uint64_t)r * 7919 + (uint64_t)s * 104729 + 1);
}

#define WRITES 150
#define READS 150

typedef struct request {
    uint64_t index;
    uint64_t value;
} request;

static request next_write(uint64_t *st, uint64_t n)
{
    uint64_t x = cr_splitmix64(st);
    return (request){.index = cr_bounded(x, n), .value = cr_splitmix64(st) % 1000};
}

/* Apply every rank's writes of step s to the model, as the rule says: overwrite
 * keeps the highest rank's last write. */
static void model_step(int rule, int s, int size, uint64_t n, char *model, size_t e)
{
    for (int r = 0; r < size; r++) {
        uint64_t st = stream_of(r, s);
        for (int k = 0; k < WRITES; k++) {
            request w = next_write(&st, n);
            char *m = model + w.index * e;
            switch (rule) {
            case RULE_OVERWRITE: memcpy(m, &w.value, 8); break; /* ranks in order: last wins */
            case RULE_ADD: { uint64_t v; memcpy(&v, m, 8); v += w.value; memcpy(m, &v, 8); break; }
            case RULE_MIN: {
                int64_t v, x = (int64_t)w.value - 500;
                memcpy(&v, m, 8);
                if (x < v)
                    memcpy(m, &x, 8);
                break;
            }
            default: {
                pair p = {w.value, cr_hash64(w.value)};
                combine_pairs(m, &p, e, NULL);
                break;
            }
            }
        }
    }
}

static void value_of(int rule, uint64_t v, char *out)
{
    if (rule == RULE_MIN) {
        int64_t x = (int64_t)v - 500;
        memcpy(out, &x, 8);
    } else if (rule == RULE_USER) {
        pair p = {v, cr_hash64(v)};
        memcpy(out, &p, sizeof p);
    } else {
        memcpy(out, &v, 8);
    }
}

/* Three steps of random writes and reads to a small array (heavy duplication);
 * every read must equal the model after that step's writes. Returns a checksum of
 * this rank's block at the end (hash and sort must agree). */
static uint64_t run_steps(int rule, int route, int agg)
{
    cr_comm *comm = make_comm();
    uint64_t n = 40 + (uint64_t)test_size * 3;
    size_t e = rule == RULE_USER ? sizeof(pair) : 8;
    cr_darray_opts o = opts_for(rule, route, agg);
    cr_darray *a = cr_darray_create(comm, n, e, &o);
    char *model = calloc(n, e), *got = calloc(READS, e);
    uint64_t *asked = calloc(READS, sizeof *asked);
    if (rule == RULE_MIN) { /* start from a large value so that min has work */
        uint64_t first, count;
        int64_t big = 1 << 20;
        char *local = cr_darray_local(a, &first, &count);
        for (uint64_t i = 0; i < count; i++)
            memcpy(local + i * e, &big, 8);
        for (uint64_t i = 0; i < n; i++)
            memcpy(model + i * e, &big, 8);
    }
    for (int s = 0; s < 3; s++) {
        uint64_t st = stream_of(test_rank, s);
        char val[16];
        for (int k = 0; k < WRITES; k++) {
            request w = next_write(&st, n);
            value_of(rule, w.value, val);
            cr_darray_write(a, w.index, val);
        }
        uint64_t rs = cr_hash64(stream_of(test_rank, s) ^ 0xabcdef);
        for (int k = 0; k < READS; k++) {
            asked[k] = cr_bounded(cr_splitmix64(&rs), n);
            cr_darray_read(a, asked[k], got + (size_t)k * e);
        }
        cr_darray_step(a);
        model_step(rule, s, test_size, n, model, e);
        for (int k = 0; k < READS; k++)
            CHECK(!memcmp(got + (size_t)k * e, model + asked[k] * e, e),
                  "%s, aggregation %d, rule %d, step %d: read %d of index %llu differs", routes[route],
                  agg, rule, s, k, (unsigned long long)asked[k]);
    }
    uint64_t first, count, sum = 0;
    const char *local = cr_darray_local(a, &first, &count);
    for (uint64_t i = 0; i < count * e; i++)
        sum = cr_hash64(sum ^ (uint64_t)(unsigned char)local[i]);
    cr_darray_destroy(a);
    cr_comm_destroy(comm);
    free(model), free(got), free(asked);
    return sum;
}

static void test_lockstep_against_model(void **state)
{
    (void)state;
    for (int rule = 0; rule < NRULES; rule++)
        for (int route = 0; route < NROUTES; route++) {
            uint64_t sums[NAGGS];
            for (int agg = 0; agg < NAGGS; agg++)
                sums[agg] = run_steps(rule, route, agg);
            CHECK(sums[0] == sums[1] && sums[1] == sums[2],
                  "rule %d, %s: the aggregations leave different arrays", rule, routes[route]);
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
            cr_darray_opts o = opts_for(RULE_ADD, route, agg);
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
                          routes[route], agg, (unsigned long long)i, (unsigned long long)got[i]);
                uint64_t reached = after.reached_owner - before.reached_owner;
                /* In the last exchange, from its partners there: with aggregation one
                 * request per index from each (under the hypercube, one partner);
                 * without, the requests of every rank whose last coordinate differs
                 * from the owner's (the others came through the owner itself). */
                uint64_t last = (uint64_t)last_dim(route, test_size), p = (uint64_t)test_size;
                uint64_t senders = aggs[agg] == CR_DARRAY_AGG_NONE ? p - p / last : last - 1;
                uint64_t expect = test_rank != 0 ? 0 : 2 * count0 * senders;
                CHECK(reached == expect, "%s agg %d: %llu requests reached rank %d, expected %llu",
                      routes[route], agg, (unsigned long long)reached, test_rank,
                      (unsigned long long)expect);
            }
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
            cr_darray_opts o = opts_for(RULE_ADD, route, agg);
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
                CHECK(got[k] == 2 * (uint64_t)test_size, "%s agg %d: read %llu", routes[route],
                      agg, (unsigned long long)got[k]);
            uint64_t last = (uint64_t)last_dim(route, test_size), p = (uint64_t)test_size;
            uint64_t expect = test_rank != 0 ? 0
                              : aggs[agg] == CR_DARRAY_AGG_NONE ? 4 * (p - p / last)
                                                                 : 2 * (last - 1);
            CHECK(st.reached_owner == expect, "%s agg %d: %llu requests reached rank %d, "
                  "expected %llu", routes[route], agg, (unsigned long long)st.reached_owner,
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
        cr_darray_opts o = opts_for(RULE_ADD, 0, 1);
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

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lockstep_against_model),
        cmocka_unit_test(test_overload),
        cmocka_unit_test(test_one_index),
        cmocka_unit_test(test_async),
    };
    return RUN_MPI_TESTS(argc, argv, tests);
}
