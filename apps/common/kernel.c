/* The GAP-kernel apps' shared parts (kernel.h). */
#include "kernel.h"

#include <courier/rng.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

void kernel_init(kernel_app *k, const char *name, const char *usage, int *argc, char ***argv)
{
    *k = (kernel_app){.trials = 3};
    app_init(&k->a, name, usage, argc, argv);
    app_shared_init(&k->sh);
    opterr = 0;
}

void kernel_option(kernel_app *k, int ch, const char *value, char **argv)
{
    switch (ch) {
    case 'T': k->trials = (int)app_parse_u64(&k->a, "--trials", value, 1, 1000); break;
    case 'W': k->write_graph = value; break;
    default: app_other_option(&k->a, ch, value, &k->sh, argv);
    }
}

void kernel_parsed(kernel_app *k, int argc, char **argv)
{
    app_no_operands(&k->a, argc, argv);
    app_shared_graph_check(&k->a, &k->sh);
    k->validate_when = app_validate_or(&k->sh, APP_VALIDATE_AUTO);
    k->validate = k->validate_when == APP_VALIDATE_YES;
    k->csv = app_open_csv(&k->a, k->sh.csv, "kernel,ranks,vertices,edges,trials,median_s,"
                                            "min_s,max_s,peak_mib,validated,ok");
}

/* --validate: the whole graph on rank 0, gathered from the ranks' lists. */
static void gather_graph(kernel_app *k)
{
    const app *a = &k->a;
    cr_edge_list mine;
    cr_graph_edges(k->g, &mine);
    int c = (int)mine.count, *cnt = NULL, *dsp = NULL;
    if (a->rank == 0) {
        cnt = app_calloc(a, (size_t)a->size, sizeof *cnt, "the counts");
        dsp = app_calloc(a, (size_t)a->size, sizeof *dsp, "the counts");
    }
    MPI_Gather(&c, 1, MPI_INT, cnt, 1, MPI_INT, 0, MPI_COMM_WORLD);
    size_t m = 0;
    for (int r = 0; a->rank == 0 && r < a->size; r++)
        dsp[r] = (int)m, m += (size_t)cnt[r];
    bool w = cr_graph_weighted(k->g);
    cr_edge *edges = a->rank == 0 ? app_calloc(a, m + 1, sizeof *edges, "the gathered edges") : NULL;
    float *weights = a->rank == 0 && w ? app_calloc(a, m + 1, 4, "the gathered weights") : NULL;
    MPI_Datatype edge;
    MPI_Type_contiguous(2, MPI_UINT64_T, &edge);
    MPI_Type_commit(&edge);
    MPI_Gatherv(mine.edges, c, edge, edges, cnt, dsp, edge, 0, MPI_COMM_WORLD);
    MPI_Type_free(&edge);
    if (w)
        MPI_Gatherv(mine.weights, c, MPI_FLOAT, weights, cnt, dsp, MPI_FLOAT, 0, MPI_COMM_WORLD);
    cr_graph_edges_free(&mine);
    int ok = a->rank != 0 ||
             ref_graph_build(&k->ref, cr_graph_vertices(k->g), edges, weights, m) == 0, all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    free(edges), free(weights), free(cnt), free(dsp);
    if (!all_ok)
        app_error(a, "--validate: out of memory for the whole graph on rank 0");
}

void kernel_trial_done(kernel_app *k)
{
    if (k->peak == 0) { /* the first trial: before any check gathers on rank 0 */
        k->peak = app_peak_mib();
        k->peak_job = app_peak_job_mib();
    }
    if (k->validate && !k->gathered) {
        gather_graph(k);
        k->gathered = true;
    }
}

/* cr_graph_read's check: the apps' rules for a file's vertex ids. */
static const char *check_file(void *user, uint64_t nvertices, uint64_t edges)
{
    static char refusal[512];
    const kernel_app *k = user;
    return app_vertices_refusal(&k->a, k->sh.graph, nvertices, edges, 0, 64, 0, refusal,
                                sizeof refusal);
}

/* A file not written again is read three times instead of held: the job's peak is
 * the graph, not the edge list and the graph (cr_graph_read). */
static void read_streamed(kernel_app *k)
{
    app *a = &k->a;
    app_comm_flags flags = app_shared_comm_flags(&k->sh);
    k->comm = app_comm_create(a, &flags, NULL);
    app_progress(a, "reading the graph and building it (simple: no self-loops or repeated "
                 "edges, as GAP builds it)");
    cr_graph_read_opts o = {.format = CR_FILE_AUTO, .check = check_file, .user = k};
    char err[512];
    k->g = cr_graph_read(k->comm, k->sh.graph, &o, &k->total_edges, err, sizeof err);
    if (!k->g)
        app_error(a, "%s", err);
    if (k->validate_when == APP_VALIDATE_AUTO)
        k->validate = k->total_edges <= (UINT64_C(1) << 22);
    cr_graph_simplify(k->g); /* GAP's kernels run on the simple graph */
}

