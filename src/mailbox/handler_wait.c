/* Waiting by handling: the flow control of records sent from handlers and passed on
 * by routes (docs/flow_control.md, "Waiting by handling").
 *
 * User code that finds no room waits in the event loop, which handles what arrives.
 * A handler cannot return to the loop, so a reentrant handler (cr_handler_type) or a
 * forwarding step that finds its rank over the cap does the loop's work here, on its
 * own stack: it completes sends, sends what waits for a slot, and handles one
 * received buffer at a time (one from another rank, so its sender's slot comes free,
 * else the newest of its own) until the rank is below the cap. The handlers it runs may wait in turn, so the waits nest; that is a
 * depth-first order, the order in which a tree of records needs the least memory
 * (the lower bound in docs/flow_control.md). COURIER_NEST_LIMIT waits deep, a call
 * goes on without waiting and counts a cap overrun. No waiting rank stops
 * receiving, so no cycle of waiting ranks can block each other. */
#include "mailbox/mailbox_internal.h"

#include <time.h>

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

/* Send what can be sent now: deferred buffers into free slots, then the largest
 * buffers if the cap is still reached. */
static void send_what_fits(cr_comm *c)
{
    if (c->ndeferred > 0)
        cr_retry_deferred(c);
    if (c->out.total >= c->cfg.buffer_cap_bytes)
        cr_flush_for_cap(c);
}

void cr_wait_by_handling(cr_comm *c)
{
    if (c->nest >= (int)c->cfg.nest_limit) {
        c->stats.cap_overruns++;
        return;
    }
    c->nest++;
    if ((uint64_t)c->nest > c->stats.peak_nesting)
        c->stats.peak_nesting = (uint64_t)c->nest;
    c->stats.handler_waits++;
    double t0 = cr_clock(c);
    uint64_t sent_before = c->stats.bytes_sent, waits_before = c->sent_in_waits;
    unsigned idle = 0;
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
            c->last_activity = c->now;
        } else {
            back_off(c, ++idle);
        }
    }
    /* What the handlers run here sent is theirs, not the waiting handler's output
     * (peak_handler_output); an inner wait's share is already in sent_in_waits. */
    c->sent_in_waits = waits_before + (c->stats.bytes_sent - sent_before);
    /* The outermost wait's time includes the inner ones'; inside user code's own
     * wait for room, that wait counts it. */
    if (c->nest == 1 && !c->throttling) {
        double us = (cr_clock(c) - t0) * 1e6;
        c->stats.throttled_us += us > 0 ? (uint64_t)us : 0;
    }
    c->nest--;
}
