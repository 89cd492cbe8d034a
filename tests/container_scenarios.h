/* The containers' scenarios (include/courier/container.h), shared by the MPI test
 * (tests/mpi/test_container.c) and the simulated transport (tests/sim/test_sim.c).
 * Every result is exact: each rank works out what every key must hold from the same
 * deterministic inputs and checks the keys it owns, and the global counts and the
 * top k on every rank. Global sums go through cr_allreduce, so the scenarios run on
 * either transport. */
#ifndef COURIER_TESTS_CONTAINER_SCENARIOS_H
#define COURIER_TESTS_CONTAINER_SCENARIOS_H

#include "scenario_check.h"

#include <courier.h>

#include <stdlib.h>
#include <string.h>

static long ct_fails;
#define CT_CHECK(comm, cond, ...) SCENARIO_CHECK(ct_fails, cr_comm_rank(comm), cond, __VA_ARGS__)

static uint64_t ct_sum(cr_comm *comm, uint64_t v)
{
    uint64_t all;
    cr_allreduce(comm, &v, &all, 1, CR_UINT64, CR_OP_SUM, NULL);
    return all;
}

/* A 24-byte key (a word-like key: longer than 8, not a multiple of 16). */
typedef struct ct_key {
    char bytes[20];
} ct_key;

static ct_key ct_make_key(uint64_t k)
{
    ct_key key;
    memset(&key, 0, sizeof key);
    snprintf(key.bytes, sizeof key.bytes, "key-%llu", (unsigned long long)k);
    return key;
}

/* Which key rank r's i-th insert names: a skewed mix, so some keys repeat often. */
static uint64_t ct_key_of(int r, uint64_t i, uint64_t nkeys)
{
    uint64_t x = (uint64_t)r * 0x9e3779b97f4a7c15ULL + i * 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 29;
    return (i % 3 == 0) ? x % 7 % nkeys : x % nkeys;
}

/* ---- counting set ------------------------------------------------------------ */

typedef struct ct_count_check {
    const uint64_t *expect;
    uint64_t nkeys, seen;
    long *fails;
    cr_comm *comm;
} ct_count_check;

static void ct_check_count(const void *key, uint64_t count, void *user)
{
    ct_count_check *c = user;
    c->seen++;
    unsigned long long k = 0;
    if (sscanf(((const ct_key *)key)->bytes, "key-%llu", &k) != 1 || k >= c->nkeys) {
        CT_CHECK(c->comm, 0, "a key that was never inserted: '%.20s'", (const char *)key);
        return;
    }
    CT_CHECK(c->comm, count == c->expect[k], "key %llu counted %llu times, expected %llu", k,
             (unsigned long long)count, (unsigned long long)c->expect[k]);
}

typedef struct ct_answer {
    uint64_t want, got, answers;
} ct_answer;

static void ct_got_count(cr_counting_set *cs, uint64_t count, void *ctx)
{
    (void)cs;
    ct_answer *a = ctx;
    a->got = count;
    a->answers++;
}

/* Every rank counts `per_rank` keys out of nkeys; the counts, the number of distinct
 * keys, look-ups of every key's count from every rank, and the top 10. */
static long ct_counting(cr_comm *comm, uint64_t nkeys, uint64_t per_rank)
{
    long before = ct_fails;
    int me = cr_comm_rank(comm), p = cr_comm_size(comm);
    uint64_t *expect = calloc(nkeys, sizeof *expect);
    for (int r = 0; r < p; r++)
        for (uint64_t i = 0; i < per_rank; i++)
            expect[ct_key_of(r, i, nkeys)] += (r + i) % 5 == 0 ? 3 : 1;
    char err[200];
    cr_counting_set *cs = cr_counting_set_create(comm, sizeof(ct_key), err, sizeof err);
    CT_CHECK(comm, cs != NULL, "%s", err);
    for (uint64_t i = 0; i < per_rank; i++) {
        ct_key key = ct_make_key(ct_key_of(me, i, nkeys));
        if ((me + i) % 5 == 0)
            cr_counting_set_add(cs, &key, 3);
        else
            cr_counting_set_insert(cs, &key);
    }
    uint64_t distinct = 0;
    for (uint64_t k = 0; k < nkeys; k++)
        distinct += expect[k] > 0;
    uint64_t size = cr_counting_set_size(cs);
    CT_CHECK(comm, size == distinct, "%llu distinct keys, expected %llu",
             (unsigned long long)size, (unsigned long long)distinct);
    ct_count_check c = {.expect = expect, .nkeys = nkeys, .fails = &ct_fails, .comm = comm};
    cr_counting_set_for_all(cs, ct_check_count, &c);
    CT_CHECK(comm, c.seen == cr_counting_set_local_size(cs), "for_all saw %llu of %llu",
             (unsigned long long)c.seen, (unsigned long long)cr_counting_set_local_size(cs));

    /* Every rank asks for every key (present or not): identical look-ups merge. */
    ct_answer *answers = calloc(nkeys + 1, sizeof *answers);
    for (uint64_t k = 0; k <= nkeys; k++) {
        ct_key key = ct_make_key(k);
        answers[k].want = k < nkeys ? expect[k] : 0;
        cr_counting_set_count(cs, &key, ct_got_count, &answers[k]);
    }
    cr_barrier(comm);
    for (uint64_t k = 0; k <= nkeys; k++)
        CT_CHECK(comm, answers[k].answers == 1 && answers[k].got == answers[k].want,
                 "count of key %llu: %llu answers, %llu, expected %llu", (unsigned long long)k,
                 (unsigned long long)answers[k].answers, (unsigned long long)answers[k].got,
                 (unsigned long long)answers[k].want);
    free(answers);

    /* The top 10, against the expected counts ranked the same way. */
    enum { K = 10 };
    ct_key top[K];
    uint64_t counts[K];
    size_t n = cr_counting_set_top_k(cs, K, top, counts);
    size_t want_n = distinct < K ? (size_t)distinct : K;
    CT_CHECK(comm, n == want_n, "top k gave %zu keys, expected %zu", n, want_n);
    uint64_t last = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        unsigned long long k = 0;
        CT_CHECK(comm, sscanf(top[i].bytes, "key-%llu", &k) == 1 && k < nkeys &&
                               counts[i] == expect[k] && counts[i] <= last,
                 "top %zu: '%.20s' with %llu", i, top[i].bytes, (unsigned long long)counts[i]);
        last = counts[i];
    }
    /* No key left out counts more than the last one taken. */
    if (n == K)
        for (uint64_t k = 0; k < nkeys; k++) {
            bool taken = false;
            for (size_t i = 0; i < n; i++) {
                ct_key key = ct_make_key(k);
                taken |= memcmp(&key, &top[i], sizeof key) == 0;
            }
            CT_CHECK(comm, taken || expect[k] <= last, "key %llu (%llu) missing from the top",
                     (unsigned long long)k, (unsigned long long)expect[k]);
        }
    cr_counting_set_destroy(cs);
    free(expect);
    return ct_fails - before;
}

