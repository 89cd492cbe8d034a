/* Small collectives through the memory the ranks of one node share (the transport's
 * node area, src/transport/transport.h), for a comm that is one node: every rank
 * posts its block in its own area and reads the others' where they lie, with one
 * flag per block and no message. Not installed.
 *
 * Each rank's area holds two posts (shared collectives alternate between them) and a
 * counter of the shared collectives it has finished. Collective s may overwrite post
 * s % 2 once every rank has finished collective s - 2, the last one that read it; a
 * rank finishes its shared collectives in the order started, and all ranks start
 * them in the same order (as every collective of a comm). */
#ifndef COURIER_COLL_SHARED_H
#define COURIER_COLL_SHARED_H

#include "mailbox/module.h" /* cr_node_area */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest block one rank posts. */
#define CR_SHARED_MAX ((size_t)8 << 10)

/* True if a comm of p ranks on this area can run shared collectives of at most
 * `bytes` per rank: the comm is the whole node (area non-NULL), more than one rank. */
bool cr_shared_fits(const cr_node_area *a, int p, size_t bytes);

/* Post this rank's block for shared collective `seq` (numbered from 1). False while
 * a rank has not finished collective seq - 2: try again later. *seen (0 at first) is
 * the caller's memory of the fewest collectives any rank had finished. */
bool cr_shared_post(const cr_node_area *a, uint64_t *seen, uint64_t seq, const void *data,
                    size_t len);
/* True once every rank has posted `seq` and this rank has finished seq - 1. */
bool cr_shared_ready(const cr_node_area *a, uint64_t seq);
/* Rank r's block of `seq` (valid from cr_shared_ready until cr_shared_finish). */
const void *cr_shared_block(const cr_node_area *a, uint64_t seq, int r);
/* This rank is done reading `seq`. */
void cr_shared_finish(const cr_node_area *a, uint64_t seq);

#endif
