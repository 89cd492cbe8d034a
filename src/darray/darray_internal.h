/* The distributed array's state, shared by its two files: darray.c (the array, the
 * block distribution, the asynchronous mode) and lockstep.c (the lock-step mode).
 * Not installed. */
#ifndef COURIER_DARRAY_INTERNAL_H
#define COURIER_DARRAY_INTERNAL_H

#include "courier/darray.h"
#include "common/block.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct darray_visit darray_visit;
typedef struct cr_node_segment cr_node_segment;

/* A block of a rank of this rank's node, reached in place (docs/darray.md, "Within
 * a node"): its elements and its first index; part NULL for a rank of another node. */
typedef struct darray_near {
    char *part;
    uint64_t first;
} darray_near;

/* A growable byte vector. */
typedef struct darray_bytes {
    char *data;
    size_t len, cap;
} darray_bytes;

/* The lock-step route resolved for P: dimensions, most significant first (thesis
 * Algorithm 3). */
typedef struct lockstep_grid {
    int ndims;
    int dims[64];
    int fill[64];     /* ranks per step of coordinate d: product of dims[d+1 ..] */
    int shift[64];    /* log2 fill[d] where dims[d] and fill[d] are powers of two (a
                         coordinate is then a shift and a mask), else -1 */
} lockstep_grid;

/* An aggregation's operations (lockstep.c), chosen once at creation. */
typedef struct darray_aggregation darray_aggregation;

struct cr_darray {
    cr_comm *comm;
    cr_darray_opts opts;
    uint64_t n;
    size_t elem;      /* element darray_bytes */
    int rank, size;
    uint64_t first, count;
    cr_block_layout layout; /* the owners of indices */
    char *data;       /* count * elem: this rank's part of seg, or its own memory */
    cr_node_segment *seg; /* the node's blocks, or NULL (no node memory, or node off) */
    darray_near *near;    /* [size] while writes and reads of the node go in place,
                             else NULL: the array's storage is then reached only
                             through records, as without a node */
    int h_near_read;      /* a read served in place, delivered to this rank's reader */

    int h_write;      /* asynchronous mode: handler of writes */
    int h_read;       /* request type of reads */
    darray_visit **visits;
    int nvisits;
    char *scratch;    /* an asynchronous record being built: {index, value or args} */
    size_t scratch_cap;

    lockstep_grid grid;
    const darray_aggregation *agg; /* opts.aggregation's operations */
    bool by_mailbox;         /* lock-step stages move as mailbox records */
    int h_segment;           /* their handler */
    darray_bytes *staging;   /* [largest dimension] what each partner sent, this stage */
    int staging_width;       /* the largest dimension: staging's length */
    uint32_t stage_seq;      /* exchanges made so far (the same on every rank) */
    darray_bytes writes;     /* queued writes: {index, [stamp], value} records */
    darray_bytes reads;      /* queued reads: {index, dst} */
    uint64_t write_seq;
    cr_darray_stats stats;
};

/* Element i in the node's memory, or NULL when its owner is on another node (or the
 * array reaches no element in place). */
_Atomic uint64_t *cr_darray_near_elem(const cr_darray *a, int owner, uint64_t i);

/* Merge `src` into the element `dst` by the array's rule (both elem bytes; for
 * overwrite, src replaces dst). */
void cr_darray_apply(const cr_darray *a, void *dst, const void *src);
/* The same on an element other ranks of the node may merge into at the same time
 * (the array's near table is set): one atomic operation, or a compare-and-swap loop.
 * Only for the rules in-place access allows (8 bytes; overwrite, add, min, max). */
void cr_darray_apply_shared(const cr_darray *a, void *dst, const void *src);
/* How this rank merges into its own block: shared while the node's ranks reach it
 * in place, else plain (chosen once per batch or step, not per record). */
typedef void (*cr_darray_apply_fn)(const cr_darray *a, void *dst, const void *src);
cr_darray_apply_fn cr_darray_owned_apply(const cr_darray *a);

/* lockstep.c */
void cr_darray_grid_init(cr_darray *a);
/* Collective: register the handler of the mailbox exchange's segments (every array
 * registers it, whichever exchange it uses, so handler ids agree). */
void cr_darray_exchange_register(cr_darray *a);
void cr_darray_exchange_free(cr_darray *a);

/* Bytes helpers. */
void *darray_bytes_grow(darray_bytes *b, size_t more);
void darray_bytes_free(darray_bytes *b);

#endif
