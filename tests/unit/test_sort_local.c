/* The sort's local parts (src/sort/local.h): the options' checks, the radix
 * sort against a reference insertion order for every key type and width, stable on
 * ties and tags, with keys that tie at every digit; the merge sort with a comparator,
 * stable; the bucket search against a linear count; the sample's strata. */
#include "sort/local.h"

#include "courier/rng.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static uint64_t next(uint64_t *s)
{
    return cr_rng_next(s);
}

static void test_options(void **state)
{
    (void)state;
    char err[200];
    sort_order o;
    cr_sort_opts opts;
    cr_sort_opts_init(&opts);
    opts.record_bytes = 16;
    assert_int_equal(sort_order_of(&opts, &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "no order given"));
    opts.key_type = CR_UINT64;
    opts.compare = (cr_sort_compare_fn)1;
    assert_int_equal(sort_order_of(&opts, &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "more than one order"));
    opts.compare = NULL;
    opts.key_offset = 9;
    assert_int_equal(sort_order_of(&opts, &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "does not fit"));
    opts.key_offset = 8;
    assert_int_equal(sort_order_of(&opts, &o, err, sizeof err), 0);
    opts.key_type = CR_FLOAT;
    assert_int_equal(sort_order_of(&opts, &o, err, sizeof err), -1);
    opts.key_type = CR_INT64;
    opts.record_bytes = 0;
    assert_int_equal(sort_order_of(&opts, &o, err, sizeof err), -1);
    opts.record_bytes = 4097;
    assert_int_equal(sort_order_of(&opts, &o, err, sizeof err), -1);
    opts.record_bytes = 8;
    opts.key_offset = 0;
    opts.tolerance = 1;
    assert_int_equal(sort_order_of(&opts, &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "tolerance"));
}

/* Keys whose every byte is one of 0, 1 and 255: every digit ties often. */
static uint64_t bytewise(uint64_t *s)
{
    uint64_t h = next(s), k = 0;
    for (int b = 0; b < 8; b++, h /= 3)
        k |= (uint64_t)(h % 3 == 2 ? 255 : h % 3) << (8 * b);
    return k;
}

/* Order of two records as the order of their transformed keys, then the record's
 * input index (at offset 8), for a reference check. */
static void check_sorted(const sort_order *o, const char *a, size_t n, size_t width,
                         bool by_index)
{
    for (size_t i = 1; i < n; i++) {
        const char *x = a + (i - 1) * width, *y = a + i * width;
        int c = sort_compare(o, x, y);
        assert_true(c <= 0);
        if (c == 0 && by_index) {
            uint64_t ix, iy;
            memcpy(&ix, x + 8, 8);
            memcpy(&iy, y + 8, 8);
            assert_true(ix < iy); /* stable: input order kept */
        }
    }
}

static void radix_case(cr_dtype type, size_t rb, size_t n, bool tagged, uint64_t seed)
{
    sort_order o = {.rb = rb, .key_type = type};
    size_t width = rb + (tagged ? 8 : 0);
    char *a = calloc(n ? n : 1, width), *tmp = calloc(n ? n : 1, width);
    uint64_t s = seed, sum = 0, sum_after = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t k = bytewise(&s);
        if (type == CR_DOUBLE) {
            double d = (double)(int64_t)(k % 2001) - 1000;
            if (k % 13 == 0)
                d = -0.0;
            memcpy(&k, &d, 8);
        }
        memcpy(a + i * width, &k, 8);
        if (rb >= 16) {
            uint64_t ix = i;
            memcpy(a + i * width + 8, &ix, 8);
        }
        if (tagged) {
            uint64_t tag = (uint64_t)i ^ 0x5555; /* a tag order unlike the input's */
            memcpy(a + i * width + rb, &tag, 8);
        }
        sum += k * 0x9e3779b97f4a7c15ULL;
    }
    char *sorted = sort_entries(&o, a, tmp, n, width, tagged);
    if (sorted != a)
        memcpy(a, sorted, n * width);
    for (size_t i = 0; i < n; i++) {
        uint64_t k;
        memcpy(&k, a + i * width, 8);
        sum_after += k * 0x9e3779b97f4a7c15ULL;
    }
    assert_true(sum == sum_after);
    if (!tagged) {
        check_sorted(&o, a, n, width, rb >= 16);
    } else {
        for (size_t i = 1; i < n; i++) /* by the key, then by the tag */
            assert_true(sort_compare_entries(&o, a + (i - 1) * width, a + i * width, true) < 0);
    }
    free(a);
    free(tmp);
}

