/* COURIER_FLOW=deep-held (docs/flow_control.md, "deep-held"). A buffer that arrives
 * while nothing is parked and the rank is not paused is handled where it lies,
 * receive in place; handling stops where the rank pauses, or where a reentrant
 * handler's record leaves work that may be deeper (a buffer this rank sent itself),
 * and only the rest is copied into the park, each run in the queue of its
 * generation. The loop handles parked runs deepest generation first, and only while
 * the send buffers and the sends in flight hold less than the cap; between two
 * records of a reentrant handler, and between two records a route passes on, the
 * rank checks again, so over the cap it adds at most one handler call's output. It
 * never stops receiving: a paused rank's sends complete, its send buffers go out as
 * slots free, and it handles again. */

#include "mailbox/dispatch.h"
#include "mailbox/park.h"

#include <stdint.h>

/* The send buffers and sends in flight hold the cap, so handling waits (rule 3). */
static bool deep_paused(const cr_comm *c)
{
    return c->out.total + c->flow.inflight_bytes >= c->cfg.buffer_cap_bytes;
}

/* In place, go on to the buffer's next run, of generation next_gen? Not once the
 * rank is paused, nor once its own buffers wait with records deeper than that run:
 * the deepest go first. Buffers of its own no deeper do not stop it: a rank sending
 * to itself and to others from user code (generation 0) then handles what arrives
 * where it lies, where stopping parked the rest and every buffer after it until the
 * park drained (a copy of each, in fresh memory: a third of bale's histogram at 2
 * ranks, docs/design-notes-flow.md, "Parking behind one's own buffers"). */
static bool deep_more(const cr_comm *c, unsigned next_gen)
{
    return !deep_paused(c) && (c->self.n == 0 || c->self.deepest <= next_gen);
}

/* Park buf[at, len) from src; `done` records of its first run are handled. */
static void park_rest(cr_comm *c, int src, const char *buf, size_t len, size_t at, size_t done)
{
    size_t bad = 0;
    long runs = cr_park_buffer(&c->park, src, src == c->rank, c->flow.taking_relief, buf + at,
                               len - at, (uint32_t)done, &bad);
    if (runs < 0)
        cr_corrupt_buffer(len, src, at + bad);
    if (runs == 0)
        c->mpi_handled_total++;
    if (c->park.relief_bytes > c->flow.peak_relief_bytes)
        c->flow.peak_relief_bytes = c->park.relief_bytes;
    cr_note_memory(c);
}

static void deep_take(cr_comm *c, int src, const char *buf, size_t len)
{
    size_t at = 0, done = 0;
    /* In place only from the loop (no handler running), so no parked run is being
     * walked while a buffer is parked (park.h). */
    if (c->handler_depth == 0 && cr_park_empty(&c->park) && !deep_paused(c)) {
        double traced = c->trace ? cr_trace_now(c->trace) : 0;
        uint64_t handled_before = c->stats.msgs_handled;
        at = cr_walk_buffer(c, src, buf, len, deep_more, &done);
        if (at == len) {
            cr_buffer_handled(c, src, traced, handled_before);
            return;
        }
    }
    park_rest(c, src, buf, len, at, done);
}

/* Handle up to about `budget` parked records, deepest generation first, while the
 * rank is below the cap. */
static size_t deep_handle(cr_comm *c, size_t budget)
{
    size_t records = 0;
    c->handler_depth++;
    while (records < budget && !deep_paused(c)) {
        /* What this rank sent itself competes by generation with what is parked: its
         * children are deeper than the record that sent them. */
        while (cr_self_handle_one(c, false))
            ;
        if (cr_park_empty(&c->park))
            break;
        cr_run_view run;
        int src;
        uint32_t r = cr_park_next(&c->park, &run, &src);
        double traced = c->trace ? cr_trace_now(c->trace) : 0;
        size_t from = c->park.runs[r].done;
        size_t to = cr_walk_run(c, src, &run, from);
        records += to - from;
        c->park.runs[r].done = (uint32_t)to;
        if (to < run.count || !cr_park_run_done(&c->park, r))
            continue;
        c->mpi_handled_total++; /* the buffer's last run: the buffer counts as handled */
        if (c->trace)
            cr_trace_span(c->trace, "handle", traced, "src", src, "records", (int64_t)(to - from));
    }
    c->handler_depth--;
    c->send_gen = 0;
    return records;
}

