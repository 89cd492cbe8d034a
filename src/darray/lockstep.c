/* The lock-step mode of the distributed array (thesis
 * Peters 2024, docs/references.md, chapter 4): queued writes,
 * then queued reads, executed in bulk exchanges along a k-dimensional grid, one
 * exchange per dimension among the ranks that differ only in that coordinate
 * (Algorithm 3; direct is the grid of one dimension, P), as one sparse exchange
 * (include/courier/nbx.h) of the non-empty segments on either transport. Requests that meet on a rank are merged: by a hash
 * table (4.4.1) or by sorting once and merging the presorted segments received at
 * every hop (4.4.3, Algorithm 4). Read replies go back along the same dimensions in
 * reverse and are split again (4.5): by the position each request's merged copy
 * took (hash, 4.5.1), or by exponential search of the sorted merged requests
 * (4.5.3, Algorithms 5 and 6).
 *
 * Why sorting by index also sorts by next hop (4.2): indices are block-distributed,
 * so the owner is monotone in the index; dimensions are exchanged most significant
 * first, so at dimension d every record on a rank has an owner that agrees with the
 * rank on coordinates 0 .. d-1, and coordinate d is the most significant digit
 * still free: monotone in the owner. */
#include "darray/darray_internal.h"

#include "courier/nbx.h"

#include "common/fatal.h"
#include "common/search.h"
#include "courier/rng.h"
#include "courier/tune.h"
#include "mailbox/module.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- local work, timed ------------------------------------------------------------ */

/* The thesis's phases (section 5.4.1, Figure 5.2) as this rank's own work, timed
 * between exchanges (nothing timed waits for another rank, so on the simulated
 * transport each virtual rank's time is its own): the source's aggregation (write),
 * the merging at hops and at the owner (hop), the split of replies (read). */
static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Adds the time since *since to *phase and restarts the clock. */
static void lap(uint64_t *phase, uint64_t *since)
{
    uint64_t t = now_ns();
    *phase += t - *since;
    *since = t;
}

/* ---- the grid ----------------------------------------------------------------- */

/* Dimensions for P, most significant first; dimensions of 1 are left out. */
static const darray_aggregation *aggregation_of(cr_darray_aggregation kind);
static const darray_aggregation *step_plan(cr_darray *a, const char *data, size_t m,
                                           size_t rec, size_t reply_bytes);

/* The two-dimensional grid of P as the darray lays it out: P / b by b, b the largest
 * divisor of P not above its square root. */
static int grid2_dims(int p, int *dims)
{
    int b = 1;
    for (int f = 1; (long)f * f <= p; f++)
        if (p % f == 0)
            b = f;
    dims[0] = p / b;
    dims[1] = b;
    return 2;
}

/* The dimensions of `r` for P, most significant first (dimensions of 1 included;
 * none for the hypercube of one rank); -1 for a grid whose dimensions do not
 * multiply to P. */
static int route_dims(const cr_route *r, int p, int *dims)
{
    int nd = 0;
    if (r->kind == CR_ROUTE_DIRECT) {
        dims[nd++] = p;
    } else if (r->kind == CR_ROUTE_HYPERCUBE) {
        /* one dimension per prime factor: the hypercube when P is a power of two */
        int rest = p;
        for (int f = 2; rest > 1 && nd < 64; f++)
            while (rest % f == 0 && nd < 64)
                dims[nd++] = f, rest /= f;
    } else if (r->ndims == 0) {
        nd = grid2_dims(p, dims);
    } else {
        long cells = 1;
        for (unsigned d = 0; d < r->ndims; d++)
            cells *= r->dims[d], dims[nd++] = (int)r->dims[d];
        if (cells != p)
            return -1;
    }
    return nd;
}

/* Lay the grid out from dimensions (those of 1 left out). */
static void grid_set(lockstep_grid *g, const int *dims, int nd)
{
    g->ndims = 0;
    for (int d = 0; d < nd; d++)
        if (dims[d] > 1)
            g->dims[g->ndims++] = dims[d];
    int fill = 1;
    for (int d = g->ndims - 1; d >= 0; d--) {
        g->fill[d] = fill;
        bool powers = !(fill & (fill - 1)) && !(g->dims[d] & (g->dims[d] - 1));
        g->shift[d] = powers ? __builtin_ctz((unsigned)fill) : -1;
        fill *= g->dims[d];
    }
}

void cr_darray_grid_init(cr_darray *a)
{
    a->agg = aggregation_of(a->opts.aggregation);
    const cr_route *r = &a->opts.route;
    int dims[64], nd;
    if (r->kind == CR_ROUTE_AUTO) { /* chosen at every step; direct until then */
        dims[0] = a->size;
        nd = 1;
    } else {
        nd = route_dims(r, a->size, dims);
    }
    if (nd < 0) {
        long cells = 1;
        for (unsigned d = 0; d < r->ndims; d++)
            cells *= r->dims[d];
        cr_fatal("cr_darray_create: the lock-step grid has %ld cells but the comm has %d "
                 "ranks (the dimensions must multiply to P)",
                 cells, a->size);
    }
    grid_set(&a->grid, dims, nd);
}

static inline int coord(const lockstep_grid *g, int rank, int d)
{
    if (g->shift[d] >= 0)
        return (rank >> g->shift[d]) & (g->dims[d] - 1);
    return (rank / g->fill[d]) % g->dims[d];
}

/* Algorithm 3: in dimension d, the partners are the ranks that differ from this one
 * only in coordinate d; coordinate j's is this rank moved by (j - mine) steps. */
static int partner(const cr_darray *a, int d, int j)
{
    return a->rank + (j - coord(&a->grid, a->rank, d)) * a->grid.fill[d];
}

/* The coordinate in dimension d of `src`, or -1 if it is not a partner there. */
static int partner_coord(const cr_darray *a, int d, int src)
{
    const lockstep_grid *g = &a->grid;
    int j = coord(g, src, d);
    return partner(a, d, j) == src ? j : -1;
}

/* ---- exchanges by mailbox records (either transport) -------------------------- */

/* A piece of one partner's segment: which exchange (its sequence number, the same
 * on every rank since every rank makes every exchange), from which coordinate, and
 * where in the segment it starts (checked: one sender's pieces arrive in order). */
typedef struct segment_head {
    uint32_t seq, from;
    uint64_t offset;
} segment_head;

/* Segment bytes per record: what fills one of the comm's buffers (at least 64). */
static size_t piece_bytes(const cr_darray *a)
{
    size_t buf = cr_comm_config(a->comm)->buffer_bytes;
    return buf > 64 + sizeof(segment_head) ? buf - sizeof(segment_head) : 64;
}

