/* Dispatch (dispatch.c): walking received buffers, for the flow policies
 * (flow_waits.c, flow_deep_held.c), which decide when and how much to walk. */
#ifndef COURIER_MAILBOX_DISPATCH_H
#define COURIER_MAILBOX_DISPATCH_H

#include "mailbox/mailbox_internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Received buffers taken per poll under either policy, so sends and timers are not
 * starved. */
#define CR_RECV_BUDGET 16

/* Records from `from` on of one run from rank src: handled, or passed on. Returns how
 * far the walk got (run->count unless the policy stopped it). Runs handlers. */
size_t cr_walk_run(cr_comm *c, int src, const cr_run_view *run, size_t from);

/* Walk the runs of buf[0, len) from rank src where they lie, until a run is left
 * unfinished or `more`, asked before each run after the first with that run's
 * generation, says to stop there. Returns the offset of the
 * first run not handled to its end (len when all were), with its records handled in
 * *done. Records for other ranks are re-buffered towards their next hop before the
 * buffer counts as handled, which keeps the barrier's counts exact
 * (docs/routing.md). Runs handlers. */
size_t cr_walk_buffer(cr_comm *c, int src, const char *buf, size_t len,
                      bool (*more)(const cr_comm *c, unsigned next_gen), size_t *done);

/* A buffer handled to its end counts for the barrier, and as one "handle" span of
 * the trace since `traced`, with the records handled since `handled_before`. */
void cr_buffer_handled(cr_comm *c, int src, double traced, uint64_t handled_before);

/* A buffer of len bytes from src whose record at offset off runs past its end: ends
 * the job (cr_fatal). */
void cr_corrupt_buffer(size_t len, int src, size_t off);

#endif
