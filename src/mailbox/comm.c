/* cr_comm: creation, handler registration, cr_async and friends. */
#include "mailbox/mailbox_internal.h"

#include "common/fatal.h"
#include "mailbox/record.h"

#include <stdlib.h>
#include <string.h>

/* Records appended from user code between two polls of the network. */
#define POLL_EVERY 1024
/* Largest pre-posted receive; bigger buffers use TAG_LARGE and a probe. */
#define PREPOST_MAX ((size_t)1 << 20)

/* Collective: if any rank has an error, that rank prints it and the job aborts.
 * The others wait in a barrier, so none is left behind in a later collective. */
static void abort_if_any(const char *err, MPI_Comm comm)
{
    int bad = err != NULL, any_bad = 0;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, comm);
    if (bad)
        cr_fatal("%s", err);
    if (any_bad)
        MPI_Barrier(comm); /* ended by the failing rank's MPI_Abort */
}

/* The given configuration, or the defaults with the environment applied, checked
 * on every rank. */
static void resolve_config(cr_config *out, const cr_config *given, MPI_Comm comm)
{
    char err[512];
    if (given) {
        *out = *given;
    } else {
        cr_config_init(out);
        abort_if_any(cr_config_from_env(out, err, sizeof err) ? err : NULL, comm);
    }
    char why[600];
    int bad = cr_config_validate(out, err, sizeof err);
    snprintf(why, sizeof why, "invalid configuration: %s", err);
    abort_if_any(bad ? why : NULL, comm);
}

cr_comm *cr_comm_create(MPI_Comm comm, const cr_config *cfg)
{
    cr_comm *c = cr_xcalloc(1, sizeof *c);
    resolve_config(&c->cfg, cfg, comm);
    MPI_Comm_dup(comm, &c->data);
    MPI_Comm_dup(comm, &c->term_comm);
    MPI_Comm_dup(comm, &c->ctrl);
    MPI_Comm_rank(comm, &c->rank);
    MPI_Comm_size(comm, &c->size);

    /* Senders choose the tag by size and by the receivers' mode, so both must be the
     * same everywhere. */
    unsigned long long mine = c->cfg.buffer_bytes < PREPOST_MAX ? c->cfg.buffer_bytes : PREPOST_MAX;
    mine = (mine + 7) & ~7ULL;
    long long local[3] = {(long long)mine, (long long)c->cfg.recv_mode, -(long long)c->cfg.recv_mode};
    long long agreed[3];
    MPI_Allreduce(local, agreed, 3, MPI_LONG_LONG, MPI_MIN, c->ctrl);
    if (agreed[1] != -agreed[2])
        cr_fatal("ranks disagree on the receive mode (COURIER_RECV or cr_config.recv_mode); "
                 "set it the same on every rank");
    c->small_max = (size_t)agreed[0];

    cr_registry_init(&c->handlers);
    int pool = (int)c->cfg.max_inflight;
    size_t pool_bytes_limit = (size_t)64 << 20;
    if ((size_t)pool * c->cfg.buffer_bytes > pool_bytes_limit)
        pool = (int)(pool_bytes_limit / c->cfg.buffer_bytes);
    cr_outbufs_init(&c->out, c->size, c->cfg.buffer_bytes, pool);
    cr_sendq_init(&c->sendq, (int)c->cfg.max_inflight);
    cr_term_init(&c->term, c->term_comm);
    c->scratch = cr_xmalloc((size_t)c->size * sizeof *c->scratch);
    c->poll_countdown = POLL_EVERY;
    cr_engine_init(c);
    cr_recv_init(c);

    if (c->cfg.verbosity >= 1 && c->rank == 0)
        fprintf(stderr,
                "courier: %d ranks, buffer %zu B, cap %zu B, %u sends in flight, flush "
                "interval %g s, watchdog %g s, receive by %s\n",
                c->size, c->cfg.buffer_bytes, c->cfg.buffer_cap_bytes, c->cfg.max_inflight,
                c->cfg.flush_interval, c->cfg.watchdog_seconds,
                c->cfg.recv_mode == CR_RECV_PREPOST ? "pre-posted receives" : "probe");
    return c;
}

