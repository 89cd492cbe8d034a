/* fanout: a program whose handlers send more than they receive, for measuring what
 * Courier's buffers hold when messages are sent from handlers (docs/flow_control.md).
 * Every rank sends --seeds records to random ranks;
 * the handler of a record of depth d < --depth sends --fanout records of depth d + 1
 * to random ranks. Every record is counted: the total handled must be exactly
 * ranks x seeds x (1 + F + F^2 + ... + F^D). Prints the peak of each memory
 * component per rank (Courier's counters), the bound of docs/flow_control.md next
 * to it, and the peak resident memory. The handler is reentrant (it waits over the
 * cap) unless --no-wait. */
#include "cli.h"

#include <courier.h>

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static const char usage[] =
    "Usage: mpirun -np P fanout [options]\n"
    "\n"
    "Every rank sends S seed records to random ranks; the handler of a record of depth\n"
    "d < D sends F records of depth d + 1 to random ranks. Checks that exactly\n"
    "P x S x (1 + F + ... + F^D) records were handled, and prints the peak of Courier's\n"
    "send buffers, sends in flight and resident memory per rank. The buffer sizes come\n"
    "from COURIER_BUFFER_SIZE and COURIER_BUFFER_CAP (docs/configuration.md).\n"
    "\n"
    "  --depth D     depth of the trees (default 7)\n"
    "  --fanout F    records each handler sends (default 4)\n"
    "  --seeds S     trees started by each rank (default 1000)\n"
    "  --payload B   bytes per record, at least 16 (default 16)\n"
    "  --route R     direct, nr, nlnr, grid, hypercube (default: COURIER_ROUTE)\n"
    "  --no-wait     register the handler as not reentrant: it never waits over the\n"
    "                cap, so the bound does not hold (for comparison)\n";

typedef struct tree {
    int h;
    uint64_t depth, fanout, handled;
    size_t payload;
    char *out; /* the records a handler sends, reused */
} tree;

/* A record: its depth and a key that decides where its children go. */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ull;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dull;
    return x ^ (x >> 33);
}

static void send_record(cr_comm *comm, tree *t, uint64_t depth, uint64_t key)
{
    memcpy(t->out, &depth, 8);
    memcpy(t->out + 8, &key, 8);
    cr_async(comm, (int)(key % (uint64_t)cr_comm_size(comm)), t->h, t->out, t->payload);
}

static void on_record(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    (void)src, (void)len;
    tree *t = user;
    uint64_t depth, key;
    memcpy(&depth, p, 8);
    memcpy(&key, (const char *)p + 8, 8);
    t->handled++;
    if (depth == t->depth)
        return;
    for (uint64_t j = 0; j < t->fanout; j++)
        send_record(comm, t, depth + 1, mix(key * 31 + j + 1));
}

static uint64_t expected_per_seed(uint64_t fanout, uint64_t depth)
{
    uint64_t total = 0, level = 1;
    for (uint64_t d = 0; d <= depth; d++, level *= fanout)
        total += level;
    return total;
}

/* What the command line asked for. */
typedef struct fan_opts {
    uint64_t depth, fanout, seeds, payload;
    int no_wait;
    app_shared sh; /* --route and the common flags */
} fan_opts;

static void parse_options(app *a, int argc, char **argv, fan_opts *o)
{
    *o = (fan_opts){.depth = 7, .fanout = 4, .seeds = 1000, .payload = 16};
    app_shared_init(&o->sh);
    static const struct option opts[] = {
        {"depth", required_argument, 0, 'd'}, {"fanout", required_argument, 0, 'f'},
        {"seeds", required_argument, 0, 's'}, {"payload", required_argument, 0, 'p'},
        APP_LONG_ROUTE,
        {"no-wait", no_argument, 0, 'W'},        APP_LONG_COMMON, {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'd': o->depth = app_parse_u64(a, "--depth", optarg, 0, 30); break;
        case 'f': o->fanout = app_parse_u64(a, "--fanout", optarg, 1, 64); break;
        case 's': o->seeds = app_parse_u64(a, "--seeds", optarg, 0, 1ull << 30); break;
        case 'p': o->payload = app_parse_u64(a, "--payload", optarg, 16, 1u << 20); break;
        case 'W': o->no_wait = 1; break;
        default: app_other_option(a, ch, optarg, &o->sh, argv);
        }
    }
    app_no_operands(a, argc, argv);
}

