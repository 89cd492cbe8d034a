/* cr_calibrate (include/courier/calibrate.h, docs/tuning.md "Calibration"): the
 * model's costs measured over comms of its own, each made by the caller's maker (the
 * assembly's, so a measuring comm neither calibrates nor warns again), on the direct
 * route with nothing auto. Every figure is the median of its repeats, rank 0's time
 * given to every rank, so all ranks get the same result. */
#include "calibrate/calibrate_internal.h"

#include "courier/coll.h"
#include "mailbox/module.h"

#include "common/fatal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What the measurements run on: comms over `comm` made by `make` from `cfg`. */
typedef struct target {
    MPI_Comm comm;
    const cr_config *cfg;
    cr_comm_maker make;
} target;

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define BIG_PAYLOAD (64 << 10) /* bytes per message of the per-byte measurement */

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

/* A token bounced between two ranks from handler to handler: its first word counts
 * the hops left. */
typedef struct bounce {
    int h;
    char *buf;
} bounce;

static void on_bounce(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    bounce *b = user;
    uint64_t left;
    memcpy(&left, p, sizeof left);
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

/* The same for a run of records at once (cr_handler_type.batch), as a program that
 * moves many small records registers its handlers. */
static void on_records(cr_comm *comm, const cr_batch *b, void *user)
{
    for (size_t k = 0; k < b->count; k++)
        on_record(comm, 0, cr_batch_payload(b, k), b->len, user);
}

/* A comm on `route` with a fixed buffer (0: the configuration's), nothing auto and
 * nothing measured: what is measured is the path, not a choice. Collective. */
static cr_comm *measuring_comm_on(const target *on, cr_route_kind route, size_t buffer_bytes)
{
    cr_config m = *on->cfg;
    m.route = (cr_route){.kind = route};
    m.buffer_auto = false;
    m.tune_calibrate = false;
    m.tune_file[0] = '\0';
    m.print_stats = false;
    m.trace_path[0] = '\0';
    m.verbosity = 0;
    if (buffer_bytes)
        m.buffer_bytes = buffer_bytes;
    return on->make(on->comm, &m);
}

static cr_comm *measuring_comm(const target *on, size_t buffer_bytes)
{
    return measuring_comm_on(on, CR_ROUTE_DIRECT, buffer_bytes);
}

/* Rank 0's time, on every rank. Collective. */
static double rank0_time(cr_comm *comm, double mine)
{
    double t = cr_comm_rank(comm) == 0 ? mine : 0, out = 0;
    cr_allreduce(comm, &t, &out, 1, CR_DOUBLE, CR_OP_MAX, NULL);
    return out;
}

/* Seconds per hop of a token of `len` bytes bounced `hops` times between rank 0 and
 * `partner`, every message its own send (a 1-byte buffer). Collective. */
static double hop_seconds(const target *on, int partner, size_t len,
                          uint64_t hops, int repeats)
{
    cr_comm *comm = measuring_comm(on, 1);
    bounce b = {.buf = cr_xcalloc(1, len)};
    b.h = cr_register(comm, on_bounce, &b);
    double t[CR_CALIBRATE_MAX_REPEATS];
    for (int r = 0; r < repeats; r++) {
        cr_barrier(comm);
        double t0 = seconds_now();
        if (cr_comm_rank(comm) == 0) {
            uint64_t left = hops - 1;
            memcpy(b.buf, &left, sizeof left);
            cr_async(comm, partner, b.h, b.buf, len);
        }
        cr_barrier(comm);
        t[r] = rank0_time(comm, seconds_now() - t0) / (double)hops;
    }
    cr_comm_destroy(comm);
    free(b.buf);
    return median(t, repeats);
}

/* Seconds per 16-byte record rank 0 appends for itself and handles (the other ranks
 * wait in the barrier). Collective. */
static double record_seconds(const target *on, uint64_t n, int repeats)
{
    cr_comm *comm = measuring_comm(on, 0);
    uint64_t sum = 0;
    int h = cr_register(comm, on_record, &sum);
    double t[CR_CALIBRATE_MAX_REPEATS];
    for (int r = 0; r < repeats; r++) {
        cr_barrier(comm);
        double t0 = seconds_now();
        for (uint64_t i = 0; cr_comm_rank(comm) == 0 && i < n; i++) {
            uint64_t rec[2] = {1, i};
            cr_async(comm, 0, h, rec, sizeof rec);
        }
        cr_barrier(comm);
        t[r] = rank0_time(comm, seconds_now() - t0) / (double)n;
    }
    if (cr_comm_rank(comm) == 0 && sum != (uint64_t)repeats * n)
        cr_fatal("cr_calibrate: %llu records handled, expected %llu", (unsigned long long)sum,
                 (unsigned long long)repeats * n);
    cr_comm_destroy(comm);
    return median(t, repeats);
}

/* Seconds per 8-byte record, to a batch handler, when rank 0 and `partner` each send
 * the other n records under `route` with buffers of `buffer` bytes (the hypercube
 * takes them from rank 0 to rank 1 in one hop, with their route blocks), until both
 * have handled them: each appends and handles n, as under uniform traffic.
 * Collective. */
static double stream_seconds(const target *on, cr_route_kind route,
                             int partner, size_t buffer, uint64_t n, int repeats)
{
    cr_comm *comm = measuring_comm_on(on, route, buffer);
    uint64_t sum = 0;
    int h = cr_register_type(comm, &(cr_handler_type){.batch = on_records}, &sum);
    int me = cr_comm_rank(comm), other = me == 0 ? partner : me == partner ? 0 : -1;
    double t[CR_CALIBRATE_MAX_REPEATS];
    for (int r = 0; r < repeats; r++) {
        cr_barrier(comm);
        double t0 = seconds_now();
        uint64_t one = 1;
        for (uint64_t i = 0; other >= 0 && i < n; i++)
            cr_async(comm, other, h, &one, sizeof one);
        cr_barrier(comm);
        t[r] = rank0_time(comm, seconds_now() - t0) / (double)n;
    }
    if (other >= 0 && sum != (uint64_t)repeats * n)
        cr_fatal("cr_calibrate: %llu records handled, expected %llu", (unsigned long long)sum,
                 (unsigned long long)repeats * n);
    cr_comm_destroy(comm);
    return median(t, repeats);
}

/* Records a stream needs before the difference of two streams says what a message
 * costs: below this, the noise of a few hundred messages can exceed it. */
#define STREAM_RECORDS_MIN 500000

/* alpha and beta between rank 0 and `partner`. alpha: what one more message costs in
 * a stream, the same records exchanged through 1 KiB and through 64 KiB buffers (the
 * model charges every message of an epoch; in a stream a message costs its sender's
 * and receiver's work, not a hop's latency); with fewer records than
 * STREAM_RECORDS_MIN, the hop of a small token (an upper bound). beta: what each byte
 * of a 64 KiB token bounced between the two adds to the hop of a small one. */
static void measure_pair(const target *on, int partner,
                         const cr_calibrate_opts *o, double *alpha, double *beta)
{
    double small = hop_seconds(on, partner, 8, o->hops, o->repeats);
    double large = hop_seconds(on, partner, BIG_PAYLOAD, o->hops / 10 + 1, o->repeats);
    *beta = large > small ? (large - small) / (BIG_PAYLOAD - 8) : 0;
    *alpha = small;
    if (o->records < STREAM_RECORDS_MIN)
        return;
    const size_t small_buf = 1 << 10, large_buf = 64 << 10;
    double many = stream_seconds(on, CR_ROUTE_DIRECT, partner, small_buf, o->records,
                                 o->repeats);
    double few = stream_seconds(on, CR_ROUTE_DIRECT, partner, large_buf, o->records,
                                o->repeats);
    /* messages per record: 8 bytes each, a buffer's worth at a time */
    double fewer = 8.0 / small_buf - 8.0 / large_buf;
    if (many > few)
        *alpha = (many - few) / fewer;
}

/* One all-to-all epoch measured: every rank sends n 8-byte records, the same number
 * to every other rank, under `route` with the configured buffer, until all are
 * handled. Writes the seconds per rank (rank 0's, on every rank) to *seconds and the
 * model's prediction of the same epoch from `costs`, with this job's sharing of
 * processors (*sharing: ranks over processors on the busiest machine, at least 1),
 * to *pred. Collective. */
static void uniform_epoch(const target *on, cr_route_kind route, uint64_t n,
                          int repeats, const cr_tune_costs *costs, double *seconds,
                          double *sharing, cr_tune_prediction *pred)
{
    cr_comm *comm = measuring_comm_on(on, route, 0);
    uint64_t sum = 0;
    int h = cr_register_type(comm, &(cr_handler_type){.batch = on_records}, &sum);
    int me = cr_comm_rank(comm), size = cr_comm_size(comm);
    uint64_t per_dest = n / (uint64_t)(size - 1), mine = per_dest * (uint64_t)(size - 1);
    double t[CR_CALIBRATE_MAX_REPEATS];
    for (int r = 0; r < repeats; r++) {
        cr_barrier(comm);
        double t0 = seconds_now();
        uint64_t one = 1;
        for (uint64_t i = 0; i < mine; i++) {
            int dest = (me + 1 + (int)(i % (uint64_t)(size - 1))) % size;
            cr_async(comm, dest, h, &one, sizeof one);
        }
        cr_barrier(comm);
        t[r] = rank0_time(comm, seconds_now() - t0);
    }
    if (sum != (uint64_t)repeats * mine)
        cr_fatal("cr_calibrate: %llu records handled, expected %llu", (unsigned long long)sum,
                 (unsigned long long)repeats * mine);
    *seconds = median(t, repeats);
    cr_tune_costs k = *costs;
    k.slowdown = cr_module_tune_costs(comm)->slowdown;
    *sharing = k.slowdown > 1 ? k.slowdown : 1;
    cr_tune_traffic traffic = {.records_per_dest = (double)per_dest, .record_bytes = 8};
    cr_route rt = {.kind = route};
    if (cr_tune_predict(cr_comm_layout(comm), &rt, cr_comm_config(comm)->buffer_bytes,
                        cr_comm_config(comm)->buffer_cap_bytes, &traffic, &k, pred) != 0)
        cr_fatal("cr_calibrate: the model cannot predict route %d on %d ranks", (int)route, size);
    cr_comm_destroy(comm);
}

/* What passing a record on costs beyond what the model charges for it: the same
 * all-to-all epoch on the direct route and on the hypercube (which passes records
 * on from 3 ranks up), the time the hypercube takes more than the model predicts for
 * it from the other costs, per record a rank passed on, per unit of the processors'
 * sharing (the model multiplies it back by the job's). 0 when nothing was passed on
 * or the model already explains the difference. Collective. */
static double forward_seconds(const target *on, const cr_tune_costs *costs,
                              uint64_t n, int repeats, double *sharing_out)
{
    double direct, hyper, sharing;
    cr_tune_prediction pd, ph;
    uniform_epoch(on, CR_ROUTE_DIRECT, n, repeats, costs, &direct, &sharing, &pd);
    uniform_epoch(on, CR_ROUTE_HYPERCUBE, n, repeats, costs, &hyper, &sharing, &ph);
    *sharing_out = sharing;
    double passed = ph.records - pd.records;
    double unexplained = (hyper - direct) - (ph.seconds - pd.seconds);
    if (passed <= 0 || unexplained <= 0)
        return 0;
    return unexplained / passed / sharing;
}

/* Where rank 0's partners are: the first other rank on its node and the first on
 * another node (-1 if none), and how many ranks its node has. Collective. */
static void survey(const target *on, cr_calibration *out)
{
    cr_comm *comm = measuring_comm(on, 0);
    const cr_layout *l = cr_comm_layout(comm);
    int home = cr_layout_node_of(l, 0), size = cr_comm_size(comm);
    out->ranks = size;
    out->partner_on = out->partner_off = -1;
    for (int r = 1; r < size; r++) {
        bool same = cr_layout_node_of(l, r) == home;
        if (same && out->partner_on < 0)
            out->partner_on = r;
        if (!same && out->partner_off < 0)
            out->partner_off = r;
    }
    cr_tune_shape_here(&out->shape, cr_layout_node_size(l, home));
    out->shape.machine_ranks = cr_module_machine_ranks(comm);
    cr_comm_destroy(comm);
}

void cr_calibrate_run(MPI_Comm comm, const cr_config *cfg, const cr_calibrate_opts *opts,
                      cr_comm_maker maker, cr_calibration *out)
{
    cr_calibrate_opts o = opts ? *opts : (cr_calibrate_opts){0};
    if (!o.hops)
        o.hops = 2000;
    if (!o.records)
        o.records = 1 << 20;
    if (o.repeats <= 0)
        o.repeats = 5;
    if (o.repeats > CR_CALIBRATE_MAX_REPEATS)
        o.repeats = CR_CALIBRATE_MAX_REPEATS;
    const target t = {.comm = comm, .cfg = cfg, .make = maker};
    memset(out, 0, sizeof *out);
    cr_tune_costs_default(&out->costs);
    survey(&t, out);
    if (out->partner_on > 0)
        measure_pair(&t, out->partner_on, &o, &out->costs.alpha_on,
                     &out->costs.beta_on);
    if (out->partner_off > 0)
        measure_pair(&t, out->partner_off, &o, &out->costs.alpha_off,
                     &out->costs.beta_off);
    /* The model charges append and handle separately; one rank's loop measures their
     * sum, split evenly (docs/tuning.md). */
    out->costs.append = out->costs.handle = record_seconds(&t, o.records, o.repeats) / 2;
    /* What a route's records cost more: the same stream to rank 1 with and without
     * route blocks (one hop either way). */
    if (out->ranks >= 2) {
        double direct = stream_seconds(&t, CR_ROUTE_DIRECT, 1, 0, o.records,
                                       o.repeats);
        double routed = stream_seconds(&t, CR_ROUTE_HYPERCUBE, 1, 0, o.records,
                                       o.repeats);
        out->costs.route_record = routed > direct ? routed - direct : 0;
    }
    /* What passing a record on costs more: measured where something is passed on. */
    out->sharing = 1;
    if (out->ranks >= 3)
        out->costs.forward = forward_seconds(&t, &out->costs, o.records, o.repeats,
                                             &out->sharing);
}

static void print_calibration(const cr_calibration *cal, double seconds)
{
    const cr_tune_costs *c = &cal->costs;
    fprintf(stderr, "courier: COURIER_TUNE=calibrate measured in %.1f ms: within a node %.2f us "
            "per message, %.3f ns per byte%s; between nodes %.2f us, %.3f ns%s; %.1f ns per "
            "record appended and handled, %.1f ns more under a route, %.1f ns more per record "
            "passed on%s (docs/tuning.md)\n",
            seconds * 1e3, c->alpha_on * 1e6, c->beta_on * 1e9,
            cal->partner_on > 0 ? "" : " (no second rank there: default)", c->alpha_off * 1e6,
            c->beta_off * 1e9, cal->partner_off > 0 ? "" : " (no second node: default)",
            (c->append + c->handle) * 1e9, c->route_record * 1e9, c->forward * 1e9,
            cal->ranks < 3 ? " (nothing is passed on at 2 ranks: 0)" : "");
}

cr_tune_costs cr_calibrate_at_creation(MPI_Comm comm, const cr_config *cfg, cr_comm_maker maker,
                                       bool print)
{
    cr_calibration cal;
    double t0 = seconds_now();
    cr_calibrate_run(comm, cfg, &(cr_calibrate_opts){.hops = 200, .records = 50000, .repeats = 3},
                     maker, &cal);
    cr_tune_costs measured = cal.costs;
    /* costs measured in the job are taken with its sharing of the processors in them
     * (the model does not slow them again): so is the cost of passing on */
    measured.forward *= cal.sharing;
    if (print)
        print_calibration(&cal, seconds_now() - t0);
    return measured;
}
