/* Termination detection for cr_barrier: waves of MPI_Iallreduce over the cumulative
 * counts of data messages sent and handled (see docs/termination.md). */
#ifndef COURIER_NBX_TERMINATION_H
#define COURIER_NBX_TERMINATION_H

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct cr_term {
    MPI_Comm comm;
    MPI_Request req;
    bool joined;               /* this rank has contributed to the current wave */
    uint64_t local[2];         /* {sent, handled} at this rank's snapshot */
    uint64_t global[2];        /* their sums over all ranks */
    uint64_t handled_before;   /* global handled count of the previous wave, R_{k-1} */
    uint64_t wave;             /* waves in the current barrier */
} cr_term;

void cr_term_init(cr_term *t, MPI_Comm comm);

/* Contribute this rank's counters to the next wave. Only call when the rank holds no
 * buffered records and has no send in flight. */
void cr_term_join(cr_term *t, uint64_t sent, uint64_t handled);

/* Test the current wave. Returns true once it has completed; then *quiet tells
 * whether the barrier may end (S_k == R_{k-1}) or needs another wave. */
bool cr_term_test(cr_term *t, bool *quiet);

/* The decision rule, pure for unit tests: wave k's global sent count against the
 * previous wave's global handled count. */
static inline bool cr_term_quiet(uint64_t sent_now, uint64_t handled_before)
{
    return sent_now == handled_before;
}

#endif
