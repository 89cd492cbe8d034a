/* Scenarios of the memory a node's ranks share (src/mailbox/module.h,
 * cr_module_node_segment_*), run by tests/mpi/test_node.c under mpirun and by
 * tests/sim/test_sim.c on virtual ranks. Each returns how many checks failed on this
 * rank (and prints the first few), so the caller can sum them over the ranks.
 *
 *   ns_layout    the segment's ranks are the layout's node, in comm-rank order; every
 *                part (of sizes that differ between ranks) distinct, aligned, zeroed
 *   ns_rounds    rounds of write, node barrier, read every part, node barrier: a
 *                barrier that let a rank through early shows a stale round
 *   ns_atomics   every rank adds to a counter in every part and offers a minimum to
 *                one word: the totals are exact (no update lost or applied twice)
 *   ns_records   records sent to the next 16 ranks (every rank, at 16 or fewer) while
 *                ranks wait at the node barrier: the barrier keeps the comm's records
 *                moving, and each arrives once
 *
 * and a segment no node can hold (4 PiB a rank) is refused on every rank, the comm
 * still usable after. */
#ifndef COURIER_TESTS_NODE_SCENARIOS_H
#define COURIER_TESTS_NODE_SCENARIOS_H

#include "mailbox/module.h"

#include <courier.h>

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* One rank's run (the simulation's virtual ranks share the process's statics). */
typedef struct ns_ctx {
    cr_comm *comm;
    int rank;
    long failed;
    uint64_t arrived;
} ns_ctx;

