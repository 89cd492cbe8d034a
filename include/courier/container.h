/* Courier containers: a distributed map, set, counting set, bag and disjoint set
 * on the mailbox (docs/containers.md).
 *
 * Each container is an opaque handle created collectively on a comm. Its elements
 * live on their owner rank, chosen by a hash of the key's bytes; every operation on
 * an element that another rank owns is one asynchronous message, and:
 *
 *  - inserts into a map, a set or a counting set are combining records
 *    (mailbox.h, dedup.h): two inserts of one key that meet in a send buffer, at
 *    their source or at any rank that forwards them under a route, become one, merged
 *    by the map's rule (a counting set's counts are added on the way);
 *  - look-ups with a reply (cr_map_get, cr_counting_set_count) are requests with
 *    replies (dedup.h): identical look-ups merge on the way, and the reply is split
 *    again for each of them;
 *  - visits, erases and unions travel one record each and never merge.
 *
 * Visibility. Everything sent before a cr_barrier (or a collective call of a
 * container, which starts with one) has been applied on its owner, and every reply
 * delivered, when it returns. Between barriers, the order in which one rank's
 * operations on one key are applied is the order it made them, except for inserts:
 * one may be merged into an earlier insert of the same key, in a send buffer (and
 * so be applied before an erase or a visit made between the two) or in the source
 * cache of an orderless map (and so be applied after them, as late as the next
 * barrier). Separate an erase, or a visit that must see an insert, from the inserts
 * around it with a cr_barrier.
 *
 * Calls. Operations on elements (insert, erase, visit, get, union, find) are local
 * calls that may run handlers, as cr_async does; they may be made from handlers,
 * from visitors and from reply callbacks. Create, destroy and the calls marked
 * collective must be made by every rank of the comm, from the main program. A bad
 * argument (a key length out of range, an unknown visitor) ends the job with one
 * line naming it. Errors (docs/architecture.md): the constructors return NULL with
 * one line in `err` for options a user chose (sizes, kinds), the same on every rank;
 * save and load return -1 the same way; everything else ends the job on misuse.
 *
 * Storage. Each rank keeps its elements in one open-addressing table (linear
 * probing), which doubles when it is three quarters full: no allocation per
 * element. A slot holds an 8-byte hash word, the key and the value, each rounded up
 * to 8 bytes; the table is between three eighths and three quarters full, so an
 * element costs 1.3 to 2.7 slots. A table that cannot grow ends the job with one
 * line naming the container. An orderless map (a set, a counting set, a map with
 * SUM, MIN, MAX, BOR or BAND) also keeps a cache of at most 2 MiB on each sending
 * rank; a counting set or summing map of 8-byte keys, once adds of keys that rarely
 * repeat arrive, keeps up to 16 MiB on the owning rank where they wait until the next read
 * of its table (docs/containers.md).
 */
#ifndef COURIER_CONTAINER_H
#define COURIER_CONTAINER_H

#include "courier/dedup.h"
#include "courier/io.h"
#include "courier/mailbox.h"
#include "courier/sort.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest value of a map element, in bytes. */
#define CR_CONTAINER_MAX_VALUE 4096

/* The hash of a key's bytes that picks its owner (and its slot on the owner). Local,
 * pure; the same on every rank and every run. */
uint64_t cr_container_hash(const void *key, size_t len);

/* ---------------------------------------------------------------- map */

typedef struct cr_map cr_map;

/* A visitor: runs on the key's owner with a pointer to its value (value_len bytes,
 * 8-byte aligned, writable) and the bytes the visit carried. It may send (insert,
 * visit, get, cr_async) as a handler may; it must not keep `value` after it returns.
 * When create_missing is set, a key that is absent is first inserted with a value of
 * zero bytes; otherwise the visitor runs with value == NULL for an absent key. */
typedef void (*cr_map_visit_fn)(cr_map *map, const void *key, void *value, const void *args,
                                size_t args_len, void *user);
typedef struct cr_map_visitor {
    cr_map_visit_fn fn;
    void *user;
    bool create_missing;
} cr_map_visitor;

