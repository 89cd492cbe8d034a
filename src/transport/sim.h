/* The simulated transport: P virtual ranks in one process (docs/simulation.md).
 *
 * Each virtual rank runs as a coroutine (ucontext) on its own stack; the world's
 * scheduler, driven by one seeded generator, decides which rank runs next and
 * which arrived block a polling rank receives, so any legal interleaving can occur
 * and a failure replays from its seed. A rank gives up the processor only where a
 * real rank could wait (the transport's yield). Not installed; the public entry
 * point is include/courier/sim.h. */
#ifndef COURIER_TRANSPORT_SIM_H
#define COURIER_TRANSPORT_SIM_H

#include "transport/transport.h"

typedef struct cr_sim_world cr_sim_world;

/* A world of `ranks` virtual ranks; stack_bytes per rank (0: 256 KiB). */
cr_sim_world *cr_sim_world_create(int ranks, uint64_t seed, size_t stack_bytes);
void cr_sim_world_destroy(cr_sim_world *w);

/* Run entry(w, rank, arg) on every virtual rank until all have returned. Returns 0,
 * or -1 with a message in err when the world is stuck: every rank waits and no
 * block, wave or reduction can move (a deadlock; the ranks are abandoned). */
int cr_sim_world_run(cr_sim_world *w, void (*entry)(cr_sim_world *w, int rank, void *arg),
                     void *arg, char *err, size_t errlen);

/* Inside a virtual rank: the transport of a new comm. Collective: every rank
 * creates its comms in the same order, as with MPI_Comm_dup. */
cr_transport *cr_sim_transport_create(cr_sim_world *w, int rank, unsigned max_inflight);

/* Unequal speeds, drawn from the world's seed before it runs: each rank gets a
 * slowness uniform in [1, max_slowness] (1 or less: all equal), and when the
 * scheduler picks it, it runs only with the chance 1/slowness; after it runs, with
 * the chance stall_chance, it stalls (is not run) for 1 to 16 P steps. */
void cr_sim_world_set_speeds(cr_sim_world *w, double max_slowness, double stall_chance);
/* The slowness rank `rank` was given. */
double cr_sim_world_slowness(const cr_sim_world *w, int rank);

/* What the simulated machine charges (seconds per message, per byte, per record
 * handled), reported to the comms' `auto` by the transport; all 0: nothing. */
void cr_sim_world_set_costs(cr_sim_world *w, double message, double byte, double record);

/* Scheduling steps so far (the virtual clock advances one microsecond a step). */
uint64_t cr_sim_world_steps(const cr_sim_world *w);

#endif
