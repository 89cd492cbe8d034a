/* What the collectives share with their tests: the measured automatic choice. */
#ifndef COURIER_COLL_INTERNAL_H
#define COURIER_COLL_INTERNAL_H

#include "courier/coll.h"
#include "courier/mailbox.h"

#include <stdbool.h>
#include <stddef.h>

/* The automatic choice for p ranks and a message of `bytes` (allreduce: the whole
 * vector; allgather: the largest block), as in docs/collectives.md. `exact`: the
 * reduction gives the same bits in any order (integers, min, max). */
cr_allreduce_algorithm cr_allreduce_auto(int p, size_t bytes, bool exact, int *ports);
cr_allgather_algorithm cr_allgather_auto(int p, size_t bytes);

/* The collectives' share of cr_config: COURIER_ALLREDUCE and COURIER_ALLGATHER, and
 * the range of allreduce, allreduce_ports and allgather (src/courier.c composes the
 * public cr_config_from_env and cr_config_validate). Local. */
int cr_coll_config_from_env(cr_config *cfg, char *err, size_t errlen);
int cr_coll_config_validate(const cr_config *cfg, char *err, size_t errlen);

#endif
