/* Courier calibrate: the costs of the tuning model (courier/tune.h) measured on the
 * machine in front of it, over the runtime itself (docs/tuning.md, "Calibration").
 * courier-calibrate writes them to the file COURIER_TUNE_FILE names, and
 * COURIER_TUNE=calibrate measures them inside cr_comm_create. */
#ifndef COURIER_CALIBRATE_H
#define COURIER_CALIBRATE_H

#include "courier/mailbox.h"
#include "courier/tune.h"

#include <stdint.h>

/* How long cr_calibrate measures; a field left 0 takes its default. */
#define CR_CALIBRATE_MAX_REPEATS 15
typedef struct cr_calibrate_opts {
    uint64_t hops;    /* messages bounced between two ranks per measurement (2000) */
    uint64_t records; /* records appended and handled per measurement (1M) */
    int repeats;      /* measurements of each figure, the median taken (5; at most
                         CR_CALIBRATE_MAX_REPEATS) */
} cr_calibrate_opts;

/* What cr_calibrate found. */
typedef struct cr_calibration {
    cr_tune_costs costs;  /* what it could not measure keeps cr_tune_costs_default's */
    cr_tune_shape shape;  /* rank 0's node: its processors and ranks */
    int ranks;            /* of the comm measured on */
    int partner_on;       /* the rank measured within rank 0's node, -1 if none */
    int partner_off;      /* ... on another node, -1 if none (the costs between nodes
                             are then the defaults) */
    double sharing;       /* the ranks over the processors of the busiest machine while
                             it measured, at least 1: costs.forward is per unit of it */
} cr_calibration;

/* Measure the costs on the machine in front of it, over the runtime itself
 * (docs/tuning.md, "Calibration"): between rank 0 and the first other rank of its
 * node (and of another node), a stream of 8-byte records each way through 1 KiB and
 * through 64 KiB buffers (alpha: what one more message costs) and a token bounced
 * from handler to handler, small and 64 KiB (beta); a run of 16-byte records rank 0
 * sends itself and handles (append, handle); a stream between ranks 0 and 1 on the
 * direct route and on the hypercube (the difference is route_record). Runs on comms of its own over `comm`, created from `cfg` (NULL: the
 * defaults with the environment) on the direct route with nothing auto, and destroys
 * them; runs their handlers only. Collective over `comm`; every rank gets the same
 * result. COURIER_TUNE=calibrate calls it inside cr_comm_create (200 hops, 50,000
 * records, 3 repeats: a few milliseconds); courier-calibrate with its defaults. */
void cr_calibrate(MPI_Comm comm, const cr_config *cfg, const cr_calibrate_opts *opts,
                  cr_calibration *out);

#endif
