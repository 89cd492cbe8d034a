/* plan: the static exchange planner on SpMV communication patterns, as the thesis's
 * Table 6.2 (Duymuş 2021, docs/references.md): for each input matrix, the
 * average and the bottleneck number of messages per rank, initially, after message
 * sharing's phase I and phase II, and under store-and-forward on a 2D grid, a 3D
 * grid and the hypercube; then geometric means over the inputs (Table 6.3). One
 * process: the planner is sequential. */
#include "cli.h"
#include "sparse.h"

#include <courier.h>

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] =
    "Usage: plan [options]        (one process: do not start it with mpirun)\n"
    "\n"
    "Plans the exchange of a column-parallel SpMV (y = Ax, rows and columns of A\n"
    "block-partitioned onto P ranks, or by --partition) and prints, per input, the\n"
    "average and the most messages a rank sends: initially, after message sharing's\n"
    "phase I and phase II (as in the thesis), after phase II with the cap search\n"
    "(Courier's default), and under store-and-forward (STFW) on a 2D grid, a 3D grid\n"
    "and the hypercube; the overhead links and the planning time; then geometric\n"
    "means over the inputs.\n"
    "\n"
    "  --ranks P         number of ranks to plan for (default 512; 1..4096)\n"
    "  --inputs L        comma list of inputs (default: rmat:16, gnm:16:8, and meshes\n"
    "                    with R-MAT or uniform shortcuts: stencil2d:512+rmat:18:0.01,\n"
    "                    stencil3d:64+rmat:18:0.02, stencil2d:512+rmat:18:0.05,\n"
    "                    stencil3d:64+rmat:18:0.1, stencil2d:256+rmat:16:1,\n"
    "                    stencil2d:512+gnm:18:0.0625). An input is a Matrix Market\n"
    "                    file or a generator: rmat:S[:E], rmatp:S[:E] (vertices\n"
    "                    permuted), gnm:S[:E], rgg:S[:D], stencil2d:K, stencil3d:K, or\n"
    "                    A+B, the sum of two inputs with as many rows, or\n"
    "                    like:NAME[/D], shaped like matrix NAME of the thesis's\n"
    "                    Table 6.1 with rows and nonzeros divided by D. 'thesis' (or\n"
    "                    'thesis/D') stands for all 15; for these a second table sets\n"
    "                    the thesis's Table 6.2 beside the figures measured here\n"
    "  --partition FILE  one part in 0..P-1 per row (a METIS or PaToH partition\n"
    "                    vector); only with a single input\n"
    "  --partitioner X   block (rows in P equal blocks: the default) or metis\n"
    "                    (METIS's k-way partition minimizing the edge cut; the\n"
    "                    thesis used a hypergraph partitioner; needs a build with\n"
    "                    libmetis-dev)\n"
    "  --seed S          generator seed (default 1)\n";

/* The thesis's Table 6.2 (512 processors, its partitions): average and bottleneck
 * messages initially, after phase I and after phase II, for the matrices like:NAME
 * imitates (apps/common/sparse.c). */
static const struct thesis_row {
    const char *name;
    double avg[3], max[3];
} thesis_table[] = {
    {"cbuckle", {7.43, 7.36, 7.6}, {62, 41, 8}},
    {"msc10848", {16.95, 16.62, 17.05}, {67, 34, 18}},
    {"fe_rotor", {12.68, 12.32, 12.75}, {41, 23, 14}},
    {"sparsine", {76.21, 56.87, 57.01}, {223, 80, 58}},
    {"coAuthorsDBLP", {175.02, 48.65, 48.89}, {288, 216, 50}},
    {"net125", {106.44, 52.01, 52.03}, {209, 123, 53}},
    {"nd3k", {59.15, 24.28, 24.88}, {107, 47, 26}},
    {"GaAsH6", {75.96, 25.66, 26.18}, {227, 77, 27}},
    {"pkustk04", {18.52, 17.4, 17.87}, {101, 51, 19}},
    {"gupta2", {154.37, 31.08, 31.73}, {276, 132, 33}},
    {"TSOPF_FS_b300_c2", {140.93, 74.29, 74.31}, {497, 249, 124}},
    {"pattern1", {70.41, 7.76, 8.06}, {472, 61, 9}},
    {"SiO2", {156.86, 23.92, 25.4}, {298, 147, 26}},
    {"human_gene_2", {393.25, 30.48, 30.66}, {511, 256, 114}},
    {"coPapersCiteseer", {102.99, 46.83, 47.1}, {226, 131, 48}},
};
#define THESIS_ROWS (sizeof thesis_table / sizeof thesis_table[0])

