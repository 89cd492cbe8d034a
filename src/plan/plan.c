/* The static exchange planner: message sharing (two phases) and store-and-forward.
 *
 * Follows Duymuş 2021, docs/references.md. The thesis keeps send-set sizes by
 * hand-written bookkeeping per case (Algorithms 2-4, the four singleton cases); here
 * every decision is the thesis's, but the sizes come from one exact ledger: a table
 * of hops (a, b) with the number of reasons rank a has to send to b. A rank's load
 * is its number of hops with a non-zero count, so every overhead message (a rank
 * forwarding to a partner it had nothing for) is counted, not ignored. */
#include "courier/plan.h"

#include "common/fatal.h"
#include "common/search.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- hop ledger */

/* Open addressing, linear probing; entries are never removed (a count of 0 means
 * the hop is not in use), so no tombstones are needed. */
typedef struct hop_table {
    uint64_t *keys; /* (a << 32 | b) + 1; 0 = empty slot */
    uint32_t *counts;
    uint64_t mask;
    uint64_t used;
} hop_table;

static void hops_init(hop_table *t, uint64_t expected)
{
    uint64_t cap = 64;
    while (cap < 2 * expected + 64)
        cap <<= 1;
    t->keys = cr_xcalloc(cap, sizeof *t->keys);
    t->counts = cr_xcalloc(cap, sizeof *t->counts);
    t->mask = cap - 1;
    t->used = 0;
}

static void hops_free(hop_table *t)
{
    free(t->keys);
    free(t->counts);
}

static uint64_t hop_key(int a, int b)
{
    return ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
}

static uint64_t hop_hash(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return key;
}

static void hops_grow(hop_table *t);

/* The slot of hop (a, b), inserted with count 0 if absent. */
static uint64_t hops_slot(hop_table *t, int a, int b)
{
    if (2 * (t->used + 1) > t->mask + 1)
        hops_grow(t);
    uint64_t key = hop_key(a, b);
    uint64_t i = hop_hash(key) & t->mask;
    while (t->keys[i] != 0 && t->keys[i] != key)
        i = (i + 1) & t->mask;
    if (t->keys[i] == 0) {
        t->keys[i] = key;
        t->used++;
    }
    return i;
}

static uint32_t hops_count(const hop_table *t, int a, int b)
{
    uint64_t key = hop_key(a, b);
    uint64_t i = hop_hash(key) & t->mask;
    while (t->keys[i] != 0) {
        if (t->keys[i] == key)
            return t->counts[i];
        i = (i + 1) & t->mask;
    }
    return 0;
}

static void hops_grow(hop_table *t)
{
    hop_table old = *t;
    hops_init(t, old.mask + 1);
    for (uint64_t i = 0; i <= old.mask; i++) {
        if (old.keys[i] == 0)
            continue;
        uint64_t key = old.keys[i];
        uint64_t j = hop_hash(key) & t->mask;
        while (t->keys[j] != 0)
            j = (j + 1) & t->mask;
        t->keys[j] = key;
        t->counts[j] = old.counts[i];
        t->used++;
    }
    hops_free(&old);
}

/* ---------------------------------------------------------------- the plan */

#define SHARING_MAX_PATH 5 /* src, phase-I relay, two phase-II relays, dest */

struct cr_plan {
    int nranks;
    uint64_t nmsg;
    uint64_t *ptr;      /* the matrix, copied */
    int *dest;
    uint64_t *volume;
    int *src;           /* source rank of each message */
    uint64_t *path_ptr; /* final paths, CSR over messages */
    int *path;
    cr_plan_stats stats[4];
};

/* The planner's working state while it decides. */
typedef struct planner {
    cr_plan *plan;
    hop_table hops;
    uint64_t *load;     /* hops in use per rank */
    int *relay;         /* phase I: the rank that carries message x to dest[x]; src[x] if none */
    uint64_t *col_ptr;  /* the transpose: messages by destination */
    uint64_t *col_msg;
    uint32_t *common;   /* friend search scratch, per rank */
    int *touched;
    uint64_t *pair_a;   /* common_pairs: the two ranks' messages to each common */
    uint64_t *pair_b;   /* destination (as many as the largest send set) */
    uint64_t max_iterations;
} planner;

