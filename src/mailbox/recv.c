/* Handling what arrived: every record of a received buffer runs its handler, or is
 * forwarded towards its destination. The transport receives (src/transport). */
#include "mailbox/mailbox_internal.h"

#include "common/fatal.h"
#include "mailbox/record.h"

#include <stdlib.h>

static void corrupt_route(const cr_comm *c, int src, const cr_rec_view *rec)
{
    cr_fatal("corrupt record from rank %d: route block names destination %d and origin %d, but "
             "the job has %d ranks and this is rank %d",
             src, (int)rec->route.dest, (int)rec->route.origin, c->size, c->rank);
}

/* Run the handler of every record in buf[0, len), received from rank src. Records
 * for other ranks are re-buffered towards their next hop before this buffer counts
 * as handled, which keeps the barrier's counts exact (docs/routing.md). */
void cr_dispatch(cr_comm *c, int src, const char *buf, size_t len)
{
    double traced = c->trace ? cr_trace_now(c->trace) : 0;
    uint64_t handled_before = c->stats.msgs_handled;
    c->handler_depth++;
    size_t off = 0;
    cr_rec_view rec;
    cr_rec_status st;
    while ((st = cr_rec_next(buf, len, &off, &rec)) == CR_REC_OK) {
        const cr_handler_entry *h = cr_registry_get(&c->handlers, rec.handler);
        if (!h)
            cr_fatal("received a message for handler id %u from rank %d, but only %u handlers "
                     "are registered here; every rank must register the same handlers in the "
                     "same order",
                     (unsigned)rec.handler, src, c->handlers.count);
        int from = src;
        if (rec.flags & CR_REC_ROUTED) {
            int dest = rec.route.dest;
            from = rec.route.origin;
            if ((unsigned)dest >= (unsigned)c->size || (unsigned)from >= (unsigned)c->size)
                corrupt_route(c, src, &rec);
            if (dest != c->rank) {
                int hop = cr_router_next_hop(c->router, c->rank, dest);
                cr_relay(c, hop, rec.handler, rec.flags & CR_REC_BCAST, &rec.route, rec.payload,
                         rec.len);
                continue;
            }
            if (rec.flags & CR_REC_BCAST)
                cr_bcast_fanout(c, rec.handler, from, rec.payload, rec.len);
        }
        h->fn(c, from, rec.payload, rec.len, h->user);
        c->stats.msgs_handled++;
        c->stats.bytes_handled += rec.len;
    }
    if (st == CR_REC_TRUNCATED)
        cr_fatal("corrupt buffer of %zu bytes from rank %d: a record at offset %zu runs past its "
                 "end",
                 len, src, off);
    c->handler_depth--;
    c->stats.mpi_recvs++;
    c->mpi_handled_total++;
    if (c->trace)
        cr_trace_span(c->trace, "handle", traced, "src", src, "records",
                      (int64_t)(c->stats.msgs_handled - handled_before));
}

static void deliver(void *arg, int src, const char *buf, size_t len)
{
    cr_dispatch(arg, src, buf, len);
}

size_t cr_recv_poll(cr_comm *c, int budget)
{
    return c->tp->ops->poll(c->tp, budget, deliver, c);
}
