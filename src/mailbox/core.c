/* The mailbox core: cr_async and cr_async_bcast, the one place a record is
 * appended to the buffer of its next hop, and the one place a received buffer is
 * dispatched. cr_async, cr_async_bcast, forwarding and the broadcast's fan-out all
 * append through cr_append, which alone decides the next hop; walk_run runs
 * handlers or passes records on, under either flow policy (the tables cr_flow_waits
 * and cr_flow_deep_held). The aggregation layer (dedup) hooks in here. Kept in one
 * file so that the per-record path inlines into cr_async, and because a reentrant
 * handler's cr_async over the cap handles received buffers again (waiting by
 * handling, at the end): appending and receiving call each other. */
#include "mailbox/mailbox_internal.h"

#include "common/fatal.h"
#include "mailbox/combine.h"
#include "mailbox/record.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A combining handler's record was just written at `payload` in hop's buffer b:
 * point the index slot at it (combine.h). The slot dies when the buffer is sent. */
static void index_record(cr_comm *c, cr_combine_slot *slot, int hop, const cr_outbuf *b,
                         const char *payload)
{
    slot->hash = c->pending_key.hash;
    slot->hop = (uint32_t)hop;
    slot->gen = b->gen;
    slot->off = (uint32_t)(payload - b->data);
    slot->dest = c->pending_key.dest;
    slot->len = c->pending_key.len;
    slot->handler = c->pending_key.handler;
}

/* The slow half of append_to_buffer: the record opens a run, or its buffer is due
 * to be sent, or the cap is reached. b is hop's entry: entries never move, so it
 * stays valid while a flush below sends its buffer or waits. */
static void append_slow(cr_comm *c, int hop, cr_outbuf *b, uint64_t key, size_t stride,
                        const cr_rec_route *route, const void *payload, size_t len,
                        cr_combine_slot *slot)
{
    cr_outbufs *o = &c->out;
    /* A deferred buffer is retried by the loop; only user code, which may wait for a
     * slot, forces it again here (so a handler does not test sends per record). */
    bool may_force = !b->deferred || cr_can_wait(c);
    /* The record is copied before anything here may wait: waiting runs handlers,
     * which may write to the caller's payload (it is often one reused buffer). So a
     * buffer the record would overflow is sent now if a slot is free, else deferred,
     * and the record goes after it in the same buffer; the wait comes below. */
    if (may_force && cr_outbuf_overflows(o, b, cr_outbuf_rec_size(b, key, stride)))
        cr_flush_dest(c, hop, CR_FLUSH_SIZE, false);
    char *at = cr_outbuf_append_rec(o, b, hop, key, stride, c->now);
    cr_rec_write(at, route, payload, (uint32_t)len);
    if (slot)
        index_record(c, slot, hop, b, at + (route ? sizeof *route : 0));

    if (may_force && cr_outbuf_full(o, b))
        cr_flush_dest(c, hop, CR_FLUSH_SIZE, true);
    if (o->total >= c->cfg.buffer_cap_bytes && !c->flow.cap_blocked)
        cr_flush_for_cap(c);
    /* User code over the cap (sends in flight and the queue to itself included)
     * waits until the rank is below it, handling what arrives: so it starts no more
     * work than the memory bound allows (docs/flow_control.md). */
    if (cr_over_cap(c) && cr_can_wait(c))
        cr_wait_below_cap(c);
}

/* The common case of an append, a few instructions: the record joins the open run
 * of hop's buffer b, which stays below its threshold, its capacity and the cap.
 * False when append_slow must decide. */
static inline bool append_fast(cr_comm *c, int hop, cr_outbuf *b, uint64_t key, size_t stride,
                               const cr_rec_route *route, const void *payload, size_t len,
                               cr_combine_slot *slot)
{
    cr_outbufs *o = &c->out;
    if (b->run_key != key || b->len + stride >= b->limit || o->total + stride >= c->flow.buffer_room)
        return false;
    char *at = b->data + b->len;
    b->len += stride;
    o->total += stride;
    if (++b->run_count == CR_RUN_MAX)
        b->run_key = CR_RUN_NONE;
    cr_rec_write(at, route, payload, (uint32_t)len);
    if (slot)
        index_record(c, slot, hop, b, at + (route ? sizeof *route : 0));
    return true;
}

/* One look-up of hop's entry (created on first use) for the whole append. */
static inline void append_record(cr_comm *c, int hop, uint64_t key, size_t stride,
                                 const cr_rec_route *route, const void *payload, size_t len,
                                 cr_combine_slot *slot)
{
    cr_outbuf *b = cr_outbufs_at(&c->out, hop);
    if (!append_fast(c, hop, b, key, stride, route, payload, len, slot))
        append_slow(c, hop, b, key, stride, route, payload, len, slot);
}

/* Append a record to the buffer of `hop` (routed if route != NULL), flushing by size
 * and cap as it goes. */
static inline void append_to_buffer(cr_comm *c, int hop, int handler, uint16_t flags,
                                    const cr_rec_route *route, const void *payload, size_t len,
                                    cr_combine_slot *slot)
{
    uint16_t run_flags = route ? (uint16_t)(flags | CR_REC_ROUTED) : 0;
    uint64_t key = cr_run_key((uint16_t)handler, cr_run_bits(run_flags, c->send_gen), (uint32_t)len);
    size_t stride = cr_rec_stride(len, route != NULL);
    append_record(c, hop, key, stride, route, payload, len, slot);
}

/* A record of a combining handler (cr_handler_type.key_len > 0) on its way to `dest`
 * through `hop`: if a record with the same handler, destination, length and key
 * waits in hop's buffer, merge this one into it and return true; else return the
 * index slot the record should be entered in (*slot, possibly NULL) and false.
 * Merging at the source and at every forwarding hop is the same code. */
/* When keys rarely repeat within a buffer, looking them up costs more than the
 * merges save (a cache miss in the index per record): a handler whose look-ups
 * merged fewer than 1 in COMBINE_PAYS over a window of COMBINE_WINDOW appends its
 * next COMBINE_REST records without looking, then looks again. Merging is an
 * optimisation, so skipping it is always correct. */
#define COMBINE_WINDOW 1024
#define COMBINE_PAYS 16
#define COMBINE_REST (32 * COMBINE_WINDOW)

static void judge_combining(cr_handler_entry *h, bool merged)
{
    h->combine_hits += merged;
    if (++h->combine_tries < COMBINE_WINDOW)
        return;
    if (h->combine_hits * COMBINE_PAYS < h->combine_tries)
        h->combine_skip = COMBINE_REST;
    h->combine_tries = h->combine_hits = 0;
}

