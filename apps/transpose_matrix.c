/* transpose_matrix: bale's sparse matrix transpose on Courier (docs/bale.md). An
 * Erdős–Rényi matrix of bale's flat model, block-distributed by rows, is transposed
 * (cr_spmat_transpose: the entries of each column counted at its owner, then sent
 * there), and the transpose of the transpose must give the input back. */
#include "cli.h"

#include <courier.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: mpirun -np P transpose_matrix [-n ROWS | -N TOTAL] [-z NZ | -e PROB] [-d] [-l]\n"
    "                                     [-w] [-F] [-s SEED] [--reps R] [--route R]\n"
    "                                     [--node-size K] [--buffer-kb K]\n"
    "\n"
    "Transposes a random sparse matrix (bale's transpose_matrix, with bale's flags) and\n"
    "prints the time of each trial and their mean.\n"
    "\n"
    "  -n, --per-rank ROWS   rows per rank (default 500000, bale's; K, M, G suffixes)\n"
    "  -N, --total TOTAL     rows in all instead\n"
    "  -z, --nz-per-row NZ   average entries per row (default 10)\n"
    "  -e, --edge-prob PROB  the probability of each entry instead of -z\n"
    "  -d, --directed        a directed graph's matrix (default: its lower triangle)\n"
    "  -l, --loops           a diagonal entry in every row\n"
    "  -w, --weighted        values uniform in (0, 1]\n"
    "  -F, --flat            the Erdős–Rényi (flat) model: the only one, the default\n"
    "  -s, --seed S          the matrix's seed (default 1)\n"
    "  --reps R              trials (default 3)\n"
    "  --route R, --node-size K, --buffer-kb K   the mailbox's route, virtual nodes\n"
    "                        and buffer size\n"
    "\n"
    "Validation (--validate, default yes), as bale's: the transpose of the transpose\n"
    "equals the input, and both have its number of entries.\n";

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "transpose_matrix", usage, &argc, &argv);
    cr_spmat_er g;
    cr_spmat_er_init(&g);
    uint64_t per_rank = 500000, total = 0;
    int reps = 3;
    app_shared sh;
    app_shared_init(&sh);
    static const struct option opts[] = {
        {"per-rank", required_argument, 0, 'n'}, {"total", required_argument, 0, 'N'},
        {"nz-per-row", required_argument, 0, 'z'}, {"edge-prob", required_argument, 0, 'e'},
        {"directed", no_argument, 0, 'd'},       {"loops", no_argument, 0, 'l'},
        {"weighted", no_argument, 0, 'w'},       {"flat", no_argument, 0, 'F'},
        {"seed", required_argument, 0, 's'},     {"reps", required_argument, 0, 'r'},
        APP_LONG_ROUTE, APP_LONG_NODE_SIZE, APP_LONG_BUFFER_KB, APP_LONG_COMMON, {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "n:N:z:e:dlwFs:", opts, NULL)) != -1) {
        switch (ch) {
        case 'n': per_rank = app_parse_u64(&a, "-n", optarg, 1, UINT64_C(1) << 34); break;
        case 'N': total = app_parse_u64(&a, "-N", optarg, 1, UINT64_C(1) << 40); break;
        case 'z': g.nz_per_row = app_parse_double(&a, "-z", optarg, 0, 1e9); break;
        case 'e': g.edge_prob = app_parse_double(&a, "-e", optarg, 0, 1); break;
        case 'd': g.directed = true; break;
        case 'l': g.loops = true; break;
        case 'w': g.weighted = true; break;
        case 'F': break;
        case 's': g.seed = app_parse_u64(&a, "--seed", optarg, 0, UINT64_MAX); break;
        case 'r': reps = (int)app_parse_u64(&a, "--reps", optarg, 1, 1000); break;
        default: app_other_option(&a, ch, optarg, &sh, argv);
        }
    }
    app_no_operands(&a, argc, argv);
    g.rows = total ? total : per_rank * (uint64_t)a.size;
    /* the input, its transpose and the transpose's transpose: 16 bytes an entry each
     * (column and offset shares), with values 8 more */
    double entries = (double)g.rows * (g.edge_prob > 0 ? g.edge_prob * (double)g.rows
                                                       : g.nz_per_row + 1);
    double need = entries * (g.weighted ? 24 : 16) * 3;
    double mem = app_physical_memory();
    if (mem > 0 && need > mem)
        app_usage_error(&a, "%llu rows need about %.1f GiB, more than this machine's %.1f GiB",
                        (unsigned long long)g.rows, need / (1 << 30), mem / (1 << 30));

    app_comm_flags flags = app_shared_comm_flags(&sh);
    cr_comm *comm = app_comm_create(&a, &flags, NULL);
    char err[300];
    cr_spmat *m = cr_spmat_erdos_renyi(comm, &g, err, sizeof err);
    if (!m)
        app_error(&a, "%s", err);
    bool check = app_validate_or(&sh, APP_VALIDATE_YES) != APP_VALIDATE_NO, ok = true;
    if (a.rank == 0 && !sh.quiet)
        printf("transpose_matrix: %d ranks, %llu rows, %llu entries (%.2f per row), %s%s%s\n",
               a.size, (unsigned long long)g.rows, (unsigned long long)cr_spmat_nnz(m),
               (double)cr_spmat_nnz(m) / (double)g.rows,
               g.directed ? "directed" : "lower triangular", g.loops ? ", loops" : "",
               g.weighted ? ", weighted" : "");
    double sum = 0, lo = 0, hi = 0;
    for (int t = 0; t < reps; t++) {
        cr_barrier(comm);
        double t0 = MPI_Wtime();
        cr_spmat *tr = cr_spmat_transpose(m);
        double s = app_max_time(MPI_Wtime() - t0);
        bool valid = true;
        if (check) {
            cr_spmat *back = cr_spmat_transpose(tr);
            valid = cr_spmat_nnz(tr) == cr_spmat_nnz(m) && cr_spmat_equal(back, m);
            cr_spmat_destroy(back);
        }
        ok = ok && valid;
        cr_spmat_destroy(tr);
        sum += s;
        lo = t == 0 || s < lo ? s : lo;
        hi = s > hi ? s : hi;
        if (a.rank == 0 && !sh.quiet)
            printf("  trial %d  %.4f s  %.2f M entries/s%s\n", t + 1, s,
                   (double)cr_spmat_nnz(m) / s / 1e6, valid ? "" : "  VALIDATION FAILED");
    }
    double mean = sum / reps;
    if (a.rank == 0)
        printf("  courier    mean %.4f s (%.4f-%.4f)  %.2f M entries/s  %s\n", mean, lo, hi,
               (double)cr_spmat_nnz(m) / mean / 1e6,
               !check ? "not validated" : ok ? "validated" : "VALIDATION FAILED");
    if (sh.stats)
        cr_stats_print(comm, stdout);
    cr_spmat_destroy(m);
    app_comm_destroy(comm);
    MPI_Finalize();
    return ok ? 0 : 1;
}
