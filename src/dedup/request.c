/* Requests with replies, merged on their way and split again on the way back
 * (include/courier/dedup.h; docs/dedup.md). The thesis behind src/darray
 * (Peters 2024, docs/references.md, sections 4.4-4.5) merges
 * the requests of a lock-step grid exchange with a hash map per hop and splits the
 * replies by the map on the way back; here the same happens asynchronously, per
 * request, at every rank a request passes.
 *
 * A request travels hop by hop, each hop a plain record to the route's next rank.
 * Every rank a request leaves (its requester's and every hop's) keeps a *waiting
 * entry*: the request's identity (type, owner, length, key) and the list of those
 * that asked, each either a local requester (reply_fn, ctx) or the previous hop and
 * the token naming its own entry there. The record sent on carries this rank's
 * token. An identical request that reaches the rank while the entry waits joins its
 * list instead of being sent. When the reply comes back (addressed to the token) the
 * entry is taken out, and the reply goes to every member of the list: a call of
 * reply_fn, or a reply record to the previous hop with that hop's token.
 *
 * A request that needs no entry travels without one (*direct*): one this rank issues
 * that reaches its owner in one hop and cannot be joined (its type has no key, or
 * merging rests, see REST_WINDOW) carries its requester's ctx instead of a token, and
 * its reply carries the ctx back to the type's reply function on this rank. So when
 * nothing merges a request costs what a hand-written gather costs (bale's index
 * gather packs the requester's slot into the request the same way): no table, no
 * entry, no state on either side.
 *
 * Memory: one entry per distinct request this rank sent and waits for (56 bytes and
 * the key, 64 for an 8-byte key, holding its first requester), a 32-byte waiter per
 * later requester that joined it (this rank's own one-hop requests add them only up
 * to CR_DEDUP_WAITING_MOST), both in pools that grow by doubling and are reused,
 * and an open-addressing table of 8-byte slots, at least twice as many as the
 * entries reachable by key; nothing is allocated per request once the pools have
 * grown. Request and reply records are handled in batches, each record's memory
 * fetched a few records ahead (docs/dedup.md).
 *
 * The module sees the mailbox only through its public API and module.h. */
#include "common/code_id.h"
#include "courier/rng.h"
#include "courier/dedup.h"

#include "common/fatal.h"
#include "mailbox/module.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
#define EMPTY UINT64_MAX
/* Records ahead of the one being handled whose memory is fetched early: an entry's
 * reply, a served request's data (the type's prefetch), so that the cache misses of a
 * received buffer overlap instead of coming one after another. */
#define PREFETCH_AHEAD 8

/* The record of a request on the wire: this header, then the payload. */
typedef struct req_header {
    int32_t owner;  /* the rank that serves it */
    int32_t origin; /* the rank that issued it (the first, if merged) */
    uint32_t token; /* the sender's entry, which the reply names */
    uint32_t pad;
} req_header;

/* The record of a reply: this header, then the data. */
typedef struct rep_header {
    uint32_t token; /* the receiver's entry */
    uint32_t pad;
} rep_header;

/* Someone waiting for an entry's reply. */
typedef struct waiter {
    uint32_t next;         /* the next waiter in the pool, or NONE */
    int32_t hop;           /* previous hop, or -1: a requester on this rank */
    uint32_t token;        /* the previous hop's entry */
    uint32_t pad;
    cr_dedup_reply_fn fn;  /* for a local requester */
    void *ctx;
} waiter;

/* A request this rank sent and waits for. Its first waiter lives in the entry, so a
 * request nobody joins touches one entry and no pool; later waiters hang off
 * first.next in the waiter pool. Entries are `stride` bytes apart: the header, then
 * the key (as long as the longest key of a registered type). */
typedef struct entry {
    waiter first;
    uint32_t tail;   /* the last later waiter, or NONE; while free, the next free entry */
    uint32_t hash;   /* the identity's hash: its home slot in the table, and its tag */
    int32_t owner;
    uint32_t len;
    uint32_t epoch;  /* send epoch of the request's buffer before it was appended */
    uint16_t type;
    uint8_t in_use;
    uint8_t in_table; /* the newest entry of its identity (reachable by key) */
    char key[];
} entry;

typedef struct rtype {
    cr_dedup_request_type t;
    void *user;
    int handler; /* the mailbox handler of its request records */
    /* Direct requests: their records {ctx, payload} and replies {ctx, data}, and the
     * reply function they are for (the first a request of this type named on this
     * rank; requests naming another take the entry path). */
    int direct_handler, direct_reply_handler;
    cr_dedup_reply_fn direct_fn;
    struct dedup_state *state;
    /* Joins of this rank's one-hop requests over the current window, how many
     * one-hop requests still skip the table, and how many the next rest skips (see
     * REST_WINDOW). */
    uint32_t tries, joins, rest_left, rest_next;
} rtype;

/* Merging rests when it does not pay. A request this rank issues that reaches its
 * owner in one hop can be joined only by this rank's own later requests; when fewer
 * than 1 in REST_PAYS of a window of REST_WINDOW such requests joined (half: an
 * entry costs a look-up, an insert and a removal in tables of many thousand live
 * entries, cache misses that cost more than the request and reply a join saves on
 * one node; with 7 in 10 requests joining, bale's index gather with 3-skewed keys ran
 * at half the rate of the same requests sent direct, docs/dedup.md), the type's
 * next requests of that kind skip the table (no look-up, no insert: the cost of a
 * type that never merges), REST_FIRST of them, twice as many after each window that
 * again did not pay, up to REST_MOST; then the table is tried again. A window that
 * pays starts the rests from REST_FIRST again, and every cr_barrier starts the
 * measure afresh, as a new phase may ask other keys. Requests that travel through
 * hops always use the table: they can meet others on the way. */
#define REST_WINDOW 1024
#define REST_PAYS 2
#define REST_FIRST (8 * REST_WINDOW)
#define REST_MOST (512 * REST_WINDOW)

