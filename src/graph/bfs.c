/* Breadth-first search with asynchronous visits, and its Graph500 validation.
 *
 * The search is level-synchronous: the ranks expand their frontier with one visit
 * message per edge (local ends are visited in place), cr_barrier ends the level,
 * and a reduction of the next frontier's size decides whether to go on. Levels are
 * therefore exact distances, which the validation checks. */
#include "graph/graph_internal.h"

#include "common/fatal.h"
#include "courier/coll.h"
#include "courier/mailbox.h"
#include "courier/route.h"
#include "mailbox/module.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- the run */

/* The handlers, registered on the comm by the first search or validation there
 * (collective), and the call in progress, for them. */
typedef struct bfs_state {
    int h_visit, h_visit_merged, h_relax, h_check_parent, h_check_edge;
    struct bfs_run *run;
} bfs_state;

/* One search or validation: its state lives here, not in the graph, so that the
 * graph holds only the graph. */
typedef struct bfs_run {
    cr_graph *g;
    const bfs_state *st;
    int64_t *parent; /* the caller's result arrays */
    int32_t *level;
    int32_t cur_level;
    uint64_t *next; /* local indices reached in the current level */
    size_t nnext, next_cap;
    uint64_t *spare; /* the frontier being expanded: next's storage for the level after,
                        so a search grows two arrays once instead of one a level */
    size_t spare_cap;
    uint64_t *stack; /* async: queue of local vertices whose level just dropped */
    size_t stack_head, nstack, stack_cap; /* entries [stack_head, nstack) are queued */
    uint64_t relaxations; /* async: level improvements, re-visits included */
    uint64_t errors;      /* validation: violations found on this rank */
    char why[256];        /* the first of them */
} bfs_run;

/* ---------------------------------------------------------------- search */

static void visit(bfs_run *r, uint64_t v, uint64_t from)
{
    cr_graph *g = r->g;
    uint64_t i = v - g->first;
    if (r->level[i] >= 0)
        return;
    r->level[i] = r->cur_level + 1;
    r->parent[i] = (int64_t)from;
    if (r->nnext == r->next_cap) {
        r->next_cap = r->next_cap ? 2 * r->next_cap : 1024;
        r->next = cr_xrealloc(r->next, r->next_cap * sizeof *r->next);
    }
    r->next[r->nnext++] = i;
}

/* A batch handler: one call per run of visits in a received buffer. */
static void on_visits(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    bfs_run *r = ((bfs_state *)user)->run;
    for (size_t k = 0; k < b->count; k++) {
        uint64_t m[2];
        memcpy(m, cr_batch_payload(b, k), sizeof m);
        visit(r, m[0], m[1]);
    }
}

/* ---------------------------------------------------------------- reductions */

/* A sum or a maximum over the ranks: the transport's reduction (MPI_Allreduce, or
 * the simulation's), so one code path on both. */
static uint64_t max_over_ranks(cr_graph *g, uint64_t v)
{
    uint64_t out;
    cr_module_allreduce_u64(g->comm, &v, &out, 1, CR_OP_MAX);
    return out;
}

static uint64_t sum_over_ranks(cr_graph *g, uint64_t v)
{
    return graph_sum(g->comm, v);
}

/* All ranks together, before the timed search: a reduction of nothing is a barrier
 * that does not wait for the mailbox to drain (nothing is in flight here). */
static void align_ranks(cr_graph *g)
{
    sum_over_ranks(g, 0);
}

/* The slowest rank's seconds (on the simulated transport, virtual seconds). */
static double slowest(cr_graph *g, double mine)
{
    double out;
    cr_module_allreduce_double(g->comm, &mine, &out, 1, CR_OP_MAX);
    return out;
}

/* ---------------------------------------------------------------- label-correcting */

/* A visit offers v the level `level` through `from`; an improvement is applied and
 * v's neighbours are offered level + 1: in place for my own vertices (through a
 * stack, not recursion), by message for the others. */