/* The thesis's row for a like:NAME input, or NULL. */
static const struct thesis_row *thesis_row_of(const char *spec)
{
    if (strncmp(spec, "like:", 5) != 0)
        return NULL;
    size_t len = strcspn(spec + 5, "/:");
    for (size_t k = 0; k < THESIS_ROWS; k++)
        if (strlen(thesis_table[k].name) == len && !strncmp(thesis_table[k].name, spec + 5, len))
            return &thesis_table[k];
    return NULL;
}

/* The columns of the table: the sharing plan's stages (phase II as the thesis has it,
 * then with the cap search), then the baselines. */
enum { COL_INITIAL, COL_PHASE1, COL_PLAIN, COL_PHASE2, COL_GRID2, COL_GRID3, COL_HCUBE, NCOL };

typedef struct row {
    double avg[NCOL];
    double max[NCOL];
    double overhead; /* phase II, per rank */
    double seconds;  /* the sharing plan */
} row;

/* Three factors of p as equal as they go, for the 3D grid. */
static void grid3_spec(int p, char *spec, size_t len)
{
    int best[3] = {1, 1, p};
    for (int a = 1; a * a * a <= p; a++) {
        if (p % a)
            continue;
        for (int b = a; a * b * b <= p; b++) {
            if ((p / a) % b)
                continue;
            int c = p / a / b;
            if (c - a < best[2] - best[0])
                best[0] = a, best[1] = b, best[2] = c;
        }
    }
    snprintf(spec, len, "grid:%dx%dx%d", best[2], best[1], best[0]);
}

static cr_plan *make_plan(const app *a, const cr_plan_matrix *m, cr_plan_kind kind,
                          const char *topology)
{
    cr_plan_opts o;
    cr_plan_opts_init(&o);
    o.kind = kind;
    char err[256];
    if (topology && cr_route_parse(topology, &o.topology, err, sizeof err) != 0)
        app_error(a, "%s", err);
    cr_plan *p = cr_plan_create(m, &o, err, sizeof err);
    if (!p)
        app_error(a, "%s", err);
    return p;
}

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void take(row *r, int col, const cr_plan *p, cr_plan_stage stage)
{
    cr_plan_stats st;
    cr_plan_stats_get(p, stage, &st);
    r->avg[col] = st.mean_messages;
    r->max[col] = (double)st.max_messages;
}

