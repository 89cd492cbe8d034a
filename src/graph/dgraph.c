/* The distributed graph: block-distributed vertices, a CSR per rank, built by
 * shuffling every edge to the owners of its two ends, through the mailbox or with
 * one sparse exchange. */
#include "courier/nbx.h"
#include "graph/ghosts.h"

#include "common/fatal.h"
#include "courier/mailbox.h"
#include "courier/route.h"
#include "mailbox/module.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Directed halves of edges as they arrive, before the CSR is built (the sparse
 * exchange's path). */
typedef struct arrivals {
    uint64_t (*pairs)[3]; /* local source index, global target, weight's bits */
    size_t count, cap;
    const cr_graph *g;
} arrivals;

static void add_arrival(arrivals *a, uint64_t u, uint64_t v, uint64_t wbits)
{
    if (a->count == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 4096;
        a->pairs = cr_xrealloc(a->pairs, a->cap * sizeof *a->pairs);
    }
    a->pairs[a->count][0] = u - a->g->first;
    a->pairs[a->count][1] = v;
    a->pairs[a->count][2] = wbits;
    a->count++;
}

/* A weight travels as the bits of its float in a 64-bit word. */
static uint64_t bits_of(float w)
{
    uint32_t b;
    memcpy(&b, &w, sizeof b);
    return b;
}

static float weight_of(uint64_t bits)
{
    uint32_t b = (uint32_t)bits;
    float w;
    memcpy(&w, &b, sizeof w);
    return w;
}

static uint64_t edge_weight_bits(const cr_edge_list *l, size_t i)
{
    return l->weights ? bits_of(l->weights[i]) : 0;
}

/* Counting sort of the arrivals by local source: the CSR. */
static void build_csr(cr_graph *g, const arrivals *a)
{
    g->offsets = cr_xcalloc(g->count + 1, sizeof *g->offsets);
    for (size_t i = 0; i < a->count; i++)
        g->offsets[a->pairs[i][0] + 1]++;
    for (uint64_t i = 0; i < g->count; i++)
        g->offsets[i + 1] += g->offsets[i];
    g->nadj = a->count;
    g->adj = graph_ids_alloc(a->count, g->n);
    if (g->weighted)
        g->wadj = graph_xmalloc_large(a->count, sizeof *g->wadj);
    uint64_t *fill = cr_xmalloc((g->count ? g->count : 1) * sizeof *fill);
    memcpy(fill, g->offsets, g->count * sizeof *fill);
    for (size_t i = 0; i < a->count; i++) {
        uint64_t k = fill[a->pairs[i][0]]++;
        graph_id_set(g->adj, k, a->pairs[i][1]);
        if (g->wadj)
            g->wadj[k] = weight_of(a->pairs[i][2]);
    }
    free(fill);
}

/* ---- the mailbox's path: two passes, the adjacency written in place --------------- */

/* The mailbox's build never holds the halves apart from the adjacency: a first pass
 * counts every vertex's degree at its owner (one 8-byte record per edge end), the
 * owners size the CSR, and a second pass sends each half straight to its slot. Its
 * peak is the edges' source plus the CSR, not the edge list plus twice the halves.
 * The passes take edges one at a time (graph_placer, graph_internal.h), so the
 * source may be a list or a file read again (cr_graph_read). */
struct graph_placer {
    cr_graph *g;
    uint64_t *fill;    /* next free slot of each local vertex */
    uint64_t overflow; /* halves beyond their vertex's count (a source that changed) */
    int h_degree, h_half;
    size_t half;       /* a half's bytes: u, v and, weighted, the weight's bits */
};

static void on_degrees(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    cr_graph *g = ((graph_placer *)user)->g;
    for (size_t k = 0; k < b->count; k++) {
        uint64_t u;
        memcpy(&u, b->payloads + k * b->stride, sizeof u);
        g->offsets[u - g->first + 1]++;
    }
}

