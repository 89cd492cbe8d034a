/* Scenarios for requests with replies (include/courier/dedup.h), shared by the MPI
 * test (tests/mpi/test_requests.c) and the simulated one (tests/sim/test_sim.c):
 * each is what one rank runs on a comm, collective over it, and returns the number
 * of failed checks on this rank (each printed once, up to a few). Conservation over
 * all ranks is checked by the caller from the ranks' counters (req_check_totals). */
#ifndef COURIER_TESTS_REQUESTS_SCENARIOS_H
#define COURIER_TESTS_REQUESTS_SCENARIOS_H

#include "scenario_check.h"
#include "courier/rng.h"
#include "mailbox/mailbox_internal.h" /* cr_autotune_take_route */

#include <courier.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long req_fails;

#define REQ_CHECK(comm, cond, ...) SCENARIO_CHECK(req_fails, (comm) ? cr_comm_rank(comm) : -1, cond, __VA_ARGS__)

/* The value rank `owner` holds at index i in phase `phase`. */
static uint64_t req_value(uint64_t i, int phase)
{
    return cr_rng_hash64(i * 31 + (uint64_t)phase * 1000003u + 17);
}

/* ---- serving an array of values -------------------------------------------------- */

typedef struct req_owner {
    int phase;
    uint64_t served;
    /* what one received buffer brought: for index i, the receive count and the
     * previous hop of the last request served (0 = none yet) */
    uint64_t *last_recv;
    int *last_from;
    uint64_t nidx;
    uint64_t twice_in_a_buffer; /* requests for an index served twice from one buffer */
    size_t tail; /* serve_many: bytes of the reply past the value (the value's bytes
                    plus their place, so that a reply cut or shifted shows) */
    uint64_t replied_in_runs; /* replies replied_many was given on this rank */
} req_owner;

/* Request payload: {index}; the reply: the value, 8 bytes. */
static void req_serve_value(cr_comm *comm, cr_dedup_req *req, const void *p, size_t len,
                            void *user)
{
    req_owner *o = user;
    uint64_t i;
    REQ_CHECK(comm, len >= sizeof i, "request of %zu bytes", len);
    memcpy(&i, p, sizeof i);
    uint64_t v = req_value(i, o->phase);
    o->served++;
    int from = cr_dedup_from(req);
    if (o->last_recv && i < o->nidx && from != cr_comm_rank(comm)) {
        cr_stats st;
        cr_stats_get(comm, &st);
        if (o->last_recv[i] == st.mpi_recvs + 1 && o->last_from[i] == from)
            o->twice_in_a_buffer++;
        o->last_recv[i] = st.mpi_recvs + 1;
        o->last_from[i] = from;
    }
    cr_dedup_reply(comm, req, &v, sizeof v);
}

/* The same values served a run at a time (serve_many): request i's index at
 * payloads + i * stride, its value written at replies + i * 8. */
static void req_serve_values(cr_comm *comm, const void *payloads, size_t stride, size_t len,
                             size_t n, void *replies, void *user)
{
    req_owner *o = user;
    REQ_CHECK(comm, n >= 1 && n <= CR_DEDUP_SERVE_RUN && len >= sizeof(uint64_t),
              "serve_many given %zu requests of %zu bytes", n, len);
    for (size_t i = 0; i < n && len >= sizeof(uint64_t); i++) {
        uint64_t idx;
        memcpy(&idx, (const char *)payloads + i * stride, sizeof idx);
        uint64_t v = req_value(idx, o->phase);
        unsigned char *out = (unsigned char *)replies + i * (sizeof v + o->tail);
        memcpy(out, &v, sizeof v);
        for (size_t j = 0; j < o->tail; j++)
            out[sizeof v + j] = (unsigned char)(v + j);
    }
    o->served += n;
}

/* A request type serving values one by one (serve) or in runs (serve_many, whose
 * replies carry `tail` bytes after the value). */
static cr_dedup_request_type req_value_type(bool in_runs, size_t key_len, size_t tail)
{
    if (in_runs)
        return (cr_dedup_request_type){.serve_many = req_serve_values,
                                       .reply_len = sizeof(uint64_t) + tail, .key_len = key_len,
                                       .coalesce = 1};
    return (cr_dedup_request_type){.serve = req_serve_value, .key_len = key_len, .coalesce = 1};
}

/* One outstanding request: what it must get back, and how many replies it got. */
typedef struct req_slot {
    uint64_t expect;
    uint32_t replies;
    uint32_t wrong;
    uint32_t tail; /* bytes the reply holds past the value (req_owner's tail) */
} req_slot;

