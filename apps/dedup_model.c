/* dedup_model: what merging does at many ranks, on the simulated transport (one
 * process, no mpirun). The two workloads of apps/histogram with skewed keys, at P
 * virtual ranks under a route: updates (one-way, a summing combining handler vs the
 * same records without combining) and reads (requests with replies, merged and
 * coalesced vs never merged). For each it counts the records that reach their
 * owners, the most on one rank, what merged where, and the buffers sent: the
 * figures of docs/dedup.md's table at P = 1024. Counts, not times: the simulation
 * has no clock of its own (docs/simulation.md). Every run is verified. */
#include "cli.h"
#include "skew.h"
#include <courier/rng.h>

#include <courier.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: dedup_model [options]        (one process: do not start it with mpirun)\n"
    "\n"
    "Runs P virtual ranks on the simulated transport. Each rank sends N updates to\n"
    "skewed counters of a table block-distributed over the ranks, then reads N skewed\n"
    "counters with requests; each workload once without and once with merging. Prints\n"
    "the records that reach their owners (total and the most on one rank), merges at\n"
    "the source, at hops and in flight, the buffers sent, per rank the most buffers,\n"
    "partners and bytes, and a time predicted for the busiest rank (alpha per buffer,\n"
    "beta per byte, gamma per record handled). Results are verified.\n"
    "\n"
    "  --ranks L        virtual ranks, a comma list (default 1024)\n"
    "  --updates N      updates and reads per rank (default 2K; suffixes K, M)\n"
    "  --table T        counters in the whole table (default 1024 per rank)\n"
    "  --skew S         key skew as in histogram --skew (default 4; 1 = uniform)\n"
    "  --route L        direct, nr, nlnr, grid, grid:AxBxC, hypercube, a comma list\n"
    "                   (default hypercube)\n"
    "  --node-size K    virtual nodes of K ranks (default 2)\n"
    "  --buffer-kb K    send buffer size in KiB (default 4)\n"
    "  --seed S         key and scheduler seed (default 1)\n"
    "  --workload W     updates, reads or both (default both)\n"
    "  --alpha US       microseconds per buffer sent (default 2)\n"
    "  --beta NS        nanoseconds per byte sent (default 0.1)\n"
    "  --gamma NS       nanoseconds per record handled (default 10)\n";

typedef struct model {
    uint64_t n, total;
    double skew;
    int size;
    int merge;
    int reads;
    uint64_t seed;
    /* per virtual rank, indexed by rank */
    uint64_t *handled; /* update records or requests that reached the owner */
    uint64_t *bad;     /* wrong answers, wrong owners */
    uint64_t *sum;     /* the owner's counters: sum of counts */
    uint64_t *answers; /* replies received */
    cr_dedup_stats *requests; /* the request counters at the end of a read run */
} model;

static model M;

static int owner_of(uint64_t idx)
{
    return (int)(idx * (uint64_t)M.size / M.total);
}

static uint64_t stream(int rank)
{
    return cr_rng_hash64(M.seed * 0x9e3779b97f4a7c15ULL + (uint64_t)rank);
}

/* ---- updates: {index, amount}, summed by the owner ---------------------------- */

static void on_updates(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)user;
    int me = cr_comm_rank(comm);
    for (size_t k = 0; k < b->count; k++) {
        uint64_t u[2];
        memcpy(u, cr_batch_payload(b, k), sizeof u);
        M.bad[me] += owner_of(u[0]) != me;
        M.sum[me] += u[1];
    }
    M.handled[me] += b->count;
}

static void run_updates(cr_comm *comm, void *user)
{
    (void)user;
    cr_handler_type type = {.batch = on_updates};
    int h;
    if (M.merge) {
        cr_dedup_rule sum = {.key_len = 8, .op = CR_OP_SUM, .type = CR_UINT64};
        h = cr_dedup_register(comm, &type, &sum, NULL);
    } else {
        h = cr_register_type(comm, &type, NULL);
    }
    uint64_t s = stream(cr_comm_rank(comm));
    for (uint64_t i = 0; i < M.n; i++) {
        uint64_t u[2] = {app_skewed_key(M.total, M.skew, &s), 1};
        cr_async(comm, owner_of(u[0]), h, u, sizeof u);
    }
    cr_barrier(comm);
}

/* ---- reads: a request {index}, the reply hash(index) -------------------------- */