/* What each partner sent in this stage (exchanges by the mailbox only): one entry
 * per coordinate of the largest dimension, made on first use, since under direct
 * routing it is P entries per rank. */
static darray_bytes *staging_of(cr_darray *a)
{
    if (!a->staging)
        a->staging = cr_xcalloc((size_t)a->staging_width, sizeof *a->staging);
    return a->staging;
}

static void on_segment(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm;
    cr_darray *a = user;
    segment_head h;
    memcpy(&h, payload, sizeof h);
    /* Pieces sent after a barrier belong to the transport's next phase, which no
     * rank receives before its own barrier has returned: so a piece is always of the
     * exchange this rank is in. */
    if (len < sizeof h || h.seq != a->stage_seq || h.from >= (uint32_t)a->staging_width)
        cr_fatal("cr_darray_step: rank %d sent a segment of exchange %u from coordinate %u, "
                 "but this rank is at exchange %u (every rank must make the same steps)",
                 src, h.seq, h.from, a->stage_seq);
    darray_bytes *b = &staging_of(a)[h.from];
    if (h.offset != b->len) /* the mailbox keeps one sender's records in order, as MPI */
        cr_fatal("cr_darray_step: internal error: a piece of rank %d's segment arrived at "
                 "offset %llu, after %zu bytes", src, (unsigned long long)h.offset, b->len);
    size_t n = len - sizeof h;
    memcpy(darray_bytes_grow(b, n), (const char *)payload + sizeof h, n);
}

void cr_darray_exchange_register(cr_darray *a)
{
    int width = a->opts.route.kind == CR_ROUTE_AUTO ? a->size : 1; /* auto: any grid */
    for (int d = 0; d < a->grid.ndims; d++)
        width = a->grid.dims[d] > width ? a->grid.dims[d] : width;
    a->staging_width = width;
    a->staging = NULL; /* made on first use: exchanges by the sparse exchange need none */
    /* the width is known before the handler can run (inside cr_register, for a
     * faster rank's first step) */
    a->h_segment = cr_register(a->comm, on_segment, a);
}

void cr_darray_exchange_free(cr_darray *a)
{
    for (int k = 0; a->staging && k < a->staging_width; k++)
        darray_bytes_free(&a->staging[k]);
    free(a->staging);
    a->staging = NULL;
}

/* Dimension d's exchange as records: each partner's segment in pieces, then a
 * cr_barrier (every piece handled everywhere); the received segments are put
 * together in coordinate order, as an all-to-all over the dimension would. */
static size_t exchange_by_mailbox(cr_darray *a, int d, const char *send, const size_t *scounts,
                                  size_t rec, darray_bytes *recv, size_t *rcounts, bool counts_known)
{
    lockstep_grid *g = &a->grid;
    int n = g->dims[d], me = coord(g, a->rank, d);
    uint32_t seq = a->stage_seq;
    darray_bytes *stage = staging_of(a);
    size_t most = piece_bytes(a);
    char *piece = cr_xmalloc(sizeof(segment_head) + most);
    size_t off = 0;
    for (int j = 0; j < n; j++) {
        size_t bytes = scounts[j] * rec;
        const char *seg = send + off;
        off += bytes;
        if (j == me) {
            stage[j].len = 0;
            memcpy(darray_bytes_grow(&stage[j], bytes), seg, bytes);
            continue;
        }
        int to = partner(a, d, j);
        for (size_t at = 0; at < bytes; at += most) {
            size_t len = bytes - at < most ? bytes - at : most;
            segment_head h = {seq, (uint32_t)me, at};
            memcpy(piece, &h, sizeof h);
            memcpy(piece + sizeof h, seg + at, len);
            cr_async(a->comm, to, a->h_segment, piece, sizeof h + len);
        }
    }
    free(piece);
    cr_barrier(a->comm);
    size_t total = 0;
    for (int j = 0; j < n; j++) {
        if (stage[j].len % rec || (counts_known && stage[j].len != rcounts[j] * rec))
            cr_fatal("cr_darray_step: internal error: coordinate %d sent %zu bytes in "
                     "exchange %u, not the records expected", j, stage[j].len, seq);
        total += stage[j].len;
    }
    recv->len = 0;
    char *to = darray_bytes_grow(recv, total);
    for (int j = 0; j < n; j++) {
        if (stage[j].len) /* a partner that sent nothing has no buffer yet */
            memcpy(to, stage[j].data, stage[j].len);
        to += stage[j].len;
        rcounts[j] = stage[j].len / rec;
        stage[j].len = 0; /* ready for the next exchange */
    }
    a->stage_seq = seq + 1;
    return total / rec;
}

/* ---- exchanges by the sparse exchange ------------------------------------------ */

/* A segment for this rank in one exchange: from the partner with coordinate j. */
typedef struct arrival {
    int j;
    const char *data;
    size_t len;
} arrival;

static int by_coordinate(const void *x, const void *y)
{
    int a = ((const arrival *)x)->j, b = ((const arrival *)y)->j;
    return (a > b) - (a < b);
}

/* Dimension d's exchange by cr_nbx_exchange: the non-empty segments go to their
 * partners, and what arrives is put together in coordinate order (this rank's own
 * segment copied in place), as an all-to-all over the dimension would deliver it.
 * Its memory follows the partners that send or receive, not the dimension's size
 * (P under direct routing, where every virtual rank of a simulation would otherwise
 * hold a few arrays of P at once). */
