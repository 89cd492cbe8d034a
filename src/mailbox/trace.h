/* COURIER_TRACE: a timeline of what the runtime did, in the Chrome trace-event JSON
 * format (Perfetto and chrome://tracing open it), one process track per rank.
 *
 * Each rank writes its events to PATH.rank<R>.part through a 1 MiB buffer, so memory
 * stays bounded however long the run; the part is a complete JSON trace after every
 * write (at a full buffer, a watchdog report, cr_fatal, exit), so an aborted or
 * killed job leaves readable parts; cr_comm_destroy merges the parts into PATH on
 * rank 0 and removes them. Events are per buffer, per wait and per barrier
 * wave, never per record. When COURIER_TRACE is not set, every hook is one test of
 * a NULL pointer. docs/tracing.md lists the events. Not installed. */
#ifndef COURIER_MAILBOX_TRACE_H
#define COURIER_MAILBOX_TRACE_H

#include "transport/transport.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct cr_trace cr_trace;

/* Collective over the transport's ranks: open this rank's part file. Returns NULL
 * when path is empty, or when another comm of this process is already traced (one
 * timeline per process). A part that cannot be created ends the job with one line. */
cr_trace *cr_trace_open(const char *path, cr_transport *tp);
/* Collective: close the part, merge all parts into the path on rank 0, free. */
void cr_trace_close(cr_trace *t);

/* Write what is buffered to the part, which is then a complete JSON trace of its
 * own. Called at the watchdog's reports, by cr_fatal and at exit too. Local; NULL: no-op. */
void cr_trace_flush(cr_trace *t);

/* A user's phase (cr_trace_begin / cr_trace_end): nested, a span each, on a track of
 * its own. Local. */
void cr_trace_phase_begin(cr_trace *t, const char *name);
void cr_trace_phase_end(cr_trace *t);

/* The wait the rank is in (`name` lives as long as the wait), from `start`
 * (cr_trace_now); cr_trace_wait_end when it returns. A wait still open when the job
 * ends (cr_fatal, exit) is written as a span marked "unfinished", as are the user
 * phases still open. Local. */
void cr_trace_wait_begin(cr_trace *t, const char *name, double start);
void cr_trace_wait_end(cr_trace *t);

/* Microseconds since the trace started (the clocks of the ranks are aligned by a
 * barrier at the start). */
double cr_trace_now(const cr_trace *t);

/* An instant event with up to three integer arguments (names NULL = unused). */
void cr_trace_instant(cr_trace *t, const char *name, const char *k1, int64_t v1, const char *k2,
                      int64_t v2, const char *k3, int64_t v3);
/* A complete event from `start` (cr_trace_now) to now, with up to two arguments. */
void cr_trace_span(cr_trace *t, const char *name, double start, const char *k1, int64_t v1,
                   const char *k2, int64_t v2);

#endif
