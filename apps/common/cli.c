#include "cli.h"

#include <courier.h>

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

void app_init(app *a, const char *name, const char *usage, int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    a->name = name;
    a->usage = usage;
    MPI_Comm_rank(MPI_COMM_WORLD, &a->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &a->size);
    /* Progress lines by default only where a person watches: a rank's stderr is a
     * terminal where the launcher gives it one (Open MPI does, from a terminal). */
    int tty = a->rank == 0 && isatty(STDERR_FILENO);
    MPI_Bcast(&tty, 1, MPI_INT, 0, MPI_COMM_WORLD);
    a->progress = tty;
}

void app_progress(const app *a, const char *fmt, ...)
{
    if (!a->progress || a->rank != 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", a->name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    fflush(stderr);
    va_end(ap);
}

/* The comm app_comm_create made and app_comm_destroy has not yet destroyed: an
 * error that ends the job (collectively) destroys it first, so MPI_Finalize does not
 * find it open (and say so). */
static cr_comm *open_comm;

static void destroy_open_comm(void)
{
    if (open_comm) {
        cr_comm *c = open_comm;
        open_comm = NULL;
        cr_comm_destroy(c);
    }
}

/* Rank 0 prints "<name>: <message>" (and the --help hint for usage errors); every
 * rank leaves with `status`. */
static noreturn void end_job(const app *a, int status, const char *fmt, va_list ap)
{
    if (a->rank == 0) {
        fprintf(stderr, "%s: ", a->name);
        vfprintf(stderr, fmt, ap);
        if (status == 2)
            fprintf(stderr, "\nTry '%s --help'.", a->name);
        fputc('\n', stderr);
        fflush(stderr);
    }
    destroy_open_comm();
    MPI_Finalize();
    exit(status);
}

noreturn void app_usage_error(const app *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    end_job(a, 2, fmt, ap);
}

noreturn void app_bad_option(const app *a, char **argv)
{
    /* A long option is the argument getopt has just passed; a short one may sit in
     * the middle of a cluster ("-xy"), where optind has not moved yet. */
    const char *last = argv[optind - 1];
    if (optopt && isprint(optopt) && strncmp(last, "--", 2) != 0)
        app_usage_error(a, "unknown option '-%c'", optopt);
    app_usage_error(a, "unknown or incomplete option '%s'", last);
}

noreturn void app_error(const app *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    end_job(a, 1, fmt, ap);
}

void app_agree(const app *a, const char *err)
{
    int mine = err ? a->rank : a->size, first;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == a->size)
        return;
    if (first == a->rank) {
        fprintf(stderr, "%s: %s\n", a->name, err);
        fflush(stderr);
    }
    destroy_open_comm();
    MPI_Finalize();
    exit(1);
}

double app_physical_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (double)pages * (double)page : 0;
}

const char *app_vertices_refusal(const app *a, const char *path, uint64_t n, uint64_t edges,
                                 uint64_t given, double bytes_owned, double bytes_all,
                                 char *buf, size_t len)
{
    if (n == 0 && !given) {
        snprintf(buf, len, "%s: the graph has no vertices (no edges in the file)", path);
        return buf;
    }
    if (given && n > given) {
        snprintf(buf, len, "%s: vertex id %llu is not below --vertices %llu", path,
                 (unsigned long long)(n - 1), (unsigned long long)given);
        return buf;
    }
    if (given)
        n = given;
    double need = (double)n / a->size * bytes_owned + (double)n * bytes_all;
    if (!given && n > (1u << 20) && n / 64 > edges) {
        snprintf(buf, len, "%s: vertex id %llu makes %llu vertices for %llu edges, about %.1f "
                 "GiB per rank; ids are used as they are, so they must be dense (0 .. n-1): "
                 "relabel the file", path, (unsigned long long)(n - 1), (unsigned long long)n,
                 (unsigned long long)edges, need / (1 << 30));
        return buf;
    }
    double phys = app_physical_memory();
    if (phys > 0 && need * a->size > phys) {
        snprintf(buf, len, "%s: %llu vertices need about %.1f GiB per rank, %.1f GiB on this "
                 "machine's %d ranks, more than its %.1f GiB", path, (unsigned long long)n,
                 need / (1 << 30), need * a->size / (1 << 30), a->size, phys / (1 << 30));
        return buf;
    }
    return NULL;
}