static void req_got_value(cr_comm *comm, const void *data, size_t len, void *ctx)
{
    (void)comm;
    req_slot *s = ctx;
    uint64_t v = 0;
    if (len >= sizeof v)
        memcpy(&v, data, sizeof v);
    s->replies++;
    bool right = len == sizeof v + s->tail && v == s->expect;
    for (size_t j = 0; right && j < s->tail; j++)
        right = ((const unsigned char *)data)[sizeof v + j] == (unsigned char)(v + j);
    s->wrong += !right;
}

/* The direct replies a run at a time (replied_many): req_got_value for each. */
static void req_got_values(cr_comm *comm, const void *replies, size_t stride, size_t len,
                           size_t n, void *user)
{
    for (size_t i = 0; i < n; i++)
        req_got_value(comm, cr_dedup_replied_data(replies, stride, i), len,
                      cr_dedup_replied_ctx(replies, stride, i));
    ((req_owner *)user)->replied_in_runs += n;
}

static long req_check_slots(cr_comm *comm, const req_slot *slots, size_t n, const char *what)
{
    for (size_t k = 0; k < n; k++)
        REQ_CHECK(comm, slots[k].replies == 1 && slots[k].wrong == 0,
                  "%s: request %zu got %u replies, %u wrong", what, k, slots[k].replies,
                  slots[k].wrong);
    return 0;
}

static cr_dedup_stats req_stats(cr_comm *comm)
{
    cr_dedup_stats s;
    cr_dedup_stats_get(comm, &s);
    return s;
}

/* Overload (the thesis's hot spot): every rank requests every one of `nidx` indices
 * held by rank 0, each `repeats` times; every request gets exactly one reply with
 * the right value; nothing waits after the barrier. */
static long req_overload(cr_comm *comm, int nidx, int repeats, int coalesce)
{
    long before = req_fails;
    req_owner owner = {.last_recv = calloc((size_t)nidx, sizeof(uint64_t)),
                       .last_from = calloc((size_t)nidx, sizeof(int)), .nidx = (uint64_t)nidx};
    int id = cr_dedup_register_request(
        comm, &(cr_dedup_request_type){.serve = req_serve_value, .key_len = 8, .coalesce = coalesce},
        &owner);
    size_t n = (size_t)nidx * (size_t)repeats;
    req_slot *slots = calloc(n, sizeof *slots);
    int me = cr_comm_rank(comm);
    cr_dedup_stats s0 = req_stats(comm);
    for (int r = 0; r < repeats; r++)
        for (int j = 0; j < nidx; j++) {
            /* each rank walks the indices from its own starting point */
            uint64_t i = (uint64_t)((j + me * 7) % nidx);
            req_slot *s = &slots[(size_t)r * (size_t)nidx + (size_t)j];
            s->expect = req_value(i, 0);
            cr_dedup_request(comm, 0, id, &i, sizeof i, req_got_value, s);
        }
    cr_barrier(comm);
    /* Off, no request joins one already in flight: not at its source, not at a hop
     * it passes (joining there would be a wrong join counted as coalesced). */
    cr_dedup_stats s1 = req_stats(comm);
    REQ_CHECK(comm, coalesce || s1.requests_coalesced == s0.requests_coalesced,
              "%llu requests coalesced with coalescing off",
              (unsigned long long)(s1.requests_coalesced - s0.requests_coalesced));
    req_check_slots(comm, slots, n, "overload");
    REQ_CHECK(comm, cr_dedup_pending(comm) == 0, "%zu requests wait after the barrier",
              cr_dedup_pending(comm));
    REQ_CHECK(comm, me == 0 || owner.served == 0, "rank %d served %llu requests", me,
              (unsigned long long)owner.served);
    /* With coalescing on, a rank never has two requests for one index in flight, so
     * no buffer from it holds two. (Off, a route that passes the records of two
     * buffers on in one, as nr does, may bring two.) */
    REQ_CHECK(comm, !coalesce || owner.twice_in_a_buffer == 0,
              "%llu times one buffer brought two requests for one index",
              (unsigned long long)owner.twice_in_a_buffer);
    free(owner.last_recv);
    free(owner.last_from);
    free(slots);
    return req_fails - before;
}

/* ---- replies of every size, to every rank, self included -------------------------- */

static size_t req_reply_len(uint64_t i, size_t buffer_bytes)
{
    switch (i % 4) {
    case 0: return 0;
    case 1: return 8;
    case 2: return 13; /* not a multiple of 8 */
    default: return 3 * buffer_bytes + 5; /* larger than a send buffer */
    }
}

static unsigned char req_byte(uint64_t i, size_t k)
{
    return (unsigned char)(cr_rng_hash64(i * 131 + k) & 0xff);
}

typedef struct req_shape_owner {
    size_t buffer_bytes;
    unsigned char *reply;
} req_shape_owner;

