/* cr_map, and the set and counting set built on it (include/courier/container.h).
 *
 * An element lives on the rank the hash of its key names. A record on the wire is
 * laid out as a table slot's record is: the key zero-padded to 8 bytes, then the
 * value padded to 8 bytes. So dedup's combining rules, which merge the 8-byte words
 * after the padded key, merge two inserts in a send buffer and an insert into the
 * table with one function. */
#include "container/container_internal.h"

#include "common/fatal.h"
#include "courier/coll.h"
#include "courier/rng.h"
#include "mailbox/module.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { KIND_INSERT, KIND_ERASE, KIND_VISIT };
enum { REPLY_MAP, REPLY_SET, REPLY_COUNT };

/* The largest record: a visit's key, visitor number and arguments. */
#define MAX_RECORD (CR_MAX_KEY + 8 + CR_CONTAINER_MAX_VALUE)

/* A record of an 8-byte key and its count, as it travels and as the count cache holds
 * it (its empty slots: count_cache_create). */
typedef struct count_slot {
    uint64_t key, count;
} count_slot;

struct cr_map {
    cr_comm *comm;
    int size;
    const char *name; /* "cr_map", "cr_set" or "cr_counting_set", for messages */
    void *outer;      /* the set or counting set this map serves, else NULL */
    size_t key_len, key_pad, value_len, value_pad, rec_len;
    ct_table table;
    void (*merge)(void *dst, const void *src, size_t len, void *user);
    void *merge_user;
    void (*user_merge)(void *value, const void *incoming, size_t value_len, void *user);
    void *user_merge_user;
    cr_map_visitor *visitors;
    size_t nvisitors;
    int h_insert, h_erase, h_visit, h_get;
    int h_unit; /* the count cache's: an 8-byte key that adds 1 (-1: none) */
    ct_pool replies;
    ct_deferred deferred;
    int busy; /* for_all or a visitor runs: the table must not change */
    /* The source cache (see cache_insert): a direct-mapped table of slots, each an
     * 8-byte tag then a record; NULL when the map's rule makes order matter. */
    char *cache;
    size_t cache_slots, cache_stride;
    uint32_t cache_window, cache_misses, cache_skip; /* see cache_review */
    size_t cache_used;        /* slots holding a record: a barrier with none scans nothing */
    const int *handler_depth; /* the comm's: > 0 inside a handler, where the cache is passed by */
    bool add_u64;             /* the rule adds one integer value: merged inline */
    /* The count cache (see count_add), in place of the cache above for 8-byte
     * keys whose values are added integers: slots are the records themselves. */
    count_slot *counts;
    /* Units received and not yet added (see settle): room for WAITING_UNITS keys,
     * and as many words to order them in; NULL until the first unit arrives. */
    uint64_t *waiting, *ordered;
    size_t nwaiting;
};

struct cr_set {
    cr_map *map;
};

struct cr_counting_set {
    cr_map *map;
};

/* The rank that owns keys of hash h (cr_map_owner's rule). */
static inline int owner_of_hash(const cr_map *m, uint64_t h)
{
    return (int)cr_rng_bounded(h, (uint64_t)m->size);
}

/* ---- applying records on the owner -------------------------------------------- */

static void replay(cr_map *m);
static void settle(cr_map *m);

static inline void *insert_slot_hashed(cr_map *m, const void *key, uint64_t h, bool *fresh)
{
    void *slot = ct_full(&m->table) && !ct_grow(&m->table) ? NULL
                                                          : ct_place(&m->table, key, h, fresh);
    if (!slot)
        cr_fatal("%s: out of memory growing this rank's table beyond %zu elements", m->name,
                 m->table.count);
    return slot;
}

static void *insert_slot(cr_map *m, const void *key, bool *fresh)
{
    return insert_slot_hashed(m, key, ct_hash(key, m->key_len), fresh);
}

static inline void apply_insert_hashed(cr_map *m, const char *rec, uint64_t h)
{
    bool fresh;
    char *slot = insert_slot_hashed(m, rec, h, &fresh);
    if (fresh)
        memcpy(slot + m->key_pad, rec + m->key_pad, m->value_pad);
    else if (m->merge)
        m->merge(slot, rec, m->rec_len, m->merge_user);
}

static void apply_insert(cr_map *m, const char *rec)
{
    apply_insert_hashed(m, rec, ct_hash(rec, m->key_len));
}

static void apply_erase(cr_map *m, const char *rec)
{
    settle(m);
    ct_erase(&m->table, rec, ct_hash(rec, m->key_len));
}

static void apply_visit(cr_map *m, const char *rec, size_t len)
{
    settle(m);
    uint64_t which;
    memcpy(&which, rec + m->key_pad, sizeof which);
    if (which >= m->nvisitors)
        cr_fatal("%s: a visit names visitor %llu, but the map has %zu", m->name,
                 (unsigned long long)which, m->nvisitors);
    const cr_map_visitor *v = &m->visitors[which];
    void *value;
    if (v->create_missing) {
        bool fresh;
        value = (char *)insert_slot(m, rec, &fresh) + m->key_pad;
    } else {
        value = ct_find(&m->table, rec, ct_hash(rec, m->key_len));
        if (value)
            value = (char *)value + m->key_pad;
    }
    size_t head = m->key_pad + 8;
    m->busy++; /* the visitor may send, and so run handlers: they wait until it returns */
    v->fn(m, rec, value, rec + head, len - head, v->user);
    m->busy--;
    if (!m->busy)
        replay(m);
}

static void apply(cr_map *m, int kind, const char *rec, size_t len)
{
    switch (kind) {
    case KIND_INSERT: apply_insert(m, rec); break;
    case KIND_ERASE: apply_erase(m, rec); break;
    default: apply_visit(m, rec, len); break;
    }
}

/* The records that arrived while the map was busy, in their order. Applying them may
 * defer more (a visitor that sends to this rank): those go to a fresh list. */
static void replay(cr_map *m)
{
    while (m->deferred.len) {
        ct_deferred todo = m->deferred;
        m->deferred = (ct_deferred){0};
        for (size_t at = 0; at < todo.len;) {
            uint64_t head[2];
            memcpy(head, todo.bytes + at, sizeof head);
            apply(m, (int)head[0], todo.bytes + at + 16, (size_t)head[1]);
            at += 16 + ct_pad8((size_t)head[1]);
        }
        if (!m->deferred.bytes) { /* keep the larger buffer for the next time */
            m->deferred = todo;
            m->deferred.len = 0;
        } else {
            free(todo.bytes);
        }
    }
}