static bool merge_combining(cr_comm *c, int hop, int dest, int origin, int handler,
                            const void *payload, size_t len, cr_combine_slot **slot)
{
    cr_handler_entry *h = &c->handlers.entries[handler];
    cr_combine_key k = {.hop = hop, .dest = dest, .handler = (uint16_t)handler,
                        .len = (uint32_t)len, .key = payload, .key_len = h->key_len};
    k.hash = cr_combine_hash(hop, dest, k.handler, payload, h->key_len);
    bool found;
    *slot = cr_combine_find(&c->combine, &c->out, &k, &found);
    judge_combining(h, found);
    if (!found) {
        c->pending_key = k;
        return false;
    }
    h->combine(cr_outbufs_at(&c->out, hop)->data + (*slot)->off, payload, len, h->combine_user);
    if (origin == c->rank)
        c->stats.merged_at_source++;
    else
        c->stats.merged_at_hops++;
    c->stats.merged_bytes += len;
    return true;
}

static inline bool combining(cr_comm *c, int handler, uint16_t flags)
{
    if (c->ncombining == 0 || flags != 0 || (unsigned)handler >= c->handlers.count)
        return false; /* (the multicast's records are for no registered handler) */
    cr_handler_entry *h = &c->handlers.entries[handler];
    if (h->key_len == 0)
        return false;
    if (h->combine_skip) {
        h->combine_skip--;
        return false;
    }
    return true;
}

/* A record for handler on rank `dest`, created by rank `origin` (this rank for
 * cr_async and cr_async_bcast, the creator when passing a record on), goes to the
 * buffer of the next hop, which only cr_next_hop computes; flags: CR_REC_BCAST for a
 * broadcast copy to fan out at dest. Inline: it is cr_async's per-record path. */
static inline void cr_append(cr_comm *c, int dest, int origin, int handler, uint16_t flags,
                             const void *payload, size_t len)
{
    int hop = cr_next_hop(c, dest);
    cr_combine_slot *slot = NULL;
    if (combining(c, handler, flags) &&
        merge_combining(c, hop, dest, origin, handler, payload, len, &slot))
        return;
    if (hop == dest && origin == c->rank && flags == 0) {
        append_to_buffer(c, hop, handler, 0, NULL, payload, len, slot);
        return;
    }
    cr_rec_route route = {.dest = dest, .origin = origin};
    append_to_buffer(c, hop, handler, flags, &route, payload, len, slot);
    if (origin == c->rank)
        return;
    /* A record this rank passes on for another: no later cr_flush or barrier on this
     * rank is promised to cover it, so its buffer goes once traffic pauses. */
    c->stats.forwarded++;
    cr_outbuf *b = cr_outbufs_at(&c->out, hop);
    if (b->len > 0) {
        b->relay = 1;
        c->relay_pending = true;
    }
}

static void bad_message(const cr_comm *c, const char *fn, int handler, const void *payload,
                        size_t len)
{
    (void)payload;
    if ((unsigned)handler >= c->handlers.count)
        cr_fatal("%s: handler id %d is not registered (%u handlers registered)", fn, handler,
                 c->handlers.count);
    if (len > CR_MAX_PAYLOAD)
        cr_fatal("%s: payload of %zu bytes is larger than the limit of %zu bytes", fn, len,
                 CR_MAX_PAYLOAD);
    cr_fatal("%s: payload is NULL but its length is %zu", fn, len);
}

static inline void check_message(const cr_comm *c, const char *fn, int handler,
                                 const void *payload, size_t len)
{
    if ((unsigned)handler >= c->handlers.count || len > CR_MAX_PAYLOAD || (len && !payload))
        bad_message(c, fn, handler, payload, len);
}

/* Is `handler` a combining one? Then its payloads must hold its key. */
static bool check_key(const cr_comm *c, const char *fn, int handler, size_t len)
{
    size_t key_len = c->handlers.entries[handler].key_len;
    if (len < key_len)
        cr_fatal("%s: payload of %zu bytes is shorter than the key (%zu bytes) of combining "
                 "handler %d",
                 fn, len, key_len, handler);
    return key_len > 0;
}

/* User code polls the network every poll_every records it sends: CR_POLL_EVERY
 * while polls find work, and up to CR_POLL_MAX as they keep finding none. An empty
 * poll is not free: Open MPI yields the processor in every MPI call that finds
 * nothing when ranks outnumber cores (mpi_yield_when_idle), so polling a quiet
 * network every few microseconds from a rank that has work of its own hands its
 * core to another rank tens of thousands of times a second. */
static void poll_from_user_code(cr_comm *c)
{
    if (!cr_can_wait(c)) {
        c->poll_countdown = c->poll_every;
        return;
    }
    bool worked = cr_engine_run_nowait(c) > 0 || c->engine.last_poll_worked;
    if (worked)
        c->poll_every = CR_POLL_EVERY;
    else if (c->poll_every < CR_POLL_MAX)
        c->poll_every *= 2;
    c->poll_countdown = c->poll_every;
}

static inline void count_sent(cr_comm *c, uint64_t msgs, size_t len)
{
    c->stats.msgs_sent += msgs;
    c->stats.bytes_sent += msgs * len;
    if (len > c->flow.largest_record)
        c->flow.largest_record = len;
    if (--c->poll_countdown == 0)
        poll_from_user_code(c);
    /* A reentrant handler over the cap waits here, once its record is appended (and
     * indexed, if it combines): nothing of this call is left to be done. Under
     * deep-held no call waits: the loop pauses handling instead (deep_handle). */
    if (c->flow.in_reentrant && c->fops->waits_in_calls && cr_over_cap(c))
        cr_wait_by_handling(c);
}

/* A record passed on for another rank counts against the cap like any other: over
 * it, the forwarder handles buffers before it passes on the next record. Between
 * two records of the run no user code is interrupted, so this needs no opt-in. */
static inline void after_forward(cr_comm *c)
{
    if (c->cfg.nest_limit > 0 && c->fops->waits_in_calls && cr_over_cap(c))
        cr_wait_by_handling(c);
}

static void async_checked(cr_comm *c, int dest, int handler, const void *payload, size_t len);

/* cr_async's common case: a record of 8 or 16 bytes to a valid destination reached
 * directly, for a handler that does not combine, appended to the open run of a buffer
 * with room, no poll due and no reentrant handler running. It keeps to a few loads
 * and stores and calls nothing, so it needs no stack frame (the profile of the
 * histogram put a fifth of cr_async's samples on saving and restoring registers);
 * everything else (other sizes, checks that fail, a new run, a full buffer, the cap,
 * a poll, routes, merging) is async_checked. */
