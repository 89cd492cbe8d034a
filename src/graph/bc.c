/* Betweenness centrality from a sample of sources (Brandes, "A faster algorithm for
 * betweenness centrality", J. Math. Sociology 2001; GAP's kernel, Beamer, Asanovic
 * and Patterson, 2015, sums it over its sources the same way).
 *
 * Per source, level by level: a level-synchronous BFS counts the shortest paths,
 * sigma(v) = the sum of sigma(u) over v's neighbours u one level nearer the source.
 * Each frontier vertex sends its count to every neighbour (in place for mine, by a
 * record to the owner for the others; records for one vertex are summed on their
 * way), and a vertex first reached at this level takes the sum, one reached earlier
 * ignores it. Then the levels are walked back from the deepest: delta(v) = the sum
 * over v's neighbours w one level farther of sigma(v)/sigma(w) * (1 + delta(w)), each
 * w sending (1 + delta(w))/sigma(w) to every neighbour, which multiplies by its own
 * count if it lies one level nearer. A level's dependencies are complete before the
 * level above starts (a barrier between levels), which is the order Brandes' stack
 * gives. */
#include "graph/ghosts.h"

#include "common/fatal.h"
#include "courier/mailbox.h"
#include "mailbox/module.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct bc_vertex {
    double sigma;  /* shortest paths from the source */
    double delta;  /* dependency of the source */
    int32_t level; /* -1: not reached */
} bc_vertex;

/* My reached vertices by level, for either path: level d's are
 * order[starts[d] .. starts[d + 1]). order has room for every vertex of mine, each
 * reached at most once per source. */
typedef struct bc_levels {
    uint64_t *order, norder;
    uint64_t *starts, nstarts, scap;
} bc_levels;

static void levels_init(bc_levels *l, uint64_t count)
{
    *l = (bc_levels){.order = cr_xmalloc_large(count + 1, sizeof *l->order)};
}

static void levels_free(bc_levels *l)
{
    free(l->order), free(l->starts);
}

/* The next level starts here (empty so far); levels_reset starts a source. */
static void levels_open(bc_levels *l)
{
    if (l->nstarts == l->scap) {
        l->scap = l->scap ? 2 * l->scap : 64;
        l->starts = cr_xrealloc(l->starts, l->scap * sizeof *l->starts);
    }
    l->starts[l->nstarts++] = l->norder;
}

static void levels_reach(bc_levels *l, uint64_t i)
{
    l->order[l->norder++] = i;
}

static void levels_reset(bc_levels *l)
{
    l->norder = l->nstarts = 0;
}

typedef struct bc_run {
    cr_graph *g;
    const graph_ghosts *gh; /* my vertices' copies elsewhere, the ghosts' edges to mine */
    bc_vertex *v;    /* per local vertex: its level, paths and dependency, together
                        because an edge's visit reads two of them */
    int32_t cur;     /* forward: the frontier's level; backward: the level sending */
    bc_levels lv;
    uint64_t *mark;   /* a bit per local vertex, all clear between levels */
    uint64_t records;
} bc_run;

typedef struct bc_state {
    int h_paths, h_deps;
    bc_run *run;
} bc_state;

/* {a ghost's slot at the receiver, a value}: one record per (vertex, rank). */
typedef struct slot_value {
    uint64_t slot;
    double x;
} slot_value;

/* Each record of b names a ghost slot and a value: `apply` it to every local vertex
 * that has the slot's vertex as a neighbour (the forward paths and the backward
 * dependencies walk the same reverse index). */
static inline void to_local_neighbours(const cr_batch *b, bc_run *r,
                                       void (*apply)(bc_run *, uint64_t, double))
{
    for (size_t k = 0; k < b->count; k++) {
        slot_value m;
        memcpy(&m, cr_batch_payload(b, k), sizeof m);
        for (uint64_t e = r->gh->rev_off[m.slot]; e < r->gh->rev_off[m.slot + 1]; e++)
            apply(r, r->gh->rev_local[e], m.x);
    }
}

