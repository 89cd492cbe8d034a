/* The containers' per-rank table, reply pool and deferred records
 * (container_internal.h). */
#include "container/container_internal.h"

#include "common/fatal.h"
#include "courier/coll.h"
#include "courier/rng.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Tables from this size on are mapped on their own and the kernel is asked to back
 * them with huge pages: an insert into a large table is a random access, and with
 * small pages nearly every one also misses the TLB. Below it, calloc. */
#define TABLE_MAPPED_BYTES ((size_t)4 << 20)

static void *slots_alloc(size_t n, size_t size)
{
    size_t bytes = n * size;
    if (bytes < TABLE_MAPPED_BYTES)
        return calloc(n, size);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, bytes, MADV_HUGEPAGE); /* a hint: without it the table still works */
#endif
    return p;
}

static void slots_free(void *p, size_t n, size_t size)
{
    if (p && n * size < TABLE_MAPPED_BYTES)
        free(p);
    else if (p)
        munmap(p, n * size);
}

uint64_t cr_container_hash(const void *key, size_t len)
{
    return ct_hash(key, len);
}

void ct_init(ct_table *t, size_t key_len, size_t value_len)
{
    *t = (ct_table){.key_len = key_len, .key_pad = ct_pad8(key_len),
                    .value_pad = ct_pad8(value_len), .hash = cr_container_hash};
    t->head = key_len == 8 ? 0 : 8;
    t->stride = t->head + t->key_pad + t->value_pad;
}

void ct_free(ct_table *t)
{
    slots_free(t->slots, t->cap, t->stride);
    free(t->used);
    t->slots = NULL;
    t->used = NULL;
    t->cap = t->count = 0;
}

/* Where slot i's record would be placed first: its hash's low bits. */
static size_t home_of(const ct_table *t, size_t i, size_t mask)
{
    if (ct_bitmap(t))
        return t->hash(ct_record(t, i), t->key_len) & mask;
    return ct_tag(t, i) & mask;
}

/* Make the table `cap` slots (a power of two, above the count), placing every
 * record again. */
static bool resize(ct_table *t, size_t cap)
{
    if (cap > SIZE_MAX / t->stride)
        return false;
    ct_table next = *t;
    next.cap = cap;
    next.slots = slots_alloc(cap, t->stride);
    next.used = ct_bitmap(t) ? calloc((cap + 63) / 64, sizeof *next.used) : NULL;
    if (!next.slots || (ct_bitmap(t) && !next.used)) {
        slots_free(next.slots, cap, t->stride);
        free(next.used);
        return false;
    }
    size_t mask = cap - 1;
    for (size_t i = ct_next(t, 0); i < t->cap; i = ct_next(t, i + 1)) {
        size_t j = home_of(t, i, mask);
        while (ct_occupied(&next, j))
            j = (j + 1) & mask;
        memcpy(next.slots + j * t->stride, t->slots + i * t->stride, t->stride);
        if (next.used)
            next.used[j >> 6] |= UINT64_C(1) << (j & 63);
    }
    slots_free(t->slots, t->cap, t->stride);
    free(t->used);
    *t = next;
    return true;
}

void *ct_insert(ct_table *t, const void *key, uint64_t h, bool *fresh)
{
    if (ct_full(t) && !ct_grow(t))
        return NULL;
    return ct_place(t, key, h, fresh);
}

bool ct_grow(ct_table *t)
{
    return resize(t, t->cap ? t->cap * 2 : 16);
}

bool ct_reserve(ct_table *t, size_t n)
{
    size_t cap = t->cap ? t->cap : 16;
    while (cap / 4 * 3 < n) {
        if (cap > SIZE_MAX / 2)
            return false;
        cap *= 2;
    }
    return cap == t->cap || resize(t, cap);
}

bool ct_erase(ct_table *t, const void *key, uint64_t h)
{
    char *rec = ct_find(t, key, h);
    if (!rec)
        return false;
    size_t mask = t->cap - 1;
    size_t hole = (size_t)(rec - t->head - t->slots) / t->stride;
    /* Backward shift: a record after the hole moves into it unless its home slot lies
     * cyclically after the hole and at or before the record's slot. */
    for (size_t j = (hole + 1) & mask; ct_occupied(t, j); j = (j + 1) & mask) {
        size_t home = home_of(t, j, mask);
        bool stays = ((j - home) & mask) < ((j - hole) & mask);
        if (stays)
            continue;
        memcpy(t->slots + hole * t->stride, t->slots + j * t->stride, t->stride);
        hole = j;
    }
    memset(t->slots + hole * t->stride, 0, t->stride);
    if (t->used)
        t->used[hole >> 6] &= ~(UINT64_C(1) << (hole & 63));
    t->count--;
    return true;
}

/* ---- reply slots ------------------------------------------------------------- */

enum { POOL_CHUNK = 256 };

ct_reply *ct_pool_get(ct_pool *p, const char *who)
{
    if (!p->free) {
        if (p->nchunks == p->chunk_cap) {
            size_t cap = p->chunk_cap ? 2 * p->chunk_cap : 8;
            void **chunks = realloc(p->chunks, cap * sizeof *chunks);
            if (!chunks)
                cr_fatal("%s: out of memory for the replies awaited", who);
            p->chunks = chunks;
            p->chunk_cap = cap;
        }
        ct_reply *chunk = malloc(POOL_CHUNK * sizeof *chunk);
        if (!chunk)
            cr_fatal("%s: out of memory for the replies awaited", who);
        p->chunks[p->nchunks++] = chunk;
        for (size_t i = 0; i < POOL_CHUNK; i++) {
            chunk[i].next_free = p->free;
            p->free = &chunk[i];
        }
    }
    ct_reply *r = p->free;
    p->free = r->next_free;
    return r;
}

void ct_pool_put(ct_pool *p, ct_reply *r)
{
    r->next_free = p->free;
    p->free = r;
}

void ct_pool_free(ct_pool *p)
{
    for (size_t i = 0; i < p->nchunks; i++)
        free(p->chunks[i]);
    free(p->chunks);
    *p = (ct_pool){0};
}

/* ---- deferred records ---------------------------------------------------------- */

void ct_defer(ct_deferred *d, int kind, const void *rec, size_t len, const char *who)
{
    size_t need = d->len + 16 + ct_pad8(len);
    if (need > d->cap) {
        size_t cap = d->cap ? d->cap : 4096;
        while (cap < need)
            cap *= 2;
        char *bytes = realloc(d->bytes, cap);
        if (!bytes)
            cr_fatal("%s: out of memory for the records that arrived while it was busy", who);
        d->bytes = bytes;
        d->cap = cap;
    }
    uint64_t head[2] = {(uint64_t)kind, (uint64_t)len};
    memcpy(d->bytes + d->len, head, sizeof head);
    if (len)
        memcpy(d->bytes + d->len + 16, rec, len);
    d->len = need;
}

uint64_t ct_sum_over_ranks(cr_comm *comm, uint64_t mine)
{
    uint64_t all;
    cr_allreduce(comm, &mine, &all, 1, CR_UINT64, CR_OP_SUM, NULL);
    return all;
}
