/* cr_sim_run: the product's mailbox on P virtual ranks of the simulated transport.
 * This file sits above the mailbox core (it creates comms) and below the programs
 * that use it (tests, the scale model). */
#include "courier/sim.h"

#include "common/fatal.h"
#include "mailbox/mailbox_internal.h"
#include "transport/sim.h"

#include <stdlib.h>
#include <string.h>

typedef struct run {
    const cr_config *cfg;
    cr_sim_rank_fn fn;
    void *user;
    cr_stats *stats;
    cr_layout *layout; /* one for all virtual ranks: O(P) once, not per rank */
} run;

static uint64_t last_steps;
static double *last_slowness; /* [last_ranks] */
static int last_ranks;

static void rank_entry(cr_sim_world *w, int rank, void *arg)
{
    run *r = arg;
    cr_transport *tp = cr_sim_transport_create(w, rank, r->cfg->max_inflight);
    cr_comm *comm = cr_comm_create_on(tp, cr_layout_share(r->layout), r->cfg, NULL, NULL);
    r->fn(comm, r->user);
    if (r->stats)
        cr_stats_get(comm, &r->stats[rank]);
    cr_comm_destroy(comm);
}

int cr_sim_run(const cr_sim_opts *opts, cr_sim_rank_fn fn, void *user, cr_stats *stats,
               char *err, size_t errlen)
{
    cr_config cfg;
    if (opts->cfg)
        cfg = *opts->cfg;
    else
        cr_config_init(&cfg);
    char why[512];
    if (cr_config_validate(&cfg, why, sizeof why)) {
        cr_set_error(err, errlen, "invalid configuration: %s", why);
        return -1;
    }
    if (opts->ranks < 1 || opts->ranks > 65536) {
        cr_set_error(err, errlen, "cr_sim_run: %d ranks, expected 1 to 65536", opts->ranks);
        return -1;
    }
    if (!(opts->max_slowness >= 0 && opts->max_slowness <= 1000)) {
        cr_set_error(err, errlen, "cr_sim_run: max_slowness %g, expected 0 to 1000",
                     opts->max_slowness);
        return -1;
    }
    if (!(opts->stall_chance >= 0 && opts->stall_chance <= 0.5)) {
        cr_set_error(err, errlen, "cr_sim_run: stall_chance %g, expected 0 to 0.5",
                     opts->stall_chance);
        return -1;
    }
    double costs[3] = {opts->message_cost, opts->byte_cost, opts->record_cost};
    for (int k = 0; k < 3; k++)
        if (!(costs[k] >= 0 && costs[k] <= 1)) {
            cr_set_error(err, errlen, "cr_sim_run: %s cost %g s, expected 0 to 1",
                         k == 0 ? "message" : k == 1 ? "byte" : "record", costs[k]);
            return -1;
        }
    cfg.trace_path[0] = '\0'; /* one timeline per process: not for virtual ranks */
    cr_sim_world *w = cr_sim_world_create(opts->ranks, opts->seed, opts->stack_bytes);
    if (opts->max_slowness > 1 || opts->stall_chance > 0)
        cr_sim_world_set_speeds(w, opts->max_slowness, opts->stall_chance);
    cr_sim_world_set_costs(w, costs[0], costs[1], costs[2]);
    int p = opts->ranks;
    run r = {.cfg = &cfg, .fn = fn, .user = user, .stats = stats,
             .layout = cr_layout_create_blocks(p, cfg.node_size ? (int)cfg.node_size : p)};
    int rc = cr_sim_world_run(w, rank_entry, &r, err, errlen);
    cr_layout_destroy(r.layout);
    last_steps = cr_sim_world_steps(w);
    free(last_slowness);
    last_slowness = malloc((size_t)opts->ranks * sizeof *last_slowness);
    for (int k = 0; last_slowness && k < opts->ranks; k++)
        last_slowness[k] = cr_sim_world_slowness(w, k);
    last_ranks = last_slowness ? opts->ranks : 0;
    cr_sim_world_destroy(w);
    return rc;
}

uint64_t cr_sim_last_steps(void)
{
    return last_steps;
}

double cr_sim_last_slowness(int rank)
{
    return rank >= 0 && rank < last_ranks ? last_slowness[rank] : 1.0;
}
