/* The sort's local parts: the order, the radix and merge sorts, the bucket search
 * and the sample's positions (local.h). */
#include "sort/local.h"

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
    for (size_t i = 0; i < n; i++) {
        const char *e = src + i * width;
        unsigned b = digit_of(o, e, d, tagged);
        memcpy(dst + at[b]++ * width, e, width);
    }
}

/* Records that are their key, an 8-byte unsigned integer, sorted in place: a most
 * significant digit first pass permutes the words into 256 buckets by cycles (the
 * American flag sort: McIlroy, Bostic and McIlroy, "Engineering radix sort",
 * Computing Systems 1993), recursing while a bucket is large; a bucket of at most
 * WORDS_SMALL words is finished by least significant digit passes in a small
 * scratch that stays in cache. No scratch of the array's size, so no fresh memory
 * to fault in, and every pass but the first runs in cache. Not stable (the words are
 * the whole records: equal ones are alike). */
enum { WORDS_SMALL = 1 << 14 };

/* LSD passes over digits 0 .. top of a[0 .. n), alternating with tmp; returns the
 * one that holds the sorted words. */
static uint64_t *lsd_words(uint64_t *a, uint64_t *tmp, size_t n, int top)
{
    size_t(*count)[256] = cr_xcalloc((size_t)top + 1, sizeof *count);
    for (size_t i = 0; i < n; i++)
        for (int d = 0; d <= top; d++)
            count[d][(a[i] >> (8 * d)) & 0xff]++;
    uint64_t *src = a, *dst = tmp;
    for (int d = 0; d <= top; d++) {
        size_t at[256], sum = 0;
        bool one_bucket = false;
        for (unsigned b = 0; b < 256; b++) {
            one_bucket = one_bucket || count[d][b] == n;
            at[b] = sum;
            sum += count[d][b];
        }
        if (one_bucket)
            continue;
        unsigned shift = 8 * (unsigned)d;
        for (size_t i = 0; i < n; i++)
            dst[at[(src[i] >> shift) & 0xff]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    free(count);
    return src;
}

/* The same for a small bucket (n <= WORDS_SMALL), ending in a. */
static void words_lsd(uint64_t *a, uint64_t *tmp, size_t n, int top)
{
    uint64_t *sorted = lsd_words(a, tmp, n, top);
    if (sorted != a)
        memcpy(a, sorted, n * sizeof *a);
}

/* Sort a[0 .. n) by digits d .. 0 (the higher ones are equal throughout). */
static void words_msd(uint64_t *a, size_t n, int d, uint64_t *small)
{
    size_t count[256];
    for (; d >= 0 && n > WORDS_SMALL; d--) {
        unsigned shift = 8 * (unsigned)d;
        memset(count, 0, sizeof count);
        for (size_t i = 0; i < n; i++)
            count[(a[i] >> shift) & 0xff]++;
        bool one_bucket = false;
        for (unsigned b = 0; b < 256; b++)
            one_bucket = one_bucket || count[b] == n;
        if (one_bucket)
            continue; /* every word has this digit: go one digit down */
        size_t head[256], end[256], sum = 0;
        for (unsigned b = 0; b < 256; b++) {
            head[b] = sum;
            sum += count[b];
            end[b] = sum;
        }
        for (unsigned b = 0; b < 256; b++) {
            while (head[b] < end[b]) {
                uint64_t v = a[head[b]];
                unsigned c = (unsigned)(v >> shift) & 0xff;
                while (c != b) { /* v's place is in bucket c: put it there, carry on */
                    uint64_t t = a[head[c]];
                    a[head[c]++] = v;
                    v = t;
                    c = (unsigned)(v >> shift) & 0xff;
                }
                a[head[b]++] = v;
            }
        }
        if (d == 0)
            return;
        for (size_t b = 0, from = 0; b < 256; from += count[b], b++)
            if (count[b] > 1)
                words_msd(a + from, count[b], d - 1, small);
        return;
    }
    if (d >= 0 && n > 1)
        words_lsd(a, small, n, d);
}

/* Keys of 8 bytes that are the whole record: mapped in place to unsigned integers of
 * the same order (sort_key), sorted as words, mapped back. */
static void radix_key_records(const sort_order *o, char *a, size_t n)
{
    uint64_t *w = (uint64_t *)(void *)a;
    bool mapped = o->key_type != CR_UINT64;
    for (size_t i = 0; mapped && i < n; i++)
        w[i] = sort_key(o, &w[i]);
    uint64_t *small = cr_xmalloc(WORDS_SMALL * sizeof *small);
    words_msd(w, n, 7, small);
    free(small);
    for (size_t i = 0; mapped && i < n; i++) {
        uint64_t k = w[i];
        if (o->key_type == CR_INT64)
            w[i] = k ^ (UINT64_C(1) << 63);
        else /* CR_DOUBLE: the inverse of sort_key's map */
            w[i] = (k >> 63) ? k ^ (UINT64_C(1) << 63) : ~k;
    }
}

bool sort_in_place(const sort_order *o, size_t width, bool tagged)
{
    return !tagged && width == 8 && !o->key && o->key_offset == 0 && o->key_type;
}

/* Words with a scratch: least significant digit passes over both buffers. */
static uint64_t *radix_words(uint64_t *a, uint64_t *tmp, size_t n)
{
    return lsd_words(a, tmp, n, 7);
}

static char *radix_sort(const sort_order *o, char *a, char *tmp, size_t n, size_t width,
                        bool tagged)
{
    if (sort_in_place(o, width, tagged) && o->key_type == CR_UINT64 &&
        ((uintptr_t)a | (uintptr_t)tmp) % sizeof(uint64_t) == 0)
        return (char *)radix_words((uint64_t *)(void *)a, (uint64_t *)(void *)tmp, n);
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
    free(count);
    return src;
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

static char *merge_sort(const sort_order *o, char *a, char *tmp, size_t n, size_t width,
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
    return src;
}

char *sort_entries(const sort_order *o, char *a, char *tmp, size_t n, size_t width, bool tagged)
{
    if (n < 2)
        return a;
    /* Words in place only when they are aligned, as malloc gives them, and when no
     * scratch is given: least significant digit passes over a scratch already
     * touched are faster still (each pass streams; the in-place permutation chases
     * cycles), but a fresh scratch costs more in page faults than that gains. */
    if (!tmp && sort_in_place(o, width, tagged) && (uintptr_t)a % sizeof(uint64_t) == 0) {
        radix_key_records(o, a, n);
        return a;
    }
    char *own = NULL;
    if (!tmp)
        tmp = own = cr_xmalloc_large(n, width);
    char *sorted = sort_has_key(o) ? radix_sort(o, a, tmp, n, width, tagged)
                                   : merge_sort(o, a, tmp, n, width, tagged);
    if (own && sorted == own) {
        memcpy(a, own, n * width);
        sorted = a;
    }
    free(own);
    return sorted;
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

/* The key's search: the first splitter after (key, tag), without a branch on the
 * data (a uniform key goes either way at every step: a branch would miss half the
 * time). */
static inline size_t bucket_of_key(const uint64_t *keys, const uint64_t *tags, size_t ns,
                                   uint64_t k, uint64_t tag)
{
    size_t lo = 0, n = ns; /* the answer lies in [lo, lo + n] */
    while (n > 0) {
        size_t half = n / 2, mid = lo + half;
        uint64_t sk = keys[mid], st = tags[mid];
        size_t c = (size_t)((sk < k) | ((sk == k) & (st <= tag))); /* splitter not after */
        lo += (half + 1) & (0 - c);
        n = half - (c & ~n & 1); /* n - half - 1 when c, else half */
    }
    return lo;
}

void sort_buckets(const sort_order *o, const sort_splitters *s, const char *rec, size_t k,
                  uint64_t first, int *dests)
{
    if (s->n == 0) {
        memset(dests, 0, k * sizeof *dests);
        return;
    }
    if (!s->keys) {
        for (size_t i = 0; i < k; i++)
            dests[i] = (int)sort_bucket(o, s, rec + i * o->rb, first + i);
        return;
    }
    if (!o->key && o->key_type == CR_UINT64 && o->key_offset == 0 && o->rb == 8) {
        const char *r = rec; /* the record is its key */
        for (size_t i = 0; i < k; i++) {
            uint64_t key;
            memcpy(&key, r + i * 8, 8);
            dests[i] = (int)bucket_of_key(s->keys, s->tags, s->n, key, first + i);
        }
        return;
    }
    for (size_t i = 0; i < k; i++)
        dests[i] = (int)bucket_of_key(s->keys, s->tags, s->n, sort_key(o, rec + i * o->rb),
                                      first + i);
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