static void receive(cr_map *m, int kind, const char *rec, size_t len)
{
    if (m->busy)
        ct_defer(&m->deferred, kind, rec, len, m->name);
    else
        apply(m, kind, rec, len);
}

static void bad_record(const cr_map *m, const char *what, size_t len, size_t want)
{
    cr_fatal("%s: %s record of %zu bytes, expected %zu (a different map on the sender?)",
             m->name, what, len, want);
}

/* Inserts a few records ahead of the one applied start loading their slots, so that
 * the cache misses of a large table overlap (16 measured better than 8 with 10M keys
 * at 4 ranks; the loads in flight are what the core allows, not the distance). */
#define PREFETCH_AHEAD 16

/* How apply_run reads a record: any map's insert, a count {key, count} or a unit (an
 * 8-byte key that adds 1) of the maps with a count cache. */
enum { RUN_INSERTS, RUN_COUNTS, RUN_UNITS };

/* A count {key, count} (or a unit, a key alone that adds 1) into the table's word
 * layout, the add inline: the maps with a count cache (8-byte keys, added integers). */
static inline __attribute__((always_inline)) void apply_count(cr_map *m, const void *payload,
                                                              uint64_t h, bool unit)
{
    ct_table *t = &m->table;
    count_slot rec = {0, 1};
    memcpy(&rec, payload, unit ? sizeof rec.key : sizeof rec);
    if (ct_full(t) && !ct_grow(t))
        cr_fatal("%s: out of memory growing this rank's table beyond %zu elements", m->name,
                 t->count);
    bool fresh;
    uint64_t *slot = ct_place_word(t, rec.key, h, &fresh);
    slot[1] = fresh ? rec.count : slot[1] + rec.count;
}

/* A run of inserts, each record's slot fetched PREFETCH_AHEAD records before it is
 * applied. Inlined twice, for counts (no call per record) and for any other map.
 * A prefetch is only a hint: a slot that moves when the table grows costs a miss. */
static inline __attribute__((always_inline)) void apply_run(cr_map *m, const cr_batch *b,
                                                            int kind)
{
    size_t key_len = kind == RUN_INSERTS ? m->key_len : 8;
    uint64_t ahead[PREFETCH_AHEAD];
    size_t n = b->count;
    for (size_t i = 0; i < n && i < PREFETCH_AHEAD; i++) {
        ahead[i] = ct_hash(cr_batch_payload(b, i), key_len);
        ct_prefetch(&m->table, ahead[i]);
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t h = ahead[i % PREFETCH_AHEAD];
        if (i + PREFETCH_AHEAD < n) {
            uint64_t later = ct_hash(cr_batch_payload(b, i + PREFETCH_AHEAD), key_len);
            ahead[i % PREFETCH_AHEAD] = later;
            ct_prefetch(&m->table, later);
        }
        if (kind == RUN_INSERTS)
            apply_insert_hashed(m, cr_batch_payload(b, i), h);
        else
            apply_count(m, cr_batch_payload(b, i), h, kind == RUN_UNITS);
    }
}

static void on_inserts(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    cr_map *m = user;
    if (b->len != m->rec_len)
        bad_record(m, "an insert", b->len, m->rec_len);
    if (m->busy) {
        for (size_t i = 0; i < b->count; i++)
            ct_defer(&m->deferred, KIND_INSERT, cr_batch_payload(b, i), m->rec_len, m->name);
        return;
    }
    if (m->counts)
        apply_run(m, b, RUN_COUNTS);
    else
        apply_run(m, b, RUN_INSERTS);
}

/* ---- units waiting on the owner ------------------------------------------------
 *
 * Units (adds of 1 to 8-byte keys: what a resting count cache sends, so keys that
 * rarely repeat) commute with each other and with every other add, so the owner
 * gathers up to WAITING_UNITS of them and adds them at once, ordered by the region
 * of the table their probes start in (ct_order_by_region) once the table is larger
 * than a core's caches: the table is then worked through from one end to the other,
 * a region at a time, instead of at random. Whatever reads the table or does not
 * commute with an add (an erase, a visit, a look-up served, for_all, the sizes,
 * cr_map_local_find) settles first: adds the units that wait. Nothing waits while the map is
 * busy (for_all settles before it starts, and units arriving during it are deferred
 * as any record is), so settling never has to wait either. */
#define WAITING_UNITS ((size_t)1 << 20) /* 8 MiB of keys, and 8 MiB to order them in */
#define ORDER_FROM_BYTES ((size_t)4 << 20)

static void settle(cr_map *m)
{
    size_t n = m->nwaiting;
    if (!n)
        return;
    m->nwaiting = 0;
    const uint64_t *keys = m->waiting;
    if (ct_bytes(&m->table) >= ORDER_FROM_BYTES) {
        ct_order_by_region(&m->table, m->waiting, m->ordered, n);
        keys = m->ordered;
    }
    cr_batch all = {.payloads = (const char *)keys, .stride = 8, .len = 8, .count = n};
    apply_run(m, &all, RUN_UNITS);
}

/* Room for the units that wait, on the first one; false (units then go straight
 * into the table) when the memory is not there. */
static bool waiting_alloc(cr_map *m)
{
    if (!m->waiting) {
        m->waiting = malloc(WAITING_UNITS * sizeof *m->waiting);
        m->ordered = m->waiting ? malloc(WAITING_UNITS * sizeof *m->ordered) : NULL;
        if (!m->ordered) {
            free(m->waiting);
            m->waiting = NULL;
        }
    }
    return m->waiting != NULL;
}

/* Units: what a resting count cache sends for an add of 1, half a count's bytes. */
static void on_units(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    cr_map *m = user;
    if (b->len != sizeof(uint64_t))
        bad_record(m, "a unit insert", b->len, sizeof(uint64_t));
    if (m->busy) {
        for (size_t i = 0; i < b->count; i++) {
            count_slot rec = {0, 1};
            memcpy(&rec.key, cr_batch_payload(b, i), sizeof rec.key);
            ct_defer(&m->deferred, KIND_INSERT, &rec, sizeof rec, m->name);
        }
        return;
    }
    if (!waiting_alloc(m)) {
        apply_run(m, b, RUN_UNITS);
        return;
    }
    for (size_t i = 0; i < b->count; i++) {
        memcpy(&m->waiting[m->nwaiting++], cr_batch_payload(b, i), sizeof *m->waiting);
        if (m->nwaiting == WAITING_UNITS)
            settle(m);
    }
}