static void relax(bfs_run *r, uint64_t v, uint64_t from, int32_t level)
{
    cr_graph *g = r->g;
    uint64_t i = v - g->first;
    if (r->level[i] >= 0 && r->level[i] <= level)
        return;
    r->level[i] = level;
    r->parent[i] = (int64_t)from;
    r->relaxations++;
    if (r->nstack == r->stack_cap) {
        r->stack_cap = r->stack_cap ? 2 * r->stack_cap : 1024;
        r->stack = cr_xrealloc(r->stack, r->stack_cap * sizeof *r->stack);
    }
    r->stack[r->nstack++] = i;
}

/* First in, first out: improvements spread breadth-first on each rank, which
 * keeps re-visits rare (a stack would walk depth-first and correct most levels
 * many times). */

static void relax_drain(bfs_run *r)
{
    cr_graph *g = r->g;
    while (r->stack_head < r->nstack) {
        uint64_t i = r->stack[r->stack_head++], u = g->first + i;
        if (r->stack_head == r->nstack)
            r->stack_head = r->nstack = 0; /* empty: start over at the front */
        int32_t next = r->level[i] + 1;
        for (uint64_t e = g->offsets[i]; e < g->offsets[i + 1]; e++) {
            uint64_t w = graph_nbr(g, e);
            int owner = cr_graph_owner(g, w);
            if (owner == g->rank) {
                relax(r, w, u, next);
            } else {
                int64_t m[3] = {(int64_t)w, (int64_t)u, next};
                cr_async(g->comm, owner, r->st->h_relax, m, sizeof m);
            }
        }
    }
}

/* A batch handler: every offer of the batch is applied, then the improvements are
 * spread, so offers that arrived together are compared before any is passed on. */
static void on_relaxes(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    bfs_run *r = ((bfs_state *)user)->run;
    for (size_t k = 0; k < b->count; k++) {
        int64_t m[3];
        memcpy(m, cr_batch_payload(b, k), sizeof m);
        relax(r, (uint64_t)m[0], (uint64_t)m[1], (int32_t)m[2]);
    }
    relax_drain(r);
}

static void search_async(bfs_run *r, uint64_t root)
{
    cr_graph *g = r->g;
    r->relaxations = 0;
    r->nstack = r->stack_head = 0;
    if (root < g->n && cr_graph_owner(g, root) == g->rank) {
        relax(r, root, root, 0);
        relax_drain(r);
    }
    cr_barrier(g->comm);
}

/* ---------------------------------------------------------------- level-synchronous */

/* A remote vertex needs only the first visit this rank sends it: after that it is
 * reached by the next level at the latest, and later visits change nothing. One
 * bit per vertex of the graph remembers which were sent. */
static bool first_visit_to(uint8_t *sent, uint64_t v)
{
    uint8_t bit = (uint8_t)(1u << (v & 7));
    if (sent[v >> 3] & bit)
        return false;
    sent[v >> 3] |= bit;
    return true;
}

/* The combining rule of merged visits: the record already buffered wins. */
static void keep_first(void *dst, const void *src, size_t len, void *user)
{
    (void)dst, (void)src, (void)len, (void)user;
}

/* One top-down level: every frontier vertex visits its neighbours, in place or by
 * message; the barrier ends the level. */
static void top_down_step(bfs_run *r, const uint64_t *frontier, size_t nfrontier,
                          uint8_t *sent, bool merged)
{
    cr_graph *g = r->g;
    for (size_t f = 0; f < nfrontier; f++) {
        uint64_t i = frontier[f], u = g->first + i;
        for (uint64_t e = g->offsets[i]; e < g->offsets[i + 1]; e++) {
            uint64_t v = graph_nbr(g, e);
            if (v - g->first < g->count) { /* mine: no owner to compute (a division) */
                visit(r, v, u);
                continue;
            }
            uint64_t m[2] = {v, u};
            if (merged)
                cr_async(g->comm, cr_block_owner(g->n, g->size, v), r->st->h_visit_merged, m, sizeof m);
            else if (first_visit_to(sent, v)) /* the bitmap first: most visits were sent */
                cr_async(g->comm, cr_block_owner(g->n, g->size, v), r->st->h_visit, m, sizeof m);
        }
    }
    cr_barrier(g->comm);
}

