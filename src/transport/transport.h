/* The transport: the only code that moves bytes between ranks. The mailbox core
 * (src/mailbox) sees a rank's transport through small tables of operations and
 * nothing else, the way Redis's ae.c sees its event backends and bale's conveyors see
 * their porters: the data plane (the mailbox's blocks), the collectives over the
 * comm, module channels, the host (clock, waiting, reports, machine facts) and the
 * node's shared memory, each a table of its own, one file per implementation.
 *
 *   mpi.c       real runs: synchronous sends with a cap on those in flight, probe
 *               or pre-posted receives, phase-parity tags, non-blocking reductions;
 *   mpi_shm.c   a data plane between the ranks of one node: rings in shared memory
 *               (ring.c), composed with MPI's by near_far.c;
 *   sim.c       P virtual ranks in one process, scheduled deterministically from a
 *               seed (docs/simulation.md).
 *
 * A transport instance belongs to one rank of one comm. Blocks handed to send()
 * stay owned by the data plane until complete() gives them back. Not installed. */
#ifndef COURIER_TRANSPORT_H
#define COURIER_TRANSPORT_H

#include "courier/types.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cr_transport cr_transport;

/* The words a termination wave sums: {kind, data messages sent, handled, records
 * created, their payload bytes, nanoseconds in the epoch, records merged on their
 * way} (src/mailbox/termination.h). */
#define CR_WAVE_WORDS 7

/* A block that arrived: valid only during the call. */
typedef void (*cr_deliver_fn)(void *arg, int src, const char *data, size_t len);
/* A block whose send completed, handed back to its owner for reuse. */
typedef void (*cr_give_back_fn)(void *arg, char *data, size_t cap);

/* Memory every rank of a node maps: CR_NODE_AREA_BYTES per rank, 64-byte aligned and
 * zeroed at creation, base[i] being the area of the node's i-th rank (in the comm's
 * rank order); `rank` is this rank's i. The collectives synchronise in it with
 * atomics (src/coll/shared.c). */
#define CR_NODE_AREA_BYTES ((size_t)20 << 10)
typedef struct cr_node_area {
    int rank, size;
    char *const *base;
} cr_node_area;

/* Memory shared by the ranks of one node, for a module to hold the node's data once
 * (src/mailbox/node_segment.c): `size` parts, one per member in the order of their
 * comm ranks, each of the size its member asked for, 64-byte aligned and zeroed at
 * creation; `rank` is this rank's part. Every member maps every part. */
typedef struct cr_node_mem {
    int rank, size;
    char **part;
    void *impl; /* the transport's */
} cr_node_mem;

/* Node memory operations, a table of their own. */
typedef struct cr_node_mem_ops {
    /* The node's shared area (local), or NULL if this rank has none. */
    const cr_node_area *(*area)(cr_transport *t);
    /* Collective over the comm: the ranks passing the same `node` (size of them, this
     * one the rank-th in comm-rank order; ranks of one of the transport's nodes, so
     * they can share memory) get one segment in *out, `bytes` this rank's part (the
     * members may ask for different sizes); part[i] may be read only once every
     * member has returned from create (the caller synchronises). False on
     * every member of a node whose ranks cannot map one another's memory, or whose
     * shared memory has no room for the parts (out untouched). */
    bool (*create)(cr_transport *t, int node, int size, int rank, size_t bytes,
                   cr_node_mem *out);
    /* Collective over the members, once none of them reads the segment: unmap it. */
    void (*destroy)(cr_transport *t, cr_node_mem *m);
} cr_node_mem_ops;

/* A module channel: tagged point-to-point messages and non-blocking collectives in a
 * space of their own, apart from the mailbox's blocks and from every other channel
 * (MPI: a duplicated communicator; the simulation: a channel of the virtual world). */
typedef struct cr_chan cr_chan;
/* A channel operation in progress (MPI's request, or the simulation's). Inactive
 * (tests done) when zeroed, and again once a test has returned true. */
