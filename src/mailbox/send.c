/* Sending: cr_async, cr_async_many and cr_async_bcast, their checks, and the counts
 * of what user code sent, which poll the network now and then. Every record goes
 * through cr_append (append.h); cr_async's common case is written out here so that
 * it calls nothing. */
#include "mailbox/append.h"
#include "mailbox/send.h"

#include "common/fatal.h"
#include "mailbox/record.h"

#include <stdlib.h>
#include <string.h>

void cr_bad_message(const cr_comm *c, const char *fn, int handler, const void *payload,
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

static inline bool check_key(const cr_comm *c, const char *fn, int handler, size_t len)
{
    size_t key_len = c->handlers.entries[handler].key_len;
    if (len < key_len)
        cr_fatal("%s: payload of %zu bytes is shorter than the key (%zu bytes) of combining "
                 "handler %d",
                 fn, len, key_len, handler);
    return key_len > 0;
}

bool cr_check_key(const cr_comm *c, const char *fn, int handler, size_t len)
{
    return check_key(c, fn, handler, len);
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
    /* Once its record is appended (and indexed, if it combines), nothing of this call
     * is left to be done: the policy may make a reentrant handler wait here. */
    if (c->flow.in_reentrant)
        c->fops->reentrant_sent(c);
}

void cr_count_sent(cr_comm *c, uint64_t msgs, size_t len)
{
    count_sent(c, msgs, len);
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
    cr_check_message(c, "cr_async_many", handler, payloads, len);
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
    cr_check_message(c, "cr_async", handler, payload, len);
    bool combines = c->ncombining > 0 && check_key(c, "cr_async", handler, len);
    if (c->routed || combines) {
        cr_append(c, dest, c->rank, handler, 0, payload, len);
    } else {
        /* Direct: the next hop is dest and the record needs no route block. */
        uint64_t key = cr_run_key((uint16_t)handler, cr_run_bits(0, c->send_gen), (uint32_t)len);
        size_t stride = cr_rec_pad(len);
        cr_append_record(c, dest, key, stride, NULL, payload, len, NULL);
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
    if (c->tune.now.route.kind == CR_ROUTE_NLNR)
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
    cr_check_message(c, "cr_async_bcast", handler, payload, len);
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
void cr_bcast_fanout(cr_comm *c, int handler, int origin, const void *payload, size_t len)
{
    const cr_layout *l = c->layout;
    int node = l->node_of[c->rank];
    for (int i = 0; i < cr_layout_node_size(l, node); i++) {
        int m = cr_layout_member(l, node, i);
        if (m != c->rank) {
            cr_append(c, m, origin, handler, 0, payload, len);
            cr_after_forward(c);
        }
    }
}