/* ---- map: merge rules, combining on and off, erase, get, visits -------------------- */

typedef struct ct_value {
    uint64_t a, b;
} ct_value;

typedef struct ct_map_check {
    cr_comm *comm;
    int p;
    uint64_t nkeys, seen, sum;
    cr_op op;
} ct_map_check;

/* Every rank inserts (k, {rank, k}) for every key: what each rule must leave. */
static void ct_check_rule(const void *key, void *value, void *user)
{
    ct_map_check *c = user;
    uint64_t k;
    memcpy(&k, key, sizeof k);
    ct_value v;
    memcpy(&v, value, sizeof v);
    c->seen++;
    uint64_t p = (uint64_t)c->p;
    switch (c->op) {
    case CR_OP_SUM:
        CT_CHECK(c->comm, v.a == p * (p - 1) / 2 + 3 * p && v.b == p * k,
                 "sum of key %llu: {%llu, %llu}", (unsigned long long)k,
                 (unsigned long long)v.a, (unsigned long long)v.b);
        break;
    case CR_OP_MIN:
        CT_CHECK(c->comm, v.a == 0 && v.b == k, "min of key %llu: {%llu, %llu}",
                 (unsigned long long)k, (unsigned long long)v.a, (unsigned long long)v.b);
        break;
    case CR_OP_MAX:
        CT_CHECK(c->comm, v.a == p + 2 && v.b == k, "max of key %llu: {%llu, %llu}",
                 (unsigned long long)k, (unsigned long long)v.a, (unsigned long long)v.b);
        break;
    default: /* FIRST, LAST: one whole insert's value */
        CT_CHECK(c->comm, (v.a < p || v.a == p + 2) && v.b == k,
                 "rule %d on key %llu: {%llu, %llu}", (int)c->op, (unsigned long long)k,
                 (unsigned long long)v.a, (unsigned long long)v.b);
    }
}

static long ct_map_rules(cr_comm *comm, uint64_t nkeys)
{
    long before = ct_fails;
    int me = cr_comm_rank(comm), p = cr_comm_size(comm);
    static const cr_op ops[] = {CR_OP_SUM, CR_OP_MIN, CR_OP_MAX, CR_OP_FIRST,
                                      CR_OP_LAST};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (int combining = 0; combining < 2; combining++) {
            cr_map_opts opts = {.key_len = 8, .value_len = sizeof(ct_value), .merge = ops[o],
                                .type = CR_UINT64, .no_combining = !combining};
            char err[200];
            cr_map *m = cr_map_create(comm, &opts, err, sizeof err);
            CT_CHECK(comm, m != NULL, "%s", err);
            for (uint64_t k = 0; k < nkeys; k++) {
                ct_value v = {(uint64_t)me, k};
                cr_map_insert(m, &k, &v);
                if (me == 0) { /* rank 0 adds a second insert of its own */
                    ct_value w = {(uint64_t)p + 2, 0};
                    if (ops[o] == CR_OP_SUM)
                        w.a = 3 * (uint64_t)p, w.b = 0;
                    else
                        w.b = k;
                    cr_map_insert(m, &k, &w);
                }
            }
            uint64_t size = cr_map_size(m);
            CT_CHECK(comm, size == nkeys, "rule %d, combining %d: %llu keys", (int)ops[o],
                     combining, (unsigned long long)size);
            ct_map_check c = {.comm = comm, .p = p, .nkeys = nkeys, .op = ops[o]};
            cr_map_for_all(m, ct_check_rule, &c);
            uint64_t seen = ct_sum(comm, c.seen);
    CT_CHECK(comm, seen == nkeys, "for_all over all ranks saw %llu", (unsigned long long)seen);
            cr_map_destroy(m);
        }
    /* every rule on 8-byte words refuses a value that is not made of them */
    static const cr_op numeric[] = {CR_OP_SUM, CR_OP_MIN, CR_OP_MAX, CR_OP_BAND, CR_OP_BOR};
    for (size_t o = 0; o < sizeof numeric / sizeof numeric[0]; o++) {
        char err[200] = "";
        cr_map_opts opts = {.key_len = 8, .value_len = 4, .merge = numeric[o],
                            .type = CR_UINT64};
        cr_map *m = cr_map_create(comm, &opts, err, sizeof err);
        CT_CHECK(comm, m == NULL && strstr(err, "8-byte words"),
                 "rule %d accepted a 4-byte value (%s)", (int)numeric[o], err);
        if (m)
            cr_map_destroy(m);
    }
    return ct_fails - before;
}