void kernel_load(kernel_app *k, bool weighted)
{
    app *a = &k->a;
    if (k->sh.graph && !k->write_graph) {
        read_streamed(k);
        return;
    }
    FILE *write_to = app_open_graph_file(a, k->write_graph);
    char err[512];
    if (weighted && !k->sh.graph)
        k->sh.gen.weights = true, k->sh.gen.weight_max = 255; /* GAP's weights */
    app_progress(a, k->sh.graph ? "reading the graph" : "generating the graph");
    int rc = k->sh.graph ? cr_graph_read_edges(k->sh.graph, CR_FILE_AUTO, NULL, a->rank, a->size,
                                               &k->edges, err, sizeof err)
                         : cr_graph_generate(&k->sh.gen, a->rank, a->size, &k->edges, err,
                                             sizeof err);
    app_agree(a, rc ? err : NULL);
    uint64_t mine = k->edges.count;
    MPI_Allreduce(&mine, &k->total_edges, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (k->validate_when == APP_VALIDATE_AUTO)
        k->validate = k->total_edges <= (UINT64_C(1) << 22);
    if (k->sh.graph) /* ids used as they are: refuse what cannot fit before allocating */
        k->edges.nvertices = app_file_vertices(a, k->sh.graph, k->edges.nvertices, k->total_edges,
                                               0, 64, 0);
    app_write_graph(a, write_to, k->write_graph, &k->edges);
    app_comm_flags flags = app_shared_comm_flags(&k->sh);
    k->comm = app_comm_create(a, &flags, NULL);
    app_progress(a, "building the distributed graph (simple: no self-loops or repeated "
                 "edges, as GAP builds it)");
    k->g = cr_graph_build_consume(k->comm, &k->edges); /* the graph holds them now */
    cr_graph_simplify(k->g); /* GAP's kernels run on the simple graph */
}

int kernel_sources(kernel_app *k, uint64_t salt, int want, uint64_t *sources)
{
    cr_graph *g = k->g;
    uint64_t n = cr_graph_vertices(g), s = cr_rng_hash64(k->sh.gen.seed ^ salt);
    int have = 0;
    for (uint64_t tries = 0; have < want && tries < 64 * (uint64_t)want + 1024; tries++) {
        uint64_t v = cr_rng_bounded(cr_rng_next(&s), n), degree = 0, any;
        if (cr_graph_owner(g, v) == k->a.rank)
            degree = cr_graph_degree(g, v - cr_graph_first(g));
        MPI_Allreduce(&degree, &any, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
        if (any > 0)
            sources[have++] = v;
    }
    return have;
}

void kernel_gather(kernel_app *k, const double *mine, double *all)
{
    const app *a = &k->a;
    int c = (int)cr_graph_local_count(k->g), *cnt = NULL, *dsp = NULL;
    if (a->rank == 0) {
        cnt = app_calloc(a, (size_t)a->size, sizeof *cnt, "the counts");
        dsp = app_calloc(a, (size_t)a->size, sizeof *dsp, "the counts");
    }
    MPI_Gather(&c, 1, MPI_INT, cnt, 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int r = 0, at = 0; a->rank == 0 && r < a->size; r++)
        dsp[r] = at, at += cnt[r];
    MPI_Gatherv(mine, c, MPI_DOUBLE, all, cnt, dsp, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    free(cnt), free(dsp);
}

int kernel_verdict(const kernel_app *k, int bad)
{
    (void)k;
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return bad;
}

uint64_t kernel_first_difference(const double *got, const double *want, uint64_t n, double rel,
                                 double floor)
{
    for (uint64_t v = 0; v < n; v++) {
        double scale = fabs(want[v]) > floor ? fabs(want[v]) : floor;
        if (!(got[v] == want[v] || fabs(got[v] - want[v]) <= rel * scale))
            return v;
    }
    return UINT64_MAX;
}

int kernel_finish(kernel_app *k, const double *seconds, int failures)
{
    double peak = k->peak;
    if (k->sh.stats)
        cr_stats_print(k->comm, stdout);
    double *sorted = app_calloc(&k->a, (size_t)k->trials, sizeof *sorted, "the times");
    memcpy(sorted, seconds, (size_t)k->trials * sizeof *sorted);
    double lo = sorted[0], hi = sorted[0];
    for (int t = 1; t < k->trials; t++)
        lo = sorted[t] < lo ? sorted[t] : lo, hi = sorted[t] > hi ? sorted[t] : hi;
    double median = app_median(sorted, k->trials), sum = 0;
    for (int t = 0; t < k->trials; t++)
        sum += seconds[t];
    if (k->a.rank == 0) {
        printf("  trial times (s):");
        for (int t = 0; t < k->trials; t++)
            printf(" %.4f", seconds[t]);
        printf("\n  %d trials: mean %.4f s, the first included; median %.4f s (min %.4f, "
               "max %.4f)\n", k->trials, sum / k->trials, median, lo, hi);
        printf("  peak memory per rank %.1f MiB, of the job %.1f MiB (every rank's summed; "
               "the first trial's, before any check)\n", peak, k->peak_job);
        if (k->validate)
            printf("  %s\n", failures ? "VALIDATION FAILED" : "validated against the "
                   "sequential reference: every trial");
        if (k->csv)
            fprintf(k->csv, "%s,%d,%llu,%llu,%d,%.6f,%.6f,%.6f,%.1f,%d,%d\n", k->a.name,
                    k->a.size, (unsigned long long)cr_graph_vertices(k->g),
                    (unsigned long long)k->total_edges, k->trials, median, lo, hi, peak,
                    k->validate, !failures);
    }
    if (k->csv)
        fclose(k->csv);
    free(sorted);
    cr_graph_destroy(k->g);
    app_comm_destroy(k->comm);
    cr_graph_edges_free(&k->edges);
    ref_graph_free(&k->ref);
    MPI_Finalize();
    return failures ? 1 : 0;
}
