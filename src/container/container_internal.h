/* What the containers share: the per-rank open-addressing table, and a pool of
 * small records that carry a reply's callback through a request. */
#ifndef COURIER_CONTAINER_INTERNAL_H
#define COURIER_CONTAINER_INTERNAL_H

#include "courier/container.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline size_t ct_pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* A table of fixed-size records: a slot is an 8-byte tag (the key's hash with the top
 * bit set; 0 when the slot is empty), then the record: the key, zero-padded to 8
 * bytes, and the value, padded to 8 bytes. Linear probing from the slot the hash's
 * low bits name; erasing shifts the records after it back (no tombstones). */
typedef struct ct_table {
    char *slots;
    size_t cap;       /* slots, a power of two (0 before the first insert) */
    size_t count;     /* records held */
    size_t key_len, key_pad, value_pad, stride;
} ct_table;

#define CT_USED (UINT64_C(1) << 63)

void ct_init(ct_table *t, size_t key_len, size_t value_len);
void ct_free(ct_table *t);
/* The record of `key` (hash h), or NULL. */
void *ct_find(const ct_table *t, const void *key, uint64_t h);
/* The record of `key`, inserted with a zero value if absent (*fresh then true).
 * Returns NULL only when the table cannot grow (out of memory). */
void *ct_insert(ct_table *t, const void *key, uint64_t h, bool *fresh);
/* Remove `key`; returns whether it was there. */
bool ct_erase(ct_table *t, const void *key, uint64_t h);
/* The first used slot at or after i, or t->cap. */
static inline size_t ct_next(const ct_table *t, size_t i)
{
    while (i < t->cap) {
        uint64_t tag;
        __builtin_memcpy(&tag, t->slots + i * t->stride, sizeof tag);
        if (tag)
            return i;
        i++;
    }
    return i;
}
static inline void *ct_record(const ct_table *t, size_t i)
{
    return t->slots + i * t->stride + 8;
}
static inline size_t ct_bytes(const ct_table *t)
{
    return t->cap * t->stride;
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

/* Records a container's handlers receive while the container may not change (its
 * for_all or a visitor runs): kept in arrival order and applied afterwards. */
typedef struct ct_deferred {
    char *bytes;
    size_t len, cap;
} ct_deferred;

/* Append one record (an int kind, then len bytes) to d. */
void ct_defer(ct_deferred *d, int kind, const void *rec, size_t len, const char *who);

#endif
