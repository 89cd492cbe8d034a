/* Ghosts: a rank's copies of the other ranks' vertices its adjacency names, for the
 * kernels that read a value of every neighbour each round (PageRank's contributions,
 * triangle counting's degrees and oriented lists). Each rank numbers the distinct
 * remote ids of an adjacency as slots and tells each owner which of its vertices it
 * copies and into which slot; from then on an owner refreshes the copies with one
 * record per (vertex, subscribing rank), not one per edge, and the adjacency is read
 * through `col`, local indices and slots in one numbering. */
#include "graph/ghosts.h"

#include "common/fatal.h"
#include "courier/mailbox.h"
#include "courier/nbx.h"
#include "mailbox/module.h"

#include <stdlib.h>
#include <string.h>

/* The list records' ids per record: small enough for the smallest buffers. */
#define LIST_CHUNK 48

typedef struct ghost_state {
    int h_subscribe, h_list;
    graph_ghosts *gh;             /* the call in progress, for the handlers */
    const graph_list_keys *keys;  /* graph_ghosts_fetch_lists' */
} ghost_state;

/* ---------------------------------------------------------------- handlers */

/* {my vertex, the subscriber's slot}: remember who copies it. */
static void on_subscribe(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    graph_ghosts *gh = ((ghost_state *)user)->gh;
    for (size_t k = 0; k < b->count; k++) {
        uint64_t m[2];
        memcpy(m, cr_batch_payload(b, k), sizeof m);
        if (gh->nsub == gh->sub_cap) {
            gh->sub_cap = gh->sub_cap ? 2 * gh->sub_cap : 1024;
            gh->sub = cr_xrealloc(gh->sub, gh->sub_cap * sizeof *gh->sub);
        }
        gh->sub[gh->nsub++] = (graph_subscriber){.local = (uint32_t)(m[0] - gh->g->first),
                                                 .rank = (uint32_t)cr_batch_src(b, k),
                                                 .slot = (uint32_t)m[1]};
    }
}

/* {slot, position, ids...}: part of a copied list, stored as my keys (UINT32_MAX
 * for an id I have none for: graph_ghosts_fetch_lists drops them). */
static void on_list(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm, (void)src;
    ghost_state *s = user;
    graph_ghosts *gh = s->gh;
    uint64_t head[2];
    memcpy(head, payload, sizeof head);
    const unsigned char *at = (const unsigned char *)payload + sizeof head;
    uint32_t *to = gh->list + gh->list_off[head[0]] + head[1];
    for (size_t k = 0; k < (len - sizeof head) / sizeof(uint64_t); k++) {
        uint64_t id;
        memcpy(&id, at + k * sizeof id, sizeof id);
        to[k] = s->keys->key_of(s->keys->ctx, id);
    }
}

static const cr_module_type ghost_module = {.name = "graph ghosts", .destroy = cr_module_state_free};

static ghost_state *state_of(cr_comm *comm, graph_ghosts *gh)
{
    bool fresh;
    ghost_state *s = cr_module_state_or_new(comm, &ghost_module, sizeof *s, &fresh);
    s->gh = gh;
    if (!fresh)
        return s;
    s->h_subscribe = cr_register_type(comm, &(cr_handler_type){.batch = on_subscribe,
                                                                .name = "ghost subscribe"}, s);
    s->h_list = cr_register_type(comm, &(cr_handler_type){.fn = on_list, .name = "ghost list"},
                                 s);
    return s;
}

/* ---------------------------------------------------------------- slots */

/* Open addressing from a remote id to its slot. */
typedef struct slot_table {
    uint64_t *key, *slot;
    uint64_t mask;
} slot_table;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    return x ^ (x >> 29);
}

static void table_init(slot_table *t, uint64_t most)
{
    uint64_t cap = 16;
    while (cap < 2 * most)
        cap *= 2;
    t->mask = cap - 1;
    t->key = cr_xmalloc(cap * sizeof *t->key);
    t->slot = cr_xmalloc(cap * sizeof *t->slot);
    memset(t->key, 0xff, cap * sizeof *t->key); /* UINT64_MAX: empty */
}

static void table_free(slot_table *t)
{
    free(t->key);
    free(t->slot);
}

