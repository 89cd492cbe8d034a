/* Sparse exchange scenarios (include/courier/nbx.h), shared by the MPI test
 * (tests/mpi/test_exchange.c) and the simulated one (tests/sim/test_sim.c). Each rank
 * can recompute what every rank sends, so it knows exactly which messages, in which
 * order and with which bytes, it must receive; results are compared in full. */
#ifndef COURIER_TESTS_EXCHANGE_SCENARIOS_H
#define COURIER_TESTS_EXCHANGE_SCENARIOS_H

#include "scenario_check.h"
#include "courier/rng.h"

#include <courier.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long sx_fails;

#define SX_CHECK(comm, cond, ...) SCENARIO_CHECK(sx_fails, cr_comm_rank(comm), cond, __VA_ARGS__)

static const cr_nbx_protocol protocols[] = {CR_NBX_PROTOCOL_NBX, CR_NBX_PROTOCOL_PEX, CR_NBX_PROTOCOL_PCX, CR_NBX_PROTOCOL_DEFAULT};
#define NPROTOCOLS (sizeof protocols / sizeof protocols[0])

typedef enum sx_pattern {
    P_NEIGHBOURS, /* k random distinct neighbours, random sizes */
    P_NOBODY,     /* no rank sends */
    P_HALF_EMPTY, /* even ranks send nothing */
    P_SELF,       /* to itself and to the next rank */
    P_LARGE,      /* 1.5 MiB to the next rank, 64 KiB + 1 to itself */
    P_ALL_TO_ONE, /* two messages each to rank 0, one of them empty */
    P_REPEATS,    /* several messages to the same ranks, in a fixed order */
} sx_pattern;

typedef struct sx_outgoing {
    size_t n;
    int dests[64];
    size_t sizes[64];
} sx_outgoing;

static uint64_t sx_message_seed(int src, size_t i, uint64_t round)
{
    return cr_rng_hash64(((uint64_t)src << 40) ^ ((uint64_t)i << 16) ^ (round * 0x9e3779b97f4a7c15ULL));
}

/* What rank `src` sends in this pattern and round: the same answer on every rank. */
static void sx_plan(sx_pattern p, int src, int size, uint64_t round, sx_outgoing *o)
{
    uint64_t s = sx_message_seed(src, 999, round) ^ (uint64_t)p;
    o->n = 0;
#define ADD(d, len) (o->dests[o->n] = (d), o->sizes[o->n] = (len), o->n++)
    switch (p) {
    case P_NEIGHBOURS: {
        int k = size < 3 ? size : 3;
        int start = (int)cr_rng_bounded(cr_rng_next(&s), (uint64_t)size);
        int step = 1 + (int)cr_rng_bounded(cr_rng_next(&s), (uint64_t)(size > 1 ? size - 1 : 1));
        /* distinct: walk with a step; repeats of a rank are dropped */
        for (int j = 0, d = start; j < k; j++, d = (d + step) % size) {
            bool seen = false;
            for (size_t q = 0; q < o->n; q++)
                seen |= o->dests[q] == d;
            if (!seen)
                ADD(d, (size_t)cr_rng_bounded(cr_rng_next(&s), 300));
        }
        break;
    }
    case P_NOBODY: break;
    case P_HALF_EMPTY:
        if (src % 2)
            for (int j = 0; j < 2; j++)
                ADD((int)cr_rng_bounded(cr_rng_next(&s), (uint64_t)size), 1 + (size_t)j * 17);
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

static void sx_fill(uint8_t *buf, size_t len, uint64_t seed)
{
    for (size_t b = 0; b < len; b += 8) {
        uint64_t v = cr_rng_next(&seed);
        memcpy(buf + b, &v, len - b < 8 ? len - b : 8);
    }
}

/* Run one exchange of pattern p and compare the result with the expected list;
 * returns the checks that failed on this rank. */
static long exchange_and_check(cr_comm *comm, cr_nbx_protocol proto, sx_pattern p, uint64_t round)
{
    long before = sx_fails;
    sx_outgoing o = {0};
    int me = cr_comm_rank(comm), size = cr_comm_size(comm);
    sx_plan(p, me, size, round, &o);
    void *bufs[64] = {0};
    for (size_t i = 0; i < o.n; i++) {
        bufs[i] = malloc(o.sizes[i] ? o.sizes[i] : 1);
        sx_fill(bufs[i], o.sizes[i], sx_message_seed(me, i, round));
    }
    cr_nbx_result r;
    cr_nbx_exchange_with(comm, proto, o.n, o.dests, (const void *const *)bufs, o.sizes, &r);

    size_t k = 0, bytes = 0;
    uint8_t *want = malloc((size_t)2 << 20);
    for (int src = 0; src < size; src++) {
        sx_outgoing theirs;
        sx_plan(p, src, size, round, &theirs);
        for (size_t i = 0; i < theirs.n; i++) {
            if (theirs.dests[i] != me)
                continue;
            bytes += theirs.sizes[i];
            if (k >= r.count) {
                k++;
                continue;
            }
            sx_fill(want, theirs.sizes[i], sx_message_seed(src, i, round));
            SX_CHECK(comm, r.sources[k] == src && r.sizes[k] == theirs.sizes[i] &&
                      memcmp(r.data[k], want, theirs.sizes[i]) == 0,
                  "%s pattern %d: message %zu is from %d with %zu bytes, expected %zu bytes of "
                  "message %zu from %d",
                  cr_nbx_protocol_name(proto), p, k, r.sources[k], r.sizes[k], theirs.sizes[i], i,
                  src);
            k++;
        }
    }
    SX_CHECK(comm, r.count == k, "%s pattern %d: %zu messages received, expected %zu",
          cr_nbx_protocol_name(proto), p, r.count, k);
    SX_CHECK(comm, r.total_bytes == bytes, "%s pattern %d: %zu bytes received, expected %zu",
          cr_nbx_protocol_name(proto), p, r.total_bytes, bytes);
    free(want);
    cr_nbx_result_free(&r);
    SX_CHECK(comm, r.count == 0 && r.data == NULL, "cr_nbx_result_free leaves an empty result");
    for (size_t i = 0; i < o.n; i++)
        free(bufs[i]);
    return sx_fails - before;
}

#endif
