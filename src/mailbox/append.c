/* The out-of-line half of an append (append.h): a record that opens a run, fills
 * its buffer or reaches the cap, and the look-up of a combining record in the index
 * of what waits in the buffers (combine.h). */
#include "mailbox/append.h"

#include "mailbox/combine.h"
#include "mailbox/record.h"

/* The slow half of cr_append_fast: the record opens a run, or its buffer is due to
 * be sent, or the cap is reached. b is hop's entry: entries never move, so it stays
 * valid while a flush below sends its buffer or waits. */
void cr_append_slow(cr_comm *c, int hop, cr_outbuf *b, uint64_t key, size_t stride,
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
        cr_index_record(c, slot, hop, b, at + (route ? sizeof *route : 0));

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

/* A record of a combining handler (cr_handler_type.key_len > 0) on its way to `dest`
 * through `hop`: if a record with the same handler, destination, length and key
 * waits in hop's buffer, merge this one into it and return true; else return the
 * index slot the record should be entered in (*slot, possibly NULL) and false.
 * Merging at the source and at every forwarding hop is the same code. */
bool cr_merge_combining(cr_comm *c, int hop, int dest, int origin, int handler,
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