/* Request payload: {index, tail}: the key is the index only. */
static void req_serve_shape(cr_comm *comm, cr_dedup_req *req, const void *p, size_t len,
                            void *user)
{
    req_shape_owner *o = user;
    uint64_t i;
    REQ_CHECK(comm, len == 16, "request of %zu bytes", len);
    memcpy(&i, p, sizeof i);
    size_t n = req_reply_len(i, o->buffer_bytes);
    for (size_t k = 0; k < n; k++)
        o->reply[k] = req_byte(i, k);
    cr_dedup_reply(comm, req, o->reply, n);
}

typedef struct req_shape_slot {
    uint64_t index;
    size_t buffer_bytes;
    uint32_t replies;
    uint32_t wrong;
} req_shape_slot;

static void req_got_shape(cr_comm *comm, const void *data, size_t len, void *ctx)
{
    (void)comm;
    req_shape_slot *s = ctx;
    s->replies++;
    const unsigned char *d = data;
    if (len != req_reply_len(s->index, s->buffer_bytes) || ((uintptr_t)data & 7)) {
        s->wrong++;
        return;
    }
    for (size_t k = 0; k < len; k++)
        if (d[k] != req_byte(s->index, k)) {
            s->wrong++;
            return;
        }
}

/* Every rank asks every rank (itself too) for `per_rank` indices, twice each; the
 * replies are 0, 8, 13 bytes or larger than a send buffer. */
static long req_shapes(cr_comm *comm, size_t buffer_bytes, int per_rank)
{
    long before = req_fails;
    req_shape_owner owner = {.buffer_bytes = buffer_bytes,
                             .reply = malloc(3 * buffer_bytes + 5)};
    int id = cr_dedup_register_request(
        comm, &(cr_dedup_request_type){.serve = req_serve_shape, .key_len = 8, .coalesce = 1},
        &owner);
    int size = cr_comm_size(comm), me = cr_comm_rank(comm);
    size_t n = (size_t)size * (size_t)per_rank * 2;
    req_shape_slot *slots = calloc(n, sizeof *slots);
    size_t k = 0;
    for (int twice = 0; twice < 2; twice++)
        for (int r = 0; r < size; r++)
            for (int j = 0; j < per_rank; j++) {
                int dest = (me + r) % size;
                uint64_t p[2] = {(uint64_t)dest * 1000 + (uint64_t)j, (uint64_t)me};
                slots[k] = (req_shape_slot){.index = p[0], .buffer_bytes = buffer_bytes};
                cr_dedup_request(comm, dest, id, p, sizeof p, req_got_shape, &slots[k]);
                k++;
            }
    cr_barrier(comm);
    for (k = 0; k < n; k++)
        REQ_CHECK(comm, slots[k].replies == 1 && slots[k].wrong == 0,
                  "shapes: request %zu (index %llu) got %u replies, %u wrong", k,
                  (unsigned long long)slots[k].index, slots[k].replies, slots[k].wrong);
    free(slots);
    free(owner.reply);
    return req_fails - before;
}

/* ---- requests from reply callbacks and from serve ------------------------------- */

/* A global array next[0, n), block-distributed: next[x] = (x * 7 + 3) % n. A walk
 * requests next[x] from its owner and, in the reply callback, the next step, until
 * it has made `steps` steps; serve also sends a one-way request of another type
 * back to the walk's origin (a request issued from serve). */
typedef struct req_chase {
    uint64_t n;
    int steps;
    int ping_id;
    uint64_t pings_served; /* pings this rank answered */
    uint64_t pongs;        /* replies to the pings this rank sent */
    uint64_t next_served;  /* steps this rank served (each sent one ping) */
} req_chase;

static int req_owner_of(uint64_t x, uint64_t n, int size)
{
    return (int)(x * (uint64_t)size / n);
}

static uint64_t req_next(uint64_t x, uint64_t n)
{
    return (x * 7 + 3) % n;
}

static void req_got_pong(cr_comm *comm, const void *data, size_t len, void *ctx)
{
    (void)data;
    req_chase *c = ctx;
    REQ_CHECK(comm, len == 0, "pong of %zu bytes", len);
    c->pongs++;
}

static void req_serve_ping(cr_comm *comm, cr_dedup_req *req, const void *p, size_t len,
                           void *user)
{
    (void)p, (void)len;
    req_chase *c = user;
    c->pings_served++;
    cr_dedup_reply(comm, req, NULL, 0);
}

