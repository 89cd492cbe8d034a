/* Courier darray: a distributed array of fixed-size elements.
 *
 * The array's n elements are block-distributed over the comm's ranks (rank r holds
 * the indices cr_darray_block gives it; blocks differ by at most one element). Each
 * rank reaches its own block directly (cr_darray_local) and every element through
 * one of two modes (docs/darray.md):
 *
 *  - asynchronous, on the mailbox: cr_darray_async_write / _read / _visit send one
 *    message each, merged on their way (include/courier/dedup.h: writes by the
 *    array's merge rule, reads as requests merged and coalesced); everything sent
 *    before a cr_barrier has been applied, and every read answered, when it returns;
 *  - lock-step (the thesis behind this module,
 *    Peters 2024, docs/references.md, chapter 4): cr_darray_read
 *    and cr_darray_write only queue; cr_darray_step executes every queued write,
 *    then every queued read, in bulk exchanges along a route (direct: one all-to-all;
 *    grid or hypercube: one exchange per dimension), merging identical requests at
 *    every hop by hashing or by sorting, and splitting the replies again on the way
 *    back. Each stage is one sparse exchange (nbx.h) between the ranks of a
 *    dimension, on either transport; with opts.exchange =
 *    CR_DARRAY_EXCHANGE_MAILBOX it is mailbox records and a cr_barrier instead,
 *    with the same results and statistics.
 *
 * Writes combine by the merge rule chosen at creation: overwrite, add, min, max or
 * a user function; the element's old value takes part (add adds to it).
 *
 * Errors (docs/architecture.md): misuse (bad options, an index out of range, a
 * collective from a handler) ends the job with one line; save and load return -1
 * with one line in `err`, the same on every rank.
 */
#ifndef COURIER_DARRAY_H
#define COURIER_DARRAY_H

#include "courier/dedup.h"
#include "courier/io.h"
#include "courier/mailbox.h"
#include "courier/route.h"
#include "courier/sort.h"
#include "courier/types.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_darray cr_darray;

typedef enum cr_darray_aggregation {
    CR_DARRAY_AGG_NONE = 0, /* every request travels on its own */
    CR_DARRAY_AGG_HASH,     /* identical requests merged through a hash table per hop
                               (thesis 4.4.1, 4.5.1) */
    CR_DARRAY_AGG_SORT,     /* requests sorted once, merged presorted at every hop,
                               replies split by exponential search (4.4.3, 4.5.3) */
    CR_DARRAY_AGG_AUTO,     /* per step and kind (writes, reads): hash where identical
                               requests are common over all ranks, else none
                               (docs/darray.md, "Aggregation auto"); one small
                               reduction per step decides, the same on every rank */
} cr_darray_aggregation;

/* How a lock-step stage moves its records between the ranks of a dimension. Both
 * give the same results and the same statistics (messages count the non-empty
 * segments either way). */
typedef enum cr_darray_exchange {
    CR_DARRAY_EXCHANGE_AUTO = 0,   /* CR_DARRAY_EXCHANGE_COLLECTIVE */
    CR_DARRAY_EXCHANGE_COLLECTIVE, /* one sparse exchange (nbx.h) per stage of the
                                      non-empty segments: either transport */
    CR_DARRAY_EXCHANGE_MAILBOX,    /* each segment as mailbox records, then a
                                      cr_barrier: runs on either transport */
} cr_darray_exchange;

/* Whether the ranks of a node reach each other's elements in place (docs/darray.md,
 * "Within a node"). */
typedef enum cr_darray_node {
    CR_DARRAY_NODE_RECORDS = 0, /* the default: every element of another rank through
                                   records, so an owner's own changes to its block are
                                   seen by readers only once it handles their requests */
    CR_DARRAY_NODE_IN_PLACE,    /* in place where it can be: a write or read (either
                                   mode) of an element whose owner shares this rank's
                                   node (route.h's layout) merges into or reads the
                                   owner's block in the node's shared memory, with no
                                   record, when the array's rule is one atomic
                                   operation (8-byte elements; overwrite, add, min or
                                   max) and it has no visitor; otherwise as records
                                   (lock-step overwrites too: their stamps decide) */
} cr_darray_node;