static void on_halves(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    graph_placer *p = user;
    cr_graph *g = p->g;
    for (size_t k = 0; k < b->count; k++) {
        uint64_t e[3] = {0, 0, 0};
        memcpy(e, b->payloads + k * b->stride, b->len);
        uint64_t i = e[0] - g->first, slot = p->fill[i];
        if (slot >= g->offsets[i + 1]) { /* more than were counted: never written */
            p->overflow++;
            continue;
        }
        p->fill[i]++;
        graph_id_set(g->adj, slot, e[1]);
        if (g->wadj)
            g->wadj[slot] = weight_of(e[2]);
    }
}

graph_placer *graph_placer_begin(cr_graph *g)
{
    graph_placer *p = cr_xcalloc(1, sizeof *p);
    p->g = g;
    p->half = g->weighted ? 24 : 16;
    g->offsets = cr_xcalloc(g->count + 1, sizeof *g->offsets);
    /* registered after the state they use exists: they may run inside cr_register */
    p->h_degree = cr_register_type(g->comm, &(cr_handler_type){.batch = on_degrees}, p);
    p->h_half = cr_register_type(g->comm, &(cr_handler_type){.batch = on_halves}, p);
    return p;
}

void graph_placer_count(graph_placer *p, uint64_t u, uint64_t v)
{
    cr_graph *g = p->g; /* self-loops too: degrees count ends */
    cr_async(g->comm, cr_block_owner(g->n, g->size, u), p->h_degree, &u, sizeof u);
    cr_async(g->comm, cr_block_owner(g->n, g->size, v), p->h_degree, &v, sizeof v);
}

void graph_placer_size(graph_placer *p)
{
    cr_graph *g = p->g;
    cr_barrier(g->comm);
    for (uint64_t i = 0; i < g->count; i++)
        g->offsets[i + 1] += g->offsets[i];
    g->nadj = g->offsets[g->count];
    g->adj = graph_ids_alloc(g->nadj, g->n);
    if (g->weighted)
        g->wadj = graph_xmalloc_large(g->nadj, sizeof *g->wadj);
    p->fill = cr_xmalloc((g->count ? g->count : 1) * sizeof *p->fill);
    memcpy(p->fill, g->offsets, g->count * sizeof *p->fill);
    /* A faster rank's halves belong to the transport's next phase: this rank
     * receives none before its own barrier has returned, so its adjacency exists. */
}

void graph_placer_place(graph_placer *p, uint64_t u, uint64_t v, uint64_t wbits)
{
    cr_graph *g = p->g;
    uint64_t e[3] = {u, v, wbits}, r[3] = {v, u, wbits};
    cr_async(g->comm, cr_block_owner(g->n, g->size, u), p->h_half, e, p->half);
    cr_async(g->comm, cr_block_owner(g->n, g->size, v), p->h_half, r, p->half);
}

void graph_placer_end(graph_placer *p)
{
    cr_graph *g = p->g;
    cr_barrier(g->comm);
    for (uint64_t i = 0; i < g->count; i++)
        if (p->fill[i] != g->offsets[i + 1])
            cr_fatal("cr_graph_build: vertex %llu received %llu edge ends, but %llu were "
                     "counted (did the edges change between the passes?)",
                     (unsigned long long)(g->first + i),
                     (unsigned long long)(p->fill[i] - g->offsets[i] +
                                          (i + 1 == g->count ? p->overflow : 0)),
                     (unsigned long long)(g->offsets[i + 1] - g->offsets[i]));
    if (p->overflow)
        cr_fatal("cr_graph_build: %llu edge ends more than were counted (did the edges "
                 "change between the passes?)", (unsigned long long)p->overflow);
    free(p->fill);
    free(p);
}

/* ---- a list the build may consume: packed to 4-byte ids for the second pass ------ */

/* The second pass reads each edge once, while the CSR it fills is written at random
 * (so all of it is resident from the pass's first tenth on): with the list as it is
 * (16 bytes an edge) a rank holds both whole. A list the build owns is first packed
 * in place to two 4-byte ids an edge, when every id fits, and the pages this frees
 * are handed back to the system: at 2 ranks the build's peak falls by a quarter. */