typedef struct dedup_state {
    int reply_handler;
    rtype **types;
    int ntypes;
    int *type_of_handler; /* mailbox handler id -> index in types, or -1 */
    int handler_cap;

    char *pool; /* the entries, `stride` bytes each */
    size_t stride, key_cap;
    uint32_t nentries, entry_cap, free_entries, live;
    waiter *waiters;
    uint32_t waiter_cap, free_waiters, live_waiters;
    /* The entries reachable by key, open addressing with linear probing: a slot is
     * (hash << 32 | entry), or EMPTY. A lookup compares the hashes in the slots, a
     * few consecutive words, and reads an entry only when they match: when keys do
     * not repeat, the table costs one or two cache lines of its own. */
    uint64_t *slots;
    uint32_t nslots, in_table; /* nslots a power of two, at least twice in_table */

    char *scratch; /* a record being built (request or reply) */
    size_t scratch_cap;
    size_t direct_pending; /* direct requests of this rank waiting for their replies */
    int size;              /* the comm's ranks */
    bool every_owner_one_hop; /* the direct route: no request passes another rank */
    cr_dedup_req *serving;
    struct tagged_stage *replies; /* the direct replies of the batch being served */
    cr_dedup_stats stats;
} dedup_state;

struct cr_dedup_req {
    int prev;       /* where the reply goes */
    uint32_t token; /* ... and the entry it names there */
    int origin;
    bool replied;
    const struct rtype *direct; /* a direct request: its type, and ctx goes back */
    uint64_t ctx;
};

static void state_destroy(cr_comm *comm, void *arg);
static void state_stats_reset(cr_comm *comm, void *arg);
static void state_new_phase(cr_comm *comm, void *arg);
static void state_stats_print(cr_comm *comm, void *arg, FILE *out);

/* Whether every owner is one hop away: the direct route (kept, since it is asked per
 * request; COURIER_ROUTE=auto's moves update it). */
static void route_changed(cr_comm *comm, void *state)
{
    dedup_state *s = state;
    s->every_owner_one_hop =
        s->size == 1 || cr_router_route(cr_comm_router(comm))->kind == CR_ROUTE_DIRECT;
}

static const cr_module_type dedup_module = {
    .name = "dedup requests",
    .poll = NULL,
    .destroy = state_destroy,
    .stats_reset = state_stats_reset,
    .stats_print = state_stats_print,
    .drain = state_new_phase,
    .route_changed = route_changed,
};

/* The comm whose state this thread found last: a request or reply per record would
 * otherwise search the comm's modules each time. Forgotten when that state goes. */
static _Thread_local struct {
    const cr_comm *comm;
    dedup_state *state;
} last_found;

/* On entry to cr_barrier: the next phase measures whether merging pays anew. */
static void state_new_phase(cr_comm *comm, void *arg)
{
    (void)comm;
    struct dedup_state *s = arg;
    for (int i = 0; i < s->ntypes; i++) {
        rtype *t = s->types[i];
        t->tries = t->joins = t->rest_left = 0;
        t->rest_next = REST_FIRST;
    }
}

static void state_stats_reset(cr_comm *comm, void *arg)
{
    (void)comm;
    dedup_state *s = arg;
    memset(&s->stats, 0, sizeof s->stats);
}

static void state_destroy(cr_comm *comm, void *arg)
{
    (void)comm;
    dedup_state *s = arg;
    if (last_found.state == s)
        last_found.comm = NULL;
    for (int i = 0; i < s->ntypes; i++)
        free(s->types[i]);
    free(s->types);
    free(s->type_of_handler);
    free(s->pool);
    free(s->waiters);
    free(s->slots);
    free(s->scratch);
    free(s);
}

/* ---- pools and the table ---------------------------------------------------- */

static inline entry *entry_at(const dedup_state *s, uint32_t e)
{
    return (entry *)(s->pool + (size_t)e * s->stride);
}

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static uint32_t identity_hash(int type, int owner, size_t len, const char *key, size_t key_len)
{
    uint64_t h = mix(((uint64_t)(uint32_t)owner << 32) ^ ((uint64_t)type << 16) ^ len);
    for (size_t i = 0; i < key_len; i += 8) {
        uint64_t w = 0;
        memcpy(&w, key + i, key_len - i < 8 ? key_len - i : 8);
        h = mix(h ^ w);
    }
    return (uint32_t)(h >> 32);
}

static void *scratch(dedup_state *s, size_t len)
{
    if (s->scratch_cap < len) {
        size_t cap = s->scratch_cap ? s->scratch_cap : 256;
        while (cap < len)
            cap *= 2;
        s->scratch = cr_xrealloc(s->scratch, cap);
        s->scratch_cap = cap;
    }
    return s->scratch;
}

/* Keeps the peak of requests waiting here (cr_dedup_stats.peak_waiting). */
static inline void note_waiting(dedup_state *s)
{
    uint64_t now = (uint64_t)s->live + s->live_waiters;
    if (now > s->stats.peak_waiting)
        s->stats.peak_waiting = now;
}

static uint32_t waiter_new(dedup_state *s)
{
    if (s->free_waiters == NONE) {
        uint32_t old = s->waiter_cap, cap = old ? old * 2 : 256;
        s->waiters = cr_xrealloc(s->waiters, cap * sizeof *s->waiters);
        for (uint32_t i = old; i < cap; i++)
            s->waiters[i].next = i + 1 < cap ? i + 1 : NONE;
        s->free_waiters = old;
        s->waiter_cap = cap;
    }
    uint32_t w = s->free_waiters;
    s->free_waiters = s->waiters[w].next;
    s->waiters[w].next = NONE;
    s->live_waiters++;
    note_waiting(s);
    return w;
}

static void waiter_free(dedup_state *s, uint32_t w)
{
    s->waiters[w].next = s->free_waiters;
    s->free_waiters = w;
    s->live_waiters--;
}

/* `who` joins entry e after its first waiter and those that joined before. */
static void add_waiter(dedup_state *s, uint32_t e, const waiter *who)
{
    uint32_t w = waiter_new(s);
    s->waiters[w] = *who;
    s->waiters[w].next = NONE;
    entry *en = entry_at(s, e);
    if (en->tail == NONE)
        en->first.next = w;
    else
        s->waiters[en->tail].next = w;
    en->tail = w;
}

/* Entries hold keys of key_cap bytes: a type with a longer key spreads the pool
 * (tokens are indices, so entries that wait keep their names). */