static void req_serve_next(cr_comm *comm, cr_dedup_req *req, const void *p, size_t len,
                           void *user)
{
    req_chase *c = user;
    uint64_t x;
    memcpy(&x, p, sizeof x);
    (void)len;
    REQ_CHECK(comm, req_owner_of(x, c->n, cr_comm_size(comm)) == cr_comm_rank(comm),
              "index %llu served by rank %d", (unsigned long long)x, cr_comm_rank(comm));
    uint64_t nx = req_next(x, c->n);
    c->next_served++;
    cr_dedup_reply(comm, req, &nx, sizeof nx);
    /* not merged (key_len 0): one ping per request served */
    cr_dedup_request(comm, cr_dedup_origin(req), c->ping_id, &x, sizeof x, req_got_pong, c);
}

typedef struct req_walk {
    req_chase *chase;
    int id;
    uint64_t at;
    int taken;
} req_walk;

static void req_step(cr_comm *comm, const void *data, size_t len, void *ctx)
{
    req_walk *w = ctx;
    REQ_CHECK(comm, len == 8, "step reply of %zu bytes", len);
    memcpy(&w->at, data, sizeof w->at);
    if (++w->taken < w->chase->steps)
        cr_dedup_request(comm, req_owner_of(w->at, w->chase->n, cr_comm_size(comm)), w->id,
                         &w->at, sizeof w->at, req_step, w);
}

static long req_chains(cr_comm *comm, int walks, int steps)
{
    long before = req_fails;
    int size = cr_comm_size(comm), me = cr_comm_rank(comm);
    req_chase c = {.n = (uint64_t)size * 100, .steps = steps};
    c.ping_id = cr_dedup_register_request(
        comm, &(cr_dedup_request_type){.serve = req_serve_ping}, &c);
    int id = cr_dedup_register_request(
        comm, &(cr_dedup_request_type){.serve = req_serve_next, .key_len = 8, .coalesce = 1},
        &c);
    req_walk *w = calloc((size_t)walks, sizeof *w);
    for (int k = 0; k < walks; k++) {
        w[k] = (req_walk){.chase = &c, .id = id, .at = (uint64_t)(me * 37 + k * 11) % c.n};
        cr_dedup_request(comm, req_owner_of(w[k].at, c.n, size), id, &w[k].at, sizeof w[k].at,
                         req_step, &w[k]);
    }
    cr_barrier(comm);
    for (int k = 0; k < walks; k++) {
        uint64_t x = (uint64_t)(me * 37 + k * 11) % c.n;
        for (int s = 0; s < steps; s++)
            x = req_next(x, c.n);
        REQ_CHECK(comm, w[k].taken == steps && w[k].at == x,
                  "walk %d: %d steps to %llu, expected %d to %llu", k, w[k].taken,
                  (unsigned long long)w[k].at, steps, (unsigned long long)x);
    }
    /* every step served sent one ping from serve, and every ping got its pong */
    REQ_CHECK(comm, c.pongs == c.next_served, "%llu pongs for %llu pings",
              (unsigned long long)c.pongs, (unsigned long long)c.next_served);
    REQ_CHECK(comm, cr_dedup_pending(comm) == 0, "%zu requests wait after the barrier",
              cr_dedup_pending(comm));
    free(w);
    return req_fails - before;
}

/* ---- the coalescing rule ------------------------------------------------------------ */

/* Each rank issues `n` identical requests to rank 0 with cr_flush between them. A
 * request that finds the previous one still waiting for its reply (its callback has
 * not run) must join it: merged if that one is still in the send buffer, coalesced
 * if it has left, and with coalescing off it must never be coalesced. A join sends
 * nothing, so no handler runs during it and the counters' change is exactly its
 * own. Every request still gets its reply. */
static long req_coalesce_rule(cr_comm *comm, int n, int coalesce)
{
    long before = req_fails;
    req_owner owner = {0};
    int id = cr_dedup_register_request(
        comm, &(cr_dedup_request_type){.serve = req_serve_value, .key_len = 8, .coalesce = coalesce},
        &owner);
    cr_barrier(comm);
    req_slot *slots = calloc((size_t)n, sizeof *slots);
    uint64_t key = 5 + (uint64_t)cr_comm_rank(comm) % 3;
    int leader = -1; /* the request whose entry later ones may join */
    for (int k = 0; k < n; k++) {
        slots[k].expect = req_value(key, 0);
        bool waits = leader >= 0 && slots[leader].replies == 0;
        cr_dedup_stats s0 = req_stats(comm);
        cr_dedup_request(comm, 0, id, &key, sizeof key, req_got_value, &slots[k]);
        cr_dedup_stats s1 = req_stats(comm);
        uint64_t merged = s1.requests_merged_at_source - s0.requests_merged_at_source;
        uint64_t co = s1.requests_coalesced - s0.requests_coalesced;
        if (waits && coalesce)
            REQ_CHECK(comm, merged + co == 1, "request %d did not join a waiting one (%llu "
                      "merged, %llu coalesced)", k, (unsigned long long)merged,
                      (unsigned long long)co);
        if (!coalesce)
            REQ_CHECK(comm, co == 0, "request %d coalesced with coalescing off", k);
        bool joined = waits && (coalesce ? merged + co == 1 : merged == 1);
        if (!joined)
            leader = k;
        if (k % 2 == 1)
            cr_flush(comm); /* requests 2k and 2k+1 may merge in the buffer */
    }
    cr_barrier(comm);
    req_check_slots(comm, slots, (size_t)n, "coalesce");
    REQ_CHECK(comm, cr_dedup_pending(comm) == 0, "%zu requests wait after the barrier",
              cr_dedup_pending(comm));
    free(slots);
    return req_fails - before;
}

