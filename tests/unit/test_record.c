/* Record packing and unpacking. */
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

static void test_sizes_are_aligned(void **state)
{
    (void)state;
    assert_int_equal(cr_rec_size(0), 8);
    assert_int_equal(cr_rec_size(1), 16);
    assert_int_equal(cr_rec_size(8), 16);
    assert_int_equal(cr_rec_size(9), 24);
    for (size_t n = 0; n < 100; n++) {
        assert_int_equal(cr_rec_size(n) % 8, 0);
        assert_true(cr_rec_size(n) >= n + 8 && cr_rec_size(n) < n + 16);
    }
}

static void test_roundtrip_many_sizes(void **state)
{
    (void)state;
    size_t total = 0;
    for (size_t n = 0; n <= 40; n++)
        total += cr_rec_size(n);
    char *buf = malloc(total), payload[64];
    size_t off = 0;
    for (size_t n = 0; n <= 40; n++) {
        fill(payload, n, (unsigned)n);
        cr_rec_write(buf + off, (uint16_t)(n * 3), payload, (uint32_t)n);
        off += cr_rec_size(n);
    }
    assert_int_equal(off, total);

    size_t pos = 0;
    cr_rec_view v = {0};
    for (size_t n = 0; n <= 40; n++) {
        assert_int_equal(cr_rec_next(buf, total, &pos, &v), CR_REC_OK);
        assert_int_equal(v.handler, n * 3);
        assert_int_equal(v.len, n);
        assert_int_equal(v.flags, 0);
        assert_int_equal((uintptr_t)(v.payload - buf) % 8, 0);
        fill(payload, n, (unsigned)n);
        assert_memory_equal(v.payload, payload, n);
        /* padding is zeroed */
        for (size_t i = n; i < cr_rec_pad(n); i++)
            assert_int_equal(v.payload[i], 0);
    }
    assert_int_equal(cr_rec_next(buf, total, &pos, &v), CR_REC_END);
    free(buf);
}

static void test_empty_buffer_and_empty_payload(void **state)
{
    (void)state;
    size_t pos = 0;
    cr_rec_view v = {0};
    assert_int_equal(cr_rec_next(NULL, 0, &pos, &v), CR_REC_END);
    char buf[8];
    cr_rec_write(buf, 7, NULL, 0);
    assert_int_equal(cr_rec_next(buf, 8, &pos, &v), CR_REC_OK);
    assert_int_equal(v.len, 0);
    assert_int_equal(v.handler, 7);
    assert_int_equal(pos, 8);
}

static void test_huge_payload(void **state)
{
    (void)state;
    size_t n = (size_t)24 << 20; /* far above any buffer threshold */
    char *payload = malloc(n), *buf = malloc(cr_rec_size(n));
    fill(payload, n, 5);
    cr_rec_write(buf, 1, payload, (uint32_t)n);
    size_t pos = 0;
    cr_rec_view v = {0};
    assert_int_equal(cr_rec_next(buf, cr_rec_size(n), &pos, &v), CR_REC_OK);
    assert_int_equal(v.len, n);
    assert_memory_equal(v.payload, payload, n);
    assert_int_equal(cr_rec_next(buf, cr_rec_size(n), &pos, &v), CR_REC_END);
    free(payload);
    free(buf);
}

static void test_truncated_input_is_detected(void **state)
{
    (void)state;
    char buf[32], payload[20] = {0};
    cr_rec_write(buf, 2, payload, 20); /* 8 + 24 bytes */
    cr_rec_view v = {0};
    for (size_t len = 1; len < 32; len++) {
        size_t pos = 0;
        assert_int_equal(cr_rec_next(buf, len, &pos, &v), CR_REC_TRUNCATED);
    }
    /* a header claiming 4 GiB of payload */
    cr_rec_hdr h = {.len = 0xffffffffu, .handler = 0, .flags = 0};
    memcpy(buf, &h, sizeof h);
    size_t pos = 0;
    assert_int_equal(cr_rec_next(buf, 32, &pos, &v), CR_REC_TRUNCATED);
}

/* Plain and routed records mixed in one buffer, as a forwarding rank builds them. */
static void test_routed_records(void **state)
{
    (void)state;
    char buf[256], payload[24];
    size_t off = 0;
    for (unsigned i = 0; i < 6; i++) {
        uint32_t n = i * 4;
        fill(payload, n, i);
        if (i % 2) {
            cr_rec_route rt = {.dest = (int32_t)(100 + i), .origin = (int32_t)(200 + i)};
            cr_rec_write_routed(buf + off, (uint16_t)i, i == 3 ? CR_REC_BCAST : 0, rt, payload, n);
            off += cr_rec_size_routed(n);
        } else {
            cr_rec_write(buf + off, (uint16_t)i, payload, n);
            off += cr_rec_size(n);
        }
    }
    size_t pos = 0;
    cr_rec_view v = {0};
    for (unsigned i = 0; i < 6; i++) {
        assert_int_equal(cr_rec_next(buf, off, &pos, &v), CR_REC_OK);
        assert_int_equal(v.handler, i);
        assert_int_equal(v.len, i * 4);
        assert_int_equal((uintptr_t)(v.payload - buf) % 8, 0);
        fill(payload, i * 4, i);
        assert_memory_equal(v.payload, payload, i * 4);
        if (i % 2) {
            assert_true(v.flags & CR_REC_ROUTED);
            assert_int_equal(!!(v.flags & CR_REC_BCAST), i == 3);
            assert_int_equal(v.route.dest, 100 + i);
            assert_int_equal(v.route.origin, 200 + i);
        } else {
            assert_int_equal(v.flags, 0);
        }
    }
    assert_int_equal(cr_rec_next(buf, off, &pos, &v), CR_REC_END);
    /* a routed record cut inside its route block */
    cr_rec_route rt = {1, 2};
    cr_rec_write_routed(buf, 0, 0, rt, NULL, 0);
    pos = 0;
    assert_int_equal(cr_rec_next(buf, 12, &pos, &v), CR_REC_TRUNCATED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_are_aligned),
        cmocka_unit_test(test_roundtrip_many_sizes),
        cmocka_unit_test(test_empty_buffer_and_empty_payload),
        cmocka_unit_test(test_huge_payload),
        cmocka_unit_test(test_truncated_input_is_detected),
        cmocka_unit_test(test_routed_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