static void hop_add(planner *pl, int a, int b)
{
    uint64_t i = hops_slot(&pl->hops, a, b);
    if (pl->hops.counts[i]++ == 0)
        pl->load[a]++;
}

static void hop_del(planner *pl, int a, int b)
{
    uint64_t i = hops_slot(&pl->hops, a, b);
    if (pl->hops.counts[i] == 0)
        cr_fatal("plan: hop %d -> %d removed more often than added", a, b);
    if (--pl->hops.counts[i] == 0)
        pl->load[a]--;
}

/* The hops of message x under relay r (r == src: direct). */
static void message_hops(planner *pl, uint64_t x, int r, bool add)
{
    const cr_plan *p = pl->plan;
    void (*op)(planner *, int, int) = add ? hop_add : hop_del;
    if (r == p->src[x]) {
        op(pl, r, p->dest[x]);
    } else {
        op(pl, p->src[x], r);
        op(pl, r, p->dest[x]);
    }
}

static bool originally_sends(const cr_plan *p, int a, int b, uint64_t *x);

/* Give message x the relay r (r == src: direct). A source that now sends to r
 * anyway takes its own message for r back from whoever relays it: the detour would
 * cost a link and save none. */
static void set_relay(planner *pl, uint64_t x, int r)
{
    const cr_plan *p = pl->plan;
    message_hops(pl, x, pl->relay[x], false);
    pl->relay[x] = r;
    message_hops(pl, x, r, true);
    uint64_t y;
    int s = p->src[x];
    if (r != s && originally_sends(p, s, r, &y) && pl->relay[y] != s) {
        message_hops(pl, y, pl->relay[y], false);
        pl->relay[y] = s;
        message_hops(pl, y, s, true);
    }
}

/* The busiest rank (lowest on ties) and, if least is not NULL, the least loaded other
 * rank. */
static int busiest(const planner *pl, int *least)
{
    int mx = 0, mn = -1;
    for (int r = 1; r < pl->plan->nranks; r++)
        if (pl->load[r] > pl->load[mx])
            mx = r;
    if (least) {
        for (int r = 0; r < pl->plan->nranks; r++)
            if (r != mx && (mn < 0 || pl->load[r] < pl->load[mn]))
                mn = r;
        *least = mn;
    }
    return mx;
}

/* ---------------------------------------------------------------- phase I */

/* The rank with the most destinations in common with mx in the initial send sets
 * (thesis 4.2; the sets stay static, 4.3), found through the transpose in
 * O(sum of the in-degrees of mx's destinations). Returns -1 if none shares any. */
static int best_friend(planner *pl, int mx)
{
    const cr_plan *p = pl->plan;
    int ntouched = 0;
    for (uint64_t x = p->ptr[mx]; x < p->ptr[mx + 1]; x++) {
        int d = p->dest[x];
        for (uint64_t k = pl->col_ptr[d]; k < pl->col_ptr[d + 1]; k++) {
            int s = p->src[pl->col_msg[k]];
            if (s == mx)
                continue;
            if (pl->common[s]++ == 0)
                pl->touched[ntouched++] = s;
        }
    }
    int best = -1;
    for (int i = 0; i < ntouched; i++) {
        int s = pl->touched[i];
        if (best < 0 || pl->common[s] > pl->common[best] ||
            (pl->common[s] == pl->common[best] && s < best))
            best = s;
    }
    for (int i = 0; i < ntouched; i++)
        pl->common[pl->touched[i]] = 0;
    return best;
}

/* Move message x to the rank that carries `other` (the partner's message to the
 * same destination), if x's source still carries x itself and nothing else it
 * carries goes to that destination: then the source's hop to it disappears. The
 * second condition is the thesis's group rule (4.3.2, Algorithm 3): a rank never
 * hands over a destination it also serves for its group. */
