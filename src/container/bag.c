/* cr_bag: items in no order, kept on whichever rank they were put
 * (include/courier/container.h). Rebalancing and gathering are sparse exchanges
 * (nbx.h): each rank sends its items' runs to the ranks that take them. */
#include "container/container_internal.h"

#include "common/block.h"
#include "common/fatal.h"
#include "courier/coll.h"
#include "courier/nbx.h"

#include "courier/sort.h"

#include <stdlib.h>
#include <string.h>

struct cr_bag {
    cr_comm *comm;
    int size, rank;
    size_t item_len;
    char *items;
    uint64_t count, cap;
    int h_insert;
    /* Items that arrive while a rebalance or a gather replaces the array (their
     * exchange runs handlers while it waits): kept aside and appended after. */
    bool moving;
    ct_deferred late;
};

static void reserve(cr_bag *bag, uint64_t need)
{
    if (need <= bag->cap)
        return;
    uint64_t cap = bag->cap ? bag->cap : 64;
    while (cap < need)
        cap *= 2;
    if (cap > SIZE_MAX / bag->item_len)
        cr_fatal("cr_bag: %llu items of %zu bytes do not fit in memory", (unsigned long long)cap,
                 bag->item_len);
    char *items = realloc(bag->items, (size_t)cap * bag->item_len);
    if (!items)
        cr_fatal("cr_bag: out of memory growing this rank's items beyond %llu",
                 (unsigned long long)bag->count);
    bag->items = items;
    bag->cap = cap;
}

void cr_bag_insert(cr_bag *bag, const void *item)
{
    reserve(bag, bag->count + 1);
    memcpy(bag->items + (size_t)bag->count * bag->item_len, item, bag->item_len);
    bag->count++;
}

static void on_inserts(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    cr_bag *bag = user;
    if (b->len != bag->item_len)
        cr_fatal("cr_bag: an item of %zu bytes, expected %zu", b->len, bag->item_len);
    if (bag->moving) {
        for (size_t i = 0; i < b->count; i++)
            ct_defer(&bag->late, 0, cr_batch_payload(b, i), bag->item_len, "cr_bag");
        return;
    }
    reserve(bag, bag->count + b->count);
    for (size_t i = 0; i < b->count; i++)
        cr_bag_insert(bag, cr_batch_payload(b, i));
}

static void append_late(cr_bag *bag)
{
    for (size_t at = 0; at < bag->late.len; at += 16 + ct_pad8(bag->item_len))
        cr_bag_insert(bag, bag->late.bytes + at + 16);
    bag->late.len = 0;
}

cr_bag *cr_bag_create(cr_comm *comm, size_t item_len, char *err, size_t errlen)
{
    if (item_len < 1 || item_len > CR_CONTAINER_MAX_VALUE) {
        snprintf(err, errlen, "cr_bag_create: item_len %zu is out of range: expected 1 to %d",
                 item_len, CR_CONTAINER_MAX_VALUE);
        return NULL;
    }
    cr_bag *bag = calloc(1, sizeof *bag);
    if (!bag)
        cr_fatal("cr_bag: out of memory creating the bag");
    *bag = (cr_bag){.comm = comm, .size = cr_comm_size(comm), .rank = cr_comm_rank(comm),
                    .item_len = item_len};
    bag->h_insert = cr_register_type(comm, &(cr_handler_type){.batch = on_inserts, .name = "bag insert"}, bag);
    return bag;
}

void cr_bag_destroy(cr_bag *bag)
{
    if (!bag)
        return;
    cr_barrier(bag->comm);
    free(bag->items);
    free(bag->late.bytes);
    free(bag);
}

void cr_bag_insert_at(cr_bag *bag, int rank, const void *item)
{
    if (rank < 0 || rank >= bag->size)
        cr_fatal("cr_bag_insert_at: rank %d is out of range [0, %d)", rank, bag->size);
    cr_async(bag->comm, rank, bag->h_insert, item, bag->item_len);
}

void cr_bag_for_all(cr_bag *bag, void (*fn)(void *item, void *user), void *user)
{
    /* fn may send items to this rank: they arrive in handlers, which may move the
     * array, so walk by index over the items there when it started. */
    uint64_t n = bag->count;
    for (uint64_t i = 0; i < n; i++)
        fn(bag->items + (size_t)i * bag->item_len, user);
}

uint64_t cr_bag_local_size(const cr_bag *bag)
{
    return bag->count;
}

/* Every rank's item count, after a barrier: counts[r] for every rank r. With
 * `freeze`, items that arrive from then on (sent by ranks already past the barrier)
 * are kept aside, so that the counts stay what the items are. */
static uint64_t *all_counts(cr_bag *bag, bool freeze)
{
    cr_barrier(bag->comm);
    bag->moving = freeze;
    uint64_t *counts = malloc((size_t)bag->size * sizeof *counts);
    if (!counts)
        cr_fatal("cr_bag: out of memory for %d counts", bag->size);
    cr_allgather(bag->comm, &bag->count, sizeof bag->count, counts, NULL);
    return counts;
}

uint64_t cr_bag_size(cr_bag *bag)
{
    uint64_t *counts = all_counts(bag, false), total = 0;
    for (int r = 0; r < bag->size; r++)
        total += counts[r];
    free(counts);
    return total;
}