/* Start a search: the root is visited, and the first frontier is the root alone. */
static void start_search(bfs_run *r, uint64_t root)
{
    cr_graph *g = r->g;
    r->nnext = 0;
    if (root < g->n && cr_graph_owner(g, root) == g->rank) {
        r->cur_level = -1;
        visit(r, root, root);
    }
}

/* The next frontier: what the last level reached. It stays valid until the next
 * call, which hands its storage back to next (the run frees both at its end). */
static uint64_t *take_next(bfs_run *r, size_t *n)
{
    uint64_t *frontier = r->next;
    size_t cap = r->next_cap;
    *n = r->nnext;
    r->next = r->spare, r->next_cap = r->spare_cap, r->nnext = 0;
    r->spare = frontier, r->spare_cap = cap;
    return frontier;
}

static int search_levels(bfs_run *r, uint64_t root, bool merged)
{
    cr_graph *g = r->g;
    uint8_t *sent = merged ? NULL : cr_xcalloc(g->n / 8 + 1, 1);
    uint64_t *frontier = NULL;
    size_t nfrontier = 0;
    start_search(r, root);
    int levels = 0;
    for (r->cur_level = 0;; r->cur_level++) {
        frontier = take_next(r, &nfrontier);
        if (sum_over_ranks(g, nfrontier) == 0)
            break;
        levels++;
        top_down_step(r, frontier, nfrontier, sent, merged);
    }
    free(sent);
    return levels;
}

/* ---------------------------------------------------------------- direction-optimizing */

/* Beamer, Asanovic and Patterson, "Direction-Optimizing Breadth-First Search" (SC
 * 2012). A top-down level costs one check per edge out of the frontier; a bottom-up
 * level lets every unvisited vertex scan its own edges for a parent in the frontier
 * and stop at the first, which on a scale-free graph skips most edges once the
 * frontier is large. Each rank owns its vertices' edges (the graph is stored in
 * both directions), so a bottom-up level needs only the frontier as a bitmap on
 * every rank: each rank's segment (its own vertices' bits) is allgathered with the
 * project's cr_allgatherv. The rule of section 4: go bottom-up when the frontier's
 * edges m_f exceed the unvisited vertices' edges m_u / alpha; go back top-down when
 * the frontier has fewer than n / beta vertices. */
typedef struct hybrid {
    uint32_t *todo;    /* after the first bottom-up level: my vertices it left */
    size_t ntodo;      /* unvisited that have edges, in increasing order */
    bool have_todo;
    uint64_t *seg;     /* this rank's frontier bits */
    uint64_t *next_seg; /* what a bottom-up level reached, as bits of mine: the next
                           frontier is a bitmap, not a list (a list of the ~2/3 of the
                           vertices a first bottom-up level finds wrote 8 bytes each) */
    uint64_t next_count, next_edges; /* its vertices and their edges */
    bool next_in_bits; /* the last level was bottom-up: the frontier is next_seg */
    uint64_t *all;     /* every rank's segment, as gathered */
    uint64_t *bits;    /* the whole frontier, n bits */
    size_t *sizes, *offsets; /* allgatherv layout, bytes */
    size_t nbits_words;
} hybrid;

static size_t words_for(uint64_t bits)
{
    return (size_t)((bits + 63) / 64);
}

static void hybrid_init(cr_graph *g, hybrid *h)
{
    h->sizes = cr_xmalloc((size_t)g->size * sizeof *h->sizes);
    h->offsets = cr_xmalloc((size_t)g->size * sizeof *h->offsets);
    size_t total = 0;
    for (int r = 0; r < g->size; r++) {
        uint64_t count = cr_block_first(g->n, g->size, r + 1) - cr_block_first(g->n, g->size, r);
        h->sizes[r] = words_for(count) * sizeof(uint64_t);
        h->offsets[r] = total;
        total += h->sizes[r];
    }
    h->todo = NULL, h->ntodo = 0, h->have_todo = false;
    h->seg = cr_xcalloc(words_for(g->count) + 1, sizeof *h->seg);
    h->next_seg = cr_xcalloc(words_for(g->count) + 1, sizeof *h->next_seg);
    h->next_count = h->next_edges = 0, h->next_in_bits = false;
    h->all = cr_xmalloc(total + sizeof(uint64_t));
    h->nbits_words = words_for(g->n);
    h->bits = cr_xcalloc(h->nbits_words + 1, sizeof *h->bits);
}