static bool try_share(planner *pl, uint64_t x, uint64_t other)
{
    const cr_plan *p = pl->plan;
    int s = p->src[x], carrier = pl->relay[other];
    if (pl->relay[x] != s || carrier == s)
        return false;
    if (hops_count(&pl->hops, s, p->dest[x]) != 1)
        return false;
    set_relay(pl, x, carrier);
    return true;
}

/* The common destinations of mx and fr in their initial send sets (thesis 4.3.1:
 * the merge-like walk over two ascending lists, Figure 4.4), as pairs of messages:
 * pl->pair_a[k] is mx's message and pl->pair_b[k] fr's to the k-th. */
static uint64_t common_pairs(planner *pl, int mx, int fr)
{
    const cr_plan *p = pl->plan;
    uint64_t n = 0, i = p->ptr[mx], j = p->ptr[fr];
    while (i < p->ptr[mx + 1] && j < p->ptr[fr + 1]) {
        if (p->dest[i] < p->dest[j]) {
            i++;
        } else if (p->dest[i] > p->dest[j]) {
            j++;
        } else {
            pl->pair_a[n] = i++;
            pl->pair_b[n++] = j++;
        }
    }
    return n;
}

/* The group step of cases 2 to 4 (thesis 4.3.2): where `to`'s message is carried by
 * a third rank of its group and `from` still carries its own, `from` hands its
 * message to that rank, which sends both in one combined message. */
static void share_with_group(planner *pl, const uint64_t *from_msg, const uint64_t *to_msg,
                             uint64_t n, int from, int to)
{
    for (uint64_t k = 0; k < n; k++) {
        int carrier = pl->relay[to_msg[k]];
        if (pl->relay[from_msg[k]] == from && carrier != from && carrier != to)
            try_share(pl, from_msg[k], to_msg[k]);
    }
}

/* Share the common destinations of mx and fr (thesis 4.2 and 4.3.2). First the
 * group steps: mx hands messages to fr's group (cases 2 and 4), then fr to mx's
 * (cases 3 and 4). Then Algorithm 2 on the destinations both still serve
 * themselves, with alpha from their loads as they now are: mx hands over the first
 * alpha, fr the rest, so that both end near equal loads when that is possible
 * (Equation 4.1, 4.2.2) and mx alone gains when it is not (4.2.1). A sharing the
 * group rule refuses (try_share, Algorithm 3) does not count towards alpha. */
static void share_pair(planner *pl, int mx, int fr)
{
    uint64_t n = common_pairs(pl, mx, fr);
    const uint64_t *a = pl->pair_a, *b = pl->pair_b;
    share_with_group(pl, a, b, n, mx, fr);
    share_with_group(pl, b, a, n, fr, mx);
    uint64_t left = 0;
    for (uint64_t k = 0; k < n; k++)
        left += pl->relay[a[k]] == mx && pl->relay[b[k]] == fr;
    uint64_t smax = pl->load[mx], sfr = pl->load[fr];
    uint64_t alpha = sfr + left <= smax ? left : (left + smax - sfr) / 2;
    uint64_t shared = 0;
    for (uint64_t k = 0; k < n; k++) {
        if (pl->relay[a[k]] != mx || pl->relay[b[k]] != fr)
            continue;
        if (shared < alpha ? try_share(pl, a[k], b[k]) : try_share(pl, b[k], a[k]))
            shared++;
    }
}

/* Algorithm 1: pair the busiest rank until its load stops falling. */
static uint64_t phase1(planner *pl)
{
    int prev = -1;
    uint64_t prev_load = 0, it = 0;
    for (; it < pl->max_iterations; it++) {
        int mx = busiest(pl, NULL);
        if (mx == prev && pl->load[mx] == prev_load)
            break;
        prev = mx;
        prev_load = pl->load[mx];
        int fr = best_friend(pl, mx);
        if (fr < 0)
            break;
        share_pair(pl, mx, fr);
    }
    return it;
}

/* ---------------------------------------------------------------- phase II */

