/* The MPI transport's segments shared within a node (transport.h, cr_node_mem_ops).
 * Not installed. */
#ifndef COURIER_TRANSPORT_MPI_NODE_MEM_H
#define COURIER_TRANSPORT_MPI_NODE_MEM_H

#include "transport/transport.h"

#include <mpi.h>

/* Collective over comm: cr_node_mem_ops.create, the members split off comm. */
bool cr_mpi_node_mem_create(MPI_Comm comm, int node, int size, int rank, size_t bytes,
                            cr_node_mem *out);
/* Collective over the members: cr_node_mem_ops.destroy. */
void cr_mpi_node_mem_destroy(cr_node_mem *m);

#endif
