/* Sequential references for the graph kernels (reference.h). */
#include "reference.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int ref_graph_build(ref_graph *r, uint64_t n, const cr_edge *edges, const float *weights,
                    size_t m)
{
    *r = (ref_graph){.n = n};
    r->off = calloc(n + 2, sizeof *r->off);
    r->adj = malloc((2 * m + 1) * sizeof *r->adj);
    r->w = weights ? malloc((2 * m + 1) * sizeof *r->w) : NULL;
    uint64_t *fill = malloc((n + 1) * sizeof *fill);
    if (!r->off || !r->adj || (weights && !r->w) || !fill) {
        free(fill);
        ref_graph_free(r);
        return -1;
    }
    for (size_t j = 0; j < m; j++)
        r->off[edges[j].u + 1]++, r->off[edges[j].v + 1]++;
    for (uint64_t v = 0; v < n; v++)
        r->off[v + 1] += r->off[v];
    memcpy(fill, r->off, (n + 1) * sizeof *fill);
    for (size_t j = 0; j < m; j++) {
        uint64_t a = fill[edges[j].u]++, b = fill[edges[j].v]++;
        r->adj[a] = edges[j].v, r->adj[b] = edges[j].u;
        if (weights)
            r->w[a] = r->w[b] = weights[j];
    }
    free(fill);
    return 0;
}

void ref_graph_free(ref_graph *r)
{
    free(r->off), free(r->adj), free(r->w);
    *r = (ref_graph){0};
}

/* ---- Dijkstra, with a binary heap of (distance, vertex) and lazy deletion ---- */

typedef struct item {
    double d;
    uint64_t v;
} item;

static void push(item *h, size_t *n, item x)
{
    size_t k = (*n)++;
    for (; k > 0 && h[(k - 1) / 2].d > x.d; k = (k - 1) / 2)
        h[k] = h[(k - 1) / 2];
    h[k] = x;
}

static item pop(item *h, size_t *n)
{
    item top = h[0], last = h[--*n];
    size_t k = 0;
    for (;;) {
        size_t c = 2 * k + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1].d < h[c].d)
            c++;
        if (h[c].d >= last.d)
            break;
        h[k] = h[c], k = c;
    }
    if (*n)
        h[k] = last;
    return top;
}

void ref_sssp(const ref_graph *r, uint64_t root, double *dist)
{
    for (uint64_t v = 0; v < r->n; v++)
        dist[v] = INFINITY;
    item *h = malloc((r->off[r->n] + 2) * sizeof *h);
    size_t nh = 0;
    dist[root] = 0;
    push(h, &nh, (item){0, root});
    while (nh) {
        item x = pop(h, &nh);
        if (x.d > dist[x.v])
            continue;
        for (uint64_t k = r->off[x.v]; k < r->off[x.v + 1]; k++) {
            double nd = x.d + (r->w ? (double)r->w[k] : 1.0);
            if (nd < dist[r->adj[k]]) {
                dist[r->adj[k]] = nd;
                push(h, &nh, (item){nd, r->adj[k]});
            }
        }
    }
    free(h);
}

/* ---- PageRank ---- */

/* What v's neighbours give it: each one's score over its degree. */
static double incoming(const ref_graph *r, const double *score, uint64_t v)
{
    double sum = 0;
    for (uint64_t k = r->off[v]; k < r->off[v + 1]; k++) {
        uint64_t u = r->adj[k];
        sum += score[u] / (double)(r->off[u + 1] - r->off[u]);
    }
    return sum;
}

/* One Jacobi step: next from score (GAP's check). */
static double pagerank_step(const ref_graph *r, double damping, const double *score,
                            double *next)
{
    double base = (1 - damping) / (double)r->n, change = 0;
    for (uint64_t v = 0; v < r->n; v++) {
        next[v] = base + damping * incoming(r, score, v);
        change += fabs(next[v] - score[v]);
    }
    return change;
}

/* One Gauss-Seidel sweep: each new score replaces the old at once. */
static double pagerank_sweep(const ref_graph *r, double damping, double *score)
{
    double base = (1 - damping) / (double)r->n, change = 0;
    for (uint64_t v = 0; v < r->n; v++) {
        double now = base + damping * incoming(r, score, v);
        change += fabs(now - score[v]);
        score[v] = now;
    }
    return change;
}

/* Scale the scores of the vertices with edges to the mass they hold at the fixed
 * point, (their count) / n; returns |f - 1| times their mass before, the most the
 * scaling changes the scores by in L1. */
