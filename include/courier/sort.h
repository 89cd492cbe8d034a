/* Courier sort: fixed-size records held by the ranks, sorted across them.
 *
 * Before the call each rank holds some records (any number, none included); after
 * it rank r holds the r-th block of the sorted order: the records of all ranks, in
 * order, cut into P consecutive blocks. By default the blocks are exact (the block
 * distribution of cr_darray_block: ranks below N mod P hold one record more); with
 * a tolerance t > 0 a rank may keep between (1 - t) and (1 + t) times N / P records
 * when the sample already cut the order that well, which saves the last exchange.
 *
 * The algorithm is sample sort (docs/sort.md): the ranks draw a random sample of the
 * records, in proportion to what each holds; rank 0 sorts it and cuts it into P
 * splitters; every record goes to the rank of its bucket as mailbox traffic,
 * batched into chunks; each rank sorts what it received (a radix sort on a 64-bit
 * key, or a merge sort with the caller's comparator); a final exchange moves the
 * blocks' edges to exact blocks. Ties are broken by each record's place in the
 * input (rank, then index), so equal keys are spread like any others: no rank
 * receives more than its share plus the sample's error, whatever the keys (all
 * equal included), and a stable sort keeps equal records in input order.
 *
 * Memory per rank, beside its records: what it receives (its bucket, about N / P
 * records, at most 1.5 N / P + 1 unless three samples in a row cut worse, which
 * docs/sort.md shows is vanishingly rare), the same again as the local sort's
 * scratch, its final block when the edges move, chunks of up to 16 KiB per
 * destination (8 MiB in all, or one record per destination when P is larger), and
 * on rank 0 the sample: 128 P records of record_bytes + 8 bytes. A stable sort adds
 * 8 bytes to every record until its bucket is sorted.
 *
 * Errors (docs/architecture.md): misuse (bad options, a call from a handler) and a
 * rank out of memory end the job with one line naming the problem.
 */
#ifndef COURIER_SORT_H
#define COURIER_SORT_H

#include "courier/mailbox.h"
#include "courier/types.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How two records compare: negative, zero or positive as a sorts before, with or
 * after b. It must be a strict weak order (consistent, transitive); a comparator
 * that is not gives an order that is not sorted, and the check of
 * cr_sort_check_order says so. Must not call Courier. */
typedef int (*cr_sort_compare_fn)(const void *a, const void *b, void *user);
/* A record's key, an unsigned 64-bit integer (ascending). Must not call Courier. */
typedef uint64_t (*cr_sort_key_fn)(const void *record, void *user);

typedef struct cr_sort_opts {
    size_t record_bytes; /* 1 .. 4096: the size of every record */
    /* The order: exactly one of
     *  - key_type CR_UINT64, CR_INT64 or CR_DOUBLE: an 8-byte key of that type at
     *    byte key_offset of the record (read with memcpy: any alignment); doubles
     *    order as IEEE totalOrder does (-0 before +0, NaNs at the ends);
     *  - key: the caller's key function;
     *  - compare: the caller's comparator (a merge sort: slower than a key). */
    cr_dtype key_type;
    size_t key_offset;
    cr_sort_key_fn key;
    cr_sort_compare_fn compare;
    void *user;         /* given to key and compare */
    bool stable;        /* equal records keep their input order: rank, then index */
    double tolerance;   /* 0 (default): exact blocks; else 0 < t < 1, see above */
    uint64_t seed;      /* the sample's random stream (the same seed, the same run) */
} cr_sort_opts;

/* Defaults: no order chosen (set one), unstable, exact blocks, seed 1. Local. */
void cr_sort_opts_init(cr_sort_opts *opts);

/* What one cr_sort did on this rank. */
typedef struct cr_sort_stats {
    uint64_t total;        /* records over all ranks */
    uint64_t received;     /* records this rank received in the bucket exchange
                              (its own included) */
    uint64_t largest;      /* the largest bucket over all ranks */
    uint64_t samples;      /* sample records over all ranks, last draw */
    unsigned draws;        /* samples drawn (1, or more when a draw cut badly) */
    bool rebalanced;       /* the final exchange to exact blocks ran */
    uint64_t moved_final;  /* records this rank sent away in it */
    double seconds;        /* wall time of the call on this rank, and of its steps: */
    double sample_seconds; /* the counts, the sample, the splitters, the buckets' sizes */
    double exchange_seconds; /* every record to its bucket (with the wait for the
                              other ranks at its barrier) */
    double local_seconds;  /* the sort of this rank's bucket */
    double final_seconds;  /* the move to exact blocks (0 when not needed) */
} cr_sort_stats;

/* Sort. `*records` points to `*count` records of opts->record_bytes each, allocated
 * with malloc (or NULL when *count is 0); the call takes it, frees it, and leaves in
 * *records a new malloc'd array (NULL when this rank ends with none) of the *count
 * records of this rank's block, which the caller frees. Collective: every rank calls
 * with the same options (the functions may differ in address, not in order); runs
 * handlers (it uses cr_barrier), never from a handler. Records sent before the call
 * are delivered by its first barrier. `stats` may be NULL. */
void cr_sort(cr_comm *comm, void **records, size_t *count, const cr_sort_opts *opts,
             cr_sort_stats *stats);

/* Checks of a sorted result, for tests and for apps' --validate. Collective.
 * Returns the number of places where the order breaks: within each rank, and between
 * each rank's last record and the next non-empty rank's first. 0: sorted. */
uint64_t cr_sort_check_order(cr_comm *comm, const void *records, size_t count,
                             const cr_sort_opts *opts);

#ifdef __cplusplus
}
#endif

#endif
