/* Per-destination buffers: when a record forces a flush, accounting, the pool; each
 * test under both layouts (a table of P entries, and the map of used destinations). */
#include "mailbox/outbuf.h"
#include "mailbox/record.h"

#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

/* Append a record the way cr_async does; returns the number of flushes it caused and
 * checks every flushed buffer is a whole number of records. */
static int append(cr_outbufs *o, int dest, size_t payload, size_t *flushed_bytes)
{
    static char data[1 << 16];
    int flushes = 0;
    uint64_t key = cr_run_key(3, 0, (uint32_t)payload);
    size_t stride = cr_rec_stride(payload, false);
    cr_outbuf *e = cr_outbufs_at(o, dest); /* never moves, like the mailbox's append */
    if (cr_outbuf_overflows(o, e, cr_outbuf_rec_size(e, key, stride))) {
        cr_block b = cr_outbufs_take(o, dest);
        *flushed_bytes += b.len;
        cr_outbufs_recycle(o, b.data, b.cap);
        flushes++;
    }
    cr_rec_write(cr_outbuf_append_rec(o, e, dest, key, stride, 1.0), NULL, data, (uint32_t)payload);
    if (cr_outbuf_full(o, e)) {
        cr_block b = cr_outbufs_take(o, dest);
        *flushed_bytes += b.len;
        size_t pos = 0, n = 0;
        cr_run_view v;
        while (cr_run_next(b.data, b.len, &pos, &v) == CR_REC_OK)
            n += v.count;
        assert_int_equal(pos, b.len);
        assert_true(n >= 1);
        cr_outbufs_recycle(o, b.data, b.cap);
        flushes++;
    }
    return flushes;
}

static void test_record_exactly_at_threshold(void **state)
{
    cr_outbufs o;
    bool sparse = *(bool *)*state;
    cr_outbufs_init(&o, 4, 64, 4, sparse);
    size_t flushed = 0;
    /* 56-byte payload -> 64-byte record == threshold: sent at once */
    assert_int_equal(append(&o, 1, 56, &flushed), 1);
    assert_int_equal(flushed, 64);
    assert_int_equal(o.total, 0);
    assert_int_equal(o.nactive, 0);
    /* one header + 7 records of 8 bytes = 64: the seventh fills the buffer exactly */
    for (int i = 0; i < 6; i++)
        assert_int_equal(append(&o, 1, 8, &flushed), 0);
    assert_int_equal(o.total, 8 + 6 * 8);
    assert_int_equal(append(&o, 1, 8, &flushed), 1);
    assert_int_equal(flushed, 128);
    /* a record of another length opens a run: 16 + 8 + 24 = 48, then 8 + 16 more
     * would make 72 > 64, so the buffer goes first */
    assert_int_equal(append(&o, 1, 8, &flushed), 0);
    assert_int_equal(append(&o, 1, 20, &flushed), 0);
    assert_int_equal(o.total, 48);
    assert_int_equal(append(&o, 1, 16, &flushed), 1);
    assert_int_equal(flushed, 128 + 48);
    assert_int_equal(o.total, 24);
    cr_outbufs_free(&o);
}

static void test_record_above_threshold_goes_alone(void **state)
{
    cr_outbufs o;
    bool sparse = *(bool *)*state;
    cr_outbufs_init(&o, 2, 64, 4, sparse);
    size_t flushed = 0;
    assert_int_equal(append(&o, 0, 8, &flushed), 0); /* 16 bytes buffered */
    /* 1000-byte payload: the 16 buffered bytes go first, then the big record alone */
    assert_int_equal(append(&o, 0, 1000, &flushed), 2);
    assert_int_equal(flushed, 16 + 8 + cr_rec_stride(1000, false));
    assert_int_equal(o.total, 0);
    cr_outbufs_free(&o);
}

static void test_tiny_threshold_sends_every_record(void **state)
{
    cr_outbufs o;
    bool sparse = *(bool *)*state;
    cr_outbufs_init(&o, 3, 1, 2, sparse);
    size_t flushed = 0;
    for (int i = 0; i < 10; i++)
        assert_int_equal(append(&o, i % 3, (size_t)i, &flushed), 1);
    assert_int_equal(o.total, 0);
    cr_outbufs_free(&o);
}

/* A new table is left as calloc made it: all zero must mean empty, inactive, with
 * no open run, so a large P costs no resident memory for unused destinations. */
static void test_fresh_table_is_zero(void **state)
{
    (void)state;
    cr_outbufs o;
    cr_outbufs_init(&o, 1000, 4096, 4, false);
    static const cr_outbuf zero;
    for (int d = 0; d < 1000; d++)
        assert_memory_equal(&o.bufs[d], &zero, sizeof zero);
    assert_int_equal(cr_outbufs_peek(&o, 7)->run_key, CR_RUN_NONE);
    uint64_t v = 9;
    uint64_t key = cr_run_key(0, 0, 8);
    cr_rec_write(cr_outbuf_append_rec(&o, cr_outbufs_at(&o, 999), 999, key, 8, 1.0), NULL, &v, 8);
    cr_rec_write(cr_outbuf_append_rec(&o, cr_outbufs_at(&o, 999), 999, key, 8, 1.0), NULL, &v, 8);
    assert_int_equal(o.nactive, 1);
    assert_int_equal(cr_outbufs_peek(&o, 999)->active_at, 1);
    assert_int_equal(cr_outbufs_peek(&o, 999)->len, 8 + 2 * 8);
    cr_outbufs_free(&o);
}