typedef struct cr_map_opts {
    size_t key_len;      /* bytes, 1 .. CR_MAX_KEY */
    size_t value_len;    /* bytes, 0 .. CR_CONTAINER_MAX_VALUE (0: a set) */
    /* What an insert of a key already present does (dedup.h's rules, applied to the
     * value): CR_OP_LAST (0 here: the default) overwrites, FIRST keeps the value
     * there, SUM, MIN, MAX, BOR and BAND combine the value's 8-byte words of `type`
     * (value_len a multiple of 8), USER calls merge_fn. The same rule merges two
     * inserts that meet on the way, so it must be associative; LAST and FIRST then
     * keep the later or the earlier of the two in the order they meet. */
    cr_op merge;
    cr_dtype type;
    void (*merge_fn)(void *value, const void *incoming, size_t value_len, void *user);
    void *merge_user;
    bool no_combining;     /* merge inserts only on the owner, never on the way */
    bool get_no_coalesce;  /* a look-up joins only identical look-ups still in a send
                              buffer, not those already sent (dedup.h: consistency) */
    const cr_map_visitor *visitors; /* copied; cr_map_visit names them by index */
    size_t nvisitors;
} cr_map_opts;

/* Runs on the rank that asked, when the answer arrives: `value` (value_len bytes)
 * or NULL if the key was absent. As a handler: it may send, not wait. */
typedef void (*cr_map_get_fn)(cr_map *map, const void *value, void *ctx);

/* Collective; may run handlers. Returns NULL with a one-line reason in `err` when
 * the options are wrong (the same on every rank). */
cr_map *cr_map_create(cr_comm *comm, const cr_map_opts *opts, char *err, size_t errlen);
/* Collective: a cr_barrier, then the map is freed. NULL is ignored. */
void cr_map_destroy(cr_map *map);

/* Local, may run handlers. key: key_len bytes; value: value_len bytes (ignored for a
 * set). Both are copied. */
void cr_map_insert(cr_map *map, const void *key, const void *value);
void cr_map_erase(cr_map *map, const void *key);
/* Run visitor number `visitor` on the key's owner with a copy of args_len bytes of
 * args (at most CR_CONTAINER_MAX_VALUE). */
void cr_map_visit(cr_map *map, const void *key, size_t visitor, const void *args,
                  size_t args_len);
/* Ask the key's owner for its value; fn(map, value, ctx) runs here with the answer. */
void cr_map_get(cr_map *map, const void *key, cr_map_get_fn fn, void *ctx);

/* Local: fn(key, value, user) for every element this rank owns, in table order. The
 * map's records that arrive while it runs (when fn sends) are applied after it. */
void cr_map_for_all(cr_map *map, void (*fn)(const void *key, void *value, void *user),
                    void *user);
/* Collective (starts with a cr_barrier): the number of keys over all ranks. */
uint64_t cr_map_size(cr_map *map);
/* Local: make this rank's table big enough for its share of `keys` keys over the
 * whole map (keys / P, plus a margin for an uneven hash), so that it does not grow
 * while the keys arrive. Optional: a table grows by doubling without it. Returns
 * false, the table unchanged, when the memory is not there. Not inside a for_all or
 * a visitor of this map. */
bool cr_map_reserve(cr_map *map, uint64_t keys);
/* Local: the keys this rank owns, and what its table holds in bytes. */
uint64_t cr_map_local_size(const cr_map *map);
size_t cr_map_local_bytes(const cr_map *map);
/* Local, pure: the rank that owns `key`. */
int cr_map_owner(const cr_map *map, const void *key);
cr_comm *cr_map_comm(const cr_map *map);
/* Local: the value of a key this rank owns, or NULL (valid until the map next
 * changes on this rank). */
void *cr_map_local_find(cr_map *map, const void *key);

/* ---------------------------------------------------------------- set */

typedef struct cr_set cr_set;

/* Collective; key_len 1 .. CR_MAX_KEY. Inserts merge on the way (a key inserted many
 * times costs one record per buffer). NULL with a reason in err if key_len is bad. */
cr_set *cr_set_create(cr_comm *comm, size_t key_len, char *err, size_t errlen);
void cr_set_destroy(cr_set *set); /* collective */
void cr_set_insert(cr_set *set, const void *key); /* local, may run handlers */
void cr_set_erase(cr_set *set, const void *key);  /* local, may run handlers */
/* Ask whether the key is present; fn(set, present, ctx) runs here with the answer. */
void cr_set_contains(cr_set *set, const void *key,
                     void (*fn)(cr_set *set, bool present, void *ctx), void *ctx);
void cr_set_for_all(cr_set *set, void (*fn)(const void *key, void *user), void *user); /* local */
uint64_t cr_set_size(cr_set *set); /* collective */
uint64_t cr_set_local_size(const cr_set *set);
bool cr_set_reserve(cr_set *set, uint64_t keys); /* local: as cr_map_reserve */

/* ---------------------------------------------------------------- counting set */