static void widen_keys(dedup_state *s, size_t key_len)
{
    if (key_len <= s->key_cap && s->stride)
        return;
    size_t cap = key_len > s->key_cap ? key_len : s->key_cap;
    if (cap < 8)
        cap = 8;
    size_t stride = (sizeof(entry) + cap + 7) & ~(size_t)7;
    char *pool = s->entry_cap ? cr_xmalloc((size_t)s->entry_cap * stride) : NULL;
    for (uint32_t e = 0; e < s->nentries; e++)
        memcpy(pool + (size_t)e * stride, entry_at(s, e), sizeof(entry) + s->key_cap);
    free(s->pool);
    s->pool = pool;
    s->stride = stride;
    s->key_cap = cap;
}

static uint32_t slot_entry(uint64_t slot)
{
    return (uint32_t)slot;
}

static uint32_t slot_hash(uint64_t slot)
{
    return (uint32_t)(slot >> 32);
}

static void table_grow(dedup_state *s)
{
    uint32_t old = s->nslots, n = old ? old * 2 : 512;
    uint64_t *was = s->slots;
    s->slots = cr_xmalloc((size_t)n * sizeof *s->slots);
    for (uint32_t i = 0; i < n; i++)
        s->slots[i] = EMPTY;
    s->nslots = n;
    for (uint32_t i = 0; i < old; i++) {
        if (was[i] == EMPTY)
            continue;
        uint32_t at = slot_hash(was[i]) & (n - 1);
        while (s->slots[at] != EMPTY)
            at = (at + 1) & (n - 1);
        s->slots[at] = was[i];
    }
    free(was);
}

static void table_insert(dedup_state *s, uint32_t e)
{
    if (2 * ((uint64_t)s->in_table + 1) > s->nslots)
        table_grow(s);
    entry *en = entry_at(s, e);
    uint32_t mask = s->nslots - 1, at = en->hash & mask;
    while (s->slots[at] != EMPTY)
        at = (at + 1) & mask;
    s->slots[at] = (uint64_t)en->hash << 32 | e;
    en->in_table = 1;
    s->in_table++;
}

/* Take entry e out of the table; the slots after it that probed past its slot move
 * back, so that no lookup meets a hole before its entry (deletion without
 * tombstones, as linear probing allows). */
static void unlink_from_table(dedup_state *s, uint32_t e)
{
    entry *en = entry_at(s, e);
    if (!en->in_table)
        return;
    uint32_t mask = s->nslots - 1, hole = en->hash & mask;
    while (slot_entry(s->slots[hole]) != e)
        hole = (hole + 1) & mask;
    for (uint32_t at = (hole + 1) & mask; s->slots[at] != EMPTY; at = (at + 1) & mask) {
        uint32_t home = slot_hash(s->slots[at]) & mask;
        /* It may fill the hole unless its home lies cyclically in (hole, at]. */
        bool stays = hole <= at ? (hole < home && home <= at) : (hole < home || home <= at);
        if (stays)
            continue;
        s->slots[hole] = s->slots[at];
        hole = at;
    }
    s->slots[hole] = EMPTY;
    en->in_table = 0;
    s->in_table--;
}

static uint32_t entry_new(dedup_state *s)
{
    if (s->free_entries == NONE) {
        if (s->nentries == s->entry_cap) {
            uint32_t cap = s->entry_cap ? s->entry_cap * 2 : 256;
            if (cap > NONE / 2)
                cr_fatal("cr_dedup_request: more than %u requests wait for replies on one rank",
                         s->entry_cap);
            s->pool = cr_xrealloc(s->pool, (size_t)cap * s->stride);
            s->entry_cap = cap;
        }
        entry *en = entry_at(s, s->nentries);
        en->tail = NONE;
        en->in_use = 0;
        s->free_entries = s->nentries++;
    }
    uint32_t e = s->free_entries;
    s->free_entries = entry_at(s, e)->tail;
    s->live++;
    note_waiting(s);
    return e;
}

static void entry_free(dedup_state *s, uint32_t e)
{
    unlink_from_table(s, e);
    entry *en = entry_at(s, e);
    en->in_use = 0;
    en->tail = s->free_entries;
    s->free_entries = e;
    s->live--;
}

/* The newest waiting entry of this identity, or NONE. */
static uint32_t lookup(const dedup_state *s, uint32_t hash, int type, int owner, size_t len,
                       const char *key, size_t key_len)
{
    if (!s->nslots)
        return NONE;
    uint32_t mask = s->nslots - 1;
    for (uint32_t at = hash & mask; s->slots[at] != EMPTY; at = (at + 1) & mask) {
        if (slot_hash(s->slots[at]) != hash)
            continue;
        const entry *en = entry_at(s, slot_entry(s->slots[at]));
        if (en->type == type && en->owner == owner && en->len == len &&
            memcmp(en->key, key, key_len) == 0)
            return slot_entry(s->slots[at]);
    }
    return NONE;
}

/* ---- sending ---------------------------------------------------------------- */

/* The request (type, owner, payload) leaves this rank towards the owner's next hop,
 * holding a new entry whose first waiter is `who`; identical requests that reach
 * this rank before the reply join that entry (see join). */
static void send_request(cr_comm *comm, dedup_state *s, const rtype *t, int owner, int origin,
                         uint32_t hash, bool keyed, const void *payload, size_t len,
                         const waiter *who)
{
    uint32_t e = entry_new(s);
    entry *en = entry_at(s, e);
    en->first = *who;
    en->first.next = NONE;
    en->tail = NONE;
    en->hash = hash;
    en->owner = owner;
    en->len = (uint32_t)len;
    en->type = (uint16_t)s->type_of_handler[t->handler];
    en->in_use = 1;
    en->in_table = 0;
    int hop = cr_module_next_hop(comm, owner);
    /* Taken before the append: an append that sends the buffer changes the epoch, so
     * an equal epoch later proves the record still waits in the buffer. */
    en->epoch = cr_module_send_epoch(comm, hop);
    if (keyed) {
        memcpy(en->key, payload, t->t.key_len);
        table_insert(s, e);
    }

    req_header h = {.owner = owner, .origin = origin, .token = e};
    char *rec = scratch(s, sizeof h + len);
    memcpy(rec, &h, sizeof h);
    if (len)
        memcpy(rec + sizeof h, payload, len);
    /* May run handlers (from user code), which may answer and free the entry: it is
     * not touched after this call. */
    cr_async(comm, hop, t->handler, rec, sizeof h + len);
}

/* An identical request waits here: may `who` join it? Into the buffer always; into
 * a request in flight only if the type coalesces. Counts what joining saved. */
