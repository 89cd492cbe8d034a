/* spmv: a distributed column-parallel y = Ax that runs an exchange plan with real MPI
 * messages (Duymuş 2021, docs/references.md, section 2.1; docs/plan.md).
 *
 * Rank r owns the columns and the x and y entries of its part. It multiplies its
 * columns, keeps the partial sums of its own rows and sends the others, one
 * combined message per link of the plan: under the direct plan straight to the
 * row's owner; under store-and-forward (STFW) along a virtual topology; under message
 * sharing through the partners the planner chose. A relay copies what it forwards
 * into its own outgoing messages, so every link is one MPI message per iteration.
 * The plan is built once (every rank plans the same matrix alike) and run many times
 * by a persistent schedule; y is checked against a sequential product. */
#include "cli.h"
#include "sparse.h"

#include <courier.h>

#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: mpirun -np P spmv [options]\n"
    "\n"
    "Runs y = Ax column-parallel on P ranks (rows and columns of A block-partitioned,\n"
    "or by --partition) under each exchange plan, checks y against a sequential\n"
    "product and prints, per plan and way of sending, the messages per rank and the\n"
    "time per iteration of the slowest rank. Plans and senders alternate within each\n"
    "repetition.\n"
    "\n"
    "  --graph SPEC      a Matrix Market file or a generator (see plan --help;\n"
    "                    default rmat:14)\n"
    "  --partition FILE  one part in 0..P-1 per row\n"
    "  --partitioner X   block (the default) or metis (METIS's k-way partition\n"
    "                    minimizing the edge cut; needs a build with libmetis-dev)\n"
    "  --seed S          generator seed (default 1)\n"
    "  --plans L         direct, stfw, sharing (default all)\n"
    "  --topology T      STFW topology: hypercube, grid or grid:AxB[xC] (default\n"
    "                    hypercube)\n"
    "  --senders L       p2p (MPI_Isend/MPI_Irecv each iteration), persistent\n"
    "                    (MPI_Send_init/MPI_Recv_init once, MPI_Start each iteration)\n"
    "                    (default both)\n"
    "  --iterations N    products per timing (default 200)\n"
    "  --reps R          timings per plan and sender (default 5)\n";

static const char *const plan_names[] = {"direct", "stfw", "sharing", NULL};
static const char *const sender_names[] = {"p2p", "persistent", NULL};

/* ---------------------------------------------------------------- the schedule */

/* The plan's units (include/courier/plan.h) with their payload sizes. */
typedef struct schedule {
    const cr_plan *plan;
    const spmv_comm *comm;
    cr_plan_schedule *ps;
    const cr_plan_unit *units;
    const cr_plan_segment *seg;
    uint64_t nunits;
    uint64_t *doubles; /* per unit */
} schedule;

static void schedule_build(const app *a, schedule *s, const cr_plan *plan, const spmv_comm *comm)
{
    s->plan = plan;
    s->comm = comm;
    s->ps = cr_plan_schedule_create(plan);
    s->nunits = cr_plan_schedule_units(s->ps, &s->units);
    s->seg = cr_plan_schedule_segments(s->ps);
    s->doubles = app_calloc(a, s->nunits + 1, sizeof *s->doubles, "the schedule");
    for (uint64_t u = 0; u < s->nunits; u++)
        for (uint64_t i = s->units[u].first; i < s->units[u].first + s->units[u].count; i++)
            s->doubles[u] += comm->volume[s->seg[i].message];
}

static void schedule_free(schedule *s)
{
    cr_plan_schedule_destroy(s->ps);
    free(s->doubles);
}

/* ---------------------------------------------------------------- one rank's part */

/* What this rank does with one received unit's segments: add a final segment into y,
 * or copy a forwarded one into the outgoing unit that carries its next hop. */
typedef struct action {
    uint64_t from_off, len;
    int64_t to_unit; /* index into mine.out, or -1: final, add into y rows of message x */
    uint64_t to_off;
    uint64_t x;
} action;

/* A source segment: message x's partial sums go to out unit u at offset off. */
typedef struct source {
    uint64_t x, u, off;
} source;

typedef struct mine {
    int me;
    uint64_t *out, nout;        /* units this rank sends */
    uint64_t *in, nin;          /* units it receives */
    double **out_buf, **in_buf;
    uint64_t *waiting;          /* per out unit: forwarded segments it needs */
    uint64_t *waiting_now;
    uint64_t *act_ptr;          /* per in unit: its actions */
    action *act;
    uint64_t nsrc;
    source *src;
    MPI_Request *rreq, *sreq;
    MPI_Request *rpers, *spers; /* persistent */
} mine;

