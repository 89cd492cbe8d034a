/* cr_comm: creation (the settings every rank must agree on, routing) and destruction,
 * handler registration with the check that every rank registers the same handlers,
 * and the small accessors. Sending is in send.c, the receive path in dispatch.c. */
#include "mailbox/mailbox_internal.h"

#include "common/code_id.h"
#include "common/fatal.h"
#include "courier/rng.h"
#include "mailbox/record.h"

#include <stdlib.h>
#include <string.h>


/* Collective: if any rank has an error, the lowest such rank prints it and the job
 * aborts, so a setting that is wrong everywhere (an environment variable) is
 * reported once, not once per rank. The others wait in a second reduction, so none
 * is left behind in a later collective (it is ended by the printing rank's abort). */
static void abort_if_any(cr_transport *tp, const char *err)
{
    uint64_t mine = err != NULL ? (uint64_t)tp->rank : UINT64_MAX, first = UINT64_MAX;
    tp->ops->group->allreduce_u64(tp, &mine, &first, 1, CR_OP_MIN);
    if (first == UINT64_MAX)
        return;
    if (first == mine)
        cr_fatal("%s", err);
    uint64_t none = 0, ignored = 0;
    tp->ops->group->allreduce_u64(tp, &none, &ignored, 1, CR_OP_MAX);
}

/* Route and node size, hashed, so that all ranks can check they agree. */
static uint64_t route_digest(const cr_config *cfg)
{
    const cr_route *r = &cfg->route;
    uint64_t h = cr_rng_hash64(((uint64_t)r->kind << 32) ^ cfg->node_size);
    unsigned ndims = r->kind == CR_ROUTE_GRID ? r->ndims : 0;
    for (unsigned i = 0; i < ndims && i < CR_ROUTE_MAX_DIMS; i++)
        h = cr_rng_hash64(h ^ r->dims[i]);
    return h;
}

static void setup_routing(cr_comm *c)
{
    char err[512] = "", why[600];
    c->router = cr_router_create(&c->tune.now.route, c->layout, err, sizeof err);
    snprintf(why, sizeof why, "invalid configuration: %s", err);
    abort_if_any(c->tp, c->router ? NULL : why);
    c->routed = c->tune.now.route.kind != CR_ROUTE_DIRECT && c->size > 1;
}

/* Every rank must use the same route and collective settings. */
static void check_agreement(cr_comm *c)
{
    uint64_t route = route_digest(&c->cfg);
    uint64_t colls = (uint64_t)c->cfg.exchange | (uint64_t)c->cfg.allreduce << 4 |
                     (uint64_t)c->cfg.allgather << 8 | (uint64_t)c->cfg.allreduce_ports << 12;
    uint64_t flow = (uint64_t)c->cfg.flow;
    uint64_t local[6] = {route, ~route, colls, ~colls, flow, ~flow}, agreed[6];
    c->tp->ops->group->allreduce_u64(c->tp, local, agreed, 6, CR_OP_MIN);
    if (agreed[0] != ~agreed[1])
        cr_fatal("ranks disagree on the route or the node size (COURIER_ROUTE, COURIER_NODE_SIZE "
                 "or cr_config.route / node_size); set them the same on every rank");
    if (agreed[2] != ~agreed[3])
        cr_fatal("ranks disagree on the collective settings (COURIER_EXCHANGE, COURIER_ALLREDUCE, "
                 "COURIER_ALLGATHER or their cr_config fields); set them the same on every rank");
    if (agreed[4] != ~agreed[5])
        cr_fatal("ranks disagree on the flow policy (COURIER_FLOW or cr_config.flow); set it the "
                 "same on every rank");
}

static void print_settings(const cr_comm *c)
{
    char route[128];
    cr_route_format(cr_router_route(c->router), route, sizeof route);
    fprintf(stderr,
            "courier: %d ranks on %d node(s)%s, route %s (at most %d hops), buffer %zu B, cap "
            "%zu B, %u sends in flight, flow %s, handlers wait %u deep over the cap, flush interval %g s, "
            "watchdog %g s, receive by %s, transport %s, shared memory within a node %s "
            "(%zu B per rank)\n",
            c->size, c->layout->nnodes, c->cfg.node_size ? " (virtual)" : "", route,
            cr_router_max_hops(c->router), c->tune.now.buffer_bytes, c->cfg.buffer_cap_bytes,
            c->cfg.max_inflight, c->fops->name, c->cfg.nest_limit, c->cfg.flush_interval, c->cfg.watchdog_seconds,
            c->cfg.recv_mode == CR_RECV_PREPOST ? "pre-posted receives" : "probe",
            c->tp->ops->name, c->cfg.shm && c->cfg.shm_bytes ? "on" : "off", c->cfg.shm_bytes);
}