typedef struct cr_chan_req {
    _Alignas(8) unsigned char opaque[16];
} cr_chan_req;
/* A message found by probe, to be received by recv_probed. */
typedef struct cr_chan_msg {
    int source;
    size_t len;
    _Alignas(8) unsigned char opaque[16];
} cr_chan_msg;
#define CR_CHAN_ANY_SOURCE (-1)

/* ---- the data plane: the mailbox's blocks (all local) */
typedef struct cr_data_plane cr_data_plane;
typedef struct cr_data_ops {
    /* Sends that may start now without exceeding the cap on sends in flight. */
    int (*slots_free)(cr_data_plane *d);
    int (*inflight)(cr_data_plane *d);
    /* Whether this plane carries blocks to `dest`; NULL: to every rank. */
    bool (*reaches)(const cr_data_plane *d, int dest);
    /* Start sending data[0, len) to `dest` (slots_free() > 0). A block is sent in the
     * rank's current barrier phase and received only in that phase, and one pair's
     * blocks arrive in the order sent. Returns true if the block was copied on its way
     * (the caller has it back at once); else the plane owns the block (of capacity
     * cap) until complete() gives it back. */
    bool (*send)(cr_data_plane *d, int dest, char *data, size_t len, size_t cap);
    /* Give back the blocks whose sends completed; returns how many. A send completes
     * when the receiver has taken the block (synchronous mode). */
    int (*complete)(cr_data_plane *d, cr_give_back_fn give_back, void *arg);
    /* Hand up to `budget` arrived blocks of the current phase to `deliver`; returns
     * how many. deliver may call send() and poll() again. */
    size_t (*poll)(cr_data_plane *d, int budget, cr_deliver_fn deliver, void *arg);
    /* A barrier ended: send and receive in the next phase from now on. */
    void (*next_phase)(cr_data_plane *d);
    /* Blocks sent through memory shared with the receiver's node since creation;
     * NULL when the plane has no such path. */
    uint64_t (*shared_sends)(const cr_data_plane *d);
} cr_data_ops;

struct cr_data_plane {
    const cr_data_ops *ops;
};

/* ---- collective operations over the comm's ranks */
typedef struct cr_group_ops {
    /* Termination waves: contribute in[0 .. CR_WAVE_WORDS) to a non-blocking sum;
     * wave_test returns true once every rank has contributed, with the sums in out. */
    void (*wave_join)(cr_transport *t, const uint64_t in[CR_WAVE_WORDS]);
    bool (*wave_test)(cr_transport *t, uint64_t out[CR_WAVE_WORDS]);
    /* A blocking reduction for set-up and statistics: every rank calls it in the
     * same order; op is CR_OP_SUM, CR_OP_MIN or CR_OP_MAX. Doubles reduce with the
     * same operations. */
    void (*allreduce_u64)(cr_transport *t, const uint64_t *in, uint64_t *out, int n,
                          cr_op op);
    void (*allreduce_double)(cr_transport *t, const double *in, double *out, int n,
                             cr_op op);
    /* node_of[r] for every rank r of the comm, the lowest rank on r's node (the ranks
     * that share memory under MPI; the simulation's ranks share one). */
    void (*nodes)(cr_transport *t, int *node_of);
} cr_group_ops;