static int64_t find_out(const mine *m, const schedule *s, int to, uint64_t x, int h,
                        uint64_t *off)
{
    for (uint64_t k = 0; k < m->nout; k++) {
        const cr_plan_unit *u = &s->units[m->out[k]];
        if (u->to != to)
            continue;
        uint64_t o = 0;
        for (uint64_t i = u->first; i < u->first + u->count; i++) {
            if (s->seg[i].message == x && s->seg[i].hop == h) {
                *off = o;
                return (int64_t)k;
            }
            o += s->comm->volume[s->seg[i].message];
        }
    }
    return -1;
}

static void mine_build(const app *a, mine *m, const schedule *s)
{
    memset(m, 0, sizeof *m);
    m->me = a->rank;
    for (uint64_t u = 0; u < s->nunits; u++) {
        m->nout += s->units[u].from == a->rank;
        m->nin += s->units[u].to == a->rank;
    }
    m->out = app_calloc(a, m->nout + 1, sizeof *m->out, "units");
    m->in = app_calloc(a, m->nin + 1, sizeof *m->in, "units");
    m->nout = m->nin = 0;
    for (uint64_t u = 0; u < s->nunits; u++) {
        if (s->units[u].from == a->rank)
            m->out[m->nout++] = u;
        if (s->units[u].to == a->rank)
            m->in[m->nin++] = u;
    }
    m->out_buf = app_calloc(a, m->nout + 1, sizeof *m->out_buf, "buffers");
    m->in_buf = app_calloc(a, m->nin + 1, sizeof *m->in_buf, "buffers");
    m->waiting = app_calloc(a, m->nout + 1, sizeof *m->waiting, "units");
    m->waiting_now = app_calloc(a, m->nout + 1, sizeof *m->waiting_now, "units");
    uint64_t nsrc = 0, nact = 0;
    for (uint64_t k = 0; k < m->nout; k++) {
        const cr_plan_unit *u = &s->units[m->out[k]];
        uint64_t doubles = s->doubles[m->out[k]];
        m->out_buf[k] = app_calloc(a, doubles + 1, sizeof(double), "buffers");
        for (uint64_t i = u->first; i < u->first + u->count; i++) {
            nsrc += s->seg[i].hop == 0;
            m->waiting[k] += s->seg[i].hop > 0;
        }
    }
    for (uint64_t k = 0; k < m->nin; k++) {
        m->in_buf[k] = app_calloc(a, s->doubles[m->in[k]] + 1, sizeof(double), "buffers");
        nact += s->units[m->in[k]].count;
    }
    m->src = app_calloc(a, nsrc + 1, sizeof *m->src, "sources");
    for (uint64_t k = 0; k < m->nout; k++) {
        const cr_plan_unit *u = &s->units[m->out[k]];
        uint64_t off = 0;
        for (uint64_t i = u->first; i < u->first + u->count; i++) {
            if (s->seg[i].hop == 0)
                m->src[m->nsrc++] = (source){s->seg[i].message, k, off};
            off += s->comm->volume[s->seg[i].message];
        }
    }
    m->act_ptr = app_calloc(a, m->nin + 1, sizeof *m->act_ptr, "actions");
    m->act = app_calloc(a, nact + 1, sizeof *m->act, "actions");
    uint64_t n = 0;
    for (uint64_t k = 0; k < m->nin; k++) {
        const cr_plan_unit *u = &s->units[m->in[k]];
        uint64_t off = 0;
        for (uint64_t i = u->first; i < u->first + u->count; i++) {
            uint64_t x = s->seg[i].message, len = s->comm->volume[x];
            const int *path;
            int plen = cr_plan_path(s->plan, x, &path);
            action ac = {off, len, -1, 0, x};
            if (s->seg[i].hop + 2 < plen) {
                ac.to_unit = find_out(m, s, path[s->seg[i].hop + 2], x, s->seg[i].hop + 1, &ac.to_off);
                if (ac.to_unit < 0)
                    app_fail(a, "schedule: no outgoing unit for message %llu hop %d",
                             (unsigned long long)x, s->seg[i].hop + 1);
            }
            m->act[n++] = ac;
            off += len;
        }
        m->act_ptr[k + 1] = n;
    }
    m->rreq = app_calloc(a, m->nin + 1, sizeof *m->rreq, "requests");
    m->sreq = app_calloc(a, m->nout + 1, sizeof *m->sreq, "requests");
    m->rpers = app_calloc(a, m->nin + 1, sizeof *m->rpers, "requests");
    m->spers = app_calloc(a, m->nout + 1, sizeof *m->spers, "requests");
    for (uint64_t k = 0; k < m->nin; k++) {
        const cr_plan_unit *u = &s->units[m->in[k]];
        uint64_t doubles = s->doubles[m->in[k]];
        MPI_Recv_init(m->in_buf[k], (int)doubles, MPI_DOUBLE, u->from, u->tag, MPI_COMM_WORLD,
                      &m->rpers[k]);
    }
    for (uint64_t k = 0; k < m->nout; k++) {
        const cr_plan_unit *u = &s->units[m->out[k]];
        uint64_t doubles = s->doubles[m->out[k]];
        MPI_Send_init(m->out_buf[k], (int)doubles, MPI_DOUBLE, u->to, u->tag, MPI_COMM_WORLD,
                      &m->spers[k]);
    }
}

