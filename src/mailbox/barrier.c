/* cr_barrier: NBX-style termination (Hoefler et al., PPoPP 2010, Algorithm NBX; thesis
 * section 3.3) extended to handlers that send after their rank has joined.
 *
 * A rank joins a wave once its buffers are empty and its synchronous sends have all
 * completed, then keeps receiving and handling until the wave's non-blocking
 * reduction completes. Instead of a bare barrier, the reduction sums the cumulative
 * counts of data messages sent (S) and handled (R). The barrier ends after wave k if
 * S_k == R_{k-1}: then at the end of wave k-1 every message ever sent had been
 * handled and nothing was sent afterwards (docs/termination.md has the argument). */
#include "mailbox/mailbox_internal.h"

#include "common/fatal.h"

void cr_term_init(cr_term *t, cr_transport *tp)
{
    *t = (cr_term){.tp = tp};
}

void cr_term_join(cr_term *t, cr_wave_kind kind, uint64_t a, uint64_t b,
                  const cr_term_epoch *epoch)
{
    static const cr_term_epoch none;
    if (!epoch)
        epoch = &none;
    t->local[0] = (uint64_t)kind;
    t->local[1] = a;
    t->local[2] = b;
    t->local[3] = epoch->records;
    t->local[4] = epoch->bytes;
    t->local[5] = epoch->ns;
    t->local[6] = epoch->merged;
    t->tp->ops->group->wave_join(t->tp, t->local);
    t->joined = true;
}

static const char *kind_name(uint64_t kind)
{
    return kind == CR_WAVE_BARRIER ? "cr_barrier"
           : kind == CR_WAVE_DESTROY ? "cr_comm_destroy"
                                     : "cr_register";
}

bool cr_term_test(cr_term *t)
{
    if (!t->tp->ops->group->wave_test(t->tp, t->global))
        return false;
    t->joined = false;
    if (t->global[0] != t->local[0] * (uint64_t)t->tp->size)
        cr_fatal("mismatched collective calls: this rank called %s while other ranks called "
                 "another collective (cr_barrier, cr_register and cr_comm_destroy must be "
                 "called by all ranks in the same order)",
                 kind_name(t->local[0]));
    return true;
}

bool cr_term_barrier_quiet(cr_term *t)
{
    bool quiet = cr_term_quiet(t->global[1], t->handled_before);
    t->handled_before = t->global[2];
    return quiet;
}

static bool barrier_done(cr_comm *c, void *arg)
{
    const cr_wave_kind *kind = arg;
    cr_term *t = &c->term;
    if (!t->joined) {
        if (!cr_flush_all_nowait(c, CR_FLUSH_BARRIER) || cr_inflight(c) || c->self.n > 0 ||
            !cr_park_empty(&c->park))
            return false;
        double in_epoch = cr_clock(c) - c->tune.epoch_start;
        cr_term_epoch epoch = {.records = c->tune.records_before_reset + c->stats.msgs_sent,
                               .bytes = c->tune.bytes_before_reset + c->stats.bytes_sent,
                               .ns = in_epoch > 0 ? (uint64_t)(in_epoch * 1e9) : 0,
                               .merged = c->tune.merged_before_reset +
                                         c->stats.merged_at_source + c->stats.merged_at_hops};
        cr_term_join(t, *kind, c->mpi_sent_total, c->mpi_handled_total, &epoch);
        t->wave++;
        if (c->trace)
            cr_trace_instant(c->trace, "barrier wave joined", "wave", (int64_t)t->wave,
                             "sent", (int64_t)c->mpi_sent_total, "handled",
                             (int64_t)c->mpi_handled_total);
        c->stats.barrier_epochs++;
        if (c->cfg.verbosity >= 3)
            fprintf(stderr, "courier: rank %d: barrier wave %llu joined (sent %llu, handled %llu)\n",
                    c->rank, (unsigned long long)t->wave, (unsigned long long)t->local[1],
                    (unsigned long long)t->local[2]);
    }
    if (!cr_term_test(t))
        return false;
    c->last_activity = cr_now(c);
    bool quiet = cr_term_barrier_quiet(t);
    if (c->trace)
        cr_trace_instant(c->trace, quiet ? "barrier done" : "barrier wave: not yet", "wave",
                         (int64_t)t->wave, "sent", (int64_t)t->global[1], "handled_before",
                         (int64_t)t->handled_before);
    if (!quiet)
        return false;
    c->tp->data->ops->next_phase(c->tp->data);
    cr_trace_flush(c->trace); /* what a later abort or kill would lose ends here */
    return true;
}

/* A barrier whose waves carry `kind`: cr_barrier's, or cr_comm_destroy's. */
void cr_barrier_as(cr_comm *c, cr_wave_kind kind)
{
    const char *name = kind_name(kind);
    if (c->handler_depth > 0)
        cr_fatal("%s was called from inside a handler; call it from the main program", name);
    if (c->waiting || c->in_loop)
        cr_fatal("%s was called while the runtime is already waiting (nested call)", name);
    cr_modules_drain(c); /* what modules hold back leaves before the barrier begins */
    c->stats.barriers++;
    c->barriers_entered++;
    c->term.wave = 0;
    cr_wait_until(c, barrier_done, &kind, name);
    if (c->cfg.verbosity >= 2 && c->rank == 0)
        fprintf(stderr, "courier: barrier done after %llu wave(s), %llu messages in total\n",
                (unsigned long long)c->term.wave, (unsigned long long)c->term.global[1]);
    /* Nothing is in flight and every rank saw the same sums: the one moment a comm
     * may change its route or buffer size (autotune.c). */
    if (kind == CR_WAVE_BARRIER)
        cr_autotune_epoch(c, &(cr_term_epoch){.records = c->term.global[3],
                                               .bytes = c->term.global[4],
                                               .ns = c->term.global[5],
                                               .merged = c->term.global[6]});
}

void cr_barrier(cr_comm *c)
{
    cr_barrier_as(c, CR_WAVE_BARRIER);
}

static bool register_done(cr_comm *c, void *arg)
{
    (void)arg;
    if (!c->term.joined)
        cr_term_join(&c->term, CR_WAVE_REGISTER, c->handlers.count, 0, NULL);
    return cr_term_test(&c->term);
}

void cr_term_register_wave(cr_comm *c)
{
    cr_wait_until(c, register_done, NULL, "cr_register");
    if (c->term.global[1] != (uint64_t)c->handlers.count * (uint64_t)c->size)
        cr_fatal("cr_register: ranks registered different numbers of handlers (%u here, "
                 "%llu over all %d ranks); register the same handlers in the same order on "
                 "every rank",
                 c->handlers.count, (unsigned long long)c->term.global[1], c->size);
}
