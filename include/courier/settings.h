/* The names of the modules' settings that cr_config carries (include/courier/
 * mailbox.h): which allreduce and allgather algorithm the collectives use
 * (courier/coll.h) and which protocol the sparse exchange uses (courier/nbx.h).
 * They live here so that the mailbox's header names no module; each module parses
 * and checks its own settings. */
#ifndef COURIER_SETTINGS_H
#define COURIER_SETTINGS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cr_allreduce_algorithm {
    CR_ALLREDUCE_AUTO = 0, /* COURIER_ALLREDUCE, else the measured table */
    CR_ALLREDUCE_BINOMIAL,
    CR_ALLREDUCE_BUTTERFLY,     /* pairwise exchange */
    CR_ALLREDUCE_DISSEMINATION, /* n-way, adapted for non-idempotent operations */
    CR_ALLREDUCE_BRUCK,
    CR_ALLREDUCE_SHARED, /* through the node's shared memory: a comm on one node,
                            at most 8 KiB (else the automatic choice) */
} cr_allreduce_algorithm;

typedef enum cr_allgather_algorithm {
    CR_ALLGATHER_AUTO = 0, /* COURIER_ALLGATHER, else the measured table */
    CR_ALLGATHER_RING,
    CR_ALLGATHER_NEIGHBOR,    /* neighbor exchange: even rank counts */
    CR_ALLGATHER_RECDOUBLING, /* recursive doubling: power-of-two rank counts */
    CR_ALLGATHER_BRUCK,
    CR_ALLGATHER_SPARBIT,
    CR_ALLGATHER_SHARED, /* through the node's shared memory: a comm on one node, at
                            most 8 KiB per rank (else the automatic choice) */
} cr_allgather_algorithm;

typedef enum cr_nbx_protocol {
    CR_NBX_PROTOCOL_DEFAULT = 0, /* COURIER_EXCHANGE, or NBX if it is not set */
    CR_NBX_PROTOCOL_NBX,
    CR_NBX_PROTOCOL_PEX,
    CR_NBX_PROTOCOL_PCX,
} cr_nbx_protocol;

#ifdef __cplusplus
}
#endif

#endif