void cr_async(cr_comm *c, int dest, int handler, const void *payload, size_t len)
{
    bool plain = (unsigned)dest < (unsigned)c->size && (unsigned)handler < c->handlers.count &&
                 (len == 8 || len == 16) && payload && !c->routed &&
                 c->handlers.entries[handler].key_len == 0 && c->poll_countdown > 1 &&
                 !c->flow.in_reentrant;
    if (plain) {
        cr_outbuf *b = cr_outbufs_find(&c->out, dest);
        uint64_t key = cr_run_key((uint16_t)handler, cr_run_bits(0, c->send_gen), (uint32_t)len);
        size_t stride = cr_rec_pad(len);
        if (b && b->run_key == key && b->len + stride < b->limit &&
            c->out.total + stride < c->flow.buffer_room && (unsigned)b->run_count + 1 < CR_RUN_MAX &&
            len <= c->flow.largest_record) {
            char *at = b->data + b->len;
            memcpy(at, payload, 8);
            if (len == 16)
                memcpy(at + 8, (const char *)payload + 8, 8);
            b->len += stride;
            c->out.total += stride;
            b->run_count++;
            c->stats.msgs_sent++;
            c->stats.bytes_sent += len;
            c->poll_countdown--;
            return;
        }
    }
    async_checked(c, dest, handler, payload, len);
}

/* How many of records[from, n) cr_async_many can append with no check left to do:
 * each joins the open run of its destination's buffer, which has room, and neither
 * the cap nor a poll is reached. The running totals and the table of buffers stay in
 * locals (a store through a record's bytes could alias the comm's fields, so the
 * compiler would reload them), and a constant `len` specialises the copy. Returns the
 * index of the first record that needs cr_async's full path (n if none). */
static inline size_t append_many_run(cr_comm *c, uint64_t key, const int *dests, const char *p,
                                     size_t len, size_t from, size_t n)
{
    const size_t stride = cr_rec_pad(len);
    cr_outbuf *const bufs = c->out.bufs;
    const size_t room = c->flow.buffer_room;
    const unsigned size = (unsigned)c->size;
    size_t total = c->out.total;
    size_t limit = from + (size_t)(c->poll_countdown - 1);
    if (limit > n)
        limit = n;
    size_t i = from;
    for (; i < limit; i++) {
        unsigned d = (unsigned)dests[i];
        if (d >= size)
            break;
        cr_outbuf *b = &bufs[d];
        size_t at = b->len;
        if (b->run_key != key || at + stride >= b->limit || total + stride >= room ||
            (unsigned)b->run_count + 1 >= CR_RUN_MAX)
            break;
        cr_rec_write_payload(b->data + at, p + i * len, (uint32_t)len);
        b->len = at + stride;
        b->run_count++;
        total += stride;
    }
    size_t k = i - from;
    c->out.total = total;
    c->poll_countdown -= (unsigned)k;
    c->stats.msgs_sent += k;
    c->stats.bytes_sent += k * len;
    return i;
}

static size_t append_many_fast(cr_comm *c, uint64_t key, const int *dests, const char *p,
                               size_t len, size_t from, size_t n)
{
    if (!c->out.bufs || c->poll_countdown <= 1)
        return from; /* sparse table of buffers, or a poll due: the full path */
    if (len == 8)
        return append_many_run(c, key, dests, p, 8, from, n);
    if (len == 16)
        return append_many_run(c, key, dests, p, 16, from, n);
    return append_many_run(c, key, dests, p, len, from, n);
}

void cr_async_many(cr_comm *c, int handler, const int *dests, const void *payloads, size_t len,
                   size_t n)
{
    if (n == 0)
        return;
    if (!dests)
        cr_fatal("cr_async_many: the destinations are NULL for %zu records", n);
    check_message(c, "cr_async_many", handler, payloads, len);
    const char *p = payloads;
    /* What cannot change during the call; the rest is checked record by record. */
    bool plain = !c->routed && c->handlers.entries[handler].key_len == 0 && !c->flow.in_reentrant &&
                 len > 0;
    size_t i = 0;
    while (i < n) {
        if (plain && len <= c->flow.largest_record) {
            uint64_t key = cr_run_key((uint16_t)handler, cr_run_bits(0, c->send_gen), (uint32_t)len);
            i = append_many_fast(c, key, dests, p, len, i, n);
            if (i == n)
                break;
        }
        if ((unsigned)dests[i] >= (unsigned)c->size)
            cr_fatal("cr_async_many: destination rank %d (record %zu) is out of range [0, %d)",
                     dests[i], i, c->size);
        cr_async(c, dests[i], handler, p + i * len, len);
        i++;
    }
}

/* Every check and every case of cr_async. Not inlined into it, so that its stack
 * frame and its calls stay off the common path. */
__attribute__((noinline)) static void async_checked(cr_comm *c, int dest, int handler,
                                                    const void *payload, size_t len)
{
    if ((unsigned)dest >= (unsigned)c->size)
        cr_fatal("cr_async: destination rank %d is out of range [0, %d)", dest, c->size);
    check_message(c, "cr_async", handler, payload, len);
    bool combines = c->ncombining > 0 && check_key(c, "cr_async", handler, len);
    if (c->routed || combines) {
        cr_append(c, dest, c->rank, handler, 0, payload, len);
    } else {
        /* Direct: the next hop is dest and the record needs no route block. */
        uint64_t key = cr_run_key((uint16_t)handler, cr_run_bits(0, c->send_gen), (uint32_t)len);
        size_t stride = cr_rec_pad(len);
        append_record(c, dest, key, stride, NULL, payload, len, NULL);
    }
    count_sent(c, 1, len);
}

/* The rank of `node` where this rank's broadcast copy enters: the end of the node
 * pair's channel under NLNR (so a broadcast adds no off-node partner), else the
 * rank with my local index there. */
static int bcast_entry(const cr_comm *c, int node)
{
    const cr_layout *l = c->layout;
    int size = cr_layout_node_size(l, node);
    if (c->cfg.route.kind == CR_ROUTE_NLNR)
        return cr_layout_member(l, node, l->node_of[c->rank] % size);
    return cr_layout_member(l, node, l->local_index[c->rank] % size);
}

/* A broadcast appends one record per destination, and each append may wait for a
 * send slot after its copy, running handlers that may write to the caller's payload.
 * Later copies are taken from a private one, so every rank gets what the caller
 * passed. Handlers never wait, so from a handler the payload is used as it is. */
static const void *stable_payload(cr_comm *c, const void *payload, size_t len)
{
    if (len == 0 || !cr_can_wait(c))
        return payload;
    if (c->bcast_copy_cap < len) {
        c->bcast_copy = cr_xrealloc(c->bcast_copy, len);
        c->bcast_copy_cap = len;
    }
    memcpy(c->bcast_copy, payload, len);
    return c->bcast_copy;
}

/* Under a route, the caller sends to every rank of its node and one copy to each
 * other node, routed like any record, which the entry rank there fans out. */