cr_comm *cr_comm_create_on(cr_transport *tp, cr_layout *layout, const cr_config *cfg,
                           const char *config_error, const cr_tune_costs *measured)
{
    abort_if_any(tp, config_error);
    cr_comm *c = cr_xcalloc(1, sizeof *c);
    c->tp = tp;
    memcpy((void *)&c->cfg, cfg, sizeof *cfg); /* the one write: cfg is const from here */
    c->rank = tp->rank;
    c->size = tp->size;
    check_agreement(c);
    c->layout = layout;
    char why[480] = "";
    /* a costs file named is checked on every rank even when nothing is chosen */
    abort_if_any(tp, cr_autotune_costs(c, measured, why, sizeof why) ? NULL : why);
    cr_autotune_first(c);
    setup_routing(c);

    cr_registry_init(&c->handlers);
    c->fops = c->cfg.flow == CR_FLOW_DEEP_HELD ? &cr_flow_deep_held : &cr_flow_waits;
    cr_park_init(&c->park);
    size_t buffer_bytes = c->tune.now.buffer_bytes;
    int pool = (int)c->cfg.max_inflight;
    size_t pool_bytes_limit = (size_t)64 << 20;
    if ((size_t)pool * buffer_bytes > pool_bytes_limit)
        pool = (int)(pool_bytes_limit / buffer_bytes);
    /* Above dense_ranks destinations, only the partners a rank uses get state. */
    cr_outbufs_init(&c->out, c->size, buffer_bytes, pool,
                    (unsigned)c->size > c->cfg.dense_ranks);
    cr_update_room(c);
    cr_term_init(&c->term, tp);
    c->poll_countdown = c->poll_every = CR_POLL_EVERY;
    cr_engine_init(c, &cr_mailbox_loop_work);
    cr_watchdog_init(c);
    c->trace = cr_trace_open(c->cfg.trace_path, tp);
    c->tune.epoch_start = cr_clock(c);
    if (c->cfg.verbosity >= 1 && c->rank == 0)
        print_settings(c);
    return c;
}

void cr_comm_destroy(cr_comm *c)
{
    if (!c)
        return;
    if (c->handler_depth > 0)
        cr_fatal("cr_comm_destroy was called from inside a handler");
    cr_barrier_as(c, CR_WAVE_DESTROY);
    if (c->cfg.print_stats) /* COURIER_STATS=1 */
        cr_stats_print(c, stderr);
    cr_modules_destroy(c);
    cr_watchdog_free(c);
    cr_trace_close(c->trace);
    cr_engine_free(c);
    cr_selfq_free(c);
    cr_park_free(&c->park);
    cr_combine_index_free(&c->combine);
    cr_outbufs_free(&c->out);
    cr_registry_free(&c->handlers);
    free(c->flow.scratch);
    free(c->bcast_copy);
    cr_mcast_free_all(c);
    cr_router_destroy(c->router);
    cr_layout_destroy(c->layout);
    c->tp->ops->destroy(c->tp);
    free(c);
}

void cr_comm_describe_open(void *comm, char *buf, size_t len)
{
    const cr_comm *c = comm;
    snprintf(buf, len,
             "this rank sent %llu records and handled %llu (since cr_comm_create or "
             "cr_stats_reset), %zu bytes wait in its send buffers",
             (unsigned long long)c->stats.msgs_sent, (unsigned long long)c->stats.msgs_handled,
             c->out.total);
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
    return &c->tune.in_effect;
}

const cr_layout *cr_comm_layout(const cr_comm *c)
{
    return c->layout;
}

const cr_router *cr_comm_router(const cr_comm *c)
{
    return c->router;
}

/* What kind of handler an entry is, for the mismatch message. */
static const char *handler_kind(const cr_handler_type *type, const char *module_kind)
{
    if (module_kind)
        return module_kind;
    if (type->key_len > 0)
        return type->batch ? "combining batch handler" : "combining handler";
    return type->batch ? "batch handler" : "handler";
}

/* Everything about a handler that must be equal on every rank for a record to reach
 * the same code with the same merging everywhere: its functions (by their place in
 * the executable, src/common/code_id.h), kind, key length, reentrant flag, name, and
 * what a module adds (`extra`). Not the user pointer, which may differ. */
static uint64_t handler_signature(const cr_handler_type *type, const char *kind, uint64_t extra)
{
    uint64_t h = cr_rng_hash64(extra);
    h = cr_rng_hash64(h ^ cr_code_id(cr_code_of(type->fn)));
    h = cr_rng_hash64(h ^ cr_code_id(cr_code_of(type->batch)) * 3);
    h = cr_rng_hash64(h ^ cr_code_id(cr_code_of(type->combine)) * 5);
    h = cr_rng_hash64(h ^ ((uint64_t)type->key_len << 1 | (uint64_t)type->reentrant));
    for (const char *s = kind; s && *s; s++)
        h = cr_rng_hash64(h ^ (unsigned char)*s);
    for (const char *s = type->name; s && *s; s++)
        h = cr_rng_hash64(h ^ (unsigned char)*s << 8);
    return h;
}

