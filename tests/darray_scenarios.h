/* Lock-step scenarios of the distributed array (include/courier/darray.h), shared
 * by the MPI test (tests/mpi/test_darray.c) and the simulated one
 * (tests/sim/test_sim.c): random writes and reads against a sequential model under
 * every route, aggregation and several merge rules. Failed checks are counted in
 * darray_fails (each printed, up to a few). */
#ifndef COURIER_TESTS_DARRAY_SCENARIOS_H
#define COURIER_TESTS_DARRAY_SCENARIOS_H

#include "scenario_check.h"
#include "courier/rng.h"

#include <courier.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long darray_fails;

#define DA_CHECK(comm, cond, ...) SCENARIO_CHECK(darray_fails, cr_comm_rank(comm), cond, __VA_ARGS__)

/* The routes the scenarios run; ROUTE_AUTO_INDEX (the cost model's choice at every
 * step) only where a test asks for it. */
static const char *const darray_routes[] = {"direct", "grid", "hypercube", "auto"};
#define ROUTE_AUTO_INDEX 3
static const cr_darray_aggregation darray_aggs[] = {CR_DARRAY_AGG_NONE, CR_DARRAY_AGG_HASH,
                                              CR_DARRAY_AGG_SORT, CR_DARRAY_AGG_AUTO};
#define NROUTES 3
#define NAGGS 4

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

static cr_darray_opts opts_for(int rule, int route, int agg, cr_darray_exchange exchange)
{
    cr_darray_opts o;
    cr_darray_opts_init(&o);
    o.exchange = exchange;
    cr_route_parse(darray_routes[route], &o.route, NULL, 0);
    o.aggregation = darray_aggs[agg];
    switch (rule) {
    case RULE_ADD: o.merge = CR_OP_SUM, o.type = CR_UINT64; break;
    case RULE_MIN: o.merge = CR_OP_MIN, o.type = CR_INT64; break;
    case RULE_USER: o.merge = CR_OP_USER, o.combine = combine_pairs; break;
    default: break;
    }
    return o;
}

/* Rank r's requests in step s: the same stream on every rank, so every rank can
 * replay every other rank's writes. */
static uint64_t stream_of(int r, int s)
{
    return cr_rng_hash64((uint64_t)r * 7919 + (uint64_t)s * 104729 + 1);
}

#define WRITES 150
#define READS 150

typedef struct request {
    uint64_t index;
    uint64_t value;
} request;

static request next_write(uint64_t *st, uint64_t n)
{
    uint64_t x = cr_rng_next(st);
    return (request){.index = cr_rng_bounded(x, n), .value = cr_rng_next(st) % 1000};
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
                pair p = {w.value, cr_rng_hash64(w.value)};
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
        pair p = {v, cr_rng_hash64(v)};
        memcpy(out, &p, sizeof p);
    } else {
        memcpy(out, &v, 8);
    }
}

/* The messages a step's exchanges would start were each a dense all-to-all among its
 * dimension's partners: one exchange per dimension for the writes, two for the reads
 * (there and back), n - 1 partners in a dimension of n. Direct: one dimension of P;
 * hypercube: one per prime factor of P. -1 for the 2D grid (not checked). */
static long alltoall_per_step(int route, int size)
{
    long partners = 0;
    if (route == 0) {
        partners = size - 1;
    } else if (route == 2) {
        int rest = size;
        for (int f = 2; rest > 1; f++)
            while (rest % f == 0)
                partners += f - 1, rest /= f;
    } else {
        return -1;
    }
    return 3 * partners;
}

/* Three steps of random writes and reads to a small array (heavy duplication);
 * every read must equal the model after that step's writes. Collective over comm.
 * Returns a checksum of this rank's block at the end (hash and sort must agree) and
 * the array's statistics in *stats (the exchanges must agree). */
static uint64_t darray_run_steps(cr_comm *comm, int rule, int route, int agg,
                                 cr_darray_exchange exchange, cr_darray_stats *stats)
{
    int rank = cr_comm_rank(comm), size = cr_comm_size(comm);
    uint64_t n = 40 + (uint64_t)size * 3;
    size_t e = rule == RULE_USER ? sizeof(pair) : 8;
    cr_darray_opts o = opts_for(rule, route, agg, exchange);
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
        uint64_t st = stream_of(rank, s);
        char val[16];
        for (int k = 0; k < WRITES; k++) {
            request w = next_write(&st, n);
            value_of(rule, w.value, val);
            cr_darray_write(a, w.index, val);
        }
        uint64_t rs = cr_rng_hash64(stream_of(rank, s) ^ 0xabcdef);
        for (int k = 0; k < READS; k++) {
            asked[k] = cr_rng_bounded(cr_rng_next(&rs), n);
            cr_darray_read(a, asked[k], got + (size_t)k * e);
        }
        cr_darray_step(a);
        model_step(rule, s, size, n, model, e);
        for (int k = 0; k < READS; k++)
            DA_CHECK(comm, !memcmp(got + (size_t)k * e, model + asked[k] * e, e),
                     "%s, aggregation %d, rule %d, exchange %d, step %d: read %d of index %llu "
                     "differs", darray_routes[route], agg, rule, (int)exchange, s, k,
                     (unsigned long long)asked[k]);
    }
    uint64_t first, count, sum = 0;
    const char *local = cr_darray_local(a, &first, &count);
    for (uint64_t i = 0; i < count * e; i++)
        sum = cr_rng_hash64(sum ^ (uint64_t)(unsigned char)local[i]);
    cr_darray_stats_get(a, stats);
    long per_step = alltoall_per_step(route, size);
    DA_CHECK(comm, per_step < 0 || stats->alltoall_messages == stats->steps * (uint64_t)per_step,
             "%s, P=%d: %llu all-to-all messages in %llu steps, not %ld per step",
             darray_routes[route], size, (unsigned long long)stats->alltoall_messages,
             (unsigned long long)stats->steps, per_step);
    DA_CHECK(comm, stats->alltoall_messages >= stats->messages,
             "%s, P=%d: a dense all-to-all would start fewer messages (%llu) than were sent "
             "(%llu)", darray_routes[route], size, (unsigned long long)stats->alltoall_messages,
             (unsigned long long)stats->messages);
    cr_darray_destroy(a);
    free(model), free(got), free(asked);
    return sum;
}

#endif