typedef struct edge_source {
    const cr_edge_list *list;
    const unsigned char *packed; /* the list's edges packed to 8 bytes each, or NULL */
} edge_source;

static void edge_at(const edge_source *src, size_t i, uint64_t *u, uint64_t *v)
{
    if (src->packed) {
        uint32_t p[2];
        memcpy(p, src->packed + 8 * i, sizeof p);
        *u = p[0], *v = p[1];
    } else {
        *u = src->list->edges[i].u, *v = src->list->edges[i].v;
    }
}

/* Return the whole pages of [at, at + len) to the system: they read as zero after.
 * The range lies inside one allocation of ours, so no other object shares them. */
static void release_pages(void *at, size_t len)
{
#ifdef MADV_DONTNEED
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        return;
    uintptr_t from = ((uintptr_t)at + (uintptr_t)page - 1) / (uintptr_t)page * (uintptr_t)page;
    uintptr_t to = ((uintptr_t)at + len) / (uintptr_t)page * (uintptr_t)page;
    if (to > from)
        (void)madvise((void *)from, to - from, MADV_DONTNEED);
#else
    (void)at, (void)len;
#endif
}

/* Pack the list's edges in place (edge i to bytes [8i, 8i + 8), which lie at or below
 * its own bytes [16i, 16i + 16): the copies go through memcpy, bytes, so no access is
 * assumed apart from another), then release the unused rest of the allocation. */
static const unsigned char *pack_edges(cr_edge_list *l)
{
    unsigned char *base = (unsigned char *)l->edges;
    for (size_t i = 0; i < l->count; i++) {
        cr_edge e;
        memcpy(&e, base + i * sizeof e, sizeof e);
        uint32_t p[2] = {(uint32_t)e.u, (uint32_t)e.v};
        memcpy(base + 8 * i, p, sizeof p);
    }
    size_t held = (l->cap > l->count ? l->cap : l->count) * sizeof *l->edges;
    release_pages(base + 8 * l->count, held - 8 * l->count);
    return base;
}

static void shuffle_by_mailbox(cr_graph *g, const cr_edge_list *local, cr_edge_list *owned)
{
    graph_placer *p = graph_placer_begin(g);
    for (size_t i = 0; i < local->count; i++)
        graph_placer_count(p, local->edges[i].u, local->edges[i].v);
    edge_source src = {.list = local};
    if (owned && g->n - 1 <= UINT32_MAX && owned->count)
        src.packed = pack_edges(owned);
    graph_placer_size(p);
    for (size_t i = 0; i < local->count; i++) {
        uint64_t u, v;
        edge_at(&src, i, &u, &v);
        graph_placer_place(p, u, v, edge_weight_bits(local, i));
    }
    graph_placer_end(p);
}

/* Bulk-synchronous shuffle: bucket both halves of every edge by owner, one
 * cr_nbx_exchange, then unpack. */
