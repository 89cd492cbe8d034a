/* The containers' per-rank table (src/container/container_internal.h) against a plain
 * array: random inserts, finds and erases with keys that collide on purpose (a hash
 * that keeps few bits), through several doublings; erasing shifts records back, so
 * every key must still be found after every erase. Plus the reply pool and the
 * deferred records. */
#include "container/container_internal.h"

#include "courier/rng.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define NKEYS 3000

typedef struct ref {
    bool present[NKEYS];
    uint64_t value[NKEYS];
} ref;

/* The key of k: 12 bytes (longer than a word, with padding after it in the record:
 * the tagged layout) or 8 (the bitmap layout). */
static size_t key_len = 12;

static void make_key(uint64_t k, char key[12])
{
    memset(key, 0, 12);
    memcpy(key, &k, sizeof k);
    if (key_len == 12)
        key[10] = (char)(k * 7);
}

/* Few distinct hashes: long probe runs, many displaced records. */
static int hash_bits;

static uint64_t weak_hash(uint64_t k, int bits)
{
    return cr_rng_hash64(k) & (bits >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << bits) - 1);
}

/* The same hash as the table's own (the bitmap layout recomputes homes with it). */
static uint64_t weak_hash_of_key(const void *key, size_t len)
{
    (void)len;
    uint64_t k;
    memcpy(&k, key, sizeof k);
    return weak_hash(k, hash_bits);
}

/* What a check expects of keys 0 .. nkeys-1: the hash the table was given for key k,
 * and whether k is present with which value. */
typedef struct expectation {
    uint64_t nkeys;
    uint64_t (*hash)(uint64_t k, const void *ctx);
    bool (*present)(uint64_t k, uint64_t *value, const void *ctx);
    const void *ctx;
} expectation;

/* Every key found exactly when expected, with its value; the table walks exactly its
 * records. */
static void check_table(const ct_table *t, const expectation *e)
{
    size_t n = 0;
    for (uint64_t k = 0; k < e->nkeys; k++) {
        char key[12];
        make_key(k, key);
        const char *rec = ct_find(t, key, e->hash(k, e->ctx));
        uint64_t want = 0;
        assert_int_equal(rec != NULL, e->present(k, &want, e->ctx));
        if (rec) {
            uint64_t v;
            memcpy(&v, rec + t->key_pad, sizeof v);
            assert_int_equal(v, want);
            n++;
        }
    }
    assert_int_equal(t->count, n);
    size_t walked = 0;
    for (size_t i = ct_next(t, 0); i < t->cap; i = ct_next(t, i + 1))
        walked++;
    assert_int_equal(walked, n);
    assert_true(t->cap == 0 || 4 * t->count <= 3 * t->cap);
}

static uint64_t hash_of_random_ops(uint64_t k, const void *ctx)
{
    (void)ctx;
    return weak_hash(k, hash_bits);
}

static bool present_in_ref(uint64_t k, uint64_t *value, const void *ctx)
{
    const ref *r = ctx;
    *value = r->value[k];
    return r->present[k];
}

static void check_all(const ct_table *t, const ref *r, int bits)
{
    assert_int_equal(bits, hash_bits);
    check_table(t, &(expectation){NKEYS, hash_of_random_ops, present_in_ref, r});
}

static void random_ops(int bits, uint64_t seed)
{
    ct_table t;
    ct_init(&t, key_len, 8);
    assert_int_equal(t.stride, key_len == 8 ? 8 + 8 : 8 + 16 + 8);
    hash_bits = bits;
    t.hash = weak_hash_of_key;
    static ref r;
    memset(&r, 0, sizeof r);
    uint64_t s = seed;
    for (int op = 0; op < 40000; op++) {
        uint64_t k = cr_rng_bounded(cr_rng_next(&s), NKEYS);
        char key[12];
        make_key(k, key);
        uint64_t h = weak_hash(k, bits);
        if (cr_rng_next(&s) % 3) {
            bool fresh;
            char *rec = ct_insert(&t, key, h, &fresh);
            assert_non_null(rec);
            assert_int_equal(fresh, !r.present[k]);
            uint64_t v = k * 1000 + (uint64_t)op;
            if (fresh) {
                uint64_t zero;
                memcpy(&zero, rec + t.key_pad, sizeof zero);
                assert_int_equal(zero, 0); /* a new record's value starts at zero */
            }
            memcpy(rec + t.key_pad, &v, sizeof v);
            r.present[k] = true;
            r.value[k] = v;
        } else {
            assert_int_equal(ct_erase(&t, key, h), r.present[k]);
            r.present[k] = false;
        }
        if (op % 4000 == 0)
            check_all(&t, &r, bits);
    }
    check_all(&t, &r, bits);
    ct_free(&t);
}