uint64_t app_file_vertices(const app *a, const char *path, uint64_t seen, uint64_t edges,
                           uint64_t given, double bytes_owned, double bytes_all)
{
    uint64_t n;
    MPI_Allreduce(&seen, &n, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    char buf[512];
    const char *refusal = app_vertices_refusal(a, path, n, edges, given, bytes_owned,
                                               bytes_all, buf, sizeof buf);
    if (refusal)
        app_error(a, "%s", refusal);
    return given ? given : n;
}

#ifdef COURIER_APPS_JEMALLOC
/* jemalloc's options for the apps (MALLOC_CONF still overrides them): memory freed is
 * kept for the next allocation instead of being given back to the system. An app
 * builds a graph or a table, frees its construction's buffers and then runs timed
 * trials; given back, those pages would be faulted in afresh by the first trial,
 * and a fresh page is dear on a virtual machine (docs/design-notes.md, "Page
 * faults": the first sssp trial at scale 18 on one rank 0.083 -> 0.065 s). The
 * cost: a process keeps its peak resident size until it ends. */
const char *malloc_conf = "dirty_decay_ms:-1,muzzy_decay_ms:-1,oversize_threshold:0";
#endif

void *app_calloc(const app *a, size_t count, size_t size, const char *what)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        app_fail(a, "out of memory: %s needs %zu x %zu bytes", what, count, size);
    return p;
}

void *app_alloc_large(const app *a, size_t count, size_t size, const char *what)
{
    const size_t huge = (size_t)2 << 20;
    if (count && size > SIZE_MAX / count)
        app_fail(a, "out of memory: %s needs %zu x %zu bytes", what, count, size);
    size_t bytes = count * size;
    void *p = NULL;
    if (bytes < huge / 2)
        return app_calloc(a, count, size, what);
    /* whole huge pages: aligned, rounded up, and asked for (a hint) */
    if (posix_memalign(&p, huge, (bytes + huge - 1) / huge * huge))
        app_fail(a, "out of memory: %s needs %zu x %zu bytes", what, count, size);
#ifdef MADV_HUGEPAGE
    (void)madvise(p, (bytes + huge - 1) / huge * huge, MADV_HUGEPAGE);
#endif
    return p;
}

void app_require_one_process(const app *a, const char *what)
{
    if (a->size != 1)
        app_usage_error(a, "%s in one process: start it without mpirun (or with -np 1)", what);
}

noreturn void app_help(const app *a)
{
    if (a->rank == 0) {
        fputs(a->usage, stdout);
        fputs(APP_USAGE_COMMON, stdout);
    }
    MPI_Finalize();
    exit(0);
}

