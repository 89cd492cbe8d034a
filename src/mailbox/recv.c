/* Receiving buffers and running their handlers. Two designs (docs/receive.md):
 * probe mode matches one message at a time with MPI_Improbe and receives it with
 * MPI_Mrecv into a reusable buffer; prepost mode keeps a ring of MPI_Irecv of
 * small_max bytes posted and probes only for CR_TAG_LARGE buffers. Either way a
 * rank receives only the tags of its current barrier phase. */
#include "mailbox/mailbox_internal.h"

#include "common/fatal.h"
#include "mailbox/record.h"

#include <stdlib.h>

/* Receives kept posted in prepost mode. */
#define PREPOST_DEPTH 8

static void post(cr_comm *c, int k)
{
    cr_recv *r = &c->recv;
    MPI_Irecv(r->bufs[k], (int)c->small_max, MPI_BYTE, MPI_ANY_SOURCE,
              cr_data_tag(CR_TAG_SMALL, c->parity), c->data, &r->reqs[k]);
}

void cr_recv_init(cr_comm *c)
{
    cr_recv *r = &c->recv;
    *r = (cr_recv){0};
    if (c->cfg.recv_mode != CR_RECV_PREPOST)
        return;
    r->npost = PREPOST_DEPTH;
    r->reqs = cr_xmalloc((size_t)r->npost * sizeof *r->reqs);
    r->bufs = cr_xmalloc((size_t)r->npost * sizeof *r->bufs);
    r->done = cr_xmalloc((size_t)r->npost * sizeof *r->done);
    r->statuses = cr_xmalloc((size_t)r->npost * sizeof *r->statuses);
    for (int k = 0; k < r->npost; k++) {
        r->bufs[k] = cr_xmalloc(c->small_max);
        post(c, k);
    }
}

/* Cancel the pre-posted receives. Only called when no message of their phase can
 * still arrive (a barrier just ended, or the comm is being destroyed). */
static void cancel_posted(cr_comm *c)
{
    cr_recv *r = &c->recv;
    for (int k = 0; k < r->npost; k++) {
        MPI_Status st;
        int cancelled = 0;
        MPI_Cancel(&r->reqs[k]);
        MPI_Wait(&r->reqs[k], &st);
        MPI_Test_cancelled(&st, &cancelled);
        if (!cancelled)
            cr_fatal("internal error: a pre-posted receive matched a message of a finished phase");
    }
}

void cr_recv_next_phase(cr_comm *c)
{
    if (c->recv.npost == 0)
        return;
    cancel_posted(c);
    for (int k = 0; k < c->recv.npost; k++)
        post(c, k);
}

void cr_recv_free(cr_comm *c)
{
    cr_recv *r = &c->recv;
    if (r->npost)
        cancel_posted(c);
    for (int k = 0; k < r->npost; k++)
        free(r->bufs[k]);
    free(r->reqs);
    free(r->bufs);
    free(r->done);
    free(r->statuses);
    free(r->buf);
    *r = (cr_recv){0};
}

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

/* Receive and handle one matched message of any size. */
static void receive_matched(cr_comm *c, MPI_Message *msg, MPI_Status *status)
{
    cr_recv *r = &c->recv;
    int count;
    MPI_Get_count(status, MPI_BYTE, &count);
    if ((size_t)count > r->cap) {
        free(r->buf);
        r->cap = (size_t)count;
        r->buf = cr_xmalloc(r->cap);
    }
    MPI_Mrecv(r->buf, count, MPI_BYTE, msg, MPI_STATUS_IGNORE);
    cr_dispatch(c, status->MPI_SOURCE, r->buf, (size_t)count);
    /* Do not keep a huge buffer around after a one-off large message. */
    if (r->cap > 4 * c->small_max && r->cap > ((size_t)1 << 20)) {
        free(r->buf);
        r->buf = NULL;
        r->cap = 0;
    }
}

static size_t poll_probe(cr_comm *c, int tag, int budget)
{
    size_t got = 0;
    while (budget-- > 0) {
        int flag = 0;
        MPI_Message msg;
        MPI_Status status;
        MPI_Improbe(MPI_ANY_SOURCE, tag, c->data, &flag, &msg, &status);
        if (!flag)
            break;
        receive_matched(c, &msg, &status);
        got++;
    }
    return got;
}

static size_t poll_prepost(cr_comm *c, int budget)
{
    cr_recv *r = &c->recv;
    int ndone = 0;
    MPI_Testsome(r->npost, r->reqs, &ndone, r->done, r->statuses);
    size_t got = 0;
    for (int i = 0; i < ndone && ndone != MPI_UNDEFINED; i++) {
        int k = r->done[i];
        int count;
        MPI_Get_count(&r->statuses[i], MPI_BYTE, &count);
        cr_dispatch(c, r->statuses[i].MPI_SOURCE, r->bufs[k], (size_t)count);
        post(c, k);
        got++;
    }
    int left = budget - (int)got;
    return got + poll_probe(c, cr_data_tag(CR_TAG_LARGE, c->parity), left > 1 ? left : 1);
}

size_t cr_recv_poll(cr_comm *c, int budget)
{
    if (c->cfg.recv_mode == CR_RECV_PREPOST)
        return poll_prepost(c, budget);
    return poll_probe(c, cr_data_tag(CR_TAG_SMALL, c->parity), budget);
}