static void test_table_strong_hash(void **state)
{
    (void)state;
    random_ops(62, 1);
}

static void test_table_colliding_hash(void **state)
{
    (void)state;
    random_ops(5, 2); /* 32 distinct hashes for 3000 keys */
    random_ops(0, 3); /* every key the same hash: one long run */
}

/* 8-byte keys: slots without tags, a bitmap of the used ones; erasing and growing
 * recompute each record's home from its key. */
static void test_table_bitmap_layout(void **state)
{
    (void)state;
    key_len = 8;
    random_ops(62, 4);
    random_ops(5, 5);
    random_ops(0, 6);
    ct_table t;
    ct_init(&t, 8, 8);
    assert_true(ct_reserve(&t, 1000));
    assert_int_equal(ct_bytes(&t), t.cap * 16 + (t.cap + 63) / 64 * 8);
    ct_free(&t);
    key_len = 12;
}

/* A table past 4 MiB of slots lives in its own mapping (asked for huge pages): new
 * records start at zero there too, and growing into it, erasing in it and freeing it
 * keep every record. */
static void test_table_large(void **state)
{
    (void)state;
    enum { LARGE = 300000 };
    ct_table t;
    ct_init(&t, 8, 8);
    for (uint64_t k = 0; k < LARGE; k++) {
        bool fresh;
        uint64_t *rec = ct_insert(&t, &k, cr_container_hash(&k, 8), &fresh);
        assert_non_null(rec);
        assert_true(fresh);
        assert_int_equal(rec[1], 0);
        rec[1] = k + 1;
    }
    assert_true(t.cap * t.stride > ((size_t)4 << 20));
    for (uint64_t k = 0; k < LARGE; k += 2)
        assert_true(ct_erase(&t, &k, cr_container_hash(&k, 8)));
    assert_true(ct_reserve(&t, 2 * LARGE)); /* moves every record to a new mapping */
    assert_int_equal(t.count, LARGE / 2);
    for (uint64_t k = 0; k < LARGE; k++) {
        const uint64_t *rec = ct_find(&t, &k, cr_container_hash(&k, 8));
        if (k % 2 == 0) {
            assert_null(rec);
        } else {
            assert_non_null(rec);
            assert_int_equal(rec[1], k + 1);
        }
    }
    ct_free(&t);
    assert_int_equal(t.cap, 0);
}

/* Doubling in place (table.c): a few keys hash to the table's top slots, so runs
 * wrap round to slot 0 and records moving up wrap again; the rest hash anywhere.
 * After every doubling, and after erasing a third, every record is found with its
 * value, and the table walks exactly its records. Both layouts. */
enum { IN_PLACE_KEYS = 520000 };

static uint64_t top_heavy_hash(uint64_t k)
{
    if (k % 512 == 0)
        return UINT64_MAX - (cr_rng_hash64(k) & 31);
    return cr_rng_hash64(k);
}

static uint64_t top_heavy_hash_of_key(const void *key, size_t len)
{
    (void)len;
    uint64_t k;
    memcpy(&k, key, sizeof k);
    return top_heavy_hash(k);
}

static uint64_t hash_of_in_place(uint64_t k, const void *ctx)
{
    (void)ctx;
    return top_heavy_hash(k);
}

static bool present_unless_erased(uint64_t k, uint64_t *value, const void *ctx)
{
    const bool *erased = ctx;
    *value = 3 * k + 1;
    return !erased[k];
}

static void check_in_place(const ct_table *t, uint64_t upto, const bool *erased)
{
    check_table(t, &(expectation){upto, hash_of_in_place, present_unless_erased, erased});
}

