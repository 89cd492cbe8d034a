/* The wire format: runs of records packed into a buffer and read back
 * (src/mailbox/record.h). Buffers are built through cr_outbuf_append_rec, the way
 * the mailbox builds them. */
#include "mailbox/outbuf.h"
#include "mailbox/record.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

static void fill(char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (char)(seed * 131u + i * 7u);
}

/* Append one record to dest's buffer in o. */
static void put(cr_outbufs *o, int dest, uint16_t handler, uint16_t flags,
                const cr_rec_route *route, const void *payload, uint32_t len)
{
    uint16_t run_flags = route ? (uint16_t)(flags | CR_REC_ROUTED) : 0;
    size_t stride = cr_rec_stride(len, route != NULL);
    char *at = cr_outbuf_append_rec(o, cr_outbufs_at(o, dest), dest,
                                    cr_run_key(handler, run_flags, len), stride, 0);
    cr_rec_write(at, route, payload, len);
}

static void test_sizes_are_aligned(void **state)
{
    (void)state;
    assert_int_equal(cr_rec_stride(0, false), 0);
    assert_int_equal(cr_rec_stride(1, false), 8);
    assert_int_equal(cr_rec_stride(8, false), 8);
    assert_int_equal(cr_rec_stride(9, false), 16);
    assert_int_equal(cr_rec_stride(8, true), 16);
    for (size_t n = 0; n < 200; n++) {
        assert_int_equal(cr_rec_stride(n, false) % 8, 0);
        assert_true(cr_rec_stride(n, false) >= n && cr_rec_stride(n, false) < n + 8);
        assert_int_equal(cr_rec_stride(n, true), cr_rec_stride(n, false) + 8);
    }
    assert_int_not_equal(cr_run_key(0, 0, 0), CR_RUN_NONE);
    assert_int_not_equal(cr_run_key(65535, 3, UINT32_MAX), CR_RUN_NONE);
}

/* The point of the format: records of one kind in a row share one header, so an
 * 8-byte update costs 8 bytes, and a kind change opens a new run. */
static void test_runs_share_a_header(void **state)
{
    (void)state;
    cr_outbufs o;
    cr_outbufs_init(&o, 1, 1 << 20, 0, false);
    uint64_t v = 42;
    for (int i = 0; i < 1000; i++)
        put(&o, 0, 5, 0, NULL, &v, 8);
    assert_int_equal(o.bufs[0].len, 8 + 1000 * 8);
    put(&o, 0, 6, 0, NULL, &v, 8); /* another handler */
    put(&o, 0, 6, 0, NULL, &v, 4); /* another length */
    put(&o, 0, 6, 0, NULL, &v, 4);
    assert_int_equal(o.bufs[0].len, 8 + 1000 * 8 + 16 + 8 + 8 + 8);
    cr_outbufs_close_run(&o, 0); /* as taking the buffer does */
    size_t pos = 0;
    cr_run_view r = {0};
    assert_int_equal(cr_run_next(o.bufs[0].data, o.bufs[0].len, &pos, &r), CR_REC_OK);
    assert_int_equal(r.handler, 5);
    assert_int_equal(r.count, 1000);
    assert_int_equal(r.stride, 8);
    assert_int_equal(cr_run_next(o.bufs[0].data, o.bufs[0].len, &pos, &r), CR_REC_OK);
    assert_int_equal(r.count, 1);
    assert_int_equal(cr_run_next(o.bufs[0].data, o.bufs[0].len, &pos, &r), CR_REC_OK);
    assert_int_equal(r.count, 2);
    assert_int_equal(r.len, 4);
    assert_int_equal(cr_run_next(o.bufs[0].data, o.bufs[0].len, &pos, &r), CR_REC_END);
    cr_outbufs_free(&o);
}

/* A run holds at most CR_RUN_MAX records (its count has 10 bits); the next one opens
 * another run, and no count wraps around. */