/* The same rule over many keys at once, so that the table of waiting requests fills,
 * collides and empties while requests arrive: each rank issues `rounds` requests for
 * each of `nkeys` keys spread over every owner, interleaved (nkeys a multiple of 256,
 * or less), with coalescing on. A
 * request whose key's previous request still waits for its reply must join it. The
 * type's prefetch hook must see every request this rank serves, and no other. */
typedef struct req_prefetch_owner {
    req_owner owner;
    uint64_t prefetched, foreign;
} req_prefetch_owner;

static uint64_t req_key_of(int j)
{
    return cr_rng_hash64((uint64_t)j) >> 8; /* spread over the table's slots */
}

static void req_prefetch_count(const void *p, size_t len, void *user)
{
    req_prefetch_owner *o = user;
    uint64_t key;
    memcpy(&key, p, sizeof key);
    o->prefetched++;
    if (len != sizeof key)
        o->foreign++;
}

static void req_serve_counted(cr_comm *comm, cr_dedup_req *req, const void *p, size_t len,
                              void *user)
{
    req_serve_value(comm, req, p, len, &((req_prefetch_owner *)user)->owner);
}

static long req_coalesce_many(cr_comm *comm, int nkeys, int rounds)
{
    long before = req_fails;
    req_prefetch_owner po = {{0}, 0, 0};
    int id = cr_dedup_register_request(
        comm,
        &(cr_dedup_request_type){.serve = req_serve_counted, .prefetch = req_prefetch_count,
                                 .key_len = 8, .coalesce = 1},
        &po);
    cr_barrier(comm);
    int size = cr_comm_size(comm), me = cr_comm_rank(comm);
    size_t n = (size_t)nkeys * (size_t)rounds;
    req_slot *slots = calloc(n, sizeof *slots);
    int *leader = malloc((size_t)nkeys * sizeof *leader);
    for (int j = 0; j < nkeys; j++)
        leader[j] = -1;
    uint64_t served_before = po.owner.served;
    for (size_t k = 0; k < n; k++) {
        /* blocks of up to 256 keys, each asked `rounds` times in turn, from a rank's
         * own offset: a key's requests come close enough to wait on each other */
        size_t block = (size_t)(nkeys < 256 ? nkeys : 256), per = block * (size_t)rounds;
        size_t first = k / per * block, in = k % per % block;
        int j = (int)((first + (in * 97u + (size_t)me * 31u) % block) % (size_t)nkeys);
        uint64_t key = req_key_of(j);
        int owner = (int)(key % (uint64_t)size);
        slots[k].expect = req_value(key, 0);
        bool waits = leader[j] >= 0 && slots[leader[j]].replies == 0;
        cr_dedup_stats s0 = req_stats(comm);
        cr_dedup_request(comm, owner, id, &key, sizeof key, req_got_value, &slots[k]);
        cr_dedup_stats s1 = req_stats(comm);
        uint64_t joined = s1.requests_merged_at_source - s0.requests_merged_at_source +
                          s1.requests_coalesced - s0.requests_coalesced;
        /* A request sent direct while merging rests (REST_WINDOW) neither joins nor
         * can be joined; every other must join a waiting one. */
        bool direct = s1.requests_direct != s0.requests_direct;
        if (waits && !direct)
            REQ_CHECK(comm, joined == 1, "request %zu for key %d did not join the waiting one",
                      k, j);
        if (!waits && !direct)
            leader[j] = (int)k;
    }
    cr_barrier(comm);
    req_check_slots(comm, slots, n, "coalesce-many");
    REQ_CHECK(comm, cr_dedup_pending(comm) == 0, "%zu requests wait after the barrier",
              cr_dedup_pending(comm));
    uint64_t served = po.owner.served - served_before;
    REQ_CHECK(comm, po.foreign == 0 && po.prefetched == served,
              "prefetch saw %llu requests (%llu of a wrong length) for %llu served",
              (unsigned long long)po.prefetched, (unsigned long long)po.foreign,
              (unsigned long long)served);
    free(leader);
    free(slots);
    return req_fails - before;
}