static bool join(cr_comm *comm, dedup_state *s, const rtype *t, uint32_t e, bool local,
                 const waiter *who)
{
    const entry *en = entry_at(s, e);
    int hop = cr_module_next_hop(comm, en->owner);
    bool buffered = cr_module_send_epoch(comm, hop) == en->epoch;
    if (!buffered && !t->t.coalesce)
        return false;
    cr_dedup_stats *st = &s->stats;
    if (!buffered)
        st->requests_coalesced++;
    else if (local)
        st->requests_merged_at_source++;
    else
        st->requests_merged_at_hops++;
    st->request_bytes_saved += sizeof(req_header) + en->len;
    add_waiter(s, e, who);
    return true;
}

/* Whether this rank's one-hop request skips the table (REST_WINDOW) while its type
 * rests. */
static bool resting(rtype *t)
{
    if (!t->rest_left)
        return false;
    t->rest_left--;
    return true;
}

/* Counts one of this rank's one-hop requests, joined or not. */
static void judge_rest(rtype *t, bool joined)
{
    t->joins += joined;
    if (++t->tries < REST_WINDOW)
        return;
    if (t->joins * REST_PAYS < t->tries) {
        t->rest_left = t->rest_next;
        t->rest_next = t->rest_next < REST_MOST ? 2 * t->rest_next : REST_MOST;
    } else {
        t->rest_next = REST_FIRST;
    }
    t->tries = t->joins = 0;
}

/* Write {tag, data} at `at` (8-byte aligned), an 8-byte datum with one move. */
static inline void put_tagged(char *at, uint64_t tag, const void *data, size_t len)
{
    memcpy(at, &tag, sizeof tag);
    if (len == sizeof(uint64_t)) /* a fixed-size copy the compiler inlines */
        memcpy(at + sizeof tag, data, sizeof(uint64_t));
    else if (len)
        memcpy(at + sizeof tag, data, len);
}

/* Send {tag, data} to `handler` on `dest`: a direct request or its reply. Small
 * records are built on the stack, an 8-byte key or value with one move. */
static inline void send_tagged(cr_comm *comm, dedup_state *s, int dest, int handler, uint64_t tag,
                        const void *data, size_t len)
{
    uint64_t small[8];
    char *rec = (char *)small;
    if (len > sizeof small - sizeof tag)
        rec = scratch(s, sizeof tag + len);
    put_tagged(rec, tag, data, len);
    cr_async(comm, dest, handler, rec, sizeof tag + len);
}

/* Tagged records of one handler and size gathered for one cr_async_many: the direct
 * replies of a received batch, a chunk of cr_dedup_request_many's direct requests.
 * Sending them together makes the mailbox's checks once per chunk (mailbox.h). On the
 * stack of the call that flushes it, so a nested call has its own. */
#define STAGE_RECORDS 32
#define STAGE_RECORD_MAX 64 /* tag and data; larger records go one by one */

typedef struct tagged_stage {
    int dests[STAGE_RECORDS];
    uint64_t words[STAGE_RECORDS * STAGE_RECORD_MAX / sizeof(uint64_t)];
    size_t count, len; /* records held, and each one's size (tag included) */
    int handler;
} tagged_stage;

static void stage_flush(cr_comm *comm, tagged_stage *st)
{
    if (st->count)
        cr_async_many(comm, st->handler, st->dests, st->words, st->len, st->count);
    st->count = 0;
}

/* Whether a tagged record of `rec` bytes (tag included) can be staged. */
static inline bool fits_stage(size_t rec)
{
    return rec <= STAGE_RECORD_MAX && rec % sizeof(uint64_t) == 0;
}

/* Add {tag, data} for `handler` on `dest` to the stage, or send it at once if it does
 * not fit a stage's record. */
static void stage_tagged(cr_comm *comm, dedup_state *s, tagged_stage *st, int dest, int handler,
                         uint64_t tag, const void *data, size_t len)
{
    size_t rec = sizeof tag + len;
    if (!fits_stage(rec)) {
        send_tagged(comm, s, dest, handler, tag, data, len);
        return;
    }
    if (st->count == STAGE_RECORDS || (st->count && (st->len != rec || st->handler != handler)))
        stage_flush(comm, st);
    st->len = rec;
    st->handler = handler;
    put_tagged((char *)st->words + st->count * rec, tag, data, len);
    st->dests[st->count++] = dest;
}

/* Whether as many requests wait here as this rank's one-hop requests may keep. Such a
 * request adds an entry or a waiter only while fewer than CR_DEDUP_WAITING_MOST
 * requests (entries and waiters: 96 KiB at 8-byte keys) wait here; beyond, it
 * travels direct, as while merging rests. Waiting requests cost as well as save: each
 * waiter is walked when its reply comes, and a hot key whose request stays in a
 * buffer (or in flight, coalescing) for milliseconds gathers thousands of waiters,
 * spread over a pool that outgrows the caches. Unbounded, bale's index gather on
 * 1,000 counters at skew 3 kept 2M waiters per rank and ran at 4 M requests/s
 * against 62 direct; bounded, at about 50, and the waiting memory stays in the cache
 * (docs/dedup.md). Requests passing hops always take the table: their replies need
 * it. */
static inline bool waiting_full(const dedup_state *s)
{
    return s->live + s->live_waiters >= CR_DEDUP_WAITING_MOST;
}

/* May this rank's request travel direct? Only when nothing could join it: one hop
 * to its owner, and a type without a key, resting or finding the waiting requests
 * full; and only for the type's reply function on this rank (the first its requests
 * named here), which the reply finds by the type. */
static inline bool goes_direct(rtype *t, bool one_hop, cr_dedup_reply_fn fn)
{
    if (!one_hop || fn != t->direct_fn)
        return false;
    if (!t->t.key_len || waiting_full(t->state))
        return true;
    return resting(t);
}

/* A direct request {ctx, payload} straight to its owner, which is its next hop. */
static inline void send_direct(cr_comm *comm, dedup_state *s, const rtype *t, int owner,
                        const void *payload, size_t len, void *ctx)
{
    s->direct_pending++;
    s->stats.requests_direct++;
    send_tagged(comm, s, owner, t->direct_handler, (uint64_t)(uintptr_t)ctx, payload, len);
}

/* A request reaching this rank (issued here but not direct, or passing through):
 * join an identical waiting one, or send it on with an entry. */
