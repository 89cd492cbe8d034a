/* The sort's local parts: the order, the radix and merge sorts, the bucket search
 * and the sample's positions (sort_internal.h). */
#include "sort/sort_internal.h"

#include "common/fatal.h"
#include "courier/rng.h"

#include <stdio.h>
#include <stdlib.h>

int sort_order_of(const cr_sort_opts *opts, sort_order *out, char *err, size_t errlen)
{
    if (!opts) {
        snprintf(err, errlen, "no options given");
        return -1;
    }
    if (opts->record_bytes < 1 || opts->record_bytes > 4096) {
        snprintf(err, errlen, "record_bytes is %zu: expected 1 to 4096", opts->record_bytes);
        return -1;
    }
    int orders = (opts->key_type != 0) + (opts->key != NULL) + (opts->compare != NULL);
    if (orders != 1) {
        snprintf(err, errlen, "%s: set exactly one of key_type, key and compare",
                 orders ? "more than one order given" : "no order given");
        return -1;
    }
    if (opts->key_type && opts->key_type != CR_UINT64 && opts->key_type != CR_INT64 &&
        opts->key_type != CR_DOUBLE) {
        snprintf(err, errlen, "key_type %d is not a sort key: expected CR_UINT64, CR_INT64 or "
                 "CR_DOUBLE", (int)opts->key_type);
        return -1;
    }
    if (opts->key_type && (opts->record_bytes < 8 || opts->key_offset > opts->record_bytes - 8)) {
        snprintf(err, errlen, "an 8-byte key at offset %zu does not fit a record of %zu bytes",
                 opts->key_offset, opts->record_bytes);
        return -1;
    }
    if (!(opts->tolerance >= 0 && opts->tolerance < 1)) {
        snprintf(err, errlen, "tolerance %g is out of range: expected 0 <= t < 1", opts->tolerance);
        return -1;
    }
    *out = (sort_order){.rb = opts->record_bytes, .key_type = opts->key_type,
                        .key_offset = opts->key_offset, .key = opts->key,
                        .compare = opts->compare, .user = opts->user};
    return 0;
}

/* ---- radix sort (keys) ---------------------------------------------------------- */

/* Digit d (0 = least significant byte) of an entry's sort value: the tag's bytes
 * are digits 0..7 when tagged, the key's follow. */
static inline unsigned digit_of(const sort_order *o, const char *e, unsigned d, bool tagged)
{
    if (tagged && d < 8)
        return (unsigned)(sort_tag_at(e, o->rb) >> (8 * d)) & 0xff;
    unsigned kd = tagged ? d - 8 : d;
    return (unsigned)(sort_key(o, e) >> (8 * kd)) & 0xff;
}

