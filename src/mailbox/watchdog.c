/* The watchdog: when a wait makes no progress, one line from rank 0 that says where
 * every rank is, instead of a line from every rank.
 *
 * The watchdog timer ticks every half interval while a rank waits. A rank other
 * than 0 whose wait has been quiet for half an interval sends rank 0 a small report
 * (which wait, which barrier, which wave) with a synchronous send on the control
 * communicator; rank 0 collects reports while it waits and, once its own wait has
 * been quiet for a whole interval, prints one summary naming the ranks that have not
 * joined its barrier. The reports travel through the transport (report_send,
 * report_take); the simulated transport has none, and no watchdog. A rank that stays outside Courier (computing, or stuck) sends
 * no report, which is exactly what names it.
 *
 * When rank 0 itself is the one missing, nobody collects: a rank whose previous
 * report is still unmatched a whole interval later prints its own state line, so a
 * hang is never silent. cr_comm_destroy receives the reports still in flight. */
#include "mailbox/mailbox_internal.h"

#include "common/fatal.h"

#include <stdlib.h>
#include <string.h>

/* What a rank tells rank 0. Sent as bytes between processes of one program. */
typedef struct cr_watch_report {
    int32_t rank;
    int32_t in_barrier; /* 1: waiting in cr_barrier; 0: in another wait */
    int32_t joined;
    int32_t pad;
    uint64_t barrier;   /* cr_barrier calls entered so far (this one included) */
    uint64_t wave;
    char reason[32];    /* what the wait is for */
    uint64_t held;      /* bytes the mailbox holds now: send buffers, in flight, to itself */
    uint64_t peak;      /* cr_stats.peak_memory_bytes */
    uint64_t throttled_us;
    int32_t last_handler; /* id + 1 of the handler it ran last; 0 = none */
    int32_t pad2;
} cr_watch_report;

typedef struct cr_watchdog {
    double sent_at;         /* when this rank's last report went out */
    /* rank 0 only */
    cr_watch_report *last;  /* [P] the latest report from each rank */
    double *at;             /* [P] when it arrived (loop time), or -1 */
    uint64_t received;
    double summary_at;      /* when the last summary was printed */
} cr_watchdog;

static void fill_report(cr_comm *c, cr_watch_report *r)
{
    memset(r, 0, sizeof *r);
    r->rank = c->rank;
    r->in_barrier = c->waiting && c->wait_reason && !strcmp(c->wait_reason, "cr_barrier");
    r->joined = c->term.joined;
    r->barrier = c->barriers_entered;
    r->wave = c->term.wave;
    r->held = cr_held_bytes(c);
    r->peak = cr_peak_memory(c);
    r->throttled_us = c->stats.throttled_us;
    r->last_handler = c->last_handler;
    snprintf(r->reason, sizeof r->reason, "%s", c->waiting ? c->wait_reason : "user code");
}

void cr_print_state(cr_comm *c, FILE *out, const char *why)
{
    const cr_stats *s = &c->stats;
    fprintf(out,
            "courier state: rank %d: %s in %s: wave %llu (%s), sends in flight %d, "
            "buffered %zu bytes in %d buffers (%d deferred), %d buffers to itself unhandled, "
            "data messages sent %llu, handled %llu; memory: %zu bytes in flight, %zu to itself, "
            "peak %llu (send buffers %llu), most one handler sent %llu, throttled %.3f s, "
            "handler waits %d deep now (peak %llu), cap overruns %llu\n",
            c->rank, why, c->waiting ? c->wait_reason : "user code",
            (unsigned long long)c->term.wave, c->term.joined ? "joined" : "not joined",
            cr_inflight(c), c->out.total, c->out.nactive, c->flow.ndeferred, c->self.n,
            (unsigned long long)c->mpi_sent_total, (unsigned long long)c->mpi_handled_total,
            c->flow.inflight_bytes, c->flow.self_bytes, (unsigned long long)cr_peak_memory(c),
            (unsigned long long)cr_outbufs_peak(&c->out),
            (unsigned long long)s->peak_handler_output, (double)s->throttled_us * 1e-6, c->flow.nest,
            (unsigned long long)s->peak_nesting, (unsigned long long)s->cap_overruns);
    fflush(out);
}

void cr_watchdog_init(cr_comm *c)
{
    if (!c->tp->ops->host->report_send) /* the simulation has no clock to watch */
        return;
    c->watch = cr_xcalloc(1, sizeof *c->watch);
}