static void route_request(cr_comm *comm, dedup_state *s, rtype *t, int owner, int origin,
                          const void *payload, size_t len, const waiter *who)
{
    bool mine = who->hop < 0;
    bool one_hop = mine && cr_module_next_hop(comm, owner) == owner;
    if (t->t.key_len && !(one_hop && resting(t))) {
        int ti = s->type_of_handler[t->handler];
        uint32_t hash = identity_hash(ti, owner, len, payload, t->t.key_len);
        uint32_t e = lookup(s, hash, ti, owner, len, payload, t->t.key_len);
        bool joined = e != NONE && join(comm, s, t, e, mine, who);
        if (one_hop)
            judge_rest(t, joined);
        if (joined)
            return;
        if (e != NONE)
            unlink_from_table(s, e); /* it has left: the new entry takes over its key */
        send_request(comm, s, t, owner, origin, hash, true, payload, len, who);
        return;
    }
    send_request(comm, s, t, owner, origin, 0, false, payload, len, who);
}

/* ---- handlers --------------------------------------------------------------- */

static void bad_record(const char *what, int src, size_t len)
{
    cr_fatal("corrupt %s record of %zu bytes from rank %d", what, len, src);
}

/* One request served on its own: by the type's serve, or by serve_many with n = 1,
 * whose reply then goes as cr_dedup_reply's would. */
static void serve_one(cr_comm *comm, dedup_state *s, rtype *t, cr_dedup_req *req,
                      const char *payload, size_t plen)
{
    s->stats.requests_served++;
    if (!t->t.serve) {
        uint64_t reply[CR_DEDUP_REPLY_MANY_MAX / sizeof(uint64_t)];
        t->t.serve_many(comm, payload, plen, plen, 1, reply, t->user);
        s->serving = req;
        cr_dedup_reply(comm, req, reply, t->t.reply_len);
        s->serving = NULL;
        return;
    }
    s->serving = req;
    t->t.serve(comm, req, payload, plen, t->user);
    s->serving = NULL;
    if (!req->replied)
        cr_fatal("request type %d: its serve function returned without calling cr_dedup_reply",
                 t->handler);
}

/* One request record: serve it here if this rank owns it, else pass it on. */
static void handle_request(cr_comm *comm, rtype *t, int src, const char *rec, size_t len)
{
    dedup_state *s = t->state;
    req_header h;
    memcpy(&h, rec, sizeof h);
    int size = cr_comm_size(comm);
    if (h.owner < 0 || h.owner >= size || h.origin < 0 || h.origin >= size)
        bad_record("request", src, len);
    const char *payload = rec + sizeof h;
    size_t plen = len - sizeof h;
    if (h.owner != cr_comm_rank(comm)) {
        waiter hop = {.next = NONE, .hop = src, .token = h.token};
        route_request(comm, s, t, h.owner, h.origin, payload, plen, &hop);
        return;
    }
    cr_dedup_req req = {.prev = src, .token = h.token, .origin = h.origin};
    serve_one(comm, s, t, &req, payload, plen);
}

/* Let the type start reading what the request k places ahead will need, if this rank
 * serves it. */
static void prefetch_request(int me, const rtype *t, const cr_batch *b, size_t k)
{
    if (!t->t.prefetch || k >= b->count)
        return;
    const char *rec = cr_batch_payload(b, k);
    int32_t owner;
    memcpy(&owner, rec, sizeof owner);
    if (owner == me)
        t->t.prefetch(rec + sizeof(req_header), b->len - sizeof(req_header), t->user);
}

static void on_requests(cr_comm *comm, const cr_batch *b, void *arg)
{
    rtype *t = arg;
    if (b->len < sizeof(req_header))
        bad_record("request", cr_batch_src(b, 0), b->len);
    int me = cr_comm_rank(comm);
    for (size_t k = 0; k < PREFETCH_AHEAD; k++)
        prefetch_request(me, t, b, k);
    for (size_t k = 0; k < b->count; k++) {
        prefetch_request(me, t, b, k + PREFETCH_AHEAD);
        handle_request(comm, t, cr_batch_src(b, k), cr_batch_payload(b, k), b->len);
    }
}

/* A reply record {token, data} to `hop`, naming its entry `token` there. */
static void send_reply(cr_comm *comm, dedup_state *s, int hop, uint32_t token, const void *data,
                       size_t len)
{
    rep_header h = {.token = token};
    char *r = scratch(s, sizeof h + len);
    memcpy(r, &h, sizeof h);
    if (len)
        memcpy(r + sizeof h, data, len);
    cr_async(comm, hop, s->reply_handler, r, sizeof h + len);
}

/* Hand a reply to one waiter: its requester's reply_fn, or the previous hop. */
static void deliver(cr_comm *comm, dedup_state *s, const waiter *who, const char *data,
                    size_t dlen)
{
    if (who->hop < 0)
        who->fn(comm, data, dlen, who->ctx);
    else
        send_reply(comm, s, who->hop, who->token, data, dlen);
}

static uint32_t reply_token(const cr_batch *b, size_t k)
{
    rep_header h;
    memcpy(&h, cr_batch_payload(b, k), sizeof h);
    return h.token;
}

/* A reply record: hand it to everyone who waits for the entry it names. */
static void handle_reply(cr_comm *comm, dedup_state *s, int src, uint32_t token,
                         const char *data, size_t dlen)
{
    if (token >= s->nentries || !entry_at(s, token)->in_use)
        cr_fatal("reply from rank %d names request %u, which this rank is not waiting for",
                 src, token);
    /* Freed first: reply_fn may issue requests, which may reuse the entry and the
     * waiters (and grow the pools), so each waiter is copied out before its call. */
    waiter who = entry_at(s, token)->first;
    entry_free(s, token);
    uint32_t later = who.next;
    deliver(comm, s, &who, data, dlen);
    cr_dedup_stats *st = &s->stats;
    while (later != NONE) {
        who = s->waiters[later];
        waiter_free(s, later);
        later = who.next;
        st->replies_fanned_out++;
        deliver(comm, s, &who, data, dlen);
    }
}

static void on_replies(cr_comm *comm, const cr_batch *b, void *arg)
{
    dedup_state *s = arg;
    if (b->len < sizeof(rep_header))
        bad_record("reply", cr_batch_src(b, 0), b->len);
    for (size_t k = 0; k < b->count; k++) {
        if (k + PREFETCH_AHEAD < b->count) {
            uint32_t ahead = reply_token(b, k + PREFETCH_AHEAD);
            if (ahead < s->nentries)
                __builtin_prefetch(entry_at(s, ahead));
        }
        handle_reply(comm, s, cr_batch_src(b, k), reply_token(b, k),
                     (const char *)cr_batch_payload(b, k) + sizeof(rep_header),
                     b->len - sizeof(rep_header));
    }
}

