/* Combining handlers (include/courier/dedup.h) end to end, under mpirun, under every
 * route with virtual nodes of 2: every contribution applied exactly once, with heavy
 * duplication, for each built-in rule and a user rule; merges counted. */
#include "harness.h"

#include "courier/rng.h"

#include <courier.h>

#include <stdlib.h>
#include <string.h>

static const char *const routes[] = {"direct", "nr", "nlnr", "grid", "hypercube"};
#define NROUTES (sizeof routes / sizeof routes[0])

/* A configuration: the route, with small buffers so that some records merge at
 * forwarding ranks and some buffers leave before they could merge. */
static cr_config config_for(const char *route, size_t buffer_bytes)
{
    cr_config cfg;
    config_on_route(&cfg, route, buffer_bytes);
    return cfg;
}

#define NKEYS 10
#define ROUNDS 2000

typedef struct update {
    uint64_t key;
    int64_t value;
} update;

/* The owner's table: what the handler saw for each key. */
typedef struct table {
    int64_t value[NKEYS];
    uint64_t records[NKEYS]; /* records handled (after merging) */
    int64_t init;
    int op;
} table;

static int owner_of(uint64_t key, int size)
{
    return (int)(key % (uint64_t)size);
}

/* What rank r contributes to key k in round i: differs by rank, key and round,
 * negative too. */
static int64_t contribution(int r, uint64_t k, int i)
{
    return (int64_t)(cr_rng_hash64((uint64_t)r * 1000003u + k * 7919u + (uint64_t)i) % 2001) - 1000;
}

static void apply(table *t, const update *u)
{
    int64_t *v = &t->value[u->key];
    switch (t->op) {
    case CR_OP_SUM: *v += u->value; break;
    case CR_OP_MIN: *v = u->value < *v ? u->value : *v; break;
    case CR_OP_MAX: *v = u->value > *v ? u->value : *v; break;
    default: *v = u->value; break; /* first / last: record what arrived */
    }
    t->records[u->key]++;
}

static void on_update(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    (void)src;
    table *t = user;
    update u;
    CHECK(len == sizeof u, "length %zu", len);
    memcpy(&u, p, sizeof u);
    CHECK(u.key < NKEYS && owner_of(u.key, cr_comm_size(comm)) == cr_comm_rank(comm),
          "key %llu at rank %d", (unsigned long long)u.key, cr_comm_rank(comm));
    if (u.key < NKEYS)
        apply(t, &u);
}

/* The same with a batch handler, which combining handlers may be too. */
static void on_updates(cr_comm *comm, const cr_batch *b, void *user)
{
    for (size_t i = 0; i < b->count; i++)
        on_update(comm, cr_batch_src(b, i), cr_batch_payload(b, i), b->len, user);
}

/* Every rank sends ROUNDS updates to each of the NKEYS keys (owned by key % P);
 * the owners' results must equal the sequential fold of all contributions. */