/* Phase II works on the links left by phase I ("channels", thesis chapter 5: the
 * new communication matrix). Sharing channel (mx, t) with the least loaded rank mn
 * sends everything it carries along mx -> mn -> t. */
typedef struct channels {
    uint64_t *ptr;  /* CSR by source rank */
    int *dest;
    int *via;       /* -1, or the rank it was shared with */
} channels;

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void channels_build(planner *pl, channels *c)
{
    const cr_plan *p = pl->plan;
    int n = p->nranks;
    c->ptr = cr_xcalloc((size_t)n + 1, sizeof *c->ptr);
    for (int r = 0; r < n; r++)
        c->ptr[r + 1] = c->ptr[r] + pl->load[r];
    uint64_t total = c->ptr[n];
    c->dest = cr_xmalloc((total ? total : 1) * sizeof *c->dest);
    c->via = cr_xmalloc((total ? total : 1) * sizeof *c->via);
    uint64_t *fill = cr_xmalloc(((size_t)n + 1) * sizeof *fill);
    memcpy(fill, c->ptr, ((size_t)n + 1) * sizeof *fill);
    for (uint64_t i = 0; i <= pl->hops.mask; i++) {
        if (pl->hops.keys[i] == 0 || pl->hops.counts[i] == 0)
            continue;
        uint64_t key = pl->hops.keys[i] - 1;
        int a = (int)(key >> 32), b = (int)(uint32_t)key;
        c->dest[fill[a]++] = b;
    }
    free(fill);
    for (int r = 0; r < n; r++)
        qsort(c->dest + c->ptr[r], c->ptr[r + 1] - c->ptr[r], sizeof *c->dest, cmp_int);
}

/* Start phase II afresh: no channel shared, the ledger counting one reason per
 * channel. */
static void phase2_reset(planner *pl, channels *c)
{
    int n = pl->plan->nranks;
    uint64_t total = c->ptr[n];
    for (uint64_t k = 0; k < total; k++)
        c->via[k] = -1;
    hops_free(&pl->hops);
    hops_init(&pl->hops, 2 * total);
    memset(pl->load, 0, (size_t)n * sizeof *pl->load);
    for (int r = 0; r < n; r++)
        for (uint64_t k = c->ptr[r]; k < c->ptr[r + 1]; k++)
            hop_add(pl, r, c->dest[k]);
}

static void channels_free(channels *c)
{
    free(c->ptr);
    free(c->dest);
    free(c->via);
}

/* The channel (a, b), which exists for every hop of a phase-I path. */
static uint64_t channel_find(const channels *c, int a, int b)
{
    uint64_t lo = cr_lower_bound_int(c->dest, c->ptr[a], c->ptr[a + 1], b);
    if (lo == c->ptr[a + 1] || c->dest[lo] != b)
        cr_fatal("plan: no channel %d -> %d after phase I", a, b);
    return lo;
}

/* Algorithm 4: the busiest rank gives alpha = (load(mx) - load(mn)) / 2 of its
 * channels to the least loaded rank. A channel is given at most once, and never
 * when something else (traffic given to mx earlier in this phase) also uses the hop:
 * that is the thesis's rule that a rank does not pass on what was shared with it.
 *
 * With cap > 0 a receiver is filled only up to cap links. Because of the rule above,
 * what a receiver takes it keeps for good: the thesis's equal split makes the first
 * receiver of a hub's channels a new bottleneck at half the hub's load (the thesis's
 * TSOPF_FS_b300_c2 and human_gene_2 rows, 497 -> 124 and 511 -> 114). A cap spreads
 * the hub over several receivers instead. */
