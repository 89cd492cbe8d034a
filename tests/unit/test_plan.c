/* The exchange planner: the thesis's small examples exactly, and the invariants of
 * every plan on random matrices (Duymuş 2021, docs/references.md). */
#include "courier/plan.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* A matrix under construction: dense 0/1 rows, volumes 1 + (s + d) % 3. */
typedef struct dense {
    int n;
    unsigned char *m;
    uint64_t *ptr, *vol;
    int *dest;
} dense;

static void dense_init(dense *d, int n)
{
    d->n = n;
    d->m = calloc((size_t)n * n, 1);
    d->ptr = calloc((size_t)n + 1, sizeof *d->ptr);
    d->dest = malloc(((size_t)n * n + 1) * sizeof *d->dest);
    d->vol = malloc(((size_t)n * n + 1) * sizeof *d->vol);
    assert_non_null(d->m);
    assert_non_null(d->dest);
}

static void dense_set(dense *d, int s, int t)
{
    d->m[(size_t)s * d->n + t] = 1;
}

static cr_plan_matrix dense_csr(dense *d)
{
    uint64_t k = 0;
    for (int s = 0; s < d->n; s++) {
        for (int t = 0; t < d->n; t++)
            if (d->m[(size_t)s * d->n + t]) {
                d->dest[k] = t;
                d->vol[k] = 1 + (uint64_t)(s + t) % 3;
                k++;
            }
        d->ptr[s + 1] = k;
    }
    return (cr_plan_matrix){.nranks = d->n, .ptr = d->ptr, .dest = d->dest, .volume = d->vol};
}

static void dense_free(dense *d)
{
    free(d->m);
    free(d->ptr);
    free(d->dest);
    free(d->vol);
}

static cr_plan *make(const cr_plan_matrix *m, cr_plan_kind kind, int phases, const char *topo)
{
    cr_plan_opts o;
    cr_plan_opts_init(&o);
    o.kind = kind;
    o.phases = phases;
    char err[256] = "";
    if (topo && cr_route_parse(topo, &o.topology, err, sizeof err))
        fail_msg("%s", err);
    cr_plan *p = cr_plan_create(m, &o, err, sizeof err);
    if (!p)
        fail_msg("cr_plan_create: %s", err);
    return p;
}

/* Links of rank s in the final plan, recounted from cr_plan_path. */
static void recount(const cr_plan *p, const cr_plan_matrix *m, uint64_t *links, uint64_t *vol,
                    uint64_t *overhead)
{
    int n = cr_plan_ranks(p);
    unsigned char *seen = calloc((size_t)n * n, 1);
    assert_non_null(seen);
    memset(links, 0, (size_t)n * sizeof *links);
    memset(vol, 0, (size_t)n * sizeof *vol);
    *overhead = 0;
    for (int s = 0; s < n; s++)
        for (uint64_t x = m->ptr[s]; x < m->ptr[s + 1]; x++) {
            const int *path;
            int len = cr_plan_path(p, x, &path);
            /* Delivered exactly once: one path, from its source to its destination. */
            assert_true(len >= 2);
            assert_int_equal(path[0], s);
            assert_int_equal(path[len - 1], m->dest[x]);
            for (int h = 1; h < len; h++) {
                int a = path[h - 1], b = path[h];
                assert_true(a >= 0 && a < n && b >= 0 && b < n && a != b);
                vol[a] += m->volume[x];
                if (!seen[(size_t)a * n + b]) {
                    seen[(size_t)a * n + b] = 1;
                    links[a]++;
                    bool own = false;
                    for (uint64_t y = m->ptr[a]; y < m->ptr[a + 1]; y++)
                        own |= m->dest[y] == b;
                    *overhead += !own;
                }
            }
        }
    free(seen);
}

