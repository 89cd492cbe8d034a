/* The out-of-line half of an append (append.h): a record that opens a run, fills
 * its buffer or reaches the cap. */
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
