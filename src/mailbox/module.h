/* How a module (src/coll, src/nbx, src/dedup, src/darray, src/container, src/graph)
 * attaches to a comm: the one interface between the mailbox core and what is built
 * on it. The
 * core never names a module; a module never reaches into struct cr_comm.
 *
 * A module describes itself with a table of operations (like Redis's dictType),
 * attaches its state to a comm on first use, and is then polled by the comm's event
 * loop and destroyed with the comm. Not installed. */
#ifndef COURIER_MAILBOX_MODULE_H
#define COURIER_MAILBOX_MODULE_H

#include "courier/mailbox.h"
#include "courier/route.h"
#include "courier/tune.h"
#include "transport/transport.h" /* the channel types */

#include <stdbool.h>
#include <stdint.h>

typedef struct cr_module_type {
    const char *name;
    /* Called by the event loop after each poll of the network. Returns -1 when the
     * module has nothing in flight, else the number of steps it made (0: in flight,
     * no step). While any module is in flight the loop yields but never sleeps: its
     * work completes within message time. */
    int (*poll)(cr_comm *comm, void *state);
    /* cr_comm_destroy, after the final barrier. Frees the state. */
    void (*destroy)(cr_comm *comm, void *state);
    /* cr_stats_reset: zero the module's own counters (optional). */
    void (*stats_reset)(cr_comm *comm, void *state);
    /* cr_stats_print, after the comm's counters: print the module's (optional). It is
     * collective, so a module that has it must attach on every rank, in a collective
     * call. */
    void (*stats_print)(cr_comm *comm, void *state, FILE *out);
    /* cr_barrier, on entry, from the program (never inside a handler): send what the
     * module holds back on this rank, and whatever else a new phase asks of it
     * (optional). It may call cr_async; the barrier then delivers it like every
     * message sent before it. A module that holds records back must do so only
     * outside handlers, so that nothing is held once the barrier has begun. */
    void (*drain)(cr_comm *comm, void *state);
    /* COURIER_ROUTE=auto moved the comm to another route (at the end of a barrier,
     * nothing in flight): update whatever the module keeps that depends on the route
     * (optional). */
    void (*route_changed)(cr_comm *comm, void *state);
} cr_module_type;

/* The module's state on this comm, or NULL if it has not attached. Local. */
void *cr_module_state(cr_comm *comm, const cr_module_type *type);
/* Attach `state` (owned by the module, freed by its destroy). Local: modules attach
 * on first use, which every rank reaches in the same order as any collective. */
void cr_module_attach(cr_comm *comm, const cr_module_type *type, void *state);
/* The module's state on this comm, or a new zeroed one of `size` bytes attached to
 * it (then *fresh is true and the caller registers its handlers; `type`'s destroy
 * must free it, cr_module_state_free does). Local. */
void *cr_module_state_or_new(cr_comm *comm, const cr_module_type *type, size_t size, bool *fresh);
/* A destroy for state that is one allocation. */
void cr_module_state_free(cr_comm *comm, void *state);

/* What a module may ask of the comm. */
/* True inside a handler (modules refuse to start collective work there). */
bool cr_module_in_handler(const cr_comm *comm);
/* Where the comm keeps how deep in handlers it is (> 0: a handler runs), for a hot
 * path that asks cr_module_in_handler's question per record: read it, never write
 * it. Valid as long as the comm. Local. */
const int *cr_module_handler_depth(const cr_comm *comm);
/* True while the comm waits or runs its loop (a second wait would nest). */
bool cr_module_busy(const cr_comm *comm);
/* Run the event loop, handlers included, until done(comm, arg); `reason` names the
 * wait for the watchdog and the trace. User code only. */
void cr_module_wait(cr_comm *comm, bool (*done)(cr_comm *, void *), void *arg,
                    const char *reason);
/* The wait's done() found work of its own: the loop must not back off. */
void cr_module_note_work(cr_comm *comm);
/* Which ranks share a node (route.h), and the costs the comm's cost model
 * predicts with (tune.h: measured, a calibration file's, the simulated machine's or
 * the defaults, slowed for ranks that share processors). Both valid as long as the
 * comm. Local. */
const cr_layout *cr_module_layout(const cr_comm *comm);
const cr_tune_costs *cr_module_tune_costs(const cr_comm *comm);
/* The ranks of this comm on this rank's machine, which share its processors (MPI's
 * shared-memory node, not COURIER_NODE_SIZE's virtual ones); 0 when the transport's
 * ranks do not share processors in time (the simulation). Local. */
int cr_module_machine_ranks(const cr_comm *comm);
/* The memory this rank shares with the other ranks of its node (transport.h), or
 * NULL. Local. */
const cr_node_area *cr_module_node_area(cr_comm *comm);
/* Memory shared by the ranks of a node (node_segment.c): the comm's layout names the
 * nodes (MPI's shared-memory nodes cut into COURIER_NODE_SIZE virtual nodes; the
 * simulation's virtual nodes). Collective: a segment every rank of its node maps, of
 * a part per rank, `bytes` this rank's (the ranks may ask for different sizes), part i
 * that of the node's i-th rank (in comm-rank order), 64-byte aligned and zeroed; NULL
 * on every rank when some node cannot share memory (the transport has none, or a node
 * spans machines). */