void cr_async_bcast(cr_comm *c, int handler, const void *payload, size_t len)
{
    check_message(c, "cr_async_bcast", handler, payload, len);
    if (c->ncombining > 0)
        check_key(c, "cr_async_bcast", handler, len);
    payload = stable_payload(c, payload, len);
    const cr_layout *l = c->layout;
    if (!c->routed || l->nnodes == c->size) {
        for (int r = 0; r < c->size; r++)
            cr_append(c, (c->rank + 1 + r) % c->size, c->rank, handler, 0, payload, len);
        count_sent(c, (uint64_t)c->size, len);
        return;
    }
    int mine = l->node_of[c->rank];
    for (int k = 1; k <= l->nnodes; k++) {
        int node = (mine + k) % l->nnodes;
        if (node == mine) {
            for (int i = 0; i < cr_layout_node_size(l, node); i++)
                cr_append(c, cr_layout_member(l, node, i), c->rank, handler, 0, payload, len);
            continue;
        }
        cr_append(c, bcast_entry(c, node), c->rank, handler, CR_REC_BCAST, payload, len);
    }
    count_sent(c, (uint64_t)c->size, len);
}

/* A broadcast copy reached its node: pass it to every other rank of the node. */
static void bcast_fanout(cr_comm *c, int handler, int origin, const void *payload, size_t len)
{
    const cr_layout *l = c->layout;
    int node = l->node_of[c->rank];
    for (int i = 0; i < cr_layout_node_size(l, node); i++) {
        int m = cr_layout_member(l, node, i);
        if (m != c->rank) {
            cr_append(c, m, origin, handler, 0, payload, len);
            after_forward(c);
        }
    }
}

/* ---------------------------------------------------------------- multicast
 *
 * cr_async_mcast sends one record per next hop, not per destination: the record is
 * for the reserved handler CR_MCAST_HANDLER, goes to the hop, and carries the user's
 * handler, payload and the destinations that hop serves. Where it arrives, it is
 * handled if this rank is listed, and the rest of the list is split again by next
 * hop. A route that shares a hop between destinations thus carries one copy over it.
 * Its handler sees the caller as `src`: the route block keeps the origin. */

/* A multicast record: this header, the payload padded to 8 bytes, then ndest
 * int32 destinations. */
typedef struct mcast_hdr {
    uint32_t len;     /* the user's payload bytes */
    uint16_t handler; /* the user's handler */
    uint16_t zero;
    uint32_t ndest;
    uint32_t zero2;
} mcast_hdr;

static size_t mcast_dests_at(size_t len)
{
    return sizeof(mcast_hdr) + ((len + 7) & ~(size_t)7);
}

/* Working memory for one multicast being split: the (next hop, destination) pairs
 * and the record under construction. Blocks are kept on a free list and reused, so
 * a multicast allocates nothing once the list holds a block large enough; a nested
 * multicast (from a handler that runs while this one appends) takes another. */
typedef struct cr_mcast_scratch {
    struct cr_mcast_scratch *next;
    size_t cap;
    uint64_t *pairs; /* inside data */
    char *rec;       /* inside data, 8-byte aligned */
    _Alignas(8) char data[];
} cr_mcast_scratch;

static cr_mcast_scratch *mcast_take(cr_comm *c, size_t ndest, size_t rec_bytes)
{
    size_t need = ndest * sizeof(uint64_t) + rec_bytes;
    cr_mcast_scratch *s = c->mcast_free;
    if (s)
        c->mcast_free = s->next;
    if (!s || s->cap < need) {
        s = cr_xrealloc(s, sizeof *s + need);
        s->cap = need;
    }
    s->pairs = (uint64_t *)s->data;
    s->rec = s->data + ndest * sizeof(uint64_t);
    return s;
}

static void mcast_give(cr_comm *c, cr_mcast_scratch *s)
{
    s->next = c->mcast_free;
    c->mcast_free = s;
}

void cr_mcast_free_all(cr_comm *c)
{
    while (c->mcast_free) {
        cr_mcast_scratch *s = c->mcast_free;
        c->mcast_free = s->next;
        free(s);
    }
}

static int by_pair(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Send the record in s->rec (header and payload written) to the destinations
 * dests[0, n) other than this rank, one record per next hop, as created by `origin`.
 * Appends may wait (from user code) and run handlers: everything they read is in s. */
static void mcast_split(cr_comm *c, cr_mcast_scratch *s, const int32_t *dests, size_t n,
                        int origin)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (dests[i] != c->rank)
            s->pairs[k++] = (uint64_t)cr_next_hop(c, dests[i]) << 32 | (uint32_t)dests[i];
    qsort(s->pairs, k, sizeof *s->pairs, by_pair);
    mcast_hdr h;
    memcpy(&h, s->rec, sizeof h);
    size_t at = mcast_dests_at(h.len);
    for (size_t i = 0; i < k;) {
        int hop = (int)(s->pairs[i] >> 32);
        uint32_t m = 0;
        for (; i < k && (int)(s->pairs[i] >> 32) == hop; i++, m++) {
            int32_t d = (int32_t)(uint32_t)s->pairs[i];
            memcpy(s->rec + at + m * sizeof d, &d, sizeof d);
        }
        h.ndest = m;
        memcpy(s->rec, &h, sizeof h);
        cr_append(c, hop, origin, CR_MCAST_HANDLER, 0, s->rec, at + m * sizeof(int32_t));
    }
}

static void check_mcast_list(const cr_comm *c, cr_mcast_scratch *s, const int *ranks, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if ((unsigned)ranks[i] >= (unsigned)c->size)
            cr_fatal("cr_async_mcast: rank %d (entry %zu of the list) is out of range [0, %d)",
                     ranks[i], i, c->size);
        s->pairs[i] = (uint32_t)ranks[i];
    }
    qsort(s->pairs, n, sizeof *s->pairs, by_pair);
    for (size_t i = 1; i < n; i++)
        if (s->pairs[i] == s->pairs[i - 1])
            cr_fatal("cr_async_mcast: rank %d is listed twice (each rank gets one copy)",
                     (int)s->pairs[i]);
}

