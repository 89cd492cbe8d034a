/* Courier tune: a cost model that predicts what one epoch (the records sent between
 * two barriers) costs its busiest rank under a route and a buffer size, and picks the
 * cheapest (docs/tuning.md). COURIER_ROUTE=auto and COURIER_BUFFER_SIZE=auto ask a
 * comm to choose this way when it is created.
 *
 * The model charges a rank for its messages (alpha per message, within a node or
 * between nodes), its bytes (beta), and its records: appended at the source,
 * appended again at every rank that forwards them, handled at the destination;
 * records of combining handlers that meet on their way count once (keys_per_dest).
 * It assumes every rank sends alike to every rank (uniform traffic), and it adds the
 * terms: no overlap of sending and handling, so it is an upper bound where the
 * traffic pipelines. The routes are the ones of route.h; the counts of hops and
 * partners come from their routers, so a prediction knows exactly which partners a
 * rank has and how far its records travel.
 *
 * A second form predicts a distributed array's lock-step step over a grid of its
 * own (cr_tune_step_predict), from which the array's route `auto` chooses.
 *
 * Every function is local and pure: it depends on its arguments only, so every rank that calls it with the same arguments gets the same answer, and
 * never runs handlers. Errors (docs/architecture.md): none ends the job; an argument
 * out of range gives -1. */
#ifndef COURIER_TUNE_H
#define COURIER_TUNE_H

#include "courier/route.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What things cost, in seconds. */
typedef struct cr_tune_costs {
    double alpha_on, alpha_off; /* per message within a node, between nodes */
    double beta_on, beta_off;   /* per byte within a node, between nodes */
    double append;              /* per record written into a send buffer (at its source
                                   and again at every rank that forwards it) */
    double handle;              /* per record handled at its destination */
    double route_record;        /* per record appended, more, under a route that forwards
                                   (nr, nlnr, grid, hypercube): its route block written,
                                   read and walked at every hop */
    double forward;             /* per record a rank passes on for another, more than
                                   appending it: taking it from the received buffer,
                                   and what a relay's turn on a shared processor adds
                                   (measured over all ranks at once by courier-calibrate
                                   at 3 ranks or more; 0 otherwise) */
    double slowdown;            /* how much slower each of the above runs because ranks
                                   share processors: the ranks on a machine over its
                                   processors, when above 1 (a property of the job,
                                   not of the machine: not in the calibration file;
                                   0 or 1 = a processor per rank) */
} cr_tune_costs;

/* The defaults: alpha 2 us between nodes (InfiniBand-class, the scale model's
 * default) and 1 us within one (apps/ring on the development machine), beta 0.1 and
 * 0.2 ns per byte, 10 ns to append a record and 10 ns to handle one, nothing more
 * per record under a route (as the scale model charges; courier-calibrate measures
 * it) (docs/tuning.md); a processor per rank. */
void cr_tune_costs_default(cr_tune_costs *c);

/* ---- calibration (docs/tuning.md, "Calibration") -------------------------------- */

/* The machine a calibration describes. */
typedef struct cr_tune_shape {
    int processors;     /* processors online on one node */
    int ranks_per_node; /* ranks that shared a node while it was measured */
    int machine_ranks;  /* ranks that shared the node's processors while it was measured
                           (MPI's shared-memory node, whatever COURIER_NODE_SIZE says;
                           0: not known) */
} cr_tune_shape;

/* The format of the calibration file this library reads and writes. */
#define CR_TUNE_FILE_VERSION 3

/* The most calibrations one file holds (one per job shape, docs/tuning.md,
 * "Calibration"). */
#define CR_TUNE_FILE_MOST 16

/* This node's shape: its processors online, and `ranks_per_node` as given
 * (machine_ranks 0: the caller knows it). Local. */
void cr_tune_shape_here(cr_tune_shape *s, int ranks_per_node);

/* Write `c` and `shape` to `path` as the calibration file (text, "key value" lines),
 * replacing whatever the file held. The new file is written beside the old one
 * (PATH.tmp.PID, never through a link) and renamed over it, so a reader or a crash
 * sees the old file or the new, whole; PATH.lock serialises writers. Returns 0, or
 * -1 with one line in err. Local. */