static void test_long_runs_split(void **state)
{
    (void)state;
    cr_outbufs o;
    cr_outbufs_init(&o, 1, 1 << 20, 0, false);
    size_t n = 3 * (size_t)CR_RUN_MAX + 7;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = i;
        put(&o, 0, 1, 0, NULL, &v, 8);
    }
    assert_int_equal(o.bufs[0].len, 4 * 8 + n * 8);
    cr_outbufs_close_run(&o, 0);
    size_t pos = 0, seen = 0;
    cr_run_view r = {0};
    unsigned counts[4] = {CR_RUN_MAX, CR_RUN_MAX, CR_RUN_MAX, 7};
    for (int k = 0; k < 4; k++) {
        assert_int_equal(cr_run_next(o.bufs[0].data, o.bufs[0].len, &pos, &r), CR_REC_OK);
        assert_int_equal(r.count, counts[k]);
        for (size_t i = 0; i < r.count; i++) {
            uint64_t v;
            memcpy(&v, r.first + i * r.stride, 8);
            assert_int_equal(v, seen++);
        }
    }
    assert_int_equal(cr_run_next(o.bufs[0].data, o.bufs[0].len, &pos, &r), CR_REC_END);
    cr_outbufs_free(&o);
}

/* Every payload size from 0 to 300 bytes, each size twice in a row, round-trips with
 * zeroed padding and 8-byte alignment. */
static void test_roundtrip_many_sizes(void **state)
{
    (void)state;
    cr_outbufs o;
    cr_outbufs_init(&o, 1, 1 << 20, 0, false);
    char payload[300];
    for (unsigned n = 0; n < 300; n++) {
        for (int twice = 0; twice < 2; twice++) {
            fill(payload, n, n + (unsigned)twice);
            put(&o, 0, (uint16_t)(n * 3), 0, NULL, payload, n);
        }
    }
    cr_outbufs_close_run(&o, 0);
    const char *buf = o.bufs[0].data;
    size_t len = o.bufs[0].len, pos = 0;
    cr_run_view r = {0};
    for (unsigned n = 0; n < 300; n++) {
        assert_int_equal(cr_run_next(buf, len, &pos, &r), CR_REC_OK);
        assert_int_equal(r.handler, n * 3);
        assert_int_equal(r.len, n);
        assert_int_equal(r.flags, 0);
        assert_int_equal(r.count, 2);
        for (unsigned k = 0; k < 2; k++) {
            const char *p = r.first + k * r.stride;
            assert_int_equal((uintptr_t)(p - buf) % 8, 0);
            fill(payload, n, n + k);
            assert_memory_equal(p, payload, n);
            for (size_t i = n; i < cr_rec_pad(n); i++)
                assert_int_equal(p[i], 0);
        }
    }
    assert_int_equal(cr_run_next(buf, len, &pos, &r), CR_REC_END);
    assert_int_equal(pos, len);
    cr_outbufs_free(&o);
}

static void test_empty_buffer_and_empty_payload(void **state)
{
    (void)state;
    size_t pos = 0;
    cr_run_view r = {0};
    assert_int_equal(cr_run_next(NULL, 0, &pos, &r), CR_REC_END);
    char buf[8];
    cr_run_write_hdr(buf, 7, 0, 0);
    assert_int_equal(cr_run_next(buf, 8, &pos, &r), CR_REC_OK);
    assert_int_equal(r.len, 0);
    assert_int_equal(r.handler, 7);
    assert_int_equal(r.count, 1);
    assert_int_equal(pos, 8);
    assert_int_equal(cr_run_next(buf, 8, &pos, &r), CR_REC_END);
}

static void test_huge_payload(void **state)
{
    (void)state;
    size_t n = (size_t)1 << 20;
    char *payload = malloc(n), *buf = malloc(8 + n);
    fill(payload, n, 9);
    cr_run_write_hdr(buf, 1, 0, (uint32_t)n);
    cr_rec_write(buf + 8, NULL, payload, (uint32_t)n);
    size_t pos = 0;
    cr_run_view r = {0};
    assert_int_equal(cr_run_next(buf, 8 + n, &pos, &r), CR_REC_OK);
    assert_int_equal(r.len, n);
    assert_memory_equal(r.first, payload, n);
    assert_int_equal(cr_run_next(buf, 8 + n, &pos, &r), CR_REC_END);
    free(payload);
    free(buf);
}

