/* What the event loop runs for a comm: the mailbox's side of the loop. The engine
 * (progress.c) knows nothing of buffers, receives or modules; it calls this table
 * (cr_loop_work) from its watchers, the way libuv's loop calls its handles'
 * callbacks, so the layers below the mailbox's policy stay free of it. */
#include "mailbox/mailbox_internal.h"

#include "mailbox/module.h"

size_t cr_poll(cr_comm *c)
{
    c->now = cr_now(c);
    size_t work = (size_t)cr_complete_sends(c);
    if (c->handler_depth == 0)
        work += c->fops->poll(c, work > 0);
    if (work)
        c->last_activity = c->now;
    return work;
}

/* Before the loop would block: send deferred buffers, retry a cap flush. */
static void prepare(cr_comm *c)
{
    if (c->flow.ndeferred > 0)
        cr_retry_deferred(c);
    if (c->flow.cap_blocked == false && c->out.total >= c->cfg.buffer_cap_bytes)
        cr_flush_for_cap(c);
}

/* After every iteration: complete sends, receive and handle, advance the modules;
 * when nothing arrived, send on what this rank holds for others. */
static bool check(cr_comm *c)
{
    bool worked = cr_poll(c) > 0;
    if (c->nmodules > 0 && cr_modules_poll(c, &c->modules_in_flight) > 0)
        worked = true;
    if (!worked && c->relay_pending)
        cr_flush_relays(c);
    return worked;
}

static void timer(cr_comm *c, double now)
{
    if (c->out.nactive > 0)
        cr_flush_aged(c, now);
}

static void dump(cr_comm *c, const char *why)
{
    cr_print_state(c, stderr, why);
}

const cr_loop_work cr_mailbox_loop_work = {
    .prepare = prepare,
    .check = check,
    .timer = timer,
    .idle = cr_watchdog_collect,
    .watchdog = cr_watchdog_tick,
    .dump = dump,
};