/* ---- direct requests ---------------------------------------------------------- */

/* The tag of direct record k (a request's or a reply's ctx): the word a replied
 * run's cr_dedup_replied_ctx reads, laid out alike. */
static uint64_t direct_tag(const cr_batch *b, size_t k)
{
    return (uint64_t)(uintptr_t)cr_dedup_replied_ctx(b->payloads, b->stride, k);
}

/* Direct request records of a type with serve_many: served in runs, and each run's
 * replies {ctx, data} built in place and sent with one cr_async_many (replies too
 * large for a stage record go one by one). No call per request, no cr_dedup_reply.
 * A run is as long as its replies fit SERVE_OUT_BYTES, at most CR_DEDUP_SERVE_RUN:
 * serve_many's reads (table slots on the owner, cache misses) overlap within a run
 * and not across the sends between runs, so runs of 128 8-byte replies served a
 * table of 1M counters per rank 10-22% faster than runs of 32 (docs/dedup.md). */
#define SERVE_OUT_BYTES 8192
static void serve_direct_runs(cr_comm *comm, rtype *t, const cr_batch *b)
{
    dedup_state *s = t->state;
    size_t plen = b->len - sizeof(uint64_t), rlen = t->t.reply_len;
    size_t rec = sizeof(uint64_t) + rlen;
    bool staged = fits_stage(rec);
    uint64_t out[SERVE_OUT_BYTES / sizeof(uint64_t)];
    uint64_t words[CR_DEDUP_SERVE_RUN * STAGE_RECORD_MAX / sizeof(uint64_t)];
    int dests[CR_DEDUP_SERVE_RUN];
    size_t run = SERVE_OUT_BYTES / rlen < CR_DEDUP_SERVE_RUN ? SERVE_OUT_BYTES / rlen
                                                             : CR_DEDUP_SERVE_RUN;
    s->stats.requests_served += b->count;
    for (size_t k = 0; k < b->count; k += run) {
        size_t m = b->count - k < run ? b->count - k : run;
        t->t.serve_many(comm, (const char *)cr_batch_payload(b, k) + sizeof(uint64_t),
                        b->stride, plen, m, out, t->user);
        const char *data = (const char *)out;
        if (!staged) {
            for (size_t j = 0; j < m; j++)
                send_tagged(comm, s, cr_batch_src(b, k + j), t->direct_reply_handler,
                            direct_tag(b, k + j), data + j * rlen, rlen);
            continue;
        }
        for (size_t j = 0; j < m; j++) {
            put_tagged((char *)words + j * rec, direct_tag(b, k + j), data + j * rlen, rlen);
            dests[j] = cr_batch_src(b, k + j);
        }
        cr_async_many(comm, t->direct_reply_handler, dests, words, rec, m);
    }
}

/* Direct request records {ctx, payload}, all for this rank: serve each (or in runs,
 * serve_many); the reply carries ctx back. */
static void on_direct_requests(cr_comm *comm, const cr_batch *b, void *arg)
{
    rtype *t = arg;
    dedup_state *s = t->state;
    if (b->len < sizeof(uint64_t))
        bad_record("direct request", cr_batch_src(b, 0), b->len);
    size_t plen = b->len - sizeof(uint64_t);
    if (t->t.serve_many) {
        serve_direct_runs(comm, t, b);
        return;
    }
    tagged_stage replies = {.count = 0};
    s->replies = &replies;
    for (size_t k = 0; t->t.prefetch && k < PREFETCH_AHEAD && k < b->count; k++)
        t->t.prefetch((const char *)cr_batch_payload(b, k) + sizeof(uint64_t), plen, t->user);
    for (size_t k = 0; k < b->count; k++) {
        if (t->t.prefetch && k + PREFETCH_AHEAD < b->count)
            t->t.prefetch((const char *)cr_batch_payload(b, k + PREFETCH_AHEAD) + sizeof(uint64_t),
                          plen, t->user);
        int src = cr_batch_src(b, k);
        cr_dedup_req req = {.prev = src, .origin = src, .direct = t, .ctx = direct_tag(b, k)};
        serve_one(comm, s, t, &req, (const char *)cr_batch_payload(b, k) + sizeof(uint64_t),
                  plen);
    }
    s->replies = NULL;
    stage_flush(comm, &replies);
}

/* Direct reply records {ctx, data}: the type's replied_many with the whole batch, or
 * its reply function on this rank for each, the target (ctx) fetched a few ahead. */
static void on_direct_replies(cr_comm *comm, const cr_batch *b, void *arg)
{
    rtype *t = arg;
    dedup_state *s = t->state;
    if (b->len < sizeof(uint64_t) || !t->direct_fn || s->direct_pending < b->count)
        bad_record("direct reply", cr_batch_src(b, 0), b->len);
    size_t dlen = b->len - sizeof(uint64_t);
    s->direct_pending -= b->count;
    if (t->t.replied_many) { /* records {ctx, data}: as cr_dedup_replied_* read them */
        t->t.replied_many(comm, b->payloads, b->stride, dlen, b->count, t->user);
        return;
    }
    for (size_t k = 0; k < b->count; k++) {
        if (k + PREFETCH_AHEAD < b->count)
            __builtin_prefetch((const void *)(uintptr_t)direct_tag(b, k + PREFETCH_AHEAD), 1);
        t->direct_fn(comm, (const char *)cr_batch_payload(b, k) + sizeof(uint64_t), dlen,
                     (void *)(uintptr_t)direct_tag(b, k));
    }
}

/* ---- the public calls -------------------------------------------------------- */

static dedup_state *state_of(cr_comm *comm)
{
    if (last_found.comm == comm && comm)
        return last_found.state;
    dedup_state *s = cr_module_state(comm, &dedup_module);
    if (s) {
        last_found.comm = comm;
        last_found.state = s;
    }
    return s;
}