void cr_async_mcast(cr_comm *c, const int *ranks, size_t n, int handler, const void *payload,
                    size_t len)
{
    check_message(c, "cr_async_mcast", handler, payload, len);
    if (n > 0 && !ranks)
        cr_fatal("cr_async_mcast: %zu ranks but the list is NULL", n);
    if (n > (size_t)c->size)
        cr_fatal("cr_async_mcast: %zu ranks listed, but the comm has %d (a rank is listed twice)",
                 n, c->size);
    if (c->ncombining > 0)
        check_key(c, "cr_async_mcast", handler, len);
    size_t at = mcast_dests_at(len), rec = at + n * sizeof(int32_t);
    if (rec > CR_MAX_PAYLOAD)
        cr_fatal("cr_async_mcast: %zu bytes to %zu ranks is over the record limit of %zu bytes",
                 len, n, CR_MAX_PAYLOAD);
    if (n == 0)
        return;
    cr_mcast_scratch *s = mcast_take(c, n, rec);
    check_mcast_list(c, s, ranks, n);
    mcast_hdr h = {.len = (uint32_t)len, .handler = (uint16_t)handler, .ndest = (uint32_t)n};
    memcpy(s->rec, &h, sizeof h);
    if (len)
        memcpy(s->rec + sizeof h, payload, len); /* the caller's buffer may change below */
    int32_t *dests = (int32_t *)(s->rec + at);
    bool to_self = false;
    for (size_t i = 0; i < n; i++) {
        dests[i] = ranks[i];
        to_self |= ranks[i] == c->rank;
    }
    mcast_split(c, s, dests, n, c->rank);
    if (to_self) { /* this rank's copy, through its own queue like any record to itself */
        h.ndest = 1;
        int32_t me = c->rank;
        memcpy(s->rec, &h, sizeof h);
        memcpy(s->rec + at, &me, sizeof me);
        cr_append(c, c->rank, c->rank, CR_MCAST_HANDLER, 0, s->rec, at + sizeof me);
    }
    mcast_give(c, s);
    count_sent(c, (uint64_t)n, len);
}

static void corrupt_route(const cr_comm *c, int src, cr_rec_route route)
{
    cr_fatal("corrupt record from rank %d: route block names destination %d and origin %d, but "
             "the job has %d ranks and this is rank %d",
             src, (int)route.dest, (int)route.origin, c->size, c->rank);
}

static const cr_handler_entry *handler_of(const cr_comm *c, int src, unsigned id)
{
    const cr_handler_entry *h = cr_registry_get(&c->handlers, id);
    if (!h)
        cr_fatal("received a message for handler id %u from rank %d, but only %u handlers "
                 "are registered here; every rank must register the same handlers in the "
                 "same order",
                 id, src, c->handlers.count);
    return h;
}

/* The generation of what a handler of a record of generation `gen` sends: one more
 * under deep-held (at most CR_REC_GEN_MAX), else always 0. */
static inline uint16_t child_gen(const cr_comm *c, unsigned gen)
{
    if (!c->fops->generations)
        return 0;
    return (uint16_t)(gen < CR_REC_GEN_MAX ? gen + 1 : gen);
}

/* What this rank has sent outside waits by handling: payload bytes and records. */
typedef struct output_mark {
    uint64_t bytes, msgs;
} output_mark;

static inline output_mark output_now(const cr_comm *c)
{
    return (output_mark){c->stats.bytes_sent - c->flow.sent_in_waits,
                         c->stats.msgs_sent - c->flow.msgs_in_waits};
}

/* A handler call ended: the most one call sent, as payload (cr_stats) and as the
 * bytes its records take in buffers (the bound's Y: each record's payload padded to
 * 8 bytes, its route block and at most a run header of its own). */
static inline void note_output(cr_comm *c, const cr_handler_entry *h, output_mark before)
{
    output_mark now = output_now(c);
    uint64_t out = now.bytes - before.bytes, msgs = now.msgs - before.msgs;
    if (out > c->stats.peak_handler_output)
        c->stats.peak_handler_output = out;
    uint64_t wire = out + msgs * (7 + sizeof(cr_rec_route) + sizeof(cr_run_hdr));
    if (wire > c->flow.peak_call_wire)
        c->flow.peak_call_wire = wire;
    if (msgs && !h->reentrant) /* under waits, nothing holds this output to the cap */
        c->flow.unheld_output = true;
}

/* Hand a batch of records for this rank to its handler: in one call to a batch
 * handler, or record by record. The most one call sends is kept: the memory bound
 * has a term for it (docs/flow_control.md). */
static void handle_batch(cr_comm *c, const cr_handler_entry *h, const cr_batch *b)
{
    output_mark before = output_now(c);
    bool outer_reentrant = c->flow.in_reentrant;
    c->flow.in_reentrant = h->reentrant;
    c->last_handler = (int)(h - c->handlers.entries) + 1;
    if (h->batch) {
        h->batch(c, b, h->user);
        c->stats.batches++;
        note_output(c, h, before);
    } else if (!b->origins) {
        for (size_t i = 0; i < b->count; i++, before = output_now(c)) {
            h->fn(c, b->src, b->payloads + i * b->stride, b->len, h->user);
            note_output(c, h, before);
        }
    } else {
        for (size_t i = 0; i < b->count; i++, before = output_now(c)) {
            h->fn(c, cr_batch_src(b, i), cr_batch_payload(b, i), b->len, h->user);
            note_output(c, h, before);
        }
    }
    c->flow.in_reentrant = outer_reentrant;
    c->stats.msgs_handled += b->count;
    c->stats.bytes_handled += b->count * b->len;
}

/* Records [start, end) of a routed run, all for this rank: one batch (its senders are
 * the records' origins). */
static void handle_stretch(cr_comm *c, const cr_handler_entry *h, const cr_run_view *run,
                           size_t start, size_t end)
{
    if (end <= start)
        return;
    cr_batch b = {.stride = run->stride, .len = run->len, .src = -1, .count = end - start};
    b.payloads = run->first + start * run->stride;
    b.origins = b.payloads - sizeof(cr_rec_route) + offsetof(cr_rec_route, origin);
    handle_batch(c, h, &b);
}

/* ---------------------------------------------------------------- receiving
 *
 * One path for both flow policies. A run is walked by walk_run: records for this
 * rank are handed to their handler in stretches (one batch each), records for other
 * ranks are passed on towards their next hop. Under waits a walk always reaches the
 * run's end (waits happen inside the appends); under deep-held it stops once the
 * rank is paused, and after each record of a reentrant handler, whose children may
 * be deeper than the rest of the run (docs/flow_control.md, "deep-held"). */

/* Under deep-held: the send buffers and sends in flight hold the cap, so handling
 * waits (rule 3). */
static inline bool deep_paused(const cr_comm *c)
{
    return c->out.total + c->flow.inflight_bytes >= c->cfg.buffer_cap_bytes;
}

/* Records [from, to) of a run that is not routed, all for this rank: one batch. */
static void handle_range(cr_comm *c, const cr_handler_entry *h, const cr_run_view *run, int src,
                         size_t from, size_t to)
{
    c->send_gen = child_gen(c, run->gen);
    cr_batch b = {.payloads = run->first + from * run->stride, .stride = run->stride,
                  .len = run->len, .count = to - from, .src = src, .origins = NULL};
    handle_batch(c, h, &b);
}