static void test_active_list_and_totals(void **state)
{
    cr_outbufs o;
    bool sparse = *(bool *)*state;
    cr_outbufs_init(&o, 8, 4096, 4, sparse);
    for (int d = 0; d < 8; d += 2)
        cr_outbufs_append(&o, d, 16 * (size_t)(d + 1), 2.0);
    assert_int_equal(o.nactive, 4);
    assert_int_equal(o.total, 16 * (1 + 3 + 5 + 7));
    assert_int_equal(cr_outbufs_peak(&o), o.total);
    for (int i = 0; i < o.nactive; i++)
        assert_int_equal(cr_outbufs_peek(&o, o.active[i])->active_at, i + 1);
    cr_block b = cr_outbufs_take(&o, 2);
    assert_int_equal(b.len, 48);
    free(b.data);
    assert_int_equal(o.nactive, 3);
    assert_int_equal(cr_outbufs_peek(&o, 2)->active_at, 0);
    for (int i = 0; i < o.nactive; i++)
        assert_int_equal(cr_outbufs_peek(&o, o.active[i])->active_at, i + 1);
    assert_int_equal(o.total, 16 * (1 + 5 + 7));
    assert_int_equal(cr_outbufs_peak(&o), 16 * (1 + 3 + 5 + 7));
    cr_outbufs_free(&o);
}

static void test_growth_and_pool(void **state)
{
    cr_outbufs o;
    bool sparse = *(bool *)*state;
    cr_outbufs_init(&o, 2, 100000, 1, sparse);
    /* a fresh buffer starts small and grows */
    cr_outbufs_append(&o, 0, 16, 0);
    assert_true(cr_outbufs_peek(&o, 0)->cap < 100000);
    for (int i = 0; i < 6000; i++)
        cr_outbufs_append(&o, 0, 16, 0);
    assert_int_equal(cr_outbufs_peek(&o, 0)->len, 16 * 6001);
    assert_int_equal(cr_outbufs_peek(&o, 0)->cap, o.block_size);
    cr_block b = cr_outbufs_take(&o, 0);
    cr_outbufs_recycle(&o, b.data, b.cap);
    assert_int_equal(o.npool, 1);
    /* the pooled full-size block is reused by the next empty buffer */
    cr_outbufs_append(&o, 1, 16, 0);
    assert_int_equal(o.npool, 0);
    assert_ptr_equal(cr_outbufs_peek(&o, 1)->data, b.data);
    /* blocks of another size are not pooled */
    cr_outbufs_recycle(&o, malloc(10), 10);
    assert_int_equal(o.npool, 0);
    cr_outbufs_free(&o);
}

/* The map holds an entry only for a destination that was written to: looking does
 * not create one, 100 destinations of a million cost 100 entries, entries keep their
 * address while the map grows, and keys that collide in the map stay apart. */
static void test_sparse_holds_only_used_destinations(void **state)
{
    (void)state;
    cr_outbufs o;
    cr_outbufs_init(&o, 1 << 20, 4096, 4, true);
    assert_null(o.bufs);
    assert_int_equal(o.nentries, 0);
    assert_int_equal(cr_outbufs_peek(&o, 12345)->len, 0);
    assert_ptr_equal(cr_outbufs_peek(&o, 12345), &cr_outbuf_unused);
    assert_int_equal(o.nentries, 0);
    cr_outbufs_append(&o, 7 << 12, 8, 0);
    const cr_outbuf *first = cr_outbufs_peek(&o, 7 << 12);
    for (int k = 1; k < 100; k++) /* multiples of 2^12: the hash's low bits alike */
        cr_outbufs_append(&o, (7 + k) << 12, 8 * (size_t)(k + 1), 0);
    assert_int_equal(o.nentries, 100);
    assert_int_equal(o.nactive, 100);
    assert_ptr_equal(cr_outbufs_peek(&o, 7 << 12), first);
    for (int k = 0; k < 100; k++)
        assert_int_equal(cr_outbufs_peek(&o, (7 + k) << 12)->len, 8 * (size_t)(k + 1));
    assert_int_equal(cr_outbufs_peek(&o, 6 << 12)->len, 0);
    cr_block b = cr_outbufs_take(&o, 50 << 12);
    free(b.data);
    assert_int_equal(o.nentries, 100); /* an emptied entry is kept for the next use */
    assert_int_equal(o.nactive, 99);
    cr_outbufs_free(&o);
}

int main(void)
{
    static bool dense = false, sparse = true;
#define BOTH(t) cmocka_unit_test_prestate(t, &dense), cmocka_unit_test_prestate(t, &sparse)
    const struct CMUnitTest tests[] = {
        BOTH(test_record_exactly_at_threshold),
        BOTH(test_record_above_threshold_goes_alone),
        BOTH(test_tiny_threshold_sends_every_record),
        cmocka_unit_test(test_fresh_table_is_zero),
        BOTH(test_active_list_and_totals),
        BOTH(test_growth_and_pool),
        cmocka_unit_test(test_sparse_holds_only_used_destinations),
    };
#undef BOTH
    return cmocka_run_group_tests(tests, NULL, NULL);
}