static void plan_input(const app *a, const char *spec, int ranks, const char *partition,
                       int partitioner, uint64_t seed, row *r)
{
    sparse_matrix m;
    char err[512];
    if (sparse_load(spec, seed, &m, err, sizeof err) != 0)
        app_error(a, "%s", err);
    int *part = app_calloc(a, m.n, sizeof *part, "the partition");
    if (sparse_partition(&m, ranks, partition, partitioner, seed, part, err, sizeof err) != 0)
        app_error(a, "%s", err);
    spmv_comm c;
    spmv_comm_build(&m, part, ranks, &c);
    cr_plan_matrix cm = {.nranks = ranks, .ptr = c.ptr, .dest = c.dest, .volume = c.volume};

    double t0 = seconds_now();
    cr_plan *p = make_plan(a, &cm, CR_PLAN_SHARING, NULL);
    r->seconds = seconds_now() - t0;
    take(r, COL_INITIAL, p, CR_PLAN_INITIAL);
    take(r, COL_PHASE1, p, CR_PLAN_PHASE1);
    take(r, COL_PLAIN, p, CR_PLAN_PHASE2_PLAIN);
    take(r, COL_PHASE2, p, CR_PLAN_FINAL);
    cr_plan_stats st;
    cr_plan_stats_get(p, CR_PLAN_FINAL, &st);
    r->overhead = (double)st.overhead / ranks;
    cr_plan_destroy(p);

    char g3[64];
    grid3_spec(ranks, g3, sizeof g3);
    const char *topo[] = {"grid", g3, "hypercube"};
    for (int t = 0; t < 3; t++) {
        p = make_plan(a, &cm, CR_PLAN_STFW, topo[t]);
        take(r, COL_GRID2 + t, p, CR_PLAN_FINAL);
        cr_plan_destroy(p);
    }
    printf("| %s | %llu | %llu |", spec, (unsigned long long)m.n, (unsigned long long)m.nnz);
    for (int k = 0; k < NCOL; k++)
        printf(" %.2f |", r->avg[k]);
    for (int k = 0; k < NCOL; k++)
        printf(" %.0f |", r->max[k]);
    printf(" %.2f | %.2f |\n", r->overhead, r->seconds);
    fflush(stdout);
    spmv_comm_free(&c);
    free(part);
    sparse_free(&m);
}

/* The input list with 'thesis' and 'thesis/D' replaced by the 15 like: inputs. */
static char *expand_inputs(const app *a, const char *inputs)
{
    size_t cap = strlen(inputs) + 1;
    for (const char *t = strstr(inputs, "thesis"); t; t = strstr(t + 1, "thesis"))
        cap += sparse_like_count() * (strlen("like:,") + 32 + strlen(inputs));
    char *out = app_calloc(a, cap, 1, "the input list");
    char *copy = strdup(inputs);
    if (!copy)
        app_error(a, "out of memory");
    for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        const char *sep = *out ? "," : "";
        if (!strcmp(t, "thesis") || !strncmp(t, "thesis/", 7)) {
            for (size_t k = 0; k < sparse_like_count(); k++)
                snprintf(out + strlen(out), cap - strlen(out), "%slike:%s%s", k || *sep ? "," : "",
                         sparse_like_name(k), t + 6);
        } else {
            snprintf(out + strlen(out), cap - strlen(out), "%s%s", sep, t);
        }
    }
    free(copy);
    return out;
}

/* Beside the thesis: its Table 6.2 and ours for each like: input, then geometric
 * means over them and the two ratios the thesis reports (Table 6.3). */
static void print_beside_thesis(char **specs, const row *rows, int n)
{
    int k = 0;
    double lt[6] = {0}, lo[8] = {0};
    for (int i = 0; i < n; i++) {
        const struct thesis_row *t = thesis_row_of(specs[i]);
        if (!t)
            continue;
        if (k++ == 0)
            printf("\nbeside the thesis's Table 6.2 (thesis / here):\n\n"
                   "| input | avg initial | avg phase I | avg phase II | max initial | "
                   "max phase I | max phase II | max capped here | max STFW 2D here |\n"
                   "|---|---|---|---|---|---|---|---|---|\n");
        const row *r = &rows[i];
        const double here_avg[3] = {r->avg[COL_INITIAL], r->avg[COL_PHASE1], r->avg[COL_PLAIN]};
        const double here_max[3] = {r->max[COL_INITIAL], r->max[COL_PHASE1], r->max[COL_PLAIN]};
        printf("| %s |", specs[i]);
        for (int c = 0; c < 3; c++)
            printf(" %.2f / %.2f |", t->avg[c], here_avg[c]);
        for (int c = 0; c < 3; c++)
            printf(" %.0f / %.0f |", t->max[c], here_max[c]);
        printf(" %.0f | %.0f |\n", r->max[COL_PHASE2], r->max[COL_GRID2]);
        for (int c = 0; c < 3; c++) {
            lt[c] += log(t->avg[c]);
            lt[3 + c] += log(t->max[c]);
            lo[c] += log(here_avg[c] > 0 ? here_avg[c] : 1);
            lo[3 + c] += log(here_max[c] > 0 ? here_max[c] : 1);
        }
        lo[6] += log(r->max[COL_PHASE2] > 0 ? r->max[COL_PHASE2] : 1);
        lo[7] += log(r->max[COL_GRID2] > 0 ? r->max[COL_GRID2] : 1);
    }
    if (k == 0)
        return;
    printf("| geometric mean |");
    for (int c = 0; c < 6; c++)
        printf(" %.1f / %.1f |", exp(lt[c] / k), exp(lo[c] / k));
    printf(" %.1f | %.1f |\n", exp(lo[6] / k), exp(lo[7] / k));
    printf("\nphase II bottleneck / initial: thesis %.2f, here %.2f (capped %.2f); phase II / "
           "STFW 2D: thesis 0.74 (against its baseline's 41.6), here %.2f\n",
           exp((lt[5] - lt[3]) / k), exp((lo[5] - lo[3]) / k), exp((lo[6] - lo[3]) / k),
           exp((lo[5] - lo[7]) / k));
}

