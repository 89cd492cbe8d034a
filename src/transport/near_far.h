/* A data plane made of two: blocks to the ranks the near plane reaches (the node's
 * rings in shared memory) go through it, the rest through the far plane (MPI). Not
 * installed. */
#ifndef COURIER_TRANSPORT_NEAR_FAR_H
#define COURIER_TRANSPORT_NEAR_FAR_H

#include "transport/transport.h"

/* Local: a plane over `near` and `far`, which stay owned by the caller and must
 * outlive it. The cap on sends in flight is the far plane's and covers both: a block
 * the near plane holds (waiting for room) takes one of the far plane's slots. */
cr_data_plane *cr_near_far_create(cr_data_plane *near, cr_data_plane *far);
/* Local: free the composition (not the two planes). NULL is ignored. */
void cr_near_far_destroy(cr_data_plane *d);

#endif
