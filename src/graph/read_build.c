/* A graph built from a file without holding its edge list (cr_graph_read): the file
 * is read three times, in chunks, and each chunk is spent before the next is read.
 * The first reading settles the vertex count and whether there are weights; the
 * second sends the degrees (graph_placer_count); the third sends each edge's two
 * halves to their slots (graph_placer_place). Reading a list first and building
 * from it holds the list and the graph at once: at 16 bytes an edge the list is the
 * larger. */
#include "graph/graph_internal.h"

#include "common/fatal.h"
#include "mailbox/module.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

enum { CHUNK = 1 << 16 }; /* edges per chunk: 1 MiB of list */

typedef struct reading {
    graph_placer *placer; /* NULL in the first reading */
    bool place;           /* the third reading */
    bool weighted;        /* the first reading: the file has weights */
    uint64_t edges;       /* read so far in this reading */
} reading;

static int on_chunk(void *user, const cr_edge_list *c, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    reading *r = user;
    r->edges += c->count;
    if (!r->placer) {
        r->weighted |= c->weights != NULL;
        return 0;
    }
    for (size_t i = 0; i < c->count; i++) {
        if (!r->place) {
            graph_placer_count(r->placer, c->edges[i].u, c->edges[i].v);
            continue;
        }
        uint32_t bits = 0;
        if (c->weights)
            memcpy(&bits, &c->weights[i], sizeof bits);
        graph_placer_place(r->placer, c->edges[i].u, c->edges[i].v, bits);
    }
    return 0;
}

/* The second or third reading: the same edges as the first, or the job ends (a rank
 * half-way through a pass cannot leave its peers waiting in the pass's barrier). */
static void read_again(const char *path, const cr_graph_read_opts *o, cr_graph *g, reading *r,
                       uint64_t first_edges)
{
    char err[512];
    uint64_t nv;
    if (graph_read_chunks(path, o->format, o->weights_path, g->rank, g->size, CHUNK, on_chunk,
                          r, &nv, err, sizeof err))
        cr_fatal("cr_graph_read: %s (the file changed while it was read)", err);
    if (r->edges != first_edges)
        cr_fatal("cr_graph_read: %s: %" PRIu64 " edges in this rank's share, then %" PRIu64
                 " (the file changed while it was read)", path, first_edges, r->edges);
}

/* The first reading's verdict, the same on every rank: the file's error, or the
 * caller's check of the totals. */
static int first_verdict(cr_comm *comm, const char *path, const cr_graph_read_opts *o, int rc,
                         const char *mine,
                         uint64_t nv, const reading *first, uint64_t *total, char *err,
                         size_t errlen)
{
    if (graph_agree(comm, rc ? mine : NULL, err, errlen))
        return -1;
    uint64_t most;
    cr_module_allreduce_u64(comm, &nv, &most, 1, CR_OP_MAX);
    cr_module_allreduce_u64(comm, &first->edges, total, 1, CR_OP_SUM);
    const char *refusal = o->check ? o->check(o->user, most, *total) : NULL;
    char beyond[320];
    if (!refusal && o->nvertices && most > o->nvertices) {
        snprintf(beyond, sizeof beyond, "%.200s: vertex id %" PRIu64 " is not below the %" PRIu64
                 " vertices asked for", path, most - 1, o->nvertices);
        refusal = beyond;
    }
    return graph_agree(comm, refusal, err, errlen);
}

cr_graph *cr_graph_read(cr_comm *comm, const char *path, const cr_graph_read_opts *o,
                        uint64_t *edges_read, char *err, size_t errlen)
{
    cr_graph_read_opts defaults = {.format = CR_FILE_AUTO};
    if (!o)
        o = &defaults;
    reading first = {0};
    uint64_t nv = 0, total = 0;
    char mine[512];
    int rc = graph_read_chunks(path, o->format, o->weights_path, cr_comm_rank(comm),
                               cr_comm_size(comm), CHUNK, on_chunk, &first, &nv, mine,
                               sizeof mine);
    if (first_verdict(comm, path, o, rc, mine, nv, &first, &total, err, errlen))
        return NULL;
    cr_graph *g = graph_setup(comm, o->nvertices ? o->nvertices : nv, first.weighted,
                              first.edges > 0);
    reading counting = {.placer = graph_placer_begin(g)};
    read_again(path, o, g, &counting, first.edges);
    graph_placer_size(counting.placer);
    reading placing = {.placer = counting.placer, .place = true};
    read_again(path, o, g, &placing, first.edges);
    graph_placer_end(placing.placer);
    graph_finish(g);
    if (edges_read)
        *edges_read = total;
    return g;
}