typedef struct ct_get {
    uint64_t key, answers;
    bool present;
    uint64_t value;
} ct_get;

static void ct_got(cr_map *m, const void *value, void *ctx)
{
    (void)m;
    ct_get *g = ctx;
    g->answers++;
    g->present = value != NULL;
    if (value)
        memcpy(&g->value, value, sizeof g->value);
}

static void ct_got_present(cr_set *s, bool present, void *ctx)
{
    (void)s;
    ct_get *g = ctx;
    g->answers++;
    g->present = present;
}

/* Insert every key, erase the even ones (after a barrier), look every key up. The
 * same through a set. */
static long ct_erase_and_get(cr_comm *comm, uint64_t nkeys)
{
    long before = ct_fails;
    int me = cr_comm_rank(comm), p = cr_comm_size(comm);
    char err[200];
    cr_map *m = cr_map_create(comm, &(cr_map_opts){.key_len = 8, .value_len = 8}, err, sizeof err);
    cr_set *s = cr_set_create(comm, 8, err, sizeof err);
    CT_CHECK(comm, m && s, "%s", err);
    for (uint64_t k = (uint64_t)me; k < nkeys; k += (uint64_t)p) {
        uint64_t v = k * 10;
        cr_map_insert(m, &k, &v);
        cr_set_insert(s, &k);
    }
    cr_barrier(comm);
    for (uint64_t k = (uint64_t)me; k < nkeys; k += (uint64_t)p)
        if (k % 2 == 0) {
            cr_map_erase(m, &k);
            cr_set_erase(s, &k);
        }
    uint64_t size = cr_map_size(m), set_size = cr_set_size(s);
    CT_CHECK(comm, size == nkeys / 2 && set_size == nkeys / 2, "after erase: %llu and %llu",
             (unsigned long long)size, (unsigned long long)set_size);
    ct_get *gets = calloc(2 * nkeys, sizeof *gets);
    for (uint64_t k = 0; k < nkeys; k++) {
        gets[k].key = gets[nkeys + k].key = k;
        cr_map_get(m, &k, ct_got, &gets[k]);
        cr_set_contains(s, &k, ct_got_present, &gets[nkeys + k]);
    }
    cr_barrier(comm);
    for (uint64_t k = 0; k < nkeys; k++) {
        const ct_get *g = &gets[k], *h = &gets[nkeys + k];
        bool odd = k % 2 == 1;
        CT_CHECK(comm, g->answers == 1 && g->present == odd && (!odd || g->value == k * 10),
                 "get %llu: %llu answers, present %d, %llu", (unsigned long long)k,
                 (unsigned long long)g->answers, g->present, (unsigned long long)g->value);
        CT_CHECK(comm, h->answers == 1 && h->present == odd, "contains %llu: %llu, %d",
                 (unsigned long long)k, (unsigned long long)h->answers, h->present);
    }
    free(gets);
    cr_set_destroy(s);
    cr_map_destroy(m);
    return ct_fails - before;
}

/* Visits: visitor 0 adds its argument to the value (creating it) and, while the
 * argument is above 1, visits the next key with the argument less one, from inside
 * the visitor; visitor 1 counts absent keys. Every rank starts a chain at each of
 * its keys: key k ends with the sum over every chain that passed it. */
typedef struct ct_visits {
    uint64_t nkeys, absent;
    cr_counting_set *visited; /* every visit counts its key here, from the visitor */
} ct_visits;

static void ct_visit_add(cr_map *m, const void *key, void *value, const void *args,
                         size_t len, void *user)
{
    ct_visits *v = user;
    uint64_t k, step, sum;
    memcpy(&k, key, sizeof k);
    memcpy(&step, args, sizeof step);
    (void)len;
    memcpy(&sum, value, sizeof sum);
    sum += step;
    memcpy(value, &sum, sizeof sum);
    cr_counting_set_insert(v->visited, &k); /* an insert from inside a handler */
    if (step > 1) {
        uint64_t next = (k + 1) % v->nkeys, less = step - 1;
        cr_map_visit(m, &next, 0, &less, sizeof less);
    }
}

static void ct_visit_absent(cr_map *m, const void *key, void *value, const void *args,
                            size_t len, void *user)
{
    (void)m, (void)key, (void)args, (void)len;
    ct_visits *v = user;
    if (!value)
        v->absent++;
}

static void ct_add_count(const void *key, uint64_t count, void *user)
{
    (void)key;
    *(uint64_t *)user += count;
}

static void ct_sum_values(const void *key, void *value, void *user)
{
    uint64_t *expect = user, k, got;
    memcpy(&k, key, sizeof k);
    memcpy(&got, value, sizeof got);
    expect[k] = got == expect[k] ? UINT64_MAX : got; /* UINT64_MAX: matched */
}