/* ---- never across a barrier ---------------------------------------------------------- */

/* Rank 0's values change between phases; requests issued after a barrier see the new
 * values, whatever waited before it. */
static long req_phases(cr_comm *comm, int phases, int nidx)
{
    long before = req_fails;
    req_owner owner = {0};
    int id = cr_dedup_register_request(
        comm, &(cr_dedup_request_type){.serve = req_serve_value, .key_len = 8, .coalesce = 1},
        &owner);
    req_slot *slots = calloc((size_t)nidx, sizeof *slots);
    for (int ph = 0; ph < phases; ph++) {
        owner.phase = ph; /* rank 0's write: no request is being served now */
        cr_barrier(comm);
        memset(slots, 0, (size_t)nidx * sizeof *slots);
        for (int j = 0; j < nidx; j++) {
            uint64_t i = (uint64_t)j;
            slots[j].expect = req_value(i, ph);
            cr_dedup_request(comm, 0, id, &i, sizeof i, req_got_value, &slots[j]);
        }
        cr_barrier(comm);
        req_check_slots(comm, slots, (size_t)nidx, "phases");
    }
    free(slots);
    return req_fails - before;
}

/* Waiting requests are bounded (CR_DEDUP_WAITING_MOST): `n` requests from each rank
 * for 8 hot keys, no barrier between them, so that they join one another (merging
 * pays: it never rests) and every reply arrives right. Where every owner is one hop
 * (the direct route) no more than the bound wait at once on any rank, and the
 * requests past it travel direct; unbounded, the waiters of the 8 keys pile up. */
static long req_waiting_bound(cr_comm *comm, int n)
{
    long before = req_fails;
    req_owner owner = {0};
    int id = cr_dedup_register_request(
        comm, &(cr_dedup_request_type){.serve = req_serve_value, .key_len = 8, .coalesce = 1},
        &owner);
    int size = cr_comm_size(comm);
    req_slot *slots = calloc((size_t)n, sizeof *slots);
    REQ_CHECK(comm, slots != NULL, "allocate %d slots", n);
    if (!slots)
        return req_fails - before;
    cr_barrier(comm);
    cr_dedup_stats_reset(comm);
    for (int k = 0; k < n; k++) {
        uint64_t key = (uint64_t)(k % 8);
        slots[k].expect = req_value(key, 0);
        cr_dedup_request(comm, (int)(key % (uint64_t)size), id, &key, sizeof key,
                         req_got_value, &slots[k]);
    }
    cr_barrier(comm);
    req_check_slots(comm, slots, (size_t)n, "waiting bound");
    cr_dedup_stats st = req_stats(comm);
    uint64_t joined = st.requests_merged_at_source + st.requests_coalesced;
    REQ_CHECK(comm, joined > 0, "no request of %d for 8 keys joined another", n);
    if (cr_router_route(cr_comm_router(comm))->kind == CR_ROUTE_DIRECT) {
        REQ_CHECK(comm, st.peak_waiting <= CR_DEDUP_WAITING_MOST,
                  "%llu requests waited at once, above the bound %d",
                  (unsigned long long)st.peak_waiting, CR_DEDUP_WAITING_MOST);
        REQ_CHECK(comm, st.requests_direct + joined + st.requests_served >= (uint64_t)n / 2,
                  "counters do not add up: %llu direct, %llu joined",
                  (unsigned long long)st.requests_direct, (unsigned long long)joined);
    }
    REQ_CHECK(comm, cr_dedup_pending(comm) == 0, "%zu requests wait after the barrier",
              cr_dedup_pending(comm));
    free(slots);
    return req_fails - before;
}

/* Merging rests only when it does not pay (src/dedup/request.c, REST_WINDOW): first
 * `distinct` requests from each rank for keys nobody else asks (so none can join;
 * past the first window the type rests from its table), every one answered right;
 * then, after a barrier (a new phase measures afresh), `repeated` requests for 8
 * keys: they must join again. */