/* The plan's own statistics equal the recount from its paths. */
static void check_stats(const cr_plan *p, const cr_plan_matrix *m)
{
    int n = m->nranks;
    uint64_t *links = calloc((size_t)n, sizeof *links), *vol = calloc((size_t)n, sizeof *vol);
    uint64_t overhead, total = 0, max = 0, maxvol = 0, totvol = 0;
    recount(p, m, links, vol, &overhead);
    for (int r = 0; r < n; r++) {
        total += links[r];
        totvol += vol[r];
        max = links[r] > max ? links[r] : max;
        maxvol = vol[r] > maxvol ? vol[r] : maxvol;
    }
    cr_plan_stats st;
    cr_plan_stats_get(p, CR_PLAN_FINAL, &st);
    assert_int_equal(st.links, total);
    assert_int_equal(st.max_messages, max);
    assert_int_equal(links[st.bottleneck], max);
    assert_int_equal(st.overhead, overhead);
    assert_int_equal(st.max_volume, maxvol);
    assert_true(st.mean_volume * n > (double)totvol - 0.5 && st.mean_volume * n < (double)totvol + 0.5);
    free(links);
    free(vol);
}

/* After phase I, a message goes through a partner only if its source has no link
 * of its own to the destination: otherwise the detour would cost a message and save
 * none (the group rule, thesis 4.3.2 and Algorithm 3). */
static void check_no_wasted_relay(const cr_plan *p, const cr_plan_matrix *m)
{
    int n = m->nranks;
    unsigned char *link = calloc((size_t)n * n, 1);
    assert_non_null(link);
    for (uint64_t x = 0; x < m->ptr[n]; x++) {
        const int *path;
        int len = cr_plan_path(p, x, &path);
        for (int h = 1; h < len; h++)
            link[(size_t)path[h - 1] * n + path[h]] = 1;
    }
    for (uint64_t x = 0; x < m->ptr[n]; x++) {
        const int *path;
        int len = cr_plan_path(p, x, &path);
        if (len > 2 && link[(size_t)path[0] * n + path[len - 1]])
            fail_msg("message %llu: %d -> %d goes through %d although %d sends to %d anyway",
                     (unsigned long long)x, path[0], path[len - 1], path[1], path[0],
                     path[len - 1]);
    }
    free(link);
}

/* Figure 2.3 (0-based): rank 0 sends to {1, 2, 3}, rank 2 to {3, 4}. Rank 0 gives its
 * message for 3 to rank 2, which sends M(2,3) = {m(0,3), m(2,3)}; both send 2. */
static void figure_2_3(void **state)
{
    (void)state;
    dense d;
    dense_init(&d, 5);
    dense_set(&d, 0, 1);
    dense_set(&d, 0, 2);
    dense_set(&d, 0, 3);
    dense_set(&d, 2, 3);
    dense_set(&d, 2, 4);
    cr_plan_matrix m = dense_csr(&d);
    cr_plan *p = make(&m, CR_PLAN_SHARING, 1, NULL);
    const int *path;
    assert_int_equal(cr_plan_path(p, 0, &path), 2); /* m(0,1) direct */
    assert_int_equal(cr_plan_path(p, 1, &path), 2); /* m(0,2) direct */
    assert_int_equal(cr_plan_path(p, 2, &path), 3); /* m(0,3) through 2 */
    assert_int_equal(path[1], 2);
    cr_plan_stats st, init;
    cr_plan_stats_get(p, CR_PLAN_INITIAL, &init);
    cr_plan_stats_get(p, CR_PLAN_FINAL, &st);
    assert_int_equal(init.max_messages, 3);
    assert_int_equal(st.max_messages, 2);
    assert_int_equal(st.links, 4);
    assert_int_equal(st.overhead, 0);
    check_stats(p, &m);
    cr_plan_destroy(p);
    dense_free(&d);
}

/* Figures 4.1 and 4.2: ranks 0 and 1 both send to ranks 2..7. Each gives the other
 * three of its messages and ends with 4 (three destinations and its partner). */