/* A routed run from record `from` on: each stretch of consecutive records for this
 * rank is handled as one batch (broadcast copies fanned out on the node first),
 * the others are passed on. Returns how far it got. */
static size_t walk_routed(cr_comm *c, int src, const cr_handler_entry *h, const cr_run_view *run,
                          size_t from)
{
    bool held = c->fops->generations;
    size_t start = from, i = from;
    while (i < run->count) {
        cr_rec_route r = cr_run_route(run, i);
        if ((unsigned)r.dest >= (unsigned)c->size || (unsigned)r.origin >= (unsigned)c->size)
            corrupt_route(c, src, r);
        const char *payload = run->first + i * run->stride;
        c->send_gen = run->gen; /* a copy passed on keeps its generation */
        i++;
        if (r.dest == c->rank) {
            if (run->flags & CR_REC_BCAST)
                bcast_fanout(c, run->handler, r.origin, payload, run->len);
            if (held && h->reentrant)
                break;
            continue;
        }
        c->send_gen = child_gen(c, run->gen);
        handle_stretch(c, h, run, start, i - 1);
        c->send_gen = run->gen;
        cr_append(c, r.dest, r.origin, run->handler, run->flags & CR_REC_BCAST, payload,
                  run->len);
        after_forward(c);
        start = i;
        if (held && deep_paused(c))
            break;
    }
    c->send_gen = child_gen(c, run->gen);
    handle_stretch(c, h, run, start, i);
    return i;
}

static void corrupt_mcast(int src, size_t len)
{
    cr_fatal("corrupt multicast record of %zu bytes from rank %d: its header, destinations "
             "and length disagree",
             len, src);
}

/* A multicast record reached this rank (see cr_async_mcast): the destinations other
 * than this rank are split again by next hop (the copies keep their generation),
 * then the record is handled here if this rank is listed. Returns whether a
 * reentrant handler ran (deep-held then stops the walk, as for any reentrant
 * record). */
static bool mcast_arrived(cr_comm *c, int src, const cr_run_view *run, const char *rec,
                          int origin)
{
    mcast_hdr h;
    memcpy(&h, rec, sizeof h);
    size_t at = mcast_dests_at(h.len);
    if (h.len > run->len || at > run->len || (run->len - at) / sizeof(int32_t) != h.ndest ||
        (run->len - at) % sizeof(int32_t))
        corrupt_mcast(src, run->len);
    const cr_handler_entry *uh = handler_of(c, src, h.handler);
    bool mine = false;
    for (uint32_t i = 0; i < h.ndest; i++) {
        int32_t d;
        memcpy(&d, rec + at + i * sizeof d, sizeof d);
        if ((unsigned)d >= (unsigned)c->size)
            corrupt_mcast(src, run->len);
        mine |= d == c->rank;
    }
    if (h.ndest > (uint32_t)mine) {
        cr_mcast_scratch *s = mcast_take(c, h.ndest, run->len);
        memcpy(s->rec, rec, at);
        c->send_gen = run->gen;
        mcast_split(c, s, (const int32_t *)(rec + at), h.ndest, origin);
        mcast_give(c, s);
        after_forward(c);
    }
    if (!mine)
        return false;
    c->send_gen = child_gen(c, run->gen);
    cr_batch b = {.payloads = rec + sizeof h, .stride = run->stride, .len = h.len, .count = 1,
                  .src = origin, .origins = NULL};
    handle_batch(c, uh, &b);
    return uh->reentrant;
}

/* Records from `from` on of a run of multicast records: passed on where they are
 * for another rank, else split and handled. Returns how far it got. */
static size_t walk_mcast(cr_comm *c, int src, const cr_run_view *run, size_t from)
{
    bool routed = run->flags & CR_REC_ROUTED, held = c->fops->generations;
    size_t i = from;
    while (i < run->count) {
        const char *rec = run->first + i * run->stride;
        cr_rec_route r = {.dest = c->rank, .origin = src};
        if (routed)
            r = cr_run_route(run, i);
        if ((unsigned)r.dest >= (unsigned)c->size || (unsigned)r.origin >= (unsigned)c->size)
            corrupt_route(c, src, r);
        i++;
        bool reentrant = false;
        if (r.dest != c->rank) {
            c->send_gen = run->gen;
            cr_append(c, r.dest, r.origin, CR_MCAST_HANDLER, 0, rec, run->len);
            after_forward(c);
        } else {
            reentrant = mcast_arrived(c, src, run, rec, r.origin);
        }
        if (held && (reentrant || deep_paused(c)))
            break;
    }
    return i;
}

/* Records from `from` on of one run: how far the walk got (see above). */
static size_t walk_run(cr_comm *c, int src, const cr_run_view *run, size_t from)
{
    if (run->gen > c->stats.deepest_generation)
        c->stats.deepest_generation = run->gen;
    if (run->handler == CR_MCAST_HANDLER)
        return walk_mcast(c, src, run, from);
    const cr_handler_entry *h = handler_of(c, src, run->handler);
    if (run->flags & CR_REC_ROUTED)
        return walk_routed(c, src, h, run, from);
    size_t to = c->fops->generations && h->reentrant ? from + 1 : run->count;
    handle_range(c, h, run, src, from, to);
    return to;
}

static void corrupt_buffer(size_t len, int src, size_t off)
{
    cr_fatal("corrupt buffer of %zu bytes from rank %d: a record at offset %zu runs past its end",
             len, src, off);
}

/* Walk the runs of buf[0, len) from rank src where they lie, until a run is left
 * unfinished or `more` says to stop after a finished one. Returns the offset of the
 * first run not handled to its end (len when all were), with its records handled in
 * *done. Records for other ranks are re-buffered towards their next hop before the
 * buffer counts as handled, which keeps the barrier's counts exact
 * (docs/routing.md). */
static size_t walk_buffer(cr_comm *c, int src, const char *buf, size_t len,
                          bool (*more)(const cr_comm *c), size_t *done)
{
    uint16_t outer_gen = c->send_gen;
    c->handler_depth++;
    size_t off = 0, at = 0;
    *done = 0;
    cr_run_view run;
    cr_rec_status st;
    while ((st = cr_run_next(buf, len, &off, &run)) == CR_REC_OK) {
        size_t to = walk_run(c, src, &run, 0);
        if (to < run.count) {
            *done = to;
            break;
        }
        at = off;
        if (!more(c))
            break;
    }
    if (st == CR_REC_TRUNCATED)
        corrupt_buffer(len, src, off);
    if (st == CR_REC_END)
        at = len;
    c->send_gen = outer_gen;
    c->handler_depth--;
    return at;
}

/* A buffer handled to its end counts for the barrier, and as one "handle" span of
 * the trace (a buffer parked in part counts when its last parked run is handled). */