static void mine_free(mine *m)
{
    for (uint64_t k = 0; k < m->nin; k++) {
        MPI_Request_free(&m->rpers[k]);
        free(m->in_buf[k]);
    }
    for (uint64_t k = 0; k < m->nout; k++) {
        MPI_Request_free(&m->spers[k]);
        free(m->out_buf[k]);
    }
    free(m->out), free(m->in), free(m->out_buf), free(m->in_buf), free(m->waiting);
    free(m->waiting_now), free(m->act_ptr), free(m->act), free(m->src), free(m->rreq);
    free(m->sreq), free(m->rpers), free(m->spers);
}

/* ---------------------------------------------------------------- the product */

typedef struct problem {
    const sparse_matrix *a;
    const int *part;
    const spmv_comm *comm;
    double *x, *partial, *y;
    uint64_t *touched, ntouched; /* rows this rank's columns reach, and its own rows */
    uint64_t *cols, ncols;       /* this rank's columns */
} problem;

static void send_unit(mine *m, const schedule *s, uint64_t k, bool persistent)
{
    if (persistent) {
        MPI_Start(&m->spers[k]);
        return;
    }
    const cr_plan_unit *u = &s->units[m->out[k]];
        uint64_t doubles = s->doubles[m->out[k]];
    MPI_Isend(m->out_buf[k], (int)doubles, MPI_DOUBLE, u->to, u->tag, MPI_COMM_WORLD,
              &m->sreq[k]);
}

static void multiply(problem *p, mine *m, const schedule *s, bool persistent)
{
    const sparse_matrix *a = p->a;
    for (uint64_t t = 0; t < p->ntouched; t++)
        p->partial[p->touched[t]] = 0;
    for (uint64_t c = 0; c < p->ncols; c++) {
        uint64_t j = p->cols[c];
        for (uint64_t k = a->col_ptr[j]; k < a->col_ptr[j + 1]; k++)
            p->partial[a->row[k]] += a->val[k] * p->x[j];
    }
    if (persistent) {
        if (m->nin)
            MPI_Startall((int)m->nin, m->rpers);
    } else {
        for (uint64_t k = 0; k < m->nin; k++) {
            const cr_plan_unit *u = &s->units[m->in[k]];
        uint64_t doubles = s->doubles[m->in[k]];
            MPI_Irecv(m->in_buf[k], (int)doubles, MPI_DOUBLE, u->from, u->tag,
                      MPI_COMM_WORLD, &m->rreq[k]);
        }
    }
    const spmv_comm *c = p->comm;
    for (uint64_t i = 0; i < m->nsrc; i++) {
        uint64_t x = m->src[i].x;
        double *dst = m->out_buf[m->src[i].u] + m->src[i].off;
        for (uint64_t r = c->rows_ptr[x]; r < c->rows_ptr[x + 1]; r++)
            *dst++ = p->partial[c->rows[r]];
    }
    memcpy(m->waiting_now, m->waiting, m->nout * sizeof *m->waiting);
    for (uint64_t k = 0; k < m->nout; k++)
        if (m->waiting_now[k] == 0)
            send_unit(m, s, k, persistent);
    for (uint64_t t = 0; t < p->ntouched; t++) {
        uint64_t i = p->touched[t];
        if (p->part[i] == m->me)
            p->y[i] = p->partial[i];
    }
    MPI_Request *rq = persistent ? m->rpers : m->rreq;
    for (uint64_t done = 0; done < m->nin; done++) {
        int k;
        MPI_Waitany((int)m->nin, rq, &k, MPI_STATUS_IGNORE);
        for (uint64_t q = m->act_ptr[k]; q < m->act_ptr[k + 1]; q++) {
            const action *ac = &m->act[q];
            const double *from = m->in_buf[k] + ac->from_off;
            if (ac->to_unit < 0) {
                for (uint64_t r = 0; r < ac->len; r++)
                    p->y[c->rows[c->rows_ptr[ac->x] + r]] += from[r];
            } else {
                memcpy(m->out_buf[ac->to_unit] + ac->to_off, from, ac->len * sizeof *from);
                if (--m->waiting_now[ac->to_unit] == 0)
                    send_unit(m, s, (uint64_t)ac->to_unit, persistent);
            }
        }
    }
    if (m->nout)
        MPI_Waitall((int)m->nout, persistent ? m->spers : m->sreq, MPI_STATUSES_IGNORE);
}