int cr_tune_costs_save(const char *path, const cr_tune_costs *c, const cr_tune_shape *shape,
                       char *err, size_t errlen);

/* Add `c`, measured with `shape`, to the calibration file at `path`: the file keeps
 * its calibrations of other shapes and loses the one of this shape, if it had one;
 * made when missing. Refused, with -1 and one line in err, when the file is there but
 * not a calibration file cr_tune_costs_load would read (whatever the processors), or
 * holds CR_TUNE_FILE_MOST calibrations of other shapes already; the file is then not
 * touched. Written as cr_tune_costs_save writes; the read and the write hold
 * PATH.lock, so calibrations added at once by two jobs both end up in the file.
 * Local. */
int cr_tune_costs_add(const char *path, const cr_tune_costs *c, const cr_tune_shape *shape,
                      char *err, size_t errlen);

/* Read a calibration of the file at `path` into *c (and its shape into *shape, if not
 * NULL). The file holds one calibration or several (one per shape, cr_tune_costs_add);
 * of those measured on nodes of `here->processors` processors, the one nearest
 * `here`'s shape is read: the same `machine_ranks` or the nearest in ratio (twice as
 * many ranks as far as half as many), then the same or nearest `ranks_per_node`, the
 * earlier in the file on a tie; the first when `here` is NULL or its machine_ranks 0.
 * Refused, with -1 and one line in err naming the file (and the line) and the
 * problem: a missing or unreadable file, a calibration of another format version, no
 * calibration measured on nodes of `here`'s processors (not checked when `here` is
 * NULL or says 0), a value missing, given twice, not a number or outside 0 to 1
 * second, an unknown key, a key before the first `courier-tune` line, two
 * calibrations of one shape, more than CR_TUNE_FILE_MOST. Returns 0 otherwise.
 * Local. */
int cr_tune_costs_load(const char *path, const cr_tune_shape *here, cr_tune_costs *c,
                       cr_tune_shape *shape, char *err, size_t errlen);

/* The traffic of an epoch: every rank sends `records_per_dest` records of
 * `record_bytes` payload bytes to every other rank. When the records merge on
 * their way (combining handlers, docs/dedup.md), `keys_per_dest` says how many
 * distinct keys those to one destination draw from: at a rank where the records of
 * s sources for one destination meet, s * records_per_dest draws keep
 * keys_per_dest * (1 - exp(-s * records_per_dest / keys_per_dest)) records (the
 * expected distinct ones). 0: nothing merges. */
typedef struct cr_tune_traffic {
    double records_per_dest;
    size_t record_bytes;
    double keys_per_dest;
} cr_tune_traffic;

/* What a rank does in an epoch under one configuration, and what it costs. */
typedef struct cr_tune_prediction {
    cr_route route;
    size_t buffer_bytes;  /* the buffer asked for */
    double partners;      /* ranks this rank sends to (off_node of them on other nodes) */
    double off_node;
    double mean_hops;     /* hops a record takes, on average */
    double messages;      /* buffers this rank sends */
    double records;       /* records it appends: its own and those it forwards */
    double arriving;      /* records that reach it as their destination (fewer than
                             it sends when they merge on their way) */
    double seconds;       /* the predicted time */
} cr_tune_prediction;

/* Predict an epoch of `t` on `layout` under `route` with send buffers of
 * `buffer_bytes` and all of a rank's buffers held to `cap_bytes` (COURIER_BUFFER_CAP:
 * a buffer goes out at min(buffer_bytes, cap_bytes / partners)). The rank predicted
 * is the busiest of a sample (the first rank, the middle one and the last). Returns
 * 0, or -1 when the route cannot serve the layout or an argument is out of range.
 * Local. */
int cr_tune_predict(const cr_layout *layout, const cr_route *route, size_t buffer_bytes,
                    size_t cap_bytes, const cr_tune_traffic *t, const cr_tune_costs *c,
                    cr_tune_prediction *out);

/* The keys per destination (cr_tune_traffic.keys_per_dest) that explain an epoch
 * in which each rank sent `records_per_dest` records to every other rank under
 * `route` and `merged_per_rank` of them merged on their way (at their sources and
 * at the ranks that forwarded them): the value for which the model predicts that
 * many merges, found by bisection. 0 when nothing merged; the fewest keys the
 * search allows when everything did. -1 when the route cannot serve the layout.
 * Local, pure. */
