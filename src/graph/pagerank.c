/* PageRank as the GAP benchmark suite defines it (Beamer, Asanovic and Patterson,
 * 2015, after Page, Brin, Motwani and Winograd, 1999): Jacobi iterations of
 * score(v) = (1 - d)/n + d * sum over v's edges {u, v} of score(u)/degree(u).
 *
 * Pulled, with ghosts (ghosts.c): an owner sends each vertex's contribution
 * score/degree once per rank that copies it, and every rank then sums over its own
 * adjacency in place. Pushing one record per edge, summed on their way by a
 * combining handler, sends up to one record per cut edge end per iteration; the
 * ghosts send at most one per (vertex, rank), 32 times fewer at 2 ranks on an R-MAT
 * graph of edge factor 16, and the sum reads a dense array.
 *
 * On a comm whose ranks are one node, there are no ghosts: the contributions of every
 * vertex lie in one array in the node's memory (a node segment, module.h), each rank
 * writes its vertices' and reads its neighbours' in place through the graph's own
 * lists, as GAP's threads do, with a node barrier between iterations. */
#include "graph/ghosts.h"

#include "common/fatal.h"
#include "mailbox/module.h"

#include <math.h>
#include <stdlib.h>

void cr_graph_pagerank_opts_init(cr_pagerank_opts *o)
{
    *o = (cr_pagerank_opts){.damping = 0.85, .max_iterations = 20, .tolerance = 1e-4};
}

/* A vertex's contribution: its score over its degree (none without edges). */
static float contribution(double score, uint64_t degree)
{
    return degree ? (float)(score / (double)degree) : 0;
}

/* One iteration on my vertices: new scores from the contributions contrib[col[k]]
 * (with ghosts: mine and the ghosts', by local slot; on one node: every vertex's, by
 * id; as floats: GAP's precision, and half the bytes the sum reads at random), and
 * each vertex's next contribution written to next[i] as its score is known (a second
 * array: the others still read this iteration's); returns my part of the L1 change.
 * Four sums, so the additions do not wait for one another. */
static double iterate(const cr_graph *g, const uint32_t *col, const float *contrib,
                      double base, double damping, double *score, float *next)
{
    double change = 0;
    for (uint64_t i = 0; i < g->count; i++) {
        float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        uint64_t k = g->offsets[i], end = g->offsets[i + 1];
        uint64_t degree = end - k;
        for (; k + 4 <= end; k += 4) {
            s0 += contrib[col[k]];
            s1 += contrib[col[k + 1]];
            s2 += contrib[col[k + 2]];
            s3 += contrib[col[k + 3]];
        }
        for (; k < end; k++)
            s0 += contrib[col[k]];
        double now = base + damping * (double)((s0 + s1) + (s2 + s3));
        change += fabs(now - score[i]);
        score[i] = now;
        next[i] = contribution(now, degree);
    }
    return change;
}

static const cr_module_type node_values_module = {.name = "graph pagerank on one node",
                                                  .destroy = graph_node_array_free};

/* The node's two arrays of contributions (all in the first rank's part), or NULL
 * (on every rank) when the comm spans nodes or its node cannot share memory. */
static cr_node_segment *node_values(cr_graph *g)
{
    if (!graph_adj32(g) || g->n > SIZE_MAX / (2 * sizeof(float)))
        return NULL; /* the lists are read as 4-byte ids */
    return graph_node_array(g, &node_values_module, 2 * g->n * sizeof(float));
}

static void pagerank_on_node(cr_graph *g, cr_node_segment *seg, const cr_pagerank_opts *o,
                             double *score, cr_pagerank_stats *stats)
{
    float *contrib = cr_module_node_segment_part(seg, 0), *next = contrib + g->n;
    const uint32_t *adj = graph_adj32(g);
    double n = (double)g->n, base = (1 - o->damping) / n;
    for (uint64_t i = 0; i < g->count; i++) {
        score[i] = 1 / n;
        contrib[g->first + i] = contribution(score[i], g->offsets[i + 1] - g->offsets[i]);
    }
    cr_module_node_segment_barrier(seg);
    int it = 0;
    double change = 0;
    while (it < o->max_iterations) {
        /* ids index the node's arrays: my vertices' start at my first */
        double mine = iterate(g, adj, contrib, base, o->damping, score, next + g->first);
        float *t = contrib;
        contrib = next, next = t;
        /* every rank's next written before any reads it, and this iteration's reads
         * done before the next iteration writes over them */
        cr_module_node_segment_barrier(seg);
        cr_module_allreduce_double(g->comm, &mine, &change, 1, CR_OP_SUM);
        it++;
        if (change < o->tolerance)
            break;
    }
    if (stats)
        *stats = (cr_pagerank_stats){.iterations = it, .change = change};
}

void cr_graph_pagerank(cr_graph *g, const cr_pagerank_opts *o, double *score,
                       cr_pagerank_stats *stats)
{
    cr_pagerank_opts defaults;
    if (!o) {
        cr_graph_pagerank_opts_init(&defaults);
        o = &defaults;
    }
    cr_node_segment *seg = node_values(g);
    if (seg) {
        pagerank_on_node(g, seg, o, score, stats);
        return;
    }
    const graph_ghosts *gh = graph_ghosts_of(g);
    size_t words = g->count + gh->nghost + 1;
    float *contrib = cr_xmalloc(words * sizeof *contrib), *next = cr_xmalloc(words * sizeof *next);
    double n = (double)g->n, base = (1 - o->damping) / n;
    for (uint64_t i = 0; i < g->count; i++) {
        score[i] = 1 / n;
        contrib[i] = contribution(score[i], g->offsets[i + 1] - g->offsets[i]);
    }
    int it = 0;
    double change = 0;
    while (it < o->max_iterations) {
        graph_ghosts_push_floats(gh, contrib);
        double mine = iterate(g, gh->col, contrib, base, o->damping, score, next);
        float *t = contrib;
        contrib = next, next = t;
        cr_module_allreduce_double(g->comm, &mine, &change, 1, CR_OP_SUM);
        it++;
        if (change < o->tolerance)
            break;
    }
    if (stats) {
        uint64_t mine[2] = {gh->nghost, gh->nsub}, all[2];
        cr_module_allreduce_u64(g->comm, mine, all, 2, CR_OP_SUM);
        *stats = (cr_pagerank_stats){.iterations = it, .change = change, .ghosts = all[0],
                                     .records = all[1]};
    }
    free(contrib);
    free(next);
}