/* Rank 0: take every report that has arrived. */
static void collect(cr_comm *c)
{
    cr_watchdog *w = c->watch;
    cr_watch_report r;
    while (c->tp->ops->host->report_take(c->tp, &r, sizeof r)) {
        w->received++;
        if (!w->last) {
            w->last = cr_xcalloc((size_t)c->size, sizeof *w->last);
            w->at = cr_xmalloc((size_t)c->size * sizeof *w->at);
            for (int i = 0; i < c->size; i++)
                w->at[i] = -1;
        }
        if (r.rank >= 0 && r.rank < c->size) {
            w->last[r.rank] = r;
            w->at[r.rank] = cr_now(c);
        }
    }
}

void cr_watchdog_collect(cr_comm *c)
{
    if (c->rank == 0 && c->watch)
        collect(c);
}

/* "2, 5-7, 9", at most about `room` characters, then "... (N more)". */
static void format_ranks(const int *ranks, int n, char *out, size_t room)
{
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && ranks[j + 1] == ranks[j] + 1)
            j++;
        if (o + 40 > room) {
            snprintf(out + o, room - o, "... (%d more)", n - i);
            return;
        }
        if (j > i)
            o += (size_t)snprintf(out + o, room - o, "%s%d-%d", i ? ", " : "", ranks[i], ranks[j]);
        else
            o += (size_t)snprintf(out + o, room - o, "%s%d", i ? ", " : "", ranks[i]);
        i = j + 1;
    }
}

/* "handler 3 (name)" for an id + 1 as the reports carry it. */
static void format_handler(const cr_comm *c, int32_t id1, char *out, size_t room)
{
    const cr_handler_entry *h = id1 > 0 ? cr_registry_get(&c->handlers, (uint32_t)(id1 - 1)) : NULL;
    if (id1 <= 0)
        snprintf(out, room, "none");
    else if (h && h->name)
        snprintf(out, room, "handler %d (%s)", id1 - 1, h->name);
    else
        snprintf(out, room, "handler %d", id1 - 1);
}

/* COURIER_WATCHDOG_ABORT on rank 0: one line naming the ranks that are not in the
 * barrier (waiting elsewhere, or silent) and the last handler every rank ran, then
 * the job ends. */
static noreturn void abort_hung_job(cr_comm *c, double quiet, const char *where,
                                    const char *not_in)
{
    cr_watchdog *w = c->watch;
    char last[600];
    size_t o = 0;
    for (int r = 0; r < c->size && o + 80 < sizeof last; r++) {
        char h[96];
        bool known = r == 0 || (w->at && w->at[r] >= 0);
        if (known)
            format_handler(c, r == 0 ? c->last_handler : w->last[r].last_handler, h, sizeof h);
        o += (size_t)snprintf(last + o, sizeof last - o, "%s%d: %s", r ? ", " : "", r,
                              known ? h : "no report");
        if (r + 1 < c->size && o + 80 >= sizeof last)
            snprintf(last + o, sizeof last - o, ", ... (%d more)", c->size - r - 1);
    }
    cr_fatal("watchdog: no progress for %.1f s in %s (COURIER_WATCHDOG_ABORT=%u intervals of "
             "%g s): ending the job; not in it: %s; the last handler each rank ran: %s",
             quiet, where, c->cfg.watchdog_abort, c->cfg.watchdog_seconds, not_in, last);
}

