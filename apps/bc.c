/* bc: betweenness centrality from random sources (cr_graph_bc, Brandes,
 * include/courier/graph.h), GAP's kernel; --validate runs Brandes on rank 0. */
#include "kernel.h"

#include <stdio.h>
#include <stdlib.h>

static const char usage[] =
    "Usage: mpirun -np P bc [options]\n"
    "\n"
    "Betweenness centrality summed over random sources with an edge (as GAP, one\n"
    "source per trial by default); prints the largest score and the times. Scores are\n"
    "not normalised; GAP divides them by the largest.\n"
    "\n"
    "  --sources K       sources per trial (default 1)\n"
    KERNEL_USAGE;

int main(int argc, char **argv)
{
    kernel_app k;
    kernel_init(&k, "bc", usage, &argc, &argv);
    int per = 1;
    static const struct option lopts[] = {KERNEL_LONG_OPTIONS,
                                          {"sources", required_argument, 0, 's'}, {0, 0, 0, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
        if (ch == 's')
            per = (int)app_parse_u64(&k.a, "--sources", optarg, 1, 4096);
        else
            kernel_option(&k, ch, optarg, argv);
    }
    kernel_parsed(&k, argc, argv);
    kernel_load(&k, false);
    int want_sources = per * k.trials;
    uint64_t *sources = app_calloc(&k.a, (size_t)want_sources, sizeof *sources, "the sources");
    if (kernel_sources(&k, 0x6263ULL, want_sources, sources) < want_sources)
        app_error(&k.a, "too few vertices with an edge for %d sources", want_sources);
    uint64_t nl = cr_graph_local_count(k.g), n = cr_graph_vertices(k.g);
    double *score = app_alloc_large(&k.a, nl + 1, sizeof *score, "the scores");
    double *all = k.validate && k.a.rank == 0 ? app_calloc(&k.a, n + 1, 8, "the scores") : NULL;
    double *want = all ? app_calloc(&k.a, n + 1, 8, "Brandes' scores") : NULL;
    double *seconds = app_calloc(&k.a, (size_t)k.trials, sizeof *seconds, "the times");
    if (k.a.rank == 0)
        printf("bc: %d ranks, %llu vertices, %llu edges, %d source%s per trial\n", k.a.size,
               (unsigned long long)n, (unsigned long long)k.total_edges, per, per > 1 ? "s" : "");
    if (k.sh.stats)
        cr_stats_reset(k.comm);
    int failures = 0;
    for (int t = 0; t < k.trials; t++) {
        const uint64_t *mine = sources + (size_t)t * (size_t)per;
        cr_bc_stats st;
        char err[256];
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        int rc = cr_graph_bc(k.g, mine, (size_t)per, score, &st, err, sizeof err);
        seconds[t] = app_max_time(MPI_Wtime() - t0);
        kernel_trial_done(&k);
        if (rc)
            app_error(&k.a, "%s", err);
        double top = 0, most;
        for (uint64_t i = 0; i < nl; i++)
            top = score[i] > top ? score[i] : top;
        MPI_Allreduce(&top, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (kernel_trial_lines(&k))
            printf("  source %llu%s: largest score %.6g; %.4f s, %llu levels, %llu records\n",
                   (unsigned long long)mine[0], per > 1 ? " and more" : "", most, seconds[t],
                   (unsigned long long)st.levels, (unsigned long long)st.records);
        if (!k.validate)
            continue;
        kernel_gather(&k, score, all);
        int bad = 0;
        if (k.a.rank == 0) {
            ref_betweenness(&k.ref, mine, (size_t)per, want);
            uint64_t v = kernel_first_difference(all, want, n, 1e-6, 1);
            if ((bad = v != UINT64_MAX))
                fprintf(stderr, "bc: VALIDATION FAILED: vertex %llu has %.17g, Brandes %.17g\n",
                        (unsigned long long)v, all[v], want[v]);
        }
        failures += kernel_verdict(&k, bad);
    }
    free(sources), free(score), free(all), free(want);
    int rc = kernel_finish(&k, seconds, failures);
    free(seconds);
    return rc;
}
