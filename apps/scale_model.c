/* scale_model: what the distributed array's lock-step steps do at thousands of
 * ranks, counted on the simulated transport (one process, no mpirun). The product's
 * own darray code runs on P virtual ranks (its stages move as mailbox records
 * there, with the same counts as the MPI collectives: docs/darray.md); for each
 * route and aggregation the model reports per rank (max and mean) the messages, the
 * partners, the bytes and the requests reaching the owner, and a predicted time
 * from an alpha-beta-gamma model of those counts. Every run is verified.
 *
 * Patterns so far: overload (thesis 5.4.3: every rank reads and adds to every
 * index rank 0 holds). The neighborhood and pointer-doubling patterns need the
 * distributed graph on virtual ranks (docs/scaling.md says what is missing). */
#include "cli.h"

#include <courier.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: scale_model [options]        (one process: do not start it with mpirun)\n"
    "\n"
    "Runs the distributed array's overload pattern (every rank reads and adds to\n"
    "every index of rank 0) in lock-step on P virtual ranks of the simulated\n"
    "transport, under each route and aggregation, and prints per rank (max and mean)\n"
    "the messages, partners, bytes and requests reaching the owner, with a time\n"
    "predicted from those counts: alpha per message + beta per byte on the busiest\n"
    "rank, plus gamma per request the owner merges. Every read is verified.\n"
    "\n"
    "  --ranks L         comma list of virtual rank counts, powers of two (default\n"
    "                    64,256,1024,4096)\n"
    "  --entries E       indices of rank 0, each read and written by every rank\n"
    "                    (default 256; the thesis also uses 8192)\n"
    "  --routes L        direct, grid (2D), grid3 (3D), hypercube (default all)\n"
    "  --aggregations L  none, hash, sort (default all)\n"
    "  --alpha US        microseconds per message (default 2: an off-node start-up)\n"
    "  --beta NS         nanoseconds per byte (default 0.1: 10 GB/s)\n"
    "  --gamma NS        nanoseconds per request merged at the owner (default 10)\n"
    "  --csv FILE        append one line per run to FILE\n"
    "  --help            this text\n";

static const char *const route_names[] = {"direct", "grid", "grid3", "hypercube", NULL};
static const char *const agg_names[] = {"none", "hash", "sort", NULL};

typedef struct world {
    uint64_t entries;
    int route, agg;
    cr_darray_stats *stats; /* [P] */
    uint64_t *bad;          /* [P] wrong reads */
} world;

static world W;

/* 3D grid dimensions for a power of two P: as equal as they go. */
static void grid3(int p, char *spec, size_t len)
{
    int e = 0;
    while ((1 << e) < p)
        e++;
    int a = e / 3 + (e % 3 > 0), b = e / 3 + (e % 3 > 1), c = e / 3;
    snprintf(spec, len, "grid:%dx%dx%d", 1 << a, 1 << b, 1 << c);
}

static void run_overload(cr_comm *comm, void *user)
{
    (void)user;
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    cr_darray_opts o;
    cr_darray_opts_init(&o);
    o.merge = CR_DARRAY_ADD;
    o.type = CR_DEDUP_UINT64;
    o.aggregation = (cr_darray_aggregation)W.agg;
    char spec[64];
    if (W.route == 2)
        grid3(p, spec, sizeof spec);
    else
        snprintf(spec, sizeof spec, "%s", route_names[W.route]);
    cr_route_parse(spec, &o.route, NULL, 0);
    uint64_t n = W.entries * (uint64_t)p; /* rank 0 holds `entries` of them */
    cr_darray *a = cr_darray_create(comm, n, 8, &o);
    uint64_t first0, count0, one = 1;
    cr_darray_block(n, p, 0, &first0, &count0);
    uint64_t *got = calloc(count0 ? count0 : 1, 8);
    for (uint64_t i = 0; i < count0; i++) {
        cr_darray_write(a, first0 + i, &one);
        cr_darray_read(a, first0 + i, &got[i]);
    }
    cr_darray_step(a);
    for (uint64_t i = 0; i < count0; i++)
        W.bad[me] += got[i] != (uint64_t)p;
    cr_darray_stats_get(a, &W.stats[me]);
    free(got);
    cr_darray_destroy(a);
}

typedef struct row {
    double msgs_max, msgs_mean, bytes_max, bytes_mean, reached_max, partners_max, predicted;
} row;