static void figure_4_1(void **state)
{
    (void)state;
    dense d;
    dense_init(&d, 8);
    for (int t = 2; t < 8; t++) {
        dense_set(&d, 0, t);
        dense_set(&d, 1, t);
    }
    cr_plan_matrix m = dense_csr(&d);
    cr_plan *p = make(&m, CR_PLAN_SHARING, 1, NULL);
    cr_plan_stats st;
    cr_plan_stats_get(p, CR_PLAN_FINAL, &st);
    assert_int_equal(st.max_messages, 4);
    assert_int_equal(st.links, 8);
    assert_int_equal(st.overhead, 2); /* 0 -> 1 and 1 -> 0 */
    for (uint64_t x = 0; x < 12; x++) {
        const int *path;
        int len = cr_plan_path(p, x, &path);
        int s = x < 6 ? 0 : 1, t = 2 + (int)(x % 6);
        /* Rank 0 carries the upper half of the destinations for both, rank 1 the lower. */
        int carrier = t < 5 ? 1 : 0;
        assert_int_equal(len, s == carrier ? 2 : 3);
        assert_int_equal(path[len - 2], carrier);
    }
    check_stats(p, &m);
    cr_plan_destroy(p);
    /* Phase II then spreads the two loads over the idle ranks. */
    p = make(&m, CR_PLAN_SHARING, 2, NULL);
    cr_plan_stats_get(p, CR_PLAN_FINAL, &st);
    assert_true(st.max_messages < 4);
    check_stats(p, &m);
    cr_plan_destroy(p);
    dense_free(&d);
}

/* Equation 4.1 when equal sharing is impossible (4.2.1): rank 0 sends to 10 ranks,
 * rank 1 to 2 of them. Rank 0 gives both and keeps 8 + 1 (its partner). */
static void unequal_sharing(void **state)
{
    (void)state;
    dense d;
    dense_init(&d, 12);
    for (int t = 2; t < 12; t++)
        dense_set(&d, 0, t);
    dense_set(&d, 1, 2);
    dense_set(&d, 1, 3);
    cr_plan_matrix m = dense_csr(&d);
    cr_plan *p = make(&m, CR_PLAN_SHARING, 1, NULL);
    cr_plan_stats st;
    cr_plan_stats_get(p, CR_PLAN_PHASE1, &st);
    assert_int_equal(st.max_messages, 9);
    assert_int_equal(st.bottleneck, 0);
    const int *path;
    assert_int_equal(cr_plan_path(p, 0, &path), 3);
    assert_int_equal(path[1], 1);
    check_stats(p, &m);
    cr_plan_destroy(p);
    dense_free(&d);
}

/* ---- the thesis's cases, worked out by hand (docs/plan.md, "Line by line") ----
 *
 * Each builds a matrix from send sets, runs phase I for a given number of pairings
 * (cr_plan_opts.max_iterations) and checks every message's path and every rank's
 * load against the result derived by hand from the thesis's rules, counted with the
 * planner's exact ledger (a link to a partner counts). */

/* A matrix of n ranks whose first nsets send to the given sets. */
static cr_plan_matrix dense_from_sets(dense *d, int n, const int *const *sets, const int *sizes,
                                      int nsets)
{
    dense_init(d, n);
    for (int s = 0; s < nsets; s++)
        for (int k = 0; k < sizes[s]; k++)
            dense_set(d, s, sets[s][k]);
    return dense_csr(d);
}

static cr_plan *make_limited(const cr_plan_matrix *m, int phases, uint64_t pairings)
{
    cr_plan_opts o;
    cr_plan_opts_init(&o);
    o.phases = phases;
    o.max_iterations = pairings;
    o.cap_search = false;
    char err[256] = "";
    cr_plan *p = cr_plan_create(m, &o, err, sizeof err);
    if (!p)
        fail_msg("cr_plan_create: %s", err);
    return p;
}

/* The path of s's message to t has exactly the ranks want (ending at t). */
static void expect_path(const cr_plan *p, const cr_plan_matrix *m, int s, int t,
                        const int *want, int len)
{
    for (uint64_t x = m->ptr[s]; x < m->ptr[s + 1]; x++) {
        if (m->dest[x] != t)
            continue;
        const int *path;
        int got = cr_plan_path(p, x, &path);
        bool same = got == len;
        for (int h = 0; same && h < len; h++)
            same = path[h] == want[h];
        if (!same) {
            char buf[128] = "";
            for (int h = 0; h < got; h++)
                snprintf(buf + strlen(buf), sizeof buf - strlen(buf), " %d", path[h]);
            fail_msg("message %d -> %d took path%s", s, t, buf);
        }
        return;
    }
    fail_msg("rank %d has no message for %d", s, t);
}