static uint64_t phase2(planner *pl, channels *c, uint64_t cap)
{
    int prev = -1;
    uint64_t prev_load = 0, it = 0;
    for (; it < pl->max_iterations && pl->plan->nranks > 1; it++) {
        int mn;
        int mx = busiest(pl, &mn);
        if (mx == prev && pl->load[mx] == prev_load)
            break;
        prev = mx;
        prev_load = pl->load[mx];
        uint64_t alpha = (pl->load[mx] - pl->load[mn]) / 2, shared = 0;
        if (cap > 0) {
            uint64_t room = cap > pl->load[mn] ? cap - pl->load[mn] : 0;
            alpha = alpha < room ? alpha : room;
        }
        for (uint64_t k = c->ptr[mx]; k < c->ptr[mx + 1] && shared < alpha; k++) {
            int t = c->dest[k];
            if (c->via[k] >= 0 || t == mn || hops_count(&pl->hops, mx, t) != 1)
                continue;
            c->via[k] = mn;
            hop_del(pl, mx, t);
            hop_add(pl, mx, mn);
            hop_add(pl, mn, t);
            shared++;
        }
    }
    return it;
}

static uint64_t max_load(const planner *pl)
{
    return pl->load[busiest(pl, NULL)];
}

/* Bisect the smallest cap that phase II can meet (the bottleneck it reaches is at
 * most the cap), starting below plain's bottleneck; keep the best run in c->via.
 * About log2(plain) runs of phase II. Returns the pairings made in all runs. */
static uint64_t phase2_search(planner *pl, channels *c, uint64_t plain)
{
    uint64_t total = c->ptr[pl->plan->nranks], best = plain, iterations = 0;
    int *best_via = cr_xmalloc((total ? total : 1) * sizeof *best_via);
    memcpy(best_via, c->via, total * sizeof *best_via);
    uint64_t lo = 1, hi = plain > 1 ? plain - 1 : 0;
    while (lo <= hi) {
        uint64_t cap = lo + (hi - lo) / 2;
        phase2_reset(pl, c);
        iterations += phase2(pl, c, cap);
        uint64_t got = max_load(pl);
        if (got < best) {
            best = got;
            memcpy(best_via, c->via, total * sizeof *best_via);
        }
        if (got <= cap)
            hi = cap - 1;
        else
            lo = cap + 1;
    }
    memcpy(c->via, best_via, total * sizeof *best_via);
    free(best_via);
    return iterations;
}

/* ---------------------------------------------------------------- paths and stats */

static void paths_reserve(cr_plan *p, uint64_t per_message)
{
    free(p->path_ptr);
    free(p->path);
    p->path_ptr = cr_xcalloc(p->nmsg + 1, sizeof *p->path_ptr);
    p->path = cr_xmalloc((p->nmsg * per_message + 1) * sizeof *p->path);
}

/* Paths from the phase-I relays, each hop expanded through its channel's phase-II
 * partner when c is not NULL. */
static void paths_from_relays(cr_plan *p, const planner *pl, const channels *c)
{
    paths_reserve(p, SHARING_MAX_PATH);
    uint64_t n = 0;
    for (uint64_t x = 0; x < p->nmsg; x++) {
        int hop_ranks[3], nh = 0;
        hop_ranks[nh++] = p->src[x];
        if (pl->relay[x] != p->src[x])
            hop_ranks[nh++] = pl->relay[x];
        hop_ranks[nh++] = p->dest[x];
        p->path[n++] = hop_ranks[0];
        for (int h = 1; h < nh; h++) {
            if (c) {
                int via = c->via[channel_find(c, hop_ranks[h - 1], hop_ranks[h])];
                if (via >= 0)
                    p->path[n++] = via;
            }
            p->path[n++] = hop_ranks[h];
        }
        p->path_ptr[x + 1] = n;
    }
}

static void paths_direct(cr_plan *p)
{
    paths_reserve(p, 2);
    for (uint64_t x = 0; x < p->nmsg; x++) {
        p->path[2 * x] = p->src[x];
        p->path[2 * x + 1] = p->dest[x];
        p->path_ptr[x + 1] = 2 * x + 2;
    }
}

/* Whether a had a message of its own for b, and which (x, if not NULL). */
static bool originally_sends(const cr_plan *p, int a, int b, uint64_t *x)
{
    uint64_t lo = cr_lower_bound_int(p->dest, p->ptr[a], p->ptr[a + 1], b);
    if (x)
        *x = lo;
    return lo < p->ptr[a + 1] && p->dest[lo] == b;
}