static size_t exchange_sparse(cr_darray *a, int d, const char *send, const size_t *scounts,
                              size_t rec, darray_bytes *recv, size_t *rcounts, bool counts_known)
{
    int n = a->grid.dims[d], me = coord(&a->grid, a->rank, d);
    size_t nout = 0, off = 0, own = 0;
    for (int j = 0; j < n; j++)
        nout += j != me && scounts[j] > 0;
    int *dests = cr_xmalloc((nout ? nout : 1) * sizeof *dests);
    const void **bufs = cr_xmalloc((nout ? nout : 1) * sizeof *bufs);
    size_t *sizes = cr_xmalloc((nout ? nout : 1) * sizeof *sizes), k = 0;
    for (int j = 0; j < n; j++) {
        size_t bytes = scounts[j] * rec;
        if (j == me) {
            own = off;
        } else if (bytes) {
            dests[k] = partner(a, d, j);
            bufs[k] = send + off;
            sizes[k++] = bytes;
        }
        off += bytes;
    }
    cr_nbx_result r;
    cr_nbx_exchange(a->comm, nout, dests, bufs, sizes, &r);
    arrival *in = cr_xmalloc((r.count + 1) * sizeof *in);
    for (k = 0; k < r.count; k++) {
        int j = partner_coord(a, d, r.sources[k]);
        if (j < 0 || j == me)
            cr_fatal("cr_darray_step: rank %d sent a segment in exchange %u of dimension %d, "
                     "which it has no part in (every rank must make the same steps)",
                     r.sources[k], a->stage_seq, d);
        in[k] = (arrival){j, r.data[k], r.sizes[k]};
    }
    in[r.count] = (arrival){me, send + own, scounts[me] * rec};
    size_t nin = r.count + 1, total = 0;
    qsort(in, nin, sizeof *in, by_coordinate);
    for (k = 0; k + 1 < nin; k++)
        if (in[k].j == in[k + 1].j)
            cr_fatal("cr_darray_step: two segments from coordinate %d in exchange %u of "
                     "dimension %d (every rank must make the same steps)", in[k].j,
                     a->stage_seq, d);
    /* the counts of every coordinate: those that sent nothing, 0 */
    k = 0;
    for (int j = 0; j < n; j++) {
        size_t got = k < nin && in[k].j == j ? in[k++].len : 0;
        if (got % rec || (counts_known && got != rcounts[j] * rec))
            cr_fatal("cr_darray_step: internal error: coordinate %d sent %zu bytes in "
                     "exchange %u, not the records expected", j, got, a->stage_seq);
        rcounts[j] = got / rec;
        total += got;
    }
    recv->len = 0;
    char *to = darray_bytes_grow(recv, total ? total : 1);
    recv->len = total;
    for (k = 0; k < nin; k++) {
        if (in[k].len)
            memcpy(to, in[k].data, in[k].len);
        to += in[k].len;
    }
    cr_nbx_result_free(&r);
    free(in);
    free(dests);
    free(bufs);
    free(sizes);
    a->stage_seq++;
    return total / rec;
}

/* Dimension d's exchange: scounts[j] records of `rec` bytes from `send` to the
 * partner with coordinate j, the partners' records into `recv` (replaced), their
 * counts into rcounts (checked against them if `counts_known`). Returns the records
 * received. Counts the non-empty segments sent to others, whichever way they move,
 * and the n - 1 a dense all-to-all would start. */
static size_t exchange_dim(cr_darray *a, int d, const char *send, const size_t *scounts, size_t rec,
                           darray_bytes *recv, size_t *rcounts, bool counts_known)
{
    lockstep_grid *g = &a->grid;
    int n = g->dims[d], me = coord(g, a->rank, d);
    a->stats.alltoall_messages += (uint64_t)(n - 1);
    for (int j = 0; j < n; j++)
        if (j != me && scounts[j] > 0) {
            a->stats.messages++;
            a->stats.bytes += (uint64_t)(scounts[j] * rec);
        }
    if (a->by_mailbox)
        return exchange_by_mailbox(a, d, send, scounts, rec, recv, rcounts, counts_known);
    return exchange_sparse(a, d, send, scounts, rec, recv, rcounts, counts_known);
}

/* ---- merging records: {uint64 index, ...} of `rec` bytes ------------------------ */

static uint64_t index_of(const char *rec)
{
    uint64_t i;
    memcpy(&i, rec, sizeof i);
    return i;
}

/* A record copy: reads (8-byte records, the most common) by a constant-size copy,
 * which compiles to one move instead of a call. */
static inline void copy_rec(char *dst, const char *src, size_t rec)
{
    if (rec == 8)
        memcpy(dst, src, 8);
    else
        memcpy(dst, src, rec);
}

/* The next hop in dimension d of a record for `index`: its owner's coordinate there
 * (shifts in place of divisions where n and P are powers of two, the usual case). */
static inline int hop_of(const cr_darray *a, int d, uint64_t index)
{
    return coord(&a->grid, cr_block_layout_owner(&a->layout, index), d);
}

/* How two write records for one index become one (dst keeps the result). Overwrite
 * records carry a stamp (rank << 40 | sequence): the larger wins, whatever the order
 * the records meet in, so every aggregation gives the same result. */
static void merge_write(const cr_darray *a, char *dst, const char *src)
{
    if (a->opts.merge == CR_OP_LAST) {
        uint64_t sd, ss;
        memcpy(&sd, dst + 8, 8);
        memcpy(&ss, src + 8, 8);
        if (ss > sd)
            memcpy(dst + 8, src + 8, 8 + a->elem);
        return;
    }
    cr_darray_apply(a, dst + 8, src + 8);
}

typedef void (*merge_fn)(const cr_darray *a, char *dst, const char *src);

/* 4.4.1: the distinct indices of in[0, m) in first-seen order into `out`, merging
 * duplicates with `merge` (writes) or keeping the first (reads, merge == NULL);
 * pos[j] (if not NULL) is where in[j] went. Returns the distinct count. */
static size_t hash_unique(const cr_darray *a, const char *in, size_t m, size_t rec, darray_bytes *out,
                          uint32_t *pos, merge_fn merge)
{
    size_t cap = 16;
    while (cap < 2 * m)
        cap *= 2;
    uint32_t *slot = cr_xmalloc(cap * sizeof *slot);
    memset(slot, 0xff, cap * sizeof *slot);
    out->len = 0;
    char *o = darray_bytes_grow(out, m * rec);
    size_t u = 0;
    for (size_t j = 0; j < m; j++) {
        const char *r = in + j * rec;
        uint64_t i = index_of(r);
        size_t h = (size_t)cr_rng_hash64(i) & (cap - 1);
        while (slot[h] != UINT32_MAX && index_of(o + (size_t)slot[h] * rec) != i)
            h = (h + 1) & (cap - 1);
        if (slot[h] == UINT32_MAX) {
            slot[h] = (uint32_t)u;
            copy_rec(o + u * rec, r, rec);
            u++;
        } else if (merge) {
            merge(a, o + (size_t)slot[h] * rec, r);
        }
        if (pos)
            pos[j] = slot[h];
    }
    out->len = u * rec;
    free(slot);
    return u;
}

/* Order in[0, m) by next hop in dimension d (a stable counting sort) into `out`,
 * with the counts per hop; where[u] (if not NULL) is the new place of in[u]. */
