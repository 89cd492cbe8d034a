/* The assembly: what ties the mailbox core, its modules and the MPI transport into
 * the public API that spans them. It sits above every module (apps -> this ->
 * modules -> mailbox core -> transport), so the core never names a module:
 *   cr_config_from_env / cr_config_validate  compose each part's own settings;
 *   cr_comm_create                            the MPI transport, the node layout, a comm. */
#include "courier/mailbox.h"

#include "coll/coll_internal.h"
#include "mailbox/config.h"
#include "mailbox/mailbox_internal.h"
#include "nbx/exchange_internal.h"
#include "transport/mpi.h"

#include "common/fatal.h"

#include <stdio.h>
#include <stdlib.h>

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

/* The nodes as the transport finds them. Collective. */
static cr_layout *layout_of(cr_transport *tp)
{
    int *node_of = cr_xmalloc((size_t)tp->size * sizeof *node_of);
    tp->ops->nodes(tp, node_of);
    cr_layout *l = cr_layout_create(tp->size, node_of);
    free(node_of);
    return l;
}

cr_comm *cr_comm_create(MPI_Comm comm, const cr_config *cfg)
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
    if (tp->rank == 0) { /* once per job: the environment is the same on every rank */
        cr_config_warn_unknown(stderr);
        cr_config_warn_raised(stderr, &use);
    }
    cr_layout *layout = use.node_size > 0 ? cr_layout_create_blocks(tp->size, (int)use.node_size)
                                          : layout_of(tp);
    cr_comm *c = cr_comm_create_on(tp, layout, &use, bad);
    cr_transport_mpi_watch_finalize(tp, cr_comm_describe_open, c);
    return c;
}