static void grow_in_place_with(size_t klen)
{
    key_len = klen;
    ct_table t;
    ct_init(&t, klen, 8);
    t.hash = top_heavy_hash_of_key;
    bool *erased = calloc(IN_PLACE_KEYS, sizeof *erased);
    assert_non_null(erased);
    size_t cap = 0;
    for (uint64_t k = 0; k < IN_PLACE_KEYS; k++) {
        char key[12];
        make_key(k, key);
        bool fresh;
        char *rec = ct_insert(&t, key, top_heavy_hash(k), &fresh);
        assert_non_null(rec);
        assert_true(fresh);
        uint64_t v = 3 * k + 1;
        memcpy(rec + t.key_pad, &v, sizeof v);
        if (t.cap != cap) {
            cap = t.cap;
            check_in_place(&t, k + 1, erased);
        }
        if (k % 3 == 1 && k > IN_PLACE_KEYS / 2) { /* erase some as it grows */
            uint64_t gone = k / 2;
            char g[12];
            make_key(gone, g);
            assert_true(ct_erase(&t, g, top_heavy_hash(gone)));
            erased[gone] = true;
        }
    }
    check_in_place(&t, IN_PLACE_KEYS, erased);
    assert_true(t.in_place >= 2); /* the doublings past 4 MiB were made in place */
    ct_free(&t);
    free(erased);
    key_len = 12;
}

static void test_table_grows_in_place(void **state)
{
    (void)state;
    grow_in_place_with(8);
    grow_in_place_with(12);
}

/* How far from its home slot a record just inserted lies. */
static size_t probe_of(const ct_table *t, const void *rec)
{
    size_t i = (size_t)((const char *)rec - t->slots - t->head) / t->stride;
    return (i - (size_t)(ct_hash(rec, 8) & (t->cap - 1))) & (t->cap - 1);
}

/* Keys in the slot order of a larger table (a map copied into another, a save
 * loaded): without the early doubling of a crowded table, the second half of that
 * order overflows the first half of a table not yet full into one run thousands of
 * slots long (linear probing's clustering). The run stays short. */
static void copy_in_slot_order(size_t keys)
{
    ct_table big, copy;
    ct_init(&big, 8, 8);
    ct_init(&copy, 8, 8);
    assert_true(ct_reserve(&big, keys));
    size_t longest = 0;
    uint64_t s = keys;
    for (size_t k = 0; k < keys; k++) {
        uint64_t key = cr_rng_next(&s);
        bool fresh;
        assert_non_null(ct_insert(&big, &key, ct_hash(&key, 8), &fresh));
    }
    for (size_t i = 0; i < big.cap; i++) {
        if (!ct_occupied(&big, i))
            continue;
        bool fresh;
        const void *key = ct_record(&big, i);
        void *rec = ct_insert(&copy, key, ct_hash(key, 8), &fresh);
        assert_non_null(rec);
        assert_true(fresh);
        size_t probe = probe_of(&copy, rec);
        longest = probe > longest ? probe : longest;
    }
    assert_int_equal(copy.count, big.count);
    if (getenv("SHOW_PROBE"))
        fprintf(stderr, "%zu keys: longest probe %zu\n", keys, longest);
    assert_true(longest <= 2 * CT_LONG_PROBE);
    assert_true(copy.cap <= 2 * big.cap); /* the early doubling stops where it helps */
    ct_free(&big);
    ct_free(&copy);
}

static void test_copy_in_slot_order(void **state)
{
    (void)state;
    copy_in_slot_order(80000);
    copy_in_slot_order(200000);
}

/* ct_order_by_region: a permutation of its input, regions never going back, and the
 * keys of one region in the order given; at several capacities, one below
 * CT_REGIONS slots. */
