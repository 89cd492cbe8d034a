/* When and how buffers leave: by size, by the total cap (largest first), by age
 * (timer), at barriers, and later when a deferred flush finds a free slot. */
#include "mailbox/mailbox_internal.h"

#include "common/fatal.h"

#include <stdlib.h>

static void give_back(void *arg, char *data, size_t cap)
{
    cr_outbufs_recycle(arg, data, cap);
}

int cr_complete_sends(cr_comm *c)
{
    int done = c->tp->ops->complete(c->tp, give_back, &c->out);
    if (done > 0)
        c->cap_blocked = false; /* a cap flush may find a slot now */
    return done;
}

static bool slot_free(cr_comm *c, void *arg)
{
    (void)arg;
    return cr_slot_free(c);
}

static void count_flush(cr_comm *c, cr_flush_cause cause)
{
    switch (cause) {
    case CR_FLUSH_SIZE: c->stats.flushes_size++; break;
    case CR_FLUSH_CAP: c->stats.flushes_cap++; break;
    case CR_FLUSH_TIMER: c->stats.flushes_timer++; break;
    case CR_FLUSH_BARRIER: c->stats.flushes_barrier++; break;
    case CR_FLUSH_RELAY: c->stats.flushes_relay++; break;
    }
}

static void count_partner(cr_comm *c, int dest, size_t bytes)
{
    bool off_node = c->layout->node_of[dest] != c->layout->node_of[c->rank];
    if (!c->sent_to[dest]) {
        c->sent_to[dest] = 1;
        c->stats.partners++;
        c->stats.partners_off_node += off_node;
    }
    if (off_node) {
        c->stats.mpi_sends_off_node++;
        c->stats.mpi_bytes_off_node += bytes;
    } else {
        c->stats.mpi_bytes_on_node += bytes;
    }
}

static void defer(cr_comm *c, int dest, cr_flush_cause cause)
{
    cr_outbuf *b = &c->out.bufs[dest];
    if (!b->deferred) {
        b->deferred = (uint8_t)cause;
        c->ndeferred++;
        c->stats.deferred_flushes++;
    }
}

/* Send dest's buffer. Without a free slot, either wait for one (when may_wait and
 * the caller is user code) or mark the buffer deferred. Returns false if deferred. */
bool cr_flush_dest(cr_comm *c, int dest, cr_flush_cause cause, bool may_wait)
{
    cr_outbuf *b = &c->out.bufs[dest];
    if (b->len == 0)
        return true;
    if (!cr_slot_free(c))
        cr_complete_sends(c);
    if (!cr_slot_free(c)) {
        if (!(may_wait && cr_can_wait(c))) {
            defer(c, dest, cause);
            return false;
        }
        c->stats.slot_waits++;
        cr_wait_until(c, slot_free, NULL, "a free send slot");
        /* Handlers ran while we waited; they may have sent this buffer already. */
        if (b->len == 0)
            return true;
    }

    if (b->deferred)
        c->ndeferred--;
    cr_block blk = cr_outbufs_take(&c->out, dest);
    c->tp->ops->send(c->tp, dest, blk.data, blk.len, blk.cap);

    c->mpi_sent_total++;
    c->stats.mpi_sends++;
    c->stats.mpi_bytes_sent += blk.len;
    count_partner(c, dest, blk.len);
    uint64_t inflight = (uint64_t)cr_inflight(c);
    if (inflight > c->stats.peak_inflight)
        c->stats.peak_inflight = inflight;
    count_flush(c, cause);
    if (c->trace) {
        static const char *const names[] = {"send", "send (size)", "send (cap)", "send (timer)",
                                            "send (barrier)", "send (relay)"};
        cr_trace_instant(c->trace, names[cause <= CR_FLUSH_RELAY ? cause : 0], "dest", dest,
                         "bytes", (int64_t)blk.len, "in_flight", cr_inflight(c));
    }
    if (c->cfg.verbosity >= 3)
        fprintf(stderr, "courier: rank %d: flush %zu bytes to %d (cause %d)\n", c->rank, blk.len,
                dest, (int)cause);
    return true;
}

/* Send as many buffers as there are free slots. True when none is left. */
bool cr_flush_all_nowait(cr_comm *c, cr_flush_cause cause)
{
    while (c->out.nactive > 0) {
        int dest = c->out.active[c->out.nactive - 1];
        if (!cr_flush_dest(c, dest, cause, false))
            return false;
    }
    return true;
}

static int by_len_desc(const void *a, const void *b, void *arg)
{
    const cr_outbufs *o = arg;
    size_t la = o->bufs[*(const int *)a].len, lb = o->bufs[*(const int *)b].len;
    return la < lb ? 1 : la > lb ? -1 : 0;
}

/* All buffers together reached the cap: send the largest until a quarter of the cap
 * is free again, so a rank with many destinations sends few, full buffers. */
void cr_flush_for_cap(cr_comm *c)
{
    if (c->in_cap_flush)
        return;
    c->in_cap_flush = true;
    size_t target = c->cfg.buffer_cap_bytes - c->cfg.buffer_cap_bytes / 4;
    int n = c->out.nactive;
    for (int i = 0; i < n; i++)
        c->scratch[i] = c->out.active[i];
    qsort_r(c->scratch, (size_t)n, sizeof *c->scratch, by_len_desc, &c->out);
    for (int i = 0; i < n && c->out.total > target; i++) {
        if (!cr_flush_dest(c, c->scratch[i], CR_FLUSH_CAP, true)) {
            c->cap_blocked = true;
            break;
        }
    }
    c->in_cap_flush = false;
}

/* Timer: send every buffer whose oldest record has waited a full interval. */
void cr_flush_aged(cr_comm *c, double now)
{
    double limit = now - c->cfg.flush_interval;
    int i = 0;
    while (i < c->out.nactive) {
        int dest = c->out.active[i];
        cr_outbuf *b = &c->out.bufs[dest];
        /* A successful flush moves the last active buffer into slot i. */
        if (b->since <= limit && !b->deferred && cr_flush_dest(c, dest, CR_FLUSH_TIMER, false))
            continue;
        i++;
    }
}

/* A forwarder holds records it did not create and that no later cr_flush or
 * barrier on this rank is promised to cover: once incoming traffic pauses, send
 * them on, so a rank waiting for replies without a barrier is not stranded. */
void cr_flush_relays(cr_comm *c)
{
    c->relay_pending = false;
    int i = 0;
    while (i < c->out.nactive) {
        int dest = c->out.active[i];
        cr_outbuf *b = &c->out.bufs[dest];
        if (b->relay && !b->deferred && cr_flush_dest(c, dest, CR_FLUSH_RELAY, false))
            continue;
        if (b->relay)
            c->relay_pending = true; /* no slot now: try again on the next quiet poll */
        i++;
    }
}

void cr_retry_deferred(cr_comm *c)
{
    int i = 0;
    while (c->ndeferred > 0 && cr_slot_free(c) && i < c->out.nactive) {
        int dest = c->out.active[i];
        cr_flush_cause cause = (cr_flush_cause)c->out.bufs[dest].deferred;
        if (cause && cr_flush_dest(c, dest, cause, false))
            continue;
        i++;
    }
}

void cr_flush(cr_comm *c)
{
    if (!cr_can_wait(c)) {
        cr_flush_all_nowait(c, CR_FLUSH_BARRIER);
        return;
    }
    while (c->out.nactive > 0)
        cr_flush_dest(c, c->out.active[c->out.nactive - 1], CR_FLUSH_BARRIER, true);
}
