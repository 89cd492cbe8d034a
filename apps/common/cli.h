/* Command-line helpers shared by the apps: every rank parses the same arguments and
 * reaches the same verdict; rank 0 alone prints. */
#ifndef COURIER_APPS_CLI_H
#define COURIER_APPS_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdnoreturn.h>

#include <courier.h>
#include <getopt.h>

typedef struct app {
    const char *name;  /* program name used in messages */
    const char *usage; /* full --help text */
    int rank;
    int size;
    int progress; /* print progress lines (app_progress): stderr is a terminal, or
                     --progress was given */
} app;

/* MPI_Init and fill in rank and size. */
void app_init(app *a, const char *name, const char *usage, int *argc, char ***argv);

/* Print "<name>: <message>" and a hint to use --help on rank 0, then exit with 2 on
 * every rank. Call it from all ranks (they all parse the same arguments). */
noreturn void app_usage_error(const app *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* getopt_long returned '?' or ':': a usage error naming the unknown option or the
 * option that lacks its value (not the program path). Call it from all ranks. */
noreturn void app_bad_option(const app *a, char **argv);

/* Print "<name>: <message>" on rank 0 and exit with 1 on every rank. Call it from
 * all ranks with the same message (a condition every rank sees alike). */
noreturn void app_error(const app *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Collective: each rank passes its own error, or NULL. If any rank has one, the
 * lowest such rank prints "<name>: <error>" (one line, once) and every rank exits
 * with 1; otherwise it returns. For errors one rank can detect alone (its block of
 * a file, its allocation), so that no rank is left waiting for another. */
void app_agree(const app *a, const char *err);

/* calloc for the apps: on failure, end the job with one line naming `what` and the
 * size (local; the job ends through MPI_Abort). */
void *app_calloc(const app *a, size_t count, size_t size, const char *what);

/* For a large array that is filled at once: malloc-like memory (free() frees it, not
 * zeroed from 1 MiB up), 2 MiB-aligned with huge pages asked for, so that touching it
 * the first time costs a few page faults instead of one per 4 KiB; the same policy as
 * the library's large buffers. Failure ends the job as app_calloc's does. Local. */
void *app_alloc_large(const app *a, size_t count, size_t size, const char *what);

/* This machine's physical memory in bytes (0 if unknown). The kernel overcommits, so
 * a successful calloc is no proof that the memory exists: compare with this first. */
double app_physical_memory(void);

/* Collective, for a graph read from a file (`path`), whose vertex ids are used as
 * they are: its vertex count, 1 + the largest id any rank saw (`seen` is this rank's
 * 1 + largest id), or `given` (--vertices) when not 0. `edges` is the edge count over
 * all ranks. Ends the job with one line, before anything is allocated, when the graph
 * has no vertices, when an id is not below `given`, when the ids are so sparse that
 * one would make over 64 times as many vertices as edges (above 2^20), or when the
 * vertices need more than this machine's memory at `bytes_owned` per vertex a rank
 * owns plus `bytes_all` per vertex of the whole graph. */
/* The same rules without ending the job: the one-line refusal (in buf), or NULL, for
 * the whole graph's vertex count n. Local. */
const char *app_vertices_refusal(const app *a, const char *path, uint64_t n, uint64_t edges,
                                 uint64_t given, double bytes_owned, double bytes_all,
                                 char *buf, size_t len);
uint64_t app_file_vertices(const app *a, const char *path, uint64_t seen, uint64_t edges,
                           uint64_t given, double bytes_owned, double bytes_all);

/* One progress line "<name>: <message>" on rank 0's standard error when a->progress
 * is set (stderr is a terminal, or the app's --progress). Local. */
void app_progress(const app *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print the usage on rank 0 and exit with 0 on every rank. */
noreturn void app_help(const app *a);

/* For the apps that work in one process (the models, the planner): under mpirun
 * with more than one rank, a usage error "<what> in one process: start it without
 * mpirun (or with -np 1)". */
void app_require_one_process(const app *a, const char *what);

/* Print "<name>: <message>" on this rank and abort the job (verification failures,
 * I/O errors). */
noreturn void app_fail(const app *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parse an integer option value with an optional binary suffix K, M or G, within
 * [min, max]; a bad value is a usage error naming the flag. */
uint64_t app_parse_u64(const app *a, const char *flag, const char *value, uint64_t min,
                       uint64_t max);

/* Parse a number in [min, max] (NaN and trailing text are errors); a bad value is a
 * usage error naming the flag. */
double app_parse_double(const app *a, const char *flag, const char *value, double min,
                        double max);

/* Parse a value that must be one of `choices` (NULL-terminated); returns its index. */
int app_parse_choice(const app *a, const char *flag, const char *value,
                     const char *const *choices);

/* Parse a comma-separated list of integers as app_parse_u64 does ("8,64,4K") into
 * out[0 .. max_n); returns how many. An empty item or too many items is a usage
 * error naming the flag. */
int app_parse_list(const app *a, const char *flag, const char *value, uint64_t min,
                   uint64_t max, uint64_t *out, int max_n);

struct cr_config;
struct cr_comm;
struct cr_gen_params;

/* The flags several apps share, spelled, ranged and checked the same way in every
 * app. An app lists the ones it accepts in its getopt_long table with the APP_LONG_*
 * entries and hands every option its own switch does not know to app_other_option.
 * Their getopt values lie above every character, so they never meet an app's own. */
enum {
    APP_OPT_SCALE = 0x100, /* --scale N: 2^N vertices */
    APP_OPT_EDGEFACTOR,    /* --edgefactor E: edges per vertex (for rgg, the degree) */
    APP_OPT_GENERATOR,     /* --generator rmat|gnm|rgg */
    APP_OPT_GRAPH,         /* --graph FILE: read the graph instead */
    APP_OPT_SEED,          /* --seed S */
    APP_OPT_ROUTE,         /* --route R (as COURIER_ROUTE) */
    APP_OPT_NODE_SIZE,     /* --node-size K (as COURIER_NODE_SIZE) */
    APP_OPT_BUFFER_KB,     /* --buffer-kb K (as COURIER_BUFFER_SIZE, in KiB) */
    APP_OPT_CSV,           /* --csv FILE */
    APP_OPT_STATS,         /* --stats */
    APP_OPT_PROGRESS,      /* --progress */
    APP_OPT_QUIET,         /* --quiet */
    APP_OPT_VALIDATE,      /* --validate[=no|yes|auto] (or --validate no|yes|auto) */
    APP_OPT_HELP,          /* --help */
};
#define APP_LONG_SCALE {"scale", required_argument, 0, APP_OPT_SCALE}
#define APP_LONG_EDGEFACTOR {"edgefactor", required_argument, 0, APP_OPT_EDGEFACTOR}
#define APP_LONG_GENERATOR {"generator", required_argument, 0, APP_OPT_GENERATOR}
#define APP_LONG_GRAPH {"graph", required_argument, 0, APP_OPT_GRAPH}
#define APP_LONG_SEED {"seed", required_argument, 0, APP_OPT_SEED}
#define APP_LONG_ROUTE {"route", required_argument, 0, APP_OPT_ROUTE}
#define APP_LONG_NODE_SIZE {"node-size", required_argument, 0, APP_OPT_NODE_SIZE}
#define APP_LONG_BUFFER_KB {"buffer-kb", required_argument, 0, APP_OPT_BUFFER_KB}
#define APP_LONG_CSV {"csv", required_argument, 0, APP_OPT_CSV}
#define APP_LONG_STATS {"stats", no_argument, 0, APP_OPT_STATS}
/* The output and check flags every app takes, parsed here, shown by app_help after
 * the app's own text (APP_USAGE_COMMON), in this order. */
#define APP_LONG_COMMON                                                                  \
    APP_LONG_CSV, APP_LONG_STATS, {"progress", no_argument, 0, APP_OPT_PROGRESS},        \
        {"quiet", no_argument, 0, APP_OPT_QUIET},                                        \
        {"validate", optional_argument, 0, APP_OPT_VALIDATE},                            \
        {"help", no_argument, 0, APP_OPT_HELP}
#define APP_USAGE_COMMON                                                                 \
    "\n"                                                                                 \
    "Output and checks (the same flags in every app):\n"                                 \
    "  --csv FILE        append the results to FILE as CSV lines (a header line first\n" \
    "                    when the file is new)\n"                                        \
    "  --stats           print the runtime's counters over all ranks at the end (as\n"   \
    "                    COURIER_STATS=1; the simulated models print theirs in their\n"  \
    "                    tables, the planner runs no comm)\n"                            \
    "  --progress        a line per phase on standard error (the default when it is a\n" \
    "                    terminal)\n"                                                    \
    "  --quiet           the summary only: no line per run, trial or search\n"           \
    "  --validate[=W]    check the results: yes (the flag alone), no, or auto (when it\n" \
    "                    is cheap); where a check costs nothing it is always made\n"     \
    "  --help            this text\n"

/* --validate's values (app_shared.validate). */
enum { APP_VALIDATE_UNSET = -1, APP_VALIDATE_NO = 0, APP_VALIDATE_YES = 1, APP_VALIDATE_AUTO = 2 };

/* The shared flags' values; app_shared_init sets the defaults. */
typedef struct app_shared {
    cr_gen_params gen;          /* --scale, --edgefactor, --generator; --seed in gen.seed */
    const char *graph;          /* --graph, or NULL */
    const char *generator_flag; /* the last generator flag given (--graph contradicts it) */
    uint64_t seed;              /* --seed (also in gen.seed) */
    bool seed_given;
    const char *route;          /* --route, or NULL */
    uint64_t node_size;         /* --node-size, or 0 */
    uint64_t buffer_kb;         /* --buffer-kb, or 0 */
    const char *csv;            /* --csv, or NULL */
    bool stats;                 /* --stats */
    bool quiet;                 /* --quiet */
    int validate;               /* --validate: APP_VALIDATE_*, UNSET when not given */
} app_shared;

/* --validate as given, or the app's default when it was not. */
static inline int app_validate_or(const app_shared *s, int fallback)
{
    return s->validate == APP_VALIDATE_UNSET ? fallback : s->validate;
}

/* The defaults: the library's generator parameters (seed included), nothing else set. */
void app_shared_init(app_shared *s);
/* The default of an app's option switch: a shared flag is parsed into s (--progress
 * into a->progress, --help prints the usage and ends), anything else is a usage error
 * naming the option. */
void app_other_option(app *a, int ch, const char *value, app_shared *s, char **argv);
/* After the options: a word left over is a usage error. */
void app_no_operands(const app *a, int argc, char **argv);
/* After parsing, for apps that generate or read a graph: --graph and a generator
 * flag together are a usage error, and a generated graph must fit (app_graph_check). */
void app_shared_graph_check(const app *a, const app_shared *s);

/* After parsing: a generated graph's scale must suit its generator. */
void app_graph_check(const app *a, const struct cr_gen_params *gen);
/* --route for a lock-step step of the distributed array: parsed, and one of direct,
 * grid and hypercube (`who` names the app's mode in the message). */
void app_lockstep_route(const app *a, const char *value, const char *who);

/* --route VALUE: parse a route as COURIER_ROUTE does into cfg->route; a bad value is a
 * usage error naming the flag. */
void app_parse_route(const app *a, const char *value, struct cr_config *cfg);

/* The runtime flags several apps share; 0 or NULL: not given. */
typedef struct app_comm_flags {
    uint64_t buffer_kb; /* --buffer-kb */
    const char *route;  /* --route */
    uint64_t node_size; /* --node-size */
    bool stats;         /* cr_config.print_stats: the counters at cr_comm_destroy (an
                           app that prints them itself for --stats leaves it false) */
} app_comm_flags;

/* The runtime flags among the shared ones (stats left false). */
static inline app_comm_flags app_shared_comm_flags(const app_shared *s)
{
    return (app_comm_flags){.buffer_kb = s->buffer_kb, .route = s->route,
                            .node_size = s->node_size};
}

/* The defaults, then the COURIER_* variables (a bad one is a usage error), into
 * *cfg: what every app starts its configuration from. Collective (every rank sees
 * the same environment). */
void app_config_from_env(const app *a, struct cr_config *cfg);

/* Create the app's comm on MPI_COMM_WORLD: defaults, then the COURIER_* variables (a
 * bad one is a usage error), then the flags given. What the comm runs is copied to
 * *cfg if cfg is not NULL (with COURIER_ROUTE or COURIER_BUFFER_SIZE auto: the route
 * and buffer size it chose at creation); flags may be NULL. */
struct cr_comm *app_comm_create(const app *a, const app_comm_flags *flags, struct cr_config *cfg);
/* Collective: destroy a comm app_comm_create made. Until then, app_error,
 * app_usage_error and app_agree's error end destroy it before MPI_Finalize. */
void app_comm_destroy(struct cr_comm *comm);

/* Open `path` for appending CSV lines and write `header` (one line, without the
 * newline) if the file is new. Collective: call it from every rank before the work
 * starts; rank 0 opens the file and returns it (the others get NULL). A file that
 * cannot be opened is one line from rank 0 and exit 1 on every rank. path == NULL
 * returns NULL. */
FILE *app_open_csv(const app *a, const char *path, const char *header);

/* --write-graph: open `path` for writing on rank 0 before any work (a path that cannot
 * be opened is one line and exit 1 on every rank); NULL path returns NULL. Collective. */
FILE *app_open_graph_file(const app *a, const char *path);
struct cr_edge_list;
/* Write every rank's edges to `f` (rank 0's, from app_open_graph_file), one edge a
 * line, "u v" or "u v w" with weights, which GAP reads as FILE.el (FILE.wel with
 * weights), rank after rank; closes it. Does nothing when f is NULL on rank 0.
 * Collective. */
void app_write_graph(const app *a, FILE *f, const char *path, const struct cr_edge_list *edges);

/* Seconds from MPI_Wtime, agreed as the maximum over ranks (the slowest rank). */
double app_max_time(double seconds);

/* The largest resident set any rank has had so far, in MiB (getrusage's maximum
 * resident set: the process's peak, not only Courier's). Collective. */
double app_peak_mib(void);

/* The job's memory: every rank's peak resident set summed, in MiB, the figure to set
 * beside a threaded peer's one process. Collective. */
double app_peak_job_mib(void);

/* Median of n doubles (sorts them). */
double app_median(double *v, int n);

#endif