static void serve(cr_comm *comm, cr_dedup_req *req, const void *p, size_t len, void *user)
{
    (void)len, (void)user;
    int me = cr_comm_rank(comm);
    uint64_t idx;
    memcpy(&idx, p, sizeof idx);
    M.bad[me] += owner_of(idx) != me;
    M.handled[me]++;
    uint64_t v = cr_rng_hash64(idx);
    cr_dedup_reply(comm, req, &v, sizeof v);
}

typedef struct pending_read {
    uint64_t idx;
    int rank;
} pending_read;

static void got(cr_comm *comm, const void *data, size_t len, void *ctx)
{
    (void)comm;
    const pending_read *r = ctx;
    uint64_t v;
    memcpy(&v, data, sizeof v);
    M.bad[r->rank] += len != sizeof v || v != cr_rng_hash64(r->idx);
    M.answers[r->rank]++;
}

static void run_reads(cr_comm *comm, void *user)
{
    (void)user;
    int me = cr_comm_rank(comm);
    int id = cr_dedup_register_request(
        comm,
        &(cr_dedup_request_type){.serve = serve, .key_len = M.merge ? 8 : 0,
                                 .coalesce = M.merge},
        NULL);
    pending_read *r = malloc(M.n * sizeof *r);
    if (!r) {
        fprintf(stderr, "dedup_model: out of memory for the reads of rank %d\n", me);
        exit(1);
    }
    uint64_t s = stream(me);
    for (uint64_t i = 0; i < M.n; i++) {
        r[i] = (pending_read){.idx = app_skewed_key(M.total, M.skew, &s), .rank = me};
        cr_dedup_request(comm, owner_of(r[i].idx), id, &r[i].idx, sizeof r[i].idx, got, &r[i]);
    }
    cr_barrier(comm);
    cr_dedup_stats_get(comm, &M.requests[me]);
    free(r);
}

/* ---- one run ------------------------------------------------------------------ */

typedef struct row {
    uint64_t reached, reached_max, merged_src, merged_hops, coalesced, buffers, bytes;
    uint64_t buffers_max, partners_max, partners_sum, bytes_max;
    double busiest_us; /* the largest alpha-beta-gamma time of one rank */
} row;

static double alpha_us = 2, beta_ns = 0.1, gamma_ns = 10;

static row run(const cr_config *cfg, int reads, int merge)
{
    M.reads = reads;
    M.merge = merge;
    size_t p = (size_t)M.size;
    memset(M.handled, 0, p * sizeof *M.handled);
    memset(M.bad, 0, p * sizeof *M.bad);
    memset(M.sum, 0, p * sizeof *M.sum);
    memset(M.answers, 0, p * sizeof *M.answers);
    memset(M.requests, 0, p * sizeof *M.requests);
    cr_stats *st = calloc(p, sizeof *st);
    if (!st) {
        fprintf(stderr, "dedup_model: out of memory for %d ranks' counters\n", M.size);
        exit(1);
    }
    cr_sim_opts o = {.ranks = M.size, .seed = M.seed, .cfg = cfg};
    char err[256];
    if (cr_sim_run(&o, reads ? run_reads : run_updates, NULL, st, err, sizeof err)) {
        fprintf(stderr, "dedup_model: %s\n", err);
        exit(1);
    }
    row w = {0};
    uint64_t bad = 0, sum = 0, answers = 0;
    for (size_t r = 0; r < p; r++) {
        w.reached += M.handled[r];
        if (M.handled[r] > w.reached_max)
            w.reached_max = M.handled[r];
        w.merged_src += reads ? M.requests[r].requests_merged_at_source : st[r].merged_at_source;
        w.merged_hops += reads ? M.requests[r].requests_merged_at_hops : st[r].merged_at_hops;
        w.coalesced += M.requests[r].requests_coalesced;
        w.buffers += st[r].mpi_sends;
        w.bytes += st[r].mpi_bytes_sent;
        w.buffers_max = st[r].mpi_sends > w.buffers_max ? st[r].mpi_sends : w.buffers_max;
        w.bytes_max = st[r].mpi_bytes_sent > w.bytes_max ? st[r].mpi_bytes_sent : w.bytes_max;
        w.partners_max = st[r].partners > w.partners_max ? st[r].partners : w.partners_max;
        w.partners_sum += st[r].partners;
        double t = alpha_us * (double)st[r].mpi_sends + beta_ns * 1e-3 * (double)st[r].mpi_bytes_sent +
                   gamma_ns * 1e-3 * (double)M.handled[r];
        w.busiest_us = t > w.busiest_us ? t : w.busiest_us;
        bad += M.bad[r];
        sum += M.sum[r];
        answers += M.answers[r];
    }
    uint64_t expect = M.n * p;
    if (bad || (reads ? answers != expect : sum != expect)) {
        fprintf(stderr, "dedup_model: VERIFICATION FAILED (%s, %s): %llu wrong, %llu of %llu "
                "applied\n", reads ? "reads" : "updates", merge ? "merged" : "plain",
                (unsigned long long)bad, (unsigned long long)(reads ? answers : sum),
                (unsigned long long)expect);
        exit(1);
    }
    free(st);
    return w;
}