static void buffer_handled(cr_comm *c, int src, double traced, uint64_t handled_before)
{
    c->mpi_handled_total++;
    if (c->trace)
        cr_trace_span(c->trace, "handle", traced, "src", src, "records",
                      (int64_t)(c->stats.msgs_handled - handled_before));
}

static bool always(const cr_comm *c)
{
    (void)c;
    return true;
}

/* COURIER_FLOW=waits: every buffer is handled whole as it arrives. */
static void waits_take(cr_comm *c, int src, const char *buf, size_t len)
{
    double traced = c->trace ? cr_trace_now(c->trace) : 0;
    uint64_t handled_before = c->stats.msgs_handled;
    size_t done;
    walk_buffer(c, src, buf, len, always, &done);
    buffer_handled(c, src, traced, handled_before);
}

/* Received buffers taken per poll under either policy, so sends and timers are not
 * starved. */
#define RECV_BUDGET 16

static size_t waits_poll(cr_comm *c, bool worked)
{
    (void)worked;
    return cr_self_poll(c, RECV_BUDGET) + cr_recv_poll(c, RECV_BUDGET);
}

const cr_flow_ops cr_flow_waits = {
    .name = "waits",
    .generations = false,
    .waits_in_calls = true,
    .take = waits_take,
    .poll = waits_poll,
};

/* ---------------------------------------------------------------- deep-held
 *
 * COURIER_FLOW=deep-held (docs/flow_control.md, "deep-held"). A buffer that arrives
 * while nothing is parked and the rank is not paused is handled where it lies,
 * receive in place; handling stops where the rank pauses, or where a reentrant
 * handler's record leaves work that may be deeper (a buffer this rank sent itself),
 * and only the rest is copied into the park, each run in the queue of its
 * generation. The loop handles parked runs deepest generation first, and only while
 * the send buffers and the sends in flight hold less than the cap; between two
 * records of a reentrant handler, and between two records a route passes on, the
 * rank checks again, so over the cap it adds at most one handler call's output. It
 * never stops receiving: a paused rank's sends complete, its send buffers go out as
 * slots free, and it handles again. */

/* In place, go on to the buffer's next run? Not once the rank is paused, nor once
 * its own buffers wait: their records may be deeper. */
static bool deep_more(const cr_comm *c)
{
    return !deep_paused(c) && c->self.n == 0;
}

/* Park buf[at, len) from src; `done` records of its first run are handled. */
static void park_rest(cr_comm *c, int src, const char *buf, size_t len, size_t at, size_t done)
{
    size_t bad = 0;
    long runs = cr_park_buffer(&c->park, src, src == c->rank, c->flow.taking_relief, buf + at,
                               len - at, (uint32_t)done, &bad);
    if (runs < 0)
        corrupt_buffer(len, src, at + bad);
    if (runs == 0)
        c->mpi_handled_total++;
    if (c->park.relief_bytes > c->flow.peak_relief_bytes)
        c->flow.peak_relief_bytes = c->park.relief_bytes;
    cr_note_memory(c);
}

static void deep_take(cr_comm *c, int src, const char *buf, size_t len)
{
    size_t at = 0, done = 0;
    /* In place only from the loop (no handler running), so no parked run is being
     * walked while a buffer is parked (park.h). */
    if (c->handler_depth == 0 && cr_park_empty(&c->park) && !deep_paused(c)) {
        double traced = c->trace ? cr_trace_now(c->trace) : 0;
        uint64_t handled_before = c->stats.msgs_handled;
        at = walk_buffer(c, src, buf, len, deep_more, &done);
        if (at == len) {
            buffer_handled(c, src, traced, handled_before);
            return;
        }
    }
    park_rest(c, src, buf, len, at, done);
}

/* Handle up to about `budget` parked records, deepest generation first, while the
 * rank is below the cap. */
static size_t deep_handle(cr_comm *c, size_t budget)
{
    size_t records = 0;
    c->handler_depth++;
    while (records < budget && !deep_paused(c)) {
        /* What this rank sent itself competes by generation with what is parked: its
         * children are deeper than the record that sent them. */
        while (cr_self_handle_one(c, false))
            ;
        if (cr_park_empty(&c->park))
            break;
        cr_run_view run;
        int src;
        uint32_t r = cr_park_next(&c->park, &run, &src);
        double traced = c->trace ? cr_trace_now(c->trace) : 0;
        size_t from = c->park.runs[r].done;
        size_t to = walk_run(c, src, &run, from);
        records += to - from;
        c->park.runs[r].done = (uint32_t)to;
        if (to < run.count || !cr_park_run_done(&c->park, r))
            continue;
        c->mpi_handled_total++; /* the buffer's last run: the buffer counts as handled */
        if (c->trace)
            cr_trace_span(c->trace, "handle", traced, "src", src, "records", (int64_t)(to - from));
    }
    c->handler_depth--;
    c->send_gen = 0;
    return records;
}

/* Parked records handled per poll at most. */
#define DEEP_HANDLE_BUDGET 4096

static size_t deep_poll(cr_comm *c, bool worked)
{
    /* This rank's own buffers are always taken: they move from one part of what it
     * holds to another, and nobody waits for them. Other ranks' buffers are taken
     * while what came from them holds less than the park cap. */
    size_t work = cr_self_poll(c, RECV_BUDGET);
    for (int k = 0; k < RECV_BUDGET && c->park.others_bytes < c->park_cap; k++) {
        size_t got = cr_recv_poll(c, 1);
        if (!got)
            break;
        work += got;
    }
    size_t handled = deep_handle(c, DEEP_HANDLE_BUDGET);
    work += handled;
    if (handled)
        c->relief_streak = 0;
    /* The relief: a rank that is paused and refuses buffers may be what its senders
     * wait for while it waits for them (docs/flow_control.md, "deep-held"); after
     * polls without progress it takes one buffer from another rank, which completes
     * that rank's send. The first relief comes after one such poll; each further one
     * while the rank has handled nothing since waits twice as many polls, up to
     * park_relief_polls: a rank whose reliefs do not set it moving again stops
     * filling its park with them. */
    bool refusing = c->park.others_bytes >= c->park_cap;
    if (work || worked || !refusing || !deep_paused(c)) {
        c->refused_polls = 0;
        return work;
    }
    unsigned limit = c->cfg.park_relief_polls;
    unsigned need = c->relief_streak < 16 ? 1u << c->relief_streak : limit;
    if (limit && ++c->refused_polls >= (need < limit ? need : limit)) {
        c->flow.taking_relief = true;
        size_t got = cr_recv_poll(c, 1);
        c->flow.taking_relief = false;
        if (got) {
            c->stats.reliefs++;
            c->refused_polls = 0;
            c->relief_streak++;
            work++;
        }
    }
    return work;
}