static double pagerank_mass_correction(const ref_graph *r, double *score)
{
    double mass = 0, linked = 0;
    for (uint64_t v = 0; v < r->n; v++)
        if (r->off[v + 1] > r->off[v])
            mass += score[v], linked += 1;
    if (mass <= 0)
        return 0;
    double f = linked / (double)r->n / mass;
    for (uint64_t v = 0; v < r->n; v++)
        if (r->off[v + 1] > r->off[v])
            score[v] *= f;
    return fabs(f - 1) * mass;
}

int ref_pagerank(const ref_graph *r, double damping, int iterations, double tolerance,
                 bool gauss_seidel, double *score)
{
    double *next = malloc((r->n + 1) * sizeof *next);
    for (uint64_t v = 0; v < r->n; v++)
        score[v] = 1 / (double)r->n;
    int it = 0;
    while (it < iterations) {
        double change;
        if (gauss_seidel) {
            change = pagerank_sweep(r, damping, score);
            change += pagerank_mass_correction(r, score);
        } else {
            change = pagerank_step(r, damping, score, next);
            memcpy(score, next, r->n * sizeof *score);
        }
        it++;
        if (change < tolerance)
            break;
    }
    free(next);
    return it;
}

double ref_pagerank_change(const ref_graph *r, double damping, const double *score)
{
    double *next = malloc((r->n + 1) * sizeof *next);
    double change = pagerank_step(r, damping, score, next);
    free(next);
    return change;
}

/* ---- triangles: every u < v < w with all three edges, each pair of vertices once ---- */

static int by_id(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint64_t ref_triangles(const ref_graph *r)
{
    /* each vertex's distinct neighbours other than itself, sorted */
    uint64_t *off = malloc((r->n + 1) * sizeof *off), *adj = malloc((r->off[r->n] + 1) * 8);
    uint64_t at = 0, count = 0;
    for (uint64_t u = 0; u < r->n; u++) {
        off[u] = at;
        uint64_t start = at;
        for (uint64_t k = r->off[u]; k < r->off[u + 1]; k++)
            if (r->adj[k] != u)
                adj[at++] = r->adj[k];
        qsort(adj + start, at - start, sizeof *adj, by_id);
        uint64_t kept = start;
        for (uint64_t k = start; k < at; k++)
            if (k == start || adj[k] != adj[kept - 1])
                adj[kept++] = adj[k];
        at = kept;
    }
    off[r->n] = at;
    uint64_t *mark = calloc(r->n + 1, sizeof *mark); /* mark[w] == u + 1: w is u's */
    for (uint64_t u = 0; u < r->n; u++) {
        for (uint64_t k = off[u]; k < off[u + 1]; k++)
            mark[adj[k]] = u + 1;
        for (uint64_t k = off[u]; k < off[u + 1]; k++) {
            uint64_t v = adj[k];
            if (v <= u)
                continue;
            for (uint64_t j = off[v]; j < off[v + 1]; j++)
                count += adj[j] > v && mark[adj[j]] == u + 1;
        }
    }
    free(mark);
    free(off), free(adj);
    return count;
}

/* ---- Brandes ---- */

void ref_betweenness(const ref_graph *r, const uint64_t *sources, size_t nsources,
                     double *score)
{
    uint64_t n = r->n, *queue = malloc((n + 1) * sizeof *queue);
    int64_t *level = malloc((n + 1) * sizeof *level);
    double *sigma = malloc((n + 1) * sizeof *sigma), *delta = malloc((n + 1) * sizeof *delta);
    for (uint64_t v = 0; v < n; v++)
        score[v] = 0;
    for (size_t j = 0; j < nsources; j++) {
        uint64_t s = sources[j], head = 0, tail = 0;
        for (uint64_t v = 0; v < n; v++)
            level[v] = -1, sigma[v] = 0, delta[v] = 0;
        level[s] = 0, sigma[s] = 1, queue[tail++] = s;
        while (head < tail) {
            uint64_t u = queue[head++];
            for (uint64_t k = r->off[u]; k < r->off[u + 1]; k++) {
                uint64_t v = r->adj[k];
                if (level[v] < 0)
                    level[v] = level[u] + 1, queue[tail++] = v;
                if (level[v] == level[u] + 1)
                    sigma[v] += sigma[u];
            }
        }
        while (tail > 0) { /* the queue backwards: farthest first */
            uint64_t w = queue[--tail];
            for (uint64_t k = r->off[w]; k < r->off[w + 1]; k++) {
                uint64_t v = r->adj[k];
                if (level[v] == level[w] - 1)
                    delta[v] += sigma[v] / sigma[w] * (1 + delta[w]);
            }
            if (w != s)
                score[w] += delta[w];
        }
    }
    free(queue), free(level), free(sigma), free(delta);
}
