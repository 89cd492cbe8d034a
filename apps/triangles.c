/* triangles: bale's triangle counting on Courier (docs/bale.md). The lower triangle
 * of an Erdős–Rényi graph (bale's flat model, its diagonal left out) is searched for
 * triangles by cr_spmat_triangles, in either of bale's push formulations; the count
 * must equal a sequential count of the same graph. */
#include "bale.h"

#include <stdio.h>
#include <stdlib.h>

static const char usage[] =
    "Usage: mpirun -np P triangles [-n ROWS | -N TOTAL] [-z NZ | -e PROB] [-a ALG] [-F]\n"
    "                              [-s SEED] [--reps R] [--route R] [--node-size K]\n"
    "                              [--buffer-kb K]\n"
    "\n"
    "Counts the triangles of a random graph (bale's triangles, with bale's flags and\n"
    "its defaults: 100000 rows per rank) and prints the time of each trial and their\n"
    "mean (the transpose that algorithm 1 needs is made before the clock, as bale's\n"
    "is).\n"
    "\n"
    "  -a, --alg ALG         0: L & L*U, each row's pairs of lower neighbours (default);\n"
    "                        1: L & U*L, each vertex's pairs of upper neighbours\n" BALE_MATRIX_USAGE
    "  (-d, -l and -w are accepted and ignored: the graph is undirected, without loops)\n"
    "\n"
    "Validation (--validate, default yes): rank 0 makes the whole graph on its own and\n"
    "counts its triangles sequentially; the counts must be equal.\n";

/* The sequential count of the whole lower triangle: for every row, every pair of
 * its entries, a search of the larger one's row for the smaller. */
static uint64_t count_alone(const cr_spmat_local *w)
{
    uint64_t found = 0;
    for (uint64_t r = 0; r < w->rows; r++)
        for (uint64_t x = w->offsets[r]; x < w->offsets[r + 1]; x++) {
            uint64_t a = w->cols[x];
            for (uint64_t y = w->offsets[r]; y < x; y++) {
                uint64_t b = w->cols[y];
                for (uint64_t k = w->offsets[a]; k < w->offsets[a + 1] && w->cols[k] <= b; k++)
                    found += w->cols[k] == b;
            }
        }
    return found;
}

static uint64_t reference(const app *a, const bale_matrix_args *m)
{
    uint64_t count = 0;
    if (a->rank == 0) {
        cr_config cfg;
        cr_config_init(&cfg);
        cr_comm *self = cr_comm_create(MPI_COMM_SELF, &cfg);
        char err[300];
        cr_spmat *whole = cr_spmat_erdos_renyi(self, &m->g, err, sizeof err);
        cr_spmat_local w = cr_spmat_local_rows(whole);
        count = count_alone(&w);
        cr_spmat_destroy(whole);
        cr_comm_destroy(self);
    }
    MPI_Bcast(&count, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    return count;
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "triangles", usage, &argc, &argv);
    bale_matrix_args m;
    bale_matrix_init(&m);
    m.per_rank = 100000; /* bale's default for triangles */
    m.takes_alg = true;
    app_shared sh;
    app_shared_init(&sh);
    bale_matrix_parse(&a, argc, argv, &m, &sh);
    m.g.directed = false, m.g.loops = false, m.g.weighted = false; /* a simple graph */
    cr_comm *comm = bale_matrix_start(&a, &m, &sh, 2.5);
    cr_spmat *l = bale_matrix_make(&a, comm, &m);
    cr_spmat *u = m.alg == 1 ? cr_spmat_transpose(l) : NULL;
    bale_matrix_describe(&a, "triangles", l, &m, sh.quiet);
    bool checked = app_validate_or(&sh, APP_VALIDATE_YES) != APP_VALIDATE_NO;
    uint64_t want = checked ? reference(&a, &m) : 0;
    bale_trials t = {0};
    char err[300];
    uint64_t count = 0;
    for (int r = 0; r < m.reps; r++) {
        cr_barrier(comm);
        double t0 = MPI_Wtime();
        if (cr_spmat_triangles(l, u, &count, err, sizeof err))
            app_error(&a, "%s", err);
        double s = app_max_time(MPI_Wtime() - t0);
        bool valid = !checked || count == want;
        if (!valid && a.rank == 0)
            fprintf(stderr, "triangles: counted %llu, the sequential count is %llu\n",
                    (unsigned long long)count, (unsigned long long)want);
        bale_trial_done(&a, &t, s, cr_spmat_nnz(l), valid, sh.quiet);
    }
    if (a.rank == 0 && !sh.quiet)
        printf("  %llu triangles (algorithm %d)\n", (unsigned long long)count, m.alg);
    bale_trials_summary(&a, &t, cr_spmat_nnz(l), checked);
    if (sh.stats)
        cr_stats_print(comm, stdout);
    cr_spmat_destroy(u);
    cr_spmat_destroy(l);
    app_comm_destroy(comm);
    MPI_Finalize();
    return t.ok ? 0 : 1;
}