static void on_erase(cr_comm *comm, int src, const void *rec, size_t len, void *user)
{
    (void)comm, (void)src;
    cr_map *m = user;
    if (len != m->key_pad)
        bad_record(m, "an erase", len, m->key_pad);
    receive(m, KIND_ERASE, rec, len);
}

static void on_visit(cr_comm *comm, int src, const void *rec, size_t len, void *user)
{
    (void)comm, (void)src;
    cr_map *m = user;
    if (len < m->key_pad + 8)
        bad_record(m, "a visit", len, m->key_pad + 8);
    receive(m, KIND_VISIT, rec, len);
}

/* A look-up on the owner: the reply is a found word, then the value. Reading needs
 * no deferral: it changes nothing but adding the units that wait, which never wait
 * while the map is busy. */
static void serve_get(cr_comm *comm, cr_dedup_req *req, const void *rec, size_t len, void *user)
{
    cr_map *m = user;
    if (len != m->key_pad)
        bad_record(m, "a look-up", len, m->key_pad);
    settle(m);
    const char *slot = ct_find(&m->table, rec, ct_hash(rec, m->key_len));
    uint64_t out[1 + CR_CONTAINER_MAX_VALUE / 8];
    out[0] = slot != NULL;
    if (slot)
        memcpy(out + 1, slot + m->key_pad, m->value_pad);
    else
        memset(out + 1, 0, m->value_pad);
    cr_dedup_reply(comm, req, out, 8 + m->value_pad);
}

static void on_reply(cr_comm *comm, const void *data, size_t len, void *ctx)
{
    (void)comm;
    ct_reply *r = ctx;
    cr_map *m = r->container;
    if (len != 8 + m->value_pad)
        bad_record(m, "a reply", len, 8 + m->value_pad);
    uint64_t found;
    memcpy(&found, data, sizeof found);
    const char *value = found ? (const char *)data + 8 : NULL;
    void (*fn)(void) = r->fn;
    void *user_ctx = r->ctx;
    uint64_t kind = r->item;
    ct_pool_put(&m->replies, r); /* before the callback, which may ask again */
    if (kind == REPLY_MAP) {
        ((cr_map_get_fn)fn)(m, value, user_ctx);
    } else if (kind == REPLY_SET) {
        ((void (*)(cr_set *, bool, void *))fn)(m->outer, value != NULL, user_ctx);
    } else {
        uint64_t count = 0;
        if (value)
            memcpy(&count, value, sizeof count);
        ((void (*)(cr_counting_set *, uint64_t, void *))fn)(m->outer, count, user_ctx);
    }
}

/* ---- the source cache ----------------------------------------------------------------
 *
 * A map whose rule does not depend on order (sum, min, max, bitwise, or a set) keeps
 * the inserts the program makes in a small direct-mapped cache on the sending rank:
 * an insert of a key already there is merged into it at the cost of a hash and a
 * compare; one that finds another key evicts it, which is sent. cr_barrier drains
 * the cache on entry (a module hook), and inserts made inside handlers bypass it, so
 * nothing waits in a cache once a barrier has begun. When few inserts hit (the keys
 * rarely repeat), the cache steps aside for a while, as the mailbox's combining
 * index does. */
#define CACHE_BYTES (2 * 1024 * 1024)
#define CACHE_MAX_SLOTS 65536
#define CACHE_WINDOW 1024
#define CACHE_PAYS 8
#define CACHE_REST (32 * CACHE_WINDOW)
#define COUNT_SLOTS ((size_t)1 << 16) /* the count cache's (below): 1 MiB */

typedef struct ct_maps {
    cr_map **maps;
    size_t n, cap;
} ct_maps;

static void cache_drain(cr_map *m);
static count_slot *count_cache_create(void);

static void maps_drain(cr_comm *comm, void *state)
{
    (void)comm;
    ct_maps *all = state;
    for (size_t i = 0; i < all->n; i++)
        cache_drain(all->maps[i]);
}

static void maps_destroy(cr_comm *comm, void *state)
{
    (void)comm;
    ct_maps *all = state;
    free(all->maps);
    free(all);
}

static const cr_module_type maps_module = {
    .name = "container caches", .destroy = maps_destroy, .drain = maps_drain};

static void cache_register(cr_map *m)
{
    ct_maps *all = cr_module_state(m->comm, &maps_module);
    if (!all) {
        all = calloc(1, sizeof *all);
        if (!all)
            cr_fatal("%s: out of memory", m->name);
        cr_module_attach(m->comm, &maps_module, all);
    }
    if (all->n == all->cap) {
        size_t cap = all->cap ? 2 * all->cap : 4;
        cr_map **maps = realloc(all->maps, cap * sizeof *maps);
        if (!maps)
            cr_fatal("%s: out of memory", m->name);
        all->maps = maps;
        all->cap = cap;
    }
    all->maps[all->n++] = m;
}

static void cache_unregister(cr_map *m)
{
    ct_maps *all = cr_module_state(m->comm, &maps_module);
    for (size_t i = 0; all && i < all->n; i++)
        if (all->maps[i] == m) {
            all->maps[i] = all->maps[--all->n];
            return;
        }
}

/* The rules that combine a value's 8-byte words: their result does not depend on the
 * order of inserts. */
static bool numeric_op(cr_op op)
{
    return op == CR_OP_SUM || op == CR_OP_MIN || op == CR_OP_MAX || op == CR_OP_BAND ||
           op == CR_OP_BOR;
}

/* A cache for maps whose result does not depend on the order of inserts. */
static void cache_init(cr_map *m, cr_op op, cr_dtype type, bool no_combining)
{
    bool orderless = m->value_len == 0 || numeric_op(op);
    if (!orderless || no_combining)
        return;
    m->add_u64 = op == CR_OP_SUM && m->value_len == 8 && type != CR_DOUBLE;
    m->handler_depth = cr_module_handler_depth(m->comm);
    if (m->add_u64 && m->key_len == 8) {
        m->counts = count_cache_create();
        if (!m->counts)
            cr_fatal("%s: out of memory for the source cache", m->name);
        m->cache_window = CACHE_WINDOW;
        cache_register(m);
        return;
    }
    m->cache_stride = 8 + m->rec_len;
    size_t slots = 1;
    while (slots * 2 <= CACHE_MAX_SLOTS && slots * 2 * m->cache_stride <= CACHE_BYTES)
        slots *= 2;
    if (slots < 64)
        return; /* records too large for a cache worth having */
    m->cache = calloc(slots, m->cache_stride);
    if (!m->cache)
        cr_fatal("%s: out of memory for the source cache", m->name);
    m->cache_slots = slots;
    m->cache_window = CACHE_WINDOW;
    cache_register(m);
}

