/* toposort: bale's topological sort on Courier (docs/bale.md). A unit upper
 * triangular matrix (the transpose of an Erdős–Rényi lower triangle with its
 * diagonal) has its rows and columns permuted at random; cr_spmat_toposort finds
 * permutations that make it unit upper triangular again, by levels of pivots (rows
 * with one entry left). */
#include "bale.h"

#include <stdio.h>
#include <stdlib.h>

static const char usage[] =
    "Usage: mpirun -np P toposort [-n ROWS | -N TOTAL] [-z NZ | -e PROB] [-F] [-s SEED]\n"
    "                             [--reps R] [--route R] [--node-size K] [--buffer-kb K]\n"
    "\n"
    "Sorts a permuted unit upper triangular sparse matrix back to triangular form\n"
    "(bale's toposort, with bale's flags; the matrix is always a lower triangle with\n"
    "its diagonal, transposed, as bale forces it) and prints the time of each trial and\n"
    "their mean (the input and its transpose are made before the clock, as bale's are).\n"
    "\n" BALE_MATRIX_USAGE
    "  (-d, -l and -w are accepted and ignored: the matrix is undirected with loops)\n"
    "\n"
    "Validation (--validate, default yes), as bale's: both results are permutations,\n"
    "and the matrix permuted by them is unit upper triangular.\n";

/* bale's input: the triangle made upper, then its rows and columns permuted. */
static cr_spmat *permuted_triangle(const app *a, cr_comm *comm, const bale_matrix_args *m)
{
    cr_spmat *lower = bale_matrix_make(a, comm, m);
    cr_spmat *upper = cr_spmat_transpose(lower);
    cr_spmat_destroy(lower);
    uint64_t n = cr_spmat_rows(upper), seed = m->g.seed + 23456;
    uint64_t *rp = cr_spmat_random_permutation(comm, n, seed);
    uint64_t *cp = cr_spmat_random_permutation(comm, n, seed + 1);
    char err[300];
    cr_spmat *in = cr_spmat_permute(upper, rp, cp, err, sizeof err);
    if (!in)
        app_error(a, "%s", err);
    free(rp), free(cp);
    cr_spmat_destroy(upper);
    return in;
}

static bool check(const app *a, cr_comm *comm, const cr_spmat *in, uint64_t *rp, uint64_t *cp)
{
    char err[300];
    uint64_t *ci = cr_spmat_inverse(comm, cr_spmat_cols(in), cp, err, sizeof err);
    if (!ci) {
        if (a->rank == 0)
            fprintf(stderr, "toposort: %s\n", err);
        return false;
    }
    free(ci);
    cr_spmat *t = cr_spmat_permute(in, rp, cp, err, sizeof err);
    if (!t && a->rank == 0)
        fprintf(stderr, "toposort: %s\n", err);
    bool ok = t && cr_spmat_is_unit_upper(t);
    cr_spmat_destroy(t);
    return ok;
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "toposort", usage, &argc, &argv);
    bale_matrix_args m;
    bale_matrix_init(&m);
    app_shared sh;
    app_shared_init(&sh);
    bale_matrix_parse(&a, argc, argv, &m, &sh);
    m.g.directed = false, m.g.loops = true, m.g.weighted = false; /* as bale forces them */
    /* the matrix, its transpose, the check's, arenas */
    cr_comm *comm = bale_matrix_start(&a, &m, &sh, 4);
    cr_spmat *in = permuted_triangle(&a, comm, &m);
    cr_spmat *tr = cr_spmat_transpose(in);
    bale_matrix_describe(&a, "toposort", in, &m, sh.quiet);
    bool checked = app_validate_or(&sh, APP_VALIDATE_YES) != APP_VALIDATE_NO;
    bale_trials t = {0};
    char err[300];
    for (int r = 0; r < m.reps; r++) {
        uint64_t *rp = NULL, *cp = NULL;
        cr_barrier(comm);
        double t0 = MPI_Wtime();
        int rc = cr_spmat_toposort(in, tr, &rp, &cp, err, sizeof err);
        double s = app_max_time(MPI_Wtime() - t0);
        if (rc)
            app_error(&a, "%s", err);
        bool valid = !checked || check(&a, comm, in, rp, cp);
        free(rp), free(cp);
        bale_trial_done(&a, &t, s, cr_spmat_nnz(in), valid, sh.quiet);
    }
    bale_trials_summary(&a, &t, cr_spmat_nnz(in), checked);
    if (sh.stats)
        cr_stats_print(comm, stdout);
    cr_spmat_destroy(tr);
    cr_spmat_destroy(in);
    app_comm_destroy(comm);
    MPI_Finalize();
    return t.ok ? 0 : 1;
}
