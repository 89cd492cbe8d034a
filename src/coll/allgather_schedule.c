/* Allgather schedules: ring, neighbor exchange, recursive doubling, Bruck and
 * Sparbit (Loch, "Sparbit", master's thesis, section 4.2, Algorithm 1). Block b is
 * rank b's contribution; schedules name blocks by owner, so where a block sits in
 * memory is the executor's business. */
#include "coll/schedule.h"

#include "common/fatal.h"

#include <stdlib.h>
#include <string.h>

static void schedule_init(cr_ag_schedule *p)
{
    memset(p, 0, sizeof *p);
    cr_xgrow((void **)&p->round_start, &p->cap_rounds, 2, sizeof(int));
    p->round_start[0] = 0;
}

void cr_ag_schedule_free(cr_ag_schedule *p)
{
    free(p->round_start);
    free(p->xfers);
    free(p->blocks);
    memset(p, 0, sizeof *p);
}

/* Start a transfer of `count` blocks; fill them in with add_block. */
static void xfer(cr_ag_schedule *p, bool send, int peer)
{
    cr_xgrow((void **)&p->xfers, &p->cap_xfers, p->nxfers + 1, sizeof *p->xfers);
    p->xfers[p->nxfers++] = (cr_ag_xfer){.send = send, .peer = peer, .first = p->nblocks};
}

static void add_block(cr_ag_schedule *p, int block)
{
    cr_xgrow((void **)&p->blocks, &p->cap_blocks, p->nblocks + 1, sizeof *p->blocks);
    p->blocks[p->nblocks++] = block;
    p->xfers[p->nxfers - 1].count++;
}

static void end_round(cr_ag_schedule *p)
{
    if (p->nxfers == p->round_start[p->nrounds])
        return;
    cr_xgrow((void **)&p->round_start, &p->cap_rounds, p->nrounds + 2, sizeof(int));
    p->round_start[++p->nrounds] = p->nxfers;
}

/* Ring: in round i, pass on the block received in round i-1 (first one's own). */
static void schedule_ring(cr_ag_schedule *p, int size, int rank)
{
    for (int i = 0; i < size - 1; i++) {
        xfer(p, true, cr_schedule_mod(rank + 1, size));
        add_block(p, cr_schedule_mod(rank - i, size));
        xfer(p, false, cr_schedule_mod(rank - 1, size));
        add_block(p, cr_schedule_mod(rank - i - 1, size));
        end_round(p);
    }
}

/* Neighbor exchange (Chen et al.), even size: ranks 2i and 2i+1 form pair i. Step 0
 * swaps the pair's two blocks. Then each rank alternates between the neighbor outside
 * its pair and its pair partner, passing on the two blocks (one pair) it received in
 * the step before; every step brings two new blocks. */
static int pair_received(int rank, int step, int npairs)
{
    /* the pair whose blocks `rank` received in `step` (step >= 1) */
    int i = rank / 2, sign = rank % 2 ? 1 : -1;
    int dist = step % 2 ? (step + 1) / 2 : -(step / 2);
    return cr_schedule_mod(i + sign * dist, npairs);
}

static void schedule_neighbor(cr_ag_schedule *p, int size, int rank)
{
    int npairs = size / 2, even = rank % 2 == 0;
    int partner = even ? rank + 1 : rank - 1;
    int outside = even ? cr_schedule_mod(rank - 1, size) : cr_schedule_mod(rank + 1, size);
    xfer(p, true, partner);
    add_block(p, rank);
    xfer(p, false, partner);
    add_block(p, partner);
    end_round(p);
    for (int step = 1; step < npairs; step++) {
        int peer = step % 2 ? outside : partner;
        int give = step == 1 ? rank / 2 : pair_received(rank, step - 1, npairs);
        int take = step == 1 ? peer / 2 : pair_received(peer, step - 1, npairs);
        xfer(p, true, peer);
        add_block(p, 2 * give);
        add_block(p, 2 * give + 1);
        xfer(p, false, peer);
        add_block(p, 2 * take);
        add_block(p, 2 * take + 1);
        end_round(p);
    }
}