typedef struct cr_counting_set cr_counting_set;

/* Collective; key_len 1 .. CR_MAX_KEY. Counts of one key are added on the way. */
cr_counting_set *cr_counting_set_create(cr_comm *comm, size_t key_len, char *err,
                                        size_t errlen);
void cr_counting_set_destroy(cr_counting_set *cs); /* collective */
/* Local, may run handlers: count the key once, or `times` times. */
void cr_counting_set_insert(cr_counting_set *cs, const void *key);
void cr_counting_set_add(cr_counting_set *cs, const void *key, uint64_t times);
/* Local, may run handlers: count each of the n keys at keys + i * key_len once, as n
 * calls of cr_counting_set_insert in order, at a lower cost per key (for 8-byte keys
 * the count cache's state stays in registers between keys). */
void cr_counting_set_insert_many(cr_counting_set *cs, const void *keys, size_t n);
/* Ask for the key's count (0 if absent); fn runs here with the answer. */
void cr_counting_set_count(cr_counting_set *cs, const void *key,
                           void (*fn)(cr_counting_set *cs, uint64_t count, void *ctx), void *ctx);
void cr_counting_set_for_all(cr_counting_set *cs,
                             void (*fn)(const void *key, uint64_t count, void *user),
                             void *user); /* local */
uint64_t cr_counting_set_size(cr_counting_set *cs); /* collective: distinct keys */
uint64_t cr_counting_set_local_size(const cr_counting_set *cs);
bool cr_counting_set_reserve(cr_counting_set *cs, uint64_t keys); /* local: as cr_map_reserve */
/* Collective (starts with a cr_barrier): the k most frequent keys over all ranks,
 * the same on every rank: keys (k * key_len bytes) and counts (k), by count from the
 * largest, equal counts by their key's bytes. Returns how many were written (fewer
 * than k when there are fewer keys). */
size_t cr_counting_set_top_k(cr_counting_set *cs, size_t k, void *keys, uint64_t *counts);
/* The map underneath (for visits and local look-ups; its value is a uint64_t). */
cr_map *cr_counting_set_map(cr_counting_set *cs);

/* ---------------------------------------------------------------- bag */

typedef struct cr_bag cr_bag;

/* Collective; item_len 1 .. CR_CONTAINER_MAX_VALUE. A bag holds items in no order,
 * on whichever rank they were put. NULL with a reason in err if item_len is bad. */
cr_bag *cr_bag_create(cr_comm *comm, size_t item_len, char *err, size_t errlen);
void cr_bag_destroy(cr_bag *bag); /* collective */
/* Local: append an item on this rank (no message). */
void cr_bag_insert(cr_bag *bag, const void *item);
/* Local, may run handlers: append an item on `rank`. */
void cr_bag_insert_at(cr_bag *bag, int rank, const void *item);
void cr_bag_for_all(cr_bag *bag, void (*fn)(void *item, void *user), void *user); /* local */
uint64_t cr_bag_size(cr_bag *bag);             /* collective */
uint64_t cr_bag_local_size(const cr_bag *bag); /* local */
/* Collective: move items so that rank r holds the r-th block of the items in rank
 * order (blocks differ by at most one item); items keep their order. */
void cr_bag_rebalance(cr_bag *bag);
/* Collective: sort the bag's items across the ranks by cr_sort (courier/sort.h;
 * opts->record_bytes must be the item length), so that rank r holds the r-th block
 * of the sorted order (exact blocks unless opts->tolerance says otherwise). Starts
 * with a cr_barrier; items inserted from ranks already past the sort join after it,
 * at the end of their rank's items. Runs handlers; not from a handler. `stats` may be
 * NULL. */
void cr_bag_sort(cr_bag *bag, const cr_sort_opts *opts, cr_sort_stats *stats);
/* Collective: every item to `root`, in rank order. On root, *items is a malloc'd
 * array of *count items (the caller frees it); elsewhere NULL and 0. The bag keeps
 * its items. */
void cr_bag_gather(cr_bag *bag, int root, void **items, uint64_t *count);

/* ---------------------------------------------------------------- disjoint set */

typedef struct cr_disjoint_set cr_disjoint_set;

/* Runs on some rank when a union made two sets one: the two items the union named. */
typedef void (*cr_union_fn)(cr_disjoint_set *ds, uint64_t a, uint64_t b, void *user);

/* Collective. Items are 64-bit ids, added when a union or cr_disjoint_set_add first
 * names them. on_union (may be NULL) is what cr_disjoint_set_union_and_execute runs. */
