/* Dispatch: the one place a received buffer (or one this rank sent itself) is
 * walked, under either flow policy. Records for this rank are handed to their
 * handler in stretches (one batch each); records for other ranks are passed on
 * towards their next hop (append.h); multicast records are split again
 * (multicast.c). Where a walk stops early, the policy decides (flow_waits.c,
 * flow_deep_held.c): under waits a walk always reaches the run's end (waits happen
 * inside the appends); under deep-held it stops once the rank is paused, and after
 * each record of a reentrant handler, whose children may be deeper than the rest of
 * the run (docs/flow_control.md, "deep-held"). */
#include "mailbox/dispatch.h"

#include "common/fatal.h"
#include "mailbox/append.h"
#include "mailbox/send.h"
#include "mailbox/multicast.h"
#include "mailbox/record.h"

#include <stddef.h>
#include <string.h>

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

/* The generation of what a handler of a record of generation `gen` sends (record.h):
 * the policy's choice. */
static inline uint16_t child_gen(const cr_comm *c, unsigned gen)
{
    return c->fops->child_gen(gen);
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
    bool one_by_one = c->fops->stops_after(h->reentrant);
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
                cr_bcast_fanout(c, run->handler, r.origin, payload, run->len);
            if (one_by_one)
                break;
            continue;
        }
        c->send_gen = child_gen(c, run->gen);
        handle_stretch(c, h, run, start, i - 1);
        c->send_gen = run->gen;
        cr_append(c, r.dest, r.origin, run->handler, run->flags & CR_REC_BCAST, payload,
                  run->len);
        bool paused = cr_after_forward(c);
        start = i;
        if (paused)
            break;
    }
    c->send_gen = child_gen(c, run->gen);
    handle_stretch(c, h, run, start, i);
    return i;
}

/* A multicast record reached this rank (see multicast.c): the destinations other
 * than this rank are split again by next hop (the copies keep their generation),
 * then the record is handled here if this rank is listed. Returns whether a
 * reentrant handler ran (a walk may then stop, as for any reentrant record). */
static bool mcast_arrived(cr_comm *c, int src, const cr_run_view *run, const char *rec,
                          int origin)
{
    cr_mcast_view m = cr_mcast_read(c, src, rec, run->len);
    const cr_handler_entry *uh = handler_of(c, src, m.handler);
    if (m.ndest > (uint32_t)m.mine) {
        c->send_gen = run->gen;
        cr_mcast_pass_on(c, rec, run->len, &m, origin);
        cr_after_forward(c);
    }
    if (!m.mine)
        return false;
    c->send_gen = child_gen(c, run->gen);
    cr_batch b = {.payloads = m.payload, .stride = run->stride, .len = m.len, .count = 1,
                  .src = origin, .origins = NULL};
    handle_batch(c, uh, &b);
    return uh->reentrant;
}

/* Records from `from` on of a run of multicast records: passed on where they are
 * for another rank, else split and handled. Returns how far it got. */
static size_t walk_mcast(cr_comm *c, int src, const cr_run_view *run, size_t from)
{
    bool routed = run->flags & CR_REC_ROUTED;
    size_t i = from;
    while (i < run->count) {
        const char *rec = run->first + i * run->stride;
        cr_rec_route r = {.dest = c->rank, .origin = src};
        if (routed)
            r = cr_run_route(run, i);
        if ((unsigned)r.dest >= (unsigned)c->size || (unsigned)r.origin >= (unsigned)c->size)
            corrupt_route(c, src, r);
        i++;
        bool stop;
        if (r.dest != c->rank) {
            c->send_gen = run->gen;
            cr_append(c, r.dest, r.origin, CR_MCAST_HANDLER, 0, rec, run->len);
            stop = cr_after_forward(c);
        } else {
            bool reentrant = mcast_arrived(c, src, run, rec, r.origin);
            stop = c->fops->stops_after(reentrant) || c->fops->paused(c);
        }
        if (stop)
            break;
    }
    return i;
}

size_t cr_walk_run(cr_comm *c, int src, const cr_run_view *run, size_t from)
{
    if (run->gen > c->stats.deepest_generation)
        c->stats.deepest_generation = run->gen;
    if (run->handler == CR_MCAST_HANDLER)
        return walk_mcast(c, src, run, from);
    const cr_handler_entry *h = handler_of(c, src, run->handler);
    if (run->flags & CR_REC_ROUTED)
        return walk_routed(c, src, h, run, from);
    size_t to = c->fops->stops_after(h->reentrant) ? from + 1 : run->count;
    handle_range(c, h, run, src, from, to);
    return to;
}

void cr_corrupt_buffer(size_t len, int src, size_t off)
{
    cr_fatal("corrupt buffer of %zu bytes from rank %d: a record at offset %zu runs past its end",
             len, src, off);
}

/* See dispatch.h. */
size_t cr_walk_buffer(cr_comm *c, int src, const char *buf, size_t len,
                      bool (*more)(const cr_comm *c, unsigned next_gen), size_t *done)
{
    uint16_t outer_gen = c->send_gen;
    c->handler_depth++;
    size_t off = 0, at = 0;
    *done = 0;
    cr_run_view run;
    cr_rec_status st;
    while ((st = cr_run_next(buf, len, &off, &run)) == CR_REC_OK) {
        if (at > 0 && !more(c, run.gen))
            break; /* this run and the rest are not handled here */
        size_t to = cr_walk_run(c, src, &run, 0);
        if (to < run.count) {
            *done = to;
            break;
        }
        at = off;
    }
    if (st == CR_REC_TRUNCATED)
        cr_corrupt_buffer(len, src, off);
    if (st == CR_REC_END)
        at = len;
    c->send_gen = outer_gen;
    c->handler_depth--;
    return at;
}

/* A buffer handled to its end counts for the barrier, and as one "handle" span of
 * the trace (a buffer parked in part counts when its last parked run is handled). */
void cr_buffer_handled(cr_comm *c, int src, double traced, uint64_t handled_before)
{
    c->mpi_handled_total++;
    if (c->trace)
        cr_trace_span(c->trace, "handle", traced, "src", src, "records",
                      (int64_t)(c->stats.msgs_handled - handled_before));
}

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
    return c->tp->data->ops->poll(c->tp->data, budget, deliver, c);
}
