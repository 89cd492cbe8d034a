/* bale's matrix flags and trial lines: see bale.h. */
#include "bale.h"

#include <stdio.h>

void bale_matrix_init(bale_matrix_args *m)
{
    *m = (bale_matrix_args){.per_rank = 500000, .reps = 3}; /* -a 0 where it is taken */
    cr_spmat_er_init(&m->g);
}

bool bale_matrix_option(const app *a, int ch, const char *value, bale_matrix_args *m)
{
    switch (ch) {
    case 'n': m->per_rank = app_parse_u64(a, "-n", value, 1, UINT64_C(1) << 34); return true;
    case 'N': m->total = app_parse_u64(a, "-N", value, 1, UINT64_C(1) << 40); return true;
    case 'z': m->g.nz_per_row = app_parse_double(a, "-z", value, 0, 1e9); return true;
    case 'e': m->g.edge_prob = app_parse_double(a, "-e", value, 0, 1); return true;
    case 'd': m->g.directed = true; return true;
    case 'l': m->g.loops = true; return true;
    case 'w': m->g.weighted = true; return true;
    case 'F': return true;
    case 's': m->g.seed = app_parse_u64(a, "--seed", value, 0, UINT64_MAX); return true;
    case 'r': m->reps = (int)app_parse_u64(a, "--reps", value, 1, 1000); return true;
    case 'a': m->alg = (int)app_parse_u64(a, "-a", value, 0, 1); return true;
    default: return false;
    }
}

void bale_matrix_finish(const app *a, bale_matrix_args *m, double copies)
{
    cr_spmat_er *g = &m->g;
    g->rows = m->total ? m->total : m->per_rank * (uint64_t)a->size;
    double per_row = g->edge_prob > 0 ? g->edge_prob * (double)g->rows : g->nz_per_row + 1;
    double need = (double)g->rows * per_row * (g->weighted ? 24 : 16) * copies;
    double mem = app_physical_memory();
    if (mem > 0 && need > mem)
        app_usage_error(a, "%llu rows need about %.1f GiB, more than this machine's %.1f GiB",
                        (unsigned long long)g->rows, need / (1 << 30), mem / (1 << 30));
}

cr_spmat *bale_matrix_make(const app *a, cr_comm *comm, const bale_matrix_args *m)
{
    char err[300];
    cr_spmat *s = cr_spmat_erdos_renyi(comm, &m->g, err, sizeof err);
    if (!s)
        app_error(a, "%s", err);
    return s;
}

void bale_matrix_describe(const app *a, const char *name, const cr_spmat *m,
                          const bale_matrix_args *args, bool quiet)
{
    const cr_spmat_er *g = &args->g;
    if (a->rank == 0 && !quiet)
        printf("%s: %d ranks, %llu rows, %llu entries (%.2f per row), %s%s%s\n", name, a->size,
               (unsigned long long)g->rows, (unsigned long long)cr_spmat_nnz(m),
               (double)cr_spmat_nnz(m) / (double)g->rows,
               g->directed ? "directed" : "lower triangular", g->loops ? ", loops" : "",
               g->weighted ? ", weighted" : "");
}

void bale_trial_done(const app *a, bale_trials *t, double seconds, uint64_t entries, bool valid,
                     bool quiet)
{
    t->ok = (t->n == 0 || t->ok) && valid;
    t->sum += seconds;
    t->lo = t->n == 0 || seconds < t->lo ? seconds : t->lo;
    t->hi = seconds > t->hi ? seconds : t->hi;
    t->n++;
    if (a->rank == 0 && !quiet)
        printf("  trial %d  %.4f s  %.2f M entries/s%s\n", t->n, seconds,
               (double)entries / seconds / 1e6, valid ? "" : "  VALIDATION FAILED");
}

void bale_trials_summary(const app *a, const bale_trials *t, uint64_t entries, bool checked)
{
    double mean = t->sum / t->n;
    if (a->rank == 0)
        printf("  courier    mean %.4f s (%.4f-%.4f)  %.2f M entries/s  %s\n", mean, t->lo,
               t->hi, (double)entries / mean / 1e6,
               !checked ? "not validated" : t->ok ? "validated" : "VALIDATION FAILED");
}

void bale_matrix_parse(app *a, int argc, char **argv, bale_matrix_args *m, app_shared *sh)
{
    /* -a, --alg only where the app takes it, so that elsewhere it is unknown */
    static const struct option plain[] = {BALE_MATRIX_LONG, APP_LONG_ROUTE, APP_LONG_NODE_SIZE,
                                          APP_LONG_BUFFER_KB, APP_LONG_COMMON, {0, 0, 0, 0}};
    static const struct option with_alg[] = {BALE_MATRIX_LONG, {"alg", required_argument, 0, 'a'},
                                             APP_LONG_ROUTE, APP_LONG_NODE_SIZE,
                                             APP_LONG_BUFFER_KB, APP_LONG_COMMON, {0, 0, 0, 0}};
    const struct option *opts = m->takes_alg ? with_alg : plain;
    const char *shorts = m->takes_alg ? BALE_MATRIX_SHORT "a:" : BALE_MATRIX_SHORT;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, shorts, opts, NULL)) != -1)
        if (!bale_matrix_option(a, ch, optarg, m))
            app_other_option(a, ch, optarg, sh, argv);
    app_no_operands(a, argc, argv);
}

cr_comm *bale_matrix_start(const app *a, bale_matrix_args *m, const app_shared *sh,
                           double copies)
{
    bale_matrix_finish(a, m, copies);
    app_comm_flags flags = app_shared_comm_flags(sh);
    return app_comm_create(a, &flags, NULL);
}