typedef struct cr_darray_opts {
    /* How a write meets the element (operators of courier/types.h):
     * 0 or CR_OP_LAST  overwrite. Lock-step: the write of the highest rank wins, of
     *                  its writes to one index its last. Async: one of the writes wins
     *                  (which one depends on arrival order).
     * CR_OP_SUM, MIN, MAX  element = element op value (one 8-byte value of `type`)
     * CR_OP_USER       combine(element, value, elem_size, combine_user)
     * Other operators are refused at creation. */
    cr_op merge;
    cr_dtype type; /* SUM, MIN, MAX: CR_INT64, CR_UINT64 or CR_DOUBLE. With 8-byte
                      elements and any merge, a save records it (CR_INT64 unless
                      set) and a load into an array of another type is refused */
    /* USER: merge `src` into `dst` (both elem_size bytes); must be commutative and
     * associative, since requests merge in any order. */
    void (*combine)(void *dst, const void *src, size_t elem_size, void *user);
    void *combine_user;
    cr_route route;     /* lock-step: CR_ROUTE_DIRECT, CR_ROUTE_GRID (dims multiplying to
                           P, or 0 dims: two chosen from P), CR_ROUTE_HYPERCUBE (one
                           dimension per prime factor of P: all 2s when P is a power of
                           two), or CR_ROUTE_AUTO: each step's writes and reads take
                           the one of direct, two or three dimensions and the hypercube
                           that the cost model of courier/tune.h predicts cheapest for
                           them, from the comm's costs (the step's request count
                           and, unless the aggregation is none, the sketch of
                           aggregation auto: reductions a step, shared with it);
                           other kinds are an error */
    cr_darray_aggregation aggregation; /* lock-step */
    int coalesce_reads; /* async reads also join an identical read in flight */
    cr_darray_exchange exchange; /* lock-step: how a stage's records move */
    cr_darray_node node; /* both modes, within a node */
} cr_darray_opts;

/* Defaults: overwrite, direct, hash aggregation, reads coalesced. Local. */
void cr_darray_opts_init(cr_darray_opts *opts);

/* Parse "none", "hash", "sort" or "auto". Returns 0, or -1 with `out` unchanged and a
 * one-line message naming the text and the names it accepts in err (NULL: none).
 * Local. */
int cr_darray_aggregation_parse(const char *text, cr_darray_aggregation *out, char *err,
                                size_t errlen);

/* The block distribution (pure, local): the owner of index i, and the first index
 * and count of rank r's block, for n elements over p ranks. */
int cr_darray_owner(uint64_t n, int p, uint64_t i);
void cr_darray_block(uint64_t n, int p, int r, uint64_t *first, uint64_t *count);

/* Create an array of n elements of elem_size bytes (1 .. 4096), zeroed. Collective
 * (registers handlers: may run handlers, as cr_register). A bad option ends the job
 * with one line. `opts` may be NULL (the defaults); it is copied. */
cr_darray *cr_darray_create(cr_comm *comm, uint64_t n, size_t elem_size,
                            const cr_darray_opts *opts);
/* Free the array. Collective: call it after a barrier or a step, on every rank. */
void cr_darray_destroy(cr_darray *a);

uint64_t cr_darray_length(const cr_darray *a);
size_t cr_darray_elem_size(const cr_darray *a);
cr_comm *cr_darray_comm(const cr_darray *a);
/* This rank's block: its elements (owned by the array), first index and count. Local. */
void *cr_darray_local(cr_darray *a, uint64_t *first, uint64_t *count);

/* ---- asynchronous mode (on the mailbox; complete at cr_barrier) ---- */

/* In place within a node (opts.node): while an element's owner shares this rank's
 * node, its asynchronous writes merge into it at once (atomically) and its reads take
 * its value at once (fn still runs later, as a handler). Any rank of the node may then
 * change an element at any time between barriers: an owner reads its block
 * (cr_darray_local) after a cr_barrier and changes it between barriers only through
 * the array, and asynchronous writes are not mixed with lock-step steps in one phase.
 * Registering a visitor turns in-place access off for the array (a visit changes the
 * element on its owner, which an in-place merge would race with). */

/* Merge `value` (elem_size bytes, copied) into element i by the merge rule. Local;
 * may run handlers as cr_async does. */
void cr_darray_async_write(cr_darray *a, uint64_t i, const void *value);
/* Read element i: fn(comm, value, elem_size, ctx) runs on this rank when the value
 * arrives (as a handler; never inside this call). Local; may run handlers. */
void cr_darray_async_read(cr_darray *a, uint64_t i, cr_dedup_reply_fn fn, void *ctx);

/* Runs on the owner of element i with a pointer to it. */
typedef void (*cr_darray_visit_fn)(cr_darray *a, uint64_t i, void *elem, const void *args,
                                   size_t len, void *user);
/* Register a visitor; returns its id. Collective, as cr_register; on an array with
 * in-place access it is also a barrier of the node's ranks (runs handlers). */
int cr_darray_register_visit(cr_darray *a, cr_darray_visit_fn fn, void *user);
/* Run visitor `visit` on element i's owner with `len` bytes of `args` (copied).
 * Local; may run handlers. */
void cr_darray_async_visit(cr_darray *a, uint64_t i, int visit, const void *args, size_t len);

/* ---- lock-step mode (either transport) ---- */

/* Queue a write of `value` (copied) to element i, or a read of element i into
 * `dst` (elem_size bytes, written by the next step). Local; never runs handlers. */