static void shuffle_by_exchange(cr_graph *g, const cr_edge_list *local, arrivals *a)
{
    size_t p = (size_t)g->size, *count = cr_xcalloc(p + 1, sizeof *count);
    for (size_t i = 0; i < local->count; i++) {
        count[cr_block_owner(g->n, g->size, local->edges[i].u) + 1]++;
        count[cr_block_owner(g->n, g->size, local->edges[i].v) + 1]++;
    }
    for (size_t r = 0; r < p; r++)
        count[r + 1] += count[r]; /* count[r]: where rank r's pairs start */
    uint64_t (*out)[3] = cr_xmalloc((count[p] ? count[p] : 1) * sizeof *out);
    size_t *fill = cr_xmalloc(p * sizeof *fill);
    memcpy(fill, count, p * sizeof *fill);
    for (size_t i = 0; i < local->count; i++) {
        uint64_t u = local->edges[i].u, v = local->edges[i].v, w = edge_weight_bits(local, i);
        size_t k = fill[cr_block_owner(g->n, g->size, u)]++;
        out[k][0] = u, out[k][1] = v, out[k][2] = w;
        k = fill[cr_block_owner(g->n, g->size, v)]++;
        out[k][0] = v, out[k][1] = u, out[k][2] = w;
    }
    int *dests = cr_xmalloc(p * sizeof *dests);
    const void **bufs = cr_xmalloc(p * sizeof *bufs);
    size_t *sizes = cr_xmalloc(p * sizeof *sizes), n = 0;
    for (size_t r = 0; r < p; r++)
        if (count[r + 1] > count[r]) {
            dests[n] = (int)r;
            bufs[n] = out[count[r]];
            sizes[n++] = (count[r + 1] - count[r]) * sizeof *out;
        }
    cr_nbx_result in;
    cr_nbx_exchange(g->comm, n, dests, bufs, sizes, &in);
    for (size_t m = 0; m < in.count; m++) {
        const char *d = in.data[m];
        for (size_t b = 0; b + sizeof *out <= in.sizes[m]; b += sizeof *out) {
            uint64_t e[3];
            memcpy(e, d + b, sizeof e);
            add_arrival(a, e[0], e[1], e[2]);
        }
    }
    cr_nbx_result_free(&in);
    free(count);
    free(out);
    free(fill);
    free(dests);
    free(bufs);
    free(sizes);
}

/* The vertices with self-loops and how many each has (a loop's two ends are both in
 * its vertex's adjacency): few in any generated or real graph, so a short list.
 * The BFS subtracts them from its edge count, as the Graph500 reference counts only
 * the non-self-loop edges of the component. */
static void find_self_loops(cr_graph *g)
{
    size_t cap = 0;
    for (uint64_t i = 0; i < g->count; i++) {
        uint64_t ends = 0;
        for (uint64_t k = g->offsets[i]; k < g->offsets[i + 1]; k++)
            ends += graph_nbr(g, k) == g->first + i;
        if (!ends)
            continue;
        if (g->nloops == cap) {
            cap = cap ? 2 * cap : 64;
            g->loops = cr_xrealloc(g->loops, cap * sizeof *g->loops);
        }
        g->loops[g->nloops++] = (cr_graph_loops){i, ends / 2};
    }
}

/* A weighted graph keeps each vertex's edges lightest first (ties by neighbour), so a
 * kernel that wants only the edges up to some weight (delta-stepping's light edges)
 * reads a prefix. */
typedef struct weighted_end {
    float w;
    uint64_t v;
} weighted_end;

static int by_weight(const void *a, const void *b)
{
    const weighted_end *x = a, *y = b;
    if (x->w != y->w)
        return x->w < y->w ? -1 : 1;
    return x->v < y->v ? -1 : x->v > y->v;
}

/* A weight's bits as an unsigned integer in the weight's order (negative numbers
 * inverted, the others with the sign bit set; -0 is kept as 0, which it equals),
 * and back. */
static uint32_t weight_key(float w)
{
    uint32_t b;
    if (w == 0)
        w = 0; /* -0 */
    memcpy(&b, &w, sizeof b);
    return (b >> 31) ? ~b : b | UINT32_C(0x80000000);
}

static float weight_of_key(uint32_t k)
{
    uint32_t b = (k >> 31) ? k & UINT32_C(0x7fffffff) : ~k;
    float w;
    memcpy(&w, &b, sizeof w);
    return w;
}

/* With 4-byte ids each end is one 8-byte key, {weight, id}, sorted as integers by
 * the lists' sort: qsort's call per comparison of 16-byte structs took a quarter of
 * a weighted scale-18 graph's loading. Wider ids keep qsort. */
