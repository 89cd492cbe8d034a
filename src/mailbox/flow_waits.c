/* COURIER_FLOW=waits: every buffer is handled whole as it arrives, and a reentrant
 * handler or a forwarding step that finds its rank over the cap waits by handling,
 * on its own stack (docs/flow_control.md, "The mechanism: waiting by handling").
 *
 * User code that finds no room waits in the event loop, which handles what arrives.
 * A handler cannot return to the loop, so a reentrant handler (cr_handler_type) or a
 * forwarding step over the cap does the loop's work here: it completes sends, sends
 * what waits for a slot, and handles one received buffer at a time (one from another
 * rank, so its sender's slot comes free, else the newest of its own) until the rank
 * is below the cap. The handlers it runs may wait in turn, so the waits nest: on one
 * rank a depth-first order, the order in which a tree of records needs the least
 * memory (the lower bound in the doc; across ranks the nesting does not follow the
 * trees, which the doc explains). At COURIER_NEST_LIMIT waits deep a call goes on
 * without waiting and counts a cap overrun. No waiting rank stops receiving, so no
 * cycle of waiting ranks can block each other. */
#include "mailbox/backoff.h"
#include "mailbox/dispatch.h"

#include <sched.h>
#include <stdint.h>
#include <time.h>

static bool always(const cr_comm *c, unsigned next_gen)
{
    (void)c, (void)next_gen;
    return true;
}

/* Every buffer is handled whole as it arrives. */
static void waits_take(cr_comm *c, int src, const char *buf, size_t len)
{
    double traced = c->trace ? cr_trace_now(c->trace) : 0;
    uint64_t handled_before = c->stats.msgs_handled;
    size_t done;
    cr_walk_buffer(c, src, buf, len, always, &done);
    cr_buffer_handled(c, src, traced, handled_before);
}

static size_t waits_poll(cr_comm *c, bool worked)
{
    (void)worked;
    return cr_self_poll(c, CR_RECV_BUDGET) + cr_recv_poll(c, CR_RECV_BUDGET);
}

/* One received buffer handled: one that arrived from another rank (so its sender's
 * slot comes free), else the newest this rank sent itself. */
static size_t handle_one(cr_comm *c)
{
    if (cr_recv_poll(c, 1) > 0)
        return 1;
    return cr_self_handle_one(c, true) ? 1 : 0;
}

/* The event loop's timer runs the watchdog, and a wait by handling does not return
 * to the loop: once the wait has found nothing to do for half a watchdog interval,
 * it ticks the watchdog itself, as often as the timer would, so a rank stuck in a
 * wait by handling reports like any waiting rank. *next_tick is 0 until the wait
 * first backs off past spinning; the quiet time counts from then. */
static void tick_while_waiting(cr_comm *c, double *next_tick)
{
    double half = c->cfg.watchdog_seconds / 2;
    if (half <= 0 || c->tp->ops->host->yield) /* the simulation has no watchdog */
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

/* A poll found nothing: back off as the event loop does (backoff.h), ticking the
 * watchdog once past spinning; the simulation lets the other virtual ranks run
 * instead. */
static void back_off(cr_comm *c, cr_backoff *b, double *next_tick)
{
    if (c->tp->ops->host->yield) {
        c->tp->ops->host->yield(c->tp);
        return;
    }
    cr_backoff_step step = cr_backoff_next(b, false);
    if (step == CR_BACKOFF_SPIN)
        return;
    tick_while_waiting(c, next_tick);
    if (step == CR_BACKOFF_YIELD) {
        sched_yield();
        return;
    }
    long ns = (long)(b->sleep * 1e9);
    nanosleep(&(struct timespec){.tv_sec = ns / 1000000000L, .tv_nsec = ns % 1000000000L}, NULL);
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

static void wait_by_handling(cr_comm *c)
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
    cr_backoff b = {0};
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
            cr_backoff_reset(&b);
            next_tick = 0;
            c->last_activity = c->now;
        } else {
            back_off(c, &b, &next_tick);
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

/* A reentrant handler over the cap waits here, once its record is appended (and
 * indexed, if it combines): nothing of its call is left to be done. */
static void waits_reentrant_sent(cr_comm *c)
{
    if (cr_over_cap(c))
        wait_by_handling(c);
}

/* Over the cap, a forwarder handles buffers before it passes on the next record.
 * Between two records of the run no user code is interrupted, so this needs no
 * opt-in. */
static bool waits_forwarded(cr_comm *c)
{
    if (c->cfg.nest_limit > 0 && cr_over_cap(c))
        wait_by_handling(c);
    return false; /* a walk is never stopped */
}

/* Records carry no generation: what a handler sends is generation 0. */
static uint16_t waits_child_gen(unsigned gen)
{
    (void)gen;
    return 0;
}

/* A walk is never stopped: waits happen inside the appends. */
static bool never_stops(bool reentrant)
{
    (void)reentrant;
    return false;
}

static bool never_paused(const cr_comm *c)
{
    (void)c;
    return false;
}

/* The bound of docs/flow_control.md under waits: the cap, a record for each wait
 * that may nest, and the blocks of the sends in flight. None once a wait went on
 * over the cap, or a handler that is not reentrant sent records. */
static uint64_t waits_memory_bound(const cr_comm *c, unsigned depth)
{
    (void)depth;
    const cr_config *cfg = &c->cfg;
    if (c->stats.cap_overruns > 0 || c->flow.unheld_output)
        return UINT64_MAX;
    uint64_t k = cr_rec_pad(c->tune.largest_buffer);
    return cfg->buffer_cap_bytes + ((uint64_t)cfg->nest_limit + 1) * cr_flow_record_bound(c) +
           ((uint64_t)cfg->max_inflight + 1) * k;
}

const cr_flow_ops cr_flow_waits = {
    .name = "waits",
    .take = waits_take,
    .poll = waits_poll,
    .child_gen = waits_child_gen,
    .stops_after = never_stops,
    .paused = never_paused,
    .reentrant_sent = waits_reentrant_sent,
    .forwarded = waits_forwarded,
    .memory_bound = waits_memory_bound,
};