double cr_tune_keys_per_dest(const cr_layout *layout, const cr_route *route,
                             double records_per_dest, double merged_per_rank);

/* The buffer sizes `auto` chooses among. */
#define CR_TUNE_NBUFFERS 4
extern const size_t cr_tune_buffer_sizes[CR_TUNE_NBUFFERS]; /* 1, 4, 16 and 64 KiB */

/* Choose the cheapest configuration: over the routes direct, nr, nlnr, grid (two
 * dimensions from P) and hypercube when `route` is NULL, else that route alone; over
 * cr_tune_buffer_sizes when `buffer_bytes` is 0, else that size alone. A prediction
 * within 1% of the best counts as a tie: the smaller buffer wins it, then the earlier
 * route of that list. Every configuration tried is written to table[0 .. n) (at most
 * 5 * CR_TUNE_NBUFFERS), in that order; *ntable says how many. Returns the index of
 * the chosen one in the table, or -1 when nothing could be predicted. Local. */
int cr_tune_choose(const cr_layout *layout, const cr_route *route, size_t buffer_bytes,
                   size_t cap_bytes, const cr_tune_traffic *t, const cr_tune_costs *c,
                   cr_tune_prediction *table, int *ntable);

/* The same over several epochs: each configuration's prediction (its time, messages
 * and records) summed over the ntraffic epochs of t[], and the configuration that
 * costs least over all of them, with the same ties. Local. */
int cr_tune_choose_over(const cr_layout *layout, const cr_route *route, size_t buffer_bytes,
                        size_t cap_bytes, const cr_tune_traffic *t, int ntraffic,
                        const cr_tune_costs *c, cr_tune_prediction *table, int *ntable);

/* The epochs the second choice weighs together: the last this many. A program whose
 * epochs alternate between light and heavy (a BFS's levels) is judged on the mix,
 * not moved back and forth. */
#define CR_TUNE_WINDOW 4

/* The second choice (docs/tuning.md): a comm with `auto` moves after a barrier only
 * when the model predicts that the best configuration for the epoch that ended saves
 * more than this part of the current one's predicted time. */
#define CR_TUNE_SWITCH_GAIN 0.10

/* Whether to move from a configuration predicted at `current` seconds per epoch to one
 * predicted at `best`, when the move itself costs `move` seconds once: only if it saves
 * more than CR_TUNE_SWITCH_GAIN of `current` and more than `move`. Local, pure. */
bool cr_tune_worth_switching(double current, double best, double move);

/* ---- the distributed array's lock-step steps (docs/tuning.md, "Lock-step") ---- */

/* A lock-step step of a distributed array (courier/darray.h): every rank's requests,
 * sent along the dimensions of a grid one exchange per dimension, merged at every
 * hop when `merged`, and, for reads, answered back the same way. */
typedef struct cr_tune_step {
    double requests;      /* of all ranks together */
    double distinct;      /* distinct indices among them (an estimate will do) */
    size_t request_bytes; /* a request's bytes in an exchange */
    size_t reply_bytes;   /* a reply's bytes on its way back; 0 for writes */
    bool merged;          /* requests for one index merge at every hop (hash, sort) */
} cr_tune_step;

/* Predict a step of `t` on `layout` over the grid `dims[0 .. ndims)` (most
 * significant first, multiplying to the layout's ranks; direct is the one dimension
 * P): the seconds a rank spends on it. Requests are taken as drawn at random from
 * `distinct` indices spread evenly over the owners, the same number from every rank:
 * at dimension d a rank holds the requests of the g ranks the exchanges before it
 * gathered for 1/g of the indices, which merging reduces to the distinct ones among
 * them. Each dimension costs a message per partner that gets records (and one back
 * for reads), their bytes, `append` per record written into a segment; each record
 * reaching its owner costs `handle`. A dimension whose partners are on other nodes is
 * charged alpha_off and beta_off. Returns -1 when the arguments do not fit (dims not
 * multiplying to the ranks, a negative count). Local, pure. */
double cr_tune_step_predict(const cr_layout *layout, const int *dims, int ndims,
                            const cr_tune_step *t, const cr_tune_costs *c);

#ifdef __cplusplus
}
#endif

#endif