static void bucket_by_hop(const cr_darray *a, int d, const char *in, size_t m, size_t rec,
                          darray_bytes *out, size_t *counts, uint32_t *where)
{
    int n = a->grid.dims[d];
    size_t *at = cr_xcalloc((size_t)n, sizeof *at);
    uint32_t *hop = cr_xmalloc((m ? m : 1) * sizeof *hop); /* each record's, found once */
    memset(counts, 0, (size_t)n * sizeof *counts);
    for (size_t j = 0; j < m; j++) {
        hop[j] = (uint32_t)hop_of(a, d, index_of(in + j * rec));
        counts[hop[j]]++;
    }
    for (int k = 1; k < n; k++)
        at[k] = at[k - 1] + counts[k - 1];
    out->len = 0;
    char *o = darray_bytes_grow(out, m * rec);
    out->len = m * rec;
    for (size_t j = 0; j < m; j++) {
        size_t to = at[hop[j]]++;
        copy_rec(o + to * rec, in + j * rec, rec);
        if (where)
            where[j] = (uint32_t)to;
    }
    free(hop);
    free(at);
}

/* Sort m records of `rec` bytes, each starting with its uint64 index < n, by index:
 * a stable LSD radix sort of 11-bit digits, as many passes as n needs (the source's
 * "sort once", 4.4.3; a comparison sort costs several times more here). */
static void sort_by_index(char *data, size_t m, size_t rec, uint64_t n)
{
    int bits = 0;
    while (bits < 64 && (n - 1) >> bits)
        bits++;
    if (m < 2 || bits == 0)
        return;
    enum { DIGIT = 11, BUCKETS = 1 << DIGIT };
    char *tmp = cr_xmalloc(m * rec), *src = data, *dst = tmp;
    size_t *at = cr_xmalloc(BUCKETS * sizeof *at);
    for (int shift = 0; shift < bits; shift += DIGIT) {
        memset(at, 0, BUCKETS * sizeof *at);
        for (size_t j = 0; j < m; j++)
            at[(index_of(src + j * rec) >> shift) & (BUCKETS - 1)]++;
        size_t sum = 0;
        for (size_t b = 0; b < BUCKETS; b++) {
            size_t c = at[b];
            at[b] = sum;
            sum += c;
        }
        for (size_t j = 0; j < m; j++)
            copy_rec(dst + at[(index_of(src + j * rec) >> shift) & (BUCKETS - 1)]++ * rec,
                     src + j * rec, rec);
        char *t = src;
        src = dst, dst = t;
    }
    if (src != data)
        memcpy(data, src, m * rec);
    free(tmp);
    free(at);
}

/* Algorithm 4, line 9: merge the sorted segments of in (seg[k] records each) into
 * one sorted sequence (pairwise, log2(segments) passes), then keep one record per
 * index (merging writes). Returns the distinct count, in `out`. */
static size_t merge_presorted(const cr_darray *a, const char *in, const size_t *seg, int nseg,
                              size_t rec, darray_bytes *out, merge_fn merge)
{
    size_t m = 0;
    for (int k = 0; k < nseg; k++)
        m += seg[k];
    darray_bytes x = {0}, y = {0};
    memcpy(darray_bytes_grow(&x, m * rec), in, m * rec);
    darray_bytes_grow(&y, m * rec);
    size_t *bound = cr_xmalloc(((size_t)nseg + 1) * sizeof *bound);
    int nb = 0;
    bound[nb++] = 0;
    for (int k = 0; k < nseg; k++)
        if (seg[k])
            bound[nb] = bound[nb - 1] + seg[k], nb++;
    while (nb > 2) { /* runs [bound[k], bound[k+1]) */
        int nn = 1;
        for (int k = 0; k + 1 < nb; k += 2) {
            size_t lo = bound[k], mid = bound[k + 1], hi = k + 2 < nb ? bound[k + 2] : mid;
            size_t i = lo, j = mid, t = lo;
            while (i < mid || j < hi) {
                bool left = j >= hi || (i < mid && index_of(x.data + i * rec) <=
                                                       index_of(x.data + j * rec));
                copy_rec(y.data + t++ * rec, x.data + (left ? i++ : j++) * rec, rec);
            }
            bound[nn++] = hi;
        }
        nb = nn;
        darray_bytes swap = x;
        x = y, y = swap;
    }
    free(bound);
    out->len = 0;
    char *o = darray_bytes_grow(out, m * rec);
    size_t u = 0;
    for (size_t j = 0; j < m; j++) {
        const char *r = x.data + j * rec;
        if (u > 0 && index_of(o + (u - 1) * rec) == index_of(r)) {
            if (merge)
                merge(a, o + (u - 1) * rec, r);
            continue;
        }
        copy_rec(o + u++ * rec, r, rec);
    }
    out->len = u * rec;
    darray_bytes_free(&x);
    darray_bytes_free(&y);
    return u;
}

/* Counts per next hop of records sorted by index (Algorithm 4, lines 2-6): the end
 * of each hop's run by binary search, the hop being monotone in the index. */
static void counts_of_sorted(const cr_darray *a, int d, const char *in, size_t m, size_t rec,
                             size_t *counts)
{
    size_t start = 0;
    for (int k = 0; k < a->grid.dims[d]; k++) {
        size_t lo = start, hi = m; /* first record whose hop is > k */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (hop_of(a, d, index_of(in + mid * rec)) <= k)
                lo = mid + 1;
            else
                hi = mid;
        }
        counts[k] = lo - start;
        start = lo;
    }
}

/* How one aggregation merges identical requests (thesis 4.4, 4.5): a table of
 * operations chosen once, when the array is created (cr_darray_grid_init), so that
 * the steps below are written once for all three. */
typedef struct frame frame;
struct darray_aggregation {
    bool merges; /* requests merged at the owner count in merged_hops */
    /* A step's m requests of rec bytes at their source, before the first hop: sorted
     * once by index (sort, whose hops keep sorted segments), or left as they are. */
    void (*at_source)(const cr_darray *a, char *data, size_t m, size_t rec);
    /* One hop: the m records of `in` (as received: nseg sorted segments of seg[k]
     * records under sort) become the records to send in dimension d, in `out`,
     * ordered by next hop with counts[] per hop; pos[j] (reads split by position
     * only) is where in[j]'s request went. Returns the records to send. */
    size_t (*hop)(const cr_darray *a, int d, const char *in, size_t m, const size_t *seg,
                  int nseg, size_t rec, darray_bytes *out, size_t *counts, uint32_t *pos,
                  merge_fn merge);
    /* The owner's reads: the requests that reached it (f->R) become the indices it
     * reads, each once; f->pos or f->U hold what split_replies needs. Returns them,
     * with their number in *served. */
    const uint64_t *(*serve)(const cr_darray *a, frame *f, size_t *served);
    /* A read's hop begins (f->nR requests reached it): what the split on the way back
     * needs besides the requests, f->pos where it splits by position. */
    void (*read_hop_begins)(frame *f);
    /* ... and its requests have gone on: what the split does not need is freed. */
    void (*read_hop_sent)(frame *f);
    /* The replies to f's requests, vu[k] for f->U[k], become the replies to what
     * reached the hop, v[j] for f->R[j] (4.5). */
    void (*split)(const cr_darray *a, const frame *f, const char *vu, char *v);
};

