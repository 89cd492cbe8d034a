/* The layout and router structures, shared with the mailbox, which reads node ids
 * on its hot path. Not installed. */
#ifndef COURIER_ROUTE_ROUTE_INTERNAL_H
#define COURIER_ROUTE_ROUTE_INTERNAL_H

#include "courier/route.h"


struct cr_layout {
    int nranks;
    int nnodes;
    int *node_of;     /* [nranks] dense node id of each rank */
    int *local_index; /* [nranks] index of each rank on its node */
    int *node_start;  /* [nnodes + 1] offsets into members */
    int *members;     /* ranks grouped by node, in rank order within a node */
    int refs;         /* holders: destroy frees it when the last one lets go */
};

struct cr_router {
    cr_route route;          /* resolved: grid dimensions filled in */
    const cr_layout *layout;
    int nranks;
    int max_hops;
    long block[CR_ROUTE_MAX_DIMS]; /* grid: ranks per block of a coordinate prefix */
    int cube;                /* hypercube: largest power of two <= nranks */
};

#endif