static void test_radix(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 2, 15, 16, 17, 1000, 70000, 300000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        radix_case(CR_UINT64, 8, sizes[i], false, i + 1);
        radix_case(CR_INT64, 8, sizes[i], false, i + 6); /* in place, mapped */
        radix_case(CR_DOUBLE, 8, sizes[i], false, i + 7);
        radix_case(CR_UINT64, 24, sizes[i], false, i + 2);
        radix_case(CR_INT64, 16, sizes[i], false, i + 3);
        radix_case(CR_DOUBLE, 16, sizes[i], false, i + 4);
        radix_case(CR_UINT64, 16, sizes[i], true, i + 5);
    }
}

static void test_key_transforms(void **state)
{
    (void)state;
    sort_order oi = {.rb = 8, .key_type = CR_INT64}, od = {.rb = 8, .key_type = CR_DOUBLE};
    int64_t iv[] = {INT64_MIN, -5, -1, 0, 1, 7, INT64_MAX};
    for (size_t i = 1; i < sizeof iv / sizeof iv[0]; i++)
        assert_true(sort_key(&oi, &iv[i - 1]) < sort_key(&oi, &iv[i]));
    double dv[] = {-1e300, -2.5, -0.0, 0.0, 1e-300, 3.0, 1e300};
    for (size_t i = 1; i < sizeof dv / sizeof dv[0]; i++)
        assert_true(sort_key(&od, &dv[i - 1]) < sort_key(&od, &dv[i]));
}

/* A comparator on the first 8 bytes, descending: merge sort must follow it and keep
 * the input order of ties. */
static int descending(const void *a, const void *b, void *user)
{
    (void)user;
    uint64_t x, y;
    memcpy(&x, a, 8);
    memcpy(&y, b, 8);
    return (x < y) - (x > y);
}

static void test_merge(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 2, 15, 16, 17, 33, 1000, 50001};
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        size_t n = sizes[t], w = 40;
        sort_order o = {.rb = w, .compare = descending};
        char *a = calloc(n ? n : 1, w), *tmp = calloc(n ? n : 1, w);
        uint64_t s = t + 11;
        for (size_t i = 0; i < n; i++) {
            uint64_t k = next(&s) % 50, ix = i;
            memcpy(a + i * w, &k, 8);
            memcpy(a + i * w + 8, &ix, 8);
        }
        char *sorted = sort_entries(&o, a, tmp, n, w, false);
        if (sorted != a)
            memcpy(a, sorted, n * w);
        for (size_t i = 1; i < n; i++) {
            uint64_t k0, k1, i0, i1;
            memcpy(&k0, a + (i - 1) * w, 8);
            memcpy(&k1, a + i * w, 8);
            memcpy(&i0, a + (i - 1) * w + 8, 8);
            memcpy(&i1, a + i * w + 8, 8);
            assert_true(k0 > k1 || (k0 == k1 && i0 < i1));
        }
        free(a);
        free(tmp);
    }
}

static int ascending(const void *a, const void *b, void *user)
{
    return descending(b, a, user);
}

