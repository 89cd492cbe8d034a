/* The combining index (combine.h). */
#include "mailbox/combine.h"

#include "common/fatal.h"
#include "courier/rng.h"
#include "mailbox/outbuf.h"

#include <stdlib.h>
#include <string.h>

void cr_combine_index_free(cr_combine_index *x)
{
    free(x->slots);
    *x = (cr_combine_index){0};
}

uint32_t cr_combine_hash(int hop, int dest, uint16_t handler, const void *key, size_t key_len)
{
    uint64_t h = cr_rng_hash64(((uint64_t)(uint32_t)hop << 32 | (uint32_t)dest) ^
                           (uint64_t)handler << 48);
    const unsigned char *p = key;
    size_t i = 0;
    for (; i + 8 <= key_len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = cr_rng_hash64(h ^ w);
    }
    if (i < key_len) {
        uint64_t w = 0;
        memcpy(&w, p + i, key_len - i);
        h = cr_rng_hash64(h ^ w ^ (uint64_t)key_len << 56);
    }
    uint32_t v = (uint32_t)(h >> 32);
    return v ? v : 1; /* 0 marks a slot never used */
}

/* Equal keys without a call for the short keys combining handlers mostly have. */
static inline bool keys_equal(const char *a, const void *b, size_t len)
{
    uint64_t x[2], y[2];
    switch (len) {
    case 8:
        memcpy(x, a, 8);
        memcpy(y, b, 8);
        return x[0] == y[0];
    case 16:
        memcpy(x, a, 16);
        memcpy(y, b, 16);
        return x[0] == y[0] && x[1] == y[1];
    default: return memcmp(a, b, len) == 0;
    }
}

/* A slot is live while the buffer it points into has not been sent since. */
static bool live(const cr_combine_slot *s, const cr_outbufs *o)
{
    if (s->hash == 0)
        return false;
    const cr_outbuf *b = cr_outbufs_peek(o, (int)s->hop);
    return b->gen == s->gen && s->off < b->len;
}

static cr_combine_slot *probe(cr_combine_index *x, const cr_outbufs *o, const cr_combine_key *k,
                              bool *found)
{
    cr_combine_slot *free_slot = NULL;
    *found = false;
    /* Only slots with the same hash can match; whether a slot is live (a look at its
     * buffer) is asked of the others only until a free one has been found. */
    for (uint32_t i = 0; i < CR_COMBINE_PROBES; i++) {
        cr_combine_slot *s = &x->slots[(k->hash + i) & (x->nslots - 1)];
        if (s->hash == k->hash && live(s, o) && (int)s->hop == k->hop && s->dest == k->dest &&
            s->handler == k->handler && s->len == k->len &&
            keys_equal(cr_outbufs_peek(o, (int)s->hop)->data + s->off, k->key, k->key_len)) {
            *found = true;
            return s;
        }
        if (!free_slot && (s->hash == 0 || !live(s, o)))
            free_slot = s;
    }
    return free_slot;
}

/* Double the table and enter its live slots again (dead ones are dropped). */
static void grow(cr_combine_index *x, const cr_outbufs *o)
{
    cr_combine_index bigger = {.nslots = x->nslots * 2, .grown = x->grown + 1};
    bigger.slots = cr_xcalloc(bigger.nslots, sizeof *bigger.slots);
    for (uint32_t i = 0; i < x->nslots; i++) {
        const cr_combine_slot *s = &x->slots[i];
        if (!live(s, o))
            continue;
        for (uint32_t j = 0; j < bigger.nslots; j++) {
            cr_combine_slot *t = &bigger.slots[(s->hash + j) & (bigger.nslots - 1)];
            if (t->hash == 0) {
                *t = *s;
                break;
            }
        }
    }
    free(x->slots);
    *x = bigger;
}

cr_combine_slot *cr_combine_find(cr_combine_index *x, const cr_outbufs *o,
                                 const cr_combine_key *k, bool *found)
{
    if (!x->slots) {
        x->nslots = CR_COMBINE_MIN_SLOTS;
        x->slots = cr_xcalloc(x->nslots, sizeof *x->slots);
    }
    cr_combine_slot *s = probe(x, o, k, found);
    while (!s && x->nslots < CR_COMBINE_MAX_SLOTS) {
        grow(x, o);
        s = probe(x, o, k, found);
    }
    return s;
}
