/* pagerank: GAP's PageRank (cr_graph_pagerank, include/courier/graph.h): damping 0.85,
 * at most 20 sweeps, stop below an L1 change of 1e-4; --validate runs the same sweeps
 * (Gauss-Seidel or Jacobi, as the kernel did) on rank 0 and compares the scores, and
 * makes GAP's check (one more Jacobi step changes the scores by less than the
 * tolerance). Gauss-Seidel on one node at more than one rank gets GAP's check only:
 * its scores vary from run to run within the tolerance. */
#include "kernel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const char usage[] =
    "Usage: mpirun -np P pagerank [options]\n"
    "\n"
    "PageRank as the GAP benchmark defines it; prints the iterations, the last change\n"
    "and the largest score, and the times.\n"
    "\n"
    "  --iterations N    at most N iterations (default 20)\n"
    "  --tolerance T     stop when an iteration's L1 change is below T (default 1e-4)\n"
    "  --damping D       the damping factor, 0 to 1 (default 0.85)\n"
    "  --jacobi          Jacobi sweeps on one node too: the same scores on every run,\n"
    "                    where GAP's Gauss-Seidel (the default) needs fewer sweeps\n"
    KERNEL_USAGE;

int main(int argc, char **argv)
{
    kernel_app k;
    kernel_init(&k, "pagerank", usage, &argc, &argv);
    cr_pagerank_opts po;
    cr_graph_pagerank_opts_init(&po);
    static const struct option lopts[] = {KERNEL_LONG_OPTIONS,
                                          {"iterations", required_argument, 0, 'i'},
                                          {"tolerance", required_argument, 0, 't'},
                                          {"damping", required_argument, 0, 'd'},
                                          {"jacobi", no_argument, 0, 'j'}, {0, 0, 0, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
        if (ch == 'i')
            po.max_iterations = (int)app_parse_u64(&k.a, "--iterations", optarg, 1, 100000);
        else if (ch == 't')
            po.tolerance = app_parse_double(&k.a, "--tolerance", optarg, 0, 1e300);
        else if (ch == 'd')
            po.damping = app_parse_double(&k.a, "--damping", optarg, 0, 1);
        else if (ch == 'j')
            po.jacobi = true;
        else
            kernel_option(&k, ch, optarg, argv);
    }
    kernel_parsed(&k, argc, argv);
    kernel_load(&k, false);
    uint64_t nl = cr_graph_local_count(k.g), n = cr_graph_vertices(k.g);
    double *score = app_alloc_large(&k.a, nl + 1, sizeof *score, "the scores");
    double *all = k.validate && k.a.rank == 0 ? app_calloc(&k.a, n + 1, 8, "the scores") : NULL;
    double *want = all ? app_calloc(&k.a, n + 1, 8, "the reference's scores") : NULL;
    double *seconds = app_calloc(&k.a, (size_t)k.trials, sizeof *seconds, "the times");
    if (k.a.rank == 0)
        printf("pagerank: %d ranks, %llu vertices, %llu edges\n", k.a.size,
               (unsigned long long)n, (unsigned long long)k.total_edges);
    if (k.sh.stats)
        cr_stats_reset(k.comm);
    int failures = 0;
    for (int t = 0; t < k.trials; t++) {
        cr_pagerank_stats st;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        cr_graph_pagerank(k.g, &po, score, &st);
        seconds[t] = app_max_time(MPI_Wtime() - t0);
        kernel_trial_done(&k);
        double top = 0, most;
        for (uint64_t i = 0; i < nl; i++)
            top = score[i] > top ? score[i] : top;
        MPI_Allreduce(&top, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (kernel_trial_lines(&k))
            printf("  %d sweeps%s, last change %.3g, largest score %.6g; %.4f s, %llu ghosts, "
                   "%llu records per sweep\n", st.iterations, st.in_place ? " (Gauss-Seidel)" : "", st.change, most, seconds[t],
                   (unsigned long long)st.ghosts, (unsigned long long)st.records);
        if (!k.validate)
            continue;
        kernel_gather(&k, score, all);
        int bad = 0;
        if (k.a.rank == 0) {
            if (t == 0) /* the same every trial */
                ref_pagerank(&k.ref, po.damping, po.max_iterations, po.tolerance, st.in_place,
                             want);
            double change = ref_pagerank_change(&k.ref, po.damping, all), worst = 0;
            /* Gauss-Seidel at more than one rank reads other ranks' contributions as
             * they are written, so its scores vary within the tolerance: only GAP's
             * check applies to them */
            bool exact = !st.in_place || k.a.size == 1;
            /* Relative: the sums are of floats, as GAP's, added in another order than
             * the sequential reference's; over a scale-20 R-MAT graph (16M edges, 8
             * iterations) the scores differ by up to 1.2e-6. A contribution lost or
             * counted twice moves a score by about 1 / degree, far above 1e-5. */
            for (uint64_t v = 0; v < n && exact; v++) {
                double off = fabs(all[v] - want[v]);
                if (!(off <= worst * want[v])) /* a NaN score too */
                    worst = isnan(off) ? INFINITY : off / want[v];
            }
            /* written so that a NaN anywhere fails */
            if (!(worst <= 1e-5) || isnan(st.change) || isnan(change) ||
                (st.change < po.tolerance && !(change < po.tolerance))) {
                fprintf(stderr, "pagerank: VALIDATION FAILED: largest relative difference from "
                        "the sequential scores %.3g, one more iteration changes them by %.3g\n",
                        worst, change);
                bad = 1;
            }
        }
        failures += kernel_verdict(&k, bad);
    }
    free(score), free(all), free(want);
    int rc = kernel_finish(&k, seconds, failures);
    free(seconds);
    return rc;
}