#define NS_CHECK(cond, ...)                                                              \
    do {                                                                                 \
        if (!(cond) && x->failed++ < 6) {                                                \
            fprintf(stderr, "node scenario, rank %d: %s: ", x->rank, #cond);             \
            fprintf(stderr, __VA_ARGS__);                                                \
            fputc('\n', stderr);                                                         \
        }                                                                                \
    } while (0)

/* The words of a part these scenarios use (all zero at creation). */
enum { NS_ROUND = 0, NS_WHO = 1, NS_ADDS = 2, NS_MIN = 3, NS_WORDS = 8 };

static _Atomic uint64_t *ns_words(const cr_node_segment *s, int i)
{
    return (_Atomic uint64_t *)cr_module_node_segment_part(s, i);
}

static void ns_layout(ns_ctx *x, cr_node_segment *s, size_t bytes)
{
    const cr_layout *l = cr_module_layout(x->comm);
    int node = cr_layout_node_of(l, x->rank), n = cr_module_node_segment_size(s);
    NS_CHECK(n == cr_layout_node_size(l, node), "%d ranks, the layout's node %d has %d", n,
             node, cr_layout_node_size(l, node));
    NS_CHECK(cr_module_node_segment_member(s, cr_module_node_segment_rank(s)) == x->rank,
             "member %d is rank %d", cr_module_node_segment_rank(s),
             cr_module_node_segment_member(s, cr_module_node_segment_rank(s)));
    for (int i = 0; i < n; i++) {
        const unsigned char *p = cr_module_node_segment_part(s, i);
        NS_CHECK((uintptr_t)p % 64 == 0, "part %d not aligned", i);
        if (i > 0)
            NS_CHECK(cr_module_node_segment_member(s, i) > cr_module_node_segment_member(s, i - 1),
                     "members %d and %d out of order", i - 1, i);
        size_t nonzero = 0;
        for (size_t k = 0; k < bytes; k++)
            nonzero += p[k] != 0;
        NS_CHECK(nonzero == 0, "part %d has %zu bytes not zero at creation", i, nonzero);
        for (int j = 0; j < i; j++) {
            const unsigned char *q = cr_module_node_segment_part(s, j);
            NS_CHECK(q + bytes <= p || p + bytes <= q, "parts %d and %d overlap", j, i);
        }
    }
    cr_module_node_segment_barrier(s); /* nobody writes before every part was read */
}

static void ns_rounds(ns_ctx *x, cr_node_segment *s, int rounds)
{
    int n = cr_module_node_segment_size(s), me = cr_module_node_segment_rank(s);
    for (int r = 1; r <= rounds; r++) {
        _Atomic uint64_t *mine = ns_words(s, me);
        atomic_store_explicit(&mine[NS_WHO], (uint64_t)x->rank, memory_order_relaxed);
        atomic_store_explicit(&mine[NS_ROUND], (uint64_t)r, memory_order_relaxed);
        cr_module_node_segment_barrier(s);
        for (int i = 0; i < n; i++) {
            _Atomic uint64_t *w = ns_words(s, i);
            uint64_t round = atomic_load_explicit(&w[NS_ROUND], memory_order_relaxed);
            uint64_t who = atomic_load_explicit(&w[NS_WHO], memory_order_relaxed);
            NS_CHECK(round == (uint64_t)r, "round %d: part %d holds round %llu", r, i,
                     (unsigned long long)round);
            NS_CHECK(who == (uint64_t)cr_module_node_segment_member(s, i),
                     "part %d written by rank %llu", i, (unsigned long long)who);
        }
        cr_module_node_segment_barrier(s);
    }
}

static void ns_atomics(ns_ctx *x, cr_node_segment *s, int adds)
{
    int n = cr_module_node_segment_size(s);
    for (int a = 0; a < adds; a++)
        for (int i = 0; i < n; i++)
            atomic_fetch_add_explicit(&ns_words(s, i)[NS_ADDS], 1, memory_order_relaxed);
    /* a minimum by compare and swap, the way a kernel lowers a vertex's distance */
    _Atomic uint64_t *min = &ns_words(s, 0)[NS_MIN];
    if (cr_module_node_segment_rank(s) == 0)
        atomic_store_explicit(min, UINT64_MAX, memory_order_relaxed);
    cr_module_node_segment_barrier(s);
    for (uint64_t v = 1000 + (uint64_t)x->rank; v >= 100 + (uint64_t)x->rank; v -= 7) {
        uint64_t seen = atomic_load_explicit(min, memory_order_relaxed);
        while (v < seen &&
               !atomic_compare_exchange_weak_explicit(min, &seen, v, memory_order_relaxed,
                                                      memory_order_relaxed))
            ;
    }
    cr_module_node_segment_barrier(s);
    for (int i = 0; i < n; i++) {
        uint64_t got = atomic_load_explicit(&ns_words(s, i)[NS_ADDS], memory_order_relaxed);
        NS_CHECK(got == (uint64_t)n * (uint64_t)adds, "part %d counted %llu adds, not %llu", i,
                 (unsigned long long)got, (unsigned long long)n * (uint64_t)adds);
    }
    /* the smallest offer: 100 + r + (900 mod 7) for the node's lowest rank r */
    uint64_t lowest = (uint64_t)cr_module_node_segment_member(s, 0);
    uint64_t want = 1000 + lowest - (900 / 7) * 7;
    uint64_t got = atomic_load_explicit(min, memory_order_relaxed);
    NS_CHECK(got == want, "the minimum is %llu, not %llu", (unsigned long long)got,
             (unsigned long long)want);
    cr_module_node_segment_barrier(s);
}

static void ns_on_record(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm, (void)src;
    uint64_t v;
    memcpy(&v, payload, sizeof v);
    ((ns_ctx *)user)->arrived += len == sizeof v && v == 77;
}

static void ns_records(ns_ctx *x, cr_node_segment *s, int per_rank)
{
    cr_comm *comm = x->comm;
    int p = cr_comm_size(comm);
    int h = cr_register_type(comm, &(cr_handler_type){.fn = ns_on_record, .name = "ns record"},
                             x);
    cr_barrier(comm); /* every rank has the handler before a record arrives */
    uint64_t v = 77;
    int fan = p < 16 ? p : 16;
    for (int k = 0; k < per_rank; k++)
        for (int j = 0; j < fan; j++)
            cr_async(comm, (x->rank + j) % p, h, &v, sizeof v);
    cr_module_node_segment_barrier(s);
    cr_barrier(comm);
    uint64_t want = (uint64_t)per_rank * (uint64_t)fan;
    NS_CHECK(x->arrived == want, "%llu records arrived, not %llu",
             (unsigned long long)x->arrived, (unsigned long long)want);
}

/* Every scenario on a segment of `bytes` per rank (at least NS_WORDS words). */
static long ns_all(cr_comm *comm, size_t bytes, int rounds, int records)
{
    ns_ctx ctx = {.comm = comm, .rank = cr_comm_rank(comm)}, *x = &ctx;
    /* parts of unequal sizes: the checks read the first `bytes` of each */
    cr_node_segment *s = cr_module_node_segment_create(comm, bytes + 64 * (size_t)(x->rank % 3));
    NS_CHECK(s != NULL, "no segment");
    if (!s)
        return x->failed;
    ns_layout(x, s, bytes);
    ns_rounds(x, s, rounds);
    ns_atomics(x, s, 50);
    ns_records(x, s, records);
    cr_module_node_segment_destroy(s);
    /* one that no node can hold: refused on every rank, and the comm goes on */
    NS_CHECK(cr_module_node_segment_create(comm, (size_t)1 << 52) == NULL,
             "a segment of 4 PiB per rank was made");
    /* a second segment on the same comm after the first is gone */
    s = cr_module_node_segment_create(comm, 64);
    NS_CHECK(s != NULL, "no second segment");
    if (s) {
        ns_rounds(x, s, 2);
        cr_module_node_segment_destroy(s);
    }
    return x->failed;
}

#endif