static dedup_state *attach(cr_comm *comm)
{
    dedup_state *s = state_of(comm);
    if (s)
        return s;
    s = cr_xcalloc(1, sizeof *s);
    s->free_entries = NONE;
    s->free_waiters = NONE;
    s->size = cr_comm_size(comm);
    route_changed(comm, s);
    widen_keys(s, 8);
    cr_module_attach(comm, &dedup_module, s);
    s->reply_handler =
        cr_register_type(comm, &(cr_handler_type){.batch = on_replies, .name = "dedup reply"}, s);
    return s;
}

int cr_dedup_register_request(cr_comm *comm, const cr_dedup_request_type *type, void *user)
{
    if (cr_module_in_handler(comm))
        cr_fatal("cr_dedup_register_request: called from a handler; register before sending");
    if (!type || (!type->serve && !type->serve_many))
        cr_fatal("cr_dedup_register_request: the request type has no serve function "
                 "(serve or serve_many)");
    if (type->serve_many && (type->reply_len < 1 || type->reply_len > CR_DEDUP_REPLY_MANY_MAX))
        cr_fatal("cr_dedup_register_request: the reply_len of serve_many, %zu bytes, is out "
                 "of range: expected 1 to %d",
                 type->reply_len, CR_DEDUP_REPLY_MANY_MAX);
    if (type->key_len > CR_MAX_KEY)
        cr_fatal("cr_dedup_register_request: key of %zu bytes is longer than the limit of %d",
                 type->key_len, CR_MAX_KEY);
    dedup_state *s = attach(comm);
    widen_keys(s, type->key_len);
    rtype *t = cr_xcalloc(1, sizeof *t);
    *t = (rtype){.t = *type, .user = user, .state = s, .rest_next = REST_FIRST};
    s->types = cr_xrealloc(s->types, (size_t)(s->ntypes + 1) * sizeof *s->types);
    s->types[s->ntypes] = t;
    int index = s->ntypes++;
    /* Known before registering: requests of this type may arrive (and be passed on,
     * under this id) while the registration waits for the other ranks. */
    t->handler = cr_module_next_handler_id(comm);
    if (t->handler >= s->handler_cap) {
        int cap = t->handler + 16;
        s->type_of_handler = cr_xrealloc(s->type_of_handler, (size_t)cap * sizeof(int));
        for (int i = s->handler_cap; i < cap; i++)
            s->type_of_handler[i] = -1;
        s->handler_cap = cap;
    }
    s->type_of_handler[t->handler] = index;
    /* The ranks compare the key length and serve function too: a request type
     * registered in another order would otherwise be served by the wrong function. */
    uint64_t extra = cr_rng_hash64(
        cr_code_id(type->serve ? cr_code_of(type->serve) : cr_code_of(type->serve_many)) ^
        type->key_len);
    if (cr_module_register(comm, &(cr_handler_type){.batch = on_requests}, t, "request type",
                           extra) != t->handler)
        cr_fatal("internal error: request type %d registered under an unexpected id", index);
    t->direct_handler = cr_register_type(
        comm, &(cr_handler_type){.batch = on_direct_requests, .name = "dedup direct request"}, t);
    t->direct_reply_handler = cr_register_type(
        comm, &(cr_handler_type){.batch = on_direct_replies, .name = "dedup direct reply"}, t);
    return t->handler;
}

/* The checks of cr_dedup_request and cr_dedup_request_many that do not depend on
 * the owner: the request type of `id`. */
static rtype *checked_type(dedup_state *s, const char *fn, int id, const void *payload, size_t len,
                           cr_dedup_reply_fn reply_fn)
{
    if (!s || id < 0 || id >= s->handler_cap || s->type_of_handler[id] < 0)
        cr_fatal("%s: id %d is not a request type (register it with "
                 "cr_dedup_register_request)",
                 fn, id);
    rtype *t = s->types[s->type_of_handler[id]];
    if (len < t->t.key_len)
        cr_fatal("%s: payload of %zu bytes is shorter than the key (%zu bytes) of "
                 "request type %d",
                 fn, len, t->t.key_len, id);
    if (len > UINT32_MAX - sizeof(req_header))
        cr_fatal("%s: payload of %zu bytes is larger than the limit of %zu bytes", fn, len,
                 (size_t)UINT32_MAX - sizeof(req_header));
    if (len && !payload)
        cr_fatal("%s: payload is NULL but its length is %zu", fn, len);
    if (!reply_fn)
        cr_fatal("%s: reply_fn is NULL", fn);
    if (!t->direct_fn)
        t->direct_fn = reply_fn;
    return t;
}

static void check_owner(const dedup_state *s, const char *fn, int owner)
{
    if (owner < 0 || owner >= s->size)
        cr_fatal("%s: owner rank %d is out of range [0, %d)", fn, owner, s->size);
}

/* One checked request of this rank: direct, or into the table of requests. */
static void request_one(cr_comm *comm, dedup_state *s, rtype *t, int owner, const void *payload,
                        size_t len, cr_dedup_reply_fn reply_fn, void *ctx)
{
    s->stats.requests++;
    bool one_hop = s->every_owner_one_hop || cr_module_next_hop(comm, owner) == owner;
    if (goes_direct(t, one_hop, reply_fn)) {
        send_direct(comm, s, t, owner, payload, len, ctx);
        return;
    }
    waiter me = {.next = NONE, .hop = -1, .fn = reply_fn, .ctx = ctx};
    route_request(comm, s, t, owner, cr_comm_rank(comm), payload, len, &me);
}

void cr_dedup_request(cr_comm *comm, int owner, int id, const void *payload, size_t len,
                cr_dedup_reply_fn reply_fn, void *ctx)
{
    dedup_state *s = state_of(comm);
    rtype *t = checked_type(s, "cr_dedup_request", id, payload, len, reply_fn);
    check_owner(s, "cr_dedup_request", owner);
    request_one(comm, s, t, owner, payload, len, reply_fn, ctx);
}

/* How many of n requests from cr_dedup_request_many go direct for certain: all, on a
 * route where every owner is one hop away, for the type's reply function, when the
 * type has no key or rests for at least that many (goes_direct, one by one, would
 * find the same); the resting ones are counted off. */
static size_t direct_run(const dedup_state *s, rtype *t, cr_dedup_reply_fn fn, size_t n)
{
    if (!s->every_owner_one_hop || fn != t->direct_fn)
        return 0;
    if (!t->t.key_len)
        return n;
    size_t run = t->rest_left < n ? t->rest_left : n;
    t->rest_left -= (uint32_t)run;
    return run;
}

