/* Received buffers parked by generation, for COURIER_FLOW=deep-held
 * (docs/flow_control.md, "deep-held"). A rank under that policy does not handle a
 * buffer when it arrives: it copies it here, where each of its runs waits in the
 * queue of its records' generation, and the event loop handles the runs of the
 * deepest generation first (first in, first out within a generation, so records of
 * one generation from one rank keep their order) while the rank's send buffers and
 * sends in flight are below the cap. A buffer counts as handled, for the barrier,
 * once its last run is.
 *
 * Pure storage: nothing here runs a handler (flow_deep_held.c does). Memory: a copy of each
 * parked buffer (its bytes are `bytes`), 20 bytes per parked run, and the copies of
 * buffers handled before, kept for reuse. */
#ifndef COURIER_MAILBOX_PARK_H
#define COURIER_MAILBOX_PARK_H

#include "mailbox/record.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CR_PARK_LEVELS (CR_REC_GEN_MAX + 1)

typedef struct cr_parked_block {
    char *data;
    size_t len, cap;
    int src;
    bool own;           /* from this rank itself */
    bool relief;        /* taken as a relief, over the park cap */
    uint32_t runs_left; /* runs not yet handled to their end; the next free block while free */
} cr_parked_block;

typedef struct cr_parked_run {
    uint32_t block;
    uint32_t off;  /* of the run's header in the block */
    uint32_t done; /* records of the run handled so far */
    uint32_t next; /* the next run of the generation, or the next free run */
    uint32_t gen;
} cr_parked_run;

typedef struct cr_park {
    cr_parked_block *blocks;
    uint32_t nblocks, free_block;
    cr_parked_run *runs;
    uint32_t nruns, free_run;
    uint32_t head[CR_PARK_LEVELS], tail[CR_PARK_LEVELS];
    uint32_t levels;  /* bit g set: generation g has runs waiting */
    size_t bytes;     /* bytes of the parked buffers */
    size_t others_bytes; /* ... of those that came from other ranks */
    size_t relief_bytes; /* ... of parked buffers taken as reliefs */
    uint64_t parked;  /* runs waiting */
} cr_park;

void cr_park_init(cr_park *p);
void cr_park_free(cr_park *p);

/* Copy buf[0, len) from `src` (`own`: this rank itself; `relief`: taken over the
 * cap) into the park, each run in its generation's queue; the first `first_done`
 * records of its first run are already handled (the rest of a buffer handled in
 * place up to there). Returns the number of runs, or -1 (nothing parked) if the
 * buffer is corrupt, with the offset of the bad run in *bad_off. A buffer without
 * runs is not parked. */
long cr_park_buffer(cr_park *p, int src, bool own, bool relief, const char *buf, size_t len,
                    uint32_t first_done, size_t *bad_off);

static inline bool cr_park_empty(const cr_park *p)
{
    return p->levels == 0;
}

/* The run to handle next: the oldest of the deepest generation (park not empty).
 * Returns its index in p->runs (its records before .done are handled; handlers may
 * run between two calls, but nothing is parked while they do, so the index stays);
 * *view is the run and *src the rank its buffer came from. */
uint32_t cr_park_next(const cr_park *p, cr_run_view *view, int *src);

/* Run r, which cr_park_next gave, has been handled to its end: take it out. Returns
 * true when that was its buffer's last run (the buffer counts as handled). */
bool cr_park_run_done(cr_park *p, uint32_t r);

#endif
