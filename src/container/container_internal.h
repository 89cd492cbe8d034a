/* What the containers share: the per-rank open-addressing table, and a pool of
 * small records that carry a reply's callback through a request. */
#ifndef COURIER_CONTAINER_INTERNAL_H
#define COURIER_CONTAINER_INTERNAL_H

#include "courier/container.h"
#include "courier/rng.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline size_t ct_pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* A table of fixed-size records, with linear probing from the slot the hash's low
 * bits name; erasing shifts the records after it back (no tombstones). A record is
 * the key, zero-padded to 8 bytes, then the value, padded to 8 bytes. Two layouts:
 *  - keys of 8 bytes (counting sets, maps of vertex numbers, the disjoint set): a
 *    slot is the record alone, and a bitmap of one bit per slot says which hold one.
 *    Comparing the key is one word, so a hash word would only add a third to every
 *    slot (16 bytes against 24) and to every miss of a large table;
 *  - other keys: a slot is an 8-byte tag (the key's hash with the top bit set; 0
 *    when empty), then the record, so that a probe compares words, not keys.
 * Every caller hashes a key with t->hash (ct_hash unless a test says otherwise): the
 * bitmap layout recomputes a record's home slot from its key when it moves. */
typedef struct ct_table {
    char *slots;
    uint64_t *used;   /* the bitmap layout's: bit i set when slot i holds a record */
    size_t cap;       /* slots, a power of two (0 before the first insert) */
    size_t count;     /* records held */
    size_t key_len, key_pad, value_pad, stride;
    size_t head;      /* bytes before the record in a slot: 8 (the tag) or 0 */
    size_t in_place;  /* doublings made where the table lies (table.c), for tests */
    bool crowded;     /* an insert probed past CT_LONG_PROBE slots: see ct_full */
    uint64_t (*hash)(const void *key, size_t len);
} ct_table;

#define CT_USED (UINT64_C(1) << 63)

/* cr_container_hash, inline for the hot paths: a SplitMix64 step per 8-byte word. */
static inline uint64_t ct_hash(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint64_t h = 0x243f6a8885a308d3ULL ^ (uint64_t)len;
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = cr_rng_hash64(h ^ w);
    }
    if (len) {
        uint64_t w = 0;
        memcpy(&w, p, len);
        h = cr_rng_hash64(h ^ w ^ UINT64_C(0x8000000000000000));
    }
    return h;
}

/* Equal keys: one word compare for the common 8-byte key. */
static inline bool ct_key_equal(const void *a, const void *b, size_t len)
{
    if (len == 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        return x == y;
    }
    return memcmp(a, b, len) == 0;
}

void ct_init(ct_table *t, size_t key_len, size_t value_len);
void ct_free(ct_table *t);
/* Make room for n records without growing again (false: out of memory). */
bool ct_reserve(ct_table *t, size_t n);
bool ct_grow(ct_table *t);
/* The table's parts for ct_order_by_region: equal runs of slots. */
#define CT_REGIONS 256
/* The n 8-byte keys of `in` copied to `out` (n words, not overlapping) in the order
 * of the region where each one's probe starts (region r: slots [r * cap / CT_REGIONS,
 * (r + 1) * cap / CT_REGIONS)), keys of one region in the order given: a counting
 * sort, two passes over the keys. For the bitmap layout (8-byte keys). */
void ct_order_by_region(const ct_table *t, const uint64_t *in, uint64_t *out, size_t n);

static inline uint64_t ct_tag(const ct_table *t, size_t i)
{
    uint64_t tag;
    memcpy(&tag, t->slots + i * t->stride, sizeof tag);
    return tag;
}

static inline bool ct_bitmap(const ct_table *t)
{
    return t->head == 0;
}

static inline bool ct_occupied(const ct_table *t, size_t i)
{
    if (ct_bitmap(t))
        return (t->used[i >> 6] >> (i & 63)) & 1;
    return ct_tag(t, i) != 0;
}

static inline void *ct_record(const ct_table *t, size_t i)
{
    return t->slots + i * t->stride + t->head;
}

