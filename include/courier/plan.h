/* Courier plan: a static exchange planner for a communication pattern that repeats.
 *
 * Programs such as a sparse matrix-vector product send the same messages every
 * iteration: rank s sends one message to each rank in its send set. The rank that
 * sends the most messages sets the latency. A plan reroutes some messages through a
 * partner rank, where they are combined with the partner's own message to the same
 * destination, so that the busiest rank sends fewer messages
 * (Duymuş 2021, docs/references.md; docs/plan.md):
 *
 *   CR_PLAN_DIRECT   every message goes straight to its destination;
 *   CR_PLAN_SHARING  the two-phase message sharing of the thesis: phase I pairs the
 *                    busiest rank with the rank sharing the most destinations with it
 *                    (chapter 4), phase II with the least loaded rank (chapter 5);
 *   CR_PLAN_STFW     store-and-forward: every message follows a virtual process
 *                    topology (a k-dimensional grid or the hypercube; the thesis's
 *                    section 3.3 baseline), combined with everything else on each hop.
 *
 * The planner is sequential and local: it needs the whole communication matrix, and
 * gives the same plan on every rank that calls it with the same input. A plan says,
 * for every original message, the ranks it passes through; everything one rank sends
 * to another in one iteration is one combined message (a "link").
 *
 * Errors (docs/architecture.md): a matrix or topology that cannot be planned gives
 * NULL with one line in `err` (they come from data); misuse ends the job.
 */
#ifndef COURIER_PLAN_H
#define COURIER_PLAN_H

#include "courier/route.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A communication matrix in CSR form (thesis 2.2): rank s sends message x, for
 * ptr[s] <= x < ptr[s+1], to rank dest[x] with volume[x] units (NULL: 1 each).
 * Destinations of one rank are strictly increasing and never the rank itself.
 * The caller owns the arrays; the planner copies what it keeps. */
typedef struct cr_plan_matrix {
    int nranks;
    const uint64_t *ptr;     /* nranks + 1 entries; ptr[0] = 0 */
    const int *dest;         /* ptr[nranks] entries */
    const uint64_t *volume;  /* ptr[nranks] entries, or NULL */
} cr_plan_matrix;

typedef enum cr_plan_kind {
    CR_PLAN_DIRECT = 0,
    CR_PLAN_SHARING,
    CR_PLAN_STFW,
} cr_plan_kind;

typedef struct cr_plan_opts {
    cr_plan_kind kind;
    int phases;             /* SHARING: 1 (phase I only) or 2 (default) */
    cr_route topology;      /* STFW: a grid ("grid", "grid:8x8x8") or "hypercube" */
    uint64_t max_iterations; /* SHARING: a bound on the pairings of each phase; 0 = 16 (P + messages) */
    bool cap_search;         /* SHARING: also run phase II with receivers filled only up to a
                                cap, bisected, and keep the best (docs/plan.md); false:
                                exactly the thesis's phase II */
} cr_plan_opts;

/* Defaults: SHARING, two phases with the cap search, STFW on the 2D grid, the
 * default iteration bound. */
void cr_plan_opts_init(cr_plan_opts *opts);

typedef struct cr_plan cr_plan;

/* Local. Check the matrix and make a plan. Returns NULL with a one-line message in
 * err for a malformed matrix (unsorted or repeated destinations, a rank sending to
 * itself, a rank out of range) or a topology that cannot hold nranks ranks. Runs in
 * O(messages + P) memory; the time is in docs/plan.md. Aborts the job if memory runs
 * out. */
cr_plan *cr_plan_create(const cr_plan_matrix *m, const cr_plan_opts *opts, char *err,
                        size_t errlen);
void cr_plan_destroy(cr_plan *plan);

/* What a plan costs, counted from the paths of the messages. */
typedef struct cr_plan_stats {
    double mean_messages;    /* links per rank (combined messages sent), over all ranks */
    uint64_t max_messages;   /* the busiest rank's links */
    int bottleneck;          /* that rank (the lowest such) */
    double mean_volume;      /* units sent per rank, forwarded units included */
    uint64_t max_volume;
    uint64_t links;          /* links in all */
    uint64_t overhead;       /* links from s to t where s had no message of its own for t */
    uint64_t max_hops;       /* longest path of a message, in hops */
    uint64_t iterations;     /* pairings made up to this stage */
} cr_plan_stats;

typedef enum cr_plan_stage {
    CR_PLAN_INITIAL = 0,  /* the matrix as given: every message direct */
    CR_PLAN_PHASE1,       /* SHARING after phase I; the final plan otherwise */
    CR_PLAN_FINAL,        /* the plan made (with the cap search, if asked) */
    CR_PLAN_PHASE2_PLAIN, /* SHARING after the thesis's phase II, without the cap search */
} cr_plan_stage;

/* Local. The statistics of a stage. */
void cr_plan_stats_get(const cr_plan *plan, cr_plan_stage stage, cr_plan_stats *out);

/* Local. The number of ranks and of original messages (the matrix's entries). */
int cr_plan_ranks(const cr_plan *plan);
uint64_t cr_plan_messages(const cr_plan *plan);

/* Local. The path of original message x in the final plan: *ranks points at
 * count ranks, the message's source first and its destination last; the array is
 * the plan's. Returns count (at least 2). */
int cr_plan_path(const cr_plan *plan, uint64_t x, const int **ranks);

/* ---------------------------------------------------------------- schedules */

/* How a plan runs: every hop of every message is a segment; the segments one rank
 * sends another in one iteration form a unit, one MPI message. Normally a unit is a
 * whole link. A relay sends a unit once everything it forwards in it has arrived; if
 * those waits form a cycle, the links on it are sent per hop index instead (counted
 * in splits; docs/plan.md). */
typedef struct cr_plan_segment {
    uint64_t message; /* original message x */
    int hop;          /* path[hop] -> path[hop + 1] */
} cr_plan_segment;

typedef struct cr_plan_unit {
    int from, to;
    int tag;              /* 0 for a whole link, 1 + hop index for a piece */
    uint64_t first, count; /* its segments in cr_plan_schedule_segments() */
} cr_plan_unit;

typedef struct cr_plan_schedule cr_plan_schedule;

/* Local. The schedule of a plan, which must outlive it. Aborts the job if memory
 * runs out. */
cr_plan_schedule *cr_plan_schedule_create(const cr_plan *plan);
void cr_plan_schedule_destroy(cr_plan_schedule *schedule);

/* Local. The units, in an order where every unit comes after the units bringing
 * what it forwards (a rank that sends its units in this order never waits on
 * itself); their segments are ordered by message, then hop. */
uint64_t cr_plan_schedule_units(const cr_plan_schedule *schedule, const cr_plan_unit **units);
const cr_plan_segment *cr_plan_schedule_segments(const cr_plan_schedule *schedule);
/* Units beyond one per link. */
uint64_t cr_plan_schedule_splits(const cr_plan_schedule *schedule);

#ifdef __cplusplus
}
#endif

#endif
