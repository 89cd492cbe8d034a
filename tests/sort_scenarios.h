/* cr_sort's scenarios (include/courier/sort.h), shared by the MPI test
 * (tests/mpi/test_sort.c) and the simulated transport (tests/sim/test_sim_sort.c).
 * Every record carries who made it (rank, index), so each check is exact:
 *  - order: cr_sort_check_order, and a scan of each rank's block;
 *  - nothing lost or duplicated: the count, and two sums over all ranks of two
 *    different hashes of every record's bytes, before and after;
 *  - balance: every rank holds exactly its block (cr_darray_block's sizes), or,
 *    under a tolerance, within it;
 *  - stability: with the stable flag, equal keys keep (rank, index) order across
 *    ranks, checked by a comparator of (key, rank, index).
 * Global sums go through cr_allreduce, so the scenarios run on either transport. */
#ifndef COURIER_TESTS_SORT_SCENARIOS_H
#define COURIER_TESTS_SORT_SCENARIOS_H

#include "scenario_check.h"

#include <courier.h>

#include <stdlib.h>
#include <string.h>

static long st_fails;
#define ST_CHECK(comm, cond, ...) SCENARIO_CHECK(st_fails, cr_comm_rank(comm), cond, __VA_ARGS__)

/* How keys are drawn. */
typedef enum st_keys {
    ST_UNIFORM,   /* any 64-bit value */
    ST_SKEWED,    /* nine in ten equal 7, the rest uniform below 1000 */
    ST_ALL_EQUAL, /* every key 42 */
    ST_FEW,       /* 3 distinct values */
    ST_SIGNED,    /* signed, both signs (an int64 or a double key) */
    ST_BYTEWISE,  /* each of the 8 bytes one of 0, 1 and 255: ties at every digit */
} st_keys;

/* How many records each rank starts with. */
typedef enum st_spread {
    ST_EVEN,      /* base + a little per rank */
    ST_ONE_RANK,  /* rank 0 holds every record */
    ST_SOME_EMPTY /* every third rank holds none */
} st_spread;

/* A record: its key, then who made it, then filler up to `bytes`. */
typedef struct st_head {
    uint64_t key;
    uint32_t rank;
    uint32_t index;
} st_head;

typedef struct st_case {
    size_t bytes;       /* 8 (the key alone) .. 4096; the stable cases at least 16 */
    st_keys keys;
    st_spread spread;
    uint64_t base;      /* records per rank (ST_EVEN), or in all (ST_ONE_RANK) */
    int order;          /* 0 key field CR_UINT64, 1 CR_INT64, 2 CR_DOUBLE, 3 key fn, 4 comparator */
    bool stable;
    double tolerance;
} st_case;

static uint64_t st_mix(uint64_t x)
{
    return cr_rng_hash64(x);
}

static uint64_t st_key(const st_case *c, int r, uint64_t i)
{
    uint64_t h = st_mix(((uint64_t)r << 40) ^ i ^ 0x5bd1e995ULL);
    switch (c->keys) {
    case ST_UNIFORM: return h;
    case ST_SKEWED: return h % 10 ? 7 : st_mix(h) % 1000;
    case ST_ALL_EQUAL: return 42;
    case ST_FEW: return h % 3 * 1000;
    case ST_BYTEWISE: {
        uint64_t k = 0;
        for (int b = 0; b < 8; b++, h /= 3)
            k |= (uint64_t)(h % 3 == 2 ? 255 : h % 3) << (8 * b);
        return k;
    }
    case ST_SIGNED:
        if (c->order == 2) {
            double d = (double)(int64_t)(h % 2001) - 1000.0;
            d = h % 17 == 0 ? -0.0 : d / 8;
            uint64_t bits;
            memcpy(&bits, &d, 8);
            return bits;
        }
        return (uint64_t)((int64_t)(h % 2001) - 1000);
    }
    return h;
}

static uint64_t st_count_of(const st_case *c, int r, int p)
{
    switch (c->spread) {
    case ST_EVEN: return c->base + (uint64_t)(r * 37 % 101);
    case ST_ONE_RANK: return r == 0 ? c->base * (uint64_t)p : 0;
    case ST_SOME_EMPTY: return r % 3 == 1 ? 0 : c->base + (uint64_t)r;
    }
    (void)p;
    return 0;
}