#define PATH(p, m, ...)                                                          \
    do {                                                                         \
        const int want_[] = {__VA_ARGS__};                                       \
        int n_ = (int)(sizeof want_ / sizeof want_[0]);                          \
        expect_path(p, m, want_[0], want_[n_ - 1], want_, n_);                   \
    } while (0)

static void expect_loads(const cr_plan *p, const cr_plan_matrix *m, const uint64_t *want)
{
    int n = m->nranks;
    uint64_t links[32], vol[32], overhead;
    assert_true(n <= 32);
    recount(p, m, links, vol, &overhead);
    for (int r = 0; r < n; r++)
        if (links[r] != want[r])
            fail_msg("rank %d sends %llu messages; by hand %llu", r,
                     (unsigned long long)links[r], (unsigned long long)want[r]);
    check_stats(p, m);
}

/* Case 1 with equal sharing possible and odd (4.2.2, Equation 4.1): 0 sends to
 * {2..9}, 1 to {0, 5..9}; C = {5..9}, alpha = (5 + 8 - 6) / 2 = 3. Rank 0 hands 5, 6
 * and 7 to 1, rank 1 hands 8 and 9 to 0: 0 ends at 8 - 3 + 1 (its link to 1) = 6,
 * rank 1 at 6 - 2 = 4 (it sent to 0 already). The second pairing finds nothing left
 * to share, and the third sees the same busiest rank with the same load and stops
 * (Algorithm 1, line 3). */
static void case1_equal_odd(void **state)
{
    (void)state;
    static const int s0[] = {2, 3, 4, 5, 6, 7, 8, 9}, s1[] = {0, 5, 6, 7, 8, 9};
    const int *sets[] = {s0, s1};
    const int sizes[] = {8, 6};
    dense d;
    cr_plan_matrix m = dense_from_sets(&d, 10, sets, sizes, 2);
    cr_plan *p = make_limited(&m, 1, 0);
    PATH(p, &m, 0, 1, 5);
    PATH(p, &m, 0, 1, 7);
    PATH(p, &m, 0, 4);
    PATH(p, &m, 1, 0, 8);
    PATH(p, &m, 1, 0, 9);
    PATH(p, &m, 1, 5);
    const uint64_t want[10] = {6, 4};
    expect_loads(p, &m, want);
    cr_plan_stats st;
    cr_plan_stats_get(p, CR_PLAN_PHASE1, &st);
    assert_int_equal(st.iterations, 2);
    cr_plan_destroy(p);
    dense_free(&d);
}

/* Case 2, a singleton max with a non-singleton friend (4.3.2): 1 -> {3..9},
 * 2 -> {4..9}, 0 -> {3..7}. Pairing 1: 1 (7) with 2 (6 in common), alpha = 3: 1 hands
 * 4, 5, 6 to 2 and 2 hands 7, 8, 9 to 1; loads 5, 5, 4 for 0, 1, 2. Pairing 2: 0 (5,
 * the lowest of the busiest) with 1 (5 in common, against 4 with 2). Group step:
 * 1's messages to 4, 5, 6 travel with 2, so 0 hands its own to 2 (its load 5 - 3 +
 * 1 = 3). Then Algorithm 2 on what both still serve, {3, 7}: alpha = (2 + 3 - 5) / 2
 * = 0, so 1 hands over: its message to 3 goes with 0, but its link to 7 also carries
 * 2's message, and the group rule (Algorithm 3) keeps it. Loads 3, 5, 4. */
static void case2_singleton_to_group(void **state)
{
    (void)state;
    static const int s0[] = {3, 4, 5, 6, 7}, s1[] = {3, 4, 5, 6, 7, 8, 9},
                     s2[] = {4, 5, 6, 7, 8, 9};
    const int *sets[] = {s0, s1, s2};
    const int sizes[] = {5, 7, 6};
    dense d;
    cr_plan_matrix m = dense_from_sets(&d, 10, sets, sizes, 3);
    cr_plan *p = make_limited(&m, 1, 2);
    for (int t = 4; t <= 6; t++) {
        PATH(p, &m, 0, 2, t);
        PATH(p, &m, 1, 2, t);
        PATH(p, &m, 2, t);
    }
    PATH(p, &m, 0, 3);
    PATH(p, &m, 0, 7);
    PATH(p, &m, 1, 0, 3);
    PATH(p, &m, 1, 7);
    PATH(p, &m, 2, 1, 7);
    PATH(p, &m, 2, 1, 9);
    const uint64_t want[10] = {3, 5, 4};
    expect_loads(p, &m, want);
    cr_plan_destroy(p);
    dense_free(&d);
}