static void hybrid_free(hybrid *h)
{
    free(h->todo);
    free(h->seg);
    free(h->next_seg);
    free(h->all);
    free(h->bits);
    free(h->sizes);
    free(h->offsets);
}

/* OR `nbits` bits of src into dst from bit `pos` on (dst has a spare word). */
static void or_bits(uint64_t *dst, uint64_t pos, const uint64_t *src, uint64_t nbits)
{
    unsigned shift = (unsigned)(pos & 63);
    size_t at = (size_t)(pos >> 6);
    for (size_t j = 0; j < words_for(nbits); j++) {
        uint64_t w = src[j];
        if (j == words_for(nbits) - 1 && (nbits & 63))
            w &= (UINT64_C(1) << (nbits & 63)) - 1;
        dst[at + j] |= w << shift;
        if (shift)
            dst[at + j + 1] |= w >> (64 - shift);
    }
}

static bool in_frontier(const hybrid *h, uint64_t v)
{
    return h->bits[v >> 6] >> (v & 63) & 1;
}

/* next_seg empty again, for the level to come. */
static void clear_next_bits(const cr_graph *g, hybrid *h)
{
    memset(h->next_seg, 0, words_for(g->count) * sizeof *h->next_seg);
    h->next_count = h->next_edges = 0;
}

/* My frontier's bits: from the list a top-down level made, or the bits the last
 * bottom-up level set. */
static void frontier_bits(const cr_graph *g, hybrid *h, const uint64_t *frontier, size_t nfrontier)
{
    if (!h->next_in_bits) /* next_seg is clear between levels */
        for (size_t f = 0; f < nfrontier; f++)
            h->next_seg[frontier[f] >> 6] |= UINT64_C(1) << (frontier[f] & 63);
    uint64_t *seg = h->seg;
    h->seg = h->next_seg, h->next_seg = seg;
    clear_next_bits(g, h);
}

/* The bits the last bottom-up level set, as the list a top-down level expands, in the
 * spare array (next may already hold visits of the level after: a rank that is
 * still in the level's reduction handles the visits of ranks already expanding). */
static uint64_t *frontier_list_from_bits(bfs_run *r, hybrid *h, size_t *n)
{
    const cr_graph *g = r->g;
    if (r->spare_cap < h->next_count) {
        r->spare_cap = (size_t)h->next_count;
        r->spare = cr_xrealloc(r->spare, r->spare_cap * sizeof *r->spare);
    }
    size_t k = 0;
    for (size_t w = 0; w < words_for(g->count); w++)
        for (uint64_t bits = h->next_seg[w]; bits; bits &= bits - 1)
            r->spare[k++] = (uint64_t)w * 64 + (uint64_t)__builtin_ctzll(bits);
    clear_next_bits(g, h);
    h->next_in_bits = false;
    *n = k;
    return r->spare;
}

/* Every rank gets the whole frontier as a bitmap. */
static void gather_frontier(cr_graph *g, hybrid *h, const uint64_t *frontier, size_t nfrontier)
{
    frontier_bits(g, h, frontier, nfrontier);
    cr_allgatherv(g->comm, h->seg, h->all, h->sizes, h->offsets, NULL);
    memset(h->bits, 0, (h->nbits_words + 1) * sizeof *h->bits);
    for (int r = 0; r < g->size; r++) {
        uint64_t first = cr_block_first(g->n, g->size, r);
        uint64_t count = cr_block_first(g->n, g->size, r + 1) - first;
        or_bits(h->bits, first, h->all + h->offsets[r] / sizeof(uint64_t), count);
    }
}

