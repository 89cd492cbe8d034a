/* cr_disjoint_set: asynchronous union-find over 64-bit items
 * (include/courier/container.h).
 *
 * Each item's parent lives on the item's owner. The parent of an item is never
 * larger than the item, so a root is the smallest item of its set and no sequence
 * of links can close a cycle. A union of a and b is a message that walks up: at the
 * owner of the larger of the two, if that item is a root it is linked under the
 * smaller one (the union joined two sets); otherwise the pair becomes (its parent,
 * the smaller one), ordered again, and travels on to the owner of the larger. The
 * larger item of the pair only decreases, so the walk ends. Because a link is made
 * only at a root and only by its owner, which handles one record at a time, two
 * concurrent unions never both link one root, and every union that joins two sets
 * is counted exactly once (the walk is the union-by-index of Rem's algorithm, as in
 * Patwary, Blair and Manne, "Experiments on union-find algorithms for the
 * disjoint-set data structure", SEA 2010, without the splicing). */
#include "container/container_internal.h"

#include "common/fatal.h"
#include "courier/coll.h"
#include "courier/rng.h"

#include <stdlib.h>
#include <string.h>

struct cr_disjoint_set {
    cr_comm *comm;
    int size, rank;
    ct_table table; /* item -> parent */
    cr_union_fn on_union;
    void *user;
    int h_union, h_touch, h_find, h_found, h_parent;
    uint64_t unions; /* links this rank made */
    ct_pool replies;
    uint64_t changed; /* compress: parents moved in this round */
};

/* A union on its way: the pair (hi > lo), the items the union named, and whether to
 * run on_union where it joins two sets. */
typedef struct union_msg {
    uint64_t hi, lo, a, b, execute;
} union_msg;

/* A find on its way: the item reached, the rank that asked and its reply slot. */
typedef struct find_msg {
    uint64_t item, asker, slot;
} find_msg;

static int owner(const cr_disjoint_set *ds, uint64_t item)
{
    return (int)cr_rng_bounded(cr_rng_hash64(item), (uint64_t)ds->size);
}

static uint64_t item_hash(uint64_t item)
{
    return cr_container_hash(&item, sizeof item);
}

/* The item's parent slot, the item added as its own root if it is new. */
static uint64_t *parent_of(cr_disjoint_set *ds, uint64_t item)
{
    bool fresh;
    uint64_t *rec = ct_insert(&ds->table, &item, item_hash(item), &fresh);
    if (!rec)
        cr_fatal("cr_disjoint_set: out of memory growing this rank's table beyond %zu items",
                 ds->table.count);
    if (fresh)
        rec[1] = item;
    return rec + 1;
}

static void send_union(cr_disjoint_set *ds, uint64_t x, uint64_t y, uint64_t a, uint64_t b,
                       uint64_t execute)
{
    if (x == y)
        return; /* already one set */
    union_msg u = {.hi = x > y ? x : y, .lo = x > y ? y : x, .a = a, .b = b, .execute = execute};
    cr_async(ds->comm, owner(ds, u.hi), ds->h_union, &u, sizeof u);
}

static void on_union(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm, (void)src;
    cr_disjoint_set *ds = user;
    if (len != sizeof(union_msg))
        cr_fatal("cr_disjoint_set: a union record of %zu bytes", len);
    union_msg u;
    memcpy(&u, payload, sizeof u);
    uint64_t *parent = parent_of(ds, u.hi);
    if (*parent != u.hi) { /* not a root: walk up */
        send_union(ds, *parent, u.lo, u.a, u.b, u.execute);
        return;
    }
    *parent = u.lo;
    ds->unions++;
    /* The smaller item may be new to its owner: it must be counted as an item. */
    cr_async(ds->comm, owner(ds, u.lo), ds->h_touch, &u.lo, sizeof u.lo);
    if (u.execute && ds->on_union)
        ds->on_union(ds, u.a, u.b, ds->user);
}