/* Collective, after the registration wave: do all ranks hold the same handler under
 * `id`? Exact: the minimum of the signatures equals the minimum of their complements'
 * complement only when every rank has the same one. On a mismatch the lowest of the
 * two ranks named prints one line and the job ends (abort_if_any). */
static void check_handler_agrees(cr_comm *c, int id, const cr_handler_type *type,
                                 const char *kind, uint64_t signature)
{
    cr_transport *tp = c->tp;
    uint64_t local[2] = {signature, ~signature}, agreed[2];
    tp->ops->group->allreduce_u64(tp, local, agreed, 2, CR_OP_MIN);
    if (agreed[0] == ~agreed[1])
        return;
    /* A rank holding the smallest signature, and one holding another. */
    uint64_t me = (uint64_t)c->rank;
    uint64_t who[2] = {signature == agreed[0] ? me : UINT64_MAX,
                       signature != agreed[0] ? me : UINT64_MAX}, first[2];
    tp->ops->group->allreduce_u64(tp, who, first, 2, CR_OP_MIN);
    char err[400];
    snprintf(err, sizeof err,
             "cr_register: the ranks' handler tables differ at handler id %d: rank %llu and "
             "rank %llu registered different handlers there (this rank: %s, key %zu bytes, "
             "%s%s%s); register the same handlers in the same order on every rank",
             id, (unsigned long long)(first[0] < first[1] ? first[0] : first[1]),
             (unsigned long long)(first[0] < first[1] ? first[1] : first[0]),
             handler_kind(type, kind), type->key_len,
             type->reentrant ? "reentrant" : "not reentrant", type->name ? ", name " : "",
             type->name ? type->name : "");
    uint64_t reporter = first[0] < first[1] ? first[0] : first[1];
    abort_if_any(tp, me == reporter ? err : NULL);
    cr_fatal("%s", err); /* not reached: abort_if_any ended the job */
}

int cr_register_checked(cr_comm *c, const cr_handler_type *type, void *user, const char *kind,
                        uint64_t extra)
{
    if (!cr_can_wait(c))
        cr_fatal("cr_register was called from inside a handler; register from the main program");
    if (!type || (!type->fn && !type->batch))
        cr_fatal("cr_register: the handler function is NULL");
    if (type->fn && type->batch)
        cr_fatal("cr_register_type: set either fn or batch, not both");
    if (type->key_len > CR_MAX_KEY || (type->key_len > 0) != (type->combine != NULL))
        cr_fatal("cr_register_type: a combining handler needs 1 <= key_len <= %d and a "
                 "combine function (key_len %zu, combine %s)",
                 CR_MAX_KEY, type->key_len, type->combine ? "set" : "NULL");
    int id = cr_registry_add_entry(
        &c->handlers, (cr_handler_entry){.fn = type->fn, .batch = type->batch, .user = user,
                                         .key_len = type->key_len, .combine = type->combine,
                                         .combine_user = type->combine_user,
                                         .reentrant = type->reentrant && c->cfg.nest_limit > 0,
                                         .name = type->name});
    if (id < 0)
        cr_fatal("cr_register: more than %d handlers on one comm", CR_MAX_HANDLERS);
    if (type->key_len > 0)
        c->ncombining++;
    /* No rank returns before every rank has registered the id, so no message for it
     * can reach a rank that does not know it yet. */
    cr_term_register_wave(c);
    check_handler_agrees(c, id, type, kind, handler_signature(type, kind, extra));
    return id;
}

int cr_register_type(cr_comm *c, const cr_handler_type *type, void *user)
{
    return cr_register_checked(c, type, user, NULL, 0);
}

/* module.h: registration with a module's kind name and extra signature. */
int cr_module_register(cr_comm *c, const cr_handler_type *type, void *user, const char *kind,
                       uint64_t extra)
{
    return cr_register_checked(c, type, user, kind, extra);
}

int cr_register(cr_comm *c, cr_handler_fn fn, void *user)
{
    return cr_register_type(c, &(cr_handler_type){.fn = fn}, user);
}

size_t cr_progress(cr_comm *c)
{
    if (!cr_can_wait(c)) {
        /* From a handler: cr_poll only completes sends there, it never recurses. */
        cr_poll(c);
        return 0;
    }
    c->poll_countdown = CR_POLL_EVERY;
    return cr_engine_run_nowait(c);
}


void cr_trace_begin(cr_comm *c, const char *name)
{
    c->trace_phases++;
    if (c->trace)
        cr_trace_phase_begin(c->trace, name ? name : "(unnamed)");
}

void cr_trace_end(cr_comm *c)
{
    if (c->trace_phases == 0)
        cr_fatal("cr_trace_end without a matching cr_trace_begin");
    c->trace_phases--;
    if (c->trace)
        cr_trace_phase_end(c->trace);
}
