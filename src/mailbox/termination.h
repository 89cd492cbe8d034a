/* Termination detection for cr_barrier: waves of a non-blocking sum (the
 * transport's wave_join / wave_test) over the cumulative counts of data messages
 * sent and handled (see docs/termination.md).
 *
 * The same reduction, with a different `kind`, makes cr_register collective. Every
 * wave sums {kind, a, b, ...}, so if ranks make different calls (one registers while
 * another enters a barrier) the kinds do not add up and the job stops with a message
 * instead of hanging or mixing up the counts. */
#ifndef COURIER_MAILBOX_TERMINATION_H
#define COURIER_MAILBOX_TERMINATION_H

#include "transport/transport.h"

#include <stdbool.h>
#include <stdint.h>

typedef enum cr_wave_kind {
    CR_WAVE_BARRIER = 1,
    CR_WAVE_REGISTER = 2,
    CR_WAVE_DESTROY = 4, /* cr_comm_destroy's barrier: a rank that skipped a cr_barrier
                            meets the others' barrier with it, and the kinds differ
                            (the smallest and the largest kind present always see it) */
} cr_wave_kind;

typedef struct cr_term {
    cr_transport *tp;
    bool joined;             /* this rank has contributed to the current wave */
    uint64_t local[CR_WAVE_WORDS];  /* {kind, a, b, records, bytes, ns, merged} at this
                                       rank's snapshot */
    uint64_t global[CR_WAVE_WORDS]; /* their sums over all ranks */
    uint64_t handled_before; /* global handled count of the previous barrier wave */
    uint64_t wave;           /* waves in the current barrier */
} cr_term;

void cr_term_init(cr_term *t, cr_transport *tp);

/* What a barrier wave tells COURIER_ROUTE=auto's second choice (autotune.c) of the
 * epoch that ends: the records this rank created ever, their payload bytes, and the
 * nanoseconds since the last barrier ended here. Other waves pass zeros. */
typedef struct cr_term_epoch {
    uint64_t records, bytes, ns;
    uint64_t merged; /* records of combining handlers merged into others on their way */
} cr_term_epoch;

/* Contribute {kind, a, b, epoch} to the next wave. For a barrier wave, a and b are
 * this rank's cumulative data messages sent and handled, and the rank must hold no
 * buffered records and have no send in flight. */
void cr_term_join(cr_term *t, cr_wave_kind kind, uint64_t a, uint64_t b,
                  const cr_term_epoch *epoch);

/* Test the current wave. Returns true once it has completed, with global[] filled.
 * Aborts with a message if the ranks did not all join the same kind of wave. */
bool cr_term_test(cr_term *t);

/* After a completed barrier wave: may the barrier end? Updates handled_before. */
bool cr_term_barrier_quiet(cr_term *t);

/* The decision rule, pure for unit tests: wave k's global sent count against the
 * previous wave's global handled count (S_k == R_{k-1}). */
static inline bool cr_term_quiet(uint64_t sent_now, uint64_t handled_before)
{
    return sent_now == handled_before;
}

#endif
