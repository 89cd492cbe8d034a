/* A single-producer single-consumer queue of fixed-size slots in memory that two
 * processes (or threads) share: the MPI transport's path between the ranks of one
 * node (docs/shared_memory.md). The receiver owns the memory and initialises it; the
 * sender copies a whole block into a free slot and publishes it; the receiver takes
 * blocks in the order published, handles each where it lies, and releases its slot.
 *
 * Blocks are taken in order but slots may be released in any order: a handler that
 * waits and polls again takes later blocks while its own is still in use, and their
 * slots must come back to the sender without waiting for it (otherwise two ranks
 * whose handlers wait for each other's sends would both find their rings full).
 * So a slot is not a position in a circle: the sender publishes, with each block,
 * which slot holds it (Lamport's queue over an array of slot numbers: a head only the
 * sender writes, a release store after the data, an acquire load before it), and
 * every slot has a release counter only the receiver writes. Not installed. */
#ifndef COURIER_TRANSPORT_RING_H
#define COURIER_TRANSPORT_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* At most this many slots per ring. */
#define CR_RING_MAX_SLOTS 64

/* One side's view of a ring in shared memory (local to the process that holds it). */
typedef struct cr_ring {
    struct cr_ring_shared *shared; /* the head, the slot numbers, the counters, the slots */
    unsigned nslots;
    size_t slot_cap;               /* data bytes a slot holds */
    uint64_t head;                 /* sender: blocks published; receiver: the head it last read */
    uint64_t taken;                /* receiver: blocks taken (taken <= head) */
    unsigned next;                 /* sender: the slot to try first */
    uint32_t count[CR_RING_MAX_SLOTS]; /* sender: times each slot was filled;
                                      receiver: times each slot was released */
} cr_ring;

/* Bytes of shared memory for a ring of nslots slots of slot_cap bytes. Local. */
size_t cr_ring_bytes(unsigned nslots, size_t slot_cap);

/* Receiver, before any sender attaches: make `mem` (cr_ring_bytes, 64-byte aligned)
 * an empty ring and attach to it as its receiver. */
void cr_ring_init(cr_ring *r, void *mem, unsigned nslots, size_t slot_cap);
/* Sender: attach to a ring its receiver has initialised. */
void cr_ring_attach(cr_ring *r, void *mem, unsigned nslots, size_t slot_cap);

/* Sender: copy data[0, len) (len <= slot_cap) into a free slot with a tag of the
 * caller's (the barrier phase) and publish it. False, with nothing copied, if no
 * slot is free. */
bool cr_ring_put(cr_ring *r, const void *data, size_t len, unsigned tag);

/* Receiver: the oldest published slot not yet taken, or NULL. Its tag in *tag; the
 * slot is not taken (cr_ring_take). */
const char *cr_ring_peek(cr_ring *r, size_t *len, unsigned *tag);
/* Receiver: take the block cr_ring_peek returned; returns its slot, which
 * cr_ring_release gives back when the block's data is no longer needed (in any order). */
unsigned cr_ring_take(cr_ring *r);
void cr_ring_release(cr_ring *r, unsigned slot);

/* Sender: slots published and not yet released (0: the receiver is done with all). */
unsigned cr_ring_used(const cr_ring *r);

#endif