static void print_row(const char *workload, const char *how, row w, row base)
{
    printf("| %-7s | %-28s | %11llu | %9llu | %9llu | %9llu | %9llu | %9llu | %7.1f | %5.2f | "
           "%6llu | %5llu | %5.1f | %8.1f | %9.1f | %5.2f |\n",
           workload, how, (unsigned long long)w.reached, (unsigned long long)w.reached_max,
           (unsigned long long)w.merged_src, (unsigned long long)w.merged_hops,
           (unsigned long long)w.coalesced, (unsigned long long)w.buffers,
           (double)w.bytes / 1048576.0, (double)w.reached_max / (double)base.reached_max,
           (unsigned long long)w.buffers_max, (unsigned long long)w.partners_max,
           (double)w.partners_sum / M.size, (double)w.bytes_max / 1024.0, w.busiest_us,
           base.busiest_us / w.busiest_us);
}

static void csv_row(FILE *out, const char *route, const char *workload, int merge, row w)
{
    if (!out)
        return;
    fprintf(out, "%d,%s,%g,%s,%d,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.4f,%llu,%.3f\n",
            M.size, route, M.skew, workload, merge, (unsigned long long)w.reached,
            (unsigned long long)w.reached_max, (unsigned long long)w.merged_src,
            (unsigned long long)w.merged_hops, (unsigned long long)w.coalesced,
            (unsigned long long)w.buffers, (unsigned long long)w.bytes,
            (unsigned long long)w.buffers_max, (unsigned long long)w.partners_max,
            (double)w.partners_sum / M.size, (unsigned long long)w.bytes_max, w.busiest_us);
}

/* Run both workloads for one P and route; print and log them. */
static void run_config(const app *a, const cr_config *cfg, const char *route, int workload,
                       const char *const *workloads, FILE *csv)
{
    (void)a;
    for (int w = 0; w < 2; w++) {
        if (workload != 2 && workload != w)
            continue;
        row plain = run(cfg, w, 0);
        print_row(workloads[w], w ? "none (key_len 0)" : "none (plain handler)", plain, plain);
        csv_row(csv, route, workloads[w], 0, plain);
        fflush(stdout);
        row merged = run(cfg, w, 1);
        print_row(workloads[w], w ? "merged + coalesced" : "combining (sum)", merged, plain);
        csv_row(csv, route, workloads[w], 1, merged);
        fflush(stdout);
    }
}

