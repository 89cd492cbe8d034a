/* Collective schedules as data, built without MPI so they can be checked
 * by simulation in unit tests and run by one generic split-phase executor.
 *
 * A schedule is one rank's program: a list of rounds. In each round the rank posts all
 * of the round's sends and receives at once (sends read their slot as it is at the
 * start of the round), waits for all of them, then runs the round's local
 * operations in order. Messages between two ranks match in the order they are
 * posted, as MPI's non-overtaking rule guarantees on one communicator and tag.
 *
 * Allreduce schedules work on slots, each one vector of the reduction's elements: slot 0
 * holds the rank's input, `result` names the slot with the answer. Allgather schedules
 * move whole blocks, block b being rank b's contribution. */
#ifndef COURIER_COLL_SCHEDULE_H
#define COURIER_COLL_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

/* a mod p in [0, p), for rank arithmetic with negative offsets */
static inline int cr_schedule_mod(long a, int p)
{
    long r = a % p;
    return (int)(r < 0 ? r + p : r);
}

/* ---------------------------------------------------------------- allreduce */

typedef enum cr_red_opcode {
    CR_RED_SEND,    /* send slot a to peer */
    CR_RED_RECV,    /* receive from peer into slot dst */
    CR_RED_COPY,    /* slot dst = slot a */
    CR_RED_COMBINE, /* slot dst = slot a (first operand) combined with slot b */
} cr_red_opcode;

typedef struct cr_red_op {
    uint8_t code;
    int16_t dst, a, b;
    int32_t peer;
} cr_red_op;

typedef struct cr_red_schedule {
    int nslots;
    int result;
    int nrounds;
    int *round_start; /* ops of round r: [round_start[r], round_start[r + 1]) */
    cr_red_op *ops;
    int nops;
    int cap_ops, cap_rounds;
    bool keeps_input; /* no op writes slot 0: the executor may read the input where
                         the caller holds it instead of copying it */
} cr_red_schedule;

typedef enum cr_allreduce_algo {
    CR_SCHEDULE_AR_TREE,     /* binomial tree: reduce to rank 0, broadcast back */
    CR_SCHEDULE_AR_PAIRWISE, /* butterfly; leftover ranks folded in (paper III.A) */
    CR_SCHEDULE_AR_DISSEM,   /* n-way dissemination adapted for non-idempotent ops (III.B) */
    CR_SCHEDULE_AR_BRUCK,    /* Bruck and Ho's n-port global combine (III.C) */
} cr_allreduce_algo;

/* Build rank `rank`'s schedule among `p` ranks. `n` is the number of ports (peers per
 * round) of the dissemination and Bruck algorithms, ignored by the others.
 * Returns false when the algorithm cannot serve this (p, n): the adapted
 * dissemination exists only for some pairs (see cr_dissem_adaption). */
bool cr_schedule_allreduce(cr_red_schedule *schedule, cr_allreduce_algo algo, int p, int rank, int n);
void cr_red_schedule_free(cr_red_schedule *schedule);

/* Broadcast slot 0 from rank 0 over a binomial tree (ceil(log2 p) rounds): the
 * executor appends it where an algorithm's results may differ in rounding. */
void cr_schedule_bcast(cr_red_schedule *schedule, int p, int rank);

/* The last round of the n-way dissemination for p ranks (paper III.B, our
 * formulation): after k-1 rounds every rank holds the combination of m = (n+1)^(k-1)
 * consecutive inputs ending at its own. In round k it receives `full` such blocks
 * whole and, if rest > 0, one partial block: the sender sends a partial result of
 * its newest `send_len` inputs, and the receiver leaves its own newest `drop_len`
 * inputs out of the final combination, so that full * m + m + send_len - drop_len
 * == p and every input is counted once. Lengths are partial results a rank builds
 * anyway (1, or (j+1)(n+1)^(l-1) after j blocks of round l). */
typedef struct cr_dissem_adaption {
    int rounds;   /* k */
    int block;    /* m */
    int full;     /* whole blocks received in the last round */
    int rest;     /* inputs still missing after them */
    int send_len; /* b: the partial block's length (0 when rest == 0) */
    int drop_len; /* d: the receiver's newest inputs left out (0: none) */
} cr_dissem_adaption;

/* Find the adaption for (p, n) with the smallest drop_len. False if none exists. */
bool cr_dissem_adaption_for(int p, int n, cr_dissem_adaption *out);

/* Smallest n in [1, max_n] for which the adapted dissemination exists for p, or 0. */
int cr_dissem_smallest_n(int p, int max_n);

/* ---------------------------------------------------------------- allgather */

typedef struct cr_ag_xfer {
    bool send;   /* send to peer, or receive from peer */
    int32_t peer;
    int32_t first; /* blocks: schedule->blocks[first, first + count) */
    int32_t count;
} cr_ag_xfer;

typedef struct cr_ag_schedule {
    int nrounds;
    int *round_start; /* xfers of round r: [round_start[r], round_start[r + 1]) */
    cr_ag_xfer *xfers;
    int nxfers;
    int32_t *blocks; /* block indices (owner ranks) of every transfer */
    int nblocks;
    int cap_xfers, cap_rounds, cap_blocks;
} cr_ag_schedule;

typedef enum cr_allgather_algo {
    CR_SCHEDULE_AG_RING,
    CR_SCHEDULE_AG_NEIGHBOR,  /* neighbor exchange: even p only */
    CR_SCHEDULE_AG_RECDOUBLE, /* recursive doubling: p a power of two only */
    CR_SCHEDULE_AG_BRUCK,
    CR_SCHEDULE_AG_SPARBIT,   /* thesis Algorithm 1, section 4.2 */
} cr_allgather_algo;

/* Build rank `rank`'s schedule among `p` ranks; false if the algorithm does not apply
 * to p. The same schedules serve allgatherv: blocks just differ in size. */
bool cr_schedule_allgather(cr_ag_schedule *schedule, cr_allgather_algo algo, int p, int rank);
void cr_ag_schedule_free(cr_ag_schedule *schedule);

/* Sparbit's rule for which distances ignore one block (thesis section 4.2, lines 4
 * and 5 of Algorithm 1): bit d of the result is set when the step with distance d
 * forwards one block fewer. 0 when p is a power of two. */
uint64_t cr_sparbit_ignore_steps(uint64_t p);

#endif
