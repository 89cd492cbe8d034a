/* Courier: an asynchronous mailbox runtime for MPI. Include this header to get
 * every public module. */
#ifndef COURIER_H
#define COURIER_H

#include "courier/coll.h"
#include "courier/container.h"
#include "courier/darray.h"
#include "courier/dedup.h"
#include "courier/graph.h"
#include "courier/io.h"
#include "courier/mailbox.h"
#include "courier/nbx.h"
#include "courier/plan.h"
#include "courier/rng.h"
#include "courier/types.h"
#include "courier/route.h"
#include "courier/sim.h"
#include "courier/sort.h"
#include "courier/spmat.h"
#include "courier/tune.h"
#include "courier/calibrate.h"

#endif