static long ct_visits_chain(cr_comm *comm, uint64_t nkeys, uint64_t depth)
{
    long before = ct_fails;
    int me = cr_comm_rank(comm), p = cr_comm_size(comm);
    ct_visits v = {.nkeys = nkeys};
    cr_map_visitor visitors[2] = {{.fn = ct_visit_add, .user = &v, .create_missing = true},
                                  {.fn = ct_visit_absent, .user = &v}};
    char err[200];
    cr_map *m = cr_map_create(comm,
                              &(cr_map_opts){.key_len = 8, .value_len = 8, .visitors = visitors,
                                             .nvisitors = 2},
                              err, sizeof err);
    v.visited = cr_counting_set_create(comm, 8, err, sizeof err);
    CT_CHECK(comm, m != NULL && v.visited != NULL, "%s", err);
    for (uint64_t k = (uint64_t)me; k < nkeys; k += (uint64_t)p)
        cr_map_visit(m, &k, 0, &depth, sizeof depth);
    cr_barrier(comm);
    /* Every insert the visitors made is in, with no further barrier (for_all and the
     * reduction do not drain anything). */
    uint64_t counted = 0;
    cr_counting_set_for_all(v.visited, ct_add_count, &counted);
    counted = ct_sum(comm, counted);
    CT_CHECK(comm, counted == nkeys * depth, "visitors counted %llu visits, expected %llu",
             (unsigned long long)counted, (unsigned long long)(nkeys * depth));
    uint64_t missing = nkeys + 5 + (uint64_t)me;
    cr_map_visit(m, &missing, 1, NULL, 0);
    cr_barrier(comm);
    uint64_t absent = ct_sum(comm, v.absent);
    CT_CHECK(comm, absent == (uint64_t)p, "%llu absent visits, expected %d",
             (unsigned long long)absent, p);
    /* Chain from key s passes s, s+1, ... adding depth, depth-1, ...: */
    uint64_t *expect = calloc(nkeys, sizeof *expect);
    for (uint64_t s = 0; s < nkeys; s++)
        for (uint64_t j = 0; j < depth; j++)
            expect[(s + j) % nkeys] += depth - j;
    cr_map_for_all(m, ct_sum_values, expect);
    uint64_t owned = 0, matched = 0;
    for (uint64_t k = 0; k < nkeys; k++)
        if (cr_map_owner(m, &k) == me) {
            owned++;
            matched += expect[k] == UINT64_MAX;
        }
    CT_CHECK(comm, matched == owned, "%llu of %llu keys have their sum",
             (unsigned long long)matched, (unsigned long long)owned);
    free(expect);
    cr_counting_set_destroy(v.visited);
    cr_map_destroy(m);
    return ct_fails - before;
}

/* ---- bag ------------------------------------------------------------------------ */

typedef struct ct_bag_walk {
    uint64_t n, sum, ordered;
    uint64_t last;
} ct_bag_walk;

static void ct_walk_item(void *item, void *user)
{
    ct_bag_walk *w = user;
    uint64_t x;
    memcpy(&x, item, sizeof x);
    w->ordered += w->n == 0 || x > w->last;
    w->last = x;
    w->n++;
    w->sum += x;
}

/* Rank r puts r*3 + 1 items of its own (increasing ids), then one more on the next
 * rank; rebalance must keep the global order and give blocks; gather to the last rank
 * must bring every item in order. */
static long ct_bag(cr_comm *comm)
{
    long before = ct_fails;
    int me = cr_comm_rank(comm), p = cr_comm_size(comm);
    char err[200];
    cr_bag *bag = cr_bag_create(comm, 8, err, sizeof err);
    CT_CHECK(comm, bag != NULL, "%s", err);
    uint64_t total = 0, sum = 0;
    for (int r = 0; r < p; r++)
        for (uint64_t i = 0; i < (uint64_t)r * 3 + 1; i++)
            total++, sum += (uint64_t)r * 1000000 + i;
    for (uint64_t i = 0; i < (uint64_t)me * 3 + 1; i++) {
        uint64_t x = (uint64_t)me * 1000000 + i;
        cr_bag_insert(bag, &x);
    }
    uint64_t size = cr_bag_size(bag);
    CT_CHECK(comm, size == total, "bag of %llu items, expected %llu", (unsigned long long)size,
             (unsigned long long)total);
    cr_bag_rebalance(bag);
    uint64_t local = cr_bag_local_size(bag);
    uint64_t want = total / (uint64_t)p + ((uint64_t)me < total % (uint64_t)p);
    CT_CHECK(comm, local == want, "after rebalance %llu items, expected %llu",
             (unsigned long long)local, (unsigned long long)want);
    ct_bag_walk w = {0};
    cr_bag_for_all(bag, ct_walk_item, &w);
    uint64_t walked = ct_sum(comm, w.sum);
    CT_CHECK(comm, w.ordered == w.n && walked == sum, "order or sum after rebalance");
    /* Items sent by a rank that is done while others still rebalance are kept: every
     * rank rebalances again and at once puts items on every other rank. */
    cr_bag *extra = cr_bag_create(comm, 8, err, sizeof err);
    for (uint64_t i = 0; i < (uint64_t)me * 50 + 10; i++)
        cr_bag_insert(extra, &i);
    cr_bag_rebalance(extra);
    for (int r = 0; r < p; r++)
        for (uint64_t i = 0; i < 20; i++)
            cr_bag_insert_at(extra, r, &i);
    uint64_t extra_size = cr_bag_size(extra);
    uint64_t extra_want = 20 * (uint64_t)p * (uint64_t)p;
    for (int r = 0; r < p; r++)
        extra_want += (uint64_t)r * 50 + 10;
    CT_CHECK(comm, extra_size == extra_want, "items put during a rebalance: %llu of %llu",
             (unsigned long long)extra_size, (unsigned long long)extra_want);
    cr_bag_destroy(extra);
    void *items;
    uint64_t count;
    cr_bag_gather(bag, p - 1, &items, &count);
    if (me == p - 1) {
        ct_bag_walk g = {0};
        for (uint64_t i = 0; i < count; i++)
            ct_walk_item((char *)items + i * 8, &g);
        CT_CHECK(comm, count == total && g.ordered == count && g.sum == sum,
                 "gathered %llu items, %llu in order", (unsigned long long)count,
                 (unsigned long long)g.ordered);
    } else {
        CT_CHECK(comm, items == NULL && count == 0, "gather gave a non-root items");
    }
    free(items);
    CT_CHECK(comm, cr_bag_local_size(bag) == want, "gather changed the bag");
    cr_barrier(comm); /* every rank has looked before any sends it an item */
    uint64_t mark = UINT64_MAX - (uint64_t)me;
    cr_bag_insert_at(bag, (me + 1) % p, &mark);
    uint64_t grown = cr_bag_size(bag);
    CT_CHECK(comm, grown == total + (uint64_t)p, "insert_at: %llu items",
             (unsigned long long)grown);
    cr_bag_destroy(bag);
    return ct_fails - before;
}