static void on_touch(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    cr_disjoint_set *ds = user;
    for (size_t i = 0; i < b->count; i++) {
        uint64_t item;
        memcpy(&item, cr_batch_payload(b, i), sizeof item);
        parent_of(ds, item);
    }
}

static void on_find(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)src;
    cr_disjoint_set *ds = user;
    if (len != sizeof(find_msg))
        cr_fatal("cr_disjoint_set: a find record of %zu bytes", len);
    find_msg f;
    memcpy(&f, payload, sizeof f);
    const uint64_t *rec = ct_find(&ds->table, &f.item, item_hash(f.item));
    uint64_t parent = rec ? rec[1] : f.item;
    if (parent != f.item) {
        f.item = parent;
        cr_async(comm, owner(ds, parent), ds->h_find, &f, sizeof f);
        return;
    }
    uint64_t answer[2] = {f.slot, f.item};
    cr_async(comm, (int)f.asker, ds->h_found, answer, sizeof answer);
}

typedef void (*find_fn)(cr_disjoint_set *, uint64_t, uint64_t, void *);

static void on_found(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm, (void)src;
    cr_disjoint_set *ds = user;
    if (len != 16)
        cr_fatal("cr_disjoint_set: a find's answer of %zu bytes", len);
    uint64_t answer[2];
    memcpy(answer, payload, sizeof answer);
    ct_reply *r = (ct_reply *)(uintptr_t)answer[0];
    find_fn fn = (find_fn)r->fn;
    void *ctx = r->ctx;
    uint64_t item = r->item;
    ct_pool_put(&ds->replies, r);
    fn(ds, item, answer[1], ctx);
}

/* Pointer jumping: the owner of p answers with p's parent; identical questions merge. */
static void serve_parent(cr_comm *comm, cr_dedup_req *req, const void *payload, size_t len,
                         void *user)
{
    cr_disjoint_set *ds = user;
    if (len != 8)
        cr_fatal("cr_disjoint_set: a parent look-up of %zu bytes", len);
    uint64_t p;
    memcpy(&p, payload, sizeof p);
    const uint64_t *rec = ct_find(&ds->table, &p, item_hash(p));
    uint64_t grand = rec ? rec[1] : p;
    cr_dedup_reply(comm, req, &grand, sizeof grand);
}

static void got_grandparent(cr_comm *comm, const void *data, size_t len, void *ctx)
{
    (void)comm, (void)len;
    ct_reply *r = ctx;
    cr_disjoint_set *ds = r->container;
    uint64_t grand;
    memcpy(&grand, data, sizeof grand);
    uint64_t item = r->item;
    ct_pool_put(&ds->replies, r);
    uint64_t *rec = ct_find(&ds->table, &item, item_hash(item));
    if (rec && grand < rec[1]) {
        rec[1] = grand;
        ds->changed++;
    }
}

cr_disjoint_set *cr_disjoint_set_create(cr_comm *comm, cr_union_fn on_union_fn, void *user)
{
    cr_disjoint_set *ds = calloc(1, sizeof *ds);
    if (!ds)
        cr_fatal("cr_disjoint_set: out of memory creating the set");
    *ds = (cr_disjoint_set){.comm = comm, .size = cr_comm_size(comm), .rank = cr_comm_rank(comm),
                            .on_union = on_union_fn, .user = user};
    ct_init(&ds->table, 8, 8);
    ds->h_union = cr_register_type(comm, &(cr_handler_type){.fn = on_union, .name = "disjoint-set union"}, ds);
    cr_dedup_rule first = {.key_len = 8, .op = CR_OP_FIRST};
    ds->h_touch = cr_dedup_register(comm, &(cr_handler_type){.batch = on_touch, .name = "disjoint-set add"}, &first, ds);
    ds->h_find = cr_register_type(comm, &(cr_handler_type){.fn = on_find, .name = "disjoint-set find"}, ds);
    ds->h_found = cr_register_type(comm, &(cr_handler_type){.fn = on_found, .name = "disjoint-set found"}, ds);
    ds->h_parent = cr_dedup_register_request(
        comm, &(cr_dedup_request_type){.serve = serve_parent, .key_len = 8, .coalesce = 1}, ds);
    return ds;
}