/* Unvisited vertex i of mine takes its first neighbour in the frontier as its
 * parent, and its bit in the next frontier; false if it has none. */
static bool find_parent(bfs_run *r, hybrid *h, uint64_t i)
{
    const cr_graph *g = r->g;
    for (uint64_t e = g->offsets[i]; e < g->offsets[i + 1]; e++)
        if (in_frontier(h, graph_nbr(g, e))) {
            r->level[i] = r->cur_level + 1;
            r->parent[i] = (int64_t)graph_nbr(g, e);
            h->next_seg[i >> 6] |= UINT64_C(1) << (i & 63);
            h->next_count++;
            h->next_edges += g->offsets[i + 1] - g->offsets[i];
            return true;
        }
    return false;
}

/* The first bottom-up level scans every vertex of mine, and keeps the ones left
 * unvisited that have edges (a vertex without edges is never reached): the later
 * levels scan only those, and drop the ones visited since. Late in a search on a
 * scale-free graph most vertices are visited, and a level that scanned them all took
 * as long as one with a large frontier. */
static void scan_all(bfs_run *r, hybrid *h)
{
    const cr_graph *g = r->g;
    bool keep = g->count <= UINT32_MAX; /* else every level scans all (4-byte indices) */
    if (keep)
        h->todo = cr_xmalloc((g->count ? g->count : 1) * sizeof *h->todo);
    for (uint64_t i = 0; i < g->count; i++) {
        if (i + GRAPH_PREFETCH_AHEAD < g->count)
            graph_prefetch_list(g, i + GRAPH_PREFETCH_AHEAD);
        if (r->level[i] >= 0 || find_parent(r, h, i))
            continue;
        if (keep && g->offsets[i + 1] > g->offsets[i])
            h->todo[h->ntodo++] = (uint32_t)i;
    }
    h->have_todo = keep;
}

static void scan_todo(bfs_run *r, hybrid *h)
{
    const cr_graph *g = r->g;
    size_t kept = 0;
    for (size_t k = 0; k < h->ntodo; k++) {
        if (k + GRAPH_PREFETCH_AHEAD < h->ntodo)
            graph_prefetch_list(g, h->todo[k + GRAPH_PREFETCH_AHEAD]);
        uint32_t i = h->todo[k];
        if (r->level[i] < 0 && !find_parent(r, h, i))
            h->todo[kept++] = i;
    }
    h->ntodo = kept;
}

/* One bottom-up level: each unvisited vertex of mine takes the first neighbour in the
 * frontier as its parent. No messages. */
static void bottom_up_step(bfs_run *r, hybrid *h, const uint64_t *frontier, size_t nfrontier,
                           cr_bfs_result *out)
{
    cr_graph *g = r->g;
    double t0 = cr_module_now(g->comm);
    gather_frontier(g, h, frontier, nfrontier);
    double t1 = cr_module_now(g->comm);
    out->frontier_seconds += t1 - t0;
    if (h->have_todo)
        scan_todo(r, h);
    else
        scan_all(r, h);
    h->next_in_bits = true;
    out->scan_seconds += cr_module_now(g->comm) - t1;
}

static uint64_t degree_sum(const cr_graph *g, const uint64_t *list, size_t n)
{
    uint64_t m = 0;
    for (size_t k = 0; k < n; k++)
        m += g->offsets[list[k] + 1] - g->offsets[list[k]];
    return m;
}

static bool choose_bottom_up(const cr_bfs_opts *o, bool bottom_up, int level,
                             const uint64_t sums[3], uint64_t n)
{
    switch (o->direction) {
    case CR_BFS_TOP_DOWN: return false;
    case CR_BFS_BOTTOM_UP: return true;
    case CR_BFS_ALTERNATE: return level % 2 == 1;
    default: break;
    }
    double nf = (double)sums[0], mf = (double)sums[1], mu = (double)sums[2];
    if (!bottom_up)
        return mf > mu / o->alpha;
    return !(nf < (double)n / o->beta);
}