/* ---- disjoint set ------------------------------------------------------------------ */

static void ct_on_union(cr_disjoint_set *ds, uint64_t a, uint64_t b, void *user)
{
    (void)ds, (void)a, (void)b;
    ++*(uint64_t *)user; /* per rank: on the simulation, ranks share the process */
}

typedef struct ct_find {
    uint64_t want, got, answers;
} ct_find;

static void ct_found(cr_disjoint_set *ds, uint64_t item, uint64_t root, void *ctx)
{
    (void)ds, (void)item;
    ct_find *f = ctx;
    f->got = root;
    f->answers++;
}

static uint64_t ct_uf_find(uint64_t *parent, uint64_t x)
{
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

typedef struct ct_reps {
    const uint64_t *rep; /* the smallest item of each item's component */
    uint64_t n, wrong;
    cr_comm *comm;
} ct_reps;

static void ct_check_rep(uint64_t item, uint64_t parent, void *user)
{
    ct_reps *c = user;
    if (item >= c->n || parent != c->rep[item])
        c->wrong++;
}

/* Every rank unions the same four pairs (exactly three unions succeed over all
 * ranks), then unions of a seeded random forest over n items, split by rank;
 * checked against a sequential union-find: the number of sets, each item's
 * representative after compress, and finds. */
static long ct_disjoint(cr_comm *comm, uint64_t n, uint64_t unions, uint64_t seed)
{
    long before = ct_fails;
    int me = cr_comm_rank(comm), p = cr_comm_size(comm);
    uint64_t executed_here = 0;
    cr_disjoint_set *ds = cr_disjoint_set_create(comm, ct_on_union, &executed_here);
    static const uint64_t pairs[4][2] = {{1, 2}, {2, 3}, {3, 1}, {4, 5}};
    for (int i = 0; i < 4; i++)
        cr_disjoint_set_union_and_execute(ds, pairs[i][0], pairs[i][1]);
    uint64_t sets = cr_disjoint_set_num_sets(ds), items = cr_disjoint_set_size(ds);
    uint64_t done = ct_sum(comm, cr_disjoint_set_local_unions(ds));
    uint64_t executed = ct_sum(comm, executed_here);
    CT_CHECK(comm, sets == 2 && items == 5 && done == 3 && executed == 3,
             "four pairs: %llu sets, %llu items, %llu unions, %llu executed",
             (unsigned long long)sets, (unsigned long long)items, (unsigned long long)done,
             (unsigned long long)executed);
    cr_disjoint_set_destroy(ds);

    /* The random unions: the same list on every rank, each rank making its share. */
    uint64_t *parent = malloc(n * sizeof *parent), *rep = malloc(n * sizeof *rep);
    for (uint64_t i = 0; i < n; i++)
        parent[i] = i;
    ds = cr_disjoint_set_create(comm, NULL, NULL);
    uint64_t s = seed;
    for (uint64_t u = 0; u < unions; u++) {
        uint64_t a = cr_rng_bounded(cr_rng_next(&s), n), b = cr_rng_bounded(cr_rng_next(&s), n);
        uint64_t ra = ct_uf_find(parent, a), rb = ct_uf_find(parent, b);
        if (ra != rb)
            parent[ra > rb ? ra : rb] = ra > rb ? rb : ra;
        if (u % (uint64_t)p == (uint64_t)me)
            cr_disjoint_set_union(ds, a, b);
    }
    for (uint64_t i = (uint64_t)me; i < n; i += (uint64_t)p)
        cr_disjoint_set_add(ds, i);
    uint64_t want_sets = 0;
    for (uint64_t i = 0; i < n; i++) {
        rep[i] = ct_uf_find(parent, i); /* the smallest: links go to the smaller root */
        want_sets += rep[i] == i;
    }
    sets = cr_disjoint_set_num_sets(ds);
    CT_CHECK(comm, sets == want_sets, "%llu sets, expected %llu", (unsigned long long)sets,
             (unsigned long long)want_sets);
    uint64_t joined = ct_sum(comm, cr_disjoint_set_local_unions(ds));
    CT_CHECK(comm, joined == n - want_sets, "unions that joined two sets: %llu, expected %llu",
             (unsigned long long)joined, (unsigned long long)(n - want_sets));
    enum { FINDS = 16 };
    ct_find finds[FINDS];
    for (int f = 0; f < FINDS; f++) {
        uint64_t item = cr_rng_bounded(cr_rng_hash64(seed + (uint64_t)(me * FINDS + f)), n);
        finds[f] = (ct_find){.want = rep[item]};
        cr_disjoint_set_find(ds, item, ct_found, &finds[f]);
    }
    cr_barrier(comm);
    for (int f = 0; f < FINDS; f++)
        CT_CHECK(comm, finds[f].answers == 1 && finds[f].got == finds[f].want,
                 "find %d: %llu answers, %llu, expected %llu", f,
                 (unsigned long long)finds[f].answers, (unsigned long long)finds[f].got,
                 (unsigned long long)finds[f].want);
    cr_disjoint_set_compress(ds);
    ct_reps c = {.rep = rep, .n = n, .comm = comm};
    cr_disjoint_set_for_all(ds, ct_check_rep, &c);
    uint64_t wrong = ct_sum(comm, c.wrong);
    CT_CHECK(comm, wrong == 0, "%llu items point elsewhere than their set's smallest",
             (unsigned long long)wrong);
    cr_disjoint_set_destroy(ds);
    free(parent);
    free(rep);
    return ct_fails - before;
}

typedef struct ct_doubles {
    cr_comm *comm;
    double want;
    uint64_t wrong;
} ct_doubles;

static void ct_check_double(const void *key, void *value, void *user)
{
    (void)key;
    ct_doubles *d = user;
    double v;
    memcpy(&v, value, sizeof v);
    d->wrong += v != d->want;
}

/* A map that sums doubles: merged in the source cache and on the way as doubles
 * (0.25 is exact, so the sums are too). */
static long ct_double_sums(cr_comm *comm, uint64_t nkeys)
{
    long before = ct_fails;
    int p = cr_comm_size(comm);
    char err[200];
    cr_map *m = cr_map_create(comm,
                              &(cr_map_opts){.key_len = 8, .value_len = 8, .merge = CR_OP_SUM,
                                             .type = CR_DOUBLE},
                              err, sizeof err);
    CT_CHECK(comm, m != NULL, "%s", err);
    double quarter = 0.25;
    for (int r = 0; r < 3; r++)
        for (uint64_t k = 0; k < nkeys; k++)
            cr_map_insert(m, &k, &quarter);
    cr_barrier(comm);
    ct_doubles d = {.comm = comm, .want = 0.75 * p};
    cr_map_for_all(m, ct_check_double, &d);
    uint64_t wrong = ct_sum(comm, d.wrong), size = cr_map_size(m);
    CT_CHECK(comm, wrong == 0 && size == nkeys, "%llu of %llu sums of doubles wrong",
             (unsigned long long)wrong, (unsigned long long)size);
    cr_map_destroy(m);
    return ct_fails - before;
}

/* ---- the count cache ------------------------------------------------------------ */

/* Two keys that share a slot of the count cache, a count of 0, a count that wraps to
 * 0, keys of their own per rank, and keys 0 and 1, each the other's slot's mark for
 * empty (counted 7 and 9 times per rank). */
enum { CT_A = 5, CT_B = 5 + 65536, CT_K0 = 0, CT_K1 = 1 };
#define CT_ZERO (UINT64_C(1) << 40)
#define CT_WRAP (CT_ZERO + 1)
#define CT_SPREAD (UINT64_C(1) << 41)

typedef struct ct_cc {
    uint64_t p, seen, wrong;
} ct_cc;

static uint64_t ct_cc_want(const ct_cc *c, uint64_t key)
{
    if (key == CT_A)
        return 500 * c->p;
    if (key == CT_B)
        return 200 * c->p;
    if (key == CT_ZERO || key == CT_WRAP)
        return 0;
    if (key == CT_K0)
        return 7 * c->p;
    if (key == CT_K1)
        return 9 * c->p;
    return 1; /* a rank's own key */
}

static void ct_cc_count(const void *key, uint64_t count, void *user)
{
    ct_cc *c = user;
    uint64_t k;
    memcpy(&k, key, sizeof k);
    c->seen++;
    c->wrong += count != ct_cc_want(c, k);
}

static void ct_cc_value(const void *key, void *value, void *user)
{
    uint64_t v;
    memcpy(&v, value, sizeof v);
    ct_cc_count(key, v, user);
}

/* A counting set of 8-byte keys, and a map of 8-byte keys that sums 8-byte integers:
 * the two that go through the count cache. */
static cr_counting_set *ct_counting_set8(cr_comm *comm)
{
    char err[200];
    cr_counting_set *cs = cr_counting_set_create(comm, 8, err, sizeof err);
    CT_CHECK(comm, cs != NULL, "%s", err);
    return cs;
}

static cr_map *ct_sum_map8(cr_comm *comm)
{
    char err[200];
    cr_map *m = cr_map_create(comm,
                              &(cr_map_opts){.key_len = 8, .value_len = 8, .merge = CR_OP_SUM,
                                             .type = CR_UINT64},
                              err, sizeof err);
    CT_CHECK(comm, m != NULL, "%s", err);
    return m;
}

/* The same adds to a counting set and to a summing map of 8-byte keys (both through
 * the count cache): keys that evict each other, an add of 0 that still creates its
 * key, a sum that wraps to 0 and keeps its key, and enough keys seen once that the
 * cache rests, then resumes. Exact counts and sizes. */
static long ct_count_cache(cr_comm *comm, uint64_t own)
{
    long before = ct_fails;
    int me = cr_comm_rank(comm), p = cr_comm_size(comm);
    cr_counting_set *cs = ct_counting_set8(comm);
    cr_map *m = ct_sum_map8(comm);
    /* The map reserves its room first: its table must not grow after. */
    uint64_t want_size = 6 + own * (uint64_t)p;
    CT_CHECK(comm, cr_map_reserve(m, want_size), "cr_map_reserve(%llu) failed",
             (unsigned long long)want_size);
    size_t reserved = cr_map_local_bytes(m);
    uint64_t one = 1, none = 0, half = UINT64_C(1) << 63;
    const uint64_t a = CT_A, b = CT_B, zero = CT_ZERO, wrap = CT_WRAP;
#define CT_BOTH(key, n)                                                                    \
    do {                                                                                   \
        cr_counting_set_add(cs, (key), (n));                                               \
        cr_map_insert(m, (key), &(uint64_t){(n)});                                         \
    } while (0)
    for (int i = 0; i < 200; i++) {
        cr_counting_set_insert(cs, &a);
        cr_map_insert(m, &a, &one);
        CT_BOTH(&b, 1);
    }
    CT_BOTH(&zero, none);
    const uint64_t k0 = CT_K0, k1s[9] = {CT_K1, CT_K1, CT_K1, CT_K1, CT_K1,
                                         CT_K1, CT_K1, CT_K1, CT_K1};
    for (int i = 0; i < 7; i++)
        CT_BOTH(&k0, 1);
    cr_counting_set_insert_many(cs, k1s, 9);
    CT_BOTH(&k1s[0], 0);
    cr_map_insert(m, &k1s[0], &(uint64_t){9});
    CT_BOTH(&wrap, half);
    CT_BOTH(&wrap, half);
    for (uint64_t i = 0; i < own; i++) {
        uint64_t k = CT_SPREAD + (uint64_t)me * own + i;
        CT_BOTH(&k, 1);
    }
    for (int i = 0; i < 300; i++)
        CT_BOTH(&a, 1);
#undef CT_BOTH
    uint64_t size = cr_counting_set_size(cs), msize = cr_map_size(m);
    ct_cc c = {.p = (uint64_t)p}, cm = {.p = (uint64_t)p};
    cr_counting_set_for_all(cs, ct_cc_count, &c);
    cr_map_for_all(m, ct_cc_value, &cm);
    uint64_t wrong = ct_sum(comm, c.wrong), mwrong = ct_sum(comm, cm.wrong);
    CT_CHECK(comm, size == want_size && wrong == 0,
             "counting set through the count cache: %llu keys (want %llu), %llu counts wrong",
             (unsigned long long)size, (unsigned long long)want_size, (unsigned long long)wrong);
    CT_CHECK(comm, msize == want_size && mwrong == 0,
             "summing map through the count cache: %llu keys (want %llu), %llu values wrong",
             (unsigned long long)msize, (unsigned long long)want_size, (unsigned long long)mwrong);
    CT_CHECK(comm, cr_map_local_bytes(m) == reserved,
             "a reserved table grew from %zu to %zu bytes", reserved, cr_map_local_bytes(m));
    cr_map_destroy(m);
    cr_counting_set_destroy(cs);
    return ct_fails - before;
}

/* Keys seen once (the count cache rests, so most adds travel as units, which wait on
 * their owner until something reads the table): after a barrier, for_all sees every
 * add, a look-up of every key sees its add and an erase of every other key removes
 * it for good. Exact answers and sizes. */
static long ct_units_wait(cr_comm *comm, uint64_t own)
{
    long before = ct_fails;
    int me = cr_comm_rank(comm), p = cr_comm_size(comm);
    cr_counting_set *cs = ct_counting_set8(comm);
    cr_map *m = ct_sum_map8(comm);
    cr_counting_set *walked = ct_counting_set8(comm);
    uint64_t one = 1;
    for (uint64_t i = 0; i < own; i++) {
        uint64_t k = CT_SPREAD + (uint64_t)me * own + i;
        cr_counting_set_insert(cs, &k);
        cr_counting_set_insert(walked, &k);
        cr_map_insert(m, &k, &one);
    }
    cr_barrier(comm);
    ct_cc w = {.p = (uint64_t)p};
    cr_counting_set_for_all(walked, ct_cc_count, &w);
    uint64_t walked_wrong = ct_sum(comm, w.wrong), walked_seen = ct_sum(comm, w.seen);
    CT_CHECK(comm, walked_wrong == 0 && walked_seen == (uint64_t)p * own,
             "for_all after a barrier saw %llu keys (want %llu), %llu counts wrong",
             (unsigned long long)walked_seen, (unsigned long long)p * own,
             (unsigned long long)walked_wrong);
    cr_counting_set_destroy(walked);
    ct_answer *asked = calloc(own, sizeof *asked);
    CT_CHECK(comm, asked != NULL, "out of memory");
    for (uint64_t i = 0; asked && i < own; i++) {
        uint64_t k = CT_SPREAD + (uint64_t)me * own + i;
        cr_counting_set_count(cs, &k, ct_got_count, &asked[i]);
        if (i % 2 == 0)
            cr_map_erase(m, &k);
    }
    cr_barrier(comm);
    uint64_t wrong = 0;
    for (uint64_t i = 0; asked && i < own; i++)
        wrong += asked[i].answers != 1 || asked[i].got != 1;
    free(asked);
    wrong = ct_sum(comm, wrong);
    CT_CHECK(comm, wrong == 0, "%llu look-ups did not see their key's one add",
             (unsigned long long)wrong);
    uint64_t size = cr_map_size(m), want = (uint64_t)p * (own / 2);
    CT_CHECK(comm, size == want, "after erasing every other key the map holds %llu keys, want %llu",
             (unsigned long long)size, (unsigned long long)want);
    ct_cc c = {.p = (uint64_t)p};
    cr_map_for_all(m, ct_cc_value, &c);
    CT_CHECK(comm, ct_sum(comm, c.wrong) == 0 && ct_sum(comm, c.seen) == want,
             "the keys left hold wrong values or are not all seen");
    cr_map_destroy(m);
    cr_counting_set_destroy(cs);
    return ct_fails - before;
}

/* Everything, at sizes for a test. */
/* What a counting set of 8-byte keys holds against the expected counts. */
static void ct_check_count8(const void *key, uint64_t count, void *user)
{
    ct_count_check *c = user;
    uint64_t k;
    memcpy(&k, key, sizeof k);
    c->seen++;
    CT_CHECK(c->comm, k < c->nkeys && count == c->expect[k],
             "insert_many: key %llu counted %llu times, expected %llu", (unsigned long long)k,
             (unsigned long long)count, (unsigned long long)(k < c->nkeys ? c->expect[k] : 0));
}

/* cr_counting_set_insert_many in chunks of 1 to 300 keys, on 8-byte keys (the count
 * cache's run) and on 20-byte keys (one by one): `per_rank` keys of nkeys that repeat,
 * then `own` keys seen once (the cache rests, its run is left), then the repeating
 * ones again. Exact counts and sizes; a key the run skips or counts twice fails. */
static long ct_insert_many(cr_comm *comm, uint64_t nkeys, uint64_t per_rank, uint64_t own)
{
    long before = ct_fails;
    int me = cr_comm_rank(comm), p = cr_comm_size(comm);
    uint64_t all = nkeys + own * (uint64_t)p, n = 2 * per_rank + own;
    uint64_t *expect = calloc(all, sizeof *expect), *keys = malloc(n * sizeof *keys);
    ct_key *wide = malloc(n * sizeof *wide);
    for (int r = 0; r < p; r++) {
        for (uint64_t i = 0; i < 2 * per_rank; i++)
            expect[ct_key_of(r, i, nkeys)]++;
        for (uint64_t j = 0; j < own; j++)
            expect[nkeys + (uint64_t)r * own + j]++;
    }
    for (uint64_t i = 0, at = 0; i < n; i++) {
        bool hot = i < per_rank || i >= per_rank + own;
        keys[i] = hot ? ct_key_of(me, at++, nkeys) : nkeys + (uint64_t)me * own + (i - per_rank);
        wide[i] = ct_make_key(keys[i]);
    }
    cr_counting_set *cs = ct_counting_set8(comm);
    char err[200];
    cr_counting_set *csw = cr_counting_set_create(comm, sizeof(ct_key), err, sizeof err);
    CT_CHECK(comm, csw != NULL, "%s", err);
    uint64_t rng = 0x1234567ULL + (uint64_t)me;
    for (uint64_t i = 0; i < n;) {
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
        uint64_t m = 1 + (rng >> 33) % 300;
        if (m > n - i)
            m = n - i;
        cr_counting_set_insert_many(cs, keys + i, (size_t)m);
        cr_counting_set_insert_many(csw, wide + i, (size_t)m);
        i += m;
    }
    cr_counting_set_insert_many(cs, keys, 0);
    uint64_t distinct = 0;
    for (uint64_t k = 0; k < all; k++)
        distinct += expect[k] > 0;
    uint64_t size = cr_counting_set_size(cs), wsize = cr_counting_set_size(csw);
    CT_CHECK(comm, size == distinct && wsize == distinct,
             "insert_many: %llu and %llu distinct keys, expected %llu", (unsigned long long)size,
             (unsigned long long)wsize, (unsigned long long)distinct);
    ct_count_check c = {.expect = expect, .nkeys = all, .fails = &ct_fails, .comm = comm};
    cr_counting_set_for_all(cs, ct_check_count8, &c);
    ct_count_check cw = {.expect = expect, .nkeys = all, .fails = &ct_fails, .comm = comm};
    cr_counting_set_for_all(csw, ct_check_count, &cw);
    cr_counting_set_destroy(csw);
    cr_counting_set_destroy(cs);
    free(wide);
    free(keys);
    free(expect);
    return ct_fails - before;
}

static inline long ct_all(cr_comm *comm, uint64_t seed)
{
    long f = 0;
    f += ct_counting(comm, 300, 2000);
    f += ct_count_cache(comm, 3000);
    /* every rank works out every rank's keys: fewer of them at many ranks, and no keys
     * seen once beyond 16 (their expected counts would take memory per rank and rank) */
    int p = cr_comm_size(comm);
    f += ct_insert_many(comm, 200, p <= 64 ? 1500 : 200, p <= 16 ? 3000 : 0);
    f += ct_units_wait(comm, 3000);
    f += ct_map_rules(comm, 200);
    f += ct_double_sums(comm, 100);
    f += ct_erase_and_get(comm, 500);
    f += ct_visits_chain(comm, 64, 6);
    f += ct_bag(comm);
    f += ct_disjoint(comm, 2000, 1500, seed);
    return f;
}

#endif