/* The line naming one configuration (M holds the run's sizes) and its table's head. */
static void print_header(uint64_t ranks, const char *route, uint64_t node_size,
                         uint64_t buffer_kb)
{
    printf("dedup_model: %llu virtual ranks, route %s, nodes of %llu, %llu KiB buffers; "
           "%llu updates / reads per rank, %llu counters, skew %g, seed %llu; alpha %g "
           "us, beta %g ns/B, gamma %g ns\n\n",
           (unsigned long long)ranks, route, (unsigned long long)node_size,
           (unsigned long long)buffer_kb, (unsigned long long)M.n, (unsigned long long)M.total,
           M.skew, (unsigned long long)M.seed, alpha_us, beta_ns, gamma_ns);
    printf("| workload | merging | reach owners | most on a rank | merged at source | "
           "merged at hops | coalesced | buffers sent | MiB sent | most, vs plain | "
           "buffers / rank, max | partners, max | mean | KiB / rank, max | "
           "predicted us | vs plain |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "dedup_model", usage, &argc, &argv);
    uint64_t ranks_list[8] = {1024}, n = 2048, total = 0, seed = 1, node_size = 2, buffer_kb = 4;
    int nranks = 1;
    double skew = 4;
    const char *routes = "hypercube";
    app_shared sh; /* the common flags */
    app_shared_init(&sh);
    static const char *const workloads[] = {"updates", "reads", "both", NULL};
    int workload = 2;
    static const struct option opts[] = {
        {"ranks", required_argument, 0, 'P'},     {"updates", required_argument, 0, 'n'},
        {"table", required_argument, 0, 't'},     {"skew", required_argument, 0, 'k'},
        {"route", required_argument, 0, 'R'},     {"node-size", required_argument, 0, 'N'},
        {"buffer-kb", required_argument, 0, 'b'}, {"seed", required_argument, 0, 's'},
        {"workload", required_argument, 0, 'w'},  {"alpha", required_argument, 0, 'A'},
        {"beta", required_argument, 0, 'B'},      {"gamma", required_argument, 0, 'G'},
        APP_LONG_COMMON, {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'P': nranks = app_parse_list(&a, "--ranks", optarg, 1, 65536, ranks_list, 8); break;
        case 'n': n = app_parse_u64(&a, "--updates", optarg, 1, 1u << 24); break;
        case 't': total = app_parse_u64(&a, "--table", optarg, 1, 1ULL << 40); break;
        case 'k': skew = app_parse_double(&a, "--skew", optarg, 1.0, 100.0); break;
        case 'R': routes = optarg; break;
        case 'N': node_size = app_parse_u64(&a, "--node-size", optarg, 1, 65536); break;
        case 'b': buffer_kb = app_parse_u64(&a, "--buffer-kb", optarg, 1, 1u << 20); break;
        case 's': seed = app_parse_u64(&a, "--seed", optarg, 0, UINT64_MAX); break;
        case 'w': workload = app_parse_choice(&a, "--workload", optarg, workloads); break;
        case 'A': alpha_us = app_parse_double(&a, "--alpha", optarg, 0, 1e6); break;
        case 'B': beta_ns = app_parse_double(&a, "--beta", optarg, 0, 1e6); break;
        case 'G': gamma_ns = app_parse_double(&a, "--gamma", optarg, 0, 1e6); break;
        default: app_other_option(&a, ch, optarg, &sh, argv);
        }
    }
    app_no_operands(&a, argc, argv);
    app_require_one_process(&a, "runs its virtual ranks");
    for (int i = 0; i < nranks; i++)
        if (total && total < ranks_list[i])
            app_usage_error(&a, "--table %llu is smaller than --ranks %llu",
                            (unsigned long long)total, (unsigned long long)ranks_list[i]);
    /* Every route is checked before anything runs. */
    char *list = strdup(routes);
    if (!list)
        app_error(&a, "out of memory");
    cr_config cfg;
    cr_config_init(&cfg);
    for (char *save = NULL, *r = strtok_r(list, ",", &save); r; r = strtok_r(NULL, ",", &save))
        app_parse_route(&a, r, &cfg);
    free(list);
    FILE *csv = app_open_csv(&a, sh.csv, "ranks,route,skew,workload,merged,reach_owners,"
                             "reach_max,merged_source,merged_hops,coalesced,buffers,bytes,"
                             "buffers_max,partners_max,partners_mean,bytes_max,busiest_us");
    for (int i = 0; i < nranks; i++) {
        uint64_t ranks = ranks_list[i], tot = total ? total : ranks * 1024;
        M = (model){.n = n, .total = tot, .skew = skew, .size = (int)ranks, .seed = seed};
        M.handled = app_calloc(&a, ranks, sizeof(uint64_t), "the counters");
        M.bad = app_calloc(&a, ranks, sizeof(uint64_t), "the counters");
        M.sum = app_calloc(&a, ranks, sizeof(uint64_t), "the counters");
        M.answers = app_calloc(&a, ranks, sizeof(uint64_t), "the counters");
        M.requests = app_calloc(&a, ranks, sizeof(cr_dedup_stats), "the counters");
        list = strdup(routes);
        if (!list)
            app_error(&a, "out of memory");
        for (char *save = NULL, *route = strtok_r(list, ",", &save); route;
             route = strtok_r(NULL, ",", &save)) {
            cr_config_init(&cfg);
            app_parse_route(&a, route, &cfg);
            cfg.node_size = (unsigned)node_size;
            cfg.buffer_bytes = (size_t)buffer_kb << 10;
            print_header(ranks, route, node_size, buffer_kb);
            run_config(&a, &cfg, route, workload, workloads, csv);
            printf("\n");
        }
        free(list);
        free(M.handled);
        free(M.bad);
        free(M.sum);
        free(M.answers);
        free(M.requests);
    }
    printf("verified: every update applied once, every read answered once and right\n");
    if (csv)
        fclose(csv);
    MPI_Finalize();
    return 0;
}