/* Send this rank's items, which hold global positions [first, first + count), to the
 * ranks whose targets [start(r), start(r + 1)) they fall in; take what arrives, in
 * rank order. start(r) must be monotone with start(0) = 0 and start(P) = total. */
static void redistribute(cr_bag *bag, uint64_t first, uint64_t (*start)(uint64_t, int, int, int),
                         uint64_t total, int arg)
{
    int p = bag->size;
    int *dests = malloc((size_t)p * sizeof *dests);
    const void **bufs = malloc((size_t)p * sizeof *bufs);
    size_t *sizes = malloc((size_t)p * sizeof *sizes);
    if (!dests || !bufs || !sizes)
        cr_fatal("cr_bag: out of memory for the exchange's %d destinations", p);
    size_t n = 0;
    uint64_t at = first, end = first + bag->count;
    for (int r = 0; r < p && at < end; r++) {
        uint64_t hi = start(total, p, r + 1, arg);
        if (hi <= at)
            continue;
        uint64_t upto = hi < end ? hi : end;
        if (upto > at) {
            dests[n] = r;
            bufs[n] = bag->items + (size_t)(at - first) * bag->item_len;
            sizes[n] = (size_t)(upto - at) * bag->item_len;
            n++;
            at = upto;
        }
    }
    cr_nbx_result in;
    cr_nbx_exchange(bag->comm, n, dests, bufs, sizes, &in);
    free(dests);
    free(bufs);
    free(sizes);
    size_t bytes = in.total_bytes;
    char *items = bytes ? malloc(bytes) : NULL;
    if (bytes && !items)
        cr_fatal("cr_bag: out of memory for %zu bytes of items", bytes);
    size_t off = 0;
    for (size_t i = 0; i < in.count; i++) { /* by source rank: the global order */
        memcpy(items + off, in.data[i], in.sizes[i]);
        off += in.sizes[i];
    }
    cr_nbx_result_free(&in);
    free(bag->items);
    bag->items = items;
    bag->count = bag->cap = bytes / bag->item_len;
}

static uint64_t balanced_start(uint64_t total, int p, int r, int unused)
{
    (void)unused;
    return cr_block_first(total, p, r); /* blocks after rebalancing */
}

static uint64_t all_to_root(uint64_t total, int p, int r, int root)
{
    (void)p;
    return r <= root ? 0 : total;
}

/* Collective: where this rank's items start in rank order, and how many there are
 * in all; items that arrive from now on wait aside (all_counts's freeze). */
static void frozen_positions(cr_bag *bag, uint64_t *first, uint64_t *total)
{
    uint64_t *counts = all_counts(bag, true);
    *first = *total = 0;
    for (int r = 0; r < bag->size; r++) {
        if (r < bag->rank)
            *first += counts[r];
        *total += counts[r];
    }
    free(counts);
}

void cr_bag_rebalance(cr_bag *bag)
{
    uint64_t first, total;
    frozen_positions(bag, &first, &total);
    redistribute(bag, first, balanced_start, total, 0);
    bag->moving = false;
    append_late(bag);
}

void cr_bag_sort(cr_bag *bag, const cr_sort_opts *opts, cr_sort_stats *stats)
{
    if (!opts || opts->record_bytes != bag->item_len)
        cr_fatal("cr_bag_sort: the options' record_bytes is %zu, the bag's items have %zu bytes",
                 opts ? opts->record_bytes : 0, bag->item_len);
    /* every insert sent before is in; those that arrive from ranks already past the
     * sort wait aside and join after it (unsorted: the bag has no order to keep) */
    cr_barrier(bag->comm);
    bag->moving = true;
    void *items = bag->items;
    size_t n = (size_t)bag->count;
    if (!n) {
        free(items);
        items = NULL;
    }
    bag->items = NULL;
    bag->count = bag->cap = 0;
    cr_sort(bag->comm, &items, &n, opts, stats);
    bag->items = items;
    bag->count = bag->cap = n;
    bag->moving = false;
    append_late(bag);
}

void cr_bag_gather(cr_bag *bag, int root, void **items, uint64_t *count)
{
    if (root < 0 || root >= bag->size)
        cr_fatal("cr_bag_gather: root %d is out of range [0, %d)", root, bag->size);
    uint64_t first, total;
    frozen_positions(bag, &first, &total);
    /* A copy goes to the root; the bag keeps its items. */
    char *keep = bag->items;
    uint64_t keep_count = bag->count, keep_cap = bag->cap;
    bag->items = NULL;
    if (keep_count) {
        bag->items = malloc((size_t)keep_count * bag->item_len);
        if (!bag->items)
            cr_fatal("cr_bag_gather: out of memory for a copy of %llu items",
                     (unsigned long long)keep_count);
        memcpy(bag->items, keep, (size_t)keep_count * bag->item_len);
    }
    redistribute(bag, first, all_to_root, total, root);
    bag->moving = false;
    *items = bag->rank == root ? bag->items : NULL;
    *count = bag->rank == root ? bag->count : 0;
    if (bag->rank != root)
        free(bag->items);
    bag->items = keep;
    bag->count = keep_count;
    bag->cap = keep_cap;
    append_late(bag);
}

size_t ct_bag_item_len(const cr_bag *bag)
{
    return bag->item_len;
}

cr_comm *ct_bag_comm(const cr_bag *bag)
{
    return bag->comm;
}
