/* PageRank as the GAP benchmark suite defines it (Beamer, Asanovic and Patterson,
 * 2015, after Page, Brin, Motwani and Winograd, 1999): sweeps of
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
 * lists, as GAP's threads do, with a node barrier between sweeps. There the sweeps
 * are Gauss-Seidel by default, as GAP's pull form is: each new contribution is
 * written over the old at once, so the vertices swept later, of my block or of
 * another rank's, read it in the same sweep. On an R-MAT graph this takes a quarter
 * fewer sweeps than Jacobi's (6 against 8 at scale 18). Ranks read one another's
 * contributions while they are written (relaxed atomic loads and stores of whole
 * floats, as GAP's threads do with plain ones), so at more than one rank the scores
 * differ from run to run within the tolerance. Jacobi within a node was tried
 * deterministically as blocks (Gauss-Seidel within each rank's block, the last
 * sweep's values across): at 2 ranks it took 10 sweeps, more than Jacobi's 8, so
 * the form is either GAP's or Jacobi (cr_pagerank_opts.jacobi), and the ghosts'
 * across nodes are Jacobi. */
#include "graph/ghosts.h"

#include "common/fatal.h"
#include "mailbox/module.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

void cr_graph_pagerank_opts_init(cr_pagerank_opts *o)
{
    *o = (cr_pagerank_opts){.damping = 0.85, .max_iterations = 20, .tolerance = 1e-4,
                            .jacobi = false};
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

/* One Gauss-Seidel sweep on my vertices over the node's array of contributions by
 * id, each replaced as its score is known. The array holds every contribution
 * divided by `frame`, the product of the mass corrections so far (below): a
 * correction then changes one number, not every contribution, and a sum of stored
 * values is multiplied by it once. The scores of my vertices with edges are held
 * divided by `scale` (the last correction's factor, applied here as they are read).
 * Adds to sums my part of the L1 change, of the mass of the vertices with edges, and
 * of their count. */
static void sweep_in_place(const cr_graph *g, const uint32_t *adj, _Atomic float *contrib,
                           double base, double damping, double frame, double scale,
                           double *score, double sums[3])
{
    double change = 0, mass = 0, linked = 0, pull = damping * frame;
#define LOAD(v) atomic_load_explicit(&contrib[v], memory_order_relaxed)
    for (uint64_t i = 0; i < g->count; i++) {
        float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        uint64_t k = g->offsets[i], end = g->offsets[i + 1];
        uint64_t degree = end - k;
        for (; k + 4 <= end; k += 4) {
            s0 += LOAD(adj[k]);
            s1 += LOAD(adj[k + 1]);
            s2 += LOAD(adj[k + 2]);
            s3 += LOAD(adj[k + 3]);
        }
        for (; k < end; k++)
            s0 += LOAD(adj[k]);
        double now = base + pull * (double)((s0 + s1) + (s2 + s3));
        change += fabs(now - score[i] * (degree ? scale : 1.0));
        score[i] = now;
        if (degree) {
            mass += now, linked += 1;
            atomic_store_explicit(&contrib[g->first + i],
                                  (float)(now / ((double)degree * frame)), memory_order_relaxed);
        }
    }
#undef LOAD
    sums[0] += change, sums[1] += mass, sums[2] += linked;
}

static const cr_module_type node_values_module = {.name = "graph pagerank on one node",
                                                  .destroy = graph_node_array_free};

/* The node's arrays of contributions (all in the first rank's part): one for
 * Gauss-Seidel, two for Jacobi. NULL (on every rank) when the comm spans nodes or its
 * node cannot share memory. */
static cr_node_segment *node_values(cr_graph *g, int arrays)
{
    if (!graph_adj32(g) || g->n > SIZE_MAX / (2 * sizeof(float)))
        return NULL; /* the lists are read as 4-byte ids */
    return graph_node_array(g, &node_values_module, (size_t)arrays * g->n * sizeof(float));
}

/* Jacobi on one node: sweep k reads one array and writes the other. */
static double node_jacobi_sweep(const cr_graph *g, float **contrib, float **next, double base,
                                double damping, double *score)
{
    double mine = iterate(g, graph_adj32(g), *contrib, base, damping, score, *next + g->first);
    float *t = *contrib;
    *contrib = *next, *next = t;
    return mine;
}

/* The scores of my linked vertices times f (the last correction's, at the end). */
static void rescale_scores(const cr_graph *g, double *score, double f)
{
    for (uint64_t i = 0; i < g->count; i++)
        score[i] *= g->offsets[i + 1] != g->offsets[i] ? f : 1.0;
}

/* One Gauss-Seidel sweep over the node, then the mass correction: summed over v,
 * the fixed point's equation gives sum(x) = n * base + d * (mass of the linked
 * vertices), and the unlinked ones hold base each, so at the fixed point the linked
 * vertices hold (linked / n) of the mass. Jacobi from the uniform start keeps close
 * to that; Gauss-Seidel does not, and the slowest error it leaves is the mass's,
 * shrinking by about d a sweep: scaling the linked scores back to their fixed
 * point's mass removes it (at 2 ranks, where the ranks' blocks meet stale values,
 * 12 sweeps became 5). The factor goes into *frame, which every rank multiplies
 * alike (it is the allreduce's), so the stored contributions need no pass of their
 * own (a pass over them took 8% of a sweep). The change reported bounds the L1
 * change of the corrected scores: the sweep's own, plus |f - 1| times the mass
 * scaled, plus the rounding of the contributions to floats (about 2^-24 of each, and
 * d times the mass in all), which a sweep whose inputs stopped moving does not see:
 * a tolerance below it is not reached, rather than claimed. Returns it. */
static double gauss_seidel_step(cr_graph *g, cr_node_segment *seg, _Atomic float *shared,
                                double base, double damping, double *score, double *frame,
                                double *scale)
{
    double mine[3] = {0, 0, 0}, all[3];
    sweep_in_place(g, graph_adj32(g), shared, base, damping, *frame, *scale, score, mine);
    cr_module_node_segment_barrier(seg); /* every rank's sweep done */
    cr_module_allreduce_double(g->comm, mine, all, 3, CR_OP_SUM);
    double f = all[1] > 0 ? all[2] / (double)g->n / all[1] : 1;
    *frame *= f;
    *scale = f;
    return all[0] + fabs(f - 1) * all[1] + damping * all[1] * FLT_EPSILON;
}

/* Jacobi over the node: every rank's next written before any reads it, and this
 * sweep's reads done before the next writes over them. */
static double jacobi_step(cr_graph *g, cr_node_segment *seg, float **contrib, float **next,
                          double base, double damping, double *score)
{
    double mine = node_jacobi_sweep(g, contrib, next, base, damping, score), change;
    cr_module_node_segment_barrier(seg);
    cr_module_allreduce_double(g->comm, &mine, &change, 1, CR_OP_SUM);
    return change;
}

static void pagerank_on_node(cr_graph *g, cr_node_segment *seg, const cr_pagerank_opts *o,
                             double *score, cr_pagerank_stats *stats)
{
    float *contrib = cr_module_node_segment_part(seg, 0), *next = contrib + g->n;
    _Atomic float *shared = (_Atomic float *)contrib; /* Gauss-Seidel's one array */
    double n = (double)g->n, base = (1 - o->damping) / n;
    for (uint64_t i = 0; i < g->count; i++) {
        score[i] = 1 / n;
        atomic_store_explicit(&shared[g->first + i],
                              contribution(score[i], g->offsets[i + 1] - g->offsets[i]),
                              memory_order_relaxed);
    }
    cr_module_node_segment_barrier(seg);
    int it = 0;
    double change = 0, frame = 1, scale = 1;
    while (it < o->max_iterations) {
        change = o->jacobi ? jacobi_step(g, seg, &contrib, &next, base, o->damping, score)
                           : gauss_seidel_step(g, seg, shared, base, o->damping, score, &frame,
                                               &scale);
        it++;
        if (change < o->tolerance)
            break;
    }
    if (scale != 1)
        rescale_scores(g, score, scale);
    if (stats)
        *stats = (cr_pagerank_stats){.iterations = it, .change = change, .in_place = !o->jacobi};
}

void cr_graph_pagerank(cr_graph *g, const cr_pagerank_opts *o, double *score,
                       cr_pagerank_stats *stats)
{
    cr_pagerank_opts defaults;
    if (!o) {
        cr_graph_pagerank_opts_init(&defaults);
        o = &defaults;
    }
    cr_node_segment *seg = node_values(g, o->jacobi ? 2 : 1);
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