static int search_hybrid(bfs_run *r, const cr_bfs_opts *o, uint64_t root, cr_bfs_result *out)
{
    cr_graph *g = r->g;
    hybrid h;
    hybrid_init(g, &h);
    uint8_t *sent = cr_xcalloc(g->n / 8 + 1, 1);
    uint64_t *frontier = NULL;
    size_t nfrontier = 0;
    uint64_t unvisited_edges = g->offsets[g->count];
    start_search(r, root);
    int levels = 0;
    bool bottom_up = false;
    out->bottom_up_levels = 0;
    out->scan_seconds = out->frontier_seconds = out->top_down_seconds = 0;
    for (r->cur_level = 0;; r->cur_level++) {
        uint64_t mf;
        if (h.next_in_bits) {
            nfrontier = (size_t)h.next_count, mf = h.next_edges;
        } else {
            frontier = take_next(r, &nfrontier);
            mf = degree_sum(g, frontier, nfrontier);
        }
        unvisited_edges -= mf; /* the frontier was reached by the last level */
        uint64_t mine[3] = {nfrontier, mf, unvisited_edges}, sums[3];
        cr_allreduce(g->comm, mine, sums, 3, CR_UINT64, CR_OP_SUM, NULL);
        if (sums[0] == 0)
            break;
        levels++;
        bottom_up = choose_bottom_up(o, bottom_up, r->cur_level, sums, g->n);
        if (bottom_up) {
            bottom_up_step(r, &h, frontier, nfrontier, out);
            out->bottom_up_levels++;
        } else {
            double t0 = cr_module_now(g->comm);
            if (h.next_in_bits)
                frontier = frontier_list_from_bits(r, &h, &nfrontier);
            top_down_step(r, frontier, nfrontier, sent, false);
            out->top_down_seconds += cr_module_now(g->comm) - t0;
        }
    }
    free(sent);
    hybrid_free(&h);
    return levels;
}

void cr_graph_bfs(cr_graph *g, uint64_t root, cr_bfs_result *out)
{
    cr_graph_bfs_with(g, CR_BFS_LEVELS, root, out);
}

struct bfs_run;
static const bfs_state *start_run(bfs_run *r, cr_graph *g);
static void end_run(bfs_run *r);

void cr_graph_bfs_opts_init(cr_bfs_opts *o)
{
    *o = (cr_bfs_opts){.algorithm = CR_BFS_LEVELS, .direction = CR_BFS_AUTO, .alpha = 14,
                       .beta = 24};
}

void cr_graph_bfs_with(cr_graph *g, cr_bfs_algorithm algorithm, uint64_t root, cr_bfs_result *out)
{
    cr_bfs_opts o;
    cr_graph_bfs_opts_init(&o);
    o.algorithm = algorithm;
    cr_graph_bfs_run(g, &o, root, out);
}

