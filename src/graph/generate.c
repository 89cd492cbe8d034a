/* Communication-free graph generators (include/courier/graph.h).
 *
 * Edge i is a pure function of (seed, i): rank r of P takes edges
 * [m*r/P, m*(r+1)/P), so the same multiset comes out for every rank count. */
#include "graph/graph_internal.h"

#include "common/fatal.h"
#include "courier/rng.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cr_graph_gen_params_init(cr_gen_params *p)
{
    *p = (cr_gen_params){.kind = CR_GEN_RMAT, .scale = 16, .edgefactor = 16, .seed = 1,
                         .a = 0.57, .b = 0.19, .c = 0.19, .permute = true, .weights = false};
}

void cr_graph_edges_free(cr_edge_list *l)
{
    free(l->edges);
    free(l->weights);
    memset(l, 0, sizeof *l);
}

void cr_edge_list_reserve(cr_edge_list *l, size_t count, bool weighted)
{
    if (count <= l->cap)
        return;
    if (count > SIZE_MAX / sizeof *l->edges)
        cr_fatal("cr_edge_list_reserve: %zu edges do not fit in memory", count);
    l->edges = cr_xrealloc(l->edges, count * sizeof *l->edges);
    if (weighted || l->weights)
        l->weights = cr_xrealloc(l->weights, count * sizeof *l->weights);
    l->cap = count;
}

void cr_edge_list_push(cr_edge_list *l, uint64_t u, uint64_t v, const float *w)
{
    if (l->count == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->edges = cr_xrealloc(l->edges, l->cap * sizeof *l->edges);
        if (w || l->weights)
            l->weights = cr_xrealloc(l->weights, l->cap * sizeof *l->weights);
    }
    l->edges[l->count] = (cr_edge){u, v};
    if (w)
        l->weights[l->count] = *w;
    l->count++;
}

/* A uniform double in [0, 1) from 53 random bits. */
static double unit(uint64_t r)
{
    return (double)(r >> 11) * 0x1.0p-53;
}

static uint64_t edge_seed(uint64_t seed, uint64_t i, uint64_t salt)
{
    return cr_rng_hash64(cr_rng_hash64(seed ^ salt) + i * 0x9e3779b97f4a7c15ULL);
}

/* Uniform in [0, 1), or with weight_max > 0 an integer in [1, weight_max] (GAP draws
 * 1 .. 255). */
static float edge_weight(const cr_gen_params *p, uint64_t i)
{
    double u = unit(edge_seed(p->seed, i, 0x77656967687473ULL));
    if (p->weight_max)
        return (float)(1 + (uint32_t)(u * p->weight_max));
    return (float)u;
}

/* A seeded bijection of [0, 2^scale): odd multiplications and xor-shifts are each
 * invertible modulo a power of two, so high-degree R-MAT labels (small ids) land
 * spread over the id space. */
static uint64_t permute(uint64_t x, int scale, uint64_t seed)
{
    uint64_t mask = scale == 64 ? ~0ULL : (1ULL << scale) - 1;
    uint64_t k1 = cr_rng_hash64(seed ^ 0x1234) | 1, k2 = cr_rng_hash64(seed ^ 0x5678) | 1;
    uint64_t c1 = cr_rng_hash64(seed ^ 0x9abc), c2 = cr_rng_hash64(seed ^ 0xdef0);
    int shift = scale / 2 > 0 ? scale / 2 : 1;
    x = (x * k1 + c1) & mask;
    x ^= x >> shift;
    x = (x * k2 + c2) & mask;
    x ^= x >> shift;
    return x;
}

/* R-MAT: each of `scale` levels picks a quadrant with probabilities a, b, c, d. */
static cr_edge rmat_edge(const cr_gen_params *p, uint64_t i)
{
    uint64_t s = edge_seed(p->seed, i, 0x726d6174);
    uint64_t u = 0, v = 0;
    double ab = p->a + p->b, abc = ab + p->c;
    for (int level = 0; level < p->scale; level++) {
        double r = unit(cr_rng_next(&s));
        u <<= 1;
        v <<= 1;
        if (r >= p->a && r < ab)
            v |= 1;
        else if (r >= ab && r < abc)
            u |= 1;
        else if (r >= abc)
            u |= 1, v |= 1;
    }
    if (p->permute) {
        u = permute(u, p->scale, p->seed);
        v = permute(v, p->scale, p->seed);
    }
    return (cr_edge){u, v};
}

static cr_edge gnm_edge(const cr_gen_params *p, uint64_t i, uint64_t n)
{
    uint64_t s = edge_seed(p->seed, i, 0x676e6d);
    uint64_t u = cr_rng_bounded(cr_rng_next(&s), n);
    return (cr_edge){u, cr_rng_bounded(cr_rng_next(&s), n)};
}

/* RGG: point j sits at a position drawn from (seed, j); two points closer than r
 * are joined. Every rank computes all positions (16 bytes per vertex), buckets them
 * into cells of side >= r, and emits the edges (j, k), j < k, of its own block of
 * vertices j, so each edge is emitted once whatever the rank count. Vertex j is
 * point j, or with spatial_ids the j-th point in cell order (8 bytes per vertex
 * more). */
static void point_of(uint64_t seed, uint64_t j, double *x, double *y)
{
    uint64_t s = edge_seed(seed, j, 0x726767);
    *x = unit(cr_rng_next(&s));
    *y = unit(cr_rng_next(&s));
}

