/* The MPI transport (see transport.h). Not installed. */
#ifndef COURIER_TRANSPORT_MPI_TRANSPORT_H
#define COURIER_TRANSPORT_MPI_TRANSPORT_H

#include "transport/transport.h"

#include <mpi.h>

typedef struct cr_transport_mpi_opts {
    size_t buffer_bytes;   /* the flush threshold: sets the size of pre-posted receives */
    unsigned max_inflight; /* sends in flight at most */
    bool prepost;          /* pre-posted receives instead of probe (docs/receive.md) */
    size_t shm_bytes;      /* shared memory offered to the node's senders (0: no rings) */
    unsigned node_size;    /* virtual nodes of this many ranks (0: MPI's nodes) */
} cr_transport_mpi_opts;

/* Collective over `comm`, which it duplicates (the caller keeps `comm`). Ranks that
 * disagree on the receive mode end the job with a message. From now on cr_fatal
 * ends the whole MPI job (MPI_Abort) and names the rank. */
cr_transport *cr_transport_mpi_create(MPI_Comm comm, const cr_transport_mpi_opts *opts);

/* Local: if MPI_Finalize is called while this transport is still open (its comm was
 * never destroyed), print one line naming the rank and what describe() writes (the
 * records not yet delivered), and end the process with status 1 instead of letting
 * it exit 0 with its messages unhandled. Watches through a delete callback of an
 * attribute on MPI_COMM_SELF, which MPI_Finalize runs first; destroy removes it. */
void cr_transport_mpi_watch_finalize(cr_transport *t,
                                     void (*describe)(void *arg, char *buf, size_t len),
                                     void *arg);

#endif