/* The slot of id, numbering it `fresh` if it is new (then *added). */
static uint64_t table_slot(slot_table *t, uint64_t id, uint64_t fresh, bool *added)
{
    for (uint64_t h = mix(id) & t->mask;; h = (h + 1) & t->mask) {
        if (t->key[h] == id)
            return t->slot[h];
        if (t->key[h] == UINT64_MAX) {
            t->key[h] = id, t->slot[h] = fresh, *added = true;
            return fresh;
        }
    }
}

static int by_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Renumber the slots in order of id, so that each owner's ghosts are one run of
 * slots in the order the owner holds them (graph_ghosts_push copies a run whole). */
static void order_slots_by_id(graph_ghosts *gh, uint64_t nadj)
{
    uint64_t count = gh->g->count, n = gh->nghost;
    uint64_t (*pair)[2] = cr_xmalloc((n ? n : 1) * sizeof *pair);
    for (uint64_t s = 0; s < n; s++)
        pair[s][0] = gh->ids[s], pair[s][1] = s;
    qsort(pair, n, sizeof *pair, by_u64); /* ids are distinct: the first word decides */
    uint32_t *renumber = cr_xmalloc((n ? n : 1) * sizeof *renumber);
    for (uint64_t s = 0; s < n; s++) {
        gh->ids[s] = pair[s][0];
        renumber[pair[s][1]] = (uint32_t)s;
    }
    for (uint64_t k = 0; k < nadj; k++)
        if (gh->col[k] >= count)
            gh->col[k] = (uint32_t)(count + renumber[gh->col[k] - count]);
    free(renumber);
    free(pair);
}

/* From a ghost's id to its slot once the slots are numbered: 4 bytes a cell (the
 * slot; the id is read from the sorted ids), three cells to every two ghosts, a
 * quarter of the numbering table's bytes. */
static void id_index_build(graph_id_index *x, const uint64_t *ids, uint64_t n)
{
    uint64_t cap = 16;
    while (cap < n + n / 2)
        cap *= 2;
    *x = (graph_id_index){.cell = cr_xmalloc(cap * sizeof *x->cell), .mask = cap - 1, .ids = ids};
    memset(x->cell, 0xff, cap * sizeof *x->cell);
    for (uint64_t s = 0; s < n; s++) {
        uint64_t h = mix(ids[s]) & x->mask;
        while (x->cell[h] != UINT32_MAX)
            h = (h + 1) & x->mask;
        x->cell[h] = (uint32_t)s;
    }
}

/* The slot of a ghost's id, or UINT64_MAX if it is none. */
static uint64_t id_index_lookup(const graph_id_index *x, uint64_t id)
{
    for (uint64_t h = mix(id) & x->mask; x->cell[h] != UINT32_MAX; h = (h + 1) & x->mask)
        if (x->ids[x->cell[h]] == id)
            return x->cell[h];
    return UINT64_MAX;
}

/* Number the remote ids of the adjacency as slots, in order of id; col[k] = local
 * index, or count + slot. With by_id, no col: *by_id gets an index from a remote id
 * to its slot instead, for the reverse index to be built from (the caller frees its
 * cells). */
static void number_slots(graph_ghosts *gh, const uint64_t *offsets, graph_ids adj,
                         graph_id_index *by_id)
{
    const cr_graph *g = gh->g;
    uint64_t nadj = offsets[g->count], remote = 0;
    for (uint64_t k = 0; k < nadj; k++)
        remote += graph_id_at(adj, k) - g->first >= g->count;
    uint64_t others = g->n - g->count;
    if (g->count + (remote < others ? remote : others) >= UINT32_MAX)
        cr_fatal("graph ghosts: rank %d has %llu vertices and up to %llu ghosts, more than "
                 "2^32 - 1 together: use more ranks", g->rank, (unsigned long long)g->count,
                 (unsigned long long)(remote < others ? remote : others));
    slot_table t;
    table_init(&t, remote < others ? remote : others);
    uint32_t *col = by_id ? NULL : graph_xmalloc_large(nadj, sizeof *col);
    gh->ids = cr_xmalloc((remote ? remote : 1) * sizeof *gh->ids);
    for (uint64_t k = 0; k < nadj; k++) {
        uint64_t v = graph_id_at(adj, k);
        if (v - g->first < g->count) {
            if (col)
                col[k] = (uint32_t)(v - g->first);
            continue;
        }
        bool added = false;
        uint64_t slot = table_slot(&t, v, gh->nghost, &added);
        if (added)
            gh->ids[gh->nghost++] = v;
        if (col)
            col[k] = (uint32_t)(g->count + slot);
    }
    gh->col = col;
    table_free(&t);
    if (col) {
        order_slots_by_id(gh, nadj);
        return;
    }
    qsort(gh->ids, gh->nghost, sizeof *gh->ids, by_u64);
    id_index_build(by_id, gh->ids, gh->nghost);
}