/* Rank 0's line on the memory bound of docs/flow_control.md against the measured
 * peak (peak[]: the maxima over ranks main gathers). */
static void print_bound(const cr_config *cfg, bool deep, uint64_t depth, const double *peak,
                        double overruns, double reliefs, double bound)
{
    if (deep) {
        printf("  reliefs %.0f (total over ranks)\n", reliefs);
        if (peak[12] >= 1e300)
            printf("  bound (docs/flow_control.md, deep-held, depth %llu): none; measured "
                   "%.1f KiB: the bound is void, the program is deeper than the "
                   "generations Courier tells apart\n",
                   (unsigned long long)depth, peak[5] / 1024);
        else
            printf("  bound (docs/flow_control.md, deep-held, depth %llu): %.1f KiB at most "
                   "over ranks; measured %.1f KiB; the fullest rank at %.2f of its own "
                   "bound: %s\n",
                   (unsigned long long)depth, peak[12] / 1024, peak[5] / 1024, peak[11],
                   peak[11] <= 1 ? "every rank within" : "a rank ABOVE it");
        return;
    }
    printf("  waits nested %.0f deep at most (limit %u); cap overruns %.0f (total over "
           "ranks)\n",
           peak[9], cfg->nest_limit, overruns);
    if (peak[12] >= 1e300)
        printf("  bound (docs/flow_control.md): none; measured %.1f KiB: the bound is "
               "void, %s\n",
               peak[5] / 1024,
               overruns > 0 ? "calls reached the nesting limit"
                            : "a handler that is not reentrant sent records");
    else
        printf("  bound (docs/flow_control.md): %.1f KiB; measured %.1f KiB (%.2f "
               "times): %s\n",
               bound / 1024, peak[5] / 1024, peak[5] / bound,
               peak[5] <= bound ? "within" : "ABOVE");
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "fanout", usage, &argc, &argv);
    fan_opts o;
    parse_options(&a, argc, argv, &o);
    uint64_t depth = o.depth, fanout = o.fanout, seeds = o.seeds, payload = o.payload;
    int no_wait = o.no_wait;
    const app_shared sh = o.sh;
    const char *route = sh.route;
    int stats = sh.stats;
    uint64_t per_seed = expected_per_seed(fanout, depth);
    if (seeds && per_seed > UINT64_MAX / seeds / (uint64_t)a.size)
        app_usage_error(&a, "--depth %llu and --fanout %llu make too many records to count",
                        (unsigned long long)depth, (unsigned long long)fanout);

    cr_config cfg;
    cr_config_init(&cfg);
    if (cr_config_from_env(&cfg, NULL, 0) != 0)
        cr_config_init(&cfg); /* cr_comm_create reports a bad environment itself */
    if (route)
        app_parse_route(&a, route, &cfg);
    tree t = {.depth = depth, .fanout = fanout, .payload = payload};
    t.out = app_calloc(&a, 1, payload, "the record buffer");
    FILE *csv = app_open_csv(&a, sh.csv, "ranks,depth,fanout,seeds,payload,flow,records,"
                                         "seconds,peak_memory_kib,bound_kib,ok");
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, route ? &cfg : NULL);
    cfg = *cr_comm_config(comm);
    t.h = cr_register_type(comm, &(cr_handler_type){.fn = on_record, .reentrant = !no_wait}, &t);
    cr_barrier(comm); /* every rank has registered before the first seed */
    cr_stats_reset(comm);
    double t0 = MPI_Wtime();
    for (uint64_t s = 0; s < seeds; s++)
        send_record(comm, &t, 0, mix(((uint64_t)a.rank << 32) + s));
    cr_barrier(comm);
    double seconds = app_max_time(MPI_Wtime() - t0);

    uint64_t handled;
    MPI_Allreduce(&t.handled, &handled, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    uint64_t expect = per_seed * seeds * (uint64_t)a.size;
    cr_stats s;
    cr_stats_get(comm, &s);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    bool deep = cfg.flow == CR_FLOW_DEEP_HELD;
    uint64_t bound_bytes = cr_memory_bound(comm, (unsigned)depth);
    double bound = bound_bytes == UINT64_MAX ? 1e300 : (double)bound_bytes;
    double mine[13] = {(double)s.peak_buffered_bytes, (double)s.peak_inflight,
                       (double)ru.ru_maxrss * 1024.0, (double)s.peak_inflight_bytes,
                       (double)s.peak_self_bytes, (double)s.peak_memory_bytes,
                       (double)s.peak_handler_output, (double)s.throttled_us * 1e-6,
                       0, (double)s.peak_nesting, (double)s.peak_parked_bytes,
                       (double)s.peak_memory_bytes / bound, bound},
           peak[13];
    MPI_Reduce(mine, peak, 13, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    double counts[2] = {(double)s.cap_overruns, (double)s.reliefs}, sums[2] = {0, 0};
    MPI_Reduce(counts, sums, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    double overruns = sums[0], reliefs = sums[1];
    if (a.rank == 0) {
        printf("fanout: %d ranks, depth %llu, fanout %llu, %llu seeds per rank, %llu-byte "
               "records; buffer %zu B, cap %zu B, %u sends in flight at most, %s\n",
               a.size, (unsigned long long)depth, (unsigned long long)fanout,
               (unsigned long long)seeds, (unsigned long long)payload, cfg.buffer_bytes,
               cfg.buffer_cap_bytes, cfg.max_inflight,
               deep ? "flow deep-held"
               : no_wait ? "handlers never wait (--no-wait)" : "handlers wait over the cap");
        printf("  handled %llu records (expected %llu): %s; %.3f s, %.1f M records/s\n",
               (unsigned long long)handled, (unsigned long long)expect,
               handled == expect ? "exact" : "WRONG", seconds, handled / seconds / 1e6);
        printf("  peak per rank (max over ranks): send buffers %.1f KiB (%.0f times the cap), "
               "sends in flight %.0f, resident memory %.1f MiB\n",
               peak[0] / 1024, peak[0] / (double)cfg.buffer_cap_bytes, peak[1],
               peak[2] / 1048576.0);
        printf("  mailbox memory per rank (max over ranks): in flight %.1f KiB, to itself %.1f "
               "KiB, parked %.1f KiB, all at once %.1f KiB; most one handler sent %.0f B; "
               "throttled %.3f s\n",
               peak[3] / 1024, peak[4] / 1024, peak[10] / 1024, peak[5] / 1024, peak[6], peak[7]);
        print_bound(&cfg, deep, depth, peak, overruns, reliefs, bound);
        if (csv) {
            fprintf(csv, "%d,%llu,%llu,%llu,%llu,%s,%llu,%.6f,%.1f,%.1f,%d\n", a.size,
                    (unsigned long long)depth, (unsigned long long)fanout,
                    (unsigned long long)seeds, (unsigned long long)payload,
                    deep ? "deep-held" : "waits", (unsigned long long)handled, seconds,
                    peak[5] / 1024, peak[12] >= 1e300 ? -1 : peak[12] / 1024, handled == expect);
            fclose(csv);
        }
    }
    if (stats)
        cr_stats_print(comm, stdout);
    cr_comm_destroy(comm);
    free(t.out);
    MPI_Finalize();
    return handled == expect ? 0 : 1;
}
