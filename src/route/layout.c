/* Node layouts: which ranks share a node, as the transport found it or virtual
 * (blocks). */
#include "route/route_internal.h"

#include "common/fatal.h"

#include <stdlib.h>

cr_layout *cr_layout_create(int nranks, const int *node_of)
{
    if (nranks < 1 || !node_of)
        return NULL;
    for (int r = 0; r < nranks; r++)
        if (node_of[r] < 0 || node_of[r] >= nranks)
            return NULL;

    cr_layout *l = cr_xcalloc(1, sizeof *l);
    l->nranks = nranks;
    l->refs = 1;
    l->node_of = cr_xmalloc((size_t)nranks * sizeof *l->node_of);
    l->local_index = cr_xmalloc((size_t)nranks * sizeof *l->local_index);
    l->members = cr_xmalloc((size_t)nranks * sizeof *l->members);

    /* Dense ids in order of first appearance, which is each node's lowest rank. */
    int *dense = cr_xmalloc((size_t)nranks * sizeof *dense);
    for (int i = 0; i < nranks; i++)
        dense[i] = -1;
    for (int r = 0; r < nranks; r++) {
        if (dense[node_of[r]] < 0)
            dense[node_of[r]] = l->nnodes++;
        l->node_of[r] = dense[node_of[r]];
    }
    free(dense);

    l->node_start = cr_xcalloc((size_t)l->nnodes + 1, sizeof *l->node_start);
    for (int r = 0; r < nranks; r++)
        l->node_start[l->node_of[r] + 1]++;
    for (int n = 0; n < l->nnodes; n++)
        l->node_start[n + 1] += l->node_start[n];
    int *fill = cr_xcalloc((size_t)l->nnodes, sizeof *fill);
    for (int r = 0; r < nranks; r++) {
        int n = l->node_of[r];
        l->local_index[r] = fill[n];
        l->members[l->node_start[n] + fill[n]++] = r;
    }
    free(fill);
    return l;
}

cr_layout *cr_layout_create_cut(int nranks, const int *node_of, int node_size)
{
    if (nranks < 1 || !node_of || node_size < 1)
        return NULL;
    for (int r = 0; r < nranks; r++)
        if (node_of[r] < 0 || node_of[r] >= nranks)
            return NULL;
    /* Per real node: its ranks seen so far and the first rank of its open cut. */
    int *seen = cr_xcalloc((size_t)nranks, sizeof *seen);
    int *head = cr_xmalloc((size_t)nranks * sizeof *head);
    int *cut = cr_xmalloc((size_t)nranks * sizeof *cut);
    for (int r = 0; r < nranks; r++) {
        int n = node_of[r];
        if (seen[n]++ % node_size == 0)
            head[n] = r;
        cut[r] = head[n];
    }
    cr_layout *l = cr_layout_create(nranks, cut);
    free(seen);
    free(head);
    free(cut);
    return l;
}

cr_layout *cr_layout_create_blocks(int nranks, int node_size)
{
    if (nranks < 1 || node_size < 1)
        return NULL;
    int *node_of = cr_xmalloc((size_t)nranks * sizeof *node_of);
    for (int r = 0; r < nranks; r++)
        node_of[r] = r / node_size;
    cr_layout *l = cr_layout_create(nranks, node_of);
    free(node_of);
    return l;
}

cr_layout *cr_layout_share(cr_layout *l)
{
    if (l)
        l->refs++;
    return l;
}

void cr_layout_destroy(cr_layout *l)
{
    if (!l || --l->refs > 0)
        return;
    free(l->node_of);
    free(l->local_index);
    free(l->node_start);
    free(l->members);
    free(l);
}

int cr_layout_ranks(const cr_layout *l)
{
    return l->nranks;
}

int cr_layout_nodes(const cr_layout *l)
{
    return l->nnodes;
}

int cr_layout_node_of(const cr_layout *l, int rank)
{
    return l->node_of[rank];
}

int cr_layout_node_size(const cr_layout *l, int node)
{
    return l->node_start[node + 1] - l->node_start[node];
}

int cr_layout_member(const cr_layout *l, int node, int local)
{
    return l->members[l->node_start[node] + local];
}

int cr_layout_local_index(const cr_layout *l, int rank)
{
    return l->local_index[rank];
}