/* ---------------------------------------------------------------- forward */

/* u's count `paths` reaches my vertex i from level cur. */
static void add_paths(bc_run *r, uint64_t i, double paths)
{
    if (r->v[i].level < 0) {
        r->v[i].level = r->cur + 1;
        r->v[i].sigma = 0;
        levels_reach(&r->lv, i);
    }
    if (r->v[i].level == r->cur + 1)
        r->v[i].sigma += paths;
}

static void on_paths(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    to_local_neighbours(b, ((bc_state *)user)->run, add_paths);
}

/* Send my vertex u's value to every rank that copies it. */
static void send_to_copies(bc_run *r, int h, uint64_t u, double x)
{
    const graph_ghosts *gh = r->gh;
    for (uint64_t j = gh->sub_off[u]; j < gh->sub_off[u + 1]; j++) {
        slot_value m = {gh->sub[j].slot, x};
        cr_async(r->g->comm, (int)gh->sub[j].rank, h, &m, sizeof m);
        r->records++;
    }
}

/* Ask for the lists of order[j + ahead] (their runs first, further ahead): the
 * vertices of a level lie anywhere in the graph. */
static inline void prefetch_lists(const bc_run *r, uint64_t j, uint64_t to)
{
    const graph_ghosts *gh = r->gh;
    if (!gh->local_runs)
        return;
    if (j + 16 < to) {
        uint64_t u = r->lv.order[j + 16];
        __builtin_prefetch(&gh->local_runs[u]);
        __builtin_prefetch(&r->g->offsets[u]);
    }
    if (j + 4 < to) {
        uint64_t u = r->lv.order[j + 4];
        __builtin_prefetch(graph_ids_addr(r->g->adj, r->g->offsets[u] + gh->local_runs[u].from));
    }
}

/* f(r, v, x) for each neighbour v of my vertex u that is mine (a local index): from
 * the run of u's sorted list, or from the ghosts' split of the lists. */
static inline void each_local(bc_run *r, uint64_t u, void (*f)(bc_run *, uint64_t, double),
                              double x)
{
    const graph_ghosts *gh = r->gh;
    if (gh->local_runs) {
        const cr_graph *g = r->g;
        uint64_t from = g->offsets[u] + gh->local_runs[u].from;
        for (uint32_t k = 0; k < gh->local_runs[u].count; k++)
            f(r, graph_nbr(g, from + k) - g->first, x);
        return;
    }
    for (uint64_t k = gh->local_off[u]; k < gh->local_off[u + 1]; k++)
        f(r, gh->local_col[k], x);
}

/* Each of my level-d vertices' counts to its neighbours: mine in place, the others'
 * through their ranks' copies. */
static void spread_paths(bc_run *r, int h, uint64_t from, uint64_t to)
{
    for (uint64_t j = from; j < to; j++) {
        uint64_t u = r->lv.order[j];
        prefetch_lists(r, j, to);
        each_local(r, u, add_paths, r->v[u].sigma);
        send_to_copies(r, h, u, r->v[u].sigma);
    }
}

/* Put order[from .. to) in increasing order, through the bitmap: a level's vertices
 * are then walked, forward and backward, in the order of their lists in memory,
 * instead of the order their first path reached them in (anywhere). */
static void sort_level(bc_run *r, uint64_t from, uint64_t to)
{
    if (to - from < 2)
        return;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint64_t j = from; j < to; j++) {
        uint64_t i = r->lv.order[j];
        r->mark[i >> 6] |= UINT64_C(1) << (i & 63);
        lo = i < lo ? i : lo, hi = i > hi ? i : hi;
    }
    uint64_t at = from;
    for (uint64_t w = lo >> 6; w <= hi >> 6; w++)
        for (uint64_t bits = r->mark[w]; bits; bits &= bits - 1)
            r->lv.order[at++] = 64 * w + (uint64_t)__builtin_ctzll(bits);
    memset(r->mark + (lo >> 6), 0, ((hi >> 6) - (lo >> 6) + 1) * sizeof *r->mark);
}