static size_t hop_none(const cr_darray *a, int d, const char *in, size_t m, const size_t *seg,
                       int nseg, size_t rec, darray_bytes *out, size_t *counts, uint32_t *pos,
                       merge_fn merge)
{
    (void)seg, (void)nseg, (void)merge;
    bucket_by_hop(a, d, in, m, rec, out, counts, pos);
    return m;
}

static size_t hop_hash(const cr_darray *a, int d, const char *in, size_t m, const size_t *seg,
                       int nseg, size_t rec, darray_bytes *out, size_t *counts, uint32_t *pos,
                       merge_fn merge)
{
    (void)seg, (void)nseg;
    darray_bytes unique = {0};
    size_t u = hash_unique(a, in, m, rec, &unique, pos, merge);
    uint32_t *where = cr_xmalloc((u ? u : 1) * sizeof *where);
    bucket_by_hop(a, d, unique.data, u, rec, out, counts, where);
    if (pos)
        for (size_t j = 0; j < m; j++)
            pos[j] = where[pos[j]];
    free(where);
    darray_bytes_free(&unique);
    return u;
}

static size_t hop_sort(const cr_darray *a, int d, const char *in, size_t m, const size_t *seg,
                       int nseg, size_t rec, darray_bytes *out, size_t *counts, uint32_t *pos,
                       merge_fn merge)
{
    (void)m, (void)pos;
    size_t u = merge_presorted(a, in, seg, nseg, rec, out, merge);
    counts_of_sorted(a, d, out->data, u, rec, counts);
    return u;
}

static void count_merged(cr_darray *a, int d, size_t before, size_t after)
{
    if (d == 0)
        a->stats.merged_local += before - after;
    else
        a->stats.merged_hops += before - after;
}

/* What reached this rank as the owner: the records of the last exchange that came
 * from other ranks (`seg` per partner; with one rank, none), and the requests the
 * owner merged before serving them (`merged`, under hash and sort). */
static void count_at_owner(cr_darray *a, size_t m, const size_t *seg, size_t merged)
{
    const lockstep_grid *g = &a->grid;
    if (g->ndims > 0)
        a->stats.reached_owner += m - seg[coord(g, a->rank, g->ndims - 1)];
    if (a->agg->merges)
        a->stats.merged_hops += merged;
}

static char *elem_at(cr_darray *a, uint64_t i)
{
    if (i < a->first || i - a->first >= a->count)
        cr_fatal("cr_darray_step: index %llu reached rank %d, which holds [%llu, %llu)",
                 (unsigned long long)i, a->rank, (unsigned long long)a->first,
                 (unsigned long long)(a->first + a->count));
    return a->data + (i - a->first) * a->elem;
}

static size_t pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* A write record: {index, stamp (overwrite only), value padded to 8}. */
static size_t write_rec(const cr_darray *a)
{
    return 8 + (a->opts.merge == CR_OP_LAST ? 8 : 0) + pad8(a->elem);
}

/* ---- writes -------------------------------------------------------------------- */

static void step_writes(cr_darray *a)
{
    lockstep_grid *g = &a->grid;
    size_t rec = write_rec(a), m = a->writes.len / rec;
    a->stats.requests += m;
    a->agg = step_plan(a, a->writes.data, m, rec, 0);
    darray_bytes out = {0}, recv = {0}, final = {0};
    uint64_t clock = now_ns();
    a->agg->at_source(a, a->writes.data, m, rec);
    const char *in = a->writes.data;
    size_t *seg = cr_xmalloc(sizeof *seg), *counts = NULL; /* the input's sorted segments */
    seg[0] = m;
    int nseg = 1;
    for (int d = 0; d < g->ndims; d++) {
        counts = cr_xrealloc(counts, (size_t)g->dims[d] * sizeof *counts);
        size_t u = a->agg->hop(a, d, in, m, seg, nseg, rec, &out, counts, NULL, merge_write);
        count_merged(a, d, m, u);
        seg = cr_xrealloc(seg, (size_t)g->dims[d] * sizeof *seg);
        nseg = g->dims[d];
        lap(d == 0 ? &a->stats.write_ns : &a->stats.hop_ns, &clock);
        m = exchange_dim(a, d, out.data, counts, rec, &recv, seg, false);
        clock = now_ns();
        a->stats.hop_records += m;
        in = recv.data;
    }
    /* Writes to one element from different senders of the last exchange meet here:
     * merged first, so that overwrite stamps decide, then applied. */
    size_t u = hash_unique(a, in, m, rec, &final, NULL, merge_write);
    count_at_owner(a, m, seg, m - u);
    size_t voff = a->opts.merge == CR_OP_LAST ? 16 : 8;
    cr_darray_apply_fn apply = cr_darray_owned_apply(a);
    for (size_t j = 0; j < u; j++) {
        const char *r = final.data + j * rec;
        apply(a, elem_at(a, index_of(r)), r + voff);
    }
    lap(g->ndims == 0 ? &a->stats.write_ns : &a->stats.hop_ns, &clock);
    free(seg);
    free(counts);
    darray_bytes_free(&out);
    darray_bytes_free(&recv);
    darray_bytes_free(&final);
    a->writes.len = 0;
}

/* ---- reads --------------------------------------------------------------------- */

/* A queued read. */
typedef struct read_entry {
    uint64_t index;
    void *dst;
} read_entry;

/* What one hop keeps of a read's way out, to split its replies on the way back. */
struct frame {
    darray_bytes R;          /* the requests that reached this hop (indices), as received */
    size_t *rseg;     /* ... in segments of rseg[k] (sorted under sort aggregation) */
    int nrseg;
    size_t nR;
    darray_bytes U;          /* the requests sent on in this dimension, merged */
    size_t *scounts;  /* ... per next hop */
    uint32_t *pos;    /* none / hash: R[j]'s request is U[pos[j]]; NULL: U is R */
};

/* Algorithm 6: the first position in u[start, end) whose index is >= target. */
static size_t exponential_lower_bound(const uint64_t *u, size_t start, size_t end,
                                      uint64_t target)
{
    size_t step = 1, lo = start;
    while (lo + step < end && u[lo + step] < target) {
        lo += step;
        step *= 2;
    }
    size_t hi = lo + step < end ? lo + step : end; /* u[hi] >= target, or hi = end */
    if (lo >= end)
        return end;
    if (u[lo] >= target)
        return lo;
    return (size_t)cr_lower_bound_u64(u, lo + 1, hi, target); /* u[lo] < target */
}

