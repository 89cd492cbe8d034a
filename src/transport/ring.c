/* The single-producer single-consumer ring (ring.h). */
#include "transport/ring.h"

#include <stdatomic.h>
#include <string.h>

/* The counters live in memory shared between processes: they must be lock-free,
 * since a lock would be private to one process's copy of the atomic library. */
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
               "the ring's atomics are lock-free");

enum { LINE = 64 };

/* What the sender writes and what the receiver writes lie on separate cache lines,
 * so that neither side's stores take the lines the other is writing. */
struct cr_ring_shared {
    _Alignas(LINE) _Atomic uint64_t head;                  /* blocks published (sender) */
    _Alignas(LINE) unsigned char slot_of[CR_RING_MAX_SLOTS]; /* block b is in slot
                                                              slot_of[b % nslots] (sender) */
    _Alignas(LINE) _Atomic uint32_t released[CR_RING_MAX_SLOTS]; /* per slot (receiver) */
    _Alignas(LINE) unsigned char slots[];
};

typedef struct slot_header {
    uint32_t len;
    uint32_t tag;
} slot_header;

static size_t slot_stride(size_t slot_cap)
{
    return (sizeof(slot_header) + slot_cap + LINE - 1) / LINE * LINE;
}

size_t cr_ring_bytes(unsigned nslots, size_t slot_cap)
{
    return sizeof(struct cr_ring_shared) + (size_t)nslots * slot_stride(slot_cap);
}

static unsigned char *slot_at(const cr_ring *r, unsigned slot)
{
    return r->shared->slots + (size_t)slot * slot_stride(r->slot_cap);
}

void cr_ring_attach(cr_ring *r, void *mem, unsigned nslots, size_t slot_cap)
{
    *r = (cr_ring){.shared = mem, .nslots = nslots, .slot_cap = slot_cap};
    r->head = atomic_load_explicit(&r->shared->head, memory_order_acquire);
    r->taken = r->head;
    for (unsigned k = 0; k < nslots; k++)
        r->count[k] = atomic_load_explicit(&r->shared->released[k], memory_order_acquire);
}

void cr_ring_init(cr_ring *r, void *mem, unsigned nslots, size_t slot_cap)
{
    struct cr_ring_shared *s = mem;
    atomic_init(&s->head, 0);
    for (unsigned k = 0; k < CR_RING_MAX_SLOTS; k++)
        atomic_init(&s->released[k], 0);
    atomic_thread_fence(memory_order_release);
    cr_ring_attach(r, mem, nslots, slot_cap);
}

/* A slot is free when the receiver has released it as often as the sender filled it.
 * The search starts after the last slot filled, so slots are used in turn while the
 * receiver keeps up. */
static int free_slot(cr_ring *r)
{
    for (unsigned k = 0; k < r->nslots; k++) {
        unsigned slot = (r->next + k) % r->nslots;
        uint32_t rel = atomic_load_explicit(&r->shared->released[slot], memory_order_acquire);
        if (rel == r->count[slot])
            return (int)slot;
    }
    return -1;
}

bool cr_ring_put(cr_ring *r, const void *data, size_t len, unsigned tag)
{
    int slot = free_slot(r);
    if (slot < 0)
        return false;
    unsigned char *at = slot_at(r, (unsigned)slot);
    slot_header h = {.len = (uint32_t)len, .tag = tag};
    memcpy(at, &h, sizeof h);
    memcpy(at + sizeof h, data, len);
    /* Block `head` can reuse the number of block head - nslots: that block was taken,
     * since the slot found free was released and blocks are taken in order. */
    r->shared->slot_of[r->head % r->nslots] = (unsigned char)slot;
    r->count[slot]++;
    r->next = ((unsigned)slot + 1) % r->nslots;
    r->head++;
    atomic_store_explicit(&r->shared->head, r->head, memory_order_release);
    return true;
}

const char *cr_ring_peek(cr_ring *r, size_t *len, unsigned *tag)
{
    if (r->taken == r->head) {
        r->head = atomic_load_explicit(&r->shared->head, memory_order_acquire);
        if (r->taken == r->head)
            return NULL;
    }
    const unsigned char *at = slot_at(r, r->shared->slot_of[r->taken % r->nslots]);
    slot_header h;
    memcpy(&h, at, sizeof h);
    *len = h.len;
    *tag = h.tag;
    return (const char *)at + sizeof h;
}

unsigned cr_ring_take(cr_ring *r)
{
    return r->shared->slot_of[r->taken++ % r->nslots];
}

void cr_ring_release(cr_ring *r, unsigned slot)
{
    atomic_store_explicit(&r->shared->released[slot], ++r->count[slot], memory_order_release);
}

unsigned cr_ring_used(const cr_ring *r)
{
    unsigned used = 0;
    for (unsigned k = 0; k < r->nslots; k++)
        used += r->count[k] -
                atomic_load_explicit(&r->shared->released[k], memory_order_acquire);
    return used;
}