static uint64_t st_key_fn(const void *rec, void *user)
{
    (void)user;
    uint64_t k;
    memcpy(&k, rec, 8);
    return k;
}

/* The comparator: keys as unsigned, descending by the low bit first, then by the
 * rest, so it differs from the plain key order (and is a strict weak order). */
static int st_compare(const void *a, const void *b, void *user)
{
    (void)user;
    uint64_t ka, kb;
    memcpy(&ka, a, 8);
    memcpy(&kb, b, 8);
    uint64_t ta = (~ka & 1) << 63 | ka >> 1, tb = (~kb & 1) << 63 | kb >> 1;
    return (ta > tb) - (ta < tb);
}

static void st_opts(const st_case *c, cr_sort_opts *o)
{
    cr_sort_opts_init(o);
    o->record_bytes = c->bytes;
    switch (c->order) {
    case 0: o->key_type = CR_UINT64; break;
    case 1: o->key_type = CR_INT64; break;
    case 2: o->key_type = CR_DOUBLE; break;
    case 3: o->key = st_key_fn; break;
    default: o->compare = st_compare; break;
    }
    o->stable = c->stable;
    o->tolerance = c->tolerance;
}

/* The order the stable flag promises: the key's order, then rank, then index. */
static const cr_sort_opts *st_stable_base;
static int st_compare_stable(const void *a, const void *b, void *user)
{
    (void)user;
    const cr_sort_opts *o = st_stable_base;
    int c;
    if (o->compare) {
        c = o->compare(a, b, o->user);
    } else {
        /* the key's order through a one-rank check of two records */
        uint64_t ka, kb;
        memcpy(&ka, a, 8);
        memcpy(&kb, b, 8);
        if (o->key_type == CR_INT64) {
            c = ((int64_t)ka > (int64_t)kb) - ((int64_t)ka < (int64_t)kb);
        } else if (o->key_type == CR_DOUBLE) {
            uint64_t ta = (ka >> 63) ? ~ka : ka ^ (1ULL << 63);
            uint64_t tb = (kb >> 63) ? ~kb : kb ^ (1ULL << 63);
            c = (ta > tb) - (ta < tb);
        } else {
            c = (ka > kb) - (ka < kb);
        }
    }
    if (c)
        return c;
    st_head ha, hb;
    memcpy(&ha, a, sizeof ha);
    memcpy(&hb, b, sizeof hb);
    if (ha.rank != hb.rank)
        return ha.rank < hb.rank ? -1 : 1;
    return (ha.index > hb.index) - (ha.index < hb.index);
}

static uint64_t st_sum(cr_comm *comm, uint64_t v)
{
    uint64_t all;
    cr_allreduce(comm, &v, &all, 1, CR_UINT64, CR_OP_SUM, NULL);
    return all;
}

/* Two sums of two hashes of every record's bytes: what a lost, duplicated or
 * altered record changes. */
static void st_fingerprint(const char *rec, size_t n, size_t bytes, uint64_t out[2])
{
    out[0] = out[1] = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t h = 0x84222325cbf29ce4ULL, g = 17;
        for (size_t b = 0; b < bytes; b++) {
            h = (h ^ (unsigned char)rec[i * bytes + b]) * 0x100000001b3ULL;
            g = g * 31 + (unsigned char)rec[i * bytes + b];
        }
        out[0] += st_mix(h);
        out[1] += st_mix(g ^ 0xabcdef);
    }
}

