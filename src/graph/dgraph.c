/* The distributed graph: block-distributed vertices, a CSR per rank, built by
 * shuffling every edge to the owners of its two ends, through the mailbox or with
 * one sparse exchange. */
#include "courier/nbx.h"
#include "graph/graph_internal.h"

#include "common/fatal.h"
#include "courier/mailbox.h"
#include "courier/route.h"
#include "mailbox/module.h"

#include <stdlib.h>
#include <string.h>

/* Directed halves of edges as they arrive, before the CSR is built (the sparse
 * exchange's path). */
typedef struct arrivals {
    uint64_t (*pairs)[2]; /* local source index, global target */
    size_t count, cap;
    const cr_graph *g;
} arrivals;

static void add_arrival(arrivals *a, uint64_t u, uint64_t v)
{
    if (a->count == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 4096;
        a->pairs = cr_xrealloc(a->pairs, a->cap * sizeof *a->pairs);
    }
    a->pairs[a->count][0] = u - a->g->first;
    a->pairs[a->count][1] = v;
    a->count++;
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
    g->adj = cr_xmalloc((a->count ? a->count : 1) * sizeof *g->adj);
    uint64_t *fill = cr_xmalloc((g->count ? g->count : 1) * sizeof *fill);
    memcpy(fill, g->offsets, g->count * sizeof *fill);
    for (size_t i = 0; i < a->count; i++)
        g->adj[fill[a->pairs[i][0]]++] = a->pairs[i][1];
    free(fill);
}

/* ---- the mailbox's path: two passes, the adjacency written in place --------------- */

/* The mailbox's build never holds the halves apart from the adjacency: a first pass
 * counts every vertex's degree at its owner (one 8-byte record per edge end), the
 * owners size the CSR, and a second pass sends each half straight to its slot. Its
 * peak is the edge list plus the CSR, not the edge list plus twice the halves. */
typedef struct placing {
    cr_graph *g;
    uint64_t *fill; /* next free slot of each local vertex */
} placing;

static void on_degrees(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    cr_graph *g = ((placing *)user)->g;
    for (size_t k = 0; k < b->count; k++) {
        uint64_t u;
        memcpy(&u, b->payloads + k * b->stride, sizeof u);
        g->offsets[u - g->first + 1]++;
    }
}

static void on_halves(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    placing *p = user;
    for (size_t k = 0; k < b->count; k++) {
        uint64_t e[2];
        memcpy(e, b->payloads + k * b->stride, sizeof e);
        p->g->adj[p->fill[e[0] - p->g->first]++] = e[1];
    }
}