static row model(int p, double alpha_us, double beta_ns, double gamma_ns)
{
    row w = {0};
    double busiest = 0;
    for (int r = 0; r < p; r++) {
        const cr_darray_stats *s = &W.stats[r];
        double m = (double)s->messages, b = (double)s->bytes;
        w.msgs_max = m > w.msgs_max ? m : w.msgs_max;
        w.bytes_max = b > w.bytes_max ? b : w.bytes_max;
        w.msgs_mean += m / p, w.bytes_mean += b / p;
        double reached = (double)s->reached_owner;
        w.reached_max = reached > w.reached_max ? reached : w.reached_max;
        double t = alpha_us * 1e-6 * m + beta_ns * 1e-9 * b + gamma_ns * 1e-9 * reached;
        busiest = t > busiest ? t : busiest;
    }
    w.predicted = busiest;
    return w;
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "scale_model", usage, &argc, &argv);
    uint64_t ranks[16] = {64, 256, 1024, 4096}, entries = 256;
    int nranks = 4;
    double alpha = 2, beta = 0.1, gamma = 10;
    int use_route[4] = {1, 1, 1, 1}, use_agg[3] = {1, 1, 1};
    const char *csv = NULL;
    static const struct option opts[] = {
        {"ranks", required_argument, 0, 'P'},   {"entries", required_argument, 0, 'e'},
        {"routes", required_argument, 0, 'R'},  {"aggregations", required_argument, 0, 'A'},
        {"alpha", required_argument, 0, 'a'},   {"beta", required_argument, 0, 'b'},
        {"gamma", required_argument, 0, 'g'},   {"csv", required_argument, 0, 'c'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'P':
            nranks = app_parse_list(&a, "--ranks", optarg, 1, 65536, ranks, 16);
            for (int k = 0; k < nranks; k++)
                if (ranks[k] & (ranks[k] - 1))
                    app_usage_error(&a, "--ranks %llu is not a power of two (the 3D grid "
                                    "and the hypercube need one)", (unsigned long long)ranks[k]);
            break;
        case 'e': entries = app_parse_u64(&a, "--entries", optarg, 1, 1u << 24); break;
        case 'R':
        case 'A': {
            const char *const *names = ch == 'R' ? route_names : agg_names;
            int *use = ch == 'R' ? use_route : use_agg, count = ch == 'R' ? 4 : 3;
            memset(use, 0, (size_t)count * sizeof *use);
            char *list = strdup(optarg), *save = NULL;
            for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
                use[app_parse_choice(&a, ch == 'R' ? "--routes" : "--aggregations", t, names)] = 1;
            free(list);
            break;
        }
        case 'a': alpha = app_parse_double(&a, "--alpha", optarg, 0, 1e6); break;
        case 'b': beta = app_parse_double(&a, "--beta", optarg, 0, 1e6); break;
        case 'g': gamma = app_parse_double(&a, "--gamma", optarg, 0, 1e6); break;
        case 'c': csv = optarg; break;
        case 'h': app_help(&a);
        default: app_bad_option(&a, argv);
        }
    }
    if (optind < argc)
        app_usage_error(&a, "unexpected argument '%s'", argv[optind]);
    if (a.size != 1)
        app_usage_error(&a, "runs its virtual ranks in one process: start it without mpirun "
                        "(or with -np 1)");
    FILE *out = app_open_csv(&a, csv, "pattern,ranks,entries,route,aggregation,msgs_max,"
                             "msgs_mean,bytes_max,bytes_mean,reached_owner_max,predicted_s,"
                             "verified");
    printf("overload: every rank reads and adds to each of rank 0's %llu indices; "
           "alpha %g us, beta %g ns/B, gamma %g ns\n\n", (unsigned long long)entries, alpha,
           beta, gamma);
    printf("| P | route | aggregation | messages max | mean | KiB max | mean | requests "
           "reaching rank 0 | predicted ms | vs direct none |\n|---|---|---|---|---|---|---|---|---|---|\n");
    int failed = 0;
    for (int k = 0; k < nranks; k++) {
        int p = (int)ranks[k];
        W.entries = entries;
        W.stats = app_calloc(&a, (size_t)p, sizeof *W.stats, "the ranks' statistics");
        W.bad = app_calloc(&a, (size_t)p, sizeof *W.bad, "the ranks' checks");
        double base = 0;
        for (int route = 0; route < 4; route++)
            for (int agg = 0; agg < 3; agg++) {
                if (!use_route[route] || !use_agg[agg])
                    continue;
                W.route = route, W.agg = agg;
                memset(W.stats, 0, (size_t)p * sizeof *W.stats);
                memset(W.bad, 0, (size_t)p * sizeof *W.bad);
                cr_sim_opts so = {.ranks = p, .seed = 1};
                char err[256];
                if (cr_sim_run(&so, run_overload, NULL, NULL, err, sizeof err))
                    app_error(&a, "P=%d, %s, %s: %s", p, route_names[route], agg_names[agg], err);
                uint64_t bad = 0;
                for (int r = 0; r < p; r++)
                    bad += W.bad[r];
                failed += bad != 0;
                row w = model(p, alpha, beta, gamma);
                if (route == 0 && agg == 0)
                    base = w.predicted;
                char ratio[32] = "-";
                if (base > 0)
                    snprintf(ratio, sizeof ratio, "%.2f", base / w.predicted);
                printf("| %d | %s | %s | %.0f | %.1f | %.1f | %.1f | %.0f | %.3f | %s |%s\n", p,
                       route_names[route], agg_names[agg], w.msgs_max, w.msgs_mean,
                       w.bytes_max / 1024, w.bytes_mean / 1024, w.reached_max,
                       w.predicted * 1e3, ratio, bad ? " WRONG READS" : "");
                if (out)
                    fprintf(out, "overload,%d,%llu,%s,%s,%.0f,%.2f,%.0f,%.1f,%.0f,%.6f,%s\n", p,
                            (unsigned long long)entries, route_names[route], agg_names[agg],
                            w.msgs_max, w.msgs_mean, w.bytes_max, w.bytes_mean, w.reached_max,
                            w.predicted, bad ? "no" : "yes");
                fflush(stdout);
            }
        free(W.stats), free(W.bad);
    }
    if (out)
        fclose(out);
    if (failed)
        fprintf(stderr, "scale_model: %d runs read wrong values\n", failed);
    MPI_Finalize();
    return failed ? 1 : 0;
}