const cr_flow_ops cr_flow_deep_held = {
    .name = "deep-held",
    .generations = true,
    .waits_in_calls = false,
    .take = deep_take,
    .poll = deep_poll,
};

static void deliver(void *arg, int src, const char *buf, size_t len)
{
    cr_comm *c = arg;
    c->stats.mpi_recvs++;
    c->fops->take(c, src, buf, len);
}

bool cr_self_handle_one(cr_comm *c, bool newest)
{
    cr_block b;
    if (!(newest ? cr_selfq_pop_newest(c, &b) : cr_selfq_pop(c, &b)))
        return false;
    /* From now on the block is being handled, like a received one: no longer queued. */
    c->flow.self_bytes -= b.cap;
    cr_update_room(c);
    c->fops->take(c, c->rank, b.data, b.len);
    cr_outbufs_recycle(&c->out, b.data, b.cap);
    return true;
}

size_t cr_self_poll(cr_comm *c, int budget)
{
    size_t done = 0;
    while (done < (size_t)budget && cr_self_handle_one(c, false))
        done++;
    return done;
}

size_t cr_recv_poll(cr_comm *c, int budget)
{
    return c->tp->ops->poll(c->tp, budget, deliver, c);
}

/* ---------------------------------------------------------------- waiting by handling
 *
 * The flow control of records sent from handlers and passed on by routes
 * (docs/flow_control.md, "The mechanism: waiting by handling").
 *
 * User code that finds no room waits in the event loop, which handles what arrives.
 * A handler cannot return to the loop, so a reentrant handler (cr_handler_type) or a
 * forwarding step that finds its rank over the cap does the loop's work here, on its
 * own stack: it completes sends, sends what waits for a slot, and handles one
 * received buffer at a time (one from another rank, so its sender's slot comes free,
 * else the newest of its own) until the rank is below the cap. The handlers it runs
 * may wait in turn, so the waits nest: on one rank a depth-first order, the order in
 * which a tree of records needs the least memory (the lower bound in the doc; across
 * ranks the nesting does not follow the trees, which the doc explains). At
 * COURIER_NEST_LIMIT waits deep a call goes on without waiting and counts a cap
 * overrun. No waiting rank stops receiving, so no cycle of waiting ranks can block
 * each other. */

/* Polls in a row that found nothing before a waiting rank starts to sleep, and the
 * longest sleep: the wait needs another rank to move, which needs the core. */
#define SPIN_POLLS 64
#define MAX_SLEEP_US 1000

/* One received buffer handled: one that arrived from another rank (so its sender's
 * slot comes free), else the newest this rank sent itself. */
static size_t handle_one(cr_comm *c)
{
    if (cr_recv_poll(c, 1) > 0)
        return 1;
    return cr_self_handle_one(c, true) ? 1 : 0;
}

static void back_off(cr_comm *c, unsigned idle)
{
    if (c->tp->ops->yield) {
        c->tp->ops->yield(c->tp); /* the simulation: let the other virtual ranks run */
        return;
    }
    if (idle < SPIN_POLLS)
        return;
    unsigned us = idle - SPIN_POLLS + 1;
    struct timespec ts = {0, 1000L * (us < MAX_SLEEP_US ? us : MAX_SLEEP_US)};
    nanosleep(&ts, NULL);
}

/* The event loop's timer runs the watchdog, and a wait by handling does not return
 * to the loop: once the wait has found nothing to do for half a watchdog interval,
 * it ticks the watchdog itself, as often as the timer would, so a rank stuck in a
 * wait by handling reports like any waiting rank. *next_tick is 0 until the wait
 * first sleeps; the quiet time counts from then. */
static void tick_while_waiting(cr_comm *c, double *next_tick)
{
    double half = c->cfg.watchdog_seconds / 2;
    if (half <= 0 || c->tp->ops->yield) /* the simulation has no watchdog */
        return;
    double now = cr_clock(c);
    if (*next_tick == 0) {
        c->last_activity = now;
        *next_tick = now + half;
    } else if (now >= *next_tick) {
        *next_tick = now + half;
        cr_engine_tick_watchdog(c);
    }
}

/* Send what can be sent now: deferred buffers into free slots, then the largest
 * buffers if the cap is still reached. */
static void send_what_fits(cr_comm *c)
{
    if (c->flow.ndeferred > 0)
        cr_retry_deferred(c);
    if (c->out.total < c->cfg.buffer_cap_bytes)
        return;
    /* A cap flush further out on the stack (it waits for a slot, and this wait runs
     * inside that) owns the flush's ordering: send without it, or this wait would
     * wait for that one and that one for this (found by the routed MPI tests). */
    if (c->flow.in_cap_flush)
        cr_flush_all_nowait(c, CR_FLUSH_CAP);
    else
        cr_flush_for_cap(c);
}

void cr_wait_by_handling(cr_comm *c)
{
    if (c->flow.nest >= (int)c->cfg.nest_limit) {
        c->stats.cap_overruns++;
        return;
    }
    c->flow.nest++;
    if ((uint64_t)c->flow.nest > c->stats.peak_nesting)
        c->stats.peak_nesting = (uint64_t)c->flow.nest;
    c->stats.handler_waits++;
    double t0 = cr_clock(c);
    uint64_t sent_before = c->stats.bytes_sent, waits_before = c->flow.sent_in_waits;
    uint64_t msgs_before = c->stats.msgs_sent, msgs_waits_before = c->flow.msgs_in_waits;
    unsigned idle = 0;
    double next_tick = 0;
    bool changed = true; /* something moved since send_what_fits last ran */
    while (cr_over_cap(c)) {
        if (cr_complete_sends(c) > 0)
            changed = true;
        if (changed) {
            send_what_fits(c);
            if (!cr_over_cap(c))
                break;
        }
        changed = handle_one(c) > 0;
        if (changed) {
            idle = 0;
            next_tick = 0;
            c->last_activity = c->now;
        } else {
            back_off(c, ++idle);
            if (idle >= SPIN_POLLS)
                tick_while_waiting(c, &next_tick);
        }
    }
    /* What the handlers run here sent is theirs, not the waiting handler's output
     * (peak_handler_output); an inner wait's share is already in sent_in_waits. */
    c->flow.sent_in_waits = waits_before + (c->stats.bytes_sent - sent_before);
    c->flow.msgs_in_waits = msgs_waits_before + (c->stats.msgs_sent - msgs_before);
    /* The outermost wait's time includes the inner ones'; inside user code's own
     * wait for room, that wait counts it. */
    if (c->flow.nest == 1 && !c->flow.throttling) {
        double us = (cr_clock(c) - t0) * 1e6;
        c->stats.throttled_us += us > 0 ? (uint64_t)us : 0;
    }
    c->flow.nest--;
}
