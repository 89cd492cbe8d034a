/* container_bench: the containers on the histogram's workload. Each rank inserts N
 * random 8-byte keys out of K into a counting set (cr_counting_set_insert_many, in
 * chunks of 256), or adds 1 to the key's value in a map (cr_map_insert with the rule
 * sum, YGM's map.async_reduce), timed to the barrier that applies every insert; then verified:
 * the counts sum to N*P, every key's count matches a recount of every rank's stream,
 * and the number of distinct keys is right. */
#include "cli.h"

#include <courier.h>
#include <courier/rng.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: mpirun -np P container_bench [options]\n"
    "\n"
    "Each rank inserts N random 8-byte keys (uniform over K keys) into a distributed\n"
    "counting set, or into a map that adds each insert's 1 to the key's value (YGM's\n"
    "map.async_reduce); then the result is verified against a recount.\n"
    "\n"
    "  --inserts N      inserts per rank (default 8M; suffixes K, M, G)\n"
    "  --keys K         distinct keys drawn from (default 1000)\n"
    "  --structure S[,S]  counting-set, map, local-array (default: the first two).\n"
    "                   local-array is no container: the same loop adding 1 to a\n"
    "                   counter of the rank's own array of K, nothing sent; the\n"
    "                   floor under any insert the loop can call (K * 8 bytes a rank)\n"
    "  --no-combining   merge inserts only at the owner, never on the way\n"
    "  --scramble       insert key i as a 64-bit hash of i, not i itself (the same\n"
    "                   keys, as scripts/ygm/ygm_bench.cpp scramble draws them)\n"
    "  --reserve        size each rank's table for its share of K keys first\n"
    "                   (cr_map_reserve), so that it does not grow while timed\n"
    "  --reps R         repetitions per structure; the median is reported (default 3)\n"
    "  --seed S         random seed (default 1)\n"
    "  --buffer-kb K    Courier flush threshold in KiB (default: COURIER_BUFFER_SIZE or 64)\n"
    "  --route R        direct, nr, nlnr, grid, grid:AxB..., hypercube (default:\n"
    "                   COURIER_ROUTE or direct)\n"
    "  --node-size K    each node cut into virtual nodes of K ranks\n"
    "\n"
    "--validate: yes recounts every key; auto (the default) recounts when N * P * K\n"
    "is small.\n";

enum { S_COUNTING, S_MAP, S_LOCAL, NSTRUCTURES };
static const char *const structure_names[] = {"counting-set", "map", "local-array", NULL};

typedef struct bench {
    app a;
    cr_comm *comm;
    uint64_t n, keys, seed;
    int reps, combining, scramble, reserve;
} bench;

/* The key of index i: i, or with --scramble a 64-bit hash of it. */
static uint64_t key_of(const bench *b, uint64_t i)
{
    return b->scramble ? cr_rng_hash64(i) : i;
}

static uint64_t stream_seed(uint64_t seed, int rank)
{
    return cr_rng_hash64(seed * 0x100000001b3ULL + (uint64_t)rank);
}

#define INSERT_CHUNK 256

/* One timed run; returns the seconds (the slowest rank's) and leaves the container,
 * or the counts in `local` (K counters) when it is not NULL. */
static double insert_all(bench *b, cr_counting_set *cs, cr_map *m, uint64_t *local)
{
    cr_barrier(b->comm);
    double t0 = MPI_Wtime();
    uint64_t s = stream_seed(b->seed, b->a.rank), one = 1;
    if (local)
        for (uint64_t i = 0; i < b->n; i++)
            local[cr_rng_bounded(cr_rng_next(&s), b->keys)]++; /* key_of's index */
    else if (cs) /* the keys in chunks, one call each (cr_counting_set_insert_many) */
        for (uint64_t i = 0; i < b->n; i += INSERT_CHUNK) {
            uint64_t keys[INSERT_CHUNK];
            size_t m = b->n - i < INSERT_CHUNK ? (size_t)(b->n - i) : INSERT_CHUNK;
            for (size_t j = 0; j < m; j++)
                keys[j] = key_of(b, cr_rng_bounded(cr_rng_next(&s), b->keys));
            cr_counting_set_insert_many(cs, keys, m);
        }
    else
        for (uint64_t i = 0; i < b->n; i++) {
            uint64_t key = key_of(b, cr_rng_bounded(cr_rng_next(&s), b->keys));
            cr_map_insert(m, &key, &one);
        }
    cr_barrier(b->comm);
    return app_max_time(MPI_Wtime() - t0);
}

typedef struct tally {
    uint64_t total, keys, wrong;
    const uint64_t *expect; /* every key's count, or NULL */
} tally;

static void tally_key(const void *key, void *value, void *user)
{
    tally *t = user;
    uint64_t k, c;
    memcpy(&k, key, sizeof k);
    memcpy(&c, value, sizeof c);
    t->total += c;
    t->keys++;
    if (t->expect && t->expect[k] != c)
        t->wrong++;
}