/* None and hash split by position: R[j]'s reply is U[pos[j]]'s, or R's own where the
 * requests were served where they stand (none, at the owner: no positions). */
static void split_by_position(const cr_darray *a, const frame *f, const char *vu, char *v)
{
    size_t e = a->elem;
    if (!f->pos) {
        memcpy(v, vu, f->nR * e);
        return;
    }
    for (size_t j = 0; j < f->nR; j++)
        memcpy(v + j * e, vu + (size_t)f->pos[j] * e, e);
}

/* Sort splits by searching each sorted segment of R in the sorted U (Algorithm 5). */
static void split_by_search(const cr_darray *a, const frame *f, const char *vu, char *v)
{
    size_t e = a->elem;
    const uint64_t *r = (const uint64_t *)f->R.data;
    const uint64_t *u = (const uint64_t *)f->U.data;
    size_t nu = f->U.len / 8, j = 0;
    for (int k = 0; k < f->nrseg; k++) {
        size_t at = 0;
        for (size_t end = j + f->rseg[k]; j < end; j++) {
            at = exponential_lower_bound(u, at, nu, r[j]);
            if (at >= nu || u[at] != r[j])
                cr_fatal("cr_darray_step: internal error: request %llu lost on its way",
                         (unsigned long long)r[j]);
            memcpy(v + j * e, vu + at * e, e);
        }
    }
}

static void frame_free(frame *f)
{
    darray_bytes_free(&f->R);
    darray_bytes_free(&f->U);
    free(f->rseg);
    free(f->scounts);
    free(f->pos);
}


/* The owner's side of each aggregation (darray_aggregation.serve). */
static const uint64_t *serve_none(const cr_darray *a, frame *f, size_t *served)
{
    (void)a; /* every request served where it stands: no positions (split_replies) */
    *served = f->nR;
    return (const uint64_t *)f->R.data;
}

static const uint64_t *serve_hash(const cr_darray *a, frame *f, size_t *served)
{
    f->pos = cr_xmalloc((f->nR ? f->nR : 1) * sizeof *f->pos);
    *served = hash_unique(a, f->R.data, f->nR, 8, &f->U, f->pos, NULL);
    return (const uint64_t *)f->U.data;
}

static const uint64_t *serve_sort(const cr_darray *a, frame *f, size_t *served)
{
    *served = merge_presorted(a, f->R.data, f->rseg, f->nrseg, 8, &f->U, NULL);
    return (const uint64_t *)f->U.data;
}

/* What each aggregation does at the source and around a read's hop. */
static void as_they_are(const cr_darray *a, char *data, size_t m, size_t rec)
{
    (void)a, (void)data, (void)m, (void)rec;
}

static void sorted_once(const cr_darray *a, char *data, size_t m, size_t rec)
{
    sort_by_index(data, m, rec, a->n);
}

static void keep_positions(frame *f)
{
    f->pos = cr_xmalloc((f->nR ? f->nR : 1) * sizeof *f->pos);
}

/* Split by position, the replies need only pos[] on their way back: the hop's
 * requests go now, not after the step (with log2 P frames alive at once, they were
 * most of a step's memory). */
static void free_requests(frame *f)
{
    darray_bytes_free(&f->R);
    darray_bytes_free(&f->U);
}

/* Sort needs no positions and keeps its requests: its split searches them. */
static void leave_frame(frame *f)
{
    (void)f;
}

static const darray_aggregation aggregation_none = {
    .merges = false, .at_source = as_they_are, .hop = hop_none, .serve = serve_none,
    .read_hop_begins = keep_positions, .read_hop_sent = free_requests,
    .split = split_by_position};
static const darray_aggregation aggregation_hash = {
    .merges = true, .at_source = as_they_are, .hop = hop_hash, .serve = serve_hash,
    .read_hop_begins = keep_positions, .read_hop_sent = free_requests,
    .split = split_by_position};
static const darray_aggregation aggregation_sort = {
    .merges = true, .at_source = sorted_once, .hop = hop_sort, .serve = serve_sort,
    .read_hop_begins = leave_frame, .read_hop_sent = leave_frame,
    .split = split_by_search};

/* ---- aggregation auto ------------------------------------------------------------ */

/* Merging pays where identical requests are common; where nearly every request is
 * for a different index it costs a table pass per hop and saves nothing (the same
 * judgement as the mailbox's combining, src/mailbox/append.c). So `auto` estimates,
 * before each step's writes and again before its reads, how many of the requests of
 * all ranks are for distinct indices, and merges (hash) only when at least a quarter
 * of them repeat: the estimate's standard error (1.04 / sqrt(256), 6.5%) is a quarter
 * of that margin. The distinct count is a HyperLogLog sketch (Flajolet, Fusy,
 * Gandouet and Meunier, 2007) of 256 registers per rank, combined by one reduction
 * of their maxima: every rank gets the same sketch and makes the same choice. */
#define AUTO_REGISTERS 256
#define AUTO_REGISTER_BITS 8
#define AUTO_MERGE_REPEATS 0.25

static void sketch_add(uint64_t *reg, uint64_t index)
{
    uint64_t h = cr_rng_hash64(index ^ 0x9e3779b97f4a7c15ULL);
    uint64_t rest = h >> AUTO_REGISTER_BITS;
    uint64_t rank = rest ? (uint64_t)__builtin_ctzll(rest) + 1 : 64 - AUTO_REGISTER_BITS + 1;
    if (rank > reg[h & (AUTO_REGISTERS - 1)])
        reg[h & (AUTO_REGISTERS - 1)] = rank;
}

/* The sketch's estimate of the distinct indices, with the small-range correction
 * (linear counting while registers are still zero). */
static double sketch_estimate(const uint64_t *reg)
{
    double sum = 0, m = AUTO_REGISTERS;
    int zeros = 0;
    for (int i = 0; i < AUTO_REGISTERS; i++) {
        sum += ldexp(1.0, -(int)reg[i]);
        zeros += reg[i] == 0;
    }
    double e = 0.7213 / (1 + 1.079 / m) * m * m / sum; /* the paper's alpha_m */
    if (e <= 2.5 * m && zeros > 0)
        e = m * log(m / zeros);
    return e;
}

/* ---- route auto ------------------------------------------------------------------ */

/* Under route auto, every step's writes and again its reads take the grid the cost
 * model of courier/tune.h predicts cheapest for them (docs/tuning.md, "Lock-step"),
 * among these, in this order (ties within 1% go to the earlier): */