/* Case 3, a non-singleton max with a singleton friend: 2 -> {3..10},
 * 1 -> {3, 4, 5, 11..14}, 0 -> {2, 5, 11..14}. Pairing 1: 2 (8) with 1 (3 in common),
 * alpha = (3 + 8 - 7) / 2 = 2: 2 hands 3 and 4 to 1, 1 hands 5 to 2; loads 6, 7, 7.
 * Pairing 2: 1 (7, the lowest of the busiest) with 0 (5 in common). Group step: 1's
 * message to 5 travels with 2, so 0 hands its own to 2, which it sends to anyway
 * (0: 6 - 1 = 5). Then Algorithm 2 on {11..14}: alpha = (4 + 7 - 5) / 2 = 3: 1 hands
 * 11, 12, 13 to 0 (1: 7 - 3 + 1 = 5) and 0 hands 14 to 1 (0: 5 - 1 + 1 = 5). */
static void case3_group_to_singleton(void **state)
{
    (void)state;
    static const int s0[] = {2, 5, 11, 12, 13, 14}, s1[] = {3, 4, 5, 11, 12, 13, 14},
                     s2[] = {3, 4, 5, 6, 7, 8, 9, 10};
    const int *sets[] = {s0, s1, s2};
    const int sizes[] = {6, 7, 8};
    dense d;
    cr_plan_matrix m = dense_from_sets(&d, 15, sets, sizes, 3);
    cr_plan *p = make_limited(&m, 1, 2);
    PATH(p, &m, 2, 1, 3);
    PATH(p, &m, 2, 1, 4);
    PATH(p, &m, 1, 2, 5);
    PATH(p, &m, 0, 2, 5);
    for (int t = 11; t <= 13; t++)
        PATH(p, &m, 1, 0, t);
    PATH(p, &m, 0, 1, 14);
    PATH(p, &m, 1, 14);
    const uint64_t want[15] = {5, 5, 7};
    expect_loads(p, &m, want);
    cr_plan_destroy(p);
    dense_free(&d);
}

/* Case 4, both non-singleton: 0 -> {4..12, 15}, 1 -> {4..10}, 2 -> {3, 13..20},
 * 3 -> {7..11, 13..16}. Pairing 1: 0 (10) with 1 (7 in common), alpha = 5: 0 hands
 * 4..8 to 1, 1 hands 9, 10 to 0; loads 6, 6, 9, 9. Pairing 2: 2 (9) with 3 ({13..16}),
 * alpha = 2: 2 hands 13, 14 to 3, to which it sends anyway (2: 9 - 2 = 7), and 3 hands
 * 15, 16 to 2 (3: 9 - 2 + 1 = 8). Pairing 3: 3 (8) with 0 (6 in common). Group steps:
 * 0's messages to 7 and 8 travel with 1, so 3 hands its own to 1 (3: 8 - 2 + 1 = 7);
 * 3's message to 15 travels with 2, so 0 hands its own to 2 (0: 6 - 1 + 1 = 6). Then
 * Algorithm 2 on {9, 10, 11}: alpha = (3 + 7 - 6) / 2 = 2: 3 hands 9 and 10 to 0
 * (3: 7 - 2 + 1 = 6), 0 hands 11 to 3 (0: 6 - 1 + 1 = 6). Loads 6, 6, 7, 6. */
