/* In-flight sends: a fixed number of slots, each holding one MPI_Issend and the
 * buffer it sends. When every slot is busy the mailbox must wait, which is what
 * bounds the memory a rank commits to sends. */
#ifndef COURIER_MAILBOX_SENDQ_H
#define COURIER_MAILBOX_SENDQ_H

#include <mpi.h>
#include <stddef.h>

struct cr_outbufs;

typedef struct cr_sendq {
    int nslots;
    int nfree;
    int hiwater;        /* slots [hiwater, nslots) have never been used */
    int *free_slots;    /* stack of free slot indices */
    MPI_Request *reqs;  /* MPI_REQUEST_NULL when free */
    char **data;        /* buffer each busy slot owns */
    size_t *cap;
    int *completed;     /* scratch for MPI_Testsome */
} cr_sendq;

void cr_sendq_init(cr_sendq *q, int nslots);
/* Free the slots; every send must have completed. */
void cr_sendq_free(cr_sendq *q);

static inline int cr_sendq_inflight(const cr_sendq *q)
{
    return q->nslots - q->nfree;
}

/* Start a synchronous send of data[0, len) in a free slot, which owns `data` (of
 * capacity `cap`) until the send completes. Returns 0, or -1 when no slot is free. */
int cr_sendq_start(cr_sendq *q, MPI_Comm comm, int dest, int tag, char *data, size_t len,
                   size_t cap);

/* Complete finished sends and hand their buffers to `recycle`. Returns how many. */
int cr_sendq_test(cr_sendq *q, struct cr_outbufs *recycle);

#endif