static void run_rule(const cr_config *cfg, cr_op op, int batch, const char *what)
{
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, cfg);
    table t = {.op = op};
    t.init = op == CR_OP_MIN ? INT64_MAX : op == CR_OP_MAX ? INT64_MIN : 0;
    for (int k = 0; k < NKEYS; k++)
        t.value[k] = t.init;
    cr_handler_type type = batch ? (cr_handler_type){.batch = on_updates}
                                 : (cr_handler_type){.fn = on_update};
    cr_dedup_rule rule = {.key_len = 8, .op = op, .type = CR_INT64};
    int h = cr_dedup_register(comm, &type, &rule, &t);
    for (int i = 0; i < ROUNDS; i++)
        for (uint64_t k = 0; k < NKEYS; k++) {
            update u = {k, contribution(test_rank, k, i)};
            cr_async(comm, owner_of(k, test_size), h, &u, sizeof u);
        }
    cr_barrier(comm);
    for (uint64_t k = 0; k < NKEYS; k++) {
        if (owner_of(k, test_size) != test_rank)
            continue;
        int64_t want = t.init;
        int found = 0; /* first / last: the value must be one that was sent */
        for (int r = 0; r < test_size; r++)
            for (int i = 0; i < ROUNDS; i++) {
                int64_t c = contribution(r, k, i);
                if (op == CR_OP_SUM)
                    want += c;
                else if (op == CR_OP_MIN)
                    want = c < want ? c : want;
                else if (op == CR_OP_MAX)
                    want = c > want ? c : want;
                else
                    found |= c == t.value[k];
            }
        if (op == CR_OP_FIRST || op == CR_OP_LAST)
            CHECK(found && t.records[k] >= 1, "%s: key %llu holds %lld, which nobody sent",
                  what, (unsigned long long)k, (long long)t.value[k]);
        else
            CHECK(t.value[k] == want, "%s: key %llu is %lld, expected %lld", what,
                  (unsigned long long)k, (long long)t.value[k], (long long)want);
    }
    cr_stats s;
    cr_stats_get(comm, &s);
    uint64_t merged = sum_all(s.merged_at_source + s.merged_at_hops);
    uint64_t handled = sum_all(t.records[0] + t.records[1] + t.records[2] + t.records[3] +
                               t.records[4] + t.records[5] + t.records[6] + t.records[7] +
                               t.records[8] + t.records[9]);
    uint64_t sent = (uint64_t)test_size * ROUNDS * NKEYS;
    CHECK(handled + merged == sent, "%s: %llu handled + %llu merged, %llu sent", what,
          (unsigned long long)handled, (unsigned long long)merged, (unsigned long long)sent);
    /* 2000 records per key and rank: most must merge in 1 KiB buffers */
    CHECK(merged * 2 >= sent, "%s: only %llu of %llu records merged", what,
          (unsigned long long)merged, (unsigned long long)sent);
    /* Whether forwarded records meet at a hop depends on timing here; the simulated
     * transport checks merging at hops (tests/sim/test_sim.c, "merging at hops"). */
    uint64_t forwarded = sum_all(s.forwarded), at_hops = sum_all(s.merged_at_hops);
    if (test_rank == 0 && getenv("DEDUP_VERBOSE"))
        fprintf(stderr, "%s: %llu sent, %llu merged (%llu at hops), %llu forwarded\n", what,
                (unsigned long long)sent, (unsigned long long)merged,
                (unsigned long long)at_hops, (unsigned long long)forwarded);
    check_conserved(comm, sent);
    cr_comm_destroy(comm);
}

static void test_builtin_rules(void **state)
{
    (void)state;
    static const struct { cr_op op; const char *name; } ops[] = {
        {CR_OP_SUM, "sum"}, {CR_OP_MIN, "min"}, {CR_OP_MAX, "max"},
        {CR_OP_FIRST, "first"}, {CR_OP_LAST, "last"}};
    for (size_t r = 0; r < NROUTES; r++) {
        cr_config cfg = config_for(routes[r], 1024);
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            char what[64];
            snprintf(what, sizeof what, "%s under %s", ops[o].name, routes[r]);
            run_rule(&cfg, ops[o].op, (int)(o % 2), what);
        }
    }
    verdict();
}

/* ---------------------------------------------------------------- a user rule */

/* A statistic that needs all of its fields: the sum, the count and an xor of the
 * contributions. */
typedef struct stat_rec {
    uint64_t key;
    int64_t sum;
    uint64_t count;
    uint64_t xor;
} stat_rec;

static void merge_stats(void *dst, const void *src, size_t len, void *user)
{
    (void)len;
    (*(uint64_t *)user)++;
    stat_rec a, b;
    memcpy(&a, dst, sizeof a);
    memcpy(&b, src, sizeof b);
    a.sum += b.sum;
    a.count += b.count;
    a.xor ^= b.xor;
    memcpy(dst, &a, sizeof a);
}

typedef struct stat_table {
    stat_rec got[NKEYS];
} stat_table;

static void on_stat(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    (void)comm, (void)src, (void)len;
    stat_table *t = user;
    stat_rec r;
    memcpy(&r, p, sizeof r);
    if (r.key >= NKEYS)
        return;
    t->got[r.key].sum += r.sum;
    t->got[r.key].count += r.count;
    t->got[r.key].xor ^= r.xor;
}