/* Run one case on this comm; returns the number of failed checks on this rank. */
static long st_run(cr_comm *comm, const st_case *c)
{
    st_fails = 0;
    int p = cr_comm_size(comm), r = cr_comm_rank(comm);
    size_t n = (size_t)st_count_of(c, r, p);
    char *rec = n ? malloc(n * c->bytes) : NULL;
    ST_CHECK(comm, !n || rec, "out of memory for %zu records", n);
    for (size_t i = 0; i < n; i++) {
        char *e = rec + i * c->bytes;
        memset(e, 0, c->bytes);
        st_head h = {.key = st_key(c, r, i), .rank = (uint32_t)r, .index = (uint32_t)i};
        memcpy(e, &h, c->bytes < sizeof h ? c->bytes : sizeof h);
        for (size_t b = sizeof h; b < c->bytes; b++)
            e[b] = (char)(h.key * 131 + b + i);
    }
    uint64_t before[2], after[2];
    st_fingerprint(rec, n, c->bytes, before);
    uint64_t total = st_sum(comm, n);
    uint64_t fb0 = st_sum(comm, before[0]), fb1 = st_sum(comm, before[1]);

    cr_sort_opts o;
    st_opts(c, &o);
    cr_sort_stats stats;
    void *data = rec;
    size_t count = n;
    cr_sort(comm, &data, &count, &o, &stats);

    ST_CHECK(comm, stats.total == total, "stats.total %llu, expected %llu",
             (unsigned long long)stats.total, (unsigned long long)total);
    ST_CHECK(comm, st_sum(comm, count) == total, "records after the sort differ in number from the %llu before",
             (unsigned long long)total);
    st_fingerprint(data, count, c->bytes, after);
    ST_CHECK(comm, st_sum(comm, after[0]) == fb0 && st_sum(comm, after[1]) == fb1,
             "the multiset of records changed (a record lost, duplicated or altered)");
    ST_CHECK(comm, (count == 0) == (data == NULL), "count %zu with records %p", count, data);
    uint64_t breaks = cr_sort_check_order(comm, data, count, &o);
    ST_CHECK(comm, breaks == 0, "%llu places out of order", (unsigned long long)breaks);
    if (c->stable) {
        cr_sort_opts full;
        cr_sort_opts_init(&full);
        full.record_bytes = c->bytes;
        full.compare = st_compare_stable;
        st_stable_base = &o;
        breaks = cr_sort_check_order(comm, data, count, &full);
        ST_CHECK(comm, breaks == 0, "%llu places where equal keys left input order",
                 (unsigned long long)breaks);
    }
    uint64_t want = total / (uint64_t)p + ((uint64_t)r < total % (uint64_t)p);
    if (c->tolerance == 0) {
        ST_CHECK(comm, count == want, "holds %zu records, its block has %llu", count,
                 (unsigned long long)want);
    } else {
        double share = (double)total / p;
        ST_CHECK(comm, count == want || ((double)count <= share * (1 + c->tolerance) &&
                                         (double)count >= share * (1 - c->tolerance)),
                 "holds %zu records, outside the tolerance %g of %g", count, c->tolerance, share);
    }
    /* the buckets' bound of sort.h, at most 1.5 N / P + 1, met by the first draw: the
     * sample is a fixed function of the seed and the records, and a redraw here would
     * mean splitters cut from a sample that was not sorted or not drawn evenly */
    uint64_t bound = (total + (uint64_t)p - 1) / (uint64_t)p * 3 / 2 + 1;
    ST_CHECK(comm, stats.largest <= bound && stats.draws <= 1,
             "largest bucket %llu (bound %llu) after %u draws", (unsigned long long)stats.largest,
             (unsigned long long)bound, stats.draws);
    free(data);
    return st_fails;
}

/* Collect a bag's local items into an array (cr_bag_for_all). */
typedef struct st_collect {
    char *at;
    size_t n, bytes;
} st_collect;

static void st_collect_item(void *item, void *user)
{
    st_collect *c = user;
    memcpy(c->at + c->n++ * c->bytes, item, c->bytes);
}

/* A darray of 8-byte keys and a bag of 24-byte records, sorted where they are: the
 * darray's blocks keep their sizes and end in order, the bag's items too, and
 * neither loses or changes an element. */