/* col rebuilt for ghosts numbered without it (graph_ghosts_reversed_of came first):
 * a remote id's slot is its place in the sorted ids. */
static void fill_col(graph_ghosts *gh, const uint64_t *offsets, graph_ids adj)
{
    const cr_graph *g = gh->g;
    uint64_t nadj = offsets[g->count];
    gh->col = graph_xmalloc_large(nadj, sizeof *gh->col);
    for (uint64_t k = 0; k < nadj; k++) {
        uint64_t v = graph_id_at(adj, k);
        if (v - g->first < g->count) {
            gh->col[k] = (uint32_t)(v - g->first);
            continue;
        }
        /* v is among the ids */
        gh->col[k] = (uint32_t)(g->count + cr_lower_bound_u64(gh->ids, 0, gh->nghost, v));
    }
}

/* The subscribers by rank, each rank's in order of vertex (a stable pass over the
 * list in vertex order): what graph_ghosts_push sends each rank, in its slot order. */
static void index_by_rank(graph_ghosts *gh)
{
    int size = gh->g->size;
    uint64_t *count = cr_xcalloc((size_t)size + 1, sizeof *count);
    for (uint64_t j = 0; j < gh->nsub; j++)
        count[gh->sub[j].rank + 1]++;
    gh->ndests = 0;
    for (int r = 0; r < size; r++)
        gh->ndests += count[r + 1] > 0;
    gh->dests = cr_xmalloc((gh->ndests ? gh->ndests : 1) * sizeof *gh->dests);
    gh->dest_off = cr_xmalloc((gh->ndests + 1) * sizeof *gh->dest_off);
    gh->dest_local = cr_xmalloc((gh->nsub ? gh->nsub : 1) * sizeof *gh->dest_local);
    uint64_t *at = cr_xmalloc(((size_t)size + 1) * sizeof *at), d = 0;
    for (int r = 0; r < size; r++)
        count[r + 1] += count[r];
    for (int r = 0; r < size; r++) {
        at[r] = count[r];
        if (count[r + 1] > count[r]) {
            gh->dests[d] = r;
            gh->dest_off[d++] = count[r];
        }
    }
    gh->dest_off[d] = gh->nsub;
    for (uint64_t j = 0; j < gh->nsub; j++)
        gh->dest_local[at[gh->sub[j].rank]++] = (uint32_t)gh->sub[j].local;
    free(at);
    free(count);
}

/* The subscribers sorted by their vertex: sub_off[i] .. sub_off[i + 1] are local i's. */
static void index_subscribers(graph_ghosts *gh)
{
    uint64_t count = gh->g->count;
    gh->sub_off = cr_xcalloc(count + 1, sizeof *gh->sub_off);
    for (uint64_t j = 0; j < gh->nsub; j++)
        gh->sub_off[gh->sub[j].local + 1]++;
    for (uint64_t i = 0; i < count; i++)
        gh->sub_off[i + 1] += gh->sub_off[i];
    graph_subscriber *sorted = cr_xmalloc((gh->nsub ? gh->nsub : 1) * sizeof *sorted);
    uint64_t *fill = cr_xmalloc((count ? count : 1) * sizeof *fill);
    memcpy(fill, gh->sub_off, count * sizeof *fill);
    for (uint64_t j = 0; j < gh->nsub; j++)
        sorted[fill[gh->sub[j].local]++] = gh->sub[j];
    free(fill);
    free(gh->sub);
    gh->sub = sorted;
    gh->sub_cap = gh->nsub;
    index_by_rank(gh);
}

/* ---------------------------------------------------------------- the calls */

/* Tell each ghost's owner which slot copies it. Collective. */
static void subscribe(graph_ghosts *gh)
{
    cr_graph *g = gh->g;
    ghost_state *s = state_of(g->comm, gh);
    graph_sum(g->comm, 0); /* every rank's table is set before a subscription arrives */
    for (uint64_t slot = 0; slot < gh->nghost; slot++) {
        uint64_t v = gh->ids[slot], m[2] = {v, slot};
        cr_async(g->comm, cr_block_owner(g->n, g->size, v), s->h_subscribe, m, sizeof m);
    }
    cr_barrier(g->comm);
    index_subscribers(gh);
    s->gh = NULL;
}

