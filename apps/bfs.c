/* bfs: Courier's main job. Generates (or reads) a graph, builds the distributed
 * graph through the mailbox, then runs Graph500-style searches from random roots,
 * validates every one and reports TEPS. */
#include "cli.h"
#include <courier/rng.h>

#include <courier.h>

#include <ctype.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static const char usage[] =
    "Usage: mpirun -np P bfs [options]\n"
    "\n"
    "Breadth-first search on a generated scale-free graph (Graph500 style): searches\n"
    "from random roots with at least one edge, each validated with the Graph500\n"
    "rules, then the harmonic mean of the traversed edges per second (TEPS).\n"
    "\n"
    "  --scale S         2^S vertices (default 16)\n"
    "  --edgefactor E    edges per vertex (default 16); for rgg, the average degree\n"
    "  --generator G     rmat, gnm or rgg (default rmat: A, B, C = 0.57, 0.19, 0.19)\n"
    "  --graph FILE      read the edges from FILE instead (text 'u v [w]' per line,\n"
    "                    Courier binary, or a Graph500 dump if FILE ends in .g500);\n"
    "                    vertex ids are used as they are, so they must be dense\n"
    "  --format F        with --graph: auto (by the name, default), text, binary or\n"
    "                    graph500 (a dump whatever its name, e.g. the reference's TMPFILE)\n"
    "  --vertices N      with --graph: the graph has N vertices, ids 0 .. N-1 (default:\n"
    "                    1 + the largest id; needed when that is far more than the\n"
    "                    edges suggest, e.g. many isolated vertices)\n"
    "  --roots R         searches (default 16; with --roots-file: at most R of its roots)\n"
    "  --roots-file FILE search from the vertex ids in FILE (whitespace-separated, '#'\n"
    "                    starts a comment), in order, e.g. another program's roots; each\n"
    "                    must have an edge\n"
    "  --algorithm A     levels (level-synchronous, top-down), async (label-correcting),\n"
    "                    or dedup: level-synchronous with the visits of a vertex merged\n"
    "                    by the mailbox (a combining handler) instead of a bitmap of\n"
    "                    the visits each rank sent\n"
    "                    or hybrid (default): direction-optimizing, each level top-down\n"
    "                    by messages or bottom-up over an allgathered frontier bitmap\n"
    "  --dedup           the same as --algorithm dedup\n"
    "  --direction D     hybrid: auto (Beamer's rule, default), top-down, bottom-up or\n"
    "                    alternate (for tests and comparisons)\n"
    "  --alpha A         hybrid: go bottom-up when the frontier's edges exceed the\n"
    "                    unvisited vertices' edges / A (default 14)\n"
    "  --beta B          hybrid: go back top-down when the frontier has fewer than\n"
    "                    n / B vertices (default 24)\n"
    "  --shuffle S       how edges reach their owners when the graph is built: mailbox\n"
    "                    (one message per edge end, default) or exchange (one sparse\n"
    "                    exchange)\n"
    "  --seed S          seed of the graph and of the roots (default 1)\n"
    "  --route R         direct, nr, nlnr, grid, grid:AxB..., hypercube\n"
    "  --node-size K     virtual nodes of K ranks (default: as MPI reports)\n"
    "  --buffer-kb K     flush threshold in KiB (default: COURIER_BUFFER_SIZE or 64)\n"
    "  --graph500-output print the Graph500 reference's result block at the end\n"
    "                    (SCALE, NBFS, construction_time, time, nedge and TEPS\n"
    "                    quartiles, harmonic mean and its standard deviation, ...)\n"
    "  --phase-times     hybrid: the mean time per search in its parts (bottom-up\n"
    "                    scans, frontier bitmaps, top-down levels), the slowest\n"
    "                    rank's of each, next to the whole search\n";

static const char *const generators[] = {"rmat", "gnm", "rgg", NULL};
static const char *const algorithms[] = {"levels", "async", "dedup", "hybrid", NULL};
static const char *const directions[] = {"auto", "top-down", "bottom-up", "alternate", NULL};
static const char *const shuffles[] = {"mailbox", "exchange", NULL};
static const char *const formats[] = {"auto", "text", "binary", "graph500", NULL};