static void send_insert(cr_map *m, const void *rec)
{
    cr_async(m->comm, cr_map_owner(m, rec), m->h_insert, rec, m->rec_len);
}

static void count_cache_drain(cr_map *m);

static void cache_drain(cr_map *m)
{
    if (m->counts) {
        count_cache_drain(m);
        return;
    }
    for (size_t i = 0; m->cache_used && i < m->cache_slots; i++) {
        char *slot = m->cache + i * m->cache_stride;
        uint64_t tag;
        memcpy(&tag, slot, sizeof tag);
        if (!tag)
            continue;
        memset(slot, 0, 8);
        m->cache_used--;
        send_insert(m, slot + 8);
    }
}

/* The end of a window of CACHE_WINDOW inserts through a cache (either kind): rest
 * for CACHE_REST inserts if fewer than one in CACHE_PAYS hit. */
static void cache_review(cr_map *m)
{
    if ((CACHE_WINDOW - m->cache_misses) * CACHE_PAYS < CACHE_WINDOW)
        m->cache_skip = CACHE_REST;
    m->cache_misses = 0;
    m->cache_window = CACHE_WINDOW;
}

static inline __attribute__((always_inline)) void cache_insert(cr_map *m, const char *rec, uint64_t h)
{
    if (m->cache_skip) {
        m->cache_skip--;
        send_insert(m, rec);
        return;
    }
    /* Bits of the hash that neither the owner (the top) nor the owner's table (the
     * bottom) uses alone. */
    char *slot = m->cache + ((h >> 24) & (m->cache_slots - 1)) * m->cache_stride;
    uint64_t tag, want = h | CT_USED;
    memcpy(&tag, slot, sizeof tag);
    bool hit = tag == want && ct_key_equal(slot + 8, rec, m->key_len);
    if (hit && m->add_u64) { /* a count: the one rule worth a path of its own */
        uint64_t sum, add;
        memcpy(&sum, slot + 8 + m->key_pad, 8);
        memcpy(&add, rec + m->key_pad, 8);
        sum += add;
        memcpy(slot + 8 + m->key_pad, &sum, 8);
    } else if (hit) {
        if (m->merge)
            m->merge(slot + 8, rec, m->rec_len, m->merge_user);
    } else {
        if (tag)
            send_insert(m, slot + 8);
        else
            m->cache_used++;
        memcpy(slot, &want, sizeof want);
        memcpy(slot + 8, rec, m->rec_len);
        m->cache_misses++;
    }
    if (--m->cache_window == 0)
        cache_review(m);
}

/* ---- the count cache ------------------------------------------------------------------
 *
 * The counting set's inserts, and a summing map's with 8-byte keys and integer values,
 * are most of what containers do, so they get a cache of their own with nothing to
 * spare: a slot is the record {key, count} that would travel (16 bytes, no tag), and
 * the slot is the key's low bits folded with its high ones, not a hash: consecutive
 * keys (vertex numbers, word numbers) then sit side by side in a few cache lines, and
 * the full hash is paid only by a record that leaves. Keys that fold alike evict each
 * other, which costs sends, not results; the hit rate is watched as for the cache
 * above.
 *
 * An empty slot holds a key that cannot fold to it (empty_key), so a hit is one
 * compare of keys and any count may be held, 0 included: an add is one addition, the
 * count wraps as the owner's does (both add modulo 2^64), and a key whose count came
 * back to 0 still leaves as a record, which makes it exist on its owner. */
static inline size_t count_slot_of(uint64_t key)
{
    return (size_t)((key ^ (key >> 17) ^ (key >> 34) ^ (key >> 51)) & (COUNT_SLOTS - 1));
}

/* Slot i's empty mark: i ^ 1 is below COUNT_SLOTS, so it folds to itself, not to i
 * (a key below 2^17 folds to itself). */
_Static_assert(COUNT_SLOTS <= ((size_t)1 << 17), "empty_key needs slots below 2^17");
static inline uint64_t empty_key(size_t slot)
{
    return (uint64_t)slot ^ 1;
}

static count_slot *count_cache_create(void)
{
    count_slot *counts = malloc(COUNT_SLOTS * sizeof *counts);
    if (!counts)
        return NULL;
    for (size_t i = 0; i < COUNT_SLOTS; i++)
        counts[i] = (count_slot){empty_key(i), 0};
    return counts;
}

static __attribute__((noinline)) void count_send(cr_map *m, uint64_t key, uint64_t count)
{
    count_slot rec = {key, count};
    send_insert(m, &rec);
}

static void count_cache_drain(cr_map *m)
{
    for (size_t i = 0; m->cache_used && i < COUNT_SLOTS; i++) {
        count_slot *s = &m->counts[i];
        if (s->key == empty_key(i))
            continue;
        count_send(m, s->key, s->count);
        *s = (count_slot){empty_key(i), 0};
        m->cache_used--;
    }
}

/* A miss: the slot's record leaves, the new one takes its place. */
static __attribute__((noinline)) void count_miss(cr_map *m, count_slot *s, uint64_t key,
                                                 uint64_t add)
{
    if (s->key != empty_key((size_t)(s - m->counts)))
        count_send(m, s->key, s->count);
    else
        m->cache_used++;
    s->key = key;
    s->count = add;
    m->cache_misses++;
}

/* Inside a handler, or resting: the record goes as it is; resting, an add of 1 goes
 * as a unit, the key alone (at rest nearly every insert leaves, so half the bytes to
 * copy, send and read). */
static __attribute__((noinline)) void count_bypass(cr_map *m, uint64_t key, uint64_t add)
{
    if (m->cache_skip && *m->handler_depth == 0) {
        m->cache_skip--;
        if (add == 1) {
            cr_async(m->comm, owner_of_hash(m, ct_hash(&key, 8)), m->h_unit, &key, sizeof key);
            return;
        }
    }
    count_send(m, key, add);
}

/* Adds `add` to `key`'s count, in the cache when it may be, else by a record sent. */
static inline __attribute__((always_inline)) void count_add(cr_map *m, uint64_t key,
                                                            uint64_t add)
{
    if (__builtin_expect((*m->handler_depth | (int)m->cache_skip) != 0, 0)) {
        count_bypass(m, key, add);
        return;
    }
    count_slot *s = &m->counts[count_slot_of(key)];
    if (s->key == key)
        s->count += add;
    else
        count_miss(m, s, key, add);
    if (__builtin_expect(--m->cache_window == 0, 0))
        cache_review(m);
}