/* The record of `key` (hash h), or NULL. */
static inline void *ct_find(const ct_table *t, const void *key, uint64_t h)
{
    if (!t->count)
        return NULL;
    size_t mask = t->cap - 1;
    if (ct_bitmap(t)) {
        for (size_t i = h & mask;; i = (i + 1) & mask) {
            if (!ct_occupied(t, i))
                return NULL;
            char *rec = ct_record(t, i);
            if (ct_key_equal(rec, key, 8))
                return rec;
        }
    }
    uint64_t want = h | CT_USED;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        uint64_t tag = ct_tag(t, i);
        if (!tag)
            return NULL;
        char *rec = t->slots + i * t->stride + 8;
        if (tag == want && ct_key_equal(rec, key, t->key_len))
            return rec;
    }
}

/* A probe this long does not happen by chance below three quarters full (the
 * longest run in a table of 2^27 random keys at that load is about 500 slots). It
 * happens when keys arrive in the slot order of a larger table of the same hash
 * (copying one map into another, loading a save): the second half of that order
 * lands on the first half of this table, which overflows into one run of millions
 * of slots while the table as a whole is not yet full, and every insert walks it. */
#define CT_LONG_PROBE 1024

/* The table must grow before the next insert: it doubles at three quarters, or at a
 * quarter once an insert probed past CT_LONG_PROBE (doubling splits every run). */
static inline bool ct_full(const ct_table *t)
{
    return (t->count + 1) * 4 > t->cap * 3 || (t->crowded && t->count * 4 >= t->cap);
}

/* After a fresh insert at slot i whose home was h: note a run too long. */
static inline void ct_note_probe(ct_table *t, size_t i, uint64_t h)
{
    if (((i - (size_t)h) & (t->cap - 1)) > CT_LONG_PROBE)
        t->crowded = true;
}

/* ct_place for the bitmap layout (8-byte keys), for the loops that know it. */
static inline __attribute__((always_inline)) uint64_t *ct_place_word(ct_table *t, uint64_t key,
                                                                    uint64_t h, bool *fresh)
{
    size_t mask = t->cap - 1;
    size_t i = h & mask;
    for (; (t->used[i >> 6] >> (i & 63)) & 1; i = (i + 1) & mask) {
        uint64_t *rec = (uint64_t *)(void *)(t->slots + i * t->stride);
        if (rec[0] == key) {
            *fresh = false;
            return rec;
        }
    }
    t->used[i >> 6] |= UINT64_C(1) << (i & 63);
    uint64_t *rec = (uint64_t *)(void *)(t->slots + i * t->stride);
    rec[0] = key; /* the value is zero from calloc or erase */
    t->count++;
    ct_note_probe(t, i, h);
    *fresh = true;
    return rec;
}

/* The record of `key`, inserted with a zero value if absent (*fresh then true), in a
 * table that is not ct_full: the inline part of ct_insert, for hot paths that grow
 * the table themselves first. */
static inline void *ct_place(ct_table *t, const void *key, uint64_t h, bool *fresh)
{
    if (ct_bitmap(t)) {
        uint64_t word;
        memcpy(&word, key, sizeof word);
        return ct_place_word(t, word, h, fresh);
    }
    size_t mask = t->cap - 1;
    uint64_t want = h | CT_USED;
    size_t i = h & mask;
    for (;; i = (i + 1) & mask) {
        uint64_t tag = ct_tag(t, i);
        if (!tag)
            break;
        char *rec = t->slots + i * t->stride + 8;
        if (tag == want && ct_key_equal(rec, key, t->key_len)) {
            *fresh = false;
            return rec;
        }
    }
    memcpy(t->slots + i * t->stride, &want, sizeof want);
    char *rec = t->slots + i * t->stride + 8;
    memcpy(rec, key, t->key_len); /* the padding and the value are zero from calloc or erase */
    t->count++;
    ct_note_probe(t, i, h);
    *fresh = true;
    return rec;
}