typedef struct options {
    app_shared sh; /* --scale, --edgefactor, --generator, --graph, --seed, --route,
                      --node-size, --buffer-kb, --csv, --stats */
    const char *roots_file;
    cr_file_format format;
    bool roots_given;
    uint64_t roots, vertices;
    int quiet, graph500_output, phase_times;
    cr_bfs_opts bfs;
    cr_graph_shuffle shuffle;
} options;

static void parse(app *a, int argc, char **argv, options *o)
{
    app_shared_init(&o->sh);
    cr_graph_bfs_opts_init(&o->bfs);
    o->bfs.algorithm = CR_BFS_HYBRID; /* 5-8 times the top-down TEPS (docs/graph.md) */
    o->roots = 16;
    static const struct option opts[] = {
        APP_LONG_SCALE, APP_LONG_EDGEFACTOR, APP_LONG_GENERATOR, APP_LONG_GRAPH, APP_LONG_SEED,
        APP_LONG_ROUTE, APP_LONG_NODE_SIZE, APP_LONG_BUFFER_KB,
        {"roots", required_argument, 0, 'r'},
        {"phase-times", no_argument, 0, 'P'},        {"algorithm", required_argument, 0, 'A'},
        {"dedup", no_argument, 0, 'U'},           {"direction", required_argument, 0, 'D'},
        {"alpha", required_argument, 0, 'a'},     {"beta", required_argument, 0, 'B'},
        {"format", required_argument, 0, 'F'},    {"roots-file", required_argument, 0, 'o'},
        {"shuffle", required_argument, 0, 'X'},   {"vertices", required_argument, 0, 'V'},
        {"graph500-output", no_argument, 0, 'O'},
        APP_LONG_COMMON, {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'V': o->vertices = app_parse_u64(a, "--vertices", optarg, 1, 1ULL << 62); break;
        case 'r': o->roots = app_parse_u64(a, "--roots", optarg, 1, 1024); o->roots_given = true; break;
        case 'F': o->format = (cr_file_format)app_parse_choice(a, "--format", optarg, formats); break;
        case 'o': o->roots_file = optarg; break;
        case 'P': o->phase_times = 1; break;
        case 'O': o->graph500_output = 1; break;
        case 'X': o->shuffle = (cr_graph_shuffle)app_parse_choice(a, "--shuffle", optarg, shuffles); break;
        case 'A': o->bfs.algorithm = (cr_bfs_algorithm)app_parse_choice(a, "--algorithm", optarg, algorithms); break;
        case 'U': o->bfs.algorithm = CR_BFS_LEVELS_DEDUP; break;
        case 'D': o->bfs.direction = (cr_bfs_direction)app_parse_choice(a, "--direction", optarg, directions); break;
        case 'a': o->bfs.alpha = app_parse_double(a, "--alpha", optarg, 1e-6, 1e9); break;
        case 'B': o->bfs.beta = app_parse_double(a, "--beta", optarg, 1e-6, 1e9); break;
        default: app_other_option(a, ch, optarg, &o->sh, argv);
        }
    }
    app_no_operands(a, argc, argv);
    o->quiet = o->sh.quiet;
    if (o->format != CR_FILE_AUTO && !o->sh.graph)
        app_usage_error(a, "--format goes with --graph");
    if (o->vertices && !o->sh.graph)
        app_usage_error(a, "--vertices goes with --graph (a generated graph has 2^scale vertices)");
    app_shared_graph_check(a, &o->sh);
}

/* Roots: vertices drawn from the seed, kept if they have an edge; the same on
 * every rank. Gives up after many draws (a graph with almost no edges). */