cr_disjoint_set *cr_disjoint_set_create(cr_comm *comm, cr_union_fn on_union, void *user);
void cr_disjoint_set_destroy(cr_disjoint_set *ds); /* collective */
/* Local, may run handlers: add an item as a set of its own (if it is new). */
void cr_disjoint_set_add(cr_disjoint_set *ds, uint64_t item);
/* Local, may run handlers: make the sets of a and b one. Each set's parent chain
 * only ever points to smaller ids, and a link is made only at a root, on its owner,
 * so concurrent unions never make a cycle and every union that joins two sets is
 * counted once. */
void cr_disjoint_set_union(cr_disjoint_set *ds, uint64_t a, uint64_t b);
/* The same, and on_union(ds, a, b, user) runs where the union joined two sets (not
 * when a and b were already in one). */
void cr_disjoint_set_union_and_execute(cr_disjoint_set *ds, uint64_t a, uint64_t b);
/* Ask for the representative of the item's set (the smallest id in it, once every
 * union has been applied); fn runs here with the answer. */
void cr_disjoint_set_find(cr_disjoint_set *ds, uint64_t item,
                          void (*fn)(cr_disjoint_set *ds, uint64_t item, uint64_t root,
                                     void *ctx),
                          void *ctx);
/* Collective: point every item straight at its set's representative (pointer
 * jumping, identical look-ups merged); afterwards cr_disjoint_set_for_all gives
 * each item's representative. */
void cr_disjoint_set_compress(cr_disjoint_set *ds);
/* Local: fn(item, parent, user) for every item this rank owns (after
 * cr_disjoint_set_compress, parent is the representative). */
void cr_disjoint_set_for_all(cr_disjoint_set *ds,
                             void (*fn)(uint64_t item, uint64_t parent, void *user), void *user);
/* Collective: the number of sets, and of items, over all ranks. */
uint64_t cr_disjoint_set_num_sets(cr_disjoint_set *ds);
uint64_t cr_disjoint_set_size(cr_disjoint_set *ds);
/* Local: unions this rank made that joined two sets (summed over ranks: the items
 * minus the sets). */
uint64_t cr_disjoint_set_local_unions(const cr_disjoint_set *ds);

/* ---------------------------------------------------------------- save and load */

/* Save a container into directory `dir` (docs/io.md): each rank writes the elements
 * it holds, one record each (a map's key and value, a set's key, a counting set's
 * key and count, a bag's item, a disjoint set's item and parent), and rank 0 a
 * manifest. Starts with a cr_barrier, so every insert sent before is saved. A
 * directory that holds a save already is refused unless flags has
 * CR_SAVE_OVERWRITE; CR_SAVE_SYNC makes the save durable before it returns
 * (include/courier/io.h).
 *
 * Load adds a save's elements to a container of the same kind and key (item) size
 * on any number of ranks: each rank reads an even share of the records and inserts
 * them again, so they reach their owners under this job's layout, merged by the
 * container's rule with what it holds already (a counting set adds the saved
 * counts; a map applies its merge rule; a bag keeps each item on the rank that
 * read it; a disjoint set unites each item with its saved parent). Starts with a
 * cr_barrier, so the inserts made before it are applied first (a map that replaces
 * keeps the saved values); the records a rank reads and owns go straight into its
 * table, the others travel. Ends with a cr_barrier. A missing, truncated or corrupted save, or one of another kind or
 * key size, is refused before any element is inserted.
 *
 * Each returns 0, or -1 on every rank with the same one-line message in err.
 * Collective; runs handlers. */
int cr_map_save(cr_map *map, const char *dir, unsigned flags, char *err, size_t errlen);
int cr_map_load(cr_map *map, const char *dir, char *err, size_t errlen);
int cr_set_save(cr_set *set, const char *dir, unsigned flags, char *err, size_t errlen);
int cr_set_load(cr_set *set, const char *dir, char *err, size_t errlen);
int cr_counting_set_save(cr_counting_set *cs, const char *dir, unsigned flags, char *err,
                         size_t errlen);
int cr_counting_set_load(cr_counting_set *cs, const char *dir, char *err, size_t errlen);
int cr_bag_save(cr_bag *bag, const char *dir, unsigned flags, char *err, size_t errlen);
int cr_bag_load(cr_bag *bag, const char *dir, char *err, size_t errlen);
int cr_disjoint_set_save(cr_disjoint_set *ds, const char *dir, unsigned flags, char *err,
                         size_t errlen);
int cr_disjoint_set_load(cr_disjoint_set *ds, const char *dir, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
