/* sssp: single-source shortest paths from random sources (cr_graph_sssp: delta-stepping,
 * include/courier/graph.h), GAP's kernel; every trial is compared with Dijkstra on
 * rank 0 when the graph is small enough or --validate asks (apps/common/kernel.c). */
#include "kernel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const char usage[] =
    "Usage: mpirun -np P sssp [options]\n"
    "\n"
    "Single-source shortest paths by delta-stepping from a random source per trial\n"
    "(one with an edge). Generated graphs get GAP's weights, integers 1 to 255; a file\n"
    "'u v w' gives its own, and a file without weights has weight 1 on every edge.\n"
    "Prints each trial's reached vertices and farthest distance, and the times.\n"
    "\n"
    "  --delta D         the bucket width (default 0: the largest weight over the\n"
    "                    average degree)\n"
    KERNEL_USAGE;

int main(int argc, char **argv)
{
    kernel_app k;
    kernel_init(&k, "sssp", usage, &argc, &argv);
    cr_sssp_opts so;
    cr_graph_sssp_opts_init(&so);
    static const struct option lopts[] = {KERNEL_LONG_OPTIONS,
                                          {"delta", required_argument, 0, 'd'}, {0, 0, 0, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
        if (ch == 'd')
            so.delta = app_parse_double(&k.a, "--delta", optarg, 0, 1e300);
        else
            kernel_option(&k, ch, optarg, argv);
    }
    kernel_parsed(&k, argc, argv);
    kernel_load(&k, true);
    uint64_t *sources = app_calloc(&k.a, (size_t)k.trials, sizeof *sources, "the sources");
    if (kernel_sources(&k, 0x73737370ULL, k.trials, sources) < k.trials)
        app_error(&k.a, "too few vertices with an edge for %d trials", k.trials);
    uint64_t nl = cr_graph_local_count(k.g), n = cr_graph_vertices(k.g);
    double *dist = app_alloc_large(&k.a, nl + 1, sizeof *dist, "the distances");
    double *all = k.validate && k.a.rank == 0 ? app_calloc(&k.a, n + 1, 8, "the distances") : NULL;
    double *want = all ? app_calloc(&k.a, n + 1, 8, "Dijkstra's distances") : NULL;
    double *seconds = app_calloc(&k.a, (size_t)k.trials, sizeof *seconds, "the times");
    if (k.a.rank == 0)
        printf("sssp: %d ranks, %llu vertices, %llu edges%s\n", k.a.size, (unsigned long long)n,
               (unsigned long long)k.total_edges,
               cr_graph_weighted(k.g) ? "" : " (unweighted: weight 1 each)");
    if (k.sh.stats)
        cr_stats_reset(k.comm);
    int failures = 0;
    for (int t = 0; t < k.trials; t++) {
        cr_sssp_stats st;
        char err[256];
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        int rc = cr_graph_sssp(k.g, &so, sources[t], dist, &st, err, sizeof err);
        seconds[t] = app_max_time(MPI_Wtime() - t0);
        kernel_trial_done(&k);
        if (rc)
            app_error(&k.a, "%s", err); /* the same verdict on every rank */
        uint64_t reached = 0;
        double far = 0, both[2];
        for (uint64_t i = 0; i < nl; i++)
            if (!isinf(dist[i]))
                reached++, far = dist[i] > far ? dist[i] : far;
        uint64_t total;
        MPI_Allreduce(&reached, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(&far, &both[0], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (kernel_trial_lines(&k))
            printf("  source %llu: %llu reached, farthest at %g; %.4f s, delta %g, %llu "
                   "buckets, %llu relaxations (%llu sent), %llu taken\n",
                   (unsigned long long)sources[t], (unsigned long long)total, both[0],
                   seconds[t], st.delta, (unsigned long long)st.buckets,
                   (unsigned long long)st.relaxations, (unsigned long long)st.messages,
                   (unsigned long long)st.taken);
        if (!k.validate)
            continue;
        kernel_gather(&k, dist, all);
        int bad = 0;
        if (k.a.rank == 0) {
            ref_sssp(&k.ref, sources[t], want);
            uint64_t v = kernel_first_difference(all, want, n, 1e-9, 0);
            if ((bad = v != UINT64_MAX))
                fprintf(stderr, "sssp: VALIDATION FAILED: source %llu, vertex %llu at %.17g, "
                        "Dijkstra %.17g\n", (unsigned long long)sources[t],
                        (unsigned long long)v, all[v], want[v]);
        }
        failures += kernel_verdict(&k, bad);
    }
    free(sources), free(dist), free(all), free(want);
    int rc = kernel_finish(&k, seconds, failures);
    free(seconds);
    return rc;
}