static void ghosts_build(cr_graph *g, const uint64_t *offsets, graph_ids adj,
                         graph_ghosts *gh, graph_id_index *by_id)
{
    *gh = (graph_ghosts){.g = g};
    number_slots(gh, offsets, adj, by_id);
    subscribe(gh);
}

void graph_ghosts_build(cr_graph *g, const uint64_t *offsets, graph_ids adj,
                        graph_ghosts *gh)
{
    ghosts_build(g, offsets, adj, gh, NULL);
}

void graph_ghosts_build_indexed(cr_graph *g, const uint64_t *offsets, graph_ids adj,
                                graph_ghosts *gh)
{
    graph_id_index by_id;
    ghosts_build(g, offsets, adj, gh, &by_id);
    gh->by_id = by_id;
}

uint64_t graph_ghosts_slot(const graph_ghosts *gh, uint64_t id)
{
    return id_index_lookup(&gh->by_id, id);
}

void graph_ghosts_subscribe(cr_graph *g, uint64_t *ids, uint64_t n, graph_ghosts *gh)
{
    *gh = (graph_ghosts){.g = g, .ids = ids, .nghost = n};
    subscribe(gh);
}

/* The values my subscribers copy, by rank, in each rank's slot order: `size` bytes
 * each (4 or 8), values[0 .. count) mine; the owners' land in values[count + slot]. */
static void push_values(const graph_ghosts *gh, void *values, size_t size)
{
    cr_graph *g = gh->g;
    unsigned char *packed = cr_xmalloc((gh->nsub ? gh->nsub : 1) * size);
    const void **bufs = cr_xmalloc((gh->ndests ? gh->ndests : 1) * sizeof *bufs);
    size_t *sizes = cr_xmalloc((gh->ndests ? gh->ndests : 1) * sizeof *sizes);
    for (uint64_t d = 0; d < gh->ndests; d++) {
        uint64_t j = gh->dest_off[d], end = gh->dest_off[d + 1];
        const unsigned char *from = values;
        if (size == sizeof(uint64_t)) /* memcpy of a constant size: one move, any type */
            for (; j < end; j++)
                memcpy(packed + 8 * j, from + 8 * (size_t)gh->dest_local[j], 8);
        else
            for (; j < end; j++)
                memcpy(packed + 4 * j, from + 4 * (size_t)gh->dest_local[j], 4);
        bufs[d] = packed + gh->dest_off[d] * size;
        sizes[d] = (end - gh->dest_off[d]) * size;
    }
    cr_nbx_result in;
    cr_nbx_exchange(g->comm, gh->ndests, gh->dests, bufs, sizes, &in);
    for (size_t m = 0; m < in.count; m++) {
        /* the sender's vertices I copy are one run of slots, in the same order */
        uint64_t first = cr_block_first(g->n, g->size, in.sources[m]);
        uint64_t lo = cr_lower_bound_u64(gh->ids, 0, gh->nghost, first);
        if (lo + in.sizes[m] / size > gh->nghost)
            cr_fatal("graph ghosts: rank %d sent %zu values, more than this rank copies",
                     in.sources[m], in.sizes[m] / size);
        memcpy((unsigned char *)values + (g->count + lo) * size, in.data[m], in.sizes[m]);
    }
    cr_nbx_result_free(&in);
    free(packed);
    free(bufs);
    free(sizes);
}

void graph_ghosts_push(const graph_ghosts *gh, uint64_t *values)
{
    push_values(gh, values, sizeof *values);
}

void graph_ghosts_push_floats(const graph_ghosts *gh, float *values)
{
    push_values(gh, values, sizeof *values);
}

/* Drop the entries no key was found for, keeping the order of the rest. */
static void drop_unknown(graph_ghosts *gh)
{
    uint64_t kept = 0;
    for (uint64_t slot = 0; slot < gh->nghost; slot++) {
        uint64_t start = gh->list_off[slot], end = gh->list_off[slot + 1];
        gh->list_off[slot] = kept;
        for (uint64_t k = start; k < end; k++)
            if (gh->list[k] != UINT32_MAX)
                gh->list[kept++] = gh->list[k];
    }
    gh->list_off[gh->nghost] = kept;
}