static void shuffle_by_mailbox(cr_graph *g, const cr_edge_list *local)
{
    placing p = {.g = g};
    g->offsets = cr_xcalloc(g->count + 1, sizeof *g->offsets);
    /* registered after the state they use exists: they may run inside cr_register */
    int h_degree = cr_register_type(g->comm, &(cr_handler_type){.batch = on_degrees}, &p);
    int h_half = cr_register_type(g->comm, &(cr_handler_type){.batch = on_halves}, &p);
    for (size_t i = 0; i < local->count; i++) { /* self-loops too: degrees count ends */
        uint64_t u = local->edges[i].u, v = local->edges[i].v;
        cr_async(g->comm, cr_block_owner(g->n, g->size, u), h_degree, &u, sizeof u);
        cr_async(g->comm, cr_block_owner(g->n, g->size, v), h_degree, &v, sizeof v);
    }
    cr_barrier(g->comm);
    for (uint64_t i = 0; i < g->count; i++)
        g->offsets[i + 1] += g->offsets[i];
    g->nadj = g->offsets[g->count];
    g->adj = cr_xmalloc((g->nadj ? g->nadj : 1) * sizeof *g->adj);
    p.fill = cr_xmalloc((g->count ? g->count : 1) * sizeof *p.fill);
    memcpy(p.fill, g->offsets, g->count * sizeof *p.fill);
    /* A faster rank's halves belong to the transport's next phase: this rank
     * receives none before its own barrier has returned, so its adjacency exists. */
    for (size_t i = 0; i < local->count; i++) {
        uint64_t u = local->edges[i].u, v = local->edges[i].v;
        uint64_t e[2] = {u, v}, r[2] = {v, u};
        cr_async(g->comm, cr_block_owner(g->n, g->size, u), h_half, e, sizeof e);
        cr_async(g->comm, cr_block_owner(g->n, g->size, v), h_half, r, sizeof r);
    }
    cr_barrier(g->comm);
    for (uint64_t i = 0; i < g->count; i++)
        if (p.fill[i] != g->offsets[i + 1])
            cr_fatal("cr_graph_build: vertex %llu received %llu edge ends, but %llu were "
                     "counted", (unsigned long long)(g->first + i),
                     (unsigned long long)(p.fill[i] - g->offsets[i]),
                     (unsigned long long)(g->offsets[i + 1] - g->offsets[i]));
    free(p.fill);
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
    uint64_t (*out)[2] = cr_xmalloc((count[p] ? count[p] : 1) * sizeof *out);
    size_t *fill = cr_xmalloc(p * sizeof *fill);
    memcpy(fill, count, p * sizeof *fill);
    for (size_t i = 0; i < local->count; i++) {
        uint64_t u = local->edges[i].u, v = local->edges[i].v;
        size_t k = fill[cr_block_owner(g->n, g->size, u)]++;
        out[k][0] = u, out[k][1] = v;
        k = fill[cr_block_owner(g->n, g->size, v)]++;
        out[k][0] = v, out[k][1] = u;
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
            uint64_t e[2];
            memcpy(e, d + b, sizeof e);
            add_arrival(a, e[0], e[1]);
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
            ends += g->adj[k] == g->first + i;
        if (!ends)
            continue;
        if (g->nloops == cap) {
            cap = cap ? 2 * cap : 64;
            g->loops = cr_xrealloc(g->loops, cap * sizeof *g->loops);
        }
        g->loops[g->nloops++] = (cr_graph_loops){i, ends / 2};
    }
}

/* The graph's vertex count: the largest of the ranks' lists (the transport's
 * reduction, on either transport). */
static uint64_t vertices_over_ranks(cr_comm *comm, uint64_t mine)
{
    uint64_t most;
    cr_module_allreduce_u64(comm, &mine, &most, 1, CR_MODULE_MAX);
    return most;
}

cr_graph *cr_graph_build(cr_comm *comm, const cr_edge_list *local)
{
    return cr_graph_build_with(comm, local, CR_SHUFFLE_MAILBOX);
}

cr_graph *cr_graph_build_with(cr_comm *comm, const cr_edge_list *local, cr_graph_shuffle shuffle)
{
    if (shuffle != CR_SHUFFLE_MAILBOX && shuffle != CR_SHUFFLE_EXCHANGE)
        cr_fatal("cr_graph_build_with: shuffle %d is not valid", (int)shuffle);
    cr_graph *g = cr_xcalloc(1, sizeof *g);
    g->comm = comm;
    g->rank = cr_comm_rank(comm);
    g->size = cr_comm_size(comm);
    g->n = vertices_over_ranks(comm, local->nvertices);
    g->first = cr_block_first(g->n, g->size, g->rank);
    g->count = cr_block_first(g->n, g->size, g->rank + 1) - g->first;

    if (shuffle == CR_SHUFFLE_EXCHANGE) {
        arrivals a = {.g = g};
        shuffle_by_exchange(g, local, &a);
        build_csr(g, &a);
        free(a.pairs);
    } else {
        shuffle_by_mailbox(g, local);
    }
    find_self_loops(g);
    return g;
}

void cr_graph_destroy(cr_graph *g)
{
    if (!g)
        return;
    free(g->offsets);
    free(g->adj);
    free(g->loops);
    free(g->bfs_next);
    free(g->stack);
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

const uint64_t *cr_graph_neighbours(const cr_graph *g, uint64_t i, uint64_t *degree)
{
    *degree = g->offsets[i + 1] - g->offsets[i];
    return g->adj + g->offsets[i];
}