void cr_comm_destroy(cr_comm *c)
{
    if (!c)
        return;
    if (c->handler_depth > 0)
        cr_fatal("cr_comm_destroy was called from inside a handler");
    cr_barrier(c);
    cr_recv_free(c);
    cr_engine_free(c);
    cr_sendq_free(&c->sendq);
    cr_outbufs_free(&c->out);
    cr_registry_free(&c->handlers);
    free(c->scratch);
    MPI_Comm_free(&c->data);
    MPI_Comm_free(&c->term_comm);
    MPI_Comm_free(&c->ctrl);
    free(c);
}

int cr_comm_rank(const cr_comm *c)
{
    return c->rank;
}

int cr_comm_size(const cr_comm *c)
{
    return c->size;
}

const cr_config *cr_comm_config(const cr_comm *c)
{
    return &c->cfg;
}

int cr_register(cr_comm *c, cr_handler_fn fn, void *user)
{
    if (!cr_can_wait(c))
        cr_fatal("cr_register was called from inside a handler; register from the main program");
    if (!fn)
        cr_fatal("cr_register: the handler function is NULL");
    int id = cr_registry_add(&c->handlers, fn, user);
    if (id < 0)
        cr_fatal("cr_register: more than %d handlers on one comm", CR_MAX_HANDLERS);
    /* No rank returns before every rank has registered the id, so no message for it
     * can reach a rank that does not know it yet. */
    cr_term_register_wave(c);
    return id;
}

void cr_async(cr_comm *c, int dest, int handler, const void *payload, size_t len)
{
    if ((unsigned)dest >= (unsigned)c->size)
        cr_fatal("cr_async: destination rank %d is out of range [0, %d)", dest, c->size);
    if ((unsigned)handler >= c->handlers.count)
        cr_fatal("cr_async: handler id %d is not registered (%u handlers registered)", handler,
                 c->handlers.count);
    if (len > CR_MAX_PAYLOAD)
        cr_fatal("cr_async: payload of %zu bytes is larger than the limit of %zu bytes", len,
                 CR_MAX_PAYLOAD);
    if (len && !payload)
        cr_fatal("cr_async: payload is NULL but its length is %zu", len);

    size_t size = cr_rec_size(len);
    cr_outbufs *o = &c->out;
    /* A deferred buffer is retried by the loop; only user code, which may wait for a
     * slot, forces it again here (so a handler does not test sends per record). */
    bool may_force = !o->bufs[dest].deferred || cr_can_wait(c);
    if (may_force && cr_outbufs_overflows(o, dest, size))
        cr_flush_dest(c, dest, CR_FLUSH_SIZE, true);
    char *at = cr_outbufs_append(o, dest, size, c->now);
    cr_rec_write(at, (uint16_t)handler, payload, (uint32_t)len);
    c->stats.msgs_sent++;
    c->stats.bytes_sent += len;

    if (may_force && cr_outbufs_full(o, dest))
        cr_flush_dest(c, dest, CR_FLUSH_SIZE, true);
    if (o->total >= c->cfg.buffer_cap_bytes && !c->cap_blocked)
        cr_flush_for_cap(c);
    if (--c->poll_countdown == 0) {
        c->poll_countdown = POLL_EVERY;
        if (cr_can_wait(c))
            cr_engine_run_nowait(c);
    }
}

void cr_async_bcast(cr_comm *c, int handler, const void *payload, size_t len)
{
    for (int r = 0; r < c->size; r++)
        cr_async(c, (c->rank + 1 + r) % c->size, handler, payload, len);
}

size_t cr_progress(cr_comm *c)
{
    if (!cr_can_wait(c)) {
        /* From a handler: cr_poll only completes sends there, it never recurses. */
        cr_poll(c);
        return 0;
    }
    c->poll_countdown = POLL_EVERY;
    return cr_engine_run_nowait(c);
}

void cr_stats_get(const cr_comm *c, cr_stats *out)
{
    *out = c->stats;
    out->peak_buffered_bytes = c->out.peak;
}

void cr_stats_reset(cr_comm *c)
{
    memset(&c->stats, 0, sizeof c->stats);
    c->out.peak = c->out.total;
}