uint64_t graph_ghosts_fetch_lists(graph_ghosts *gh, const uint64_t *offsets,
                                  const uint32_t *adj, const graph_list_keys *keys)
{
    cr_graph *g = gh->g;
    uint64_t count = g->count, *len = cr_xmalloc((count + gh->nghost + 1) * sizeof *len);
    for (uint64_t i = 0; i < count; i++)
        len[i] = offsets[i + 1] - offsets[i];
    graph_ghosts_push(gh, len); /* the copies' lengths first, to place them */
    gh->list_off = cr_xmalloc((gh->nghost + 1) * sizeof *gh->list_off);
    gh->list_off[0] = 0;
    for (uint64_t slot = 0; slot < gh->nghost; slot++)
        gh->list_off[slot + 1] = gh->list_off[slot] + len[count + slot];
    free(len);
    gh->list = graph_xmalloc_large(gh->list_off[gh->nghost], sizeof *gh->list);
    ghost_state *s = state_of(g->comm, gh);
    s->keys = keys;
    graph_sum(g->comm, 0); /* every rank's lists are placed before a part arrives */
    uint64_t m[2 + LIST_CHUNK];
    for (uint64_t i = 0; i < count; i++)
        for (uint64_t j = gh->sub_off[i]; j < gh->sub_off[i + 1]; j++)
            for (uint64_t at = offsets[i]; at < offsets[i + 1]; at += LIST_CHUNK) {
                uint64_t n = offsets[i + 1] - at < LIST_CHUNK ? offsets[i + 1] - at : LIST_CHUNK;
                m[0] = gh->sub[j].slot, m[1] = at - offsets[i];
                for (uint64_t k = 0; k < n; k++) /* ids on the wire: keys are each rank's */
                    m[2 + k] = keys->id_of(keys->ctx, adj[at + k]);
                cr_async(g->comm, (int)gh->sub[j].rank, s->h_list, m, (2 + n) * sizeof *m);
            }
    cr_barrier(g->comm);
    s->gh = NULL;
    s->keys = NULL;
    uint64_t received = gh->list_off[gh->nghost];
    drop_unknown(gh);
    return received;
}

/* A weight as 32 bits that order as the weights do (zeros of both signs equal). */
static uint32_t weight_order(float w)
{
    uint32_t u;
    if (w == 0)
        w = 0;
    memcpy(&u, &w, sizeof u);
    return u >> 31 ? ~u : u | 0x80000000u;
}

static float weight_of_order(uint32_t u)
{
    u = u >> 31 ? u & 0x7fffffffu : ~u;
    float w;
    memcpy(&w, &u, sizeof w);
    return w;
}

/* A weighted graph's ghost edges lightest first, as its own lists are, ties by local
 * end (the order they were filled in). Each entry is sorted as one word, weight
 * above local end, with the graph's inline sort: with qsort and a comparator the
 * sort took half of the reverse index's time in sssp's first trial (R-MAT, scale 18). */
static void sort_reverse_by_weight(graph_ghosts *gh)
{
    uint64_t most = graph_longest_list(gh->rev_off, gh->nghost);
    uint64_t *key = cr_xmalloc((most ? most : 1) * sizeof *key);
    for (uint64_t s = 0; s < gh->nghost; s++) {
        uint64_t at = gh->rev_off[s], n = gh->rev_off[s + 1] - at;
        if (n < 2)
            continue;
        for (uint64_t k = 0; k < n; k++)
            key[k] = (uint64_t)weight_order(gh->rev_w[at + k]) << 32 | gh->rev_local[at + k];
        graph_sort_ids(key, n);
        for (uint64_t k = 0; k < n; k++) {
            gh->rev_local[at + k] = (uint32_t)key[k];
            gh->rev_w[at + k] = weight_of_order((uint32_t)(key[k] >> 32));
        }
    }
    free(key);
}

/* Where the reverse index reads an entry's column: col, or, for ghosts numbered
 * without it, the entry's id (local, or a slot from the table: by_id, needed only
 * where remote entries are read). */
typedef struct col_source {
    const graph_ghosts *gh;
    graph_ids adj;               /* none: gh->col */
    const graph_id_index *by_id;
} col_source;