static void test_user_rule(void **state)
{
    (void)state;
    for (size_t rt = 0; rt < NROUTES; rt++) {
        cr_config cfg = config_for(routes[rt], 2048);
        cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, &cfg);
        stat_table t = {0};
        uint64_t calls = 0;
        cr_dedup_rule rule = {.key_len = 8, .op = CR_OP_USER, .combine = merge_stats,
                              .combine_user = &calls};
        int h = cr_dedup_register(comm, &(cr_handler_type){.fn = on_stat}, &rule, &t);
        for (int i = 0; i < ROUNDS; i++)
            for (uint64_t k = 0; k < NKEYS; k++) {
                int64_t c = contribution(test_rank, k, i);
                stat_rec r = {k, c, 1, cr_rng_hash64((uint64_t)c ^ (uint64_t)test_rank << 40 ^ (uint64_t)i << 20)};
                cr_async(comm, owner_of(k, test_size), h, &r, sizeof r);
            }
        cr_barrier(comm);
        for (uint64_t k = 0; k < NKEYS; k++) {
            if (owner_of(k, test_size) != test_rank)
                continue;
            int64_t sum = 0;
            uint64_t xor = 0;
            for (int r = 0; r < test_size; r++)
                for (int i = 0; i < ROUNDS; i++) {
                    int64_t c = contribution(r, k, i);
                    sum += c;
                    xor ^= cr_rng_hash64((uint64_t)c ^ (uint64_t)r << 40 ^ (uint64_t)i << 20);
                }
            CHECK(t.got[k].sum == sum && t.got[k].count == (uint64_t)test_size * ROUNDS &&
                      t.got[k].xor == xor,
                  "user rule under %s: key %llu: sum %lld count %llu, expected %lld and %llu",
                  routes[rt], (unsigned long long)k, (long long)t.got[k].sum,
                  (unsigned long long)t.got[k].count, (long long)sum,
                  (unsigned long long)test_size * ROUNDS);
        }
        cr_stats s;
        cr_stats_get(comm, &s);
        CHECK(calls == s.merged_at_source + s.merged_at_hops, "%llu combine calls, %llu merges",
              (unsigned long long)calls,
              (unsigned long long)(s.merged_at_source + s.merged_at_hops));
        CHECK(sum_all(calls) > 0, "nothing merged under %s", routes[rt]);
        check_conserved(comm, (uint64_t)test_size * ROUNDS * NKEYS);
        cr_comm_destroy(comm);
    }
    verdict();
}

/* Records for different destinations never merge, even with equal keys; records of
 * different lengths never merge. Every rank sends key 0 to every rank, in two
 * lengths: each rank must get exactly one contribution per sender and length. */
typedef struct per_dest {
    uint64_t short_sum, long_sum;
} per_dest;

static void on_keyed(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    (void)comm, (void)src;
    per_dest *d = user;
    int64_t v;
    memcpy(&v, (const char *)p + 8, sizeof v);
    if (len == 16)
        d->short_sum += (uint64_t)v;
    else
        d->long_sum += (uint64_t)v;
}

static void test_keys_are_per_destination(void **state)
{
    (void)state;
    for (size_t rt = 0; rt < NROUTES; rt++) {
        cr_config cfg = config_for(routes[rt], 65536);
        cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, &cfg);
        per_dest d = {0};
        cr_dedup_rule rule = {.key_len = 8, .op = CR_OP_SUM, .type = CR_UINT64};
        int h = cr_dedup_register(comm, &(cr_handler_type){.fn = on_keyed}, &rule, &d);
        for (int dst = 0; dst < test_size; dst++) {
            uint64_t shortrec[2] = {0, (uint64_t)dst + 1};
            uint64_t longrec[3] = {0, 1000 * ((uint64_t)dst + 1), 0};
            cr_async(comm, dst, h, shortrec, sizeof shortrec);
            cr_async(comm, dst, h, longrec, sizeof longrec);
        }
        cr_barrier(comm);
        uint64_t me = (uint64_t)test_rank + 1, p = (uint64_t)test_size;
        CHECK(d.short_sum == p * me && d.long_sum == 1000 * p * me,
              "under %s: rank %d got %llu and %llu, expected %llu and %llu", routes[rt],
              test_rank, (unsigned long long)d.short_sum, (unsigned long long)d.long_sum,
              (unsigned long long)(p * me), (unsigned long long)(1000 * p * me));
        check_conserved(comm, 2 * p * p);
        cr_comm_destroy(comm);
    }
    verdict();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_rules),
        cmocka_unit_test(test_user_rule),
        cmocka_unit_test(test_keys_are_per_destination),
    };
    return RUN_MPI_TESTS(argc, argv, tests);
}
