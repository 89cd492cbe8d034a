/* The one place a record is appended to the buffer of its next hop.
 *
 * cr_async, cr_async_bcast, the multicast, forwarding and the broadcast's fan-out
 * all append through cr_append, which alone decides the next hop and merges
 * combining records (dedup). The common case is a few instructions and is inlined
 * into every caller, with the look-up of a combining record; the slow half (a new
 * run, a full buffer, the cap) is out of line, in append.c. */
#ifndef COURIER_MAILBOX_APPEND_H
#define COURIER_MAILBOX_APPEND_H

#include "mailbox/mailbox_internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* append.c: the slow half of an append (a new run, a buffer due to be sent, the
 * cap). */
void cr_append_slow(cr_comm *c, int hop, cr_outbuf *b, uint64_t key, size_t stride,
                    const cr_rec_route *route, const void *payload, size_t len,
                    cr_combine_slot *slot);

/* A combining handler's record was just written at `payload` in hop's buffer b:
 * point the index slot at it (combine.h). The slot dies when the buffer is sent. */
static inline void cr_index_record(cr_comm *c, cr_combine_slot *slot, int hop,
                                   const cr_outbuf *b, const char *payload)
{
    slot->hash = c->pending_key.hash;
    slot->hop = (uint32_t)hop;
    slot->gen = b->gen;
    slot->off = (uint32_t)(payload - b->data);
    slot->dest = c->pending_key.dest;
    slot->len = c->pending_key.len;
    slot->handler = c->pending_key.handler;
}

/* The common case of an append, a few instructions: the record joins the open run
 * of hop's buffer b, which stays below its threshold, its capacity and the cap.
 * False when cr_append_slow must decide. */
static inline bool cr_append_fast(cr_comm *c, int hop, cr_outbuf *b, uint64_t key,
                                  size_t stride, const cr_rec_route *route,
                                  const void *payload, size_t len, cr_combine_slot *slot)
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
        cr_index_record(c, slot, hop, b, at + (route ? sizeof *route : 0));
    return true;
}

/* One look-up of hop's entry (created on first use) for the whole append. */
static inline void cr_append_record(cr_comm *c, int hop, uint64_t key, size_t stride,
                                    const cr_rec_route *route, const void *payload,
                                    size_t len, cr_combine_slot *slot)
{
    cr_outbuf *b = cr_outbufs_at(&c->out, hop);
    if (!cr_append_fast(c, hop, b, key, stride, route, payload, len, slot))
        cr_append_slow(c, hop, b, key, stride, route, payload, len, slot);
}

/* Append a record to the buffer of `hop` (routed if route != NULL), flushing by size
 * and cap as it goes. */
static inline void cr_append_to_buffer(cr_comm *c, int hop, int handler, uint16_t flags,
                                       const cr_rec_route *route, const void *payload,
                                       size_t len, cr_combine_slot *slot)
{
    uint16_t run_flags = route ? (uint16_t)(flags | CR_REC_ROUTED) : 0;
    uint64_t key = cr_run_key((uint16_t)handler, cr_run_bits(run_flags, c->send_gen), (uint32_t)len);
    size_t stride = cr_rec_stride(len, route != NULL);
    cr_append_record(c, hop, key, stride, route, payload, len, slot);
}

/* When keys rarely repeat within a buffer, looking them up costs more than the
 * merges save (a cache miss in the index per record): a handler whose look-ups
 * merged fewer than 1 in COMBINE_PAYS over a window of COMBINE_WINDOW appends its
 * next COMBINE_REST records without looking, then looks again. Merging is an
 * optimisation, so skipping it is always correct. */
#define COMBINE_WINDOW 1024
#define COMBINE_PAYS 16
#define COMBINE_REST (32 * COMBINE_WINDOW)

static inline void cr_judge_combining(cr_handler_entry *h, bool merged)
{
    h->combine_hits += merged;
    if (++h->combine_tries < COMBINE_WINDOW)
        return;
    if (h->combine_hits * COMBINE_PAYS < h->combine_tries)
        h->combine_skip = COMBINE_REST;
    h->combine_tries = h->combine_hits = 0;
}

/* A record of a combining handler (cr_handler_type.key_len > 0) on its way to `dest`
 * through `hop`: if a record with the same handler, destination, length and key
 * waits in hop's buffer, merge this one into it and return true; else return the
 * index slot the record should be entered in (*slot, possibly NULL) and false.
 * Merging at the source and at every forwarding hop is the same code. */
static inline bool cr_merge_combining(cr_comm *c, int hop, int dest, int origin, int handler,
                                      const void *payload, size_t len,
                                      cr_combine_slot **slot)
{
    cr_handler_entry *h = &c->handlers.entries[handler];
    cr_combine_key k = {.hop = hop, .dest = dest, .handler = (uint16_t)handler,
                        .len = (uint32_t)len, .key = payload, .key_len = h->key_len};
    k.hash = cr_combine_hash(hop, dest, k.handler, payload, h->key_len);
    bool found;
    *slot = cr_combine_find(&c->combine, &c->out, &k, &found);
    cr_judge_combining(h, found);
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

/* Does this record go through the combining index? Not for a handler that does not
 * combine, nor while its look-ups do not pay (append.c, cr_merge_combining). */
static inline bool cr_combining(cr_comm *c, int handler, uint16_t flags)
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
    if (cr_combining(c, handler, flags) &&
        cr_merge_combining(c, hop, dest, origin, handler, payload, len, &slot))
        return;
    if (hop == dest && origin == c->rank && flags == 0) {
        cr_append_to_buffer(c, hop, handler, 0, NULL, payload, len, slot);
        return;
    }
    cr_rec_route route = {.dest = dest, .origin = origin};
    cr_append_to_buffer(c, hop, handler, flags, &route, payload, len, slot);
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

/* A record passed on for another rank counts against the cap like any other; what
 * follows depends on the flow policy (under waits, the forwarder handles buffers
 * before it passes on the next record). True when a walk should stop here (under
 * deep-held, the rank is paused). */
static inline bool cr_after_forward(cr_comm *c)
{
    return c->fops->forwarded(c);
}

#endif
