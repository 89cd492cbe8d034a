/* The index that lets records of combining handlers meet in a send buffer
 * (cr_handler_type.key_len / combine; docs/dedup.md).
 *
 * One open-addressing table per rank, over all its send buffers: a slot names a
 * record by the buffer it sits in (the next hop and that buffer's generation, which
 * goes up each time the buffer is sent), the offset of its payload, and its final
 * destination and handler. Sending a buffer therefore invalidates its slots without
 * touching them. Lookups compare the key bytes in the buffer itself, so the table
 * stores no keys. Probing is bounded: when no slot is free within
 * CR_COMBINE_PROBES, the record is simply not indexed, and it is appended without
 * merging, which is correct, only less compact. Nothing is allocated per record. */
#ifndef COURIER_MAILBOX_COMBINE_H
#define COURIER_MAILBOX_COMBINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Slots of the table, a power of two of 32 bytes each: CR_COMBINE_MIN_SLOTS (32 KiB)
 * when the first record of a combining handler is appended, doubled whenever a
 * record finds no free slot within CR_COMBINE_PROBES, up to CR_COMBINE_MAX_SLOTS
 * (2 MiB); beyond that, records that find no slot are not indexed. */
#define CR_COMBINE_MIN_SLOTS (1u << 10)
#define CR_COMBINE_MAX_SLOTS (1u << 16)
#define CR_COMBINE_PROBES 8

typedef struct cr_combine_slot {
    uint32_t hash;    /* of (hop, dest, handler, key); 0 = never used */
    uint32_t hop;     /* the buffer: next hop */
    uint32_t gen;     /* ... and its generation when the record was indexed */
    uint32_t off;     /* offset of the payload in that buffer */
    int32_t dest;     /* final destination */
    uint32_t len;     /* payload length */
    uint16_t handler;
    uint16_t unused[3];
} cr_combine_slot;

typedef struct cr_combine_index {
    cr_combine_slot *slots; /* NULL until the first combining record */
    uint32_t nslots;
    uint64_t grown;         /* times the table doubled */
} cr_combine_index;

/* What a lookup or insert is about. */
typedef struct cr_combine_key {
    int hop, dest;
    uint16_t handler;
    uint32_t len;      /* payload length: only records of equal length merge */
    const void *key;
    size_t key_len;
    uint32_t hash;
} cr_combine_key;

void cr_combine_index_free(cr_combine_index *x);

uint32_t cr_combine_hash(int hop, int dest, uint16_t handler, const void *key, size_t key_len);

/* Where to look for, or put, `k`: *found is set when a live slot holds a record with
 * this key; returns that slot, or a free one to index the record in (NULL: none free
 * within the probe limit). `o` holds the buffers, to tell live slots. */
struct cr_outbufs;
cr_combine_slot *cr_combine_find(cr_combine_index *x, const struct cr_outbufs *o,
                                 const cr_combine_key *k, bool *found);

#endif