/* Rows of the rank's own part that differ from the sequential product by more than
 * rounding: 1e-12 of the sum of the magnitudes of the row's terms. */
static uint64_t check(const problem *p, int me)
{
    const sparse_matrix *a = p->a;
    double *ref = calloc(a->n, sizeof *ref), *mag = calloc(a->n, sizeof *mag);
    if (!ref || !mag) {
        fprintf(stderr, "spmv: out of memory for the check\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (uint64_t j = 0; j < a->n; j++)
        for (uint64_t k = a->col_ptr[j]; k < a->col_ptr[j + 1]; k++) {
            double t = a->val[k] * p->x[j];
            ref[a->row[k]] += t;
            mag[a->row[k]] += fabs(t);
        }
    uint64_t bad = 0;
    for (uint64_t i = 0; i < a->n; i++)
        if (p->part[i] == me && !(fabs(p->y[i] - ref[i]) <= 1e-12 * mag[i]))
            bad++;
    free(ref);
    free(mag);
    return bad;
}

/* ---------------------------------------------------------------- main */

typedef struct options {
    const char *input, *partition, *topology;
    app_shared sh; /* the common flags (--csv in sh.csv) */
    uint64_t seed, iterations, reps;
    int use_plan[3], use_sender[2], partitioner;
} options;

static void parse_list(const app *a, const char *flag, const char *value,
                       const char *const *names, int *use)
{
    char *list = strdup(value);
    if (!list)
        app_error(a, "out of memory");
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
        use[app_parse_choice(a, flag, t, names)] = 1;
    free(list);
}

static void parse(app *a, int argc, char **argv, options *o)
{
    static const struct option opts[] = {
        {"graph", required_argument, 0, 'i'},     {"partition", required_argument, 0, 'p'},
        {"seed", required_argument, 0, 'S'},      {"plans", required_argument, 0, 'P'},
        {"topology", required_argument, 0, 't'},  {"senders", required_argument, 0, 's'},
        {"iterations", required_argument, 0, 'n'}, {"reps", required_argument, 0, 'r'},
        {"partitioner", required_argument, 0, 'x'}, APP_LONG_COMMON, {0, 0, 0, 0}};
    *o = (options){.input = "rmat:14", .topology = "hypercube", .seed = 1, .iterations = 200,
                   .reps = 5};
    app_shared_init(&o->sh);
    bool plans = false, senders = false;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'i': o->input = optarg; break;
        case 'p': o->partition = optarg; break;
        case 'S': o->seed = app_parse_u64(a, "--seed", optarg, 0, UINT64_MAX); break;
        case 'P': parse_list(a, "--plans", optarg, plan_names, o->use_plan), plans = true; break;
        case 't': o->topology = optarg; break;
        case 's':
            parse_list(a, "--senders", optarg, sender_names, o->use_sender), senders = true;
            break;
        case 'n': o->iterations = app_parse_u64(a, "--iterations", optarg, 1, 1u << 30); break;
        case 'r': o->reps = app_parse_u64(a, "--reps", optarg, 1, 1000); break;
        case 'x':
            o->partitioner = app_parse_choice(a, "--partitioner", optarg, sparse_partitioners);
            break;
        default: app_other_option(a, ch, optarg, &o->sh, argv);
        }
    }
    app_no_operands(a, argc, argv);
    const char *misuse = sparse_partition_misuse(o->partition, o->partitioner);
    if (misuse)
        app_usage_error(a, "%s", misuse);
    if (!plans)
        o->use_plan[0] = o->use_plan[1] = o->use_plan[2] = 1;
    if (!senders)
        o->use_sender[0] = o->use_sender[1] = 1;
    cr_route r;
    char err[256];
    if (cr_route_parse(o->topology, &r, err, sizeof err) != 0 ||
        (r.kind != CR_ROUTE_GRID && r.kind != CR_ROUTE_HYPERCUBE))
        app_usage_error(a, "--topology '%s': expected hypercube, grid or grid:AxB[xC]",
                        o->topology);
}

