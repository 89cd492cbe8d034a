/* The progress engine: one libev loop per comm.
 *
 * prepare  sends deferred buffers once send slots have come free;
 * check    polls MPI (complete sends, receive and handle) after every iteration;
 * idle     is active only while the caller waits (barrier, back-pressure): it keeps
 *          the loop from blocking and counts empty polls; after a while it yields,
 *          then stops itself and arms the back-off timer, so the loop sleeps in
 *          select() for 20 us, doubling up to 1 ms, until a poll finds work again.
 *          Oversubscribed ranks thus leave the cores to the ranks that have work.
 * timers   flush old buffers, and print a stuck rank's state (watchdog);
 * signal   SIGUSR1 prints the rank's state too (mpirun forwards it to all ranks). */
#include "mailbox/mailbox_internal.h"

#include "common/fatal.h"
#include "mailbox/backoff.h"

#include <sched.h>
#include <signal.h>

/* A signal belongs to one libev loop at a time: the first comm takes SIGUSR1. */
static cr_comm *signal_owner;

/* A transport with a yield operation (the simulation) has no libev loop: the
 * mailbox runs the same prepare and check work itself, on the transport's clock,
 * and yields where the loop would block. */
static bool simulated(const cr_comm *c)
{
    return c->engine.loop == NULL;
}

double cr_now(cr_comm *c)
{
    return simulated(c) ? c->tp->ops->host->now(c->tp) : ev_now(c->engine.loop);
}

double cr_clock(cr_comm *c)
{
    return simulated(c) ? c->tp->ops->host->now(c->tp) : ev_time();
}

static void wake_up(cr_engine *e)
{
    cr_backoff_reset(&e->backoff_state);
    if (e->loop && ev_is_active(&e->backoff)) {
        ev_timer_stop(e->loop, &e->backoff);
        ev_idle_start(e->loop, &e->idle);
    }
}

static void on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
    (void)loop;
    (void)revents;
    cr_comm *c = w->data;
    c->engine.work->prepare(c);
}

/* After every iteration: the mailbox's polling work; a poll that found work stops
 * the back-off. */
static void check_work(cr_comm *c)
{
    c->engine.last_poll_worked = c->engine.work->check(c);
    if (c->engine.last_poll_worked)
        wake_up(&c->engine);
}

static void on_check(struct ev_loop *loop, ev_check *w, int revents)
{
    (void)loop;
    (void)revents;
    check_work(w->data);
}

/* The simulation's loop iteration: the watchers' work, the flush timer on the
 * virtual clock, and (if the caller may wait) the processor to another rank. */
static void simulated_iteration(cr_comm *c, bool may_yield)
{
    c->engine.work->prepare(c);
    check_work(c);
    double now = cr_now(c);
    if (c->cfg.flush_interval > 0 && now - c->engine.sim_timer >= c->cfg.flush_interval) {
        c->engine.sim_timer = now;
        c->engine.work->timer(c, now);
    }
    if (may_yield)
        c->tp->ops->host->yield(c->tp);
}

static void on_idle(struct ev_loop *loop, ev_idle *w, int revents)
{
    (void)revents;
    cr_comm *c = w->data;
    cr_engine *e = &c->engine;
    if (e->last_poll_worked)
        return;
    /* A module's work in flight (a collective) completes within its message time:
     * yield, but do not sleep through it. */
    cr_backoff_step step = cr_backoff_next(&e->backoff_state, c->modules_in_flight);
    if (step == CR_BACKOFF_SPIN)
        return;
    if (step == CR_BACKOFF_YIELD) {
        sched_yield();
        return;
    }
    ev_idle_stop(loop, &e->idle);
    if (c->trace)
        e->sleep_start = cr_trace_now(c->trace);
    ev_timer_set(&e->backoff, e->backoff_state.sleep, 0);
    ev_timer_start(loop, &e->backoff);
}

static void on_backoff(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    cr_comm *c = w->data;
    if (c->trace)
        cr_trace_span(c->trace, "idle sleep", c->engine.sleep_start, "planned_us",
                      (int64_t)(c->engine.backoff_state.sleep * 1e6), NULL, 0);
    /* Keep the sleep level: only a poll that finds work resets it (wake_up). */
    ev_idle_start(loop, &c->engine.idle);
    c->engine.work->idle(c); /* e.g. rank 0 takes watchdog reports while it idles */
}

static void on_flush_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    cr_comm *c = w->data;
    c->engine.work->timer(c, ev_now(loop));
}

static void on_watchdog(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    cr_comm *c = w->data;
    c->engine.work->watchdog(c);
}

static void on_dump_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
    (void)loop;
    (void)revents;
    cr_comm *c = w->data;
    c->engine.work->dump(c, "SIGUSR1");
}

/* Take SIGUSR1 only if nobody else handles it: a program's own handler wins. */
static void start_dump_signal(cr_comm *c)
{
    struct sigaction old;
    if (signal_owner || sigaction(SIGUSR1, NULL, &old) != 0 || old.sa_handler != SIG_DFL)
        return;
    ev_signal_init(&c->engine.dump, on_dump_signal, SIGUSR1);
    c->engine.dump.data = c;
    ev_signal_start(c->engine.loop, &c->engine.dump);
    ev_unref(c->engine.loop); /* the signal watcher alone does not keep the loop alive */
    signal_owner = c;
}

