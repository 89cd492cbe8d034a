/* The MPI transport's path between the ranks of one node (docs/shared_memory.md):
 * per ordered pair of ranks that share memory, a ring of slots (ring.h) in a segment
 * from MPI_Win_allocate_shared. A block to such a rank is copied into its ring, and
 * the sender has its block back at once; the receiver hands each slot to the mailbox
 * where it lies. MPI still carries everything off the node, the waves and the
 * channels. Not installed. */
#ifndef COURIER_TRANSPORT_MPI_SHM_H
#define COURIER_TRANSPORT_MPI_SHM_H

#include "transport/transport.h"

#include <mpi.h>

typedef struct shm_node shm_node;

typedef struct shm_opts {
    size_t slot_bytes;   /* a slot's data bytes: the largest block the ring takes */
    size_t budget_bytes; /* shared memory a rank offers its node's senders (0: off) */
    unsigned node_size;  /* virtual nodes of this many consecutive ranks (0: MPI's) */
    unsigned max_slots;  /* slots per pair at most */
} shm_opts;

/* Collective over comm: the rings between this rank and the others of its node (MPI's
 * shared-memory node, cut into virtual nodes of node_size). NULL, on every rank of
 * the node, when the node has one rank or the budget does not give each pair 2
 * slots. */
shm_node *shm_node_create(MPI_Comm comm, const shm_opts *opts);
/* Collective over the node, with nothing in flight: free the segment. */
void shm_node_destroy(shm_node *s);

/* Local. True if blocks to comm rank `dest` go through a ring. */
bool shm_reaches(const shm_node *s, int dest);

/* Local: send data[0, len) (a block of capacity cap) to dest, tagged with the
 * sender's phase parity. True if it was copied into the ring (the caller has the block
 * back); false if it waits in the queue, in its pair's order, for slots: the node holds
 * it until shm_complete gives it back. A block larger than a slot travels in pieces. */
bool shm_send(shm_node *s, int dest, char *data, size_t len, size_t cap, unsigned parity);
/* Local: blocks the node holds (queued for a slot). */
int shm_held(const shm_node *s);
/* Local: copy the queued blocks that fit now, in each pair's order, and give each
 * back. Returns how many left the queue. */
int shm_complete(shm_node *s, cr_give_back_fn give_back, void *arg);
/* Local: deliver up to budget blocks of phase parity `parity` from the rings, each
 * where it lies (a large one assembled first); deliver may poll again. Returns how
 * many. */
size_t shm_poll(shm_node *s, int budget, unsigned parity, cr_deliver_fn deliver, void *arg);

/* Local: the node's area for the collectives (transport.h). */
const cr_node_area *shm_area(const shm_node *s);

/* Local: blocks copied into rings since creation. */
uint64_t shm_sends(const shm_node *s);

#endif
