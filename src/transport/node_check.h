/* How the ranks group into nodes, told two ways: MPI's shared-memory split
 * (MPI_COMM_TYPE_SHARED) and the processor names. Some MPI builds answer the split
 * with one rank per node (MPICH on UCX is reported to), which would silently turn
 * off the shared-memory path and the node-aware routes; the names catch that. Pure
 * logic, no MPI. Not installed. */
#ifndef COURIER_TRANSPORT_NODE_CHECK_H
#define COURIER_TRANSPORT_NODE_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cr_node_check {
    int mpi_nodes;  /* distinct nodes by MPI's split */
    int name_nodes; /* distinct processor names */
    int first_rank; /* a rank whose two groupings differ (-1: none) */
} cr_node_check;

/* Local: a 64-bit hash of a processor name (FNV-1a). */
uint64_t cr_node_name_hash(const char *name, size_t len);

/* Local: compares the groupings of p ranks. node_of[r] names rank r's node by MPI's
 * split (its lowest rank); name_hash[r] is rank r's processor name hashed. They agree
 * when two ranks share a node exactly when they share a name. `scratch` holds p
 * entries. True if they agree. */
bool cr_node_check_run(const int *node_of, const uint64_t *name_hash, int p,
                       uint64_t *scratch, cr_node_check *out);

#endif
