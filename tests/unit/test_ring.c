/* The shared-memory ring (src/transport/ring.c): one sender, one receiver, and every
 * block arrives once, whole and in order. The two-thread test runs the sides at once
 * (clean under ThreadSanitizer and the sanitizer build); the others check the rules
 * one at a time: full means full, a tag travels with its block, and a slot released
 * out of order goes back to the sender while the blocks still arrive in order. */
#include "transport/ring.h"

#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

enum { SLOT = 256 };

static void *ring_memory(unsigned nslots)
{
    void *mem = aligned_alloc(64, (cr_ring_bytes(nslots, SLOT) + 63) / 64 * 64);
    assert_non_null(mem);
    return mem;
}

/* Block k: its length and bytes follow from k, so the receiver can check each one. */
static size_t block_len(uint64_t k)
{
    return 8 + (size_t)(k * 2654435761u % (SLOT - 8 + 1));
}

static void fill_block(uint64_t k, unsigned char *buf)
{
    size_t len = block_len(k);
    memcpy(buf, &k, sizeof k);
    for (size_t i = sizeof k; i < len; i++)
        buf[i] = (unsigned char)(k * 31 + i);
}

static int check_block(uint64_t k, const char *data, size_t len)
{
    unsigned char want[SLOT];
    if (len != block_len(k))
        return 0;
    fill_block(k, want);
    return memcmp(want, data, len) == 0;
}

static void test_full_and_empty(void **state)
{
    (void)state;
    void *mem = ring_memory(4);
    cr_ring rx, tx;
    cr_ring_init(&rx, mem, 4, SLOT);
    cr_ring_attach(&tx, mem, 4, SLOT);
    size_t len;
    unsigned tag;
    assert_null(cr_ring_peek(&rx, &len, &tag));
    unsigned char buf[SLOT];
    for (uint64_t k = 0; k < 4; k++) {
        fill_block(k, buf);
        assert_true(cr_ring_put(&tx, buf, block_len(k), (unsigned)k & 1));
    }
    fill_block(4, buf);
    assert_false(cr_ring_put(&tx, buf, block_len(4), 0)); /* four slots, four blocks */
    assert_int_equal(cr_ring_used(&tx), 4);
    for (uint64_t k = 0; k < 4; k++) {
        const char *d = cr_ring_peek(&rx, &len, &tag);
        assert_non_null(d);
        assert_int_equal(tag, k & 1);
        assert_true(check_block(k, d, len));
        cr_ring_release(&rx, cr_ring_take(&rx));
    }
    assert_null(cr_ring_peek(&rx, &len, &tag));
    assert_true(cr_ring_put(&tx, buf, block_len(4), 0)); /* room again */
    free(mem);
}

/* A delivery that takes the next block before it releases its own (a handler that
 * polls again): the inner block's slot goes back to the sender at once, the outer one
 * only when released, and the blocks still arrive in order. */
static void test_release_out_of_order(void **state)
{
    (void)state;
    void *mem = ring_memory(2);
    cr_ring rx, tx;
    cr_ring_init(&rx, mem, 2, SLOT);
    cr_ring_attach(&tx, mem, 2, SLOT);
    unsigned char buf[SLOT];
    for (uint64_t k = 0; k < 2; k++) {
        fill_block(k, buf);
        assert_true(cr_ring_put(&tx, buf, block_len(k), 0));
    }
    size_t len;
    unsigned tag;
    assert_non_null(cr_ring_peek(&rx, &len, &tag));
    unsigned outer = cr_ring_take(&rx);
    const char *d = cr_ring_peek(&rx, &len, &tag);
    assert_non_null(d);
    assert_true(check_block(1, d, len)); /* the nested take sees the next block */
    unsigned inner = cr_ring_take(&rx);
    assert_int_not_equal(inner, outer);
    assert_null(cr_ring_peek(&rx, &len, &tag));
    cr_ring_release(&rx, inner);
    assert_int_equal(cr_ring_used(&tx), 1);
    fill_block(2, buf);
    assert_true(cr_ring_put(&tx, buf, block_len(2), 0)); /* into the inner block's slot */
    fill_block(3, buf);
    assert_false(cr_ring_put(&tx, buf, block_len(3), 0)); /* the outer one is still in use */
    cr_ring_release(&rx, outer);
    assert_true(cr_ring_put(&tx, buf, block_len(3), 0));
    assert_false(cr_ring_put(&tx, buf, block_len(3), 0));
    for (uint64_t k = 2; k < 4; k++) {
        d = cr_ring_peek(&rx, &len, &tag);
        assert_non_null(d);
        assert_true(check_block(k, d, len));
        cr_ring_release(&rx, cr_ring_take(&rx));
    }
    assert_int_equal(cr_ring_used(&tx), 0);
    free(mem);
}

enum { BLOCKS = 200000, NSLOTS = 8 };

typedef struct pair {
    void *mem;
    cr_ring rx; /* initialised before either thread starts */
    cr_ring tx; /* the sender's view when it is done */
    uint64_t sent, received, bad;
} pair;

static void *sender(void *arg)
{
    pair *p = arg;
    cr_ring tx;
    cr_ring_attach(&tx, p->mem, NSLOTS, SLOT);
    unsigned char buf[SLOT];
    for (uint64_t k = 0; k < BLOCKS; k++) {
        fill_block(k, buf);
        while (!cr_ring_put(&tx, buf, block_len(k), (unsigned)(k % 3)))
            sched_yield();
        p->sent++;
    }
    p->tx = tx;
    return NULL;
}

/* Every fourth block is delivered with the next one taken inside it, and the two
 * released in the reverse order, as a nested poll does. */
static void *receiver(void *arg)
{
    pair *p = arg;
    cr_ring rx = p->rx;
    uint64_t want = 0;
    while (want < BLOCKS) {
        size_t len;
        unsigned tag;
        const char *d = cr_ring_peek(&rx, &len, &tag);
        if (!d) {
            sched_yield();
            continue;
        }
        if (tag != want % 3 || !check_block(want, d, len))
            p->bad++;
        unsigned slot = cr_ring_take(&rx);
        want++;
        if (want % 4 == 0 && want < BLOCKS) {
            const char *d2;
            while (!(d2 = cr_ring_peek(&rx, &len, &tag)))
                sched_yield();
            if (tag != want % 3 || !check_block(want, d2, len))
                p->bad++;
            unsigned slot2 = cr_ring_take(&rx);
            want++;
            cr_ring_release(&rx, slot2);
        }
        cr_ring_release(&rx, slot);
    }
    p->received = want;
    return NULL;
}

static void test_two_threads(void **state)
{
    (void)state;
    pair p = {.mem = ring_memory(NSLOTS)};
    cr_ring_init(&p.rx, p.mem, NSLOTS, SLOT);
    pthread_t a, b;
    assert_int_equal(pthread_create(&b, NULL, receiver, &p), 0);
    assert_int_equal(pthread_create(&a, NULL, sender, &p), 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    assert_int_equal(p.sent, BLOCKS);
    assert_int_equal(p.received, BLOCKS);
    assert_int_equal(p.bad, 0);
    assert_int_equal(cr_ring_used(&p.tx), 0); /* every slot released */
    free(p.mem);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_and_empty),
        cmocka_unit_test(test_release_out_of_order),
        cmocka_unit_test(test_two_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