/* Parked records handled per poll at most. */
#define DEEP_HANDLE_BUDGET 4096

static size_t deep_poll(cr_comm *c, bool worked)
{
    /* This rank's own buffers are always taken: they move from one part of what it
     * holds to another, and nobody waits for them. Other ranks' buffers are taken
     * while what came from them holds less than the park cap. */
    size_t work = cr_self_poll(c, CR_RECV_BUDGET);
    for (int k = 0; k < CR_RECV_BUDGET && c->park.others_bytes < c->tune.now.park_cap; k++) {
        size_t got = cr_recv_poll(c, 1);
        if (!got)
            break;
        work += got;
    }
    size_t handled = deep_handle(c, DEEP_HANDLE_BUDGET);
    work += handled;
    if (handled)
        c->relief_streak = 0;
    /* The relief: a rank that is paused and refuses buffers may be what its senders
     * wait for while it waits for them (docs/flow_control.md, "deep-held"); after
     * polls without progress it takes one buffer from another rank, which completes
     * that rank's send. The first relief comes after one such poll; each further one
     * while the rank has handled nothing since waits twice as many polls, up to
     * park_relief_polls: a rank whose reliefs do not set it moving again stops
     * filling its park with them. */
    bool refusing = c->park.others_bytes >= c->tune.now.park_cap;
    if (work || worked || !refusing || !deep_paused(c)) {
        c->refused_polls = 0;
        return work;
    }
    unsigned limit = c->cfg.park_relief_polls;
    unsigned need = c->relief_streak < 16 ? 1u << c->relief_streak : limit;
    if (limit && ++c->refused_polls >= (need < limit ? need : limit)) {
        c->flow.taking_relief = true;
        size_t got = cr_recv_poll(c, 1);
        c->flow.taking_relief = false;
        if (got) {
            c->stats.reliefs++;
            c->refused_polls = 0;
            c->relief_streak++;
            work++;
        }
    }
    return work;
}

/* One generation deeper than the record handled, up to CR_REC_GEN_MAX (record.h). */
static uint16_t deep_child_gen(unsigned gen)
{
    return (uint16_t)(gen < CR_REC_GEN_MAX ? gen + 1 : gen);
}

/* After each record of a reentrant handler a walk stops: its children may be deeper
 * than the rest of the run. */
static bool stops_after_reentrant(bool reentrant)
{
    return reentrant;
}

/* No call waits: the loop pauses handling instead (deep_handle). */
static void nothing(cr_comm *c)
{
    (void)c;
}

/* Between two records a route passes on, the rank checks for the pause. */
static bool deep_forwarded(cr_comm *c)
{
    return deep_paused(c);
}

/* The bound of docs/flow_control.md under deep-held, for trees `depth` generations
 * deep: the cap, one handler call's output, the blocks in flight, the park and what
 * the reliefs put there. None past the deepest generation records can tell apart. */
static uint64_t deep_memory_bound(const cr_comm *c, unsigned depth)
{
    if (depth > CR_REC_GEN_MAX)
        return UINT64_MAX;
    uint64_t cap = c->cfg.buffer_cap_bytes, k = cr_rec_pad(c->tune.largest_buffer);
    uint64_t record = cr_flow_record_bound(c);
    uint64_t y = c->flow.peak_call_wire > record ? c->flow.peak_call_wire : record;
    uint64_t b = cap + y + k;
    return cap + y + 2 * k + c->tune.now.park_cap + b + c->flow.peak_relief_bytes +
           ((uint64_t)depth + 1) * (k + y);
}

const cr_flow_ops cr_flow_deep_held = {
    .name = "deep-held",
    .take = deep_take,
    .poll = deep_poll,
    .child_gen = deep_child_gen,
    .stops_after = stops_after_reentrant,
    .paused = deep_paused,
    .reentrant_sent = nothing,
    .forwarded = deep_forwarded,
    .memory_bound = deep_memory_bound,
};