/* The record of `key`, inserted with a zero value if absent (*fresh then true),
 * growing the table when it must. Returns NULL only when the table cannot grow (out
 * of memory). */
void *ct_insert(ct_table *t, const void *key, uint64_t h, bool *fresh);

/* Start loading the slot where `h`'s probe begins, and its word of the bitmap layout's
 * used bits (a second miss in a large table: a bit per slot is 2 MiB for 16M slots). */
static inline void ct_prefetch(const ct_table *t, uint64_t h)
{
    if (t->cap) {
        size_t i = h & (t->cap - 1);
        __builtin_prefetch(t->slots + i * t->stride, 1);
        if (t->used)
            __builtin_prefetch(t->used + (i >> 6), 1);
    }
}
/* Remove `key`; returns whether it was there. */
bool ct_erase(ct_table *t, const void *key, uint64_t h);
/* The first used slot at or after i, or t->cap. */
static inline size_t ct_next(const ct_table *t, size_t i)
{
    if (ct_bitmap(t)) {
        while (i < t->cap) {
            uint64_t word = t->used[i >> 6] >> (i & 63);
            if (word)
                return i + (size_t)__builtin_ctzll(word);
            i = (i | 63) + 1;
        }
        return t->cap;
    }
    while (i < t->cap) {
        if (ct_tag(t, i))
            return i;
        i++;
    }
    return i;
}
static inline size_t ct_bytes(const ct_table *t)
{
    return t->cap * t->stride + (ct_bitmap(t) ? (t->cap + 63) / 64 * 8 : 0);
}

/* Reply slots: a request's ctx points to one, which names the container, the
 * caller's callback and context. Allocated in chunks that never move, recycled
 * through a free list: no allocation per request once the pool has grown. */
typedef struct ct_reply {
    void *container;
    void (*fn)(void); /* the caller's callback, cast back by the container */
    void *ctx;
    uint64_t item;    /* a word the container keeps with it (the disjoint set's item) */
    struct ct_reply *next_free;
} ct_reply;

typedef struct ct_pool {
    ct_reply *free;
    void **chunks;
    size_t nchunks, chunk_cap;
} ct_pool;

ct_reply *ct_pool_get(ct_pool *p, const char *who);
void ct_pool_put(ct_pool *p, ct_reply *r);
void ct_pool_free(ct_pool *p);

/* The sum of `mine` over the comm's ranks. Collective. */
uint64_t ct_sum_over_ranks(cr_comm *comm, uint64_t mine);

/* Records a container's handlers receive while the container may not change (its
 * for_all or a visitor runs): kept in arrival order and applied afterwards. */
typedef struct ct_deferred {
    char *bytes;
    size_t len, cap;
} ct_deferred;

/* Append one record (an int kind, then len bytes) to d. */
void ct_defer(ct_deferred *d, int kind, const void *rec, size_t len, const char *who);

/* Sizes the save and load calls (save.c) need. */
size_t ct_map_key_len(const cr_map *map);
size_t ct_map_value_len(const cr_map *map);
/* Insert `count` saved records of the map (the key, then the value; record bytes
 * key_len + value_len) as cr_map_insert would, except that the records this rank owns
 * go straight into its table, in their order. Local; not inside a handler, a for_all
 * or a visitor; may run handlers (for the records it sends). */
void ct_map_load(cr_map *map, const void *records, size_t count);
/* Up to `max` of the map's records from slot *cursor on (0: the first; the waiting
 * adds are settled then), copied to `out` as a save holds them (the key, then the
 * value, unpadded); *cursor moves past them. Returns how many (0: no more). Local;
 * the map must not change between the calls of one walk. */
size_t ct_map_copy_records(cr_map *map, size_t *cursor, void *out, size_t max);
cr_map *ct_set_map(cr_set *set);
size_t ct_bag_item_len(const cr_bag *bag);
cr_comm *ct_bag_comm(const cr_bag *bag);
cr_comm *ct_disjoint_set_comm(const cr_disjoint_set *ds);

#endif