/* One pass: entries of src scattered into dst by digit d, in order within a digit. */
static void scatter(const sort_order *o, const char *src, char *dst, size_t n, size_t width,
                    unsigned d, bool tagged, const size_t *count)
{
    size_t at[256], sum = 0;
    for (unsigned b = 0; b < 256; b++) {
        at[b] = sum;
        sum += count[b];
    }
    if (width == 8 && !tagged && !o->key && o->key_offset == 0) {
        /* the common case: the record is its key */
        const uint64_t *s = (const void *)src;
        uint64_t *t = (void *)dst;
        for (size_t i = 0; i < n; i++) {
            uint64_t k = s[i];
            unsigned b = (unsigned)(sort_key(o, &k) >> (8 * d)) & 0xff;
            t[at[b]++] = k;
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const char *e = src + i * width;
        unsigned b = digit_of(o, e, d, tagged);
        memcpy(dst + at[b]++ * width, e, width);
    }
}

static void radix_sort(const sort_order *o, char *a, char *tmp, size_t n, size_t width,
                       bool tagged)
{
    unsigned digits = tagged ? 16 : 8;
    size_t(*count)[256] = cr_xcalloc(digits, sizeof *count);
    /* every digit's counts in one read of the entries */
    for (size_t i = 0; i < n; i++) {
        const char *e = a + i * width;
        uint64_t k = sort_key(o, e);
        for (unsigned d = 0; d < 8; d++)
            count[tagged ? 8 + d : d][(k >> (8 * d)) & 0xff]++;
        if (tagged) {
            uint64_t t = sort_tag_at(e, o->rb);
            for (unsigned d = 0; d < 8; d++)
                count[d][(t >> (8 * d)) & 0xff]++;
        }
    }
    char *src = a, *dst = tmp;
    for (unsigned d = 0; d < digits; d++) {
        bool one_bucket = false;
        for (unsigned b = 0; b < 256 && !one_bucket; b++)
            one_bucket = count[d][b] == n;
        if (one_bucket)
            continue; /* every entry has this digit: the pass would not move one */
        scatter(o, src, dst, n, width, d, tagged, count[d]);
        char *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * width);
    free(count);
}

/* ---- merge sort (comparator) ------------------------------------------------------ */

enum { INSERTION_RUN = 16 };

static void insertion_sort(const sort_order *o, char *a, size_t n, size_t width, bool tagged,
                           char *hold)
{
    for (size_t i = 1; i < n; i++) {
        size_t j = i;
        if (sort_compare_entries(o, a + (j - 1) * width, a + j * width, tagged) <= 0)
            continue;
        memcpy(hold, a + i * width, width);
        while (j > 0 && sort_compare_entries(o, a + (j - 1) * width, hold, tagged) > 0) {
            memcpy(a + j * width, a + (j - 1) * width, width);
            j--;
        }
        memcpy(a + j * width, hold, width);
    }
}

/* Merge the sorted runs [lo, mid) and [mid, hi) of src into dst; equal entries
 * from the left run first (stable). */
static void merge_runs(const sort_order *o, const char *src, char *dst, size_t lo, size_t mid,
                       size_t hi, size_t width, bool tagged)
{
    size_t i = lo, j = mid, k = lo;
    while (i < mid && j < hi) {
        if (sort_compare_entries(o, src + i * width, src + j * width, tagged) <= 0)
            memcpy(dst + k++ * width, src + i++ * width, width);
        else
            memcpy(dst + k++ * width, src + j++ * width, width);
    }
    memcpy(dst + k * width, src + i * width, (mid - i) * width);
    k += mid - i;
    memcpy(dst + k * width, src + j * width, (hi - j) * width);
}

static void merge_sort(const sort_order *o, char *a, char *tmp, size_t n, size_t width,
                       bool tagged)
{
    char hold[4096 + 8];
    for (size_t lo = 0; lo < n; lo += INSERTION_RUN)
        insertion_sort(o, a + lo * width, n - lo < INSERTION_RUN ? n - lo : INSERTION_RUN, width,
                       tagged, hold);
    char *src = a, *dst = tmp;
    for (size_t run = INSERTION_RUN; run < n; run *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * run) {
            size_t mid = lo + run < n ? lo + run : n;
            size_t hi = lo + 2 * run < n ? lo + 2 * run : n;
            merge_runs(o, src, dst, lo, mid, hi, width, tagged);
        }
        char *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * width);
}

void sort_entries(const sort_order *o, char *a, char *tmp, size_t n, size_t width, bool tagged)
{
    if (n < 2)
        return;
    if (sort_has_key(o))
        radix_sort(o, a, tmp, n, width, tagged);
    else
        merge_sort(o, a, tmp, n, width, tagged);
}

/* ---- buckets and samples ------------------------------------------------------------ */

size_t sort_bucket(const sort_order *o, const sort_splitters *s, const void *rec, uint64_t tag)
{
    /* the first splitter that sorts after (rec, tag): lo ends there */
    size_t lo = 0, hi = s->n;
    size_t stride = o->rb + 8;
    if (s->keys) {
        uint64_t k = sort_key(o, rec);
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            uint64_t sk = s->keys[mid];
            bool after = sk > k || (sk == k && sort_tag_at(s->entries + mid * stride, o->rb) > tag);
            if (after)
                hi = mid;
            else
                lo = mid + 1;
        }
        return lo;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *e = s->entries + mid * stride;
        int c = sort_compare(o, e, rec);
        bool after = c > 0 || (c == 0 && sort_tag_at(e, o->rb) > tag);
        if (after)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static uint64_t stratum_start(uint64_t total, uint64_t samples, uint64_t i)
{
    __extension__ typedef unsigned __int128 wide;
    return (uint64_t)((wide)i * total / samples);
}

uint64_t sort_sample_position(uint64_t total, uint64_t samples, uint64_t i, uint64_t seed)
{
    uint64_t start = stratum_start(total, samples, i);
    uint64_t len = stratum_start(total, samples, i + 1) - start;
    uint64_t r = cr_rng_hash64(seed * 0x9e3779b97f4a7c15ULL ^ cr_rng_hash64(i));
    return start + cr_rng_bounded(r, len);
}

uint64_t sort_sample_first_stratum(uint64_t total, uint64_t samples, uint64_t pos)
{
    __extension__ typedef unsigned __int128 wide;
    uint64_t i = (uint64_t)((wide)pos * samples / total);
    while (i > 0 && stratum_start(total, samples, i) > pos)
        i--;
    while (i < samples && stratum_start(total, samples, i + 1) <= pos)
        i++;
    return i;
}