/* Recursive doubling, size a power of two: in round l exchange the 2^l blocks of my
 * aligned group with the partner rank ^ 2^l. */
static void schedule_recdouble(cr_ag_schedule *p, int size, int rank)
{
    for (int half = 1; half < size; half <<= 1) {
        int partner = rank ^ half;
        int mine = rank & ~(half - 1), theirs = partner & ~(half - 1);
        xfer(p, true, partner);
        for (int b = 0; b < half; b++)
            add_block(p, mine + b);
        xfer(p, false, partner);
        for (int b = 0; b < half; b++)
            add_block(p, theirs + b);
        end_round(p);
    }
}

/* Bruck: in the round with distance d = 2^l, send the blocks rank .. rank + d - 1
 * (all I have, at most size - d of them) to rank - d, and receive rank + d onwards. */
static void schedule_bruck(cr_ag_schedule *p, int size, int rank)
{
    for (int d = 1; d < size; d <<= 1) {
        int count = d < size - d ? d : size - d;
        xfer(p, true, cr_schedule_mod(rank - d, size));
        for (int b = 0; b < count; b++)
            add_block(p, cr_schedule_mod(rank + b, size));
        xfer(p, false, cr_schedule_mod(rank + d, size));
        for (int b = 0; b < count; b++)
            add_block(p, cr_schedule_mod(rank + d + b, size));
        end_round(p);
    }
}

uint64_t cr_sparbit_ignore_steps(uint64_t p)
{
    if (p == 0 || (p & (p - 1)) == 0)
        return 0;
    int last_ignore = __builtin_ctzll(p);
    return (~(p >> last_ignore) | 1) << last_ignore;
}

/* Sparbit (thesis Algorithm 1): distances halve from the largest power of two
 * below size; a rank forwards every block it has except, on the distances marked by
 * cr_sparbit_ignore_steps, the one that came from a tree in which it is a leaf. */
static void schedule_sparbit(cr_ag_schedule *p, int size, int rank)
{
    if (size == 1)
        return;
    int log = 0;
    while ((1 << log) < size)
        log++;
    uint64_t ignore_steps = cr_sparbit_ignore_steps((uint64_t)size);
    long d = 1L << (log - 1);
    long data = 1;
    for (int i = 0; i < log; i++) {
        int ignore = (d & (long)ignore_steps) ? 1 : 0;
        xfer(p, true, cr_schedule_mod(rank + d, size));
        for (long j = 0; j < data - ignore; j++)
            add_block(p, cr_schedule_mod(rank - 2 * j * d, size));
        xfer(p, false, cr_schedule_mod(rank - d, size));
        for (long j = 0; j < data - ignore; j++)
            add_block(p, cr_schedule_mod(rank - (2 * j + 1) * d, size));
        end_round(p);
        d >>= 1;
        data = 2 * data - ignore;
    }
}

bool cr_schedule_allgather(cr_ag_schedule *schedule, cr_allgather_algo algo, int p, int rank)
{
    if (p < 1 || rank < 0 || rank >= p)
        return false;
    if (algo == CR_SCHEDULE_AG_NEIGHBOR && p % 2)
        return false;
    if (algo == CR_SCHEDULE_AG_RECDOUBLE && (p & (p - 1)))
        return false;
    schedule_init(schedule);
    switch (algo) {
    case CR_SCHEDULE_AG_RING: schedule_ring(schedule, p, rank); break;
    case CR_SCHEDULE_AG_NEIGHBOR: schedule_neighbor(schedule, p, rank); break;
    case CR_SCHEDULE_AG_RECDOUBLE: schedule_recdouble(schedule, p, rank); break;
    case CR_SCHEDULE_AG_BRUCK: schedule_bruck(schedule, p, rank); break;
    case CR_SCHEDULE_AG_SPARBIT: schedule_sparbit(schedule, p, rank); break;
    }
    return true;
}
