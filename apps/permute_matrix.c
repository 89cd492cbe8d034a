/* permute_matrix: bale's sparse matrix permutation on Courier (docs/bale.md). The rows
 * and the columns of an Erdős–Rényi matrix of bale's flat model are permuted by two
 * random permutations (cr_spmat_permute: every row to the owner of its new place,
 * then each entry's new column gathered from its column's owner); applying the
 * inverse permutations must give the input back. */
#include "bale.h"

#include <stdio.h>
#include <stdlib.h>

static const char usage[] =
    "Usage: mpirun -np P permute_matrix [-n ROWS | -N TOTAL] [-z NZ | -e PROB] [-d] [-l]\n"
    "                                   [-w] [-F] [-s SEED] [--reps R] [--route R]\n"
    "                                   [--node-size K] [--buffer-kb K]\n"
    "\n"
    "Permutes the rows and the columns of a random sparse matrix (bale's permute_matrix,\n"
    "with bale's flags) by two random permutations, and prints the time of each trial\n"
    "and their mean (the permutations are made before the clock, as bale's are).\n"
    "\n" BALE_MATRIX_USAGE
    "\n"
    "Validation (--validate, default yes), as bale's: the permuted matrix permuted by\n"
    "the inverse permutations equals the input, and it has the input's number of\n"
    "entries.\n";

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "permute_matrix", usage, &argc, &argv);
    bale_matrix_args m;
    bale_matrix_init(&m);
    app_shared sh;
    app_shared_init(&sh);
    bale_matrix_parse(&a, argc, argv, &m, &sh);
    /* the input, the permuted, the way back, arenas */
    cr_comm *comm = bale_matrix_start(&a, &m, &sh, 3.5);
    cr_spmat *in = bale_matrix_make(&a, comm, &m);
    bale_matrix_describe(&a, "permute_matrix", in, &m, sh.quiet);
    uint64_t n = cr_spmat_rows(in);
    bool check = app_validate_or(&sh, APP_VALIDATE_YES) != APP_VALIDATE_NO;
    bale_trials t = {0};
    char err[300];
    for (int r = 0; r < m.reps; r++) {
        uint64_t *rperm = cr_spmat_random_permutation(comm, n, m.g.seed + 101 * (uint64_t)r + 1);
        uint64_t *cperm = cr_spmat_random_permutation(comm, n, m.g.seed + 101 * (uint64_t)r + 2);
        cr_barrier(comm);
        double t0 = MPI_Wtime();
        cr_spmat *out = cr_spmat_permute(in, rperm, cperm, err, sizeof err);
        double s = app_max_time(MPI_Wtime() - t0);
        if (!out)
            app_error(&a, "%s", err);
        bool valid = true;
        if (check) {
            uint64_t *rinv = cr_spmat_inverse(comm, n, rperm, err, sizeof err);
            uint64_t *cinv = rinv ? cr_spmat_inverse(comm, n, cperm, err, sizeof err) : NULL;
            cr_spmat *back = cinv ? cr_spmat_permute(out, rinv, cinv, err, sizeof err) : NULL;
            valid = back && cr_spmat_nnz(out) == cr_spmat_nnz(in) && cr_spmat_equal(back, in);
            cr_spmat_destroy(back);
            free(rinv), free(cinv);
        }
        cr_spmat_destroy(out);
        free(rperm), free(cperm);
        bale_trial_done(&a, &t, s, cr_spmat_nnz(in), valid, sh.quiet);
    }
    bale_trials_summary(&a, &t, cr_spmat_nnz(in), check);
    if (sh.stats)
        cr_stats_print(comm, stdout);
    cr_spmat_destroy(in);
    app_comm_destroy(comm);
    MPI_Finalize();
    return t.ok ? 0 : 1;
}