static int pick_roots(cr_graph *g, uint64_t seed, uint64_t want, uint64_t *roots)
{
    uint64_t n = cr_graph_vertices(g), s = cr_rng_hash64(seed ^ 0x726f6f7473ULL);
    int have = 0;
    for (uint64_t tries = 0; (uint64_t)have < want && tries < 64 * want + 1024; tries++) {
        uint64_t v = cr_rng_bounded(cr_rng_next(&s), n), degree = 0, any;
        if (cr_graph_owner(g, v) == cr_comm_rank(cr_graph_comm(g)))
            degree = cr_graph_degree(g, v - cr_graph_first(g));
        MPI_Allreduce(&degree, &any, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
        bool repeat = false;
        for (int k = 0; k < have; k++)
            repeat |= roots[k] == v;
        if (any > 0 && !repeat)
            roots[have++] = v;
    }
    return have;
}

/* Parse the roots file into roots[0 .. max); returns how many, or -1 with a one-line
 * message in err. Local. */
static int parse_roots(const char *path, uint64_t n, uint64_t max, uint64_t *roots, char *err,
                       size_t errlen)
{
    FILE *f = cr_io_fopen_regular(path, err, errlen);
    if (!f)
        return -1;
    int have = 0, line = 1;
    char tok[64];
    for (int c = fgetc(f); c != EOF && (uint64_t)have < max;) {
        if (c == '\n') {
            line++;
            c = fgetc(f);
        } else if (c == '#') {
            while (c != EOF && c != '\n')
                c = fgetc(f);
        } else if (c == ' ' || c == '\t' || c == '\r') {
            c = fgetc(f);
        } else {
            size_t len = 0;
            while (c != EOF && c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != '#') {
                if (len + 1 < sizeof tok)
                    tok[len++] = (char)c;
                c = fgetc(f);
            }
            tok[len] = '\0';
            char *end;
            unsigned long long v = strtoull(tok, &end, 10);
            if (!isdigit((unsigned char)tok[0]) || *end || v >= n) {
                snprintf(err, errlen, "%s:%d: '%s' is not a vertex id (the graph has vertices "
                         "0 .. %llu)", path, line, tok, (unsigned long long)(n - 1));
                fclose(f);
                return -1;
            }
            roots[have++] = v;
        }
    }
    fclose(f);
    if (have == 0) {
        snprintf(err, errlen, "%s: no roots in the file", path);
        return -1;
    }
    return have;
}

/* --roots-file: every rank reads the file; any rank's error (a file it cannot open,
 * a bad token, an id out of range) ends the job with one line, as does a root
 * without an edge. Collective. Returns how many roots (at most `max`). */
static int read_roots(app *a, cr_graph *g, const char *path, uint64_t max, uint64_t *roots)
{
    char err[300];
    int have = parse_roots(path, cr_graph_vertices(g), max, roots, err, sizeof err);
    app_agree(a, have < 0 ? err : NULL);
    for (int k = 0; k < have; k++) {
        uint64_t degree = 0, any;
        if (cr_graph_owner(g, roots[k]) == cr_comm_rank(cr_graph_comm(g)))
            degree = cr_graph_degree(g, roots[k] - cr_graph_first(g));
        MPI_Allreduce(&degree, &any, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
        if (any == 0)
            app_error(a, "%s: root %llu has no edge (a search must start at a vertex with one)",
                      path, (unsigned long long)roots[k]);
    }
    return have;
}

/* The vertex count of a file's graph: 1 + the largest id, or --vertices. Ids are
 * used as they are (never relabelled), so one huge id would make every rank
 * allocate for all the ids below it: refused before anything is allocated. Per
 * owned vertex the CSR offsets and fill, parents, levels and validation state take
 * about 40 bytes; the sent-visit bitmap takes a bit per vertex of the graph. */
static void check_vertices(app *a, const options *o, cr_edge_list *edges)
{
    uint64_t m = edges->count, total_m;
    MPI_Allreduce(&m, &total_m, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    edges->nvertices = app_file_vertices(a, o->sh.graph, edges->nvertices, total_m, o->vertices,
                                         40, 1.0 / 8);
}

/* Collective: an error on any rank (its block of a file) ends the job with one line. */
static void load_graph(app *a, const options *o, cr_edge_list *edges)
{
    char err[512];
    if (o->sh.graph)
        app_progress(a, "reading %s", o->sh.graph);
    else
        app_progress(a, "generating the graph: scale %d, edge factor %g", o->sh.gen.scale,
                     o->sh.gen.edgefactor);
    int rc = o->sh.graph ? cr_graph_read_edges(o->sh.graph, o->format, NULL, a->rank, a->size, edges, err,
                                            sizeof err)
                      : cr_graph_generate(&o->sh.gen, a->rank, a->size, edges, err, sizeof err);
    app_agree(a, rc ? err : NULL);
    if (o->sh.graph)
        check_vertices(a, o, edges);
}

/* ---- the Graph500 reference's result block --------------------------------------- */

enum { ST_MIN, ST_Q1, ST_MEDIAN, ST_Q3, ST_MAX, ST_MEAN, ST_STDDEV, ST_COUNT };

static int by_double(const void *x, const void *y)
{
    double p = *(const double *)x, q = *(const double *)y;
    return (p > q) - (p < q);
}

/* The statistics as the reference defines them: the mean; the standard deviation
 * with n - 1; the quartiles of the sorted values, each the average of the two
 * middle candidates. */
static void g500_statistics(const double *x, int n, double r[ST_COUNT])
{
    double *v = malloc((size_t)n * sizeof *v), sum = 0, sq = 0;
    if (!v) {
        fprintf(stderr, "bfs: out of memory for the statistics\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memcpy(v, x, (size_t)n * sizeof *v);
    qsort(v, (size_t)n, sizeof *v, by_double);
    for (int i = 0; i < n; i++)
        sum += v[i];
    r[ST_MEAN] = sum / n;
    for (int i = 0; i < n; i++)
        sq += (v[i] - r[ST_MEAN]) * (v[i] - r[ST_MEAN]);
    r[ST_STDDEV] = n > 1 ? sqrt(sq / (n - 1)) : 0;
    r[ST_MIN] = v[0];
    r[ST_Q1] = (v[(n - 1) / 4] + v[n / 4]) / 2;
    r[ST_MEDIAN] = (v[(n - 1) / 2] + v[n / 2]) / 2;
    r[ST_Q3] = (v[n - 1 - (n - 1) / 4] + v[n - 1 - n / 4]) / 2;
    r[ST_MAX] = v[n - 1];
    free(v);
}

static void g500_line(const char *name, const char *fmt, double value)
{
    char label[80];
    snprintf(label, sizeof label, "%s:", name);
    printf("%-32s", label);
    printf(fmt, value);
    putchar('\n');
}

static void g500_block(const char *prefix, const char *what, const double *x, int n)
{
    static const char *const names[] = {"min", "firstquartile", "median", "thirdquartile",
                                        "max", "mean", "stddev"};
    double r[ST_COUNT];
    g500_statistics(x, n, r);
    for (int k = 0; k < ST_COUNT; k++) {
        char name[64];
        snprintf(name, sizeof name, "%s%s_%s", prefix, names[k], what);
        g500_line(name, strcmp(what, "nedge") ? "%g" : "%.11g", r[k]);
    }
}

typedef struct g500_run {
    int scale, edgefactor, nbfs, ranks;
    double generation, construction;
    const double *time, *nedge, *validate;
} g500_run;

/* Rank 0: the block the reference prints after a valid run, same names and order.
 * TEPS come from the seconds per edge: its quartiles inverted (the slowest search
 * gives min_TEPS), the harmonic mean as 1 / their mean, and its standard deviation
 * by Norris's formula for the harmonic mean, as the reference does. */
static void g500_print(const g500_run *r)
{
    int n = r->nbfs;
    printf("SCALE:                          %d\n", r->scale);
    printf("edgefactor:                     %d\n", r->edgefactor);
    printf("NBFS:                           %d\n", n);
    g500_line("graph_generation", "%g", r->generation);
    printf("num_mpi_processes:              %d\n", r->ranks);
    g500_line("construction_time", "%g", r->construction);
    g500_block("bfs  ", "time", r->time, n);
    g500_block("", "nedge", r->nedge, n);
    double *spe = malloc((size_t)n * sizeof *spe), st[ST_COUNT];
    if (!spe) {
        fprintf(stderr, "bfs: out of memory for the statistics\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int i = 0; i < n; i++)
        spe[i] = r->time[i] / r->nedge[i];
    g500_statistics(spe, n, st);
    g500_line("bfs  min_TEPS", "%g", 1 / st[ST_MAX]);
    g500_line("bfs  firstquartile_TEPS", "%g", 1 / st[ST_Q3]);
    g500_line("bfs  median_TEPS", "%g", 1 / st[ST_MEDIAN]);
    g500_line("bfs  thirdquartile_TEPS", "%g", 1 / st[ST_Q1]);
    g500_line("bfs  max_TEPS", "%g", 1 / st[ST_MIN]);
    printf("%-29s!  %g\n", "bfs  harmonic_mean_TEPS:", 1 / st[ST_MEAN]);
    g500_line("bfs  harmonic_stddev_TEPS", "%g",
              n > 1 ? st[ST_STDDEV] / (st[ST_MEAN] * st[ST_MEAN] * sqrt(n - 1)) : 0);
    free(spe);
    g500_block("bfs  ", "validate", r->validate, n);
}

/* A run: the comm and the graph (build_graph), the roots, and what each search
 * measured (search_all). */
typedef struct bfs_run {
    cr_comm *comm;
    cr_config cfg;
    char route_name[128];
    FILE *csv;
    cr_graph *g;
    double t_gen, t_build;
    uint64_t input_edges;
    uint64_t *roots;
    int nroots, failures;
    bool checked;      /* searches validated (not --validate=no) */
    double *teps, *times, *nedges, *validate_times, inv_sum;
    double parts[4];   /* --phase-times: scan, frontier, top-down, all */
} bfs_run;

typedef struct file_check {
    const app *a;
    const options *o;
} file_check;

/* cr_graph_read's check: the rules of check_vertices. */
static const char *check_file(void *user, uint64_t nvertices, uint64_t edges)
{
    static char refusal[512];
    const file_check *ctx = user;
    return app_vertices_refusal(ctx->a, ctx->o->sh.graph, nvertices, edges, ctx->o->vertices,
                                40, 1.0 / 8, refusal, sizeof refusal);
}

/* A file read three times instead of held as a list (cr_graph_read): the job's peak
 * is the graph's. Reading and building are one step, timed as the build. */
static void read_graph(app *a, const options *o, bfs_run *r)
{
    app_progress(a, "reading %s and building the distributed graph", o->sh.graph);
    file_check ctx = {a, o};
    cr_graph_read_opts ro = {.format = o->format, .nvertices = o->vertices,
                             .check = check_file, .user = &ctx};
    char err[512];
    r->g = cr_graph_read(r->comm, o->sh.graph, &ro, &r->input_edges, err, sizeof err);
    if (!r->g)
        app_error(a, "%s", err);
}

/* A generated graph, or a file with the sparse exchange's shuffle: a list first. */
static void generate_and_build(app *a, const options *o, bfs_run *r, double t0)
{
    cr_edge_list edges;
    load_graph(a, o, &edges);
    r->t_gen = app_max_time(MPI_Wtime() - t0);
    app_progress(a, "%s in %.2f s; building the distributed graph",
                 o->sh.graph ? "read" : "generated", r->t_gen);
    t0 = MPI_Wtime();
    uint64_t local_edges = edges.count;
    /* the mailbox's build takes the list: it is not needed after */
    r->g = o->shuffle == CR_SHUFFLE_MAILBOX ? cr_graph_build_consume(r->comm, &edges)
                                            : cr_graph_build_with(r->comm, &edges, o->shuffle);
    r->t_build = app_max_time(MPI_Wtime() - t0);
    app_progress(a, "built in %.2f s", r->t_build);
    MPI_Allreduce(&local_edges, &r->input_edges, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    cr_graph_edges_free(&edges);
}

/* The comm, the graph read or generated and built, and the header lines. */
static void build_graph(app *a, const options *o, bfs_run *r)
{
    r->csv = app_open_csv(a, o->sh.csv, "ranks,graph,scale,edgefactor,route,buffer_bytes,"
                                        "roots,hmean_teps,min_teps,max_teps,mpi_sends_max,"
                                        "peak_rss_mib,valid,algorithm");
    app_comm_flags flags = app_shared_comm_flags(&o->sh);
    r->comm = app_comm_create(a, &flags, &r->cfg);
    double t0 = MPI_Wtime();
    if (o->roots_file) { /* noticed before the graph is generated or read, not after */
        char err[300];
        FILE *f = cr_io_fopen_regular(o->roots_file, err, sizeof err);
        app_agree(a, f ? NULL : err);
        fclose(f);
    }
    if (o->sh.graph && o->shuffle == CR_SHUFFLE_MAILBOX) {
        read_graph(a, o, r);
        r->t_build = app_max_time(MPI_Wtime() - t0);
        app_progress(a, "read and built in %.2f s", r->t_build);
    } else {
        generate_and_build(a, o, r, t0);
    }
    cr_route_format(&r->cfg.route, r->route_name, sizeof r->route_name);
    if (a->rank != 0)
        return;
    uint64_t nv = cr_graph_vertices(r->g);
    if (o->sh.graph)
        printf("bfs: %d ranks, graph %s: %llu vertices, %llu edges\n", a->size, o->sh.graph,
               (unsigned long long)nv, (unsigned long long)r->input_edges);
    else
        printf("bfs: %d ranks, %s scale %d, edge factor %g: %llu vertices, %llu edges\n",
               a->size, generators[o->sh.gen.kind], o->sh.gen.scale, o->sh.gen.edgefactor,
               (unsigned long long)nv, (unsigned long long)r->input_edges);
    printf("  %s BFS, route %s, buffer %zu bytes; ", algorithms[o->bfs.algorithm],
           r->route_name, r->cfg.buffer_bytes);
    if (o->sh.graph && o->shuffle == CR_SHUFFLE_MAILBOX)
        printf("read and built (%s, no edge list held) in %.3f s\n", shuffles[o->shuffle],
               r->t_build);
    else
        printf("%s in %.3f s, built (%s) in %.3f s\n", o->sh.graph ? "read" : "generated",
               r->t_gen, shuffles[o->shuffle], r->t_build);
}

/* The roots (from --roots-file or drawn from the seed) and the per-search arrays. */
static void choose_roots(app *a, const options *o, bfs_run *r)
{
    uint64_t max_roots = o->roots_file && !o->roots_given ? 1u << 16 : o->roots;
    r->roots = app_calloc(a, max_roots, sizeof *r->roots, "the roots");
    r->nroots = o->roots_file ? read_roots(a, r->g, o->roots_file, max_roots, r->roots)
                              : pick_roots(r->g, o->sh.gen.seed, o->roots, r->roots);
    if (r->nroots == 0) /* the same on every rank */
        app_error(a, "no vertex has an edge: nothing to search");
    size_t n = (size_t)r->nroots;
    r->teps = app_calloc(a, n, sizeof *r->teps, "the timings");
    r->times = app_calloc(a, n, sizeof *r->times, "the timings");
    r->nedges = app_calloc(a, n, sizeof *r->nedges, "the timings");
    r->validate_times = app_calloc(a, n, sizeof *r->validate_times, "the timings");
    /* every search is validated unless --validate=no (auto: always, it is cheap) */
    r->checked = app_validate_or(&o->sh, APP_VALIDATE_YES) != APP_VALIDATE_NO;
}

/* Search k: run, validate, and (without --quiet) its line. */
static void search(const app *a, const options *o, bfs_run *r, int k)
{
    uint64_t root = r->roots[k];
    cr_bfs_result res;
    app_progress(a, "search %d of %d from %llu", k + 1, r->nroots, (unsigned long long)root);
    cr_graph_bfs_run(r->g, &o->bfs, root, &res);
    char why[256] = "";
    double tv = MPI_Wtime();
    uint64_t bad = r->checked ? cr_graph_bfs_validate(r->g, root, res.parent, res.level, why,
                                                       sizeof why)
                              : 0;
    r->validate_times[k] = app_max_time(MPI_Wtime() - tv);
    r->times[k] = res.seconds;
    r->parts[0] += res.scan_seconds;
    r->parts[1] += res.frontier_seconds;
    r->parts[2] += res.top_down_seconds;
    r->parts[3] += res.seconds;
    r->nedges[k] = (double)res.edges;
    r->teps[k] = res.edges / res.seconds;
    r->inv_sum += 1 / r->teps[k];
    if (bad) {
        r->failures++;
        if (why[0])
            fprintf(stderr, "bfs: rank %d: root %llu: %s\n", a->rank, (unsigned long long)root,
                    why);
    }
    if (a->rank == 0 && !o->quiet) {
        char visits[48] = ""; /* re-visits only happen in the label-correcting search */
        if (o->bfs.algorithm == CR_BFS_ASYNC)
            snprintf(visits, sizeof visits, ", %.2f visits per vertex",
                     (double)res.visits / (double)res.reached);
        if (o->bfs.algorithm == CR_BFS_HYBRID)
            snprintf(visits, sizeof visits, ", %d bottom-up", res.bottom_up_levels);
        printf("  search %2d from %llu: %llu vertices, %llu edges, %d levels, %.4f s, "
               "%.2f M TEPS%s, %s\n", k + 1, (unsigned long long)root,
               (unsigned long long)res.reached, (unsigned long long)res.edges, res.levels,
               res.seconds, r->teps[k] / 1e6, visits,
               !r->checked ? "not validated" : bad ? "INVALID" : "valid");
    }
    cr_graph_bfs_result_free(&res);
}

/* The mailbox's peak against the bound of docs/flow_control.md for the deepest handler
 * chain the searches made (each rank its own), the fullest rank's, on rank 0. */
static void report_memory(const app *a, const bfs_run *r)
{
    cr_stats s;
    cr_stats_get(r->comm, &s);
    uint64_t bound = cr_memory_bound(r->comm, (unsigned)s.deepest_generation);
    double mem[4] = {(double)s.peak_memory_bytes, bound == UINT64_MAX ? 1e300 : (double)bound,
                     (double)s.deepest_generation,
                     bound == UINT64_MAX ? 1e300 : (double)s.peak_memory_bytes / (double)bound},
           mem_max[4];
    MPI_Reduce(mem, mem_max, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (a->rank != 0)
        return;
    if (mem_max[1] >= 1e300)
        printf("  mailbox memory per rank (max, searches and validations): peak %.1f KiB; no "
               "bound (docs/flow_control.md): %s\n", mem_max[0] / 1024,
               r->cfg.flow == CR_FLOW_WAITS
                   ? "under COURIER_FLOW=waits a handler that is not reentrant sent"
                   : "handler chains reached the 16 generations Courier tells apart");
    else
        printf("  mailbox memory per rank (max, searches and validations): peak %.1f KiB, "
               "bound %.1f KiB for handler chains %.0f deep; the fullest rank at %.2f of "
               "its own bound\n",
               mem_max[0] / 1024, mem_max[1] / 1024, mem_max[2], mem_max[3]);
}

/* The summary lines and the CSV line, after every search. */
static void report(const app *a, const options *o, bfs_run *r)
{
    int nroots = r->nroots;
    double hmean = nroots / r->inv_sum;
    double med = app_median(r->teps, nroots), lo = r->teps[0], hi = r->teps[nroots - 1];
    cr_stats s;
    cr_stats_get(r->comm, &s);
    uint64_t sends = s.mpi_sends, sends_max;
    MPI_Reduce(&sends, &sends_max, 1, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    long rss = ru.ru_maxrss, rss_max = 0, rss_job = 0;
    MPI_Reduce(&rss, &rss_max, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&rss, &rss_job, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (a->rank == 0) {
        if (r->checked)
            printf("  validation: %d of %d searches valid\n", nroots - r->failures, nroots);
        else
            printf("  validation: none (--validate=no)\n");
        printf("  TEPS: harmonic mean %.2f M, min %.2f M, median %.2f M, max %.2f M\n",
               hmean / 1e6, lo / 1e6, med / 1e6, hi / 1e6);
        double total_time = 0;
        for (int k = 0; k < nroots; k++)
            total_time += r->times[k];
        printf("  time per search: mean %.6f s\n", total_time / nroots);
    }
    if (o->phase_times && o->bfs.algorithm == CR_BFS_HYBRID) {
        double slowest[4];
        MPI_Reduce(r->parts, slowest, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (a->rank == 0)
            printf("  parts of a search (ms, mean over searches, the slowest rank's): bottom-up "
                   "scans %.3f, frontier bitmaps %.3f, top-down levels %.3f; whole search "
                   "%.3f\n", 1e3 * slowest[0] / nroots, 1e3 * slowest[1] / nroots,
                   1e3 * slowest[2] / nroots, 1e3 * slowest[3] / nroots);
    }
    if (a->rank == 0)
        printf("  MPI sends per rank (max, all searches and validations): %llu; peak memory per "
               "rank %.1f MiB, of the job %.1f MiB (every rank's summed)\n",
               (unsigned long long)sends_max, rss_max / 1024.0, rss_job / 1024.0);
    report_memory(a, r);
    if (a->rank == 0 && r->csv) {
        fprintf(r->csv, "%d,%s,%d,%g,%s,%zu,%d,%.1f,%.1f,%.1f,%llu,%.1f,%d,%s\n", a->size,
                o->sh.graph ? o->sh.graph : generators[o->sh.gen.kind], o->sh.gen.scale,
                o->sh.gen.edgefactor, r->route_name, r->cfg.buffer_bytes, nroots, hmean, lo, hi,
                (unsigned long long)sends_max, rss_max / 1024.0, r->failures == 0,
                algorithms[o->bfs.algorithm]);
        fclose(r->csv);
    }
}

/* --graph500-output: the reference's result block, for a valid run. */
static void report_graph500(const app *a, const options *o, const bfs_run *r)
{
    if (!o->graph500_output || a->rank != 0)
        return;
    if (r->failures) {
        printf("No results printed for invalid run.\n");
        return;
    }
    uint64_t nv = cr_graph_vertices(r->g);
    int scale = 0;
    while (scale < 63 && (1ull << scale) < nv)
        scale++;
    g500_run run = {.scale = o->sh.graph ? scale : o->sh.gen.scale,
                    .edgefactor = o->sh.graph ? (int)((r->input_edges + nv / 2) / nv)
                                              : (int)o->sh.gen.edgefactor,
                    .nbfs = r->nroots, .ranks = a->size, .generation = r->t_gen,
                    .construction = r->t_build, .time = r->times, .nedge = r->nedges,
                    .validate = r->validate_times};
    printf("\n");
    g500_print(&run);
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "bfs", usage, &argc, &argv);
    options o = {0};
    parse(&a, argc, argv, &o);
    bfs_run r = {0};
    build_graph(&a, &o, &r);
    choose_roots(&a, &o, &r);
    cr_stats_reset(r.comm);
    for (int k = 0; k < r.nroots; k++)
        search(&a, &o, &r, k);
    report(&a, &o, &r);
    report_graph500(&a, &o, &r);
    if (o.sh.stats)
        cr_stats_print(r.comm, stdout);
    free(r.roots);
    free(r.teps), free(r.times), free(r.nedges), free(r.validate_times);
    cr_graph_destroy(r.g);
    app_comm_destroy(r.comm);
    MPI_Finalize();
    return r.failures ? 1 : 0;
}
