/* Checks of a labelling of a graph's vertices into components, shared by boruvka
 * and cc: a sequential union-find for the gathered check, and a distributed check
 * of invariants for graphs too large to gather. */
#ifndef COURIER_APPS_COMPONENTS_H
#define COURIER_APPS_COMPONENTS_H

#include "cli.h"

#include <stddef.h>
#include <stdint.h>

struct cr_comm;

/* Union-find root of x, halving the path on the way (sequential; local). */
static inline uint64_t app_uf_find(uint64_t *uf, uint64_t x)
{
    while (uf[x] != x) {
        uf[x] = uf[uf[x]];
        x = uf[x];
    }
    return x;
}

/* What app_check_components found, summed over the ranks. */
typedef struct app_components_check {
    uint64_t components;   /* vertices labelled with their own id: the roots */
    uint64_t split_edges;  /* edges whose two ends have different labels */
    uint64_t stray_labels; /* vertices whose label is not a root (label[label[v]] != label[v]) */
    uint64_t above_self;   /* vertices with label > own id (when `smallest` is asked) */
    int ok;                /* all of the above as required, and the forest's size */
} app_components_check;

/* Collective over MPI_COMM_WORLD (lock-step steps of a distributed array on `comm`,
 * MPI transport). Checks, without gathering:
 *  - every edge's two ends have the same label;
 *  - every label is a root: a vertex labelled with its own id;
 *  - if `smallest`, no vertex has a label larger than its own id;
 *  - if forest_edges != UINT64_MAX: forest_edges = n - components.
 * label[0 .. nl) are the labels of vertices first .. first + nl - 1 (any
 * distribution). The edges are `m` records of `stride` bytes that start with the
 * two ends as uint64_t. Reads in chunks, so its memory is bounded whatever m is.
 * Prints one line per failed invariant on rank 0 (prefixed by the app's name). */
app_components_check app_check_components(const app *a, struct cr_comm *comm, uint64_t n,
                                          uint64_t first, const uint64_t *label, uint64_t nl,
                                          const void *edges, size_t m, size_t stride,
                                          int smallest, uint64_t forest_edges);

#endif
