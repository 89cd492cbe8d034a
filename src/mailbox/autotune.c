/* COURIER_ROUTE=auto and COURIER_BUFFER_SIZE=auto (docs/tuning.md): the comm's route
 * and buffer size chosen by the cost model of courier/tune.h.
 *
 * Twice: at cr_comm_create from the layout and an assumed traffic (the first
 * choice), then after each cr_barrier from the traffic of the epoch that ended (the
 * second choice). Both depend only on what every rank knows alike (the layout, the
 * settings, the costs, and the sums of the barrier's last wave), so every rank makes
 * the same decision without a message of its own. */
#include "mailbox/mailbox_internal.h"

#include "common/fatal.h"
#include "courier/rng.h"
#include "courier/tune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The traffic `auto` assumes when the comm is created, before any has been seen:
 * every rank sends one buffer's worth of 16-byte records (4096 of them) spread evenly
 * over the other ranks. */
static cr_tune_traffic assumed_traffic(int size)
{
    return (cr_tune_traffic){.records_per_dest = size > 1 ? 4096.0 / (size - 1) : 0,
                             .record_bytes = 16};
}

/* A question put to the model and its answer. The simulated transport creates one
 * comm per virtual rank on one shared layout, and every one of them asks the same
 * question at the same barrier: it is answered once (one cache for creation, one for
 * the epochs). */
typedef struct choice {
    uint64_t layout; /* layout_key */
    cr_route route;  /* the route given, when it is not auto */
    bool route_auto, buffer_auto;
    size_t most, cap; /* the largest buffer the transport's receives take; the cap */
    cr_tune_costs costs;
    cr_tune_traffic traffic[CR_TUNE_WINDOW]; /* the epochs weighed together */
    int ntraffic;
    bool asked;
    int chosen, n;
    cr_tune_prediction table[5 * CR_TUNE_NBUFFERS];
} choice;

static choice first_cache, epoch_cache;

/* The layout as a number: its rank count and every rank's node, hashed. */
static uint64_t layout_key(const cr_layout *l)
{
    int p = cr_layout_ranks(l);
    uint64_t h = cr_rng_hash64((uint64_t)p);
    for (int r = 0; r < p; r++)
        h = cr_rng_hash64(h ^ (uint64_t)cr_layout_node_of(l, r));
    return h;
}