static void sort_list_by_weight(cr_graph *g, uint64_t at, uint64_t n, void *scratch)
{
    if (graph_adj32(g)) {
        uint64_t *keys = scratch;
        for (uint64_t k = 0; k < n; k++)
            keys[k] = (uint64_t)weight_key(g->wadj[at + k]) << 32 | g->adj.u32[at + k];
        graph_sort_ids(keys, n);
        for (uint64_t k = 0; k < n; k++) {
            g->wadj[at + k] = weight_of_key((uint32_t)(keys[k] >> 32));
            g->adj.u32[at + k] = (uint32_t)keys[k];
        }
        return;
    }
    weighted_end *ends = scratch;
    for (uint64_t k = 0; k < n; k++)
        ends[k] = (weighted_end){g->wadj[at + k], graph_nbr(g, at + k)};
    qsort(ends, n, sizeof *ends, by_weight);
    for (uint64_t k = 0; k < n; k++) {
        g->wadj[at + k] = ends[k].w;
        graph_id_set(g->adj, at + k, ends[k].v);
    }
}

static void sort_by_weight(cr_graph *g)
{
    uint64_t most = graph_longest_list(g->offsets, g->count);
    weighted_end *tmp = cr_xmalloc((most ? most : 1) * sizeof *tmp); /* >= 8 bytes an end */
    for (uint64_t i = 0; i < g->count; i++)
        sort_list_by_weight(g, g->offsets[i], g->offsets[i + 1] - g->offsets[i], tmp);
    free(tmp);
    /* the largest and the first bad weight, while the lists are at hand: a graph's
     * set-up, not a kernel's (sssp's first call would pay a pass over every weight) */
    g->weights_scanned = false;
    graph_weights_scan(g);
}

/* Each list sorted by neighbour (weighted: the lightest copy of a repeated edge
 * first), then each neighbour kept once, self-loops dropped. */
static int by_neighbour(const void *a, const void *b)
{
    const weighted_end *x = a, *y = b;
    if (x->v != y->v)
        return x->v < y->v ? -1 : 1;
    return x->w < y->w ? -1 : x->w > y->w;
}

void cr_graph_simplify(cr_graph *g)
{
    if (g->ghosts) { /* built on the lists about to change */
        graph_ghosts_free(g->ghosts);
        free(g->ghosts);
        g->ghosts = NULL;
    }
    uint64_t most = graph_longest_list(g->offsets, g->count), at = 0;
    weighted_end *tmp = g->wadj ? cr_xmalloc((most ? most : 1) * sizeof *tmp) : NULL;
    for (uint64_t i = 0; i < g->count; i++) {
        uint64_t from = g->offsets[i], n = g->offsets[i + 1] - from, self = g->first + i;
        g->offsets[i] = at;
        if (tmp) {
            for (uint64_t k = 0; k < n; k++)
                tmp[k] = (weighted_end){g->wadj[from + k], graph_nbr(g, from + k)};
            qsort(tmp, n, sizeof *tmp, by_neighbour);
            for (uint64_t k = 0; k < n; k++)
                if (tmp[k].v != self && (k == 0 || tmp[k].v != tmp[k - 1].v)) {
                    graph_id_set(g->adj, at, tmp[k].v);
                    g->wadj[at++] = tmp[k].w;
                }
        } else {
            graph_ids_sort(g->adj, from, n);
            uint64_t last = 0;
            for (uint64_t k = 0; k < n; k++) {
                uint64_t v = graph_nbr(g, from + k);
                if (v != self && (k == 0 || v != last))
                    graph_id_set(g->adj, at++, v);
                last = v;
            }
        }
    }
    /* the dropped copies' room goes back to the system (10% of an R-MAT graph's) */
    release_pages(graph_ids_addr(g->adj, at), (g->nadj - at) * graph_ids_width(g->adj));
    if (g->wadj)
        release_pages(g->wadj + at, (g->nadj - at) * sizeof *g->wadj);
    g->offsets[g->count] = g->nadj = at;
    g->simple = true;
    g->weights_scanned = false; /* a dropped copy may have been the largest */
    free(tmp);
    free(g->loops);
    g->loops = NULL;
    g->nloops = 0;
    if (g->wadj)
        sort_by_weight(g);
}