void cr_darray_write(cr_darray *a, uint64_t i, const void *value);
void cr_darray_read(cr_darray *a, uint64_t i, void *dst);
/* Execute every queued write, then every queued read. Collective; not from a
 * handler. Mailbox traffic keeps being handled while it waits; with the mailbox
 * exchange every stage is also a cr_barrier (all earlier traffic completes). With
 * in-place access (opts.node) the node's writes and reads are made in place between
 * two barriers of the node's ranks, one as the step begins and one once its writes
 * have landed; the owner's block holds the step's writes when it returns. */
void cr_darray_step(cr_darray *a);

/* What this rank's lock-step steps did, summed since creation (or the last reset). */
/* The grids route auto chooses among (docs/tuning.md, "Lock-step"), in the order of
 * cr_darray_stats.auto_routes: "direct", "grid", "grid3", "hypercube". */
#define CR_DARRAY_AUTO_ROUTES 4
extern const char *const cr_darray_auto_route_names[CR_DARRAY_AUTO_ROUTES];

typedef struct cr_darray_stats {
    uint64_t steps;
    uint64_t requests;          /* reads and writes queued on this rank */
    uint64_t merged_local;      /* ... merged with another of this rank's before leaving */
    uint64_t merged_hops;       /* requests this rank merged as a hop or as the owner */
    uint64_t reached_owner;     /* requests that reached this rank as their owner:
                                   lock-step, those that came from other ranks in the
                                   last exchange (before the owner merges them: the load
                                   of a hot owner's last stage); async, every write
                                   record and read request handled here */
    uint64_t messages;          /* non-empty exchanges with other ranks (reads' replies
                                   included) */
    uint64_t bytes;             /* bytes in them */
    uint64_t alltoall_messages; /* lock-step: the messages the same exchanges would
                                   start were each a dense all-to-all among the
                                   dimension's partners, as MPI_Alltoallv's pairwise
                                   algorithm does: n - 1 per exchange in a dimension
                                   of n, empty segments included */
    /* Lock-step: this rank's local work in its steps, nanoseconds of the monotonic
     * clock, never waiting for another rank (thesis Figure 5.2's phases): */
    uint64_t write_ns;          /* the source's aggregation (sort or hash, and the
                                   first dimension's buckets) of its writes and reads */
    uint64_t hop_ns;            /* merging at the later hops and at the owner, and
                                   the owner's applying and serving */
    uint64_t read_ns;           /* splitting the replies on their way back and handing
                                   them to the readers */
    uint64_t hop_records;       /* records that reached this rank in the exchanges
                                   towards the owners (what hop_ns merged) */
    uint64_t read_records;      /* replies this rank split on their way back */
    uint64_t auto_merged;       /* aggregation auto: the writes or reads of a step it
                                   merged (hash) */
    uint64_t auto_plain;        /* ... and those it sent unmerged (none) */
    uint64_t in_place;          /* writes and reads of this rank, of either mode, that
                                   merged into or read an element of its node in place
                                   (none of them a record; lock-step ones also count
                                   in requests) */
    uint64_t auto_routes[CR_DARRAY_AUTO_ROUTES]; /* route auto: the writes or reads of a
                                   step it sent over direct, the grid of two dimensions,
                                   of three, and the hypercube */
} cr_darray_stats;
void cr_darray_stats_get(const cr_darray *a, cr_darray_stats *out);
void cr_darray_stats_reset(cr_darray *a);

/* ---- sorting ---- */

/* Sort the array's elements by cr_sort (courier/sort.h): afterwards element i is the
 * i-th smallest (by the options' key or comparator; opts->record_bytes must be the
 * element size, the tolerance 0). Starts with a cr_barrier (asynchronous writes sent
 * before are applied; queued lock-step ones are not: step first). Collective; runs
 * handlers. `stats` may be NULL. */
void cr_darray_sort(cr_darray *a, const cr_sort_opts *opts, cr_sort_stats *stats);

/* ---- save and load (docs/io.md) ---- */

/* Save the array into directory `dir`: each rank writes its block, rank 0 a
 * manifest with the length. Starts with a cr_barrier (asynchronous writes sent
 * before are saved; queued lock-step writes are not: step first). A directory that
 * holds a save already is refused unless flags has CR_SAVE_OVERWRITE; CR_SAVE_SYNC
 * makes the save durable before it returns (include/courier/io.h). */
int cr_darray_save(cr_darray *a, const char *dir, unsigned flags, char *err, size_t errlen);
/* Replace the array's elements with a save's: each rank reads the elements of its
 * own block straight from the save, whatever rank count wrote it, so every element
 * keeps its global index. The save must be of a darray of the same length and
 * element size; a missing, truncated or corrupted save, or another kind, is refused
 * before any element changes. Both return 0, or -1 on every rank with the same
 * one-line message in err. Collective; run handlers. */
int cr_darray_load(cr_darray *a, const char *dir, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