static bool same_route(const cr_route *a, const cr_route *b)
{
    if (a->kind != b->kind || a->ndims != b->ndims)
        return false;
    for (unsigned i = 0; i < a->ndims && i < CR_ROUTE_MAX_DIMS; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

static bool same_traffic(const choice *a, const choice *b)
{
    if (a->ntraffic != b->ntraffic)
        return false;
    for (int e = 0; e < a->ntraffic; e++)
        if (a->traffic[e].records_per_dest != b->traffic[e].records_per_dest ||
            a->traffic[e].record_bytes != b->traffic[e].record_bytes ||
            a->traffic[e].keys_per_dest != b->traffic[e].keys_per_dest)
            return false;
    return true;
}

static bool same_question(const choice *a, const choice *b)
{
    return a->asked && a->layout == b->layout && a->route_auto == b->route_auto &&
           a->buffer_auto == b->buffer_auto && a->most == b->most && a->cap == b->cap &&
           !memcmp(&a->costs, &b->costs, sizeof a->costs) && same_traffic(a, b) &&
           (a->route_auto || same_route(&a->route, &b->route));
}

/* The best of the table among buffers of at most `most` bytes (-1: none). */
static int best_within(const cr_tune_prediction *table, int n, int chosen, size_t most)
{
    if (chosen < 0 || table[chosen].buffer_bytes <= most)
        return chosen;
    int best = -1;
    for (int i = 0; i < n; i++)
        if (table[i].buffer_bytes <= most && (best < 0 || table[i].seconds < table[best].seconds))
            best = i;
    return best;
}

/* Ask the model what this comm should run for the n epochs of traffic t[] taken
 * together, through `cache`. */
static const choice *choose(const cr_comm *c, const cr_tune_traffic *t, int n, choice *cache)
{
    const cr_tune_state *s = &c->tune;
    choice q = {.layout = layout_key(c->layout), .route = s->route_given,
                .route_auto = s->route_auto, .buffer_auto = s->buffer_auto, .most = s->most,
                .cap = c->cfg.buffer_cap_bytes, .costs = s->costs, .ntraffic = n, .asked = true};
    memcpy(q.traffic, t, (size_t)n * sizeof *t);
    if (same_question(cache, &q))
        return cache;
    *cache = q;
    /* a buffer below every candidate is the only size the choice may use */
    bool sizes = q.buffer_auto && q.most >= cr_tune_buffer_sizes[0];
    size_t fixed = sizes ? 0 : q.buffer_auto ? q.most : c->tune.now.buffer_bytes;
    cache->chosen = cr_tune_choose_over(c->layout, q.route_auto ? NULL : &q.route, fixed, q.cap,
                                        t, n, &q.costs, cache->table, &cache->n);
    /* no buffer above what the transport's receives were sized for */
    cache->chosen = best_within(cache->table, cache->n, cache->chosen, q.most);
    return cache;
}

static void print_table(const choice *ch)
{
    char name[128];
    for (int i = 0; i < ch->n; i++) {
        size_t b = ch->table[i].buffer_bytes;
        cr_route_format(&ch->table[i].route, name, sizeof name);
        fprintf(stderr, "%s %s/%zu%s %.1f", i ? "," : "", name, b >= 1024 ? b >> 10 : b,
                b >= 1024 ? "K" : "B", ch->table[i].seconds * 1e6);
    }
    fprintf(stderr, "\n");
}

/* Where the costs came from, for the lines COURIER_VERBOSE=1 prints. */
static void format_costs_source(const cr_comm *c, char *out, size_t len)
{
    const cr_tune_shape *f = &c->tune.file_shape;
    if (c->tune.measured)
        snprintf(out, len, "measured now (COURIER_TUNE=calibrate)");
    else if (c->cfg.tune_file[0])
        snprintf(out, len, "of %s (its calibration of %d ranks on %d processors, %d to a node)",
                 c->cfg.tune_file, f->machine_ranks, f->processors, f->ranks_per_node);
    else
        snprintf(out, len, "%s", c->tune.from_machine ? "of the simulated machine" : "by default");
}

static void print_first_choice(const cr_comm *c, const choice *ch)
{
    char name[128], source[400];
    const cr_tune_prediction *best = &ch->table[ch->chosen];
    cr_route_format(&best->route, name, sizeof name);
    format_costs_source(c, source, sizeof source);
    fprintf(stderr, "courier: auto chose route %s, buffer %zu bytes: predicted %.1f us per "
            "epoch of %.0f records of 16 bytes per rank with the costs %s (docs/tuning.md); "
            "the others:",
            name, best->buffer_bytes, best->seconds * 1e6,
            ch->traffic[0].records_per_dest * (c->size - 1), source);
    print_table(ch);
}

/* Ranks that share a machine share its processors: what each of them does takes
 * longer by ranks / processors, when that is above 1 (a laptop, an oversubscribed CI
 * box). 1 when the transport's ranks do not share processors in time. */
static double slowdown_here(cr_comm *c, const cr_tune_shape *here)
{
    int ranks = c->tp->ops->host->machine_ranks ? c->tp->ops->host->machine_ranks(c->tp) : 0;
    if (ranks <= here->processors || here->processors <= 0)
        return 1;
    return (double)ranks / here->processors;
}

/* Rank 0 says (COURIER_VERBOSE=1) when the calibration file was measured with its
 * node's processors shared otherwise than this job shares them: the model scales
 * its costs by the sharing, but what a message within a node and a record passed on
 * cost grows faster than that (docs/tuning.md, "Calibration"). */
static void note_other_sharing(cr_comm *c, const cr_tune_shape *file, const cr_tune_shape *here)
{
    int ranks = c->tp->ops->host->machine_ranks ? c->tp->ops->host->machine_ranks(c->tp) : 0;
    if (c->rank != 0 || c->cfg.verbosity < 1 || !file->machine_ranks || !ranks ||
        here->processors <= 0 || file->processors <= 0)
        return;
    double then = fmax(1, (double)file->machine_ranks / file->processors);
    if (fabs(then - slowdown_here(c, here)) < 1e-9)
        return;
    fprintf(stderr, "courier: COURIER_TUNE_FILE %s was measured with %d ranks on %d "
            "processors, this job runs %d on %d: where ranks share processors some costs "
            "depend on how many do (docs/tuning.md, \"Calibration\")\n",
            c->cfg.tune_file, file->machine_ranks, file->processors, ranks, here->processors);
}

/* The costs the transport prescribes (the simulated machine's), into the tune
 * costs: the same within and between nodes, nothing to append a record (the scale
 * model charges messages, bytes and the records handled only). */
static bool machine_costs(cr_comm *c)
{
    double m[3];
    if (!c->tp->ops->host->machine_costs || !c->tp->ops->host->machine_costs(c->tp, m))
        return false;
    cr_tune_costs *k = &c->tune.costs;
    k->alpha_on = k->alpha_off = m[0];
    k->beta_on = k->beta_off = m[1];
    k->append = k->route_record = 0;
    k->handle = m[2];
    return true;
}

/* The calibration file, read by rank 0 alone and its choice given to every rank:
 * ranks on nodes of other processor counts, or a file rewritten while the job
 * starts, would otherwise price the routes differently and choose apart. Rank 0's
 * message says why when it fails (the caller ends the job with it). Collective. */
#define COST_WORDS (sizeof(cr_tune_costs) / sizeof(double))
_Static_assert(sizeof(cr_tune_costs) % sizeof(double) == 0, "cr_tune_costs holds doubles");

enum { FILE_NONE = 1, FILE_LOADED = 2 }; /* 0: rank 0 could not read it */

static int load_tune_file(cr_comm *c, const cr_tune_shape *here, cr_tune_shape *file,
                          char *err, size_t errlen)
{
    double v[COST_WORDS + 4] = {0}, all[COST_WORDS + 4];
    if (c->rank == 0 && !c->cfg.tune_file[0]) {
        v[COST_WORDS + 3] = FILE_NONE;
    } else if (c->rank == 0 &&
               cr_tune_costs_load(c->cfg.tune_file, here, &c->tune.costs, file, err, errlen) ==
                   0) {
        memcpy(v, &c->tune.costs, sizeof c->tune.costs);
        v[COST_WORDS] = file->processors;
        v[COST_WORDS + 1] = file->ranks_per_node;
        v[COST_WORDS + 2] = file->machine_ranks;
        v[COST_WORDS + 3] = FILE_LOADED;
    }
    c->tp->ops->group->allreduce_double(c->tp, v, all, COST_WORDS + 4, CR_OP_SUM);
    int verdict = (int)all[COST_WORDS + 3];
    if (verdict == FILE_LOADED) {
        memcpy(&c->tune.costs, all, sizeof c->tune.costs);
        *file = (cr_tune_shape){.processors = (int)all[COST_WORDS],
                                .ranks_per_node = (int)all[COST_WORDS + 1],
                                .machine_ranks = (int)all[COST_WORDS + 2]};
    }
    return verdict;
}

/* Collective. */
bool cr_autotune_costs(cr_comm *c, const cr_tune_costs *measured, char *why, size_t len)
{
    cr_tune_costs_default(&c->tune.costs);
    if (measured)
        c->tune.costs = *measured;
    c->tune.measured = measured != NULL;
    cr_tune_shape here;
    cr_tune_shape_here(&here,
                       cr_layout_node_size(c->layout, cr_layout_node_of(c->layout, c->rank)));
    /* the busiest machine sets the pace, and every rank must predict alike: its
     * sharing scales the costs, and its ranks (and the largest node's) pick the
     * file's calibration; costs measured in this job already include whatever
     * sharing it has */
    int ranks = c->tp->ops->host->machine_ranks ? c->tp->ops->host->machine_ranks(c->tp) : 0;
    double mine[3] = {measured ? 1 : slowdown_here(c, &here), ranks, here.ranks_per_node};
    double most[3];
    c->tp->ops->group->allreduce_double(c->tp, mine, most, 3, CR_OP_MAX);
    here.machine_ranks = (int)most[1];
    here.ranks_per_node = (int)most[2];
    char err[400] = "";
    cr_tune_shape *file = &c->tune.file_shape;
    *file = (cr_tune_shape){0};
    int from_file = measured ? FILE_NONE : load_tune_file(c, &here, file, err, sizeof err);
    bool ok = from_file != 0;
    if (!ok)
        snprintf(why, len, "COURIER_TUNE_FILE: %s", err);
    c->tune.from_machine = from_file == FILE_NONE && !measured && machine_costs(c);
    c->tune.costs.slowdown = most[0];
    if (from_file == FILE_LOADED)
        note_other_sharing(c, file, &here);
    return ok;
}

/* The one place the run-time choices change (cr_choice): the route, the buffer size,
 * the park's cap that follows from it, and the configuration in effect that
 * cr_comm_config shows. The router, the buffers' threshold and the room follow at
 * the callers: a route moves collectively, a buffer size locally. */
static void set_choice(cr_comm *c, const cr_route *route, size_t buffer_bytes)
{
    cr_tune_state *s = &c->tune;
    s->now.route = *route;
    s->now.buffer_bytes = buffer_bytes;
    /* By default a rank parks at most what one sender may have in flight towards it:
     * its window of sends (docs/flow_control.md). */
    s->now.park_cap = c->cfg.park_cap_bytes ? c->cfg.park_cap_bytes
                                            : (size_t)c->cfg.max_inflight * buffer_bytes;
    if (buffer_bytes > s->largest_buffer)
        s->largest_buffer = buffer_bytes;
    s->in_effect = c->cfg;
    s->in_effect.route = *route;
    s->in_effect.buffer_bytes = buffer_bytes;
}

void cr_autotune_first(cr_comm *c)
{
    cr_tune_state *s = &c->tune;
    s->route_auto = c->cfg.route.kind == CR_ROUTE_AUTO;
    s->buffer_auto = c->cfg.buffer_auto;
    s->route_given = c->cfg.route;
    /* the transport's receives were sized for cfg.buffer_bytes: choose no larger */
    s->most = c->cfg.buffer_bytes;
    s->largest_buffer = c->cfg.buffer_bytes;
    cr_route route = c->cfg.route;
    size_t buffer_bytes = c->cfg.buffer_bytes;
    set_choice(c, &route, buffer_bytes); /* what the choice below starts from */
    if (!s->route_auto && !s->buffer_auto)
        return;
    cr_tune_traffic t = assumed_traffic(c->size);
    const choice *ch = choose(c, &t, 1, &first_cache);
    if (ch->chosen < 0)
        cr_fatal("COURIER_ROUTE=auto or COURIER_BUFFER_SIZE=auto: no route or buffer size "
                 "could be predicted for %d ranks", c->size);
    const cr_tune_prediction *best = &ch->table[ch->chosen];
    if (s->route_auto)
        route = best->route;
    if (s->buffer_auto)
        buffer_bytes = best->buffer_bytes;
    set_choice(c, &route, buffer_bytes);
    if (c->cfg.verbosity >= 1 && c->rank == 0)
        print_first_choice(c, ch);
}

/* The prediction of what the comm runs now over the window, from the table or on its
 * own. */
static cr_tune_prediction predict_current(const cr_comm *c, const choice *ch)
{
    const cr_route *now = cr_router_route(c->router);
    for (int i = 0; i < ch->n; i++)
        if (same_route(&ch->table[i].route, now) &&
            ch->table[i].buffer_bytes == c->tune.now.buffer_bytes)
            return ch->table[i];
    cr_tune_prediction p[1];
    int n = 0;
    if (cr_tune_choose_over(c->layout, now, c->tune.now.buffer_bytes, c->cfg.buffer_cap_bytes,
                            ch->traffic, ch->ntraffic, &c->tune.costs, p, &n) != 0)
        p[0].seconds = -1;
    return p[0];
}

/* What moving to another route costs once: the blocking reduction that keeps every
 * rank from sending under the new route before all have taken it (a record must
 * never be forwarded by two routes' rules), about 2 log2 P message times. */
static double move_cost(const cr_comm *c)
{
    const cr_tune_costs *k = &c->tune.costs;
    double alpha = cr_layout_nodes(c->layout) > 1 ? k->alpha_off : k->alpha_on;
    return 2.0 * alpha * ceil(log2((double)c->size)) * (k->slowdown > 1 ? k->slowdown : 1);
}

void cr_autotune_take_route(cr_comm *c, const cr_route *route)
{
    char err[256] = "";
    cr_router *next = cr_router_create(route, c->layout, err, sizeof err);
    if (!next)
        cr_fatal("COURIER_ROUTE=auto: the route chosen after a barrier cannot serve this "
                 "layout: %s", err);
    cr_router_destroy(c->router);
    c->router = next;
    set_choice(c, route, c->tune.now.buffer_bytes);
    c->routed = route->kind != CR_ROUTE_DIRECT && c->size > 1;
    cr_modules_route_changed(c);
    /* no rank leaves the barrier under the old route while another sends under the new */
    uint64_t none = 0, ignored = 0;
    c->tp->ops->group->allreduce_u64(c->tp, &none, &ignored, 1, CR_OP_MAX);
}

static void take_buffer(cr_comm *c, size_t bytes)
{
    set_choice(c, &c->tune.now.route, bytes);
    cr_outbufs_set_threshold(&c->out, bytes);
    cr_update_room(c);
}

/* COURIER_VERBOSE=2: the epoch alone, measured and predicted for what ran it. */
static void print_epoch(const cr_comm *c, double records, const cr_tune_traffic *t,
                        double measured)
{
    char name[128];
    const cr_route *route = cr_router_route(c->router);
    cr_tune_prediction now = {.seconds = -1};
    cr_tune_predict(c->layout, route, c->tune.now.buffer_bytes, c->cfg.buffer_cap_bytes, t,
                    &c->tune.costs, &now);
    cr_route_format(route, name, sizeof name);
    char merging[96] = "";
    if (t->keys_per_dest > 0)
        snprintf(merging, sizeof merging, " (merging as if from %.3g keys per destination)",
                 t->keys_per_dest);
    fprintf(stderr, "courier: epoch %llu: %.0f records of %zu bytes per rank%s, %.1f us "
            "measured on rank 0, %.1f us predicted for route %s, buffer %zu bytes "
            "(docs/tuning.md)\n",
            (unsigned long long)c->tune.epochs, records, t->record_bytes, merging,
            measured * 1e6, now.seconds * 1e6, name, c->tune.now.buffer_bytes);
}

static void print_move(const cr_comm *c, const choice *ch, const cr_tune_prediction *from,
                       double own)
{
    char a[128], b[128];
    const cr_tune_prediction *to = &ch->table[ch->chosen];
    const cr_tune_traffic *last = &ch->traffic[ch->ntraffic - 1];
    cr_route_format(&from->route, a, sizeof a);
    cr_route_format(&to->route, b, sizeof b);
    fprintf(stderr, "courier: auto after epoch %llu (%.0f records of %zu bytes per rank; "
            "predictions for the last %d epochs): from route %s, buffer %zu bytes (%.1f us) "
            "to route %s, buffer %zu bytes (%.1f us), besides the program's own %.1f us; "
            "the others:",
            (unsigned long long)c->tune.epochs, last->records_per_dest * (c->size - 1),
            last->record_bytes, ch->ntraffic, a, from->buffer_bytes, from->seconds * 1e6, b,
            to->buffer_bytes, to->seconds * 1e6, own * 1e6);
    print_table(ch);
}

/* The program's own time in an epoch, which the model does not see (its handlers'
 * work beyond the calibrated one, what it computes between barriers): the ranks' mean
 * time in the epoch less the prediction for the configuration that ran it. The same
 * on every rank (the wave's sum); it adds to every configuration alike, so it never
 * changes which is best, only whether the best saves 10% of the whole. */
static double own_time(const cr_comm *c, const cr_term_epoch *sums, const cr_tune_traffic *t)
{
    if (c->engine.loop == NULL) /* simulated: its clock counts steps, not seconds */
        return 0;
    cr_tune_prediction now;
    if (cr_tune_predict(c->layout, cr_router_route(c->router), c->tune.now.buffer_bytes,
                        c->cfg.buffer_cap_bytes, t, &c->tune.costs, &now) != 0)
        return 0;
    double mean = (double)sums->ns * 1e-9 / c->size;
    return mean > now.seconds ? mean - now.seconds : 0;
}

/* Remember the epoch that ended: the last CR_TUNE_WINDOW epochs, oldest first. An
 * epoch whose records merged on their way and one whose records did not are of
 * different phases of a program (a graph's construction, then its searches): the
 * window keeps only the epochs of the newest one's kind. */
static void remember(cr_tune_state *s, const cr_tune_traffic *t, double own)
{
    bool merges = t->keys_per_dest > 0;
    if (s->nwindow > 0 && (s->window[s->nwindow - 1].keys_per_dest > 0) != merges)
        s->nwindow = 0;
    if (s->nwindow == CR_TUNE_WINDOW) {
        memmove(s->window, s->window + 1, (CR_TUNE_WINDOW - 1) * sizeof *s->window);
        memmove(s->own, s->own + 1, (CR_TUNE_WINDOW - 1) * sizeof *s->own);
        s->nwindow--;
    }
    s->window[s->nwindow] = *t;
    s->own[s->nwindow++] = own;
}

/* The keys per destination that explain the epoch's merges under the route that ran
 * it (cr_tune_keys_per_dest), asked once for all the comms of a simulation. */
static double keys_of(const cr_comm *c, double records_per_dest, double merged_per_rank)
{
    static struct {
        uint64_t layout;
        cr_route route;
        double records_per_dest, merged_per_rank, keys;
        bool asked;
    } last;
    if (merged_per_rank <= 0)
        return 0;
    const cr_route *route = cr_router_route(c->router);
    uint64_t layout = layout_key(c->layout);
    if (!last.asked || last.layout != layout || !same_route(&last.route, route) ||
        last.records_per_dest != records_per_dest || last.merged_per_rank != merged_per_rank) {
        last.layout = layout, last.route = *route, last.asked = true;
        last.records_per_dest = records_per_dest, last.merged_per_rank = merged_per_rank;
        last.keys = cr_tune_keys_per_dest(c->layout, route, records_per_dest, merged_per_rank);
    }
    return last.keys > 0 ? last.keys : 0;
}

void cr_autotune_epoch(cr_comm *c, const cr_term_epoch *sums)
{
    cr_tune_state *s = &c->tune;
    uint64_t records = sums->records - s->records_seen, bytes = sums->bytes - s->bytes_seen;
    uint64_t merged = sums->merged - s->merged_seen;
    s->records_seen = sums->records, s->bytes_seen = sums->bytes;
    s->merged_seen = sums->merged;
    double now = cr_clock(c), measured = now - s->epoch_start;
    s->epoch_start = now;
    s->epochs++;
    bool explain = c->cfg.verbosity >= 2 && c->rank == 0;
    if (c->size < 2 || records == 0 || (!explain && !s->route_auto && !s->buffer_auto))
        return;
    double per_rank = (double)records / c->size;
    cr_tune_traffic t = {.records_per_dest = per_rank / (c->size - 1),
                         .record_bytes = (size_t)((bytes + records / 2) / records)};
    t.keys_per_dest = keys_of(c, t.records_per_dest, (double)merged / c->size);
    if (explain)
        print_epoch(c, per_rank, &t, measured);
    if (!s->route_auto && !s->buffer_auto)
        return;
    remember(s, &t, own_time(c, sums, &t));
    const choice *ch = choose(c, s->window, s->nwindow, &epoch_cache);
    cr_tune_prediction current = predict_current(c, ch);
    if (ch->chosen < 0 || current.seconds < 0)
        return;
    const cr_tune_prediction *best = &ch->table[ch->chosen];
    bool moves_route = !same_route(&best->route, cr_router_route(c->router));
    double own = 0;
    for (int e = 0; e < s->nwindow; e++)
        own += s->own[e];
    if (!cr_tune_worth_switching(current.seconds + own, best->seconds + own,
                                 moves_route ? move_cost(c) : 0))
        return;
    if (c->cfg.verbosity >= 1 && c->rank == 0)
        print_move(c, ch, &current, own);
    if (moves_route)
        cr_autotune_take_route(c, &best->route);
    if (best->buffer_bytes != c->tune.now.buffer_bytes)
        take_buffer(c, best->buffer_bytes);
    c->stats.tune_switches++;
}