static void generate_rgg(const cr_gen_params *p, int rank, int size, cr_edge_list *out)
{
    uint64_t n = 1ULL << p->scale;
    double r = sqrt(p->edgefactor / ((double)n * M_PI));
    uint64_t cells = (uint64_t)(1.0 / r);
    if (cells < 1)
        cells = 1;
    if (cells > 4096)
        cells = 4096;
    double *pos = cr_xmalloc(2 * n * sizeof *pos);
    uint64_t *start = cr_xcalloc(cells * cells + 1, sizeof *start);
    uint64_t *order = cr_xmalloc(n * sizeof *order);
    uint64_t *cell_of = cr_xmalloc(n * sizeof *cell_of);
    for (uint64_t j = 0; j < n; j++) {
        point_of(p->seed, j, &pos[2 * j], &pos[2 * j + 1]);
        uint64_t cx = (uint64_t)(pos[2 * j] * (double)cells), cy = (uint64_t)(pos[2 * j + 1] * (double)cells);
        cell_of[j] = (cx < cells ? cx : cells - 1) * cells + (cy < cells ? cy : cells - 1);
        start[cell_of[j] + 1]++;
    }
    for (uint64_t c = 0; c < cells * cells; c++)
        start[c + 1] += start[c];
    uint64_t *fill = cr_xmalloc(cells * cells * sizeof *fill);
    memcpy(fill, start, cells * cells * sizeof *fill);
    for (uint64_t j = 0; j < n; j++)
        order[fill[cell_of[j]]++] = j;
    free(fill);

    /* Spatial ids: point order[q] is vertex q, so ids run cell by cell. */
    uint64_t *id_of = NULL;
    if (p->spatial_ids) {
        id_of = cr_xmalloc(n * sizeof *id_of);
        for (uint64_t q = 0; q < n; q++)
            id_of[order[q]] = q;
    }
    uint64_t lo = n * (uint64_t)rank / (uint64_t)size, hi = n * (uint64_t)(rank + 1) / (uint64_t)size;
    double r2 = r * r;
    for (uint64_t t = lo; t < hi; t++) {
        uint64_t j = id_of ? order[t] : t; /* the point of vertex t */
        long cx = (long)(cell_of[j] / cells), cy = (long)(cell_of[j] % cells);
        for (long dx = -1; dx <= 1; dx++)
            for (long dy = -1; dy <= 1; dy++) {
                long x = cx + dx, y = cy + dy;
                if (x < 0 || y < 0 || x >= (long)cells || y >= (long)cells)
                    continue;
                uint64_t c = (uint64_t)x * cells + (uint64_t)y;
                for (uint64_t q = start[c]; q < start[c + 1]; q++) {
                    uint64_t k = order[q];
                    uint64_t tk = id_of ? id_of[k] : k; /* the vertex of point k */
                    if (tk <= t) /* each edge once: by its smaller vertex's rank */
                        continue;
                    double ddx = pos[2 * j] - pos[2 * k], ddy = pos[2 * j + 1] - pos[2 * k + 1];
                    if (ddx * ddx + ddy * ddy < r2) {
                        /* the weight is a function of the edge's points, not of its
                         * position in a list or of the numbering */
                        uint64_t a = j < k ? j : k, b = j < k ? k : j;
                        float w = edge_weight(p, a * n + b);
                        cr_edge_list_push(out, t, tk, p->weights ? &w : NULL);
                    }
                }
            }
    }
    free(id_of);
    free(pos);
    free(start);
    free(order);
    free(cell_of);
}

int cr_graph_generate(const cr_gen_params *p, int rank, int size, cr_edge_list *out, char *err,
                      size_t errlen)
{
    int max_scale = p->kind == CR_GEN_RGG ? 26 : 40;
    if (p->scale < 1 || p->scale > max_scale) {
        cr_set_error(err, errlen, "scale %d is out of range: expected 1 to %d", p->scale,
                           max_scale);
        return -1;
    }
    if (!(p->edgefactor > 0 && p->edgefactor <= 1e6)) {
        cr_set_error(err, errlen, "edge factor %g is out of range: expected more than 0 "
                                        "and at most 1e6", p->edgefactor);
        return -1;
    }
    if (p->kind == CR_GEN_RMAT &&
        !(p->a >= 0 && p->b >= 0 && p->c >= 0 && p->a + p->b + p->c <= 1)) {
        cr_set_error(err, errlen, "R-MAT probabilities a=%g b=%g c=%g must be at least 0 "
                                        "and sum to at most 1", p->a, p->b, p->c);
        return -1;
    }
    if (p->weight_max > (1u << 24)) {
        cr_set_error(err, errlen, "weight_max %u is out of range: expected 0 to 2^24 (integer "
                     "weights must be exact in a float)", p->weight_max);
        return -1;
    }
    if (rank < 0 || size < 1 || rank >= size) {
        cr_set_error(err, errlen, "rank %d of %d is not valid", rank, size);
        return -1;
    }
    memset(out, 0, sizeof *out);
    uint64_t n = 1ULL << p->scale;
    out->nvertices = n;
    if (p->kind == CR_GEN_RGG) {
        generate_rgg(p, rank, size, out);
        return 0;
    }
    uint64_t m = (uint64_t)(p->edgefactor * (double)n);
    uint64_t lo = (uint64_t)((unsigned __int128)m * (unsigned)rank / (unsigned)size);
    uint64_t hi = (uint64_t)((unsigned __int128)m * (unsigned)(rank + 1) / (unsigned)size);
    out->cap = hi - lo ? hi - lo : 1;
    out->edges = cr_xmalloc(out->cap * sizeof *out->edges);
    if (p->weights)
        out->weights = cr_xmalloc(out->cap * sizeof *out->weights);
    for (uint64_t i = lo; i < hi; i++) {
        cr_edge e = p->kind == CR_GEN_RMAT ? rmat_edge(p, i) : gnm_edge(p, i, n);
        float w = edge_weight(p, i);
        cr_edge_list_push(out, e.u, e.v, p->weights ? &w : NULL);
    }
    return 0;
}