static inline uint32_t col_at(const col_source *c, uint64_t k)
{
    if (!c->adj.u32 && !c->adj.u64)
        return c->gh->col[k];
    uint64_t v = graph_id_at(c->adj, k), first = c->gh->g->first, count = c->gh->g->count;
    return (uint32_t)(v - first < count ? v - first : count + id_index_lookup(c->by_id, v));
}

/* Whether entry k names one of my vertices (without looking its slot up). */
static inline bool is_local(const col_source *c, uint64_t k)
{
    const cr_graph *g = c->gh->g;
    if (!c->adj.u32 && !c->adj.u64)
        return c->gh->col[k] < g->count;
    return graph_id_at(c->adj, k) - g->first < g->count;
}

/* Each vertex's edges to my own vertices, in list order (lightest first, weighted). */
static void split_local(graph_ghosts *gh, const uint64_t *offsets, const float *weights,
                        const col_source *c)
{
    uint64_t count = gh->g->count, n = 0;
    for (uint64_t k = 0; k < offsets[count]; k++)
        n += is_local(c, k);
    gh->local_off = cr_xmalloc((count + 1) * sizeof *gh->local_off);
    gh->local_col = graph_xmalloc_large(n, sizeof *gh->local_col);
    gh->local_w = weights ? graph_xmalloc_large(n, sizeof *gh->local_w) : NULL;
    uint64_t at = 0;
    for (uint64_t i = 0; i < count; i++) {
        gh->local_off[i] = at;
        for (uint64_t k = offsets[i]; k < offsets[i + 1]; k++)
            if (is_local(c, k)) {
                if (weights)
                    gh->local_w[at] = weights[k];
                gh->local_col[at++] = col_at(c, k);
            }
    }
    gh->local_off[count] = at;
}

/* The slot of every remote entry, in list order, each looked up once: from ids the
 * lookup is a hash probe and a read of the id, two misses an entry (with col, a read).
 * Counts each slot's entries into rev_off[slot + 1]. */
static uint32_t *remote_slots(graph_ghosts *gh, const uint64_t *offsets, const col_source *c)
{
    uint64_t count = gh->g->count, nadj = offsets[count], remote = 0;
    for (uint64_t k = 0; k < nadj; k++)
        remote += !is_local(c, k);
    uint32_t *slot = graph_xmalloc_large(remote, sizeof *slot);
    for (uint64_t k = 0, j = 0; k < nadj; k++)
        if (!is_local(c, k)) {
            slot[j] = col_at(c, k) - (uint32_t)count;
            gh->rev_off[slot[j++] + 1]++;
        }
    return slot;
}

/* The fill scatters each remote entry to its slot's list, a miss an entry on a large
 * graph: the place of the entry this many ahead is fetched early. */
#define REV_PREFETCH_AHEAD 16

static void reverse_from(graph_ghosts *gh, const uint64_t *offsets, const col_source *c)
{
    uint64_t count = gh->g->count;
    gh->rev_off = cr_xcalloc(gh->nghost + 2, sizeof *gh->rev_off);
    uint32_t *slot = remote_slots(gh, offsets, c);
    for (uint64_t s = 0; s < gh->nghost; s++)
        gh->rev_off[s + 1] += gh->rev_off[s];
    uint64_t total = gh->rev_off[gh->nghost];
    gh->rev_local = graph_xmalloc_large(total, sizeof *gh->rev_local);
    const float *weights = offsets == gh->g->offsets ? gh->g->wadj : NULL;
    if (weights)
        gh->rev_w = graph_xmalloc_large(total, sizeof *gh->rev_w);
    uint64_t *fill = cr_xmalloc((gh->nghost + 1) * sizeof *fill), j = 0;
    memcpy(fill, gh->rev_off, gh->nghost * sizeof *fill);
    for (uint64_t i = 0; i < count; i++)
        for (uint64_t k = offsets[i]; k < offsets[i + 1]; k++) {
            if (is_local(c, k))
                continue;
            if (j + REV_PREFETCH_AHEAD < total) { /* where a later entry will go, near enough */
                uint64_t ahead = fill[slot[j + REV_PREFETCH_AHEAD]];
                __builtin_prefetch(&gh->rev_local[ahead], 1);
                if (weights)
                    __builtin_prefetch(&gh->rev_w[ahead], 1);
            }
            uint64_t at = fill[slot[j++]]++;
            gh->rev_local[at] = (uint32_t)i;
            if (weights)
                gh->rev_w[at] = weights[k];
        }
    free(fill);
    free(slot);
    if (weights)
        sort_reverse_by_weight(gh);
}