static long req_rest(cr_comm *comm, int distinct, int repeated)
{
    long before = req_fails;
    req_owner owner = {0};
    int id = cr_dedup_register_request(
        comm, &(cr_dedup_request_type){.serve = req_serve_value, .key_len = 8, .coalesce = 1},
        &owner);
    int size = cr_comm_size(comm), me = cr_comm_rank(comm);
    size_t n = (size_t)distinct + (size_t)repeated;
    req_slot *slots = calloc(n, sizeof *slots);
    for (int k = 0; k < distinct; k++) {
        uint64_t key = (uint64_t)me * 1000003u + (uint64_t)k;
        slots[k].expect = req_value(key, 0);
        cr_dedup_request(comm, (int)(key % (uint64_t)size), id, &key, sizeof key,
                         req_got_value, &slots[k]);
    }
    cr_barrier(comm);
    cr_dedup_stats s0 = req_stats(comm);
    /* With thousands of distinct keys merging rests, and resting requests go direct. */
    if (distinct >= 4096 && cr_router_route(cr_comm_router(comm))->kind == CR_ROUTE_DIRECT)
        REQ_CHECK(comm, s0.requests_direct >= (uint64_t)distinct / 2,
                  "rest: %llu of %d requests for distinct keys went direct",
                  (unsigned long long)s0.requests_direct, distinct);
    for (int k = 0; k < repeated; k++) {
        uint64_t key = (uint64_t)(k % 8);
        slots[distinct + k].expect = req_value(key, 0);
        cr_dedup_request(comm, (int)(key % (uint64_t)size), id, &key, sizeof key,
                         req_got_value, &slots[distinct + k]);
    }
    cr_dedup_stats s1 = req_stats(comm);
    uint64_t joined = s1.requests_merged_at_source - s0.requests_merged_at_source +
                      s1.requests_coalesced - s0.requests_coalesced;
    REQ_CHECK(comm, joined > (uint64_t)repeated / 2,
              "after the barrier, %llu of %d requests for 8 keys joined others",
              (unsigned long long)joined, repeated);
    cr_barrier(comm);
    req_check_slots(comm, slots, n, "rest");
    REQ_CHECK(comm, cr_dedup_pending(comm) == 0, "%zu requests wait after the barrier",
              cr_dedup_pending(comm));
    free(slots);
    return req_fails - before;
}

/* cr_dedup_request_many: `n` requests per rank in chunks of 1 to 61, the first half
 * for keys nobody else asks (merging rests, so they travel direct, in bulk), the
 * second for 8 keys every rank asks (they join in the table); every request gets one
 * right reply, each counts once in the type's counters, nothing waits after the
 * barrier. in_runs: the owners serve with serve_many (direct requests in runs, the
 * others one at a time), and what they served is what the counters say. */
static long req_many(cr_comm *comm, int n, bool in_runs)
{
    long before = req_fails;
    req_owner owner = {0};
    cr_dedup_request_type type = req_value_type(in_runs, 8, 0);
    int id = cr_dedup_register_request(comm, &type, &owner);
    int size = cr_comm_size(comm), me = cr_comm_rank(comm);
    req_slot *slots = calloc((size_t)n, sizeof *slots);
    uint64_t keys[61];
    int owners[61];
    void *ctxs[61];
    cr_dedup_stats s0 = req_stats(comm);
    uint64_t rng = cr_rng_hash64((uint64_t)me + 77);
    for (int k = 0; k < n;) {
        int m = 1 + (int)(cr_rng_next(&rng) % 61);
        if (m > n - k)
            m = n - k;
        for (int j = 0; j < m; j++, k++) {
            keys[j] = k < n / 2 ? (uint64_t)me * 1000003u + (uint64_t)k : (uint64_t)(k % 8);
            owners[j] = (int)(keys[j] % (uint64_t)size);
            ctxs[j] = &slots[k];
            slots[k].expect = req_value(keys[j], 0);
        }
        cr_dedup_request_many(comm, id, owners, keys, sizeof *keys, (size_t)m, req_got_value, ctxs);
    }
    cr_dedup_request_many(comm, id, owners, keys, sizeof *keys, 0, req_got_value, ctxs);
    cr_barrier(comm);
    req_check_slots(comm, slots, (size_t)n, "many");
    cr_dedup_stats s1 = req_stats(comm);
    REQ_CHECK(comm, s1.requests - s0.requests == (uint64_t)n, "%llu requests counted for %d",
              (unsigned long long)(s1.requests - s0.requests), n);
    REQ_CHECK(comm, s1.requests_served - s0.requests_served == owner.served,
              "many: %llu requests counted as served, %llu served",
              (unsigned long long)(s1.requests_served - s0.requests_served),
              (unsigned long long)owner.served);
    REQ_CHECK(comm, cr_dedup_pending(comm) == 0, "%zu requests wait after the barrier",
              cr_dedup_pending(comm));
    free(slots);
    return req_fails - before;
}

/* Direct requests: an unkeyed type's requests from this rank to owners one hop away
 * travel with no waiting entry, but only those naming the type's first reply
 * function here; a second reply function takes the entry path. Every request gets
 * exactly its own reply either way (fails if a direct reply went to the wrong
 * function or ctx, or if direct requests were never used). in_runs: served by
 * serve_many, with `tail` more bytes in each reply (over 56, the replies of a run
 * leave one by one instead of together). replies_in_runs: the direct replies come to
 * replied_many, every one of them and no other (a reply given to the function
 * instead, or twice, fails the count or the slots). */