/* ---- creation ------------------------------------------------------------------- */

static void user_merge(void *dst, const void *src, size_t len, void *user)
{
    (void)len;
    cr_map *m = user;
    m->user_merge((char *)dst + m->key_pad, (const char *)src + m->key_pad, m->value_len,
                  m->user_merge_user);
}

static int check_opts(const cr_map_opts *o, char *err, size_t errlen)
{
    if (!o) {
        snprintf(err, errlen, "the options are NULL");
        return -1;
    }
    if (o->key_len < 1 || o->key_len > CR_MAX_KEY) {
        snprintf(err, errlen, "key_len %zu is out of range: expected 1 to %d", o->key_len,
                 CR_MAX_KEY);
        return -1;
    }
    if (o->value_len > CR_CONTAINER_MAX_VALUE) {
        snprintf(err, errlen, "value_len %zu is out of range: expected 0 to %d", o->value_len,
                 CR_CONTAINER_MAX_VALUE);
        return -1;
    }
    bool numeric = numeric_op(o->merge);
    if (numeric && (o->value_len == 0 || o->value_len % 8)) {
        snprintf(err, errlen, "merge rule %d needs a value of 8-byte words, not %zu bytes",
                 (int)o->merge, o->value_len);
        return -1;
    }
    if (o->merge == CR_OP_USER && !o->merge_fn) {
        snprintf(err, errlen, "merge rule user needs merge_fn");
        return -1;
    }
    for (size_t i = 0; i < o->nvisitors; i++)
        if (!o->visitors || !o->visitors[i].fn) {
            snprintf(err, errlen, "visitor %zu has no function", i);
            return -1;
        }
    return 0;
}

static cr_map *map_create(cr_comm *comm, const cr_map_opts *o, const char *name, char *err,
                          size_t errlen)
{
    if (check_opts(o, err, errlen))
        return NULL;
    cr_map *m = calloc(1, sizeof *m);
    cr_map_visitor *visitors = o->nvisitors ? calloc(o->nvisitors, sizeof *visitors) : NULL;
    if (!m || (o->nvisitors && !visitors))
        cr_fatal("%s: out of memory creating the map", name);
    *m = (cr_map){.comm = comm, .size = cr_comm_size(comm), .name = name,
                  .key_len = o->key_len, .key_pad = ct_pad8(o->key_len),
                  .value_len = o->value_len, .value_pad = ct_pad8(o->value_len),
                  .visitors = visitors, .nvisitors = o->nvisitors,
                  .user_merge = o->merge_fn, .user_merge_user = o->merge_user};
    if (o->nvisitors)
        memcpy(visitors, o->visitors, o->nvisitors * sizeof *visitors);
    m->rec_len = m->key_pad + m->value_pad;
    ct_init(&m->table, o->key_len, o->value_len);

    /* The rule, from dedup, over the record; a set (no value) keeps the first. */
    cr_dedup_rule rule = {.key_len = o->key_len, .op = o->merge ? o->merge : CR_OP_LAST,
                          .type = o->type, .combine = user_merge, .combine_user = m};
    if (o->value_len == 0)
        rule.op = CR_OP_FIRST;
    cr_handler_type ins = {.batch = on_inserts, .name = "container insert"};
    if (cr_dedup_rule_apply(&rule, &ins, err, errlen))
        cr_fatal("%s: %s", name, err); /* check_opts let a bad rule through */
    m->merge = rule.op == CR_OP_FIRST ? NULL : ins.combine;
    m->merge_user = ins.combine_user;
    if (o->no_combining)
        ins.key_len = 0, ins.combine = NULL, ins.combine_user = NULL;

    /* Everything a handler reads is set: a faster rank's records may arrive inside
     * these collective registrations. */
    m->h_insert = cr_register_type(comm, &ins, m);
    m->h_erase = cr_register_type(comm, &(cr_handler_type){.fn = on_erase, .name = "container erase"}, m);
    m->h_visit = cr_register_type(comm, &(cr_handler_type){.fn = on_visit, .name = "container visit"}, m);
    m->h_get = cr_dedup_register_request(
        comm,
        &(cr_dedup_request_type){.serve = serve_get, .key_len = o->key_len,
                                 .coalesce = !o->get_no_coalesce},
        m);
    cache_init(m, rule.op, o->type, o->no_combining);
    m->h_unit = -1;
    if (m->counts) /* the same on every rank: it follows from the options */
        m->h_unit = cr_register_type(
            comm, &(cr_handler_type){.batch = on_units, .name = "container unit insert"}, m);
    return m;
}

cr_map *cr_map_create(cr_comm *comm, const cr_map_opts *opts, char *err, size_t errlen)
{
    char why[200];
    cr_map *m = map_create(comm, opts, "cr_map", why, sizeof why);
    if (!m)
        snprintf(err, errlen, "cr_map_create: %s", why);
    return m;
}

static void map_free(cr_map *m)
{
    if (m->cache || m->counts)
        cache_unregister(m);
    free(m->cache);
    free(m->counts);
    free(m->waiting);
    free(m->ordered);
    ct_free(&m->table);
    ct_pool_free(&m->replies);
    free(m->deferred.bytes);
    free(m->visitors);
    free(m);
}

void cr_map_destroy(cr_map *m)
{
    if (!m)
        return;
    /* Records for this map may still be on their way: the barrier delivers them
     * while the map exists. */
    cr_barrier(m->comm);
    map_free(m);
}

/* ---- operations ------------------------------------------------------------------ */

int cr_map_owner(const cr_map *m, const void *key)
{
    return owner_of_hash(m, ct_hash(key, m->key_len));
}

cr_comm *cr_map_comm(const cr_map *m)
{
    return m->comm;
}

/* The key, zero-padded, at the head of rec (without a call for 8-byte keys). */
static inline void put_key(const cr_map *m, uint64_t *rec, const void *key)
{
    if (m->key_len == 8) {
        memcpy(rec, key, 8);
        return;
    }
    rec[m->key_pad / 8 - 1] = 0;
    memcpy(rec, key, m->key_len);
}