/* ---- module channels (local unless marked collective; none runs handlers) */
typedef struct cr_chan_ops {
    /* Collective: a new channel, the k-th of every rank's calls on this comm. */
    cr_chan *(*open)(cr_transport *t);
    /* Collective: free it (no operation in progress). */
    void (*close)(cr_chan *ch);
    /* Send len bytes of buf to dest under tag (buf must stay until r completes);
     * synchronous: complete only once the receiver has matched it. */
    void (*isend)(cr_chan *ch, int dest, int tag, const void *buf, size_t len,
                  bool synchronous, cr_chan_req *r);
    /* Receive into buf (at most len bytes) the next message from src under tag.
     * Receives of one source and tag match in the order they were posted, and a
     * source's messages under one tag arrive in the order they were sent. */
    void (*irecv)(cr_chan *ch, int src, int tag, void *buf, size_t len, cr_chan_req *r);
    /* The same with the message made of (or scattered into) n pieces of base: piece
     * k is lens[k] bytes at base + offs[k] (offs and lens are copied). */
    void (*isendv)(cr_chan *ch, int dest, int tag, const char *base, const size_t *offs,
                   const size_t *lens, int n, cr_chan_req *r);
    void (*irecvv)(cr_chan *ch, int src, int tag, char *base, const size_t *offs,
                   const size_t *lens, int n, cr_chan_req *r);
    /* A message under tag from src (or CR_CHAN_ANY_SOURCE) that has arrived: true,
     * with its source and length in *m, which recv_probed then receives. */
    bool (*probe)(cr_chan *ch, int src, int tag, cr_chan_msg *m);
    void (*recv_probed)(cr_chan *ch, cr_chan_msg *m, void *buf);
    /* True once the operation has completed (then it is inactive). */
    bool (*test)(cr_chan *ch, cr_chan_req *r);
    /* Collective, non-blocking: a barrier; every rank sends `bytes` from
     * send + d * bytes to rank d and receives into recv + s * bytes from rank s; the
     * sum over the ranks of in[0..P), rank r getting element r in *out. */
    void (*ibarrier)(cr_chan *ch, cr_chan_req *r);
    void (*ialltoall)(cr_chan *ch, const void *send, void *recv, size_t bytes,
                      cr_chan_req *r);
    void (*ireduce_scatter_sum)(cr_chan *ch, const uint64_t *in, uint64_t *out,
                                cr_chan_req *r);
} cr_chan_ops;

/* ---- the host: time, waiting, reports to rank 0 and machine facts (local unless
 * marked collective) */
typedef struct cr_host_ops {
    /* Seconds on this transport's clock (wall time; virtual time in the simulation). */
    double (*now)(cr_transport *t);
    /* NULL for real transports: the mailbox waits in its libev loop. The simulation
     * gives the processor to another virtual rank instead. */
    void (*yield)(cr_transport *t);
    /* Small control messages to rank 0 (the watchdog); the three are NULL if
     * unsupported. Start sending a report; returns false while the previous one is
     * unmatched. */
    bool (*report_send)(cr_transport *t, const void *data, size_t len);
    /* Rank 0: take one arrived report into buf (len bytes); returns false if none. */
    bool (*report_take)(cr_transport *t, void *buf, size_t len);
    /* Collective, at the end: how many reports went out, so rank 0 can take the rest. */
    uint64_t (*reports_sent)(cr_transport *t);
    /* The ranks of this comm on this rank's machine (MPI's shared-memory node, not
     * COURIER_NODE_SIZE's virtual ones), which share its processors; NULL when the
     * transport's ranks do not share processors in time (the simulation). */
    int (*machine_ranks)(cr_transport *t);
    /* What the machine charges, when the transport prescribes it (the simulation, as
     * its cr_sim_opts say): seconds per message, per byte and per record handled in
     * out[0 .. 3); false (or NULL) when it does not. */
    bool (*machine_costs)(cr_transport *t, double out[3]);
} cr_host_ops;

/* A transport: a table of tables, the way Redis's ae.c sees a backend. The data
 * plane is per instance (the MPI transport composes its node's rings with MPI's
 * sends, src/transport/near_far.c), so it hangs off the instance. */
typedef struct cr_transport_ops {
    const char *name;
    const cr_group_ops *group;
    const cr_chan_ops *chan;
    const cr_host_ops *host;
    /* Memory shared within a node; NULL when the transport has none. */
    const cr_node_mem_ops *node_mem;
    /* Collective: finish (every send complete) and free. */
    void (*destroy)(cr_transport *t);
} cr_transport_ops;

struct cr_transport {
    const cr_transport_ops *ops;
    cr_data_plane *data;
    int rank;
    int size;
};

#endif