static cr_plan *make_plan(const app *a, const spmv_comm *c, int which, const char *topology)
{
    cr_plan_opts o;
    cr_plan_opts_init(&o);
    o.kind = which == 0 ? CR_PLAN_DIRECT : which == 1 ? CR_PLAN_STFW : CR_PLAN_SHARING;
    char err[256];
    cr_route_parse(topology, &o.topology, err, sizeof err);
    cr_plan_matrix cm = {.nranks = c->nranks, .ptr = c->ptr, .dest = c->dest, .volume = c->volume};
    cr_plan *p = cr_plan_create(&cm, &o, err, sizeof err);
    if (!p)
        app_error(a, "%s", err);
    return p;
}

/* x, and this rank's columns and the rows its columns touch (the partial sums it
 * computes), for p's matrix and partition. */
static void local_problem(const app *a, problem *p)
{
    const sparse_matrix *mat = p->a;
    const int *part = p->part;
    p->x = app_calloc(a, mat->n, sizeof *p->x, "x");
    p->partial = app_calloc(a, mat->n, sizeof *p->partial, "partial sums");
    p->y = app_calloc(a, mat->n, sizeof *p->y, "y");
    unsigned char *hit = app_calloc(a, mat->n, 1, "rows");
    for (uint64_t j = 0; j < mat->n; j++) {
        p->x[j] = 1.0 + (double)(j % 17) / 16.0;
        if (part[j] == a->rank)
            for (uint64_t k = mat->col_ptr[j]; k < mat->col_ptr[j + 1]; k++)
                hit[mat->row[k]] = 1;
        if (part[j] == a->rank)
            hit[j] = 1;
    }
    for (uint64_t i = 0; i < mat->n; i++) {
        p->ntouched += hit[i];
        p->ncols += part[i] == a->rank;
    }
    p->cols = app_calloc(a, p->ncols + 1, sizeof *p->cols, "columns");
    p->ncols = 0;
    for (uint64_t j = 0; j < mat->n; j++)
        if (part[j] == a->rank)
            p->cols[p->ncols++] = j;
    p->touched = app_calloc(a, p->ntouched + 1, sizeof *p->touched, "rows");
    p->ntouched = 0;
    for (uint64_t i = 0; i < mat->n; i++)
        if (hit[i])
            p->touched[p->ntouched++] = i;
    free(hit);
}

/* Plan `plan`'s rows of the table (one per sender) and CSV lines: its messages as
 * sent and the median and least time per iteration of times[sender][rep]. */