/* m direct requests, each a record {ctx, payload} straight to its owner, built in
 * chunks and sent with cr_async_many. Counted as pending before any is sent: a send
 * may run handlers, and their replies with them. */
static void send_direct_run(cr_comm *comm, dedup_state *s, const rtype *t, const int *owners,
                            const char *payloads, size_t len, void *const *ctxs, size_t m)
{
    s->stats.requests += m;
    s->stats.requests_direct += m;
    s->direct_pending += m;
    size_t rec = sizeof(uint64_t) + len;
    if (!fits_stage(rec)) {
        for (size_t i = 0; i < m; i++) {
            check_owner(s, "cr_dedup_request_many", owners[i]);
            send_tagged(comm, s, owners[i], t->direct_handler, (uint64_t)(uintptr_t)ctxs[i],
                        payloads + i * len, len);
        }
        return;
    }
    uint64_t words[STAGE_RECORDS * STAGE_RECORD_MAX / sizeof(uint64_t)];
    for (size_t i = 0; i < m; i += STAGE_RECORDS) {
        size_t c = m - i < STAGE_RECORDS ? m - i : STAGE_RECORDS;
        for (size_t j = 0; j < c; j++) {
            check_owner(s, "cr_dedup_request_many", owners[i + j]);
            put_tagged((char *)words + j * rec, (uint64_t)(uintptr_t)ctxs[i + j],
                       payloads + (i + j) * len, len);
        }
        cr_async_many(comm, t->direct_handler, owners + i, words, rec, c);
    }
}

void cr_dedup_request_many(cr_comm *comm, int id, const int *owners, const void *payloads,
                           size_t len, size_t n, cr_dedup_reply_fn reply_fn, void *const *ctxs)
{
    if (n == 0)
        return;
    dedup_state *s = state_of(comm);
    rtype *t = checked_type(s, "cr_dedup_request_many", id, payloads, len, reply_fn);
    if (!owners || !ctxs)
        cr_fatal("cr_dedup_request_many: the owners or the contexts are NULL for %zu requests", n);
    const char *p = payloads;
    size_t run = direct_run(s, t, reply_fn, n);
    if (run) {
        send_direct_run(comm, s, t, owners, p, len, ctxs, run);
        if (run == n)
            return;
    }
    tagged_stage direct = {.count = 0};
    for (size_t i = run; i < n; i++) {
        check_owner(s, "cr_dedup_request_many", owners[i]);
        bool one_hop = s->every_owner_one_hop || cr_module_next_hop(comm, owners[i]) == owners[i];
        if (!goes_direct(t, one_hop, reply_fn)) {
            s->stats.requests++;
            waiter me = {.next = NONE, .hop = -1, .fn = reply_fn, .ctx = ctxs[i]};
            route_request(comm, s, t, owners[i], cr_comm_rank(comm), p + i * len, len, &me);
            continue;
        }
        s->stats.requests++;
        s->direct_pending++;
        s->stats.requests_direct++;
        stage_tagged(comm, s, &direct, owners[i], t->direct_handler, (uint64_t)(uintptr_t)ctxs[i],
                     p + i * len, len);
    }
    stage_flush(comm, &direct);
}

void cr_dedup_reply(cr_comm *comm, cr_dedup_req *req, const void *data, size_t len)
{
    /* A direct request names its type, and the type its state: no module look-up. */
    dedup_state *s = req && req->direct ? req->direct->state : state_of(comm);
    if (!s || !req || s->serving != req)
        cr_fatal("cr_dedup_reply: called outside the serve function of the request it answers "
                 "(serve_many replies by writing its replies, not with cr_dedup_reply)");
    if (req->replied)
        cr_fatal("cr_dedup_reply: the request was already answered (serve must reply once)");
    if (len > UINT32_MAX - sizeof(rep_header))
        cr_fatal("cr_dedup_reply: reply of %zu bytes is larger than the limit of %zu bytes", len,
                 (size_t)UINT32_MAX - sizeof(rep_header));
    if (len && !data)
        cr_fatal("cr_dedup_reply: data is NULL but its length is %zu", len);
    req->replied = true;
    if (!req->direct) {
        send_reply(comm, s, req->prev, req->token, data, len);
        return;
    }
    if (s->replies)
        stage_tagged(comm, s, s->replies, req->prev, req->direct->direct_reply_handler, req->ctx,
                     data, len);
    else
        send_tagged(comm, s, req->prev, req->direct->direct_reply_handler, req->ctx, data, len);
}

int cr_dedup_origin(const cr_dedup_req *req)
{
    return req->origin;
}

int cr_dedup_from(const cr_dedup_req *req)
{
    return req->prev;
}

size_t cr_dedup_pending(const cr_comm *comm)
{
    const dedup_state *s = cr_module_state((cr_comm *)comm, &dedup_module);
    return s ? s->live + s->direct_pending : 0;
}

void cr_dedup_stats_get(cr_comm *comm, cr_dedup_stats *out)
{
    const dedup_state *s = cr_module_state(comm, &dedup_module);
    if (s)
        *out = s->stats;
    else
        memset(out, 0, sizeof *out);
}

void cr_dedup_stats_reset(cr_comm *comm)
{
    dedup_state *s = cr_module_state(comm, &dedup_module);
    if (s)
        state_stats_reset(comm, s);
}

static void state_stats_print(cr_comm *comm, void *arg, FILE *out)
{
    (void)arg;
    cr_dedup_stats_print(comm, out);
}

void cr_dedup_stats_print(cr_comm *comm, FILE *out)
{
    static const char *const names[] = {
        "requests",           "requests_served",    "requests_merged_at_source",
        "requests_merged_at_hops", "requests_coalesced", "replies_fanned_out",
        "request_bytes_saved", "requests_direct", "peak_waiting",
    };
    cr_dedup_stats st;
    cr_dedup_stats_get(comm, &st);
    const uint64_t values[] = {
        st.requests,           st.requests_served,    st.requests_merged_at_source,
        st.requests_merged_at_hops, st.requests_coalesced, st.replies_fanned_out,
        st.request_bytes_saved, st.requests_direct, st.peak_waiting,
    };
    _Static_assert(sizeof names / sizeof names[0] == sizeof st / sizeof(uint64_t),
                   "every counter of cr_dedup_stats is printed");
    cr_module_print_counters(comm, out, "courier dedup stats", names, values,
                             sizeof names / sizeof names[0]);
}