/* Count the plan's current paths: links, volumes, overhead. Independent of the
 * ledger the planner decided by, so the two check each other (tests/unit/test_plan.c
 * recounts once more from cr_plan_path). */
static void stats_from_paths(cr_plan *p, cr_plan_stats *st, uint64_t iterations)
{
    int n = p->nranks;
    hop_table links;
    hops_init(&links, p->path_ptr[p->nmsg]);
    uint64_t *msgs = cr_xcalloc((size_t)n, sizeof *msgs);
    uint64_t *vol = cr_xcalloc((size_t)n, sizeof *vol);
    memset(st, 0, sizeof *st);
    for (uint64_t x = 0; x < p->nmsg; x++) {
        uint64_t v = p->volume[x], len = p->path_ptr[x + 1] - p->path_ptr[x];
        if (len - 1 > st->max_hops)
            st->max_hops = len - 1;
        for (uint64_t k = p->path_ptr[x] + 1; k < p->path_ptr[x + 1]; k++) {
            int a = p->path[k - 1], b = p->path[k];
            vol[a] += v;
            uint64_t slot = hops_slot(&links, a, b);
            if (links.counts[slot]++ == 0) {
                msgs[a]++;
                st->links++;
                if (!originally_sends(p, a, b, NULL))
                    st->overhead++;
            }
        }
    }
    uint64_t total_vol = 0;
    for (int r = 0; r < n; r++) {
        if (msgs[r] > st->max_messages) {
            st->max_messages = msgs[r];
            st->bottleneck = r;
        }
        if (vol[r] > st->max_volume)
            st->max_volume = vol[r];
        total_vol += vol[r];
    }
    st->mean_messages = (double)st->links / n;
    st->mean_volume = (double)total_vol / n;
    st->iterations = iterations;
    free(msgs);
    free(vol);
    hops_free(&links);
}

/* ---------------------------------------------------------------- STFW */

static int paths_stfw(cr_plan *p, const cr_route *topology, char *err, size_t errlen)
{
    if (topology->kind != CR_ROUTE_GRID && topology->kind != CR_ROUTE_HYPERCUBE) {
        cr_set_error(err, errlen, "plan: store-and-forward needs a grid or hypercube topology");
        return -1;
    }
    cr_layout *layout = cr_layout_create_blocks(p->nranks, 1);
    if (!layout)
        cr_fatal("plan: out of memory for a layout of %d ranks", p->nranks);
    cr_router *router = cr_router_create(topology, layout, err, errlen);
    if (!router) {
        cr_layout_destroy(layout);
        return -1;
    }
    uint64_t per = (uint64_t)cr_router_max_hops(router) + 1;
    paths_reserve(p, per);
    uint64_t n = 0;
    for (uint64_t x = 0; x < p->nmsg; x++) {
        int at = p->src[x];
        uint64_t start = n;
        p->path[n++] = at;
        while (at != p->dest[x]) {
            at = cr_router_next_hop(router, at, p->dest[x]);
            if (n - start >= per)
                cr_fatal("plan: route longer than its %llu hops", (unsigned long long)per - 1);
            p->path[n++] = at;
        }
        p->path_ptr[x + 1] = n;
    }
    cr_router_destroy(router);
    cr_layout_destroy(layout);
    return 0;
}

/* ---------------------------------------------------------------- create */

void cr_plan_opts_init(cr_plan_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->kind = CR_PLAN_SHARING;
    opts->phases = 2;
    opts->cap_search = true;
    opts->topology.kind = CR_ROUTE_GRID;
}

