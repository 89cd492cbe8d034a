#include "mailbox/sendq.h"

#include "common/fatal.h"
#include "mailbox/outbuf.h"

#include <limits.h>
#include <stdlib.h>

void cr_sendq_init(cr_sendq *q, int nslots)
{
    q->nslots = nslots;
    q->nfree = nslots;
    q->hiwater = 0;
    q->free_slots = cr_xmalloc((size_t)nslots * sizeof *q->free_slots);
    q->reqs = cr_xmalloc((size_t)nslots * sizeof *q->reqs);
    q->data = cr_xcalloc((size_t)nslots, sizeof *q->data);
    q->cap = cr_xcalloc((size_t)nslots, sizeof *q->cap);
    q->completed = cr_xmalloc((size_t)nslots * sizeof *q->completed);
    /* Lowest indices on top, so busy slots stay packed below hiwater. */
    for (int i = 0; i < nslots; i++) {
        q->free_slots[i] = nslots - 1 - i;
        q->reqs[i] = MPI_REQUEST_NULL;
    }
}

void cr_sendq_free(cr_sendq *q)
{
    free(q->free_slots);
    free(q->reqs);
    free(q->data);
    free(q->cap);
    free(q->completed);
    *q = (cr_sendq){0};
}

int cr_sendq_start(cr_sendq *q, MPI_Comm comm, int dest, int tag, char *data, size_t len,
                   size_t cap)
{
    if (q->nfree == 0)
        return -1;
    if (len > INT_MAX)
        cr_fatal("a send buffer to rank %d grew to %zu bytes, above the MPI limit of %d; "
                 "raise COURIER_MAX_INFLIGHT or lower COURIER_BUFFER_SIZE",
                 dest, len, INT_MAX);
    int s = q->free_slots[--q->nfree];
    if (s >= q->hiwater)
        q->hiwater = s + 1;
    q->data[s] = data;
    q->cap[s] = cap;
    MPI_Issend(data, (int)len, MPI_BYTE, dest, tag, comm, &q->reqs[s]);
    return 0;
}

int cr_sendq_test(cr_sendq *q, cr_outbufs *recycle)
{
    if (q->nfree == q->nslots)
        return 0;
    int ndone = 0;
    MPI_Testsome(q->hiwater, q->reqs, &ndone, q->completed, MPI_STATUSES_IGNORE);
    if (ndone == MPI_UNDEFINED)
        return 0;
    for (int i = 0; i < ndone; i++) {
        int s = q->completed[i];
        cr_outbufs_recycle(recycle, q->data[s], q->cap[s]);
        q->data[s] = NULL;
        q->free_slots[q->nfree++] = s;
    }
    while (q->hiwater > 0 && q->reqs[q->hiwater - 1] == MPI_REQUEST_NULL)
        q->hiwater--;
    return ndone;
}
