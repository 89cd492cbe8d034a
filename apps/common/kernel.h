/* What the GAP-kernel apps (sssp, pagerank, tc, bc) share: the graph from a
 * generator or a file, the comm and the distributed graph, the trials' timing, and
 * the gathering that --validate compares on rank 0 with apps/common/reference.c. */
#ifndef COURIER_APPS_KERNEL_H
#define COURIER_APPS_KERNEL_H

#include "cli.h"
#include "reference.h"

#include <courier.h>

/* The flags every kernel app takes besides its own. */
#define KERNEL_LONG_OPTIONS                                                              \
    APP_LONG_SCALE, APP_LONG_EDGEFACTOR, APP_LONG_GENERATOR, APP_LONG_GRAPH, APP_LONG_SEED, \
        APP_LONG_ROUTE, APP_LONG_NODE_SIZE, APP_LONG_BUFFER_KB,                          \
        {"trials", required_argument, 0, 'T'}, {"write-graph", required_argument, 0, 'W'}, \
        APP_LONG_COMMON

/* The usage lines of those flags. */
#define KERNEL_USAGE                                                                     \
    "  --scale S         2^S vertices (default 16)\n"                                   \
    "  --edgefactor E    edges per vertex (default 16)\n"                               \
    "  --generator G     rmat, gnm or rgg (default rmat)\n"                             \
    "  --graph FILE      read the edges instead: text 'u v' or 'u v w' per line (GAP's\n" \
    "                    .el and .wel, SNAP), a Matrix Market coordinate file, Courier\n" \
    "                    binary, or a Graph500 dump FILE.g500\n"                        \
    "  --seed S          seed of the graph and of the sources (default 1)\n"            \
    "  --trials N        runs of the kernel, timed each (default 3)\n"                  \
    "  --route R         the comm's route, as COURIER_ROUTE\n"                          \
    "  --node-size K     virtual nodes of K ranks, as COURIER_NODE_SIZE\n"              \
    "  --buffer-kb K     send buffers of K KiB, as COURIER_BUFFER_SIZE\n"               \
    "  --write-graph F   write the graph's edges to F, 'u v' or 'u v w' per line\n"     \
    "\n"                                                                                 \
    "--validate checks every trial against a sequential run on rank 0, which gathers\n"  \
    "the whole graph (yes; auto: up to 2^22 edges; no, the default: none). --stats\n"    \
    "prints the runtime's counters for the trials; --quiet leaves out the line per\n"    \
    "trial; --csv appends one line for the run.\n"

typedef struct kernel_app {
    app a;
    app_shared sh;
    int trials;
    bool validate;        /* --validate, decided once the graph's size is known */
    int validate_when;    /* APP_VALIDATE_* as given (default no) */
    FILE *csv;            /* --csv, on rank 0 */
    const char *write_graph;
    cr_edge_list edges;   /* this rank's edges, until the graph is built */
    uint64_t total_edges; /* over all ranks */
    cr_comm *comm;
    cr_graph *g;
    ref_graph ref;        /* --validate: the whole graph, on rank 0 */
    bool gathered;        /* ref holds it */
    double peak;          /* the largest resident set after the first trial, MiB */
    double peak_job;      /* every rank's resident set after the first trial, summed */
} kernel_app;

/* The defaults; then the app's getopt loop hands each option it does not know to
 * kernel_option. */
void kernel_init(kernel_app *k, const char *name, const char *usage, int *argc, char ***argv);
/* The shared flags (and the app's unknown ones: a usage error). */
void kernel_option(kernel_app *k, int ch, const char *value, char **argv);
/* After the loop: leftover words, and a generated graph that must fit. */
void kernel_parsed(kernel_app *k, int argc, char **argv);
/* Generate or read the edges (weighted asks the generator for weights), write them
 * with --write-graph, create the comm and build the simple graph (cr_graph_simplify,
 * as GAP's builder). Collective. */
void kernel_load(kernel_app *k, bool weighted);
/* After each trial's kernel, before its check: the first notes the peak memory, and
 * with --validate gathers the whole graph on rank 0 into ref (from the graph's own
 * lists: the multigraph the kernels saw). Collective. */
void kernel_trial_done(kernel_app *k);
/* Sources for sssp and bc: vertices drawn from the seed, each with an edge, the same
 * on every rank; how many (fewer when the graph has few vertices with edges). */
int kernel_sources(kernel_app *k, uint64_t salt, int want, uint64_t *sources);
/* Gather every rank's per-vertex doubles on rank 0 (all: n entries there, NULL
 * elsewhere). Collective. */
void kernel_gather(kernel_app *k, const double *mine, double *all);
/* Whether the line of each trial is printed: on rank 0, without --quiet. Local. */
static inline bool kernel_trial_lines(const kernel_app *k)
{
    return k->a.rank == 0 && !k->sh.quiet;
}
/* Rank 0's verdict on a check (1: it failed), on every rank. Collective. */
int kernel_verdict(const kernel_app *k, int bad);
/* The first v with got[v] != want[v] beyond rel * max(|want[v]|, floor), or
 * UINT64_MAX when there is none (equal infinities agree). Local. */
uint64_t kernel_first_difference(const double *got, const double *want, uint64_t n, double rel,
                                 double floor);
/* Print each trial's time, their mean (GAP's statistic: every trial, the first with
 * its one-time set-up included) and median, the peak memory per rank and of the whole
 * job and, when asked, the validation's verdict; free everything; returns the exit status. Collective. */
int kernel_finish(kernel_app *k, const double *seconds, int failures);

#endif