void cr_graph_bfs_run(cr_graph *g, const cr_bfs_opts *opts, uint64_t root, cr_bfs_result *out)
{
    cr_bfs_opts defaults;
    cr_graph_bfs_opts_init(&defaults);
    const cr_bfs_opts *o = opts ? opts : &defaults;
    cr_bfs_algorithm algorithm = o->algorithm;
    if (algorithm != CR_BFS_LEVELS && algorithm != CR_BFS_ASYNC &&
        algorithm != CR_BFS_LEVELS_DEDUP && algorithm != CR_BFS_HYBRID)
        cr_fatal("cr_graph_bfs_run: algorithm %d is not valid", (int)algorithm);
    if (algorithm == CR_BFS_HYBRID && (!(o->alpha > 0) || !(o->beta > 0) ||
                                       (unsigned)o->direction > CR_BFS_ALTERNATE))
        cr_fatal("cr_graph_bfs_run: hybrid needs alpha > 0, beta > 0 and a valid direction "
                 "(alpha %g, beta %g, direction %d)", o->alpha, o->beta, (int)o->direction);
    memset(out, 0, sizeof *out);
    size_t n = g->count ? g->count : 1;
    out->parent = cr_xmalloc_large(n, sizeof *out->parent);
    out->level = cr_xmalloc_large(n, sizeof *out->level);
    bfs_run run = {.parent = out->parent, .level = out->level}, *r = &run;
    start_run(r, g);
    align_ranks(g);
    double t0 = cr_module_now(g->comm);
    for (uint64_t i = 0; i < g->count; i++) {
        r->parent[i] = -1;
        r->level[i] = -1;
    }
    int levels = 0;
    uint64_t visits;
    if (algorithm == CR_BFS_HYBRID) {
        levels = search_hybrid(r, o, root, out);
    } else if (algorithm != CR_BFS_ASYNC) {
        levels = search_levels(r, root, algorithm == CR_BFS_LEVELS_DEDUP);
    } else {
        search_async(r, root);
    }
    double mine = cr_module_now(g->comm) - t0;
    out->seconds = slowest(g, mine);
    uint64_t reached = 0, ends = 0;
    for (uint64_t i = 0; i < g->count; i++)
        if (r->level[i] >= 0) {
            reached++;
            ends += g->offsets[i + 1] - g->offsets[i];
        }
    uint64_t loops = 0; /* Graph500 counts the component's edges without self-loops */
    for (size_t k = 0; k < g->nloops; k++)
        loops += r->level[g->loops[k].local] >= 0 ? g->loops[k].count : 0;
    out->reached = sum_over_ranks(g, reached);
    /* both halves of every edge are stored, both ends of a loop at its vertex */
    out->edges = sum_over_ranks(g, ends) / 2 - sum_over_ranks(g, loops);
    visits = algorithm == CR_BFS_ASYNC ? sum_over_ranks(g, r->relaxations) : out->reached;
    out->visits = visits;
    if (algorithm == CR_BFS_ASYNC) {
        int32_t deepest = -1;
        for (uint64_t i = 0; i < g->count; i++)
            deepest = r->level[i] > deepest ? r->level[i] : deepest;
        /* levels = deepest + 1, carried as an unsigned maximum */
        levels = (int)max_over_ranks(g, (uint64_t)(deepest + 1));
    }
    out->levels = levels;
    end_run(r);
}

void cr_graph_bfs_result_free(cr_bfs_result *r)
{
    free(r->parent);
    free(r->level);
    memset(r, 0, sizeof *r);
}

/* ---------------------------------------------------------------- validation */

__attribute__((format(printf, 2, 3))) static void violation(bfs_run *r, const char *fmt, ...)
{
    if (r->errors++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->why, sizeof r->why, fmt, ap);
        va_end(ap);
    }
}

/* {parent p, child v, level of v}, at p's owner */
static void on_check_parent(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm, (void)src, (void)len;
    bfs_run *r = ((bfs_state *)user)->run;
    int64_t m[3];
    memcpy(m, payload, sizeof m);
    int32_t lp = r->level[(uint64_t)m[0] - r->g->first];
    if (lp != m[2] - 1)
        violation(r, "vertex %" PRId64 " has level %" PRId64 " but its parent %" PRId64
                     " has level %d", m[1], m[2], m[0], lp);
}

/* {v, u, level of u} for an input edge (u, v), at v's owner */
static void on_check_edge(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm, (void)src, (void)len;
    bfs_run *r = ((bfs_state *)user)->run;
    int64_t m[3];
    memcpy(m, payload, sizeof m);
    int32_t lv = r->level[(uint64_t)m[0] - r->g->first], lu = (int32_t)m[2];
    if ((lv < 0) != (lu < 0))
        violation(r, "edge (%" PRId64 ", %" PRId64 ") joins a reached and an unreached vertex "
                     "(levels %d and %d): the tree does not span the component", m[1], m[0], lu, lv);
    else if (lv >= 0 && (lv - lu > 1 || lu - lv > 1))
        violation(r, "edge (%" PRId64 ", %" PRId64 ") joins levels %d and %d", m[1], m[0], lu, lv);
}

static const cr_module_type bfs_module = {.name = "graph bfs", .destroy = cr_module_state_free};

