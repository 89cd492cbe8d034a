/* The assembly: what ties the mailbox core, its modules and the MPI transport into
 * the public API that spans them. It sits above every module (apps -> this ->
 * modules -> mailbox core -> transport), so the core never names a module:
 *   cr_config_from_env / cr_config_validate  compose each part's own settings;
 *   cr_comm_create                            the MPI transport, the node layout, a comm;
 *   cr_calibrate                              the configuration resolved, and comms made
 *                                             for src/calibrate's measurements. */
#include "courier/mailbox.h"

#include "courier/coll.h"
#include "courier/calibrate.h"

#include "calibrate/calibrate_internal.h"
#include "coll/coll_internal.h"
#include "mailbox/config.h"
#include "mailbox/mailbox_internal.h"
#include "nbx/exchange_internal.h"
#include "transport/mpi_transport.h"

#include "common/fatal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each part of cr_config, in the order its errors are reported. */
static const struct {
    int (*from_env)(cr_config *cfg, char *err, size_t errlen);
    int (*validate)(const cr_config *cfg, char *err, size_t errlen);
} parts[] = {
    {cr_mailbox_config_from_env, cr_mailbox_config_validate},
    {cr_coll_config_from_env, cr_coll_config_validate},
    {cr_exchange_config_from_env, cr_exchange_config_validate},
};
#define NPARTS (sizeof parts / sizeof parts[0])

int cr_config_from_env(cr_config *cfg, char *err, size_t errlen)
{
    cr_config c = *cfg;
    for (size_t i = 0; i < NPARTS; i++)
        if (parts[i].from_env(&c, err, errlen))
            return -1;
    *cfg = c;
    return 0;
}

int cr_config_validate(const cr_config *cfg, char *err, size_t errlen)
{
    for (size_t i = 0; i < NPARTS; i++)
        if (parts[i].validate(cfg, err, errlen))
            return -1;
    return 0;
}

/* The given configuration, or the defaults with the environment applied, checked.
 * Local: returns this rank's error (in err) or NULL. */
static const char *resolve_config(cr_config *out, const cr_config *given, char *err, size_t len)
{
    char why[512];
    if (given) {
        *out = *given;
    } else {
        cr_config_init(out);
        if (cr_config_from_env(out, why, sizeof why)) {
            snprintf(err, len, "%s", why);
            return err;
        }
    }
    if (cr_config_validate(out, why, sizeof why)) {
        snprintf(err, len, "invalid configuration: %s", why);
        return err;
    }
    return NULL;
}

/* The nodes as the transport finds them, each cut into virtual nodes of node_size
 * ranks when asked (the same cut as the transport's path within a node). Collective. */
static cr_layout *layout_of(cr_transport *tp, unsigned node_size)
{
    int *node_of = cr_xmalloc((size_t)tp->size * sizeof *node_of);
    tp->ops->group->nodes(tp, node_of);
    cr_layout *l = node_size > 0 ? cr_layout_create_cut(tp->size, node_of, (int)node_size)
                                 : cr_layout_create(tp->size, node_of);
    free(node_of);
    return l;
}

/* COURIER_TUNE=calibrate, when something is auto: every rank must agree, since the
 * measurement is collective. Collective. */
static bool calibrate_first(cr_transport *tp, const cr_config *use)
{
    bool want = use->tune_calibrate &&
                (use->route.kind == CR_ROUTE_AUTO || use->buffer_auto);
    uint64_t local[2] = {want, !want}, agreed[2];
    tp->ops->group->allreduce_u64(tp, local, agreed, 2, CR_OP_MIN);
    if (agreed[0] != !agreed[1])
        cr_fatal("ranks disagree on COURIER_TUNE=calibrate (or on what is auto); set them the "
                 "same on every rank");
    return want;
}

static cr_comm *create_measuring(MPI_Comm comm, const cr_config *cfg);

static cr_comm *create(MPI_Comm comm, const cr_config *cfg, bool may_calibrate)
{
    cr_config use;
    char err[600];
    const char *bad = resolve_config(&use, cfg, err, sizeof err);
    if (bad) /* the transport still starts, so that every rank reaches the agreement */
        cr_config_init(&use);
    cr_transport_mpi_opts opts = {.buffer_bytes = use.buffer_bytes,
                                  .max_inflight = use.max_inflight,
                                  .prepost = use.recv_mode == CR_RECV_PREPOST,
                                  .shm_bytes = use.shm ? use.shm_bytes : 0,
                                  .node_size = use.node_size};
    cr_transport *tp = cr_transport_mpi_create(comm, &opts);
    if (tp->rank == 0 && may_calibrate) { /* once per job: the environment is the same on every rank */
        cr_config_warn_unknown(stderr);
        cr_config_warn_raised(stderr, &use);
    }
    cr_tune_costs measured, *costs = NULL;
    if (may_calibrate && !bad && calibrate_first(tp, &use)) {
        measured = cr_calibrate_at_creation(comm, &use, create_measuring,
                                            use.verbosity >= 1 && tp->rank == 0);
        costs = &measured;
    }
    cr_layout *layout = layout_of(tp, use.node_size);
    cr_comm *c = cr_comm_create_on(tp, layout, &use, bad, costs);
    cr_transport_mpi_watch_finalize(tp, cr_comm_describe_open, c);
    return c;
}

cr_comm *cr_comm_create(MPI_Comm comm, const cr_config *cfg)
{
    return create(comm, cfg, true);
}

static cr_comm *create_measuring(MPI_Comm comm, const cr_config *cfg)
{
    return create(comm, cfg, false);
}

void cr_calibrate(MPI_Comm comm, const cr_config *cfg, const cr_calibrate_opts *opts,
                  cr_calibration *out)
{
    cr_config base;
    char err[600];
    if (resolve_config(&base, cfg, err, sizeof err))
        cr_fatal("cr_calibrate: %s", err);
    cr_calibrate_run(comm, &base, opts, create_measuring, out);
}