void cr_disjoint_set_destroy(cr_disjoint_set *ds)
{
    if (!ds)
        return;
    cr_barrier(ds->comm);
    ct_free(&ds->table);
    ct_pool_free(&ds->replies);
    free(ds);
}

void cr_disjoint_set_add(cr_disjoint_set *ds, uint64_t item)
{
    cr_async(ds->comm, owner(ds, item), ds->h_touch, &item, sizeof item);
}

void cr_disjoint_set_union(cr_disjoint_set *ds, uint64_t a, uint64_t b)
{
    if (a == b)
        cr_disjoint_set_add(ds, a);
    send_union(ds, a, b, a, b, 0);
}

void cr_disjoint_set_union_and_execute(cr_disjoint_set *ds, uint64_t a, uint64_t b)
{
    if (a == b)
        cr_disjoint_set_add(ds, a);
    send_union(ds, a, b, a, b, 1);
}

void cr_disjoint_set_find(cr_disjoint_set *ds, uint64_t item, find_fn fn, void *ctx)
{
    if (!fn)
        cr_fatal("cr_disjoint_set_find: no reply function");
    ct_reply *r = ct_pool_get(&ds->replies, "cr_disjoint_set");
    *r = (ct_reply){.container = ds, .fn = (void (*)(void))fn, .ctx = ctx, .item = item};
    find_msg f = {.item = item, .asker = (uint64_t)ds->rank, .slot = (uint64_t)(uintptr_t)r};
    cr_async(ds->comm, owner(ds, item), ds->h_find, &f, sizeof f);
}

void cr_disjoint_set_compress(cr_disjoint_set *ds)
{
    cr_barrier(ds->comm);
    for (;;) {
        ds->changed = 0;
        /* The table does not change during a round (no union runs: the caller's
         * collective call), so its slots can be walked while the questions go out. */
        ct_table *t = &ds->table;
        for (size_t i = ct_next(t, 0); i < t->cap; i = ct_next(t, i + 1)) {
            const uint64_t *rec = ct_record(t, i);
            if (rec[1] == rec[0])
                continue;
            ct_reply *r = ct_pool_get(&ds->replies, "cr_disjoint_set");
            *r = (ct_reply){.container = ds, .item = rec[0]};
            cr_dedup_request(ds->comm, owner(ds, rec[1]), ds->h_parent, &rec[1], 8,
                             got_grandparent, r);
        }
        cr_barrier(ds->comm);
        if (ct_sum_over_ranks(ds->comm, ds->changed) == 0)
            return;
    }
}

void cr_disjoint_set_for_all(cr_disjoint_set *ds, void (*fn)(uint64_t, uint64_t, void *),
                             void *user)
{
    ct_table *t = &ds->table;
    for (size_t i = ct_next(t, 0); i < t->cap; i = ct_next(t, i + 1)) {
        const uint64_t *rec = ct_record(t, i);
        fn(rec[0], rec[1], user);
    }
}

uint64_t cr_disjoint_set_size(cr_disjoint_set *ds)
{
    cr_barrier(ds->comm);
    return ct_sum_over_ranks(ds->comm, ds->table.count);
}

uint64_t cr_disjoint_set_num_sets(cr_disjoint_set *ds)
{
    cr_barrier(ds->comm);
    uint64_t roots = 0;
    ct_table *t = &ds->table;
    for (size_t i = ct_next(t, 0); i < t->cap; i = ct_next(t, i + 1)) {
        const uint64_t *rec = ct_record(t, i);
        roots += rec[0] == rec[1];
    }
    return ct_sum_over_ranks(ds->comm, roots);
}

uint64_t cr_disjoint_set_local_unions(const cr_disjoint_set *ds)
{
    return ds->unions;
}

cr_comm *ct_disjoint_set_comm(const cr_disjoint_set *ds)
{
    return ds->comm;
}