static long st_containers(cr_comm *comm, uint64_t base)
{
    st_fails = 0;
    int p = cr_comm_size(comm), r = cr_comm_rank(comm);
    uint64_t n = base * (uint64_t)p + 7, first, count, before[2], after[2];
    cr_darray *a = cr_darray_create(comm, n, 8, NULL);
    uint64_t *el = cr_darray_local(a, &first, &count);
    for (uint64_t i = 0; i < count; i++)
        el[i] = st_mix(first + i) % (n / 2 + 1); /* duplicates too */
    st_fingerprint((const char *)el, count, 8, before);
    uint64_t fb0 = st_sum(comm, before[0]), fb1 = st_sum(comm, before[1]);
    cr_sort_opts o;
    cr_sort_opts_init(&o);
    o.record_bytes = 8;
    o.key_type = CR_UINT64;
    cr_darray_sort(a, &o, NULL);
    uint64_t first2, count2;
    el = cr_darray_local(a, &first2, &count2);
    ST_CHECK(comm, first2 == first && count2 == count, "the darray's block moved");
    st_fingerprint((const char *)el, count2, 8, after);
    ST_CHECK(comm, st_sum(comm, after[0]) == fb0 && st_sum(comm, after[1]) == fb1,
             "the darray's elements changed in the sort");
    ST_CHECK(comm, cr_sort_check_order(comm, el, count2, &o) == 0, "the darray is not sorted");
    cr_darray_destroy(a);

    char err[200];
    cr_bag *bag = cr_bag_create(comm, 24, err, sizeof err);
    ST_CHECK(comm, bag != NULL, "%s", err);
    if (!bag)
        return st_fails;
    uint64_t mine = base + (uint64_t)(r % 3) * base;
    for (uint64_t i = 0; i < mine; i++) {
        char item[24] = {0};
        st_head h = {.key = st_mix(i * 977 + (uint64_t)r) % 100, .rank = (uint32_t)r,
                     .index = (uint32_t)i};
        memcpy(item, &h, sizeof h);
        cr_bag_insert_at(bag, (int)((uint64_t)(r + 1) * 7 % (uint64_t)p), item);
    }
    uint64_t total = cr_bag_size(bag);
    ST_CHECK(comm, total == st_sum(comm, mine), "the bag holds %llu items",
             (unsigned long long)total);
    cr_sort_opts_init(&o);
    o.record_bytes = 24;
    o.compare = st_compare;
    o.stable = true;
    cr_bag_sort(bag, &o, NULL);
    size_t held = (size_t)cr_bag_local_size(bag);
    st_collect c = {.at = malloc(held ? held * 24 : 1), .bytes = 24};
    cr_bag_for_all(bag, st_collect_item, &c);
    uint64_t want = total / (uint64_t)p + ((uint64_t)r < total % (uint64_t)p);
    ST_CHECK(comm, held == want, "the bag's rank holds %zu items, its block %llu", held,
             (unsigned long long)want);
    ST_CHECK(comm, cr_sort_check_order(comm, c.at, c.n, &o) == 0, "the bag is not sorted");
    ST_CHECK(comm, st_sum(comm, c.n) == total, "the bag lost or gained items in the sort");
    free(c.at);
    cr_bag_destroy(bag);
    return st_fails;
}

/* Every case, at a size scaled by `base`. */
static long st_all(cr_comm *comm, uint64_t base)
{
    const st_case cases[] = {
        {16, ST_UNIFORM, ST_EVEN, base, 0, false, 0},
        {8, ST_BYTEWISE, ST_EVEN, base, 0, false, 0},
        {16, ST_BYTEWISE, ST_SOME_EMPTY, base, 3, true, 0},
        {8 + 8, ST_SKEWED, ST_EVEN, base, 0, false, 0},
        {16, ST_ALL_EQUAL, ST_EVEN, base, 0, false, 0},
        {16, ST_ALL_EQUAL, ST_ONE_RANK, base, 0, true, 0},
        {16, ST_FEW, ST_SOME_EMPTY, base, 3, true, 0},
        {64, ST_UNIFORM, ST_EVEN, base, 4, false, 0},
        {64, ST_FEW, ST_EVEN, base, 4, true, 0},
        {24, ST_SIGNED, ST_EVEN, base, 1, true, 0},
        {24, ST_SIGNED, ST_SOME_EMPTY, base, 2, false, 0},
        {16, ST_UNIFORM, ST_ONE_RANK, base, 0, false, 0.25},
        {16, ST_UNIFORM, ST_EVEN, base, 3, false, 0.25},
        {16, ST_UNIFORM, ST_ONE_RANK, 0, 0, false, 0}, /* no records on any rank */
        {200, ST_SKEWED, ST_EVEN, base / 4 + 1, 4, true, 0},
    };
    long fails = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        long f = st_run(comm, &cases[i]);
        if (f)
            fprintf(stderr, "rank %d: sort case %zu: %ld checks failed\n", cr_comm_rank(comm), i, f);
        fails += f;
    }
    long f = st_containers(comm, base / 4 + 3);
    if (f)
        fprintf(stderr, "rank %d: the darray and bag sorts: %ld checks failed\n",
                cr_comm_rank(comm), f);
    return fails + f;
}

#endif
