/* Courier sparse data exchange (the nbx module, named after its default protocol):
 * every rank knows what it sends and to whom, nobody knows who sends to it; one
 * collective call delivers everything. Every public name has the prefix cr_nbx_.
 *
 * Three protocols, from Hoefler, Siebert and Lumsdaine, "Scalable communication
 * protocols for dynamic sparse data exchange" (PPoPP 2010):
 *
 *   CR_NBX_PROTOCOL_NBX  synchronous sends, probe and receive, and a non-blocking
 *                        barrier entered once the own sends are matched (the
 *                        paper's NBX);
 *   CR_NBX_PROTOCOL_PEX  an all-to-all of message counts and bytes, then receives
 *                        posted for exactly those (personalized exchange);
 *   CR_NBX_PROTOCOL_PCX  a reduce-scatter of message counts, then probe and receive
 *                        until the count is reached (personalized census).
 *
 * All three return the same result. While the call waits, the comm's event loop
 * keeps running, so asynchronous handlers of earlier cr_async calls still run.
 * See docs/sparse_exchange.md.
 *
 * Errors (docs/architecture.md): misuse (a bad rank, a message of 2 GiB or more)
 * ends the job with one line; the name parser returns -1 for an unknown name.
 */
#ifndef COURIER_NBX_H
#define COURIER_NBX_H

#include "courier/settings.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_comm cr_comm;


/* The messages a rank received, ordered by source rank; messages from one source
 * keep the order in which that source listed them. data[i] points into memory the
 * result owns; release everything with cr_nbx_result_free. */
typedef struct cr_nbx_result {
    size_t count;      /* messages received */
    int *sources;      /* sources[i]: the rank that sent message i */
    size_t *sizes;     /* sizes[i]: its length in bytes (may be 0) */
    void **data;       /* data[i]: its bytes */
    size_t total_bytes; /* sum of sizes */
    void *storage;     /* internal: the block data[] points into */
} cr_nbx_result;

/* Collective over the comm's ranks; call it from the main program (not a handler).
 * Message i goes to rank dests[i] (any rank, itself included, repeats allowed) with
 * sizes[i] bytes from bufs[i]; bufs[i] may be NULL when sizes[i] is 0. n_out may be
 * 0. The caller's buffers are not modified and may be reused when the call returns.
 * A bad destination or a message of 2 GiB or more stops the job with a one-line
 * error. `result` is overwritten; free it with cr_nbx_result_free. */
void cr_nbx_exchange(cr_comm *comm, size_t n_out, const int *dests, const void *const *bufs,
                        const size_t *sizes, cr_nbx_result *result);

/* The same with an explicit protocol (CR_NBX_PROTOCOL_DEFAULT: the comm's setting). Every rank
 * must pass the same protocol. */
void cr_nbx_exchange_with(cr_comm *comm, cr_nbx_protocol protocol, size_t n_out,
                             const int *dests, const void *const *bufs, const size_t *sizes,
                             cr_nbx_result *result);

/* Release what a result owns and reset it to empty. Safe on an empty result. */
void cr_nbx_result_free(cr_nbx_result *result);

/* "nbx", "pex", "pcx" (and "default"). */
const char *cr_nbx_protocol_name(cr_nbx_protocol protocol);

/* Local. Parse a protocol name; returns 0, or -1 with `out` unchanged and a one-line
 * message naming the text and the names it accepts in err (NULL: none). */
int cr_nbx_protocol_parse(const char *name, cr_nbx_protocol *out, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