noreturn void app_fail(const app *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: rank %d: ", a->name, a->rank);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

double app_parse_double(const app *a, const char *flag, const char *value, double min,
                        double max)
{
    char *end;
    errno = 0;
    double v = strtod(value, &end);
    if (end == value || *end || errno == ERANGE || !(v >= min && v <= max))
        app_usage_error(a, "bad value for %s: '%s' (expected a number from %g to %g)", flag,
                        value, min, max);
    return v;
}

uint64_t app_parse_u64(const app *a, const char *flag, const char *value, uint64_t min,
                       uint64_t max)
{
    const char *s = value;
    char *end;
    errno = 0;
    unsigned long long v = isdigit((unsigned char)*s) ? strtoull(s, &end, 10) : 0;
    bool ok = isdigit((unsigned char)*s) && errno != ERANGE;
    if (ok && *end) {
        unsigned shift = 0;
        switch (toupper((unsigned char)*end)) {
        case 'K': shift = 10; break;
        case 'M': shift = 20; break;
        case 'G': shift = 30; break;
        default: ok = false;
        }
        if (ok && (end[1] != '\0' || v > (~0ULL >> shift)))
            ok = false;
        v <<= shift;
    }
    if (!ok || v < min || v > max)
        app_usage_error(a, "bad value for %s: '%s' (expected an integer from %llu to %llu; "
                           "suffixes K, M, G multiply by 2^10, 2^20, 2^30)",
                        flag, value, (unsigned long long)min, (unsigned long long)max);
    return (uint64_t)v;
}

/* The index of `value` among `choices` (NULL-terminated), or -1. */
static int choice_index(const char *value, const char *const *choices)
{
    for (int i = 0; choices[i]; i++)
        if (!strcmp(value, choices[i]))
            return i;
    return -1;
}

int app_parse_choice(const app *a, const char *flag, const char *value,
                     const char *const *choices)
{
    int i = choice_index(value, choices);
    if (i >= 0)
        return i;
    char list[256] = "";
    for (int k = 0; choices[k]; k++) {
        strncat(list, k ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, choices[k], sizeof list - strlen(list) - 1);
    }
    app_usage_error(a, "bad value for %s: '%s' (expected one of: %s)", flag, value, list);
}

double app_max_time(double seconds)
{
    double max;
    MPI_Allreduce(&seconds, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return max;
}

double app_peak_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double mine = (double)ru.ru_maxrss / 1024.0, most; /* ru_maxrss is in KiB */
    MPI_Allreduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return most;
}

double app_peak_job_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double mine = (double)ru.ru_maxrss / 1024.0, sum;
    MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sum;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double app_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void app_config_from_env(const app *a, cr_config *cfg)
{
    cr_config_init(cfg);
    char err[512];
    if (cr_config_from_env(cfg, err, sizeof err))
        app_usage_error(a, "%s", err);
}

cr_comm *app_comm_create(const app *a, const app_comm_flags *flags, cr_config *cfg)
{
    cr_config c;
    app_config_from_env(a, &c);
    if (flags && flags->buffer_kb)
        c.buffer_bytes = (size_t)flags->buffer_kb << 10;
    if (c.buffer_cap_bytes < c.buffer_bytes) { /* as the library does for the environment */
        if (a->rank == 0)
            fprintf(stderr, "%s: warning: the buffer cap (%zu bytes, COURIER_BUFFER_CAP) is "
                    "below --buffer-kb's %zu bytes, which would send every record alone: "
                    "raised to %zu\n", a->name, c.buffer_cap_bytes, c.buffer_bytes,
                    c.buffer_bytes);
        c.buffer_cap_bytes = c.buffer_bytes;
    }
    if (flags && flags->route)
        app_parse_route(a, flags->route, &c);
    if (flags && flags->node_size)
        c.node_size = (unsigned)flags->node_size;
    if (flags && flags->stats)
        c.print_stats = true;
    open_comm = cr_comm_create(MPI_COMM_WORLD, &c);
    if (cfg) /* what the comm runs: with COURIER_ROUTE or COURIER_BUFFER_SIZE auto, its choice */
        *cfg = *cr_comm_config(open_comm);
    return open_comm;
}

void app_comm_destroy(cr_comm *comm)
{
    if (comm == open_comm)
        open_comm = NULL;
    cr_comm_destroy(comm);
}

void app_parse_route(const app *a, const char *value, cr_config *cfg)
{
    char err[256];
    if (cr_route_parse(value, &cfg->route, err, sizeof err))
    {
        const char *reason = strstr(err, "is not valid: ");
        app_usage_error(a, "bad value for --route: '%s' (%s)", value,
                        reason ? reason + strlen("is not valid: ") : err);
    }
}

int app_parse_list(const app *a, const char *flag, const char *value, uint64_t min,
                   uint64_t max, uint64_t *out, int max_n)
{
    char item[64];
    int n = 0;
    const char *s = value;
    for (;;) {
        size_t len = strcspn(s, ",");
        if (len == 0 || len >= sizeof item || n == max_n)
            app_usage_error(a, "bad value for %s: '%s' (expected up to %d comma-separated "
                               "integers from %llu to %llu)",
                            flag, value, max_n, (unsigned long long)min, (unsigned long long)max);
        memcpy(item, s, len);
        item[len] = '\0';
        out[n++] = app_parse_u64(a, flag, item, min, max);
        if (s[len] == '\0')
            return n;
        s += len + 1;
    }
}

FILE *app_open_csv(const app *a, const char *path, const char *header)
{
    if (!path)
        return NULL;
    FILE *out = NULL;
    char err[600] = "";
    if (a->rank == 0) {
        out = fopen(path, "a");
        if (!out)
            snprintf(err, sizeof err, "cannot open --csv file '%s' for appending: %s", path,
                     strerror(errno));
        else if (ftell(out) == 0)
            fprintf(out, "%s\n", header);
    }
    app_agree(a, err[0] ? err : NULL);
    return out;
}

void app_shared_init(app_shared *s)
{
    *s = (app_shared){.validate = APP_VALIDATE_UNSET};
    cr_graph_gen_params_init(&s->gen);
    s->seed = s->gen.seed;
}

/* If `ch` is one of the APP_OPT_* values, act on it (parse `value` into s, --progress
 * into a->progress, --help) and return 1; else return 0. --validate takes its value
 * as --validate=W, or as the next word when that is one of its values ("--validate
 * no"), so that the flag alone means yes. */
static int shared_option(app *a, int ch, const char *value, app_shared *s, char **argv)
{
    static const char *const gens[] = {"rmat", "gnm", "rgg", NULL};
    switch (ch) {
    case APP_OPT_SCALE:
        s->gen.scale = (int)app_parse_u64(a, "--scale", value, 1, 36);
        s->generator_flag = "--scale";
        return 1;
    case APP_OPT_EDGEFACTOR:
        s->gen.edgefactor = app_parse_double(a, "--edgefactor", value, 0.01, 1024);
        s->generator_flag = "--edgefactor";
        return 1;
    case APP_OPT_GENERATOR:
        s->gen.kind = (cr_gen_kind)app_parse_choice(a, "--generator", value, gens);
        s->generator_flag = "--generator";
        return 1;
    case APP_OPT_GRAPH: s->graph = value; return 1;
    case APP_OPT_SEED:
        s->seed = s->gen.seed = app_parse_u64(a, "--seed", value, 0, UINT64_MAX);
        s->seed_given = true;
        return 1;
    case APP_OPT_ROUTE:
        app_parse_route(a, value, &(cr_config){0});
        s->route = value;
        return 1;
    case APP_OPT_NODE_SIZE: s->node_size = app_parse_u64(a, "--node-size", value, 1, 65536); return 1;
    case APP_OPT_BUFFER_KB: s->buffer_kb = app_parse_u64(a, "--buffer-kb", value, 1, 1u << 20); return 1;
    case APP_OPT_CSV: s->csv = value; return 1;
    case APP_OPT_STATS: s->stats = true; return 1;
    case APP_OPT_QUIET: s->quiet = true; return 1;
    case APP_OPT_PROGRESS: a->progress = 1; return 1;
    case APP_OPT_HELP: app_help(a);
    case APP_OPT_VALIDATE: {
        static const char *const whens[] = {"no", "yes", "auto", NULL};
        if (!value && argv[optind] && choice_index(argv[optind], whens) >= 0)
            value = argv[optind++];
        s->validate = value ? app_parse_choice(a, "--validate", value, whens) : APP_VALIDATE_YES;
        return 1;
    }
    default: return 0;
    }
}

void app_other_option(app *a, int ch, const char *value, app_shared *s, char **argv)
{
    if (!shared_option(a, ch, value, s, argv))
        app_bad_option(a, argv);
}

void app_no_operands(const app *a, int argc, char **argv)
{
    if (optind < argc)
        app_usage_error(a, "unexpected argument '%s'", argv[optind]);
}

void app_shared_graph_check(const app *a, const app_shared *s)
{
    if (s->graph && s->generator_flag)
        app_usage_error(a, "%s and --graph conflict: the file gives the graph", s->generator_flag);
    if (!s->graph)
        app_graph_check(a, &s->gen);
}

void app_graph_check(const app *a, const cr_gen_params *gen)
{
    if (gen->kind == CR_GEN_RGG && gen->scale > 26)
        app_usage_error(a, "--scale %d is too large for rgg (at most 26)", gen->scale);
    /* The generated edges (16 bytes each, then both directions in the CSR) and the
     * per-vertex arrays, over all ranks of this machine: refused before generating. */
    double n = ldexp(1.0, gen->scale), m = n * gen->edgefactor;
    double need = m * 48 + n * 64, phys = app_physical_memory();
    if (phys > 0 && need > phys)
        app_usage_error(a, "--scale %d with edge factor %g needs about %.1f GiB for the graph, "
                        "more than this machine's %.1f GiB", gen->scale, gen->edgefactor,
                        need / (1 << 30), phys / (1 << 30));
}

void app_lockstep_route(const app *a, const char *value, const char *who)
{
    cr_route r;
    if (cr_route_parse(value, &r, NULL, 0))
        app_usage_error(a, "bad value for --route: '%s'", value);
    if (r.kind != CR_ROUTE_DIRECT && r.kind != CR_ROUTE_GRID && r.kind != CR_ROUTE_HYPERCUBE)
        app_usage_error(a, "--route %s: %s routes are direct, grid and hypercube", value, who);
}

FILE *app_open_graph_file(const app *a, const char *path)
{
    if (!path)
        return NULL;
    FILE *f = a->rank == 0 ? fopen(path, "w") : NULL;
    char err[600];
    snprintf(err, sizeof err, "cannot open --write-graph file '%s'", path);
    app_agree(a, a->rank == 0 && !f ? err : NULL);
    return f;
}

void app_write_graph(const app *a, FILE *f, const char *path, const cr_edge_list *edges)
{
    int writing = a->rank == 0 && f != NULL;
    MPI_Bcast(&writing, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!writing)
        return;
    if (a->rank == 0)
        fclose(f);
    /* Rank after rank, each appending its own edges. */
    int failed = 0;
    for (int r = 0; r < a->size; r++) {
        if (r == a->rank) {
            FILE *out = fopen(path, "a");
            failed = !out;
            for (size_t k = 0; out && k < edges->count; k++) {
                if (edges->weights)
                    fprintf(out, "%llu %llu %.9g\n", (unsigned long long)edges->edges[k].u,
                            (unsigned long long)edges->edges[k].v, (double)edges->weights[k]);
                else
                    fprintf(out, "%llu %llu\n", (unsigned long long)edges->edges[k].u,
                            (unsigned long long)edges->edges[k].v);
            }
            if (out && fclose(out) != 0)
                failed = 1;
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    char err[600];
    snprintf(err, sizeof err, "%s: writing the graph failed", path);
    app_agree(a, failed ? err : NULL);
}
