/* courier-calibrate: measure what messages and records cost on this machine and write
 * the calibration file that COURIER_TUNE_FILE names (docs/tuning.md, "Calibration"). */
#include "cli.h"

#include <courier.h>
#include <courier/tune.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: mpirun -np P courier-calibrate [--output FILE] [--hops H] [--records N]\n"
    "\n"
    "Measures, over the runtime itself, what the cost model of COURIER_ROUTE=auto and\n"
    "COURIER_BUFFER_SIZE=auto needs: the time of one message and of one byte between\n"
    "rank 0 and a rank of its node (and of another node, when the job has one), and\n"
    "the time to append and handle a record. Writes them to FILE for COURIER_TUNE_FILE.\n"
    "Run it once per machine with at least 2 ranks on one node (and 2 nodes, to\n"
    "measure the network); a file is refused on nodes of another processor count.\n"
    "\n"
    "  --output FILE  where to write the calibration (default courier-tune.txt)\n"
    "  --hops H       messages bounced between two ranks per measurement (default 2000)\n"
    "  --records N    records appended and handled per measurement (default 1M)\n"
    "\n"
    "Each figure is the median of 5 measurements. Without a second node the costs\n"
    "between nodes are the library's defaults, and the program says so.\n";

#define REPEATS 5
#define BIG_PAYLOAD (64 << 10) /* bytes per message of the per-byte measurement */

/* A token bounced between two ranks from handler to handler: its first word counts
 * the hops left. */
typedef struct bounce {
    int h;
    char *buf;
    uint64_t hops;
} bounce;

static void on_bounce(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    bounce *b = user;
    uint64_t left;
    memcpy(&left, p, sizeof left);
    b->hops++;
    if (left-- == 0)
        return;
    memcpy(b->buf, p, len);
    memcpy(b->buf, &left, sizeof left);
    cr_async(comm, src, b->h, b->buf, len);
}

static void on_record(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    (void)comm, (void)src, (void)len;
    uint64_t v;
    memcpy(&v, p, sizeof v);
    *(uint64_t *)user += v;
}

static int by_value(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return v[n / 2];
}

/* A comm on the direct route with a fixed buffer (0: the environment's), whatever
 * COURIER_ROUTE and COURIER_BUFFER_SIZE say: what is measured is the path between two
 * ranks, not a choice. Collective. */
static cr_comm *measuring_comm(const app *a, size_t buffer_bytes)
{
    cr_config cfg;
    app_config_from_env(a, &cfg);
    cfg.route = (cr_route){.kind = CR_ROUTE_DIRECT};
    cfg.buffer_auto = false;
    if (buffer_bytes)
        cfg.buffer_bytes = buffer_bytes;
    return cr_comm_create(MPI_COMM_WORLD, &cfg);
}

/* Seconds per hop of a token of `len` bytes bounced `hops` times between rank 0 and
 * `partner`, every message its own send (a 1-byte buffer). Collective. */
static double hop_seconds(const app *a, int partner, size_t len, uint64_t hops)
{
    cr_comm *comm = measuring_comm(a, 1);
    bounce b = {.buf = app_calloc(a, 1, len, "the token")};
    b.h = cr_register(comm, on_bounce, &b);
    double t[REPEATS];
    for (int r = 0; r < REPEATS; r++) {
        cr_barrier(comm);
        double t0 = MPI_Wtime();
        if (a->rank == 0) {
            uint64_t left = hops - 1;
            memcpy(b.buf, &left, sizeof left);
            cr_async(comm, partner, b.h, b.buf, len);
        }
        cr_barrier(comm);
        t[r] = app_max_time(MPI_Wtime() - t0) / (double)hops;
    }
    cr_comm_destroy(comm);
    free(b.buf);
    return median(t, REPEATS);
}

/* Seconds per 16-byte record rank 0 appends for itself and handles (the other ranks
 * wait in the barrier). Collective. */
static double record_seconds(const app *a, uint64_t n)
{
    cr_comm *comm = measuring_comm(a, 0);
    uint64_t sum = 0;
    int h = cr_register(comm, on_record, &sum);
    double t[REPEATS];
    for (int r = 0; r < REPEATS; r++) {
        cr_barrier(comm);
        double t0 = MPI_Wtime();
        for (uint64_t i = 0; a->rank == 0 && i < n; i++) {
            uint64_t rec[2] = {1, i};
            cr_async(comm, 0, h, rec, sizeof rec);
        }
        cr_barrier(comm);
        t[r] = app_max_time(MPI_Wtime() - t0) / (double)n;
    }
    cr_comm_destroy(comm);
    if (a->rank == 0 && sum != REPEATS * n)
        app_fail(a, "%llu records handled, expected %llu", (unsigned long long)sum,
                 (unsigned long long)(REPEATS * n));
    return median(t, REPEATS);
}