/* The record of key and value as the table holds it: each zero-padded to 8 bytes. */
static inline void put_record(const cr_map *m, uint64_t *rec, const void *key, const void *value)
{
    put_key(m, rec, key);
    if (m->value_len == 8) {
        memcpy(rec + m->key_pad / 8, value, 8);
    } else if (m->value_len) {
        char *v = (char *)rec + m->key_pad;
        memset(v + m->value_len, 0, m->value_pad - m->value_len);
        memcpy(v, value, m->value_len);
    }
}

void cr_map_insert(cr_map *m, const void *key, const void *value)
{
    if (m->counts) {
        uint64_t k, v;
        memcpy(&k, key, 8);
        memcpy(&v, value, 8);
        count_add(m, k, v);
        return;
    }
    uint64_t rec[(CR_MAX_KEY + CR_CONTAINER_MAX_VALUE) / 8];
    put_record(m, rec, key, value);
    if (m->cache && *m->handler_depth == 0)
        cache_insert(m, (const char *)rec, ct_hash(rec, m->key_len));
    else
        send_insert(m, rec);
}

void cr_map_erase(cr_map *m, const void *key)
{
    uint64_t rec[CR_MAX_KEY / 8];
    put_key(m, rec, key);
    cr_async(m->comm, cr_map_owner(m, key), m->h_erase, rec, m->key_pad);
}

void cr_map_visit(cr_map *m, const void *key, size_t visitor, const void *args,
                  size_t args_len)
{
    if (visitor >= m->nvisitors)
        cr_fatal("%s: visitor %zu does not exist (the map has %zu)", m->name, visitor,
                 m->nvisitors);
    if (args_len > CR_CONTAINER_MAX_VALUE)
        cr_fatal("%s: a visit's arguments of %zu bytes are more than the %d allowed", m->name,
                 args_len, CR_CONTAINER_MAX_VALUE);
    uint64_t rec[MAX_RECORD / 8];
    put_key(m, rec, key);
    uint64_t which = visitor;
    memcpy((char *)rec + m->key_pad, &which, sizeof which);
    if (args_len)
        memcpy((char *)rec + m->key_pad + 8, args, args_len);
    cr_async(m->comm, cr_map_owner(m, key), m->h_visit, rec, m->key_pad + 8 + args_len);
}

static void ask(cr_map *m, const void *key, void (*fn)(void), uint64_t kind, void *ctx)
{
    if (!fn)
        cr_fatal("%s: a look-up without a reply function", m->name);
    uint64_t rec[CR_MAX_KEY / 8];
    put_key(m, rec, key);
    ct_reply *r = ct_pool_get(&m->replies, m->name);
    *r = (ct_reply){.container = m, .fn = fn, .ctx = ctx, .item = kind};
    cr_dedup_request(m->comm, cr_map_owner(m, key), m->h_get, rec, m->key_pad, on_reply, r);
}

void cr_map_get(cr_map *m, const void *key, cr_map_get_fn fn, void *ctx)
{
    ask(m, key, (void (*)(void))fn, REPLY_MAP, ctx);
}

void cr_map_for_all(cr_map *m, void (*fn)(const void *key, void *value, void *user), void *user)
{
    settle(m);
    m->busy++;
    for (size_t i = ct_next(&m->table, 0); i < m->table.cap; i = ct_next(&m->table, i + 1)) {
        char *rec = ct_record(&m->table, i);
        fn(rec, rec + m->key_pad, user);
    }
    m->busy--;
    if (!m->busy)
        replay(m);
}

uint64_t cr_map_size(cr_map *m)
{
    cr_barrier(m->comm);
    settle(m);
    return ct_sum_over_ranks(m->comm, m->table.count);
}

bool cr_map_reserve(cr_map *m, uint64_t keys)
{
    if (m->busy)
        cr_fatal("%s: cr_map_reserve inside a for_all or a visitor of the same map", m->name);
    /* The share of a uniform hash: a binomial count, its mean plus four standard
     * deviations. */
    double share = (double)keys / m->size;
    double want = share + 4.0 * sqrt(share) + 16.0;
    if (want > (double)(SIZE_MAX / 4))
        return false;
    return ct_reserve(&m->table, (size_t)want);
}

uint64_t cr_map_local_size(const cr_map *m)
{
    /* Settling changes what the table holds, not what the map holds: every map is
     * allocated by cr_map_create, never defined const, so the cast is sound. */
    settle((cr_map *)m);
    return m->table.count;
}

size_t cr_map_local_bytes(const cr_map *m)
{
    return ct_bytes(&m->table);
}

void *cr_map_local_find(cr_map *m, const void *key)
{
    settle(m);
    char *rec = ct_find(&m->table, key, ct_hash(key, m->key_len));
    return rec ? rec + m->key_pad : NULL;
}

/* ---- set -------------------------------------------------------------------------- */

cr_set *cr_set_create(cr_comm *comm, size_t key_len, char *err, size_t errlen)
{
    char why[200];
    cr_set *s = malloc(sizeof *s);
    if (!s)
        cr_fatal("cr_set: out of memory creating the set");
    s->map = map_create(comm, &(cr_map_opts){.key_len = key_len}, "cr_set", why, sizeof why);
    if (!s->map) {
        snprintf(err, errlen, "cr_set_create: %s", why);
        free(s);
        return NULL;
    }
    s->map->outer = s;
    return s;
}

void cr_set_destroy(cr_set *s)
{
    if (!s)
        return;
    cr_map_destroy(s->map);
    free(s);
}

void cr_set_insert(cr_set *s, const void *key)
{
    cr_map_insert(s->map, key, NULL);
}

void cr_set_erase(cr_set *s, const void *key)
{
    cr_map_erase(s->map, key);
}

void cr_set_contains(cr_set *s, const void *key, void (*fn)(cr_set *, bool, void *), void *ctx)
{
    ask(s->map, key, (void (*)(void))fn, REPLY_SET, ctx);
}

typedef struct key_visit {
    void (*fn)(const void *key, void *user);
    void *user;
} key_visit;

static void visit_key(const void *key, void *value, void *user)
{
    (void)value;
    const key_visit *kv = user;
    kv->fn(key, kv->user);
}

void cr_set_for_all(cr_set *s, void (*fn)(const void *key, void *user), void *user)
{
    cr_map_for_all(s->map, visit_key, &(key_visit){fn, user});
}

uint64_t cr_set_size(cr_set *s)
{
    return cr_map_size(s->map);
}

bool cr_set_reserve(cr_set *s, uint64_t keys)
{
    return cr_map_reserve(s->map, keys);
}

uint64_t cr_set_local_size(const cr_set *s)
{
    return cr_map_local_size(s->map);
}

