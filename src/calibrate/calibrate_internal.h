/* What the assembly (src/courier.c) calls to calibrate. Not installed. */
#ifndef COURIER_CALIBRATE_INTERNAL_H
#define COURIER_CALIBRATE_INTERNAL_H

#include "courier/calibrate.h"

#include <stdbool.h>

/* Collective: a comm over `comm` with exactly `cfg` (resolved and checked), made
 * without calibrating or warning about the environment. */
typedef cr_comm *(*cr_comm_maker)(MPI_Comm comm, const cr_config *cfg);

/* cr_calibrate with the configuration already resolved and the maker of its comms.
 * Collective over comm. */
void cr_calibrate_run(MPI_Comm comm, const cr_config *cfg, const cr_calibrate_opts *opts,
                      cr_comm_maker maker, cr_calibration *out);

/* COURIER_TUNE=calibrate inside cr_comm_create: a short calibration (200 hops, 50,000
 * records, 3 repeats), its cost of passing on scaled back to this job's sharing of
 * the processors; rank 0 prints what it measured when `print`. Collective. */
cr_tune_costs cr_calibrate_at_creation(MPI_Comm comm, const cr_config *cfg, cr_comm_maker maker,
                                       bool print);

#endif