static void req_got_value_too(cr_comm *comm, const void *data, size_t len, void *ctx)
{
    req_got_value(comm, data, len, ctx);
    ((req_slot *)ctx)->wrong += 1000; /* undone by the caller: proves which function ran */
}

static long req_direct(cr_comm *comm, int n, bool in_runs, size_t tail, bool replies_in_runs)
{
    long before = req_fails;
    req_owner owner = {.tail = tail};
    cr_dedup_request_type type = req_value_type(in_runs, 0, tail);
    type.coalesce = 0;
    if (replies_in_runs)
        type.replied_many = req_got_values;
    int id = cr_dedup_register_request(comm, &type, &owner);
    int size = cr_comm_size(comm), me = cr_comm_rank(comm);
    const cr_router *router = cr_comm_router(comm);
    req_slot *slots = calloc((size_t)n, sizeof *slots);
    cr_dedup_stats s0 = req_stats(comm);
    uint64_t one_hop_first = 0;
    for (int k = 0; k < n; k++) {
        uint64_t i = (uint64_t)me * 7919u + (uint64_t)k;
        int dest = (int)(cr_rng_hash64(i) % (uint64_t)size);
        bool first = k % 3 != 2;
        slots[k].expect = req_value(i, 0);
        slots[k].tail = (uint32_t)tail;
        one_hop_first += first && (dest == me || cr_router_next_hop(router, me, dest) == dest);
        cr_dedup_request(comm, dest, id, &i, sizeof i, first ? req_got_value : req_got_value_too,
                         &slots[k]);
    }
    cr_barrier(comm);
    for (int k = 0; k < n; k++) {
        bool first = k % 3 != 2;
        REQ_CHECK(comm, first || slots[k].wrong >= 1000,
                  "direct: request %d's reply went to the wrong function", k);
        if (!first && slots[k].wrong >= 1000)
            slots[k].wrong -= 1000;
    }
    req_check_slots(comm, slots, (size_t)n, "direct");
    cr_dedup_stats s1 = req_stats(comm);
    uint64_t direct = s1.requests_direct - s0.requests_direct;
    REQ_CHECK(comm, direct == one_hop_first,
              "direct: %llu requests went direct, %llu could (one hop, first reply function)",
              (unsigned long long)direct, (unsigned long long)one_hop_first);
    REQ_CHECK(comm, owner.replied_in_runs == (replies_in_runs ? direct : 0),
              "direct: replied_many was given %llu replies, want %llu",
              (unsigned long long)owner.replied_in_runs,
              (unsigned long long)(replies_in_runs ? direct : 0));
    REQ_CHECK(comm, cr_dedup_pending(comm) == 0, "direct: %zu requests wait after the barrier",
              cr_dedup_pending(comm));
    free(slots);
    return req_fails - before;
}

/* A move to another route between barriers, as COURIER_ROUTE=auto makes: direct
 * requests (req_direct) before it, after it and after the move back, each time only
 * to owners one hop away under the route of the moment. From the direct route to the
 * hypercube, a request module that kept the direct route's "every owner is one hop
 * away" would send every request direct and fail the count. */
static long req_route_move(cr_comm *comm, int n)
{
    long before = req_fails;
    cr_route was = *cr_router_route(cr_comm_router(comm)), next;
    char err[200];
    bool direct = was.kind == CR_ROUTE_DIRECT;
    REQ_CHECK(comm, cr_route_parse(direct ? "hypercube" : "direct", &next, err, sizeof err) == 0,
              "%s", err);
    req_direct(comm, n, false, 0, false);
    cr_barrier(comm);
    cr_autotune_take_route(comm, &next);
    req_direct(comm, n, true, 0, true);
    cr_barrier(comm);
    cr_autotune_take_route(comm, &was);
    req_direct(comm, n, false, 0, false);
    return req_fails - before;
}

/* Conservation over all ranks, from the sums of the ranks' counters: every request
 * issued is served or joined another (merged or coalesced), and every join got a
 * copy of a reply. */
static long req_check_totals(cr_comm *comm, const cr_dedup_stats *sum)
{
    long before = req_fails;
    uint64_t joins = sum->requests_merged_at_source + sum->requests_merged_at_hops +
                     sum->requests_coalesced;
    REQ_CHECK(comm, sum->requests == sum->requests_served + joins,
              "requests %llu, served %llu + joined %llu", (unsigned long long)sum->requests,
              (unsigned long long)sum->requests_served, (unsigned long long)joins);
    REQ_CHECK(comm, sum->replies_fanned_out == joins, "replies fanned out %llu, joins %llu",
              (unsigned long long)sum->replies_fanned_out, (unsigned long long)joins);
    return req_fails - before;
}

#endif