const char *const cr_darray_auto_route_names[CR_DARRAY_AUTO_ROUTES] = {"direct", "grid",
                                                                      "grid3", "hypercube"};

/* Three dimensions for P: a the largest divisor of P not above its cube root, then
 * P / a in two. */
static int grid3_dims(int p, int *dims)
{
    int a = 1;
    for (int f = 1; (long)f * f * f <= p; f++)
        if (p % f == 0)
            a = f;
    grid2_dims(p / a, dims);
    dims[2] = a;
    return 3;
}

static int auto_route_dims(int k, int p, int *dims)
{
    switch (k) {
    case 0: dims[0] = p; return 1;
    case 1: return grid2_dims(p, dims);
    case 2: return grid3_dims(p, dims);
    default: return route_dims(&(cr_route){.kind = CR_ROUTE_HYPERCUBE}, p, dims);
    }
}

static void print_route_choice(int chosen, const double *seconds,
                               const cr_tune_step *t)
{
    fprintf(stderr, "courier: darray route auto chose %s for %s of %.0f requests (%.0f "
            "distinct, %s): predicted %.1f us; the others:",
            cr_darray_auto_route_names[chosen], t->reply_bytes ? "reads" : "writes", t->requests,
            t->distinct, t->merged ? "merged" : "not merged", seconds[chosen] * 1e6);
    for (int k = 0; k < CR_DARRAY_AUTO_ROUTES; k++)
        if (k != chosen)
            fprintf(stderr, " %s %.1f", cr_darray_auto_route_names[k], seconds[k] * 1e6);
    fprintf(stderr, "\n");
}

/* Lay the grid out for a step of `t`: the cheapest of the candidates. */
static void choose_route(cr_darray *a, const cr_tune_step *t)
{
    const cr_tune_costs *c = cr_module_tune_costs(a->comm);
    const cr_layout *l = cr_module_layout(a->comm);
    int dims[CR_DARRAY_AUTO_ROUTES][64], nd[CR_DARRAY_AUTO_ROUTES], chosen = 0;
    double seconds[CR_DARRAY_AUTO_ROUTES];
    for (int k = 0; k < CR_DARRAY_AUTO_ROUTES; k++) {
        nd[k] = auto_route_dims(k, a->size, dims[k]);
        seconds[k] = cr_tune_step_predict(l, dims[k], nd[k], t, c);
        if (seconds[k] < 0)
            cr_fatal("cr_darray_step: internal error: no prediction for route %s at %d ranks",
                     cr_darray_auto_route_names[k], a->size);
    }
    double best = seconds[0];
    for (int k = 1; k < CR_DARRAY_AUTO_ROUTES; k++)
        best = fmin(best, seconds[k]);
    while (seconds[chosen] > best * 1.01)
        chosen++;
    grid_set(&a->grid, dims[chosen], nd[chosen]);
    a->stats.auto_routes[chosen]++;
    if (a->rank == 0 && cr_comm_config(a->comm)->verbosity >= 1)
        print_route_choice(chosen, seconds, t);
}

/* What a step's writes (or reads) use: the array's aggregation, or under auto the
 * choice above; and under route auto, the grid. `data` holds m requests of `rec`
 * bytes, each starting with its index; `reply_bytes` is 0 for writes. Collective
 * under either auto. */
static const darray_aggregation *step_plan(cr_darray *a, const char *data, size_t m,
                                           size_t rec, size_t reply_bytes)
{
    bool agg_auto = a->opts.aggregation == CR_DARRAY_AGG_AUTO;
    bool route_auto = a->opts.route.kind == CR_ROUTE_AUTO;
    if (!agg_auto && !route_auto)
        return a->agg;
    uint64_t mine[AUTO_REGISTERS + 1] = {0}, all[AUTO_REGISTERS + 1] = {0};
    bool need_sketch = agg_auto || a->agg != &aggregation_none;
    for (size_t j = 0; need_sketch && j < m; j++)
        sketch_add(mine, index_of(data + j * rec));
    for (int k = 0; need_sketch && k < AUTO_REGISTERS; k += 32) /* 32 values a reduction */
        cr_module_allreduce_u64(a->comm, mine + k, all + k, 32, CR_OP_MAX);
    uint64_t count = m;
    cr_module_allreduce_u64(a->comm, &count, &all[AUTO_REGISTERS], 1, CR_OP_SUM);
    double total = (double)all[AUTO_REGISTERS];
    double distinct = need_sketch ? fmin(sketch_estimate(all), total) : total;
    const darray_aggregation *agg = a->agg;
    if (agg_auto) {
        bool merge = total > 0 && distinct <= (1.0 - AUTO_MERGE_REPEATS) * total;
        *(merge ? &a->stats.auto_merged : &a->stats.auto_plain) += 1;
        agg = aggregation_of(merge ? CR_DARRAY_AGG_HASH : CR_DARRAY_AGG_NONE);
    }
    if (route_auto && total > 0) /* nothing to send: any grid sends nothing */
        choose_route(a, &(cr_tune_step){.requests = total, .distinct = distinct,
                                        .request_bytes = reply_bytes ? 8 : rec,
                                        .reply_bytes = reply_bytes,
                                        .merged = agg != &aggregation_none});
    return agg;
}

static const darray_aggregation *aggregation_of(cr_darray_aggregation kind)
{
    return kind == CR_DARRAY_AGG_SORT   ? &aggregation_sort
           : kind == CR_DARRAY_AGG_HASH ? &aggregation_hash
                                        : &aggregation_none;
}