void graph_ghosts_reverse(graph_ghosts *gh, const uint64_t *offsets)
{
    const col_source c = {.gh = gh};
    reverse_from(gh, offsets, &c);
    split_local(gh, offsets, offsets == gh->g->offsets ? gh->g->wadj : NULL, &c);
}

void graph_ghosts_free(graph_ghosts *gh)
{
    free(gh->local_off);
    free(gh->local_col);
    free(gh->local_w);
    free(gh->local_runs);
    free(gh->rev_off);
    free(gh->rev_local);
    free(gh->rev_w);
    free(gh->dests);
    free(gh->dest_off);
    free(gh->dest_local);
    free(gh->ids);
    free(gh->col);
    free(gh->sub);
    free(gh->sub_off);
    free(gh->list);
    free(gh->list_off);
    free(gh->by_id.cell);
    *gh = (graph_ghosts){0};
}

const graph_ghosts *graph_ghosts_of(cr_graph *g)
{
    if (!g->ghosts) {
        graph_ghosts *gh = cr_xmalloc(sizeof *gh);
        graph_ghosts_build(g, g->offsets, g->adj, gh);
        g->ghosts = gh;
    } else if (!g->ghosts->col) {
        fill_col(g->ghosts, g->offsets, g->adj);
    }
    return g->ghosts;
}

/* On a graph whose lists are sorted by id (simple, unweighted), each vertex's edges
 * to my own vertices are one run of its list: where it starts and how long it is, 8
 * bytes a vertex instead of 4 an edge. False (nothing kept) on other graphs. */
static bool local_runs(graph_ghosts *gh)
{
    const cr_graph *g = gh->g;
    if (!g->simple || g->wadj || graph_longest_list(g->offsets, g->count) > UINT32_MAX)
        return false;
    gh->local_runs = cr_xmalloc((g->count ? g->count : 1) * sizeof *gh->local_runs);
    for (uint64_t i = 0; i < g->count; i++) {
        uint64_t start = g->offsets[i], end = g->offsets[i + 1];
        uint64_t from = graph_ids_lower_bound(g->adj, start, end, g->first);
        uint64_t to = graph_ids_lower_bound(g->adj, from, end, g->first + g->count);
        gh->local_runs[i] = (graph_run){(uint32_t)(from - start), (uint32_t)(to - from)};
    }
    return true;
}

/* The kernels that walk the reverse index never read col, the same size again: the
 * first of them numbers the ghosts without it, from the table of their ids (at 2
 * ranks betweenness's peak fell by a sixth, docs/kernels.md). The edges to my own
 * vertices apart (split_local) only when asked: betweenness reads them from the
 * graph's lists. */
static graph_ghosts *reverse_index_of(cr_graph *g, bool with_local)
{
    graph_ghosts *gh = g->ghosts;
    const float *weights = g->wadj;
    if (!gh) {
        gh = cr_xmalloc(sizeof *gh);
        graph_id_index by_id;
        ghosts_build(g, g->offsets, g->adj, gh, &by_id);
        const col_source c = {.gh = gh, .adj = g->adj, .by_id = &by_id};
        reverse_from(gh, g->offsets, &c);
        if (with_local)
            split_local(gh, g->offsets, weights, &c);
        free(by_id.cell);
        g->ghosts = gh;
        return gh;
    }
    /* ghosts with col came from graph_ghosts_of; without, from here (where the local
     * entries are read from the lists, which needs no table) */
    const col_source c = {.gh = gh, .adj = gh->col ? (graph_ids){0} : g->adj};
    if (!gh->rev_off)
        reverse_from(gh, g->offsets, &c);
    if (with_local && !gh->local_off)
        split_local(gh, g->offsets, weights, &c);
    return gh;
}

const graph_ghosts *graph_ghosts_reversed_of(cr_graph *g)
{
    return reverse_index_of(g, true);
}

const graph_ghosts *graph_ghosts_reverse_index_of(cr_graph *g)
{
    graph_ghosts *gh = reverse_index_of(g, false);
    if (!gh->local_runs && !gh->local_off && !local_runs(gh))
        reverse_index_of(g, true);
    return gh;
}