static void test_truncated_input_is_detected(void **state)
{
    (void)state;
    char buf[64], payload[20] = {0};
    cr_run_write_hdr(buf, 2, 0, 20); /* 8 + 24 bytes */
    cr_rec_write(buf + 8, NULL, payload, 20);
    cr_run_view r = {0};
    for (size_t len = 1; len < 32; len++) {
        size_t pos = 0;
        assert_int_equal(cr_run_next(buf, len, &pos, &r), CR_REC_TRUNCATED);
    }
    /* a count of 3 in a buffer that holds one record */
    cr_run_set_count(buf, 3);
    size_t pos = 0;
    assert_int_equal(cr_run_next(buf, 32, &pos, &r), CR_REC_TRUNCATED);
    /* a header claiming 4 GiB of payload */
    cr_run_write_hdr(buf, 0, 0, 0xffffffffu);
    pos = 0;
    assert_int_equal(cr_run_next(buf, 64, &pos, &r), CR_REC_TRUNCATED);
    /* a run of no records */
    cr_run_hdr h = {.len = 0, .handler = 1, .info = 0};
    memcpy(buf, &h, sizeof h);
    pos = 0;
    assert_int_equal(cr_run_next(buf, 8, &pos, &r), CR_REC_TRUNCATED);
    /* a count at the largest value with 0-byte records is fine */
    h.info = (uint16_t)(CR_RUN_MAX << CR_REC_BITS);
    memcpy(buf, &h, sizeof h);
    pos = 0;
    assert_int_equal(cr_run_next(buf, 8, &pos, &r), CR_REC_OK);
    assert_int_equal(r.count, CR_RUN_MAX);
}

/* Plain and routed runs mixed in one buffer, as a forwarding rank builds them: each
 * routed record keeps its own route block. */
static void test_routed_records(void **state)
{
    (void)state;
    cr_outbufs o;
    cr_outbufs_init(&o, 1, 1 << 20, 0, false);
    char payload[24];
    for (unsigned i = 0; i < 12; i++) {
        unsigned kind = i / 2; /* two records of each kind */
        uint32_t n = kind * 4;
        fill(payload, n, i);
        if (kind % 2) {
            cr_rec_route rt = {.dest = (int32_t)(100 + i), .origin = (int32_t)(200 + i)};
            put(&o, 0, (uint16_t)kind, kind == 3 ? CR_REC_BCAST : 0, &rt, payload, n);
        } else {
            put(&o, 0, (uint16_t)kind, 0, NULL, payload, n);
        }
    }
    cr_outbufs_close_run(&o, 0);
    const char *buf = o.bufs[0].data;
    size_t len = o.bufs[0].len, pos = 0;
    cr_run_view r = {0};
    for (unsigned kind = 0; kind < 6; kind++) {
        assert_int_equal(cr_run_next(buf, len, &pos, &r), CR_REC_OK);
        assert_int_equal(r.handler, kind);
        assert_int_equal(r.len, kind * 4);
        assert_int_equal(r.count, 2);
        for (unsigned k = 0; k < 2; k++) {
            unsigned i = kind * 2 + k;
            const char *p = r.first + k * r.stride;
            assert_int_equal((uintptr_t)(p - buf) % 8, 0);
            fill(payload, kind * 4, i);
            assert_memory_equal(p, payload, kind * 4);
            if (kind % 2) {
                assert_true(r.flags & CR_REC_ROUTED);
                assert_int_equal(!!(r.flags & CR_REC_BCAST), kind == 3);
                cr_rec_route rt = cr_run_route(&r, k);
                assert_int_equal(rt.dest, 100 + i);
                assert_int_equal(rt.origin, 200 + i);
            } else {
                assert_int_equal(r.flags, 0);
            }
        }
    }
    assert_int_equal(cr_run_next(buf, len, &pos, &r), CR_REC_END);
    cr_outbufs_free(&o);
    /* a routed record cut inside its route block */
    char small[16];
    cr_run_write_hdr(small, 0, CR_REC_ROUTED, 0);
    memset(small + 8, 0, 8);
    pos = 0;
    assert_int_equal(cr_run_next(small, 12, &pos, &r), CR_REC_TRUNCATED);
    pos = 0;
    assert_int_equal(cr_run_next(small, 16, &pos, &r), CR_REC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_are_aligned),
        cmocka_unit_test(test_runs_share_a_header),
        cmocka_unit_test(test_long_runs_split),
        cmocka_unit_test(test_roundtrip_many_sizes),
        cmocka_unit_test(test_empty_buffer_and_empty_payload),
        cmocka_unit_test(test_huge_payload),
        cmocka_unit_test(test_truncated_input_is_detected),
        cmocka_unit_test(test_routed_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
