/* The distributed graph: block-distributed vertices, a CSR per rank, built by
 * shuffling every edge to the owners of its two ends through the mailbox. */
#include "graph/graph_internal.h"

#include "common/fatal.h"
#include "mailbox/mailbox_internal.h"

#include <stdlib.h>
#include <string.h>

/* Directed halves of edges as they arrive, before the CSR is built. */
typedef struct arrivals {
    uint64_t (*pairs)[2]; /* local source index, global target */
    size_t count, cap;
    const cr_graph *g;
} arrivals;

static void on_edge(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm;
    (void)src;
    (void)len;
    arrivals *a = user;
    uint64_t e[2];
    memcpy(e, payload, sizeof e);
    if (a->count == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 4096;
        a->pairs = cr_xrealloc(a->pairs, a->cap * sizeof *a->pairs);
    }
    a->pairs[a->count][0] = e[0] - a->g->first;
    a->pairs[a->count][1] = e[1];
    a->count++;
}

static void send_half(cr_graph *g, int h, uint64_t u, uint64_t v)
{
    uint64_t e[2] = {u, v};
    cr_async(g->comm, cr_block_owner(g->n, g->size, u), h, e, sizeof e);
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

cr_graph *cr_graph_build(cr_comm *comm, const cr_edge_list *local)
{
    cr_graph *g = cr_xcalloc(1, sizeof *g);
    g->comm = comm;
    g->rank = cr_comm_rank(comm);
    g->size = cr_comm_size(comm);
    unsigned long long mine = local->nvertices, n;
    MPI_Allreduce(&mine, &n, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm->ctrl);
    g->n = n;
    g->first = cr_block_first(g->n, g->size, g->rank);
    g->count = cr_block_first(g->n, g->size, g->rank + 1) - g->first;

    arrivals a = {.g = g};
    int h = cr_register(comm, on_edge, &a);
    for (size_t i = 0; i < local->count; i++) {
        uint64_t u = local->edges[i].u, v = local->edges[i].v;
        send_half(g, h, u, v);
        send_half(g, h, v, u); /* self-loops too: degrees count edge ends */
    }
    cr_barrier(comm);
    build_csr(g, &a);
    free(a.pairs);
    cr_graph_register_bfs(g);
    return g;
}

void cr_graph_destroy(cr_graph *g)
{
    if (!g)
        return;
    free(g->offsets);
    free(g->adj);
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