static void step_reads(cr_darray *a)
{
    lockstep_grid *g = &a->grid;
    size_t nq = a->reads.len / sizeof(read_entry), e = a->elem;
    read_entry *q = (read_entry *)a->reads.data;
    a->stats.requests += nq;
    a->agg = step_plan(a, a->reads.data, nq, sizeof *q, a->elem);
    uint64_t clock = now_ns();
    a->agg->at_source(a, (char *)q, nq, sizeof *q);
    frame *fr = cr_xcalloc((size_t)g->ndims + 1, sizeof *fr);
    /* frame 0's requests: this rank's own, one segment */
    fr[0].nR = nq;
    uint64_t *r0 = darray_bytes_grow(&fr[0].R, nq * 8);
    for (size_t j = 0; j < nq; j++)
        r0[j] = q[j].index;
    fr[0].R.len = nq * 8;
    fr[0].rseg = cr_xmalloc(sizeof(size_t));
    fr[0].rseg[0] = nq;
    fr[0].nrseg = 1;
    for (int d = 0; d < g->ndims; d++) {
        frame *f = &fr[d], *next = &fr[d + 1];
        int n = g->dims[d];
        f->scounts = cr_xmalloc((size_t)n * sizeof *f->scounts);
        a->agg->read_hop_begins(f);
        size_t u = a->agg->hop(a, d, f->R.data, f->nR, f->rseg, f->nrseg, 8, &f->U, f->scounts,
                               f->pos, NULL);
        count_merged(a, d, f->nR, u);
        next->rseg = cr_xmalloc((size_t)n * sizeof *next->rseg);
        next->nrseg = n;
        lap(d == 0 ? &a->stats.write_ns : &a->stats.hop_ns, &clock);
        next->nR = exchange_dim(a, d, f->U.data, f->scounts, 8, &next->R, next->rseg, false);
        clock = now_ns();
        a->stats.hop_records += next->nR;
        a->agg->read_hop_sent(f);
    }
    /* The owner merges what reached it from its partners of the last dimension (and
     * itself), reads each element once, and splits the values as any hop does. */
    frame *last = &fr[g->ndims];
    darray_bytes v = {0}, vu = {0};
    darray_bytes_grow(&v, last->nR * e);
    size_t served;
    const uint64_t *rk = a->agg->serve(a, last, &served);
    count_at_owner(a, last->nR, last->rseg, last->nR - served);
    char *vals = darray_bytes_grow(&vu, served * e);
    for (size_t j = 0; j < served; j++)
        memcpy(vals + j * e, elem_at(a, rk[j]), e);
    lap(g->ndims == 0 ? &a->stats.write_ns : &a->stats.hop_ns, &clock);
    a->agg->split(a, last, vu.data, v.data);
    /* and the replies go back the way the requests came, split at every hop */
    for (int d = g->ndims - 1; d >= 0; d--) {
        frame *f = &fr[d];
        lap(&a->stats.read_ns, &clock);
        exchange_dim(a, d, v.data, fr[d + 1].rseg, e, &vu, f->scounts, true);
        clock = now_ns();
        v.len = 0;
        darray_bytes_grow(&v, f->nR * e);
        a->agg->split(a, f, vu.data, v.data);
        a->stats.read_records += f->nR;
    }
    for (size_t j = 0; j < nq; j++)
        memcpy(q[j].dst, v.data + j * e, e);
    lap(&a->stats.read_ns, &clock);
    for (int d = 0; d <= g->ndims; d++)
        frame_free(&fr[d]);
    free(fr);
    darray_bytes_free(&v);
    darray_bytes_free(&vu);
    a->reads.len = 0;
}

/* ---- within the node ------------------------------------------------------------ */

/* The queued writes whose owner shares this rank's node merge into their elements in
 * place, by one atomic operation each, and leave the queue; the others stay for the
 * exchanges. Overwrites stay records: their stamps decide at the owner which one is
 * last, and an atomic store in place would let the fastest rank decide. */
static void near_writes(cr_darray *a)
{
    if (a->opts.merge == CR_OP_LAST)
        return;
    size_t rec = write_rec(a), m = a->writes.len / rec, kept = 0;
    char *w = a->writes.data;
    for (size_t j = 0; j < m; j++) {
        const char *r = w + j * rec;
        uint64_t i = index_of(r);
        _Atomic uint64_t *e = cr_darray_near_elem(a, cr_block_layout_owner(&a->layout, i), i);
        if (e) {
            cr_darray_apply_shared(a, (void *)e, r + 8);
            continue;
        }
        if (kept != j)
            memmove(w + kept * rec, r, rec);
        kept++;
    }
    a->stats.requests += m - kept;
    a->stats.in_place += m - kept;
    a->writes.len = kept * rec;
}

/* The queued reads of elements in the node's memory, answered by a load each. */
static void near_reads(cr_darray *a)
{
    size_t nq = a->reads.len / sizeof(read_entry), kept = 0;
    read_entry *q = (read_entry *)a->reads.data;
    for (size_t j = 0; j < nq; j++) {
        uint64_t i = q[j].index;
        _Atomic uint64_t *e = cr_darray_near_elem(a, cr_block_layout_owner(&a->layout, i), i);
        if (e) {
            uint64_t v = atomic_load_explicit(e, memory_order_relaxed);
            memcpy(q[j].dst, &v, sizeof v);
            continue;
        }
        q[kept++] = q[j];
    }
    a->stats.requests += nq - kept;
    a->stats.in_place += nq - kept;
    a->reads.len = kept * sizeof *q;
}

/* ---- the public calls ------------------------------------------------------------ */

void cr_darray_write(cr_darray *a, uint64_t i, const void *value)
{
    if (i >= a->n)
        cr_fatal("cr_darray_write: index %llu is out of range [0, %llu)", (unsigned long long)i,
                 (unsigned long long)a->n);
    size_t rec = write_rec(a);
    char *r = darray_bytes_grow(&a->writes, rec);
    memset(r, 0, rec);
    memcpy(r, &i, 8);
    if (a->opts.merge == CR_OP_LAST) {
        uint64_t stamp = (uint64_t)a->rank << 40 | a->write_seq++;
        memcpy(r + 8, &stamp, 8);
        memcpy(r + 16, value, a->elem);
    } else {
        memcpy(r + 8, value, a->elem);
    }
}

void cr_darray_read(cr_darray *a, uint64_t i, void *dst)
{
    if (i >= a->n)
        cr_fatal("cr_darray_read: index %llu is out of range [0, %llu)", (unsigned long long)i,
                 (unsigned long long)a->n);
    if (!dst)
        cr_fatal("cr_darray_read: dst is NULL");
    read_entry *q = darray_bytes_grow(&a->reads, sizeof *q);
    *q = (read_entry){.index = i, .dst = dst};
}

void cr_darray_step(cr_darray *a)
{
    if (cr_module_in_handler(a->comm))
        cr_fatal("cr_darray_step was called from inside a handler");
    if (cr_module_busy(a->comm))
        cr_fatal("cr_darray_step was called while the comm waits (from a callback)");
    /* With in-place access the node's elements are reached between barriers of the
     * node's ranks. The first: no rank writes in place before every rank of the node
     * has entered the step (and so is done with its block and its reads of the last
     * one). The second: every write of the step, in place and by records from other
     * nodes, has landed before any rank reads in place, and before the step returns
     * (a rank may read its block with cr_darray_local after it). */
    bool in_place = a->near != NULL;
    if (in_place) {
        cr_module_node_segment_barrier(a->seg);
        near_writes(a);
    }
    step_writes(a);
    if (in_place) {
        cr_module_node_segment_barrier(a->seg);
        near_reads(a);
    }
    step_reads(a);
    a->write_seq = 0;
    a->stats.steps++;
}
