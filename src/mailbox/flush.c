/* When and how buffers leave: by size, by the total cap (largest first), by age
 * (timer), at barriers, and later when a deferred flush finds a free slot. */
#include "mailbox/mailbox_internal.h"

#include "common/fatal.h"

#include <stdlib.h>

static void give_back(void *arg, char *data, size_t cap)
{
    cr_comm *c = arg;
    c->flow.inflight_bytes -= cap;
    cr_update_room(c);
    cr_outbufs_recycle(&c->out, data, cap);
}

int cr_complete_sends(cr_comm *c)
{
    int done = c->tp->data->ops->complete(c->tp->data, give_back, c);
    if (done > 0)
        c->flow.cap_blocked = false; /* a cap flush may find a slot now */
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
    cr_outbuf *b = cr_outbufs_at(&c->out, dest);
    if (!b->sent) {
        b->sent = 1;
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
    cr_outbuf *b = cr_outbufs_at(&c->out, dest);
    if (!b->deferred) {
        b->deferred = (uint8_t)cause;
        c->flow.ndeferred++;
        c->stats.deferred_flushes++;
    }
}

/* The deepest generation of the runs of a block (checked when it is walked: here a
 * run that does not parse ends the look). */
static unsigned block_deepest(const cr_block *blk)
{
    unsigned deepest = 0;
    size_t off = 0;
    cr_run_view run;
    while (cr_run_next(blk->data, blk->len, &off, &run) == CR_REC_OK)
        deepest = run.gen > deepest ? run.gen : deepest;
    return deepest;
}

static void selfq_push(cr_comm *c, cr_block blk)
{
    cr_selfq *q = &c->self;
    unsigned deepest = block_deepest(&blk);
    q->deepest = deepest > q->deepest ? deepest : q->deepest;
    if (q->n == q->cap) {
        int cap = q->cap ? 2 * q->cap : 8;
        cr_block *b = cr_xmalloc((size_t)cap * sizeof *b);
        for (int i = 0; i < q->n; i++)
            b[i] = q->blocks[(q->head + i) % q->cap];
        free(q->blocks);
        q->blocks = b;
        q->head = 0;
        q->cap = cap;
    }
    q->blocks[(q->head + q->n++) % q->cap] = blk;
}

bool cr_selfq_pop(cr_comm *c, cr_block *out)
{
    cr_selfq *q = &c->self;
    if (q->n == 0)
        return false;
    *out = q->blocks[q->head];
    q->head = (q->head + 1) % q->cap;
    if (--q->n == 0)
        q->deepest = 0;
    return true;
}

bool cr_selfq_pop_newest(cr_comm *c, cr_block *out)
{
    cr_selfq *q = &c->self;
    if (q->n == 0)
        return false;
    *out = q->blocks[(q->head + --q->n) % q->cap];
    if (q->n == 0)
        q->deepest = 0;
    return true;
}

void cr_selfq_free(cr_comm *c)
{
    cr_block b;
    while (cr_selfq_pop(c, &b))
        free(b.data);
    free(c->self.blocks);
    c->self = (cr_selfq){0};
}

void cr_note_memory(cr_comm *c)
{
    cr_stats *s = &c->stats;
    size_t held = cr_held_bytes(c);
    if (held > s->peak_memory_bytes)
        s->peak_memory_bytes = held;
    if (c->flow.inflight_bytes > s->peak_inflight_bytes)
        s->peak_inflight_bytes = c->flow.inflight_bytes;
    if (c->flow.self_bytes > s->peak_self_bytes)
        s->peak_self_bytes = c->flow.self_bytes;
    if (c->park.bytes > s->peak_parked_bytes)
        s->peak_parked_bytes = c->park.bytes;
}

/* Wait in user code until done(c, arg), counting the wait as throttled time. */
static void throttled_wait(cr_comm *c, bool (*done)(cr_comm *, void *), const char *reason)
{
    c->stats.slot_waits++;
    double t0 = cr_clock(c);
    c->flow.throttling = true;
    cr_wait_until(c, done, NULL, reason);
    c->flow.throttling = false;
    double us = (cr_clock(c) - t0) * 1e6;
    c->stats.throttled_us += us > 0 ? (uint64_t)us : 0;
}

static bool self_queue_short(cr_comm *c, void *arg)
{
    (void)arg;
    return c->self.n < (int)c->cfg.max_inflight;
}

static bool below_cap(cr_comm *c, void *arg)
{
    (void)arg;
    if (c->flow.ndeferred > 0)
        cr_retry_deferred(c);
    return !cr_over_cap(c);
}

void cr_wait_below_cap(cr_comm *c)
{
    throttled_wait(c, below_cap, "memory below COURIER_BUFFER_CAP");
}

/* A buffer to this rank itself: queued for its own event loop, which handles it
 * outside any handler, instead of an MPI send to itself. It counts as a data message
 * sent (and, once handled, handled), so the barrier covers it as any other. User
 * code that has queued as many as it may have sends in flight waits, which handles
 * some, so the queue is bounded like the sends. */
static void hand_to_self(cr_comm *c, bool may_wait)
{
    if (may_wait && cr_can_wait(c) && !self_queue_short(c, NULL)) {
        throttled_wait(c, self_queue_short, "handling the records sent to this rank");
        if (cr_outbufs_peek(&c->out, c->rank)->len == 0)
            return;
    }
    cr_outbuf *b = cr_outbufs_at(&c->out, c->rank);
    if (b->deferred)
        c->flow.ndeferred--;
    cr_block blk = cr_outbufs_take(&c->out, c->rank);
    selfq_push(c, blk);
    c->flow.self_bytes += blk.cap;
    cr_update_room(c);
    cr_note_memory(c);
    c->mpi_sent_total++;
    c->stats.local_buffers++;
    if (c->trace)
        cr_trace_instant(c->trace, "send (local)", "dest", c->rank, "bytes", (int64_t)blk.len,
                         "queued", c->self.n);
}

/* Send dest's buffer. Without a free slot, either wait for one (when may_wait and
 * the caller is user code) or mark the buffer deferred. Returns false if deferred. */
bool cr_flush_dest(cr_comm *c, int dest, cr_flush_cause cause, bool may_wait)
{
    cr_outbuf *b = cr_outbufs_at(&c->out, dest);
    if (b->len == 0)
        return true;
    if (dest == c->rank) {
        hand_to_self(c, may_wait);
        count_flush(c, cause);
        return true;
    }
    if (!cr_slot_free(c))
        cr_complete_sends(c);
    if (!cr_slot_free(c)) {
        if (!(may_wait && cr_can_wait(c))) {
            defer(c, dest, cause);
            return false;
        }
        throttled_wait(c, slot_free, "a free send slot");
        /* Handlers ran while we waited; they may have sent this buffer already. */
        if (b->len == 0)
            return true;
    }

    if (b->deferred)
        c->flow.ndeferred--;
    cr_block blk = cr_outbufs_take(&c->out, dest);
    if (c->tp->data->ops->send(c->tp->data, dest, blk.data, blk.len, blk.cap)) {
        /* Copied on its way (a ring in shared memory): the block is free again, and
         * the next buffer filled is this one, still in the core's cache. */
        cr_outbufs_recycle(&c->out, blk.data, blk.cap);
    } else {
        c->flow.inflight_bytes += blk.cap;
    }
    cr_update_room(c);
    cr_note_memory(c);

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
    size_t la = cr_outbufs_peek(o, *(const int *)a)->len, lb = cr_outbufs_peek(o, *(const int *)b)->len;
    return la < lb ? 1 : la > lb ? -1 : 0;
}

/* All buffers together reached the cap: send the largest until a quarter of the cap
 * is free again, so a rank with many destinations sends few, full buffers. */
void cr_flush_for_cap(cr_comm *c)
{
    if (c->flow.in_cap_flush)
        return;
    c->flow.in_cap_flush = true;
    size_t target = c->cfg.buffer_cap_bytes - c->cfg.buffer_cap_bytes / 4;
    int n = c->out.nactive;
    if (n > c->flow.scratch_cap) {
        c->flow.scratch_cap = n > 2 * c->flow.scratch_cap ? n : 2 * c->flow.scratch_cap;
        free(c->flow.scratch);
        c->flow.scratch = cr_xmalloc((size_t)c->flow.scratch_cap * sizeof *c->flow.scratch);
    }
    for (int i = 0; i < n; i++)
        c->flow.scratch[i] = c->out.active[i];
    qsort_r(c->flow.scratch, (size_t)n, sizeof *c->flow.scratch, by_len_desc, &c->out);
    for (int i = 0; i < n && c->out.total > target; i++) {
        if (!cr_flush_dest(c, c->flow.scratch[i], CR_FLUSH_CAP, true)) {
            c->flow.cap_blocked = true;
            break;
        }
    }
    c->flow.in_cap_flush = false;
}

/* Timer: send every buffer whose oldest record has waited a full interval. */
void cr_flush_aged(cr_comm *c, double now)
{
    double limit = now - c->cfg.flush_interval;
    int i = 0;
    while (i < c->out.nactive) {
        int dest = c->out.active[i];
        cr_outbuf *b = cr_outbufs_at(&c->out, dest);
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
        cr_outbuf *b = cr_outbufs_at(&c->out, dest);
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
    while (c->flow.ndeferred > 0 && cr_slot_free(c) && i < c->out.nactive) {
        int dest = c->out.active[i];
        cr_flush_cause cause = (cr_flush_cause)cr_outbufs_peek(&c->out, dest)->deferred;
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