static void order_by_region_at(size_t cap)
{
    enum { N = 5000 };
    ct_table t;
    ct_init(&t, 8, 8);
    assert_true(ct_reserve(&t, cap / 4 * 3));
    assert_int_equal(t.cap, cap);
    static uint64_t in[N], out[N];
    uint64_t s = cap;
    for (size_t i = 0; i < N; i++)
        in[i] = cr_rng_next(&s) % (N / 2); /* repeated keys: their order is kept */
    ct_order_by_region(&t, in, out, N);
    size_t shift = 0;
    while (((size_t)CT_REGIONS << shift) < cap)
        shift++;
    uint64_t sum_in = 0, sum_out = 0, xor_in = 0, xor_out = 0;
    size_t next_in[CT_REGIONS] = {0}; /* where in `in` region r's next key is sought */
    for (size_t i = 0; i < N; i++) {
        sum_in += in[i] * 0x9e3779b97f4a7c15ULL;
        xor_in ^= cr_rng_hash64(in[i] + 1);
        sum_out += out[i] * 0x9e3779b97f4a7c15ULL;
        xor_out ^= cr_rng_hash64(out[i] + 1);
        size_t r = (ct_hash(&out[i], 8) & (cap - 1)) >> shift;
        if (i > 0)
            assert_true(r >= ((ct_hash(&out[i - 1], 8) & (cap - 1)) >> shift));
        size_t j = next_in[r];
        while (j < N && ((ct_hash(&in[j], 8) & (cap - 1)) >> shift) != r)
            j++;
        assert_true(j < N);
        assert_int_equal(in[j], out[i]); /* the region's keys in their given order */
        next_in[r] = j + 1;
    }
    assert_int_equal(sum_in, sum_out);
    assert_int_equal(xor_in, xor_out);
    ct_free(&t);
}

static void test_order_by_region(void **state)
{
    (void)state;
    order_by_region_at(64);
    order_by_region_at(4096);
    order_by_region_at((size_t)1 << 20);
}

static void test_hash_of_bytes(void **state)
{
    (void)state;
    char a[13] = "abcdefghijkl", b[13] = "abcdefghijkm";
    assert_true(cr_container_hash(a, 12) != cr_container_hash(b, 12));
    assert_true(cr_container_hash(a, 12) != cr_container_hash(a, 11));
    assert_int_equal(cr_container_hash(a, 12), cr_container_hash(a, 12));
    uint64_t x = 5, y = 5;
    assert_int_equal(cr_container_hash(&x, 8), cr_container_hash(&y, 8));
}

static void test_reply_pool(void **state)
{
    (void)state;
    ct_pool p = {0};
    ct_reply *got[1000];
    for (int i = 0; i < 1000; i++) {
        got[i] = ct_pool_get(&p, "test");
        got[i]->item = (uint64_t)i;
    }
    for (int i = 0; i < 1000; i++) /* chunks never move: every slot keeps its word */
        assert_int_equal(got[i]->item, (uint64_t)i);
    size_t chunks = p.nchunks;
    for (int i = 0; i < 1000; i++)
        ct_pool_put(&p, got[i]);
    for (int i = 0; i < 1000; i++)
        got[i] = ct_pool_get(&p, "test");
    assert_int_equal(p.nchunks, chunks); /* recycled, not allocated again */
    ct_pool_free(&p);
}

static void test_deferred(void **state)
{
    (void)state;
    ct_deferred d = {0};
    for (uint64_t i = 0; i < 2000; i++) {
        char rec[13];
        memset(rec, (int)(i & 0xff), sizeof rec);
        ct_defer(&d, (int)(i % 3), rec, (size_t)(i % 14), "test");
    }
    size_t at = 0;
    for (uint64_t i = 0; i < 2000; i++) {
        uint64_t head[2];
        memcpy(head, d.bytes + at, sizeof head);
        assert_int_equal(head[0], i % 3);
        assert_int_equal(head[1], i % 14);
        for (size_t j = 0; j < head[1]; j++)
            assert_int_equal((unsigned char)d.bytes[at + 16 + j], i & 0xff);
        at += 16 + ct_pad8((size_t)head[1]);
    }
    assert_int_equal(at, d.len);
    free(d.bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_strong_hash), cmocka_unit_test(test_table_colliding_hash),
        cmocka_unit_test(test_table_bitmap_layout), cmocka_unit_test(test_table_large),
        cmocka_unit_test(test_table_grows_in_place), cmocka_unit_test(test_copy_in_slot_order),
        cmocka_unit_test(test_order_by_region),
        cmocka_unit_test(test_hash_of_bytes),     cmocka_unit_test(test_reply_pool),
        cmocka_unit_test(test_deferred),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