static void case4_group_to_group(void **state)
{
    (void)state;
    static const int s0[] = {4, 5, 6, 7, 8, 9, 10, 11, 12, 15}, s1[] = {4, 5, 6, 7, 8, 9, 10},
                     s2[] = {3, 13, 14, 15, 16, 17, 18, 19, 20},
                     s3[] = {7, 8, 9, 10, 11, 13, 14, 15, 16};
    const int *sets[] = {s0, s1, s2, s3};
    const int sizes[] = {10, 7, 9, 9};
    dense d;
    cr_plan_matrix m = dense_from_sets(&d, 21, sets, sizes, 4);
    cr_plan *p = make_limited(&m, 1, 3);
    PATH(p, &m, 0, 1, 4);
    PATH(p, &m, 0, 1, 8);
    PATH(p, &m, 1, 0, 9);
    PATH(p, &m, 2, 3, 13);
    PATH(p, &m, 3, 2, 16);
    PATH(p, &m, 3, 1, 7);
    PATH(p, &m, 3, 1, 8);
    PATH(p, &m, 0, 2, 15);
    PATH(p, &m, 3, 0, 9);
    PATH(p, &m, 3, 0, 10);
    PATH(p, &m, 0, 3, 11);
    PATH(p, &m, 0, 12);
    const uint64_t want[21] = {6, 6, 7, 6};
    expect_loads(p, &m, want);
    cr_plan_destroy(p);
    dense_free(&d);
}

/* Phase II's alpha (chapter 5, Algorithm 4): 0 sends to {1..7} and nobody shares a
 * destination, so phase I does nothing. Pairing 1: 0 (7) with 1 (0), alpha = 3: the
 * channels to 2, 3, 4 go through 1 (0 sends to 1 anyway: 7 - 3 = 4). Pairing 2: with
 * 2, alpha = 2: the channel to 1 now also carries what 0 gave 1, so it stays; 5 and
 * 6 go through 2 (4 - 2 + 1 = 3). Pairing 3: with 3, alpha = 1: 7 goes through 3
 * (3 - 1 + 1 = 3). Pairing 4 sees 0 at 3 again and stops. A phase II that gave all
 * it could at once would leave rank 1 with 6 links it has no channel to share. */
static void phase2_alpha(void **state)
{
    (void)state;
    static const int s0[] = {1, 2, 3, 4, 5, 6, 7};
    const int *sets[] = {s0};
    const int sizes[] = {7};
    dense d;
    cr_plan_matrix m = dense_from_sets(&d, 8, sets, sizes, 1);
    cr_plan *p = make_limited(&m, 2, 0);
    PATH(p, &m, 0, 1);
    for (int t = 2; t <= 4; t++)
        PATH(p, &m, 0, 1, t);
    PATH(p, &m, 0, 2, 5);
    PATH(p, &m, 0, 2, 6);
    PATH(p, &m, 0, 3, 7);
    const uint64_t want[8] = {3, 3, 2, 1};
    expect_loads(p, &m, want);
    cr_plan_stats st;
    cr_plan_stats_get(p, CR_PLAN_FINAL, &st);
    assert_int_equal(st.max_messages, 3);
    cr_plan_destroy(p);
    dense_free(&d);
}

/* All-to-all on 16 ranks under store-and-forward: the hypercube sends log2(16) = 4
 * links per rank, the 4x4 grid 3 + 3. */
static void stfw_all_to_all(void **state)
{
    (void)state;
    dense d;
    dense_init(&d, 16);
    for (int s = 0; s < 16; s++)
        for (int t = 0; t < 16; t++)
            if (s != t)
                dense_set(&d, s, t);
    cr_plan_matrix m = dense_csr(&d);
    const char *topo[] = {"hypercube", "grid:4x4"};
    uint64_t want[] = {4, 6};
    for (int i = 0; i < 2; i++) {
        cr_plan *p = make(&m, CR_PLAN_STFW, 2, topo[i]);
        cr_plan_stats st;
        cr_plan_stats_get(p, CR_PLAN_FINAL, &st);
        assert_int_equal(st.max_messages, want[i]);
        assert_int_equal(st.links, 16 * want[i]);
        check_stats(p, &m);
        cr_plan_destroy(p);
    }
    dense_free(&d);
}

static uint64_t splits_seen;

/* The schedule carries every hop of every message exactly once, in a unit of the
 * hop's two ranks, after the unit bringing the previous hop; units are the plan's
 * links plus the counted splits. */