/* The comm's handlers, registered by the first search or validation on it
 * (collective); the run is set first, for a faster rank's record. */
static const bfs_state *start_run(bfs_run *r, cr_graph *g)
{
    r->g = g;
    bool fresh;
    bfs_state *s = cr_module_state_or_new(g->comm, &bfs_module, sizeof *s, &fresh);
    s->run = r;
    r->st = s;
    if (!fresh)
        return s;
    s->h_visit = cr_register_type(g->comm, &(cr_handler_type){.batch = on_visits}, s);
    /* Visits {v, parent} keyed on v: any parent of the level is a right one. */
    s->h_visit_merged = cr_register_type(
        g->comm, &(cr_handler_type){.batch = on_visits, .key_len = 8, .combine = keep_first}, s);
    s->h_relax = cr_register_type(g->comm, &(cr_handler_type){.batch = on_relaxes}, s);
    s->h_check_parent = cr_register(g->comm, on_check_parent, s);
    s->h_check_edge = cr_register(g->comm, on_check_edge, s);
    return s;
}

/* The run is over: no handler of it runs any more (its last barrier has returned). */
static void end_run(bfs_run *r)
{
    ((bfs_state *)r->st)->run = NULL;
    free(r->next);
    free(r->spare);
    free(r->stack);
}

static bool is_neighbour(const cr_graph *g, uint64_t i, uint64_t v)
{
    for (uint64_t e = g->offsets[i]; e < g->offsets[i + 1]; e++)
        if (graph_nbr(g, e) == v)
            return true;
    return false;
}

/* The checks one vertex can make alone, then the messages for the others. */
static void check_vertex(bfs_run *r, uint64_t root, uint64_t i)
{
    cr_graph *g = r->g;
    uint64_t v = g->first + i;
    int64_t p = r->parent[i];
    int32_t l = r->level[i];
    if (v == root) {
        if (p != (int64_t)root || l != 0)
            violation(r, "the root %" PRIu64 " has parent %" PRId64 " and level %d, expected "
                         "itself and 0", root, p, l);
    } else if ((p < 0) != (l < 0)) {
        violation(r, "vertex %" PRIu64 " has parent %" PRId64 " but level %d", v, p, l);
    } else if (p >= 0) {
        if ((uint64_t)p >= g->n || (uint64_t)p == v || l < 1)
            violation(r, "vertex %" PRIu64 " has parent %" PRId64 " and level %d", v, p, l);
        else if (!is_neighbour(g, i, (uint64_t)p))
            violation(r, "tree edge (%" PRId64 ", %" PRIu64 ") is not an input edge", p, v);
        else {
            int64_t m[3] = {p, (int64_t)v, l};
            cr_async(g->comm, cr_graph_owner(g, (uint64_t)p), r->st->h_check_parent, m, sizeof m);
        }
    }
    for (uint64_t e = g->offsets[i]; e < g->offsets[i + 1]; e++) {
        uint64_t u = graph_nbr(g, e);
        if (u <= v) /* each undirected edge once; self-loops need no check */
            continue;
        int64_t m[3] = {(int64_t)u, (int64_t)v, l};
        cr_async(g->comm, cr_graph_owner(g, u), r->st->h_check_edge, m, sizeof m);
    }
}

uint64_t cr_graph_bfs_validate(cr_graph *g, uint64_t root, const int64_t *parent, const int32_t *level,
                               char *why, size_t whylen)
{
    bfs_run run = {.parent = (int64_t *)parent, .level = (int32_t *)level}, *r = &run;
    start_run(r, g);
    for (uint64_t i = 0; i < g->count; i++)
        check_vertex(r, root, i);
    cr_barrier(g->comm);
    /* Levels fall by one along every parent pointer down to the root, the only
     * vertex at level 0: so there are no cycles, and every reached vertex is joined
     * to the root. With no edge leaving the reached set, it is the component. */
    uint64_t total = sum_over_ranks(g, r->errors);
    if (why && whylen)
        snprintf(why, whylen, "%s", r->why);
    end_run(r);
    return total;
}