/* The counts sum to N*P*reps; with a recount, every key's count and the number of
 * distinct keys match. Collective. */
static bool verify(bench *b, cr_map *m, int reps, bool recount)
{
    uint64_t *expect = NULL, distinct = 0;
    if (recount) {
        expect = app_calloc(&b->a, b->keys, sizeof *expect, "the recount");
        for (int r = 0; r < b->a.size; r++) {
            uint64_t s = stream_seed(b->seed, r);
            for (uint64_t i = 0; i < b->n; i++)
                expect[cr_rng_bounded(cr_rng_next(&s), b->keys)] += (uint64_t)reps;
        }
        for (uint64_t k = 0; k < b->keys; k++)
            distinct += expect[k] > 0;
    }
    tally t = {.expect = expect};
    cr_map_for_all(m, tally_key, &t);
    uint64_t in[3] = {t.total, t.keys, t.wrong}, sum[3];
    MPI_Allreduce(in, sum, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    free(expect);
    bool ok = sum[0] == b->n * (uint64_t)b->a.size * (uint64_t)reps && sum[2] == 0 &&
              (!recount || sum[1] == distinct);
    if (!ok && b->a.rank == 0)
        fprintf(stderr, "container_bench: counts sum to %llu (expected %llu), %llu keys "
                "(expected %llu), %llu wrong\n", (unsigned long long)sum[0],
                (unsigned long long)(b->n * (uint64_t)b->a.size * (uint64_t)reps),
                (unsigned long long)sum[1], (unsigned long long)distinct,
                (unsigned long long)sum[2]);
    return ok;
}

/* The local arrays: every rank's counters sum to N*reps; with a recount, the
 * counters summed over the ranks match it key by key. Collective. */
static bool verify_local(bench *b, const uint64_t *local, int reps, bool recount)
{
    uint64_t total = 0, sum, want = b->n * (uint64_t)reps;
    for (uint64_t k = 0; k < b->keys; k++)
        total += local[k];
    bool ok = total == want;
    if (recount) {
        uint64_t *all = app_calloc(&b->a, b->keys, sizeof *all, "the recount");
        for (uint64_t k = 0; k < b->keys; k += 1u << 24) { /* counts that fit an int */
            uint64_t n = b->keys - k < (1u << 24) ? b->keys - k : 1u << 24;
            MPI_Allreduce(local + k, all + k, (int)n, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        }
        for (int r = 0; r < b->a.size; r++) {
            uint64_t s = stream_seed(b->seed, r);
            for (uint64_t i = 0; i < b->n; i++)
                all[cr_rng_bounded(cr_rng_next(&s), b->keys)] -= (uint64_t)reps;
        }
        for (uint64_t k = 0; k < b->keys; k++)
            ok &= all[k] == 0;
        free(all);
    }
    uint64_t bad = !ok;
    MPI_Allreduce(&bad, &sum, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (sum && b->a.rank == 0)
        fprintf(stderr, "container_bench: the local arrays' counts do not match the inserts "
                "on %llu ranks\n", (unsigned long long)sum);
    return sum == 0;
}

static int compare_doubles(const void *x, const void *y)
{
    double a = *(const double *)x, c = *(const double *)y;
    return (a > c) - (a < c);
}

/* One structure: created, filled --reps times (the median time), checked, and its line
 * and CSV line on rank 0. Returns whether it verified. */
static bool run_structure(bench *b, int st, bool recount, FILE *csv, size_t buffer_bytes,
                          const char *route)
{
    char err[200];
    cr_counting_set *cs = NULL;
    cr_map *m = NULL;
    uint64_t *local = NULL;
    cr_map_opts mo = {.key_len = 8, .value_len = 8, .merge = CR_OP_SUM,
                      .type = CR_UINT64, .no_combining = !b->combining};
    if (st == S_LOCAL) {
        local = app_calloc(&b->a, b->keys, sizeof *local, "the local array");
    } else if (st == S_COUNTING) {
        cs = cr_counting_set_create(b->comm, 8, err, sizeof err);
        m = cs ? cr_counting_set_map(cs) : NULL;
    } else {
        m = cr_map_create(b->comm, &mo, err, sizeof err);
    }
    if (!m && !local)
        app_error(&b->a, "%s", err);
    if (m && b->reserve && !cr_map_reserve(m, b->keys))
        app_error(&b->a, "out of memory reserving room for %llu keys",
                  (unsigned long long)b->keys);
    /* The counting set has no switch of its own: --no-combining measures the map. */
    double times[1000];
    for (int r = 0; r < b->reps; r++)
        times[r] = insert_all(b, cs, cs ? NULL : m, local);
    qsort(times, (size_t)b->reps, sizeof times[0], compare_doubles);
    double t = times[b->reps / 2];
    bool ok = local ? verify_local(b, local, b->reps, recount) : verify(b, m, b->reps, recount);
    double rate = (double)b->n * b->a.size / t;
    if (b->a.rank == 0) {
        printf("  %-13s %8.4f s  %8.2f M inserts/s  %s\n", structure_names[st], t, rate / 1e6,
               ok ? (recount ? "verified" : "verified (sum)") : "WRONG");
        if (csv)
            fprintf(csv, "%s,%d,%llu,%llu,%d,%zu,%s,%.6f,%.1f,%d\n", structure_names[st],
                    b->a.size, (unsigned long long)b->n, (unsigned long long)b->keys,
                    b->combining, buffer_bytes, route, t, rate, ok);
    }
    free(local);
    if (cs)
        cr_counting_set_destroy(cs);
    else if (m)
        cr_map_destroy(m);
    return ok;
}

int main(int argc, char **argv)
{
    bench b = {.n = 8u << 20, .keys = 1000, .reps = 3, .combining = 1};
    app_init(&b.a, "container_bench", usage, &argc, &argv);
    int want[NSTRUCTURES] = {1, 1, 0}, validate;
    app_shared sh;
    app_shared_init(&sh);
    static const struct option opts[] = {
        APP_LONG_SEED, APP_LONG_BUFFER_KB, APP_LONG_ROUTE, APP_LONG_NODE_SIZE,
        {"inserts", required_argument, 0, 'n'},    {"keys", required_argument, 0, 'k'},
        {"structure", required_argument, 0, 's'},  {"no-combining", no_argument, 0, 'C'},
        {"reps", required_argument, 0, 'r'},       {"scramble", no_argument, 0, 'X'},
        {"reserve", no_argument, 0, 'R'},          APP_LONG_COMMON, {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'n': b.n = app_parse_u64(&b.a, "--inserts", optarg, 1, 1ULL << 34); break;
        case 'k': b.keys = app_parse_u64(&b.a, "--keys", optarg, 1, 1ULL << 40); break;
        case 's': {
            const char *p = optarg;
            memset(want, 0, sizeof want);
            while (*p) {
                size_t len = strcspn(p, ",");
                char name[32];
                if (len == 0 || len >= sizeof name)
                    app_usage_error(&b.a, "bad value for --structure: '%s'", optarg);
                memcpy(name, p, len);
                name[len] = 0;
                want[app_parse_choice(&b.a, "--structure", name, structure_names)] = 1;
                p += len + (p[len] == ',');
            }
            break;
        }
        case 'C': b.combining = 0; break;
        case 'X': b.scramble = 1; break;
        case 'R': b.reserve = 1; break;
        case 'r': b.reps = (int)app_parse_u64(&b.a, "--reps", optarg, 1, 1000); break;
        default: app_other_option(&b.a, ch, optarg, &sh, argv);
        }
    }
    app_no_operands(&b.a, argc, argv);
    b.seed = sh.seed;
    validate = app_validate_or(&sh, APP_VALIDATE_AUTO);
    /* A slot of 8-byte keys is 16 bytes; a table doubles at three quarters full,
     * holding the old and the new one meanwhile: at most 64 bytes per key (96 leaves
     * room for the hash's unevenness between ranks); the recount holds 8 bytes per
     * key on every rank. */
    double need = (double)b.keys * 96 + (validate == 1 ? (double)b.keys * 8 * b.a.size : 0) +
                  (want[S_LOCAL] ? (double)b.keys * 8 * b.a.size : 0);
    double phys = app_physical_memory();
    if (phys > 0 && need > phys)
        app_usage_error(&b.a, "--keys %llu needs about %.1f GiB, more than this machine's "
                        "%.1f GiB", (unsigned long long)b.keys, need / (1 << 30),
                        phys / (1 << 30));
    if (b.scramble && validate == 1)
        app_usage_error(&b.a, "--validate yes recounts by key index: not with --scramble");
    bool recount = validate == 1 || (validate == 2 && !b.scramble &&
                                     (double)b.n * b.a.size <= 4e8 && b.keys <= (1u << 26));

    FILE *csv = app_open_csv(&b.a, sh.csv, "structure,ranks,inserts_per_rank,keys,combining,"
                                           "buffer_bytes,route,seconds,inserts_per_s,verified");
    cr_config cfg;
    app_comm_flags flags = app_shared_comm_flags(&sh);
    b.comm = app_comm_create(&b.a, &flags, &cfg);
    char route[128];
    cr_route_format(&cfg.route, route, sizeof route);
    if (b.a.rank == 0)
        printf("container_bench: %d ranks, %llu inserts per rank over %llu keys, buffer %zu "
               "bytes, route %s, combining %s\n", b.a.size, (unsigned long long)b.n,
               (unsigned long long)b.keys, cfg.buffer_bytes, route, b.combining ? "on" : "off");
    int failed = 0;
    for (int st = 0; st < NSTRUCTURES; st++) {
        if (!want[st])
            continue;
        failed |= !run_structure(&b, st, recount, csv, cfg.buffer_bytes, route);
    }
    if (sh.stats)
        cr_stats_print(b.comm, stdout);
    if (csv)
        fclose(csv);
    app_comm_destroy(b.comm);
    MPI_Finalize();
    return failed ? 1 : 0;
}
