/* The collective executor's hooks into the mailbox. */
#ifndef COURIER_COLL_INTERNAL_H
#define COURIER_COLL_INTERNAL_H

#include "courier/coll.h"

#include <stdbool.h>
#include <stddef.h>

/* Advance every active collective of the comm; returns how many made progress.
 * Called by the event loop after each poll. */
int cr_coll_progress(cr_comm *c);

/* Free the collectives' communicator (comm destruction). */
void cr_coll_free(cr_comm *c);

/* The automatic choice for p ranks and a message of `bytes` (allreduce: the whole
 * vector; allgather: the largest block), as in docs/collectives.md. `exact`: the
 * reduction gives the same bits in any order (integers, min, max). */
cr_allreduce_algorithm cr_allreduce_auto(int p, size_t bytes, bool exact, int *ports);
cr_allgather_algorithm cr_allgather_auto(int p, size_t bytes);

#endif