/* The graph's vertex count: the largest of the ranks' lists (the transport's
 * reduction, on either transport). */
/* The vertex count, the largest any rank saw, held against what a rank can hold
 * before anything is allocated: every rank computes the same verdict, so the job
 * ends with one line whatever the file's header claimed. */
static uint64_t vertices_over_ranks(cr_comm *comm, uint64_t mine)
{
    uint64_t most;
    cr_module_allreduce_u64(comm, &mine, &most, 1, CR_OP_MAX);
    if (most > CR_GRAPH_MAX_VERTICES)
        cr_fatal("cr_graph_build: %" PRIu64 " vertices, more than the %" PRIu64 " a graph "
                 "may have (a damaged header or a wrong id?)", most, CR_GRAPH_MAX_VERTICES);
    int size = cr_comm_size(comm);
    uint64_t per_rank = most / (uint64_t)size + 1;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    double memory = pages > 0 && page > 0 ? (double)pages * (double)page : 0;
    double need = (double)(per_rank + 1) * (double)sizeof(uint64_t) * 2;
    if (memory > 0 && need > memory)
        cr_fatal("cr_graph_build: %" PRIu64 " vertices need %.1f GiB per rank at %d ranks "
                 "before any edge, more than this machine's %.1f GiB", most,
                 need / (1 << 30), size, memory / (1 << 30));
    return most;
}

static cr_graph *build(cr_comm *comm, const cr_edge_list *local, cr_graph_shuffle shuffle,
                       cr_edge_list *owned);

cr_graph *cr_graph_build(cr_comm *comm, const cr_edge_list *local)
{
    return cr_graph_build_with(comm, local, CR_SHUFFLE_MAILBOX);
}

cr_graph *cr_graph_build_consume(cr_comm *comm, cr_edge_list *local)
{
    cr_graph *g = build(comm, local, CR_SHUFFLE_MAILBOX, local);
    uint64_t n = local->nvertices;
    cr_graph_edges_free(local);
    *local = (cr_edge_list){.nvertices = n};
    return g;
}

cr_graph *cr_graph_build_with(cr_comm *comm, const cr_edge_list *local, cr_graph_shuffle shuffle)
{
    return build(comm, local, shuffle, NULL);
}

cr_graph *graph_setup(cr_comm *comm, uint64_t nvertices, bool weights, bool edges)
{
    cr_graph *g = cr_xcalloc(1, sizeof *g);
    g->comm = comm;
    g->rank = cr_comm_rank(comm);
    g->size = cr_comm_size(comm);
    g->n = vertices_over_ranks(comm, nvertices);
    /* weighted when some rank has weights and every rank with edges has them */
    uint64_t has[2] = {weights, weights || !edges}, all[2];
    cr_module_allreduce_u64(comm, has, all, 2, CR_OP_SUM);
    g->weighted = all[0] > 0 && all[1] == (uint64_t)g->size;
    g->first = cr_block_first(g->n, g->size, g->rank);
    g->count = cr_block_first(g->n, g->size, g->rank + 1) - g->first;
    return g;
}

void graph_finish(cr_graph *g)
{
    if (g->wadj)
        sort_by_weight(g);
    find_self_loops(g);
}

/* owned: the same list when the build may pack it (cr_graph_build_consume). */
static cr_graph *build(cr_comm *comm, const cr_edge_list *local, cr_graph_shuffle shuffle,
                       cr_edge_list *owned)
{
    if (shuffle != CR_SHUFFLE_MAILBOX && shuffle != CR_SHUFFLE_EXCHANGE)
        cr_fatal("cr_graph_build_with: shuffle %d is not valid", (int)shuffle);
    cr_graph *g = graph_setup(comm, local->nvertices, local->weights != NULL, local->count > 0);
    if (shuffle == CR_SHUFFLE_EXCHANGE) {
        arrivals a = {.g = g};
        shuffle_by_exchange(g, local, &a);
        build_csr(g, &a);
        free(a.pairs);
    } else {
        shuffle_by_mailbox(g, local, owned);
    }
    graph_finish(g);
    return g;
}

