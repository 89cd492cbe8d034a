/* Courier on a simulated transport: P virtual ranks in one process, for tests of
 * large P and many interleavings, and for the scale model (docs/simulation.md).
 *
 * The virtual ranks run the product's own mailbox, routing and termination code;
 * only the transport differs. A seeded scheduler decides which rank runs next and
 * in which order arrived buffers are received, so a run replays exactly from its
 * seed. No MPI is needed (MPI_Init is not called). The collectives (coll.h) and
 * cr_nbx_exchange run here too, on the transport's module channels.
 *
 * Errors (docs/architecture.md): cr_sim_run returns -1 with one line in `err` for
 * a bad configuration or a deadlock; misuse inside a virtual rank ends the run
 * (the process) with one line, as it ends an MPI job. */
#ifndef COURIER_SIM_H
#define COURIER_SIM_H

#include "courier/mailbox.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_sim_opts {
    int ranks;             /* virtual ranks, 1 .. 65536 */
    uint64_t seed;         /* the interleaving: the same seed replays the same run */
    const cr_config *cfg;  /* NULL: cr_config_init's defaults (the environment is not
                              read); node_size 0 puts all ranks on one node */
    size_t stack_bytes;    /* stack of each virtual rank; 0: 256 KiB */
    /* Unequal speeds (0: every rank runs whenever the scheduler picks it). Each rank's
     * slowness is drawn from the seed, uniform in [1, max_slowness]; a picked rank
     * runs only with the chance 1/slowness, so a rank of slowness 10 makes about a
     * tenth of the progress of a rank of slowness 1 (1 .. 1000). */
    double max_slowness;
    /* The chance that a rank, each time it runs, then stalls: it is not run for 1 to
     * 16 P scheduling steps (0: never; at most 0.5). */
    double stall_chance;
    /* What the simulated machine charges, for the comms' `auto` (courier/tune.h,
     * docs/tuning.md): seconds per message, per byte and per record handled, the
     * scale model's alpha, beta and gamma, charged alike within and between nodes.
     * All 0 (the default): nothing, and `auto` takes cr_tune_costs_default or the
     * configuration's tune_file, as under MPI. Each 0 to 1 second. */
    double message_cost, byte_cost, record_cost;
} cr_sim_opts;

/* The program of one virtual rank: what a real rank runs between cr_comm_create and
 * cr_comm_destroy (cr_register, cr_async, cr_barrier, handlers ...). */
typedef void (*cr_sim_rank_fn)(cr_comm *comm, void *user);

/* Run `fn` on every virtual rank, each with its own comm of the same simulated world
 * (created before fn, destroyed after it, which includes a barrier). If `stats` is
 * not NULL it receives opts->ranks entries: each rank's counters when its fn
 * returned. Returns 0, or -1 with a one-line message in err: an invalid
 * configuration, or a deadlock (every rank waits and nothing can move). Local to
 * the calling process; not reentrant (one world at a time). */
int cr_sim_run(const cr_sim_opts *opts, cr_sim_rank_fn fn, void *user, cr_stats *stats,
               char *err, size_t errlen);

/* Scheduling steps of the last cr_sim_run (its virtual clock: one microsecond each). */
uint64_t cr_sim_last_steps(void);
/* The slowness the last cr_sim_run gave rank `rank` (1: full speed). */
double cr_sim_last_slowness(int rank);

#ifdef __cplusplus
}
#endif

#endif