static int check_matrix(const cr_plan_matrix *m, char *err, size_t errlen)
{
    if (m->nranks < 1) {
        cr_set_error(err, errlen, "plan: %d ranks; need at least 1", m->nranks);
        return -1;
    }
    if (m->ptr[0] != 0) {
        cr_set_error(err, errlen, "plan: the row pointers must start at 0");
        return -1;
    }
    for (int s = 0; s < m->nranks; s++) {
        if (m->ptr[s + 1] < m->ptr[s]) {
            cr_set_error(err, errlen, "plan: the row pointers of rank %d decrease", s);
            return -1;
        }
        for (uint64_t x = m->ptr[s]; x < m->ptr[s + 1]; x++) {
            int d = m->dest[x];
            if (d < 0 || d >= m->nranks || d == s) {
                cr_set_error(err, errlen, "plan: rank %d sends to %d, which is %s", s, d,
                             d == s ? "itself" : "out of range");
                return -1;
            }
            if (x > m->ptr[s] && m->dest[x - 1] >= d) {
                cr_set_error(err, errlen,
                             "plan: the destinations of rank %d are not strictly increasing", s);
                return -1;
            }
        }
    }
    return 0;
}

static cr_plan *plan_copy(const cr_plan_matrix *m)
{
    cr_plan *p = cr_xcalloc(1, sizeof *p);
    int n = m->nranks;
    p->nranks = n;
    p->nmsg = m->ptr[n];
    p->ptr = cr_xmalloc(((size_t)n + 1) * sizeof *p->ptr);
    memcpy(p->ptr, m->ptr, ((size_t)n + 1) * sizeof *p->ptr);
    size_t msz = p->nmsg ? p->nmsg : 1;
    p->dest = cr_xmalloc(msz * sizeof *p->dest);
    p->volume = cr_xmalloc(msz * sizeof *p->volume);
    p->src = cr_xmalloc(msz * sizeof *p->src);
    for (int s = 0; s < n; s++)
        for (uint64_t x = m->ptr[s]; x < m->ptr[s + 1]; x++) {
            p->dest[x] = m->dest[x];
            p->volume[x] = m->volume ? m->volume[x] : 1;
            p->src[x] = s;
        }
    return p;
}

static void planner_init(planner *pl, cr_plan *p, const cr_plan_opts *opts)
{
    int n = p->nranks;
    memset(pl, 0, sizeof *pl);
    pl->plan = p;
    pl->max_iterations = opts->max_iterations ? opts->max_iterations : 16 * ((uint64_t)n + p->nmsg);
    hops_init(&pl->hops, 2 * p->nmsg);
    pl->load = cr_xcalloc((size_t)n, sizeof *pl->load);
    pl->relay = cr_xmalloc((p->nmsg ? p->nmsg : 1) * sizeof *pl->relay);
    for (uint64_t x = 0; x < p->nmsg; x++) {
        pl->relay[x] = p->src[x];
        hop_add(pl, p->src[x], p->dest[x]);
    }
    pl->col_ptr = cr_xcalloc((size_t)n + 1, sizeof *pl->col_ptr);
    for (uint64_t x = 0; x < p->nmsg; x++)
        pl->col_ptr[p->dest[x] + 1]++;
    for (int r = 0; r < n; r++)
        pl->col_ptr[r + 1] += pl->col_ptr[r];
    pl->col_msg = cr_xmalloc((p->nmsg ? p->nmsg : 1) * sizeof *pl->col_msg);
    uint64_t *fill = cr_xmalloc(((size_t)n + 1) * sizeof *fill);
    memcpy(fill, pl->col_ptr, ((size_t)n + 1) * sizeof *fill);
    for (uint64_t x = 0; x < p->nmsg; x++)
        pl->col_msg[fill[p->dest[x]]++] = x;
    free(fill);
    pl->common = cr_xcalloc((size_t)n, sizeof *pl->common);
    pl->touched = cr_xmalloc((size_t)n * sizeof *pl->touched);
    pl->pair_a = cr_xmalloc(((size_t)n + 1) * sizeof *pl->pair_a);
    pl->pair_b = cr_xmalloc(((size_t)n + 1) * sizeof *pl->pair_b);
}

static void planner_free(planner *pl)
{
    hops_free(&pl->hops);
    free(pl->load);
    free(pl->relay);
    free(pl->col_ptr);
    free(pl->col_msg);
    free(pl->common);
    free(pl->touched);
    free(pl->pair_a);
    free(pl->pair_b);
}