void cr_graph_destroy(cr_graph *g)
{
    if (!g)
        return;
    free(g->offsets);
    graph_ids_free(g->adj);
    free(g->wadj);
    free(g->w8);
    if (g->ghosts)
        graph_ghosts_free(g->ghosts);
    free(g->ghosts);
    free(g->loops);
    free(g);
}

uint64_t cr_graph_vertices(const cr_graph *g) { return g->n; }
uint64_t cr_graph_first(const cr_graph *g) { return g->first; }
uint64_t cr_graph_local_count(const cr_graph *g) { return g->count; }
cr_comm *cr_graph_comm(const cr_graph *g) { return g->comm; }

int cr_graph_owner(const cr_graph *g, uint64_t v)
{
    return cr_block_owner(g->n, g->size, v);
}

uint64_t cr_graph_degree(const cr_graph *g, uint64_t i)
{
    return g->offsets[i + 1] - g->offsets[i];
}

uint64_t cr_graph_neighbour(const cr_graph *g, uint64_t i, uint64_t k)
{
    return graph_nbr(g, g->offsets[i] + k);
}

bool cr_graph_weighted(const cr_graph *g)
{
    return g->weighted;
}

const float *cr_graph_weights(const cr_graph *g, uint64_t i)
{
    return g->wadj ? g->wadj + g->offsets[i] : NULL;
}

/* A weight a byte holds exactly (bale's and GAP's generators draw whole weights 1 to
 * 255). */
static bool whole_byte(float w)
{
    return w >= 0 && w <= 255 && w == (float)(uint8_t)w;
}

void graph_weights_scan(cr_graph *g)
{
    if (g->weights_scanned)
        return;
    g->weight_most = 0;
    g->weight_bad = UINT64_MAX;
    bool bytes = g->wadj && g->nadj;
    for (uint64_t k = 0; g->wadj && k < g->nadj; k++) {
        if (!(g->wadj[k] >= 0) && g->weight_bad == UINT64_MAX)
            g->weight_bad = k;
        if (g->wadj[k] > g->weight_most)
            g->weight_most = g->wadj[k];
        bytes = bytes && whole_byte(g->wadj[k]);
    }
    free(g->w8); /* of lists since reordered */
    g->w8 = NULL;
    /* only sssp on one node reads the copy: across nodes it would be memory unused */
    if (bytes && cr_layout_nodes(cr_module_layout(g->comm)) == 1) {
        g->w8 = graph_xmalloc_large(g->nadj, 1);
        for (uint64_t k = 0; k < g->nadj; k++)
            g->w8[k] = (uint8_t)g->wadj[k];
    }
    g->weights_scanned = true;
}

void cr_graph_edges(const cr_graph *g, cr_edge_list *out)
{
    *out = (cr_edge_list){.nvertices = g->n};
    out->cap = g->nadj + 1; /* at most one edge per end (a rank of small ids keeps
                               nearly all its ends) */
    out->edges = cr_xmalloc(out->cap * sizeof *out->edges);
    if (g->wadj)
        out->weights = cr_xmalloc(out->cap * sizeof *out->weights);
    for (uint64_t i = 0; i < g->count; i++) {
        uint64_t u = g->first + i, loops = 0;
        for (uint64_t k = g->offsets[i]; k < g->offsets[i + 1]; k++) {
            uint64_t v = graph_nbr(g, k);
            /* each edge from its smaller end; a loop's two ends make one edge */
            if (v < u || (v == u && loops++ % 2))
                continue;
            out->edges[out->count] = (cr_edge){u, v};
            if (g->wadj)
                out->weights[out->count] = g->wadj[k];
            out->count++;
        }
    }
}