/* ---- counting set ------------------------------------------------------------------- */

cr_counting_set *cr_counting_set_create(cr_comm *comm, size_t key_len, char *err, size_t errlen)
{
    char why[200];
    cr_counting_set *cs = malloc(sizeof *cs);
    if (!cs)
        cr_fatal("cr_counting_set: out of memory creating the set");
    cr_map_opts o = {.key_len = key_len, .value_len = 8, .merge = CR_OP_SUM,
                     .type = CR_UINT64};
    cs->map = map_create(comm, &o, "cr_counting_set", why, sizeof why);
    if (!cs->map) {
        snprintf(err, errlen, "cr_counting_set_create: %s", why);
        free(cs);
        return NULL;
    }
    cs->map->outer = cs;
    return cs;
}

void cr_counting_set_destroy(cr_counting_set *cs)
{
    if (!cs)
        return;
    cr_map_destroy(cs->map);
    free(cs);
}

/* A key of any length: the record built and sent, through the cache if there is one.
 * Out of line, so that the count cache's path below keeps a frame of its own size. */
static __attribute__((noinline)) void counting_add_record(cr_map *m, const void *key,
                                                         uint64_t times)
{
    uint64_t rec[CR_MAX_KEY / 8 + 1]; /* the key, then the count: no value to pad */
    put_key(m, rec, key);
    rec[m->key_pad / 8] = times;
    if (m->cache && *m->handler_depth == 0)
        cache_insert(m, (const char *)rec, ct_hash(rec, m->key_len));
    else
        send_insert(m, rec);
}

static inline __attribute__((always_inline)) void counting_add(cr_counting_set *cs,
                                                               const void *key, uint64_t times)
{
    cr_map *m = cs->map;
    if (!m->counts) {
        counting_add_record(m, key, times);
        return;
    }
    uint64_t k;
    memcpy(&k, key, 8);
    count_add(m, k, times);
}

void cr_counting_set_add(cr_counting_set *cs, const void *key, uint64_t times)
{
    counting_add(cs, key, times);
}

void cr_counting_set_insert(cr_counting_set *cs, const void *key)
{
    counting_add(cs, key, 1);
}

/* Up to the end of the cache's window, n inserts of 8-byte keys that all go through
 * the count cache (not inside a handler, not resting): count_add's path with the
 * cache and the window in locals. A miss may send, and so run handlers, which do not
 * touch the cache (their inserts bypass it). Returns how many keys it took. */
static size_t count_run(cr_map *m, const char *keys, size_t n)
{
    size_t run = n < m->cache_window ? n : m->cache_window;
    count_slot *counts = m->counts;
    for (const char *k = keys, *end = keys + run * 8; k < end; k += 8) {
        uint64_t key;
        memcpy(&key, k, 8);
        count_slot *s = &counts[count_slot_of(key)];
        if (__builtin_expect(s->key == key, 1))
            s->count++;
        else
            count_miss(m, s, key, 1);
    }
    m->cache_window -= (uint32_t)run;
    if (m->cache_window == 0)
        cache_review(m);
    return run;
}

void cr_counting_set_insert_many(cr_counting_set *cs, const void *keys, size_t n)
{
    cr_map *m = cs->map;
    const char *k = keys;
    if (n && !keys)
        cr_fatal("cr_counting_set_insert_many: keys is NULL for %zu keys", n);
    for (size_t i = 0; i < n;) {
        if (m->counts && (*m->handler_depth | (int)m->cache_skip) == 0) {
            i += count_run(m, k + i * 8, n - i);
            continue;
        }
        counting_add(cs, k + i * m->key_len, 1);
        i++;
    }
}

void cr_counting_set_count(cr_counting_set *cs, const void *key,
                           void (*fn)(cr_counting_set *, uint64_t, void *), void *ctx)
{
    ask(cs->map, key, (void (*)(void))fn, REPLY_COUNT, ctx);
}

typedef struct count_visit {
    void (*fn)(const void *key, uint64_t count, void *user);
    void *user;
} count_visit;

static void visit_count(const void *key, void *value, void *user)
{
    const count_visit *cv = user;
    uint64_t count;
    memcpy(&count, value, sizeof count);
    cv->fn(key, count, cv->user);
}

void cr_counting_set_for_all(cr_counting_set *cs,
                             void (*fn)(const void *key, uint64_t count, void *user), void *user)
{
    cr_map_for_all(cs->map, visit_count, &(count_visit){fn, user});
}

uint64_t cr_counting_set_size(cr_counting_set *cs)
{
    return cr_map_size(cs->map);
}

bool cr_counting_set_reserve(cr_counting_set *cs, uint64_t keys)
{
    return cr_map_reserve(cs->map, keys);
}

uint64_t cr_counting_set_local_size(const cr_counting_set *cs)
{
    return cr_map_local_size(cs->map);
}

cr_map *cr_counting_set_map(cr_counting_set *cs)
{
    return cs->map;
}

/* Top k: each rank picks its own k largest (the keys are its alone), every rank
 * gathers the P candidate lists, and each picks the same k from them. An entry is
 * the count, then the padded key; a count of 0 marks an unused entry. */
typedef struct top_ctx {
    size_t key_len, entry, k, n;
    char *best; /* n entries, a min-heap on (count, key reversed) */
} top_ctx;

static uint64_t entry_count(const char *e)
{
    uint64_t c;
    memcpy(&c, e, sizeof c);
    return c;
}

/* a ranks before b: a larger count, or an equal count and a smaller key. */
static bool ranks_before(const top_ctx *t, const char *a, const char *b)
{
    uint64_t ca = entry_count(a), cb = entry_count(b);
    if (ca != cb)
        return ca > cb;
    return memcmp(a + 8, b + 8, t->key_len) < 0;
}

static void swap_entries(const top_ctx *t, char *a, char *b)
{
    char tmp[8 + CR_MAX_KEY];
    memcpy(tmp, a, t->entry);
    memcpy(a, b, t->entry);
    memcpy(b, tmp, t->entry);
}

/* Restore the heap below i: the root is the entry that ranks last. */
static void sift_down(top_ctx *t, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, worst = i;
        char *at = t->best;
        if (l < t->n && ranks_before(t, at + worst * t->entry, at + l * t->entry))
            worst = l;
        if (r < t->n && ranks_before(t, at + worst * t->entry, at + r * t->entry))
            worst = r;
        if (worst == i)
            return;
        swap_entries(t, at + i * t->entry, at + worst * t->entry);
        i = worst;
    }
}