void cr_engine_init(cr_comm *c, const cr_loop_work *work)
{
    cr_engine *e = &c->engine;
    *e = (cr_engine){.work = work};
    if (c->tp->ops->host->yield) {
        c->now = c->last_activity = cr_now(c);
        return;
    }
    /* select() has microsecond timeouts (epoll has milliseconds), which the back-off
     * sleeps need; the loop watches no file descriptors, so select costs nothing. */
    e->loop = ev_loop_new(EVBACKEND_SELECT | EVFLAG_NOENV);
    if (!e->loop)
        cr_fatal("could not create the libev event loop");

    ev_prepare_init(&e->prepare, on_prepare);
    ev_check_init(&e->check, on_check);
    ev_idle_init(&e->idle, on_idle);
    ev_timer_init(&e->backoff, on_backoff, CR_BACKOFF_SLEEP_MIN, 0);
    ev_timer_init(&e->flush_timer, on_flush_timer, c->cfg.flush_interval, c->cfg.flush_interval);
    /* Half the interval: ranks report to rank 0 half an interval before it sums up. */
    ev_timer_init(&e->watchdog, on_watchdog, c->cfg.watchdog_seconds / 2,
                  c->cfg.watchdog_seconds / 2);
    e->prepare.data = e->check.data = e->idle.data = c;
    e->backoff.data = e->flush_timer.data = e->watchdog.data = c;

    ev_prepare_start(e->loop, &e->prepare);
    ev_check_start(e->loop, &e->check);
    if (c->cfg.flush_interval > 0)
        ev_timer_start(e->loop, &e->flush_timer);
    start_dump_signal(c);
    c->now = c->last_activity = ev_now(e->loop);
}

void cr_engine_free(cr_comm *c)
{
    if (signal_owner == c) {
        ev_ref(c->engine.loop);
        ev_signal_stop(c->engine.loop, &c->engine.dump);
        signal(SIGUSR1, SIG_DFL);
        signal_owner = NULL;
    }
    if (c->engine.loop)
        ev_loop_destroy(c->engine.loop);
    c->engine.loop = NULL;
}

/* User code polls every CR_POLL_EVERY records: the mailbox's prepare and check work
 * directly, and a full libev iteration (timers, signals) only once per
 * FULL_ITERATION_EVERY seconds, because an iteration is a select() system call,
 * which would cost more than the records it polls for. */
#define FULL_ITERATION_EVERY 1e-3

static void quick_iteration(cr_comm *c)
{
    cr_engine *e = &c->engine;
    ev_now_update(e->loop);
    if (ev_now(e->loop) - e->last_full >= FULL_ITERATION_EVERY) {
        e->last_full = ev_now(e->loop);
        ev_run(e->loop, EVRUN_NOWAIT);
        return;
    }
    e->work->prepare(c);
    check_work(c);
}

size_t cr_engine_run_nowait(cr_comm *c)
{
    uint64_t before = c->stats.msgs_handled;
    c->in_loop = true;
    if (simulated(c))
        simulated_iteration(c, false);
    else
        quick_iteration(c);
    c->in_loop = false;
    return (size_t)(c->stats.msgs_handled - before);
}

void cr_engine_tick_watchdog(cr_comm *c)
{
    if (!simulated(c))
        ev_now_update(c->engine.loop);
    c->now = cr_now(c);
    c->engine.work->watchdog(c);
}

void cr_engine_note_work(cr_comm *c)
{
    c->last_activity = cr_now(c);
    wake_up(&c->engine);
}

/* The simulation: the same wait, yielding where the loop would block. */
static void simulated_wait(cr_comm *c, bool (*done)(cr_comm *, void *), void *arg)
{
    while (!done(c, arg)) {
        c->in_loop = true;
        simulated_iteration(c, true);
        c->in_loop = false;
    }
}

void cr_wait_until(cr_comm *c, bool (*done)(cr_comm *, void *), void *arg, const char *reason)
{
    if (c->waiting)
        cr_fatal("internal error: nested wait in the progress engine");
    cr_engine *e = &c->engine;
    c->waiting = true;
    c->wait_reason = reason;
    double traced = c->trace ? cr_trace_now(c->trace) : 0;
    if (c->trace)
        cr_trace_wait_begin(c->trace, reason, traced);
    if (simulated(c)) {
        simulated_wait(c, done, arg);
        c->waiting = false;
        if (c->trace)
            cr_trace_wait_end(c->trace);
        return;
    }
    cr_backoff_reset(&e->backoff_state);
    e->last_poll_worked = false;
    ev_idle_start(e->loop, &e->idle);
    if (c->cfg.watchdog_seconds > 0) {
        ev_now_update(e->loop);
        c->last_activity = ev_now(e->loop);
        ev_timer_again(e->loop, &e->watchdog);
    }
    while (!done(c, arg)) {
        c->in_loop = true;
        ev_run(e->loop, EVRUN_ONCE);
        c->in_loop = false;
    }
    ev_idle_stop(e->loop, &e->idle);
    ev_timer_stop(e->loop, &e->backoff);
    ev_timer_stop(e->loop, &e->watchdog);
    c->waiting = false;
    if (c->trace) {
        cr_trace_wait_end(c->trace);
        cr_trace_span(c->trace, reason, traced, "sends_in_flight", cr_inflight(c),
                      "buffered_bytes", (int64_t)c->out.total);
    }
}