/* The BFS from the source counting paths; returns the number of levels. A rank
 * handles a level's records only inside its own calls that follow the barrier
 * ending the level before (the barrier's rule), so cur moves on before any. */
static int32_t count_paths(bc_run *r, const bc_state *s, uint64_t source)
{
    cr_graph *g = r->g;
    for (uint64_t i = 0; i < g->count; i++)
        r->v[i].level = -1, r->v[i].delta = 0;
    levels_reset(&r->lv);
    r->cur = -1;
    levels_open(&r->lv);
    if (source - g->first < g->count)
        add_paths(r, source - g->first, 1);
    r->cur = 0;
    levels_open(&r->lv); /* level d is order[starts[d] .. starts[d + 1]) */
    for (;;) {
        spread_paths(r, s->h_paths, r->lv.starts[r->cur], r->lv.starts[r->cur + 1]);
        cr_barrier(g->comm);
        uint64_t next = r->lv.norder - r->lv.starts[r->cur + 1];
        sort_level(r, r->lv.starts[r->cur + 1], r->lv.norder);
        r->cur++;
        levels_open(&r->lv);
        if (!graph_sum(g->comm, next))
            return r->cur;
    }
}

/* ---------------------------------------------------------------- backward */

/* (1 + delta(w))/sigma(w), summed over w, reaches my vertex i from level cur. */
static void add_dependency(bc_run *r, uint64_t i, double share)
{
    if (r->v[i].level == r->cur - 1)
        r->v[i].delta += r->v[i].sigma * share;
}

static void on_deps(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    to_local_neighbours(b, ((bc_state *)user)->run, add_dependency);
}

static void sum_dependencies(bc_run *r, const bc_state *s, int32_t levels)
{
    cr_graph *g = r->g;
    for (r->cur = levels - 1; r->cur > 0; r->cur--) {
        for (uint64_t j = r->lv.starts[r->cur]; j < r->lv.starts[r->cur + 1]; j++) {
            uint64_t w = r->lv.order[j];
            prefetch_lists(r, j, r->lv.starts[r->cur + 1]);
            double share = (1 + r->v[w].delta) / r->v[w].sigma;
            each_local(r, w, add_dependency, share);
            send_to_copies(r, s->h_deps, w, share);
        }
        cr_barrier(g->comm); /* the level's records are handled; cur moves on */
    }
}

/* ---------------------------------------------------------------- on one node */

/* On a comm whose ranks are one node there are no ghosts and no records, as with
 * GAP's threads: every vertex's level, path count and share of dependency lie in the
 * node's memory (a node segment, module.h), each written by its owner alone but for
 * the levels of the forward push.
 * - Forward, per level: each rank marks every unreached neighbour of its frontier
 *   with the next level (racing writers store the same value, so no atomic update is
 *   needed); after a node barrier each rank gathers its own newly reached vertices,
 *   in increasing order, and pulls each one's path count, the sum over its
 *   neighbours of the previous level. Pushing the counts instead would need an
 *   atomic addition per edge.
 * - Backward, per level from the deepest: each rank pulls its level's dependencies
 *   from the shares (1 + delta(w))/sigma(w) of the neighbours one level farther,
 *   which their owners wrote before the node barrier that ended that level.
 * Each edge is read once forward to push, once to pull the counts and once backward,
 * as in the ghosts' version; what goes is the reverse index (most of the first
 * call's time) and every record. */
typedef struct bc_node {
    cr_graph *g;
    cr_node_segment *seg;
    const uint32_t *adj; /* the graph's lists as 32-bit ids */
    int32_t *level;      /* every vertex's, by id: -1 not reached */
    double *sigma;       /* every vertex's shortest paths, once its level is known */
    double *share;       /* every vertex's (1 + delta)/sigma, once its delta is known */
    bc_levels lv;        /* my reached vertices (local), by level */
} bc_node;

static const cr_module_type node_arrays_module = {.name = "graph bc on one node",
                                                  .destroy = graph_node_array_free};

