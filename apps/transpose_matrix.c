/* transpose_matrix: bale's sparse matrix transpose on Courier (docs/bale.md). An
 * Erdős–Rényi matrix of bale's flat model, block-distributed by rows, is transposed
 * (cr_spmat_transpose: the entries of each column counted at its owner, then sent
 * there), and the transpose of the transpose must give the input back. */
#include "bale.h"

#include <stdio.h>

static const char usage[] =
    "Usage: mpirun -np P transpose_matrix [-n ROWS | -N TOTAL] [-z NZ | -e PROB] [-d] [-l]\n"
    "                                     [-w] [-F] [-s SEED] [--reps R] [--route R]\n"
    "                                     [--node-size K] [--buffer-kb K]\n"
    "\n"
    "Transposes a random sparse matrix (bale's transpose_matrix, with bale's flags) and\n"
    "prints the time of each trial and their mean.\n"
    "\n" BALE_MATRIX_USAGE
    "\n"
    "Validation (--validate, default yes), as bale's: the transpose of the transpose\n"
    "equals the input, and both have its number of entries.\n";

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "transpose_matrix", usage, &argc, &argv);
    bale_matrix_args m;
    bale_matrix_init(&m);
    app_shared sh;
    app_shared_init(&sh);
    bale_matrix_parse(&a, argc, argv, &m, &sh);
    /* the input, its transpose and that one's */
    cr_comm *comm = bale_matrix_start(&a, &m, &sh, 3);
    cr_spmat *in = bale_matrix_make(&a, comm, &m);
    bale_matrix_describe(&a, "transpose_matrix", in, &m, sh.quiet);
    bool check = app_validate_or(&sh, APP_VALIDATE_YES) != APP_VALIDATE_NO;
    bale_trials t = {0};
    for (int r = 0; r < m.reps; r++) {
        cr_barrier(comm);
        double t0 = MPI_Wtime();
        cr_spmat *tr = cr_spmat_transpose(in);
        double s = app_max_time(MPI_Wtime() - t0);
        bool valid = true;
        if (check) {
            cr_spmat *back = cr_spmat_transpose(tr);
            valid = cr_spmat_nnz(tr) == cr_spmat_nnz(in) && cr_spmat_equal(back, in);
            cr_spmat_destroy(back);
        }
        cr_spmat_destroy(tr);
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