/* Where rank 0's partners are: the first other rank on its node and the first on
 * another node (-1 if none), and how many ranks its node has. Collective. */
typedef struct survey {
    int on, off, ranks_on_node;
} survey;

static survey survey_layout(const app *a)
{
    cr_comm *comm = measuring_comm(a, 0);
    const cr_layout *l = cr_comm_layout(comm);
    int home = cr_layout_node_of(l, 0);
    survey s = {.on = -1, .off = -1, .ranks_on_node = cr_layout_node_size(l, home)};
    for (int r = 1; r < a->size; r++) {
        bool same = cr_layout_node_of(l, r) == home;
        if (same && s.on < 0)
            s.on = r;
        if (!same && s.off < 0)
            s.off = r;
    }
    cr_comm_destroy(comm);
    return s;
}

/* alpha and beta between rank 0 and `partner`: the hop of a small token, and what
 * each byte of a large one adds. */
static void measure_pair(const app *a, int partner, uint64_t hops, double *alpha, double *beta)
{
    double small = hop_seconds(a, partner, 8, hops);
    double large = hop_seconds(a, partner, BIG_PAYLOAD, hops / 10 + 1);
    *alpha = small;
    *beta = large > small ? (large - small) / (BIG_PAYLOAD - 8) : 0;
}

typedef struct options {
    const char *output;
    uint64_t hops, records;
    app_shared sh;
} options;

static void parse_options(app *a, int argc, char **argv, options *o)
{
    *o = (options){.output = "courier-tune.txt", .hops = 2000, .records = 1 << 20};
    app_shared_init(&o->sh);
    static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                         {"hops", required_argument, 0, 'H'},
                                         {"records", required_argument, 0, 'n'},
                                         APP_LONG_COMMON,
                                         {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'o': o->output = optarg; break;
        case 'H': o->hops = app_parse_u64(a, "--hops", optarg, 10, 1000000); break;
        case 'n': o->records = app_parse_u64(a, "--records", optarg, 1000, 1ULL << 30); break;
        default: app_other_option(a, ch, optarg, &o->sh, argv);
        }
    }
    app_no_operands(a, argc, argv);
    if (a->size < 2)
        app_usage_error(a, "calibration needs at least 2 ranks (mpirun -np 2 or more)");
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "courier-calibrate", usage, &argc, &argv);
    options o;
    parse_options(&a, argc, argv, &o);
    cr_tune_costs c;
    cr_tune_costs_default(&c);
    FILE *csv = app_open_csv(&a, o.sh.csv,
                             "ranks,alpha_on,beta_on,alpha_off,beta_off,append,handle,file");
    survey where = survey_layout(&a);
    if (where.on > 0)
        measure_pair(&a, where.on, o.hops, &c.alpha_on, &c.beta_on);
    if (where.off > 0)
        measure_pair(&a, where.off, o.hops, &c.alpha_off, &c.beta_off);
    /* The model charges append and handle separately; one rank's loop measures their
     * sum, split evenly (docs/tuning.md). */
    c.append = c.handle = record_seconds(&a, o.records) / 2;
    cr_tune_shape shape;
    cr_tune_shape_here(&shape, where.ranks_on_node);
    char err[400] = "";
    bool wrote = a.rank != 0 || cr_tune_costs_save(o.output, &c, &shape, err, sizeof err) == 0;
    app_agree(&a, wrote ? NULL : err);
    if (a.rank == 0 && !o.sh.quiet)
        printf("courier-calibrate: %d ranks; within a node %s: %.2f us per message, %.3f ns per "
               "byte; between nodes %s: %.2f us, %.3f ns; %.1f ns per record appended and "
               "handled; written to %s\n",
               a.size, where.on > 0 ? "(measured)" : "(no second rank there: default)",
               c.alpha_on * 1e6, c.beta_on * 1e9,
               where.off > 0 ? "(measured)" : "(no second node: default)", c.alpha_off * 1e6,
               c.beta_off * 1e9, (c.append + c.handle) * 1e9, o.output);
    if (csv) {
        fprintf(csv, "%d,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%s\n", a.size, c.alpha_on, c.beta_on,
                c.alpha_off, c.beta_off, c.append, c.handle, o.output);
        fclose(csv);
    }
    MPI_Finalize();
    return 0;
}