static void check_schedule(const cr_plan *p)
{
    cr_plan_schedule *s = cr_plan_schedule_create(p);
    const cr_plan_unit *units;
    uint64_t nu = cr_plan_schedule_units(s, &units);
    const cr_plan_segment *seg = cr_plan_schedule_segments(s);
    uint64_t nmsg = cr_plan_messages(p), nseg = 0;
    uint64_t *base = calloc(nmsg + 1, sizeof *base);
    for (uint64_t x = 0; x < nmsg; x++) {
        const int *path;
        base[x + 1] = base[x] + (uint64_t)cr_plan_path(p, x, &path) - 1;
    }
    nseg = base[nmsg];
    uint64_t *at = malloc((nseg + 1) * sizeof *at);
    for (uint64_t k = 0; k < nseg; k++)
        at[k] = UINT64_MAX;
    uint64_t covered = 0;
    for (uint64_t u = 0; u < nu; u++) {
        for (uint64_t i = units[u].first; i < units[u].first + units[u].count; i++) {
            const int *path;
            int len = cr_plan_path(p, seg[i].message, &path);
            assert_true(seg[i].hop >= 0 && seg[i].hop + 1 < len);
            assert_int_equal(path[seg[i].hop], units[u].from);
            assert_int_equal(path[seg[i].hop + 1], units[u].to);
            uint64_t k = base[seg[i].message] + (uint64_t)seg[i].hop;
            assert_true(at[k] == UINT64_MAX); /* once */
            at[k] = u;
            covered++;
            if (seg[i].hop > 0) {
                uint64_t prev = at[k - 1];
                if (prev == UINT64_MAX || prev >= u)
                    fail_msg("unit %llu forwards message %llu hop %d before it arrives",
                             (unsigned long long)u, (unsigned long long)seg[i].message,
                             seg[i].hop);
            }
        }
    }
    assert_int_equal(covered, nseg);
    cr_plan_stats st;
    cr_plan_stats_get(p, CR_PLAN_FINAL, &st);
    assert_int_equal(nu, st.links + cr_plan_schedule_splits(s));
    splits_seen += cr_plan_schedule_splits(s);
    free(base);
    free(at);
    cr_plan_schedule_destroy(s);
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Random matrices, P = 1 .. 64, several densities and a skewed variant where a few
 * ranks send to almost everyone: every plan delivers every message once, its counts
 * equal the recount, and neither phase raises the bottleneck. */
static void random_invariants(void **state)
{
    (void)state;
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    for (int n = 1; n <= 64; n += (n < 10 ? 1 : 9)) {
        for (int density = 1; density <= 4; density++) {
            dense d;
            dense_init(&d, n);
            for (int s = 0; s < n; s++) {
                bool hot = rng_next(&seed) % 8 == 0;
                for (int t = 0; t < n; t++)
                    if (s != t && (hot ? rng_next(&seed) % 8 != 0
                                       : rng_next(&seed) % 10 < (uint64_t)density))
                        dense_set(&d, s, t);
            }
            cr_plan_matrix m = dense_csr(&d);
            cr_plan *p = make(&m, CR_PLAN_SHARING, 1, NULL);
            check_stats(p, &m);
            check_no_wasted_relay(p, &m);
            cr_plan_destroy(p);
            p = make(&m, CR_PLAN_SHARING, 2, NULL);
            check_stats(p, &m);
            check_schedule(p);
            cr_plan_stats init, one, fin;
            cr_plan_stats_get(p, CR_PLAN_INITIAL, &init);
            cr_plan_stats_get(p, CR_PLAN_PHASE1, &one);
            cr_plan_stats_get(p, CR_PLAN_FINAL, &fin);
            assert_true(one.max_messages <= init.max_messages);
            assert_true(fin.max_messages <= one.max_messages);
            cr_plan_stats plain;
            cr_plan_stats_get(p, CR_PLAN_PHASE2_PLAIN, &plain);
            assert_true(plain.max_messages <= one.max_messages);
            assert_true(fin.max_messages <= plain.max_messages); /* the cap search keeps the best */
            assert_true(fin.max_hops <= 4);
            assert_int_equal(init.links, m.ptr[n]);
            cr_plan_destroy(p);
            p = make(&m, CR_PLAN_DIRECT, 2, NULL);
            check_stats(p, &m);
            cr_plan_stats_get(p, CR_PLAN_FINAL, &fin);
            assert_int_equal(fin.max_messages, init.max_messages);
            cr_plan_destroy(p);
            p = make(&m, CR_PLAN_STFW, 2, "hypercube");
            check_stats(p, &m);
            check_schedule(p);
            cr_plan_destroy(p);
            p = make(&m, CR_PLAN_STFW, 2, "grid");
            check_stats(p, &m);
            cr_plan_destroy(p);
            dense_free(&d);
        }
    }
    print_message("schedules: %llu units split to break dependency cycles\n",
                  (unsigned long long)splits_seen);
}

/* The phase-II rule that a rank never passes on what was shared with it (thesis
 * chapter 5, transferredMsg). Without it a rank hands over a channel whose hop it
 * still needs, and pays a link to the partner for nothing: on these 40 matrices
 * (hub ranks among sparse ones, 12 to 40 ranks) the sum of the bottlenecks after the
 * thesis's phase II is 283 with the rule and 284 without it. A golden figure: it
 * changes with any change to the planner's choices, and then has to be re-derived
 * (with and without the rule) and explained. */
#define PHASE2_RULE_SUM 283
static void phase2_rule(void **state)
{
    (void)state;
    uint64_t seed = 0x2545f4914f6cdd1dULL, sum = 0;
    for (int c = 0; c < 40; c++) {
        int n = 12 + (int)(rng_next(&seed) % 29);
        dense d;
        dense_init(&d, n);
        for (int s = 0; s < n; s++) {
            uint64_t pct = rng_next(&seed) % 6 == 0 ? 80 : 5 + rng_next(&seed) % 25;
            for (int t = 0; t < n; t++)
                if (s != t && rng_next(&seed) % 100 < pct)
                    dense_set(&d, s, t);
        }
        cr_plan_matrix m = dense_csr(&d);
        cr_plan_opts o;
        cr_plan_opts_init(&o);
        o.cap_search = false;
        char err[256];
        cr_plan *p = cr_plan_create(&m, &o, err, sizeof err);
        assert_non_null(p);
        cr_plan_stats st;
        cr_plan_stats_get(p, CR_PLAN_FINAL, &st);
        sum += st.max_messages;
        cr_plan_destroy(p);
        dense_free(&d);
    }
    print_message("phase II rule: bottlenecks sum to %llu\n", (unsigned long long)sum);
    assert_int_equal(sum, PHASE2_RULE_SUM);
}

/* Malformed matrices are refused with a message naming the problem. */
static void bad_matrices(void **state)
{
    (void)state;
    uint64_t ptr[] = {0, 2, 3, 3};
    int self[] = {1, 2, 1};     /* rank 1 sends to 1 */
    int unsorted[] = {2, 1, 0}; /* rank 0: 2 before 1 */
    int range[] = {1, 2, 7};    /* rank 1 sends to 7 */
    const int *cases[] = {self, unsorted, range};
    const char *want[] = {"itself", "strictly increasing", "out of range"};
    for (int i = 0; i < 3; i++) {
        cr_plan_matrix m = {.nranks = 3, .ptr = ptr, .dest = cases[i], .volume = NULL};
        char err[256] = "";
        cr_plan *p = cr_plan_create(&m, NULL, err, sizeof err);
        assert_null(p);
        if (!strstr(err, want[i]))
            fail_msg("case %d: '%s' lacks '%s'", i, err, want[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(figure_2_3),       cmocka_unit_test(figure_4_1),
        cmocka_unit_test(unequal_sharing),  cmocka_unit_test(case1_equal_odd),
        cmocka_unit_test(case2_singleton_to_group), cmocka_unit_test(case3_group_to_singleton),
        cmocka_unit_test(case4_group_to_group), cmocka_unit_test(phase2_alpha),
        cmocka_unit_test(stfw_all_to_all),
        cmocka_unit_test(random_invariants), cmocka_unit_test(phase2_rule),
        cmocka_unit_test(bad_matrices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
