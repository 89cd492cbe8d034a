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

/* The hash of the record in a slot's bytes (its tag in the tagged layout), whose low
 * bits name the slot it would be placed in first. */
static inline __attribute__((always_inline)) uint64_t slot_home(const ct_table *t,
                                                                const char *slot_bytes)
{
    if (ct_bitmap(t) && t->hash == cr_container_hash)
        return ct_hash(slot_bytes, 8); /* inline: once per record moved */
    if (ct_bitmap(t))
        return t->hash(slot_bytes, t->key_len);
    uint64_t tag;
    memcpy(&tag, slot_bytes, sizeof tag);
    return tag;
}

static size_t home_of(const ct_table *t, size_t i, size_t mask)
{
    return slot_home(t, t->slots + i * t->stride) & mask;
}

static void set_used(ct_table *t, size_t i)
{
    if (t->used)
        t->used[i >> 6] |= UINT64_C(1) << (i & 63);
}

/* Slot i left empty: all zero, as placing expects, and unmarked. */
static void clear_slot(ct_table *t, size_t i)
{
    char *slot = t->slots + i * t->stride;
    if (t->stride == 16) /* the counting set's slot: no call to clear two words */
        memset(slot, 0, 16);
    else
        memset(slot, 0, t->stride);
    if (t->used)
        t->used[i >> 6] &= ~(UINT64_C(1) << (i & 63));
}

/* A slot's bytes (its tag, if any, and record) placed at the first free slot from
 * its home under t's capacity. */
static void put_back(ct_table *t, const char *slot_bytes)
{
    size_t mask = t->cap - 1;
    size_t j = slot_home(t, slot_bytes) & mask;
    while (ct_occupied(t, j))
        j = (j + 1) & mask;
    memcpy(t->slots + j * t->stride, slot_bytes, t->stride);
    set_used(t, j);
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
    for (size_t i = ct_next(t, 0); i < t->cap; i = ct_next(t, i + 1))
        put_back(&next, t->slots + i * t->stride);
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

/* ---- doubling in place ----------------------------------------------------------
 *
 * A mapped table doubles without a second table: the mapping is extended (mremap
 * keeps the old pages and copies no bytes; only the new half is fresh, zeroed by the
 * kernel) and every record is placed again from where it is. Against allocating a
 * table twice the size and copying into it, a table that grows to 64 MiB makes the
 * kernel zero 64 MiB of fresh pages instead of 64 + 32 + 16 + ... MiB.
 *
 * Why it is correct: the home slot is the hash's low bits, so a record whose home was
 * a goes to a or a + cap. Let s be the first empty slot; the records of [0, s) are
 * set aside and placed again last. The others are taken in slot order i = s+1, ...,
 * each placed from its new home as if slot i were empty (so most stay where they
 * are). One that stays low had its home in (s, i] (the run that holds it starts
 * after the empty slot s) and lands there, at or before i; one that moves up lands
 * in the upper half or, wrapping round from the top, in [0, i]. So every probe path
 * runs only over records already placed, which never move again, and no record is
 * taken out of a path once it is part of one. */

#ifdef MREMAP_MAYMOVE
/* Slot i's bytes copied to out and the slot left empty. */
static void take_out(ct_table *t, size_t i, void *out)
{
    memcpy(out, t->slots + i * t->stride, t->stride);
    clear_slot(t, i);
}

/* Slot i's bytes moved to the empty slot j, slot i left empty. */
static void move_slot(ct_table *t, size_t i, size_t j)
{
    char *from = t->slots + i * t->stride, *to = t->slots + j * t->stride;
    if (t->stride == 16) /* the counting set's slot: no call to copy two words */
        memcpy(to, from, 16);
    else
        memcpy(to, from, t->stride);
    set_used(t, j);
    clear_slot(t, i);
}

/* Double a mapped table where it lies. False, the table unchanged, when it is not
 * mapped or memory is short (the caller then copies). */
static bool grow_in_place(ct_table *t)
{
    size_t cap = t->cap, bytes = cap * t->stride;
    if (bytes < TABLE_MAPPED_BYTES || cap > SIZE_MAX / 2 / t->stride)
        return false;
    size_t s = 0;
    while (ct_occupied(t, s))
        s++; /* a table below ct_full has an empty slot */
    char *front = s ? malloc(s * t->stride) : NULL;
    if (s && !front)
        return false;
    if (ct_bitmap(t)) {
        uint64_t *used = realloc(t->used, cap / 64 * 2 * sizeof *used);
        if (!used) {
            free(front);
            return false;
        }
        memset(used + cap / 64, 0, cap / 64 * sizeof *used);
        t->used = used; /* a longer bitmap with a zero tail changes nothing yet */
    }
    void *slots = mremap(t->slots, bytes, 2 * bytes, MREMAP_MAYMOVE);
    if (slots == MAP_FAILED) {
        free(front);
        return false;
    }
#ifdef MADV_HUGEPAGE
    (void)madvise(slots, 2 * bytes, MADV_HUGEPAGE);
#endif
    t->slots = slots;
    for (size_t i = 0; i < s; i++)
        take_out(t, i, front + i * t->stride);
    t->cap = 2 * cap;
    size_t mask = t->cap - 1;
    for (size_t i = ct_next(t, s + 1); i < cap; i = ct_next(t, i + 1)) {
        /* Where it would land were slot i empty: most records stay put. */
        size_t j = slot_home(t, t->slots + i * t->stride) & mask;
        while (j != i && ct_occupied(t, j))
            j = (j + 1) & mask;
        if (j != i)
            move_slot(t, i, j);
    }
    for (size_t i = 0; i < s; i++)
        put_back(t, front + i * t->stride);
    free(front);
    t->in_place++;
    return true;
}
#else /* no mremap: every doubling copies */
static bool grow_in_place(ct_table *t)
{
    (void)t;
    return false;
}
#endif

/* False only when the table is full and cannot double: a crowded table that
 * cannot double goes on as it is. */
bool ct_grow(ct_table *t)
{
    if (!t->cap)
        return resize(t, 16);
    bool must = (t->count + 1) * 4 > t->cap * 3;
    t->crowded = false;
    return grow_in_place(t) || resize(t, t->cap * 2) || !must;
}

void ct_order_by_region(const ct_table *t, const uint64_t *in, uint64_t *out, size_t n)
{
    unsigned shift = 0;
    while (((size_t)CT_REGIONS << shift) < t->cap)
        shift++;
    size_t mask = t->cap ? t->cap - 1 : 0, start[CT_REGIONS + 1] = {0};
    for (size_t i = 0; i < n; i++)
        start[((slot_home(t, (const char *)&in[i]) & mask) >> shift) + 1]++;
    for (size_t r = 0; r < CT_REGIONS; r++)
        start[r + 1] += start[r];
    for (size_t i = 0; i < n; i++)
        out[start[(slot_home(t, (const char *)&in[i]) & mask) >> shift]++] = in[i];
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
    clear_slot(t, hole);
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
