/* Courier collectives: split-phase allreduce and allgather(v) that progress on the
 * comm's event loop, so asynchronous handlers keep running while they are in flight.
 *
 * Start a collective to get a request; cr_request_test advances it without blocking,
 * cr_request_wait finishes it; cr_barrier, cr_progress and cr_request_wait on other requests
 * advance it too. Every rank of the comm must start the same collectives in the
 * same order, with the same count and algorithm (as with MPI). The algorithms are
 * the schedules of docs/collectives.md; `auto` picks one by rank count and size
 * from a table measured on the development machine (docs/collectives.md).
 *
 * Errors (docs/architecture.md): every call here ends the job with one line on
 * misuse (a bad type, operator or algorithm, a NULL buffer); none returns one. */
#ifndef COURIER_COLL_H
#define COURIER_COLL_H

#include "courier/settings.h"
#include "courier/types.h"

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_comm cr_comm;
typedef struct cr_request cr_request;

/* acc[i] = acc[i] combined with in[i], for i < count. Must be associative and
 * commutative (like an MPI_Op created with commute = 1). */
typedef void (*cr_combine_fn)(void *acc, const void *in, size_t count, void *user);

typedef struct cr_coll_opts {
    int algorithm;         /* a cr_allreduce_algorithm or cr_allgather_algorithm; 0 = auto */
    int ports;             /* dissemination and Bruck allreduce: peers per round (0 = auto) */
    cr_combine_fn combine; /* CR_OP_USER */
    void *user;            /* passed to combine */
} cr_coll_opts;

/* Allreduce of `count` elements of `type`: recv = send[rank 0] op ... op send[rank P-1]
 * on every rank, bit-identical on all ranks. op: CR_OP_SUM, MIN, MAX, BAND and BOR
 * (integers) or USER (courier/types.h); FIRST and LAST end the job with one line. send and recv may be the same buffer;
 * both must stay valid until the request completes. opts may be NULL. An
 * algorithm that does not apply to this rank count (for example dissemination for
 * P where no adaption exists) falls back to the butterfly. */
cr_request *cr_iallreduce(cr_comm *comm, const void *send, void *recv, size_t count, cr_dtype type,
                          cr_op op, const cr_coll_opts *opts);

/* Allgather: rank r's `bytes` bytes land at recv + r * bytes on every rank. An
 * algorithm that does not apply to this rank count falls back to Bruck. */
cr_request *cr_iallgather(cr_comm *comm, const void *send, size_t bytes, void *recv,
                          const cr_coll_opts *opts);

/* Allgatherv: rank r contributes sizes[r] bytes, which land at recv + offsets[r].
 * sizes and offsets must be the same on every rank; they are copied. */
cr_request *cr_iallgatherv(cr_comm *comm, const void *send, void *recv, const size_t *sizes,
                           const size_t *offsets, const cr_coll_opts *opts);

/* Advance without blocking. When the collective has completed, free the request,
 * set *req to NULL and return true. Not from a handler. */
bool cr_request_test(cr_request **req);

/* Run the event loop (handlers included) until the collective completes, then free
 * the request and set *req to NULL. Not from a handler. */
void cr_request_wait(cr_request **req);

/* Blocking forms: start and wait. */
void cr_allreduce(cr_comm *comm, const void *send, void *recv, size_t count, cr_dtype type,
                  cr_op op, const cr_coll_opts *opts);
void cr_allgather(cr_comm *comm, const void *send, size_t bytes, void *recv,
                  const cr_coll_opts *opts);
void cr_allgatherv(cr_comm *comm, const void *send, void *recv, const size_t *sizes,
                   const size_t *offsets, const cr_coll_opts *opts);

/* The algorithm a request runs ("butterfly", "sparbit", "dissemination(2)", ...). */
const char *cr_request_algorithm(const cr_request *req);

/* Names: "auto", "binomial", "butterfly", "dissemination", "bruck", "shared"; and
 * "auto", "ring", "neighbor", "recdoubling", "bruck", "sparbit", "shared". Local. Parse
 * returns 0, or -1 with `out` unchanged and a one-line message naming the text and
 * the names it accepts in err (NULL: none). */
const char *cr_allreduce_name(cr_allreduce_algorithm a);
const char *cr_allgather_name(cr_allgather_algorithm a);
int cr_allreduce_parse(const char *name, cr_allreduce_algorithm *out, char *err, size_t errlen);
int cr_allgather_parse(const char *name, cr_allgather_algorithm *out, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