/* The CSV line of one input: its averages and maxima, and the thesis's Table 6.2
 * figures for a like: input (else empty fields). */
static void csv_row(FILE *out, const char *spec, int ranks, const row *r, const char *partitioner)
{
    char name[256];
    sparse_name(spec, name, sizeof name);
    fprintf(out, "%s,%d", name, ranks);
    for (int k = 0; k < NCOL; k++)
        fprintf(out, ",%.4f", r->avg[k]);
    for (int k = 0; k < NCOL; k++)
        fprintf(out, ",%.0f", r->max[k]);
    fprintf(out, ",%.4f,%.4f,%s", r->overhead, r->seconds, partitioner);
    const struct thesis_row *th = thesis_row_of(spec);
    for (int k = 0; k < 6; k++)
        if (th)
            fprintf(out, k < 3 ? ",%.2f" : ",%.0f", k < 3 ? th->avg[k] : th->max[k - 3]);
        else
            fprintf(out, ",");
    fprintf(out, "\n");
}

/* End with the usage error of the first input of the comma list that cannot load. */
static void check_inputs(app *a, const char *list)
{
    char *copy = strdup(list), err[512];
    if (!copy)
        app_fail(a, "out of memory");
    for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (sparse_check(t, err, sizeof err) != 0)
            app_usage_error(a, "--inputs: %s", err);
    free(copy);
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "plan", usage, &argc, &argv);
    static const struct option opts[] = {
        {"ranks", required_argument, 0, 'P'},  {"inputs", required_argument, 0, 'i'},
        {"partition", required_argument, 0, 'p'}, {"seed", required_argument, 0, 'S'},
        {"partitioner", required_argument, 0, 'x'}, APP_LONG_COMMON, {0, 0, 0, 0}};
    app_shared sh; /* the common flags */
    app_shared_init(&sh);
    int ranks = 512, partitioner = SPARSE_BLOCK;
    const char *inputs = "rmat:16,gnm:16:8,stencil2d:512+rmat:18:0.01,stencil3d:64+rmat:18:0.02,"
                         "stencil2d:512+rmat:18:0.05,stencil3d:64+rmat:18:0.1,"
                         "stencil2d:256+rmat:16:1,stencil2d:512+gnm:18:0.0625";
    const char *partition = NULL;
    uint64_t seed = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'P': ranks = (int)app_parse_u64(&a, "--ranks", optarg, 1, 4096); break;
        case 'i': inputs = optarg; break;
        case 'p': partition = optarg; break;
        case 'S': seed = app_parse_u64(&a, "--seed", optarg, 0, UINT64_MAX); break;
        case 'x':
            partitioner = app_parse_choice(&a, "--partitioner", optarg, sparse_partitioners);
            break;
        default: app_other_option(&a, ch, optarg, &sh, argv);
        }
    }
    app_no_operands(&a, argc, argv);
    app_require_one_process(&a, "plans");
    if (partition && strchr(inputs, ','))
        app_usage_error(&a, "--partition needs a single input, not the list '%s'", inputs);
    if (!*inputs)
        app_usage_error(&a, "--inputs is empty");
    const char *misuse = sparse_partition_misuse(partition, partitioner);
    if (misuse)
        app_usage_error(&a, "%s", misuse);
    FILE *out = app_open_csv(&a, sh.csv, "input,ranks,avg_initial,avg_phase1,avg_phase2,"
                             "avg_capped,avg_stfw2d,avg_stfw3d,avg_hypercube,max_initial,"
                             "max_phase1,max_phase2,max_capped,max_stfw2d,max_stfw3d,"
                             "max_hypercube,overhead,plan_seconds,partitioner,"
                             "thesis_avg_initial,thesis_avg_phase1,thesis_avg_phase2,"
                             "thesis_max_initial,thesis_max_phase1,thesis_max_phase2");
    char *list = expand_inputs(&a, inputs);
    check_inputs(&a, list); /* every input before the table's first line */
    char g3[64];
    grid3_spec(ranks, g3, sizeof g3);
    printf("column-parallel SpMV on %d ranks; STFW 3D grid %s; messages per rank:\n\n", ranks,
           g3 + 5);
    printf("| input | rows | nonzeros | avg initial | avg phase I | avg phase II | avg capped | "
           "avg STFW 2D | avg STFW 3D | avg hypercube | max initial | max phase I | "
           "max phase II | max capped | max STFW 2D | max STFW 3D | max hypercube | "
           "overhead | plan s |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    double logs[2][NCOL] = {{0}};
    int n = 0, ninputs = 1;
    for (const char *c = list; *c; c++)
        ninputs += *c == ',';
    row *rows = app_calloc(&a, (size_t)ninputs, sizeof *rows, "the table");
    char **specs = app_calloc(&a, (size_t)ninputs, sizeof *specs, "the table");
    bool zero = false;
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        row r;
        plan_input(&a, t, ranks, partition, partitioner, seed, &r);
        rows[n] = r;
        specs[n] = t;
        for (int k = 0; k < NCOL; k++) {
            zero |= r.avg[k] <= 0 || r.max[k] <= 0;
            logs[0][k] += log(r.avg[k] > 0 ? r.avg[k] : 1);
            logs[1][k] += log(r.max[k] > 0 ? r.max[k] : 1);
        }
        n++;
        if (out)
            csv_row(out, t, ranks, &r, partition ? "file" : sparse_partitioners[partitioner]);
    }
    printf("| geometric mean%s | | |", zero ? " (zeros as 1)" : "");
    for (int k = 0; k < NCOL; k++)
        printf(" %.2f |", exp(logs[0][k] / n));
    for (int k = 0; k < NCOL; k++)
        printf(" %.1f |", exp(logs[1][k] / n));
    printf(" | |\n");
    double gm_init = exp(logs[1][COL_INITIAL] / n), gm_plain = exp(logs[1][COL_PLAIN] / n);
    double gm_capped = exp(logs[1][COL_PHASE2] / n), best_stfw = exp(logs[1][COL_GRID2] / n);
    for (int k = COL_GRID3; k <= COL_HCUBE; k++)
        best_stfw = fmin(best_stfw, exp(logs[1][k] / n));
    printf("\nbottleneck (geometric means): phase II %.0f%% below the initial, capped %.0f%% "
           "below; capped / best STFW = %.2f; average messages: capped %.0f%% below the "
           "initial\n",
           100 * (1 - gm_plain / gm_init), 100 * (1 - gm_capped / gm_init), gm_capped / best_stfw,
           100 * (1 - exp(logs[0][COL_PHASE2] / n) / exp(logs[0][COL_INITIAL] / n)));
    print_beside_thesis(specs, rows, n);
    free(rows);
    free(specs);
    free(list);
    if (out)
        fclose(out);
    MPI_Finalize();
    return 0;
}