static void plan_sharing(cr_plan *p, const cr_plan_opts *opts)
{
    planner pl;
    planner_init(&pl, p, opts);
    uint64_t it1 = phase1(&pl);
    paths_from_relays(p, &pl, NULL);
    stats_from_paths(p, &p->stats[CR_PLAN_PHASE1], it1);
    uint64_t it2 = 0;
    if (opts->phases >= 2) {
        channels c;
        channels_build(&pl, &c);
        phase2_reset(&pl, &c);
        it2 = phase2(&pl, &c, 0);
        paths_from_relays(p, &pl, &c);
        stats_from_paths(p, &p->stats[CR_PLAN_PHASE2_PLAIN], it1 + it2);
        if (opts->cap_search)
            it2 += phase2_search(&pl, &c, p->stats[CR_PLAN_PHASE2_PLAIN].max_messages);
        paths_from_relays(p, &pl, &c);
        channels_free(&c);
    }
    stats_from_paths(p, &p->stats[CR_PLAN_FINAL], it1 + it2);
    if (opts->phases < 2)
        p->stats[CR_PLAN_PHASE2_PLAIN] = p->stats[CR_PLAN_FINAL];
    planner_free(&pl);
}

cr_plan *cr_plan_create(const cr_plan_matrix *m, const cr_plan_opts *opts, char *err,
                        size_t errlen)
{
    cr_plan_opts defaults;
    if (!opts) {
        cr_plan_opts_init(&defaults);
        opts = &defaults;
    }
    if (opts->kind == CR_PLAN_SHARING && opts->phases != 1 && opts->phases != 2) {
        cr_set_error(err, errlen, "plan: %d phases; message sharing has 1 or 2", opts->phases);
        return NULL;
    }
    if (check_matrix(m, err, errlen) != 0)
        return NULL;
    cr_plan *p = plan_copy(m);
    paths_direct(p);
    stats_from_paths(p, &p->stats[CR_PLAN_INITIAL], 0);
    switch (opts->kind) {
    case CR_PLAN_DIRECT:
        p->stats[CR_PLAN_FINAL] = p->stats[CR_PLAN_INITIAL];
        break;
    case CR_PLAN_SHARING:
        plan_sharing(p, opts);
        break;
    case CR_PLAN_STFW:
        if (paths_stfw(p, &opts->topology, err, errlen) != 0) {
            cr_plan_destroy(p);
            return NULL;
        }
        stats_from_paths(p, &p->stats[CR_PLAN_FINAL], 0);
        break;
    default:
        cr_set_error(err, errlen, "plan: unknown plan kind %d", (int)opts->kind);
        cr_plan_destroy(p);
        return NULL;
    }
    if (opts->kind != CR_PLAN_SHARING)
        p->stats[CR_PLAN_PHASE1] = p->stats[CR_PLAN_PHASE2_PLAIN] = p->stats[CR_PLAN_FINAL];
    return p;
}

void cr_plan_destroy(cr_plan *plan)
{
    if (!plan)
        return;
    free(plan->ptr);
    free(plan->dest);
    free(plan->volume);
    free(plan->src);
    free(plan->path_ptr);
    free(plan->path);
    free(plan);
}

void cr_plan_stats_get(const cr_plan *plan, cr_plan_stage stage, cr_plan_stats *out)
{
    if ((int)stage < 0 || stage > CR_PLAN_PHASE2_PLAIN)
        cr_fatal("cr_plan_stats_get: unknown stage %d", (int)stage);
    *out = plan->stats[stage];
}

int cr_plan_ranks(const cr_plan *plan)
{
    return plan->nranks;
}

uint64_t cr_plan_messages(const cr_plan *plan)
{
    return plan->nmsg;
}

int cr_plan_path(const cr_plan *plan, uint64_t x, const int **ranks)
{
    if (x >= plan->nmsg)
        cr_fatal("cr_plan_path: message %llu of %llu", (unsigned long long)x,
                 (unsigned long long)plan->nmsg);
    *ranks = plan->path + plan->path_ptr[x];
    return (int)(plan->path_ptr[x + 1] - plan->path_ptr[x]);
}
