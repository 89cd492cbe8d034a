/* The sort module's pure parts (src/sort/local.c): the order records are sorted by,
 * the local sorts, and the bucket search against splitters. No communication;
 * tested alone (tests/unit/test_sort_local.c). Not installed. */
#ifndef COURIER_SORT_LOCAL_H
#define COURIER_SORT_LOCAL_H

#include "courier/sort.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The order of cr_sort_opts, checked. */
typedef struct sort_order {
    size_t rb;             /* record bytes */
    cr_dtype key_type;     /* 0 unless the key is a field */
    size_t key_offset;
    cr_sort_key_fn key;
    cr_sort_compare_fn compare;
    void *user;
} sort_order;

/* The order of `opts`, or -1 with a one-line message naming what is wrong. */
int sort_order_of(const cr_sort_opts *opts, sort_order *out, char *err, size_t errlen);

static inline bool sort_has_key(const sort_order *o) { return o->compare == NULL; }

/* The record's key as an unsigned integer whose order is the key's order: signed
 * integers with the sign bit flipped, doubles by the usual bit trick (negative
 * numbers inverted, positive ones with the sign bit set), which orders them as IEEE
 * 754 totalOrder does. */
static inline uint64_t sort_key(const sort_order *o, const void *rec)
{
    if (o->key)
        return o->key(rec, o->user);
    uint64_t k;
    memcpy(&k, (const char *)rec + o->key_offset, sizeof k);
    if (o->key_type == CR_INT64)
        return k ^ (UINT64_C(1) << 63);
    if (o->key_type == CR_DOUBLE)
        return (k >> 63) ? ~k : k ^ (UINT64_C(1) << 63);
    return k;
}

/* Records compared by the order alone: <0, 0, >0. */
static inline int sort_compare(const sort_order *o, const void *a, const void *b)
{
    if (o->compare)
        return o->compare(a, b, o->user);
    uint64_t ka = sort_key(o, a), kb = sort_key(o, b);
    return (ka > kb) - (ka < kb);
}

static inline uint64_t sort_tag_at(const char *entry, size_t rb)
{
    uint64_t t;
    memcpy(&t, entry + rb, sizeof t);
    return t;
}

/* Entries are a record followed, when `tagged`, by an 8-byte tag (its place in the
 * input over all ranks). Compared by the order, then by the tag. */
static inline int sort_compare_entries(const sort_order *o, const char *a, const char *b,
                                       bool tagged)
{
    int c = sort_compare(o, a, b);
    if (c || !tagged)
        return c;
    uint64_t ta = sort_tag_at(a, o->rb), tb = sort_tag_at(b, o->rb);
    return (ta > tb) - (ta < tb);
}

/* True when sort_entries sorts in place and needs no scratch: records that are an
 * 8-byte key field alone, untagged. */
bool sort_in_place(const sort_order *o, size_t width, bool tagged);

/* Sort n entries of `width` bytes (rb, or rb + 8 when tagged) in `a`, using `tmp`
 * (n * width bytes; NULL: allocated here when needed) as scratch. Stable, except in
 * place (sort_in_place: equal records are alike there). Returns the one of a and
 * tmp that holds the sorted entries (the passes alternate between them; no copy
 * back). With a key: a least-significant-digit radix
 * sort, 8 bits a pass, passes whose digit is the same in every entry skipped (the
 * tag's digits first when tagged). With a comparator: a bottom-up merge sort. */
char *sort_entries(const sort_order *o, char *a, char *tmp, size_t n, size_t width, bool tagged);

/* Splitters: n tagged entries (rb + 8 bytes each), sorted; with a key, their keys
 * are kept apart for the search. */
typedef struct sort_splitters {
    const char *entries;
    const uint64_t *keys; /* NULL with a comparator */
    const uint64_t *tags; /* with keys: the splitters' tags */
    size_t n;
} sort_splitters;

/* The bucket of the record `rec` whose tag is `tag`: how many splitters sort at or
 * before it (ties by the tag), so bucket b holds the entries between splitter b - 1
 * and splitter b. */
size_t sort_bucket(const sort_order *o, const sort_splitters *s, const void *rec, uint64_t tag);

/* The buckets of k consecutive records from `rec`, whose tags are first, first + 1,
 * ...: dests[i] = sort_bucket of record i (0 when there are no splitters). */
void sort_buckets(const sort_order *o, const sort_splitters *s, const char *rec, size_t k,
                  uint64_t first, int *dests);

/* The sample: which global positions a draw of `samples` out of `total` records
 * takes, one in each of `samples` equal strata (systematic random sampling); the
 * i-th is sort_sample_position(...). Pure: every rank computes the same. */
uint64_t sort_sample_position(uint64_t total, uint64_t samples, uint64_t i, uint64_t seed);
/* The first stratum whose position can be >= pos. */
uint64_t sort_sample_first_stratum(uint64_t total, uint64_t samples, uint64_t pos);

/* Bins: the records of a bucket, as they arrive, go straight to their place among
 * NBINS bins of the bucket's key range (the key's high bits), so the local sort is
 * NBINS small sorts that stay in cache, with no pass over the bucket to spread it
 * first: the receiving copy, which every record pays anyway, does that. The high
 * bits a bin keeps are those of the bucket's range (between its two splitters'
 * keys), so bins are even when keys are spread evenly between the splitters; a
 * large bin is still sorted right, out of cache. The idea of spreading into buckets
 * first and sorting each in cache is the most significant digit radix sort's
 * (McIlroy, Bostic and McIlroy, "Engineering radix sort", 1993). */
enum { NBINS = 256 }; /* a bucket's bins, each sorted alone */

typedef struct bin_range {
    uint64_t base;   /* the bucket's lowest key >> shift */
    unsigned shift;
} bin_range;

static inline size_t sort_bin_of(bin_range r, uint64_t key)
{
    return (size_t)((key >> r.shift) - r.base);
}

/* The bins of the keys lo .. hi: the fewest low bits dropped that leave NBINS values
 * or fewer. */
static inline bin_range sort_bins_between(uint64_t lo, uint64_t hi)
{
    unsigned shift = 0;
    while (shift < 64 && (hi >> shift) - (lo >> shift) >= NBINS)
        shift++;
    return (bin_range){lo >> shift, shift};
}

#endif