typedef struct cr_node_segment cr_node_segment;
cr_node_segment *cr_module_node_segment_create(cr_comm *comm, size_t bytes);
/* Collective: a node barrier, then the segment is unmapped. NULL: nothing. */
void cr_module_node_segment_destroy(cr_node_segment *s);
/* Local: the node's ranks, this rank's place among them, the comm rank of the i-th,
 * and the i-th's part. */
int cr_module_node_segment_size(const cr_node_segment *s);
int cr_module_node_segment_rank(const cr_node_segment *s);
int cr_module_node_segment_member(const cr_node_segment *s, int i);
void *cr_module_node_segment_part(const cr_node_segment *s, int i);
/* Collective over the node's ranks: returns once every one of them has called it,
 * with what each wrote to the segment before its call visible to all after theirs.
 * Runs handlers while it waits (the comm's loop, backing off), like cr_barrier; user
 * code only (not from a handler). */
void cr_module_node_segment_barrier(cr_node_segment *s);

/* Channels: a module's own tagged point-to-point messages and non-blocking
 * collectives, apart from the mailbox's records and from other modules' channels,
 * on whichever transport the comm runs (MPI, or the simulation, where a seed picks
 * the order in which probes see the sources). The semantics are the transport's
 * (src/transport/transport.h): MPI's, for the subset below. None of these runs
 * handlers; a module waits for them inside cr_module_wait, testing from done(). */
cr_chan *cr_module_chan_open(cr_comm *comm); /* collective */
void cr_module_chan_close(cr_comm *comm, cr_chan *ch); /* collective */
void cr_module_chan_isend(cr_comm *comm, cr_chan *ch, int dest, int tag, const void *buf,
                          size_t len, bool synchronous, cr_chan_req *r);
void cr_module_chan_irecv(cr_comm *comm, cr_chan *ch, int src, int tag, void *buf, size_t len,
                          cr_chan_req *r);
void cr_module_chan_isendv(cr_comm *comm, cr_chan *ch, int dest, int tag, const char *base,
                           const size_t *offs, const size_t *lens, int n, cr_chan_req *r);
void cr_module_chan_irecvv(cr_comm *comm, cr_chan *ch, int src, int tag, char *base,
                           const size_t *offs, const size_t *lens, int n, cr_chan_req *r);
bool cr_module_chan_probe(cr_comm *comm, cr_chan *ch, int src, int tag, cr_chan_msg *m);
void cr_module_chan_recv_probed(cr_comm *comm, cr_chan *ch, cr_chan_msg *m, void *buf);
bool cr_module_chan_test(cr_comm *comm, cr_chan *ch, cr_chan_req *r);
/* True once all n have completed (completed ones are skipped on later calls). */
bool cr_module_chan_testall(cr_comm *comm, cr_chan *ch, cr_chan_req *r, size_t n);
void cr_module_chan_ibarrier(cr_comm *comm, cr_chan *ch, cr_chan_req *r); /* collective */
void cr_module_chan_ialltoall(cr_comm *comm, cr_chan *ch, const void *send, void *recv,
                              size_t bytes, cr_chan_req *r); /* collective */
void cr_module_chan_ireduce_scatter_sum(cr_comm *comm, cr_chan *ch, const uint64_t *in,
                                        uint64_t *out, cr_chan_req *r); /* collective */

/* Blocking reductions by the comm's transport (MPI_Allreduce, or the simulation's),
 * for a module's set-up and its decisions between phases: n (1 .. 32) values reduced
 * by CR_OP_SUM, CR_OP_MIN or CR_OP_MAX, every rank calls in the same order, no
 * handler runs inside. Records in flight stay in
 * flight. Collective. */
void cr_module_allreduce_u64(cr_comm *comm, const uint64_t *in, uint64_t *out, int n,
                             cr_op op);
void cr_module_allreduce_double(cr_comm *comm, const double *in, double *out, int n,
                                cr_op op);

/* Seconds on the transport's clock: wall time under MPI, virtual time in the
 * simulation. Local. */
double cr_module_now(const cr_comm *comm);

/* The rank a record sent to `dest` now goes to first: `dest` itself, or the route's
 * next hop (this rank when dest is this rank). Local. */
int cr_module_next_hop(const cr_comm *comm, int dest);
/* A number that changes every time the send buffer a record to `dest` would join is
 * sent: equal values before and after some calls mean a record appended in between
 * still waits in that buffer. Local. */
uint32_t cr_module_send_epoch(const cr_comm *comm, int dest);
/* The rank's counters, for modules that count their own work (cr_stats fields
 * documented as theirs). Local; owned by the comm. */
cr_stats *cr_module_stats(cr_comm *comm);
/* Print min / mean / max over the ranks of n counters named names[i], each given by
 * this rank as values[i], under `title`, on rank 0, as cr_stats_print does. Collective;
 * call it outside handlers. */
void cr_module_print_counters(cr_comm *comm, FILE *out, const char *title,
                              const char *const *names, const uint64_t *values, size_t n);
/* The id the next cr_register / cr_register_type on this comm will return. A module
 * whose handler needs its own id must know it before registering: the handler may
 * run inside the registration, for a record a faster rank sent. Local. */
int cr_module_next_handler_id(const cr_comm *comm);
/* cr_register_type for a module's handler whose meaning depends on more than its
 * functions (a request type's key length and serve function): `extra` joins what the
 * ranks compare at registration, `kind` names the handler in the mismatch message.
 * Collective, may run handlers, as cr_register_type. */
int cr_module_register(cr_comm *comm, const cr_handler_type *type, void *user,
                       const char *kind, uint64_t extra);

#endif
