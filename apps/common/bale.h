/* The flags of bale's matrix applications (its "standard graph options"), shared by
 * apps/transpose_matrix and apps/permute_matrix: the Erdős–Rényi matrix they start
 * from (cr_spmat_erdos_renyi) and the trials. */
#ifndef COURIER_APPS_BALE_H
#define COURIER_APPS_BALE_H

#include "cli.h"

#include <courier.h>

#include <getopt.h>
#include <stdbool.h>

typedef struct bale_matrix_args {
    cr_spmat_er g;
    uint64_t per_rank, total;
    int reps;
    bool takes_alg; /* the app takes -a (triangles) */
    int alg;
} bale_matrix_args;

#define BALE_MATRIX_SHORT "n:N:z:e:dlwFs:"
#define BALE_MATRIX_LONG                                                                  \
    {"per-rank", required_argument, 0, 'n'}, {"total", required_argument, 0, 'N'},       \
        {"nz-per-row", required_argument, 0, 'z'},                                       \
        {"edge-prob", required_argument, 0, 'e'}, {"directed", no_argument, 0, 'd'},     \
        {"loops", no_argument, 0, 'l'}, {"weighted", no_argument, 0, 'w'},               \
        {"flat", no_argument, 0, 'F'}, {"seed", required_argument, 0, 's'},              \
        {"reps", required_argument, 0, 'r'}
#define BALE_MATRIX_USAGE                                                                \
    "  -n, --per-rank ROWS   rows per rank (default 500000, bale's; K, M, G suffixes)\n" \
    "  -N, --total TOTAL     rows in all instead\n"                                      \
    "  -z, --nz-per-row NZ   average entries per row (default 10)\n"                     \
    "  -e, --edge-prob PROB  the probability of each entry instead of -z\n"              \
    "  -d, --directed        a directed graph's matrix (default: its lower triangle)\n"  \
    "  -l, --loops           a diagonal entry in every row\n"                            \
    "  -w, --weighted        values uniform in (0, 1]\n"                                 \
    "  -F, --flat            the Erdős–Rényi (flat) model: the only one, the default\n"  \
    "  -s, --seed S          the matrix's seed (default 1)\n"                            \
    "  --reps R              trials (default 3)\n"                                       \
    "  --route R, --node-size K, --buffer-kb K   the mailbox's route, virtual nodes\n"   \
    "                        and buffer size\n"

/* Local: bale's defaults. */
void bale_matrix_init(bale_matrix_args *m);
/* Local: take option ch if it is one of the matrix's; false if not. */
bool bale_matrix_option(const app *a, int ch, const char *value, bale_matrix_args *m);
/* Local: every option of argv (bale's, the mailbox's and the common ones), into m
 * and sh; a usage error for any other. */
void bale_matrix_parse(app *a, int argc, char **argv, bale_matrix_args *m, app_shared *sh);
/* Collective, after the app has fixed what it forces: bale_matrix_finish, then the
 * comm the shared flags ask for. */
struct cr_comm *bale_matrix_start(const app *a, bale_matrix_args *m, const app_shared *sh,
                                  double copies);
/* Local, after the options: the rows; a usage error if `copies` copies of the matrix
 * (16 bytes an entry, 24 weighted) need more than the machine's memory. */
void bale_matrix_finish(const app *a, bale_matrix_args *m, double copies);
/* Collective: the matrix, or the job ends with the generator's one line. */
cr_spmat *bale_matrix_make(const app *a, cr_comm *comm, const bale_matrix_args *m);
/* Rank 0, unless quiet: one line saying what the matrix is. */
void bale_matrix_describe(const app *a, const char *name, const cr_spmat *m,
                          const bale_matrix_args *args, bool quiet);

/* The trials' times and verdicts, and the summary line of every bale app. */
typedef struct bale_trials {
    double sum, lo, hi;
    int n;
    bool ok;
} bale_trials;
void bale_trial_done(const app *a, bale_trials *t, double seconds, uint64_t entries, bool valid,
                     bool quiet);
void bale_trials_summary(const app *a, const bale_trials *t, uint64_t entries, bool checked);

#endif
