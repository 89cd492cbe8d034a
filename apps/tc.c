/* tc: the exact number of triangles (cr_graph_tc, include/courier/graph.h), GAP's
 * kernel; --validate counts them again on rank 0. */
#include "kernel.h"

#include <stdio.h>
#include <stdlib.h>

static const char usage[] =
    "Usage: mpirun -np P tc [options]\n"
    "\n"
    "Counts the triangles of the simple graph (repeated edges and self-loops left\n"
    "out), each once; prints the count and the times.\n"
    "\n"
    KERNEL_USAGE;

int main(int argc, char **argv)
{
    kernel_app k;
    kernel_init(&k, "tc", usage, &argc, &argv);
    static const struct option lopts[] = {KERNEL_LONG_OPTIONS, {0, 0, 0, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "", lopts, NULL)) != -1)
        kernel_option(&k, ch, optarg, argv);
    kernel_parsed(&k, argc, argv);
    kernel_load(&k, false);
    double *seconds = app_calloc(&k.a, (size_t)k.trials, sizeof *seconds, "the times");
    if (k.a.rank == 0)
        printf("tc: %d ranks, %llu vertices, %llu edges\n", k.a.size,
               (unsigned long long)cr_graph_vertices(k.g), (unsigned long long)k.total_edges);
    if (k.sh.stats)
        cr_stats_reset(k.comm);
    int failures = 0;
    uint64_t want = 0;
    for (int t = 0; t < k.trials; t++) {
        cr_tc_stats st;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        uint64_t triangles = cr_graph_tc(k.g, &st);
        seconds[t] = app_max_time(MPI_Wtime() - t0);
        kernel_trial_done(&k);
        if (kernel_trial_lines(&k))
            printf("  %llu triangles; %.4f s, %llu oriented edges, %llu ids fetched\n",
                   (unsigned long long)triangles, seconds[t],
                   (unsigned long long)st.oriented_edges, (unsigned long long)st.fetched_ids);
        if (k.validate && k.a.rank == 0 && t == 0)
            want = ref_triangles(&k.ref);
        int bad = k.validate && k.a.rank == 0 && triangles != want;
        if (bad)
            fprintf(stderr, "tc: VALIDATION FAILED: %llu triangles, the sequential count %llu\n",
                    (unsigned long long)triangles, (unsigned long long)want);
        failures += kernel_verdict(&k, bad);
    }
    int rc = kernel_finish(&k, seconds, failures);
    free(seconds);
    return rc;
}
