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

/* Local: the node's rings as a data plane (transport.h), to compose with MPI's
 * (near_far.h); NULL when s is. It reaches the other ranks of the node. A block is
 * copied into its pair's ring (send returns true: the caller has it back) or waits in
 * a queue, in its pair's order, for slots, held until complete gives it back; a block
 * larger than a slot travels in pieces. poll delivers each block where it lies (a
 * large one assembled first); a delivery may poll again. shared_sends counts the
 * blocks copied into rings since creation. */
cr_data_plane *shm_plane(shm_node *s);

/* Local: the node's area for the collectives (transport.h). */
const cr_node_area *shm_area(const shm_node *s);

#endif