static size_t node_bytes_per_vertex(void)
{
    return 2 * sizeof(double) + sizeof(int32_t);
}

/* The node's three arrays (all in the first rank's part), or NULL on every rank
 * when the comm spans nodes or its node cannot share memory. */
static cr_node_segment *node_arrays(cr_graph *g)
{
    if (!graph_adj32(g) || g->n > SIZE_MAX / node_bytes_per_vertex())
        return NULL; /* the lists are read as 4-byte ids */
    return graph_node_array(g, &node_arrays_module, g->n * node_bytes_per_vertex());
}

static int32_t level_of(const bc_node *r, uint64_t v)
{
    return __atomic_load_n(&r->level[v], __ATOMIC_RELAXED);
}

/* Every unreached neighbour of my level-d vertices gets level d + 1. */
static void node_push_level(bc_node *r, int32_t d)
{
    const cr_graph *g = r->g;
    for (uint64_t j = r->lv.starts[d]; j < r->lv.starts[d + 1]; j++) {
        uint64_t u = r->lv.order[j];
        for (uint64_t k = g->offsets[u]; k < g->offsets[u + 1]; k++)
            if (level_of(r, r->adj[k]) < 0)
                __atomic_store_n(&r->level[r->adj[k]], d + 1, __ATOMIC_RELAXED);
    }
}

/* My vertices of level d + 1, in order, each with its count of paths pulled from
 * its level-d neighbours; returns how many. */
static uint64_t node_gather_level(bc_node *r, int32_t d)
{
    const cr_graph *g = r->g;
    uint64_t before = r->lv.norder;
    for (uint64_t i = 0; i < g->count; i++) {
        if (level_of(r, g->first + i) != d + 1)
            continue;
        double paths = 0;
        for (uint64_t k = g->offsets[i]; k < g->offsets[i + 1]; k++)
            if (level_of(r, r->adj[k]) == d)
                paths += r->sigma[r->adj[k]];
        r->sigma[g->first + i] = paths;
        levels_reach(&r->lv, i);
    }
    return r->lv.norder - before;
}

/* The forward BFS from the source; returns the number of levels. */
static int32_t node_count_paths(bc_node *r, uint64_t source)
{
    cr_graph *g = r->g;
    for (uint64_t i = 0; i < g->count; i++)
        r->level[g->first + i] = -1;
    levels_reset(&r->lv);
    levels_open(&r->lv);
    cr_module_node_segment_barrier(r->seg); /* no rank sees a level left before */
    if (source - g->first < g->count) {
        r->level[source] = 0, r->sigma[source] = 1;
        levels_reach(&r->lv, source - g->first);
    }
    levels_open(&r->lv); /* level d is order[starts[d] .. starts[d + 1]) */
    for (int32_t d = 0;; d++) {
        node_push_level(r, d);
        cr_module_node_segment_barrier(r->seg); /* level d + 1 is marked */
        uint64_t next = node_gather_level(r, d);
        levels_open(&r->lv);
        /* every count of level d + 1 written before any rank pulls from it */
        if (!graph_sum(g->comm, next))
            return d + 1;
    }
}

/* My level-d vertices' dependencies from their level-(d + 1) neighbours' shares,
 * added to their scores, and their own shares written. */
static void node_pull_dependencies(bc_node *r, int32_t d, double *score)
{
    const cr_graph *g = r->g;
    for (uint64_t j = r->lv.starts[d]; j < r->lv.starts[d + 1]; j++) {
        uint64_t w = r->lv.order[j], id = g->first + w;
        double sum = 0;
        for (uint64_t k = g->offsets[w]; k < g->offsets[w + 1]; k++)
            if (level_of(r, r->adj[k]) == d + 1)
                sum += r->share[r->adj[k]];
        double delta = r->sigma[id] * sum;
        score[w] += delta;
        r->share[id] = (1 + delta) / r->sigma[id];
    }
}