static void report_plan(const app *a, const options *o, FILE *csv, const char *name, int plan,
                        const schedule *sc, double *times)
{
    uint64_t maxd = 0;
    for (uint64_t u = 0; u < sc->nunits; u++)
        if (sc->doubles[u] > maxd)
            maxd = sc->doubles[u];
    /* Messages as sent: one per unit (a link, or a piece of a split link). */
    uint64_t *per = app_calloc(a, (size_t)a->size, sizeof *per, "counts");
    for (uint64_t u = 0; u < sc->nunits; u++)
        per[sc->units[u].from]++;
    uint64_t mx = 0;
    for (int r = 0; r < a->size; r++)
        mx = per[r] > mx ? per[r] : mx;
    free(per);
    uint64_t splits = cr_plan_schedule_splits(sc->ps);
    for (int sn = 0; sn < 2; sn++) {
        if (!o->use_sender[sn] || a->rank != 0)
            continue;
        double *t = times + (size_t)sn * o->reps, mn = t[0];
        for (uint64_t r = 1; r < o->reps; r++)
            mn = fmin(mn, t[r]);
        double med = app_median(t, (int)o->reps);
        printf("| %s | %s | %llu | %.2f | %llu | %llu | %.1f | %.1f |\n", plan_names[plan],
               sender_names[sn], (unsigned long long)mx, (double)sc->nunits / a->size,
               (unsigned long long)maxd, (unsigned long long)splits, med * 1e6, mn * 1e6);
        if (csv)
            fprintf(csv, "%s,%d,%s,%s,%llu,%.4f,%llu,%llu,%.9f,%.9f,1\n", name, a->size,
                    plan_names[plan], sender_names[sn], (unsigned long long)mx,
                    (double)sc->nunits / a->size, (unsigned long long)maxd,
                    (unsigned long long)splits, med, mn);
    }
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "spmv", usage, &argc, &argv);
    options o;
    parse(&a, argc, argv, &o);
    sparse_matrix mat;
    char err[512];
    int rc = sparse_load(o.input, o.seed, &mat, err, sizeof err);
    if (rc != 0)
        app_error(&a, "%s", err);
    int *part = app_calloc(&a, mat.n, sizeof *part, "the partition");
    /* Every rank partitions alike: METIS is sequential and seeded. */
    if (sparse_partition(&mat, a.size, o.partition, o.partitioner, o.seed, part, err,
                         sizeof err) != 0)
        app_error(&a, "%s", err);
    spmv_comm comm;
    spmv_comm_build(&mat, part, a.size, &comm);
    FILE *csv = app_open_csv(&a, o.sh.csv, "input,ranks,plan,sender,msgs_max,msgs_mean,"
                             "doubles_max,units_split,seconds_per_iteration_median,"
                             "seconds_per_iteration_min,verified");

    problem p = {.a = &mat, .part = part, .comm = &comm};
    local_problem(&a, &p);

    int which[3], nplans = 0;
    for (int k = 0; k < 3; k++)
        if (o.use_plan[k])
            which[nplans++] = k;
    cr_plan *plans[3];
    schedule sched[3];
    mine mine_of[3];
    for (int k = 0; k < nplans; k++) {
        plans[k] = make_plan(&a, &comm, which[k], o.topology);
        schedule_build(&a, &sched[k], plans[k], &comm);
        mine_build(&a, &mine_of[k], &sched[k]);
    }
    /* Verify every plan under every sender before timing anything. */
    for (int k = 0; k < nplans; k++)
        for (int sn = 0; sn < 2; sn++) {
            if (!o.use_sender[sn])
                continue;
            memset(p.y, 0, mat.n * sizeof *p.y);
            multiply(&p, &mine_of[k], &sched[k], sn == 1);
            uint64_t bad = check(&p, a.rank), total;
            MPI_Allreduce(&bad, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
            if (total > 0)
                app_error(&a, "plan %s, sender %s: %llu rows of y differ from the sequential "
                          "product", plan_names[which[k]], sender_names[sn],
                          (unsigned long long)total);
        }
    double *times = app_calloc(&a, (size_t)nplans * 2 * o.reps, sizeof *times, "timings");
    for (uint64_t rep = 0; rep < o.reps; rep++)
        for (int k = 0; k < nplans; k++)
            for (int sn = 0; sn < 2; sn++) {
                if (!o.use_sender[sn])
                    continue;
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                for (uint64_t it = 0; it < o.iterations; it++)
                    multiply(&p, &mine_of[k], &sched[k], sn == 1);
                times[((size_t)k * 2 + sn) * o.reps + rep] =
                    app_max_time(MPI_Wtime() - t0) / (double)o.iterations;
            }
    char name[256];
    sparse_name(o.input, name, sizeof name);
    if (a.rank == 0)
        printf("spmv %s: %llu rows, %llu nonzeros, %d ranks; %llu iterations x %llu reps, "
               "alternating; every plan verified against the sequential product\n\n"
               "| plan | sender | messages max | mean | doubles max | split units | "
               "us/iteration median | min |\n|---|---|---|---|---|---|---|---|\n",
               name, (unsigned long long)mat.n, (unsigned long long)mat.nnz, a.size,
               (unsigned long long)o.iterations, (unsigned long long)o.reps);
    for (int k = 0; k < nplans; k++)
        report_plan(&a, &o, csv, name, which[k], &sched[k], times + (size_t)k * 2 * o.reps);
    for (int k = 0; k < nplans; k++) {
        mine_free(&mine_of[k]);
        schedule_free(&sched[k]);
        cr_plan_destroy(plans[k]);
    }
    if (csv)
        fclose(csv);
    free(times);
    free(p.x), free(p.partial), free(p.y), free(p.touched), free(p.cols), free(part);
    spmv_comm_free(&comm);
    sparse_free(&mat);
    MPI_Finalize();
    return 0;
}
