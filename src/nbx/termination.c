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

void cr_term_init(cr_term *t, MPI_Comm comm)
{
    *t = (cr_term){.comm = comm, .req = MPI_REQUEST_NULL};
}

void cr_term_join(cr_term *t, uint64_t sent, uint64_t handled)
{
    t->local[0] = sent;
    t->local[1] = handled;
    MPI_Iallreduce(t->local, t->global, 2, MPI_UINT64_T, MPI_SUM, t->comm, &t->req);
    t->joined = true;
    t->wave++;
}

bool cr_term_test(cr_term *t, bool *quiet)
{
    int done = 0;
    MPI_Test(&t->req, &done, MPI_STATUS_IGNORE);
    if (!done)
        return false;
    t->joined = false;
    *quiet = cr_term_quiet(t->global[0], t->handled_before);
    t->handled_before = t->global[1];
    return true;
}

static bool barrier_done(cr_comm *c, void *arg)
{
    (void)arg;
    cr_term *t = &c->term;
    if (!t->joined) {
        if (!cr_flush_all_nowait(c, CR_FLUSH_BARRIER) || cr_sendq_inflight(&c->sendq))
            return false;
        cr_term_join(t, c->mpi_sent_total, c->mpi_handled_total);
        c->stats.barrier_epochs++;
        if (c->cfg.verbosity >= 3)
            fprintf(stderr, "courier: rank %d: barrier wave %llu joined (sent %llu, handled %llu)\n",
                    c->rank, (unsigned long long)t->wave, (unsigned long long)t->local[0],
                    (unsigned long long)t->local[1]);
    }
    bool quiet;
    if (!cr_term_test(t, &quiet))
        return false;
    c->last_activity = cr_now(c);
    return quiet;
}

void cr_barrier(cr_comm *c)
{
    if (c->handler_depth > 0)
        cr_fatal("cr_barrier was called from inside a handler; call it from the main program");
    if (c->waiting || c->in_loop)
        cr_fatal("cr_barrier was called while the runtime is already waiting (nested call)");
    c->stats.barriers++;
    c->term.wave = 0;
    cr_wait_until(c, barrier_done, NULL);
    if (c->cfg.verbosity >= 2 && c->rank == 0)
        fprintf(stderr, "courier: barrier done after %llu wave(s), %llu messages in total\n",
                (unsigned long long)c->term.wave, (unsigned long long)c->term.global[0]);
}