static void node_sum_dependencies(bc_node *r, int32_t levels, double *score)
{
    const cr_graph *g = r->g;
    for (uint64_t j = r->lv.starts[levels - 1]; j < r->lv.starts[levels]; j++) {
        uint64_t id = g->first + r->lv.order[j];
        r->share[id] = 1 / r->sigma[id]; /* the deepest: no dependency */
    }
    for (int32_t d = levels - 2; d > 0; d--) { /* not the source's own dependency */
        cr_module_node_segment_barrier(r->seg); /* level d + 1's shares are written */
        node_pull_dependencies(r, d, score);
    }
    cr_module_node_segment_barrier(r->seg); /* every read done before the next source */
}

static uint64_t bc_on_node(cr_graph *g, cr_node_segment *seg, const uint64_t *sources,
                           size_t nsources, double *score)
{
    double *base = cr_module_node_segment_part(seg, 0);
    bc_node r = {.g = g, .seg = seg, .adj = graph_adj32(g), .sigma = base,
                 .share = base + g->n, .level = (int32_t *)(base + 2 * g->n)};
    levels_init(&r.lv, g->count);
    uint64_t levels = 0;
    for (size_t j = 0; j < nsources; j++) {
        int32_t depth = node_count_paths(&r, sources[j]);
        levels += (uint64_t)depth;
        node_sum_dependencies(&r, depth, score);
    }
    levels_free(&r.lv);
    return levels;
}

/* ---------------------------------------------------------------- the call */

static const cr_module_type bc_module = {.name = "graph bc", .destroy = cr_module_state_free};

static bc_state *state_of(cr_comm *comm, bc_run *run)
{
    bool fresh;
    bc_state *s = cr_module_state_or_new(comm, &bc_module, sizeof *s, &fresh);
    s->run = run;
    if (!fresh)
        return s;
    s->h_paths = cr_register_type(comm, &(cr_handler_type){.batch = on_paths,
                                                            .name = "bc paths"}, s);
    s->h_deps = cr_register_type(comm, &(cr_handler_type){.batch = on_deps,
                                                           .name = "bc dependencies"}, s);
    return s;
}

int cr_graph_bc(cr_graph *g, const uint64_t *sources, size_t nsources, double *score,
                cr_bc_stats *stats, char *err, size_t errlen)
{
    char why[256];
    const char *bad = NULL;
    for (size_t j = 0; j < nsources && !bad; j++)
        if (sources[j] >= g->n)
            snprintf(why, sizeof why, "cr_graph_bc: source %llu is not a vertex (the graph "
                     "has %llu)", (unsigned long long)sources[j], (unsigned long long)g->n),
                bad = why;
    if (graph_agree(g->comm, bad, err, errlen))
        return -1;
    for (uint64_t i = 0; i < g->count; i++)
        score[i] = 0;
    cr_node_segment *seg = node_arrays(g);
    if (seg) {
        uint64_t levels = bc_on_node(g, seg, sources, nsources, score);
        if (stats)
            *stats = (cr_bc_stats){.levels = levels};
        return 0;
    }
    uint64_t n = g->count ? g->count : 1;
    bc_run r = {.g = g, .v = cr_xmalloc_large(n, sizeof *r.v),
                .mark = cr_xcalloc(n / 64 + 1, sizeof *r.mark)};
    levels_init(&r.lv, g->count);
    r.gh = graph_ghosts_reverse_index_of(g);
    bc_state *s = state_of(g->comm, &r);
    graph_sum(g->comm, 0); /* every rank's run is set before any record is sent */
    uint64_t levels = 0;
    for (size_t j = 0; j < nsources; j++) {
        int32_t depth = count_paths(&r, s, sources[j]);
        levels += (uint64_t)depth;
        sum_dependencies(&r, s, depth);
        for (uint64_t i = 0; i < g->count; i++)
            if (g->first + i != sources[j])
                score[i] += r.v[i].delta;
    }
    s->run = NULL;
    if (stats)
        *stats = (cr_bc_stats){.levels = levels, .records = graph_sum(g->comm, r.records)};
    free(r.v), free(r.mark);
    levels_free(&r.lv);
    return 0;
}