/* Rank 0's summary: who waits in its barrier, who waits elsewhere, who sent nothing. */
static void print_summary(cr_comm *c, double quiet)
{
    cr_watchdog *w = c->watch;
    cr_watch_report me;
    fill_report(c, &me);
    double fresh = 1.5 * c->cfg.watchdog_seconds, now = cr_now(c);
    int *with = cr_xmalloc((size_t)c->size * sizeof *with);
    int *elsewhere = cr_xmalloc((size_t)c->size * sizeof *elsewhere);
    int *silent = cr_xmalloc((size_t)c->size * sizeof *silent);
    int nwith = 0, nelse = 0, nsilent = 0;
    const cr_watch_report *fullest = &me; /* the rank holding the most memory */
    for (int r = 0; r < c->size; r++) {
        const cr_watch_report *x = r == 0 ? &me : w->last ? &w->last[r] : NULL;
        bool known = r == 0 || (w->at && w->at[r] >= 0 && now - w->at[r] <= fresh);
        if (known && x->held > fullest->held)
            fullest = x;
        if (!known)
            silent[nsilent++] = r;
        else if (x->in_barrier == me.in_barrier && x->barrier == me.barrier &&
                 !strcmp(x->reason, me.reason))
            with[nwith++] = r;
        else
            elsewhere[nelse++] = r;
    }
    char where[96], list[3][400];
    if (me.in_barrier)
        snprintf(where, sizeof where, "cr_barrier #%llu", (unsigned long long)me.barrier);
    else
        snprintf(where, sizeof where, "a wait for %s", me.reason);
    format_ranks(with, nwith, list[0], sizeof list[0]);
    format_ranks(elsewhere, nelse, list[1], sizeof list[1]);
    format_ranks(silent, nsilent, list[2], sizeof list[2]);
    fprintf(stderr, "courier watchdog: no progress for %.1f s in %s: %d of %d ranks are waiting "
            "in it (%s)", quiet, where, nwith, c->size, list[0]);
    if (nelse)
        fprintf(stderr, "; in other waits: %s%s", nelse == 1 ? "rank " : "ranks ", list[1]);
    if (nsilent)
        fprintf(stderr, "; not joined: %s%s (no report: outside Courier, or stuck)",
                nsilent == 1 ? "rank " : "ranks ", list[2]);
    fprintf(stderr, "; most memory held: rank %d, %llu bytes (its peak %llu, throttled %.3f s)",
            fullest->rank, (unsigned long long)fullest->held, (unsigned long long)fullest->peak,
            (double)fullest->throttled_us * 1e-6);
    fputc('\n', stderr);
    fflush(stderr);
    if (c->cfg.watchdog_abort > 0 && quiet >= c->cfg.watchdog_abort * c->cfg.watchdog_seconds) {
        char not_in[900];
        snprintf(not_in, sizeof not_in, "%s%s%s%s%s%s", nelse ? "in other waits: " : "",
                 nelse ? (nelse == 1 ? "rank " : "ranks ") : "", nelse ? list[1] : "",
                 nelse && nsilent ? "; no report (outside Courier, or stuck): "
                 : nsilent ? "no report (outside Courier, or stuck): " : "",
                 nsilent ? (nsilent == 1 ? "rank " : "ranks ") : "",
                 nsilent ? list[2] : nelse ? "" : "none (every rank waits in it)");
        abort_hung_job(c, quiet, where, not_in);
    }
    free(with);
    free(elsewhere);
    free(silent);
}

/* Ranks other than 0: report, or speak for themselves if rank 0 does not collect
 * (the transport refuses a new report while the previous one is unmatched). */
static void report(cr_comm *c, double quiet)
{
    cr_watchdog *w = c->watch;
    double now = cr_now(c);
    cr_watch_report r;
    fill_report(c, &r);
    cr_trace_flush(c->trace); /* a hung job may be killed next: keep the timeline */
    if (c->tp->ops->host->report_send(c->tp, &r, sizeof r)) {
        w->sent_at = now;
        return;
    }
    if (now - w->sent_at >= c->cfg.watchdog_seconds) {
        char why[128];
        snprintf(why, sizeof why, "no progress for %.1f s, and rank 0 collects no "
                 "reports (it is outside Courier, so no summary),", quiet);
        cr_print_state(c, stderr, why);
        w->sent_at = now;
        if (c->cfg.watchdog_abort > 0 && quiet >= c->cfg.watchdog_abort * c->cfg.watchdog_seconds) {
            char h[96];
            format_handler(c, c->last_handler, h, sizeof h);
            cr_fatal("watchdog: no progress for %.1f s in %s, and rank 0 is not in Courier "
                     "(COURIER_WATCHDOG_ABORT=%u intervals): ending the job; the last handler "
                     "this rank ran: %s",
                     quiet, c->waiting ? c->wait_reason : "user code", c->cfg.watchdog_abort, h);
        }
    }
}

void cr_watchdog_tick(cr_comm *c)
{
    if (!c->watch)
        return;
    double quiet = cr_now(c) - c->last_activity, interval = c->cfg.watchdog_seconds;
    if (c->cfg.verbosity >= 1 && quiet >= interval) {
        char why[96];
        snprintf(why, sizeof why, "no progress for %.1f s", quiet);
        cr_print_state(c, stderr, why);
    }
    if (c->rank != 0) {
        if (quiet >= interval / 2)
            report(c, quiet);
        return;
    }
    collect(c);
    cr_watchdog *w = c->watch;
    if (quiet >= interval && cr_now(c) - w->summary_at >= interval * 0.99) {
        cr_trace_flush(c->trace); /* a hung job may be killed next: keep the timeline */
        print_summary(c, quiet);
        w->summary_at = cr_now(c);
    }
}

/* Collective, after the last barrier: rank 0 receives every report still in flight,
 * so no synchronous send is left unmatched when the communicators are freed. */
void cr_watchdog_free(cr_comm *c)
{
    cr_watchdog *w = c->watch;
    if (!w)
        return;
    uint64_t sent = c->tp->ops->host->reports_sent(c->tp), total = 0;
    c->tp->ops->group->allreduce_u64(c->tp, &sent, &total, 1, CR_OP_SUM);
    cr_watch_report r;
    while (c->rank == 0 && w->received < total)
        if (c->tp->ops->host->report_take(c->tp, &r, sizeof r))
            w->received++;
    free(w->last);
    free(w->at);
    free(w);
    c->watch = NULL;
}