static void test_buckets(void **state)
{
    (void)state;
    size_t rb = 8, ew = rb + 8, ns = 9;
    sort_order o = {.rb = rb, .key_type = CR_UINT64};
    char split[9 * 16];
    uint64_t keys[9], tags[9];
    for (size_t q = 0; q < ns; q++) { /* keys 10, 10, 10, 20, 20, 30, ... with tags */
        uint64_t k = q < 3 ? 10 : q < 5 ? 20 : 10 * q, tag = 100 * q;
        memcpy(split + q * ew, &k, 8);
        memcpy(split + q * ew + rb, &tag, 8);
        keys[q] = k;
        tags[q] = tag;
    }
    sort_splitters with_keys = {.entries = split, .keys = keys, .tags = tags, .n = ns};
    sort_splitters by_compare = {.entries = split, .keys = NULL, .n = ns};
    sort_order oc = {.rb = rb, .compare = ascending};
    for (uint64_t k = 0; k < 100; k += 5)
        for (uint64_t tag = 0; tag < 1000; tag += 50) {
            size_t linear = 0;
            for (size_t q = 0; q < ns; q++) {
                uint64_t sk = keys[q], st = 100 * q;
                linear += sk < k || (sk == k && st <= tag);
            }
            assert_int_equal(sort_bucket(&o, &with_keys, &k, tag), linear);
            /* a comparator of the same order, through the other search */
            assert_int_equal(sort_bucket(&oc, &by_compare, &k, tag), linear);
            /* the block search (tags first + i), with keys and without */
            int dest[2];
            uint64_t two[2] = {k, k};
            sort_buckets(&o, &with_keys, (const char *)two, 2, tag, dest);
            assert_int_equal(dest[0], linear);
            sort_buckets(&oc, &by_compare, (const char *)two, 1, tag, dest + 1);
            assert_int_equal(dest[1], linear);
        }
}

static void test_strata(void **state)
{
    (void)state;
    static const uint64_t totals[] = {1, 7, 100, 1000003};
    static const uint64_t samples[] = {1, 3, 7, 100, 4096};
    for (size_t a = 0; a < 4; a++)
        for (size_t b = 0; b < 5; b++) {
            uint64_t n = totals[a], s = samples[b] < n ? samples[b] : n, last = 0;
            for (uint64_t i = 0; i < s; i++) {
                uint64_t pos = sort_sample_position(n, s, i, 7);
                __extension__ typedef unsigned __int128 wide;
                uint64_t lo = (uint64_t)((wide)i * n / s);
                uint64_t hi = (uint64_t)((wide)(i + 1) * n / s);
                assert_true(pos >= lo && pos < hi);
                assert_true(i == 0 || pos > last);
                last = pos;
                assert_int_equal(sort_sample_first_stratum(n, s, lo), i);
                assert_int_equal(sort_sample_first_stratum(n, s, hi - 1), i);
            }
        }
}

/* A bucket's bins: every key of lo .. hi has a bin below NBINS, the lowest key bin 0,
 * bins never go down as keys go up, and no fewer low bits dropped would do. */
static void check_bins(uint64_t lo, uint64_t hi)
{
    bin_range r = sort_bins_between(lo, hi);
    assert_int_equal(sort_bin_of(r, lo), 0);
    assert_true(sort_bin_of(r, hi) < NBINS);
    if (r.shift > 0) /* the fewest bits: one fewer leaves more than NBINS values */
        assert_true((hi >> (r.shift - 1)) - (lo >> (r.shift - 1)) >= NBINS);
    uint64_t step = (hi - lo) / 1000 + 1, last = 0;
    for (uint64_t k = lo;; k += step) {
        size_t b = sort_bin_of(r, k);
        assert_true(b < NBINS && b >= last);
        last = b;
        if (hi - k < step)
            break;
    }
}

static void test_bins(void **state)
{
    (void)state;
    check_bins(0, 0);
    check_bins(42, 42);
    check_bins(0, UINT64_MAX);
    check_bins(UINT64_MAX, UINT64_MAX);
    check_bins(1000, 1255);  /* 256 values: no bits dropped */
    check_bins(1000, 1256);  /* 257 values */
    check_bins(255, 256);    /* across a bin of the coarser cut */
    check_bins((uint64_t)1 << 63, UINT64_MAX);
    uint64_t x = 12345;
    for (int i = 0; i < 1000; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        uint64_t y = x * 6364136223846793005ULL + 1;
        uint64_t a = x >> (i % 64), b = y >> ((i * 7) % 64);
        check_bins(a < b ? a : b, a < b ? b : a);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options), cmocka_unit_test(test_radix),
        cmocka_unit_test(test_key_transforms), cmocka_unit_test(test_merge),
        cmocka_unit_test(test_buckets), cmocka_unit_test(test_strata),
        cmocka_unit_test(test_bins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