static void sift_up(top_ctx *t, size_t i)
{
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        char *at = t->best;
        if (!ranks_before(t, at + parent * t->entry, at + i * t->entry))
            return;
        swap_entries(t, at + i * t->entry, at + parent * t->entry);
        i = parent;
    }
}

static void offer(top_ctx *t, const char *e)
{
    if (entry_count(e) == 0 || t->k == 0)
        return;
    if (t->n < t->k) {
        memcpy(t->best + t->n * t->entry, e, t->entry);
        sift_up(t, t->n++);
    } else if (ranks_before(t, e, t->best)) {
        memcpy(t->best, e, t->entry);
        sift_down(t, 0);
    }
}

static void offer_element(const void *key, uint64_t count, void *user)
{
    top_ctx *t = user;
    char e[8 + CR_MAX_KEY] = {0};
    memcpy(e, &count, sizeof count);
    memcpy(e + 8, key, t->key_len);
    offer(t, e);
}

static int compare_ranked(const void *a, const void *b, void *user)
{
    const top_ctx *t = user;
    return ranks_before(t, a, b) ? -1 : ranks_before(t, b, a) ? 1 : 0;
}

size_t cr_counting_set_top_k(cr_counting_set *cs, size_t k, void *keys, uint64_t *counts)
{
    cr_map *m = cs->map;
    int p = m->size;
    cr_barrier(m->comm);
    top_ctx t = {.key_len = m->key_len, .entry = 8 + m->key_pad, .k = k};
    if (k > SIZE_MAX / t.entry / (size_t)p - 1)
        cr_fatal("cr_counting_set_top_k: k = %zu is too large", k);
    size_t block = k * t.entry;
    char *mine = calloc(1, block + 1), *all = calloc((size_t)p, block + 1);
    if (!mine || !all)
        cr_fatal("cr_counting_set_top_k: out of memory for %d lists of %zu keys", p, k);
    t.best = mine;
    cr_counting_set_for_all(cs, offer_element, &t);
    if (block)
        cr_allgather(m->comm, mine, block, all, NULL);
    t.best = mine; /* reuse: pick the k best of all the lists */
    t.n = 0;
    memset(mine, 0, block);
    for (size_t i = 0; i < (size_t)p * k; i++)
        offer(&t, all + i * t.entry);
    qsort_r(t.best, t.n, t.entry, compare_ranked, &t);
    for (size_t i = 0; i < t.n; i++) {
        const char *e = t.best + i * t.entry;
        if (counts)
            counts[i] = entry_count(e);
        if (keys)
            memcpy((char *)keys + i * m->key_len, e + 8, m->key_len);
    }
    size_t n = t.n;
    free(mine);
    free(all);
    return n;
}

size_t ct_map_key_len(const cr_map *m)
{
    return m->key_len;
}

size_t ct_map_value_len(const cr_map *m)
{
    return m->value_len;
}

cr_map *ct_set_map(cr_set *s)
{
    return s->map;
}

/* ---- loading a save --------------------------------------------------------------- */

/* Records sorted at a time into those this rank owns and the others: the owned ones
 * are then applied with their slots fetched ahead, as a received batch is. */
#define LOAD_CHUNK 256

/* The records of one chunk that this rank owns, applied as the owner applies a
 * received insert, each slot fetched PREFETCH_AHEAD records ahead. */
static void load_owned(cr_map *m, const char *const *saved, const uint64_t *hash, size_t n)
{
    for (size_t i = 0; i < n && i < PREFETCH_AHEAD; i++)
        ct_prefetch(&m->table, hash[i]);
    for (size_t i = 0; i < n; i++) {
        if (i + PREFETCH_AHEAD < n)
            ct_prefetch(&m->table, hash[i + PREFETCH_AHEAD]);
        if (m->counts) { /* a saved {key, count} is the count record itself */
            apply_count(m, saved[i], hash[i], false);
            continue;
        }
        uint64_t rec[(CR_MAX_KEY + CR_CONTAINER_MAX_VALUE) / 8];
        put_record(m, rec, saved[i], saved[i] + m->key_len); /* saved: key, then value */
        apply_insert_hashed(m, (const char *)rec, hash[i]);
    }
}

void ct_map_load(cr_map *m, const void *records, size_t count)
{
    if (m->busy || *cr_module_handler_depth(m->comm))
        cr_fatal("%s: a load inside a handler, a for_all or a visitor", m->name);
    int me = cr_comm_rank(m->comm);
    size_t rb = m->key_len + m->value_len;
    const char *at = records;
    const char *owned[LOAD_CHUNK];
    uint64_t hash[LOAD_CHUNK];
    while (count > 0) {
        size_t chunk = count < LOAD_CHUNK ? count : LOAD_CHUNK, n = 0;
        for (size_t i = 0; i < chunk; i++, at += rb) {
            __builtin_prefetch(at + 1024); /* a mapped file: the hardware stops at pages */
            uint64_t h = m->key_len == 8 ? ct_hash(at, 8) : ct_hash(at, m->key_len);
            if (owner_of_hash(m, h) == me) {
                owned[n] = at;
                hash[n++] = h;
            } else { /* may run handlers, which apply what arrives at once */
                cr_map_insert(m, at, at + m->key_len);
            }
        }
        load_owned(m, owned, hash, n);
        count -= chunk;
    }
}

/* ---- saving --------------------------------------------------------------------- */

size_t ct_map_copy_records(cr_map *m, size_t *cursor, void *out, size_t max)
{
    if (*cursor == 0)
        settle(m);
    const ct_table *t = &m->table;
    size_t rb = m->key_len + m->value_len, n = 0;
    bool packed = m->key_len == m->key_pad && m->value_len == m->value_pad;
    char *at = out;
    size_t i = ct_next(t, *cursor);
    for (; i < t->cap && n < max; i = ct_next(t, i + 1), n++, at += rb) {
        const char *rec = ct_record(t, i);
        __builtin_prefetch(rec + 1024); /* the hardware stops at each 4 KiB page */
        if (rb == 16 && packed) { /* a counting set's {key, count}: two fixed moves */
            memcpy(at, rec, 8);
            memcpy(at + 8, rec + 8, 8);
        } else if (packed) {
            memcpy(at, rec, rb);
        } else {
            memcpy(at, rec, m->key_len);
            memcpy(at + m->key_len, rec + m->key_pad, m->value_len);
        }
    }
    *cursor = i;
    return n;
}
