/* Courier dedup: records with the same meaning merged on their way.
 *
 * A combining handler names a key (the first key_len bytes of its payload) and a
 * rule. When two of its records for the same destination meet in a send buffer,
 * at their source or at a rank that forwards them under a route, the mailbox merges
 * them in place with the rule, and the handler runs once for the result: two
 * increments of one counter become one increment by the sum, two visits of one
 * vertex become one visit. Every contribution is applied exactly once, though not
 * always by its own record (the handler's `src` is the sender of the first record
 * merged). See docs/dedup.md for where merging happens and what it guarantees.
 *
 * Requests with replies (cr_dedup_request, below) are merged the same way, and more: a
 * rank that has sent a request and waits for its reply holds every identical request
 * that reaches it (issued there or passing through) until the reply comes, then fans
 * the reply out to all of them. Replies travel back along the reverse of the path
 * their request took, so every rank that merged splits the reply again.
 *
 * Errors (docs/architecture.md): cr_dedup_rule_apply returns -1 with one line in
 * `err` (a rule can come from a user's choice); the other calls end the job with one
 * line on misuse.
 */
#ifndef COURIER_DEDUP_H
#define COURIER_DEDUP_H

#include "courier/mailbox.h"
#include "courier/types.h"

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How records of one handler merge (the operators of courier/types.h). For
 * CR_OP_SUM, MIN, MAX, BOR and BAND the values are
 * the 8-byte words of `type` after the key, from offset pad8(key_len) (the key
 * rounded up to 8 bytes) to the end of the payload; each word is combined with the
 * word at the same place. FIRST and LAST keep one payload whole, "first" and "last"
 * being the order in which the records meet in a buffer. USER calls
 * combine(dst, src, len, combine_user), which merges src's payload into dst's
 * (both `len` bytes, the key included, dst 8-byte aligned) and must not change
 * dst's key. */
typedef struct cr_dedup_rule {
    size_t key_len;     /* 1 .. CR_MAX_KEY */
    cr_op op;           /* any operator of courier/types.h */
    cr_dtype type;      /* SUM, MIN, MAX: CR_INT64, CR_UINT64 or CR_DOUBLE;
                           BAND, BOR: CR_INT64 or CR_UINT64 */
    void (*combine)(void *dst, const void *src, size_t len, void *user); /* for USER */
    void *combine_user;
} cr_dedup_rule;

/* Set the combining fields of `type` (key_len, combine, combine_user) from `rule`.
 * Returns 0, or -1 with a one-line message in `err` naming what is wrong. Local;
 * `type`'s other fields are left alone. */
int cr_dedup_rule_apply(const cr_dedup_rule *rule, cr_handler_type *type, char *err,
                        size_t errlen);

/* Register `type` as a combining handler under `rule`; returns its id. Collective
 * and may run handlers, as cr_register. A bad rule ends the job with one line. */
int cr_dedup_register(cr_comm *comm, const cr_handler_type *type, const cr_dedup_rule *rule,
                      void *user);

/* ---- Requests with replies ------------------------------------------------------
 *
 * A request goes to its owner rank, hop by hop along the comm's route; the owner's
 * serve function answers it with cr_dedup_reply; the reply goes back along the same hops,
 * in reverse, to the requester, where reply_fn(comm, data, len, ctx) runs.
 *
 * Merging. Requests of one type with the same owner, the same length and equal
 * first key_len bytes are the same request. Where two meet on one rank (the
 * requester's, or any hop on the way) the later joins the earlier and is not sent
 * again; when the reply comes back, it is handed to every request that joined, in
 * the order they arrived. So the owner serves far fewer requests than were made,
 * and every request still gets exactly one reply. The payload past the key of a
 * request that joins another is not sent: only the first request's payload reaches
 * the owner.
 *
 * Consistency. A request joins one that is still in the rank's send buffer
 * (*merged*, always on), or, with coalescing on, also one that has already left and
 * waits for its reply (*coalesced*). So with coalescing off, every reply is computed
 * after its own request was issued; with it on, after an identical request was
 * issued. Never across a cr_barrier: cr_barrier returns only when every request has
 * its reply, so no request waits over a barrier and none after it can join one from
 * before it. Use coalescing off for reads of values that change within a phase
 * whose order against the read matters.
 *
 * Cost. A request that nothing can join (its owner is one hop away, and its type has
 * no key or has found that its requests rarely repeat) travels *direct*: no waiting
 * entry on the requester, its ctx carried to the owner and back, as a hand-written
 * gather would do. This holds for the first reply_fn a type's requests name on a
 * rank; a request naming another reply_fn always keeps an entry.
 */

/* The request being served, passed to serve and to cr_dedup_reply. */
typedef struct cr_dedup_req cr_dedup_req;

/* What a type of request is (copied at registration). */
typedef struct cr_dedup_request_type {
    /* Runs on the owner once per request that reaches it (merged requests once);
     * must call cr_dedup_reply(comm, req, ...) exactly once before it returns. `payload`
     * (8-byte aligned) is valid during the call. May send messages and requests as a
     * handler may (mailbox.h). */
    void (*serve)(cr_comm *comm, cr_dedup_req *req, const void *payload, size_t len,
                  void *user);
    size_t key_len; /* 0: never merged; else 1 .. CR_MAX_KEY and at most every payload */
    int coalesce;   /* nonzero: identical requests also join one that is in flight */
    /* Optional: called on the owner with the payload of a request a few records
     * ahead of the one being served, from the same received buffer, so that serve's
     * reads (a random table slot) start early and their cache misses overlap, e.g.
     * with __builtin_prefetch. It must not send, reply or change what serve reads. */
    void (*prefetch)(const void *payload, size_t len, void *user);
    /* Optional: serves a run of requests with one call, where no reply needs its own
     * call: the requests of a received buffer that came straight from their
     * requesters (see Cost below), in runs of up to CR_DEDUP_SERVE_RUN. Request i is
     * the `len` bytes at payloads + i * stride (8-byte aligned); its reply, exactly
     * reply_len bytes, is written at replies + i * reply_len (8-byte aligned). It
     * replies by writing, never with cr_dedup_reply, and may send messages and
     * requests as serve may. A type with serve_many may leave serve NULL: a request
     * that arrives on its own is then served by serve_many with n = 1. Per request it
     * saves two calls and the reply's checks, which is most of a direct request's own
     * cost on one node (docs/dedup.md). */
    void (*serve_many)(cr_comm *comm, const void *payloads, size_t stride, size_t len,
                       size_t n, void *replies, void *user);
    size_t reply_len; /* serve_many's reply size: 1 .. CR_DEDUP_REPLY_MANY_MAX bytes */
    /* Optional: on the requester, a run of replies to its direct requests (see Cost
     * below) with one call, instead of a call of their reply function each. Reply i's
     * request ctx is cr_dedup_replied_ctx(replies, stride, i) and its data the `len`
     * bytes at cr_dedup_replied_data(replies, stride, i) (8-byte aligned), valid
     * during the call. It must do for each reply what the reply function of its
     * request would: only the requests naming the first reply function a request of
     * this type named on this rank travel direct, so that is the function it stands
     * in for. Runs as a handler does (it may send messages and requests). Per reply
     * it saves an indirect call, which is most of a direct reply's own cost on one
     * node (docs/dedup.md). */
    void (*replied_many)(cr_comm *comm, const void *replies, size_t stride, size_t len,
                         size_t n, void *user);
} cr_dedup_request_type;

/* Reply i of a run handed to replied_many: its request's ctx, and its data. */
static inline void *cr_dedup_replied_ctx(const void *replies, size_t stride, size_t i)
{
    uint64_t word;
    memcpy(&word, (const char *)replies + i * stride, sizeof word);
    return (void *)(uintptr_t)word;
}

static inline const void *cr_dedup_replied_data(const void *replies, size_t stride, size_t i)
{
    return (const char *)replies + i * stride + sizeof(uint64_t);
}

/* The longest run serve_many is given, and the largest reply it may write. */
#define CR_DEDUP_SERVE_RUN 128
#define CR_DEDUP_REPLY_MANY_MAX 256

/* Requests a rank's own one-hop requests may keep waiting (entries and the requests
 * that joined them): beyond, they travel direct (docs/dedup.md, "Waiting requests are
 * bounded"). Requests that pass hops always wait: their replies need the entry. */
#define CR_DEDUP_WAITING_MOST 1024

/* Runs on the requester when the reply arrives, as a handler does (it may send
 * messages and requests, not wait). `data` (8-byte aligned) is valid during the
 * call; `ctx` is cr_dedup_request's. */
typedef void (*cr_dedup_reply_fn)(cr_comm *comm, const void *data, size_t len, void *ctx);

/* Register a request type; returns its id for cr_dedup_request (a handler id of the comm,
 * distinct from every other). Collective and may run handlers, as cr_register. A bad
 * type ends the job with one line (neither serve nor serve_many, a key too long,
 * serve_many without a reply_len in range). `user` is passed to serve, serve_many and
 * prefetch. */
int cr_dedup_register_request(cr_comm *comm, const cr_dedup_request_type *type, void *user);

/* Send a request of type `id` with `len` bytes of `payload` to rank `owner`; reply_fn
 * runs with `ctx` when its reply arrives here (always later, never inside this call,
 * even for owner == this rank). Local; the payload is copied. May run handlers (as
 * cr_async) unless called from a handler or reply_fn. */
void cr_dedup_request(cr_comm *comm, int owner, int id, const void *payload, size_t len,
                cr_dedup_reply_fn reply_fn, void *ctx);

/* Send n requests of type `id`, each of `len` bytes: request i is the len bytes at
 * payloads + i * len, to rank owners[i], and its reply runs reply_fn with ctxs[i].
 * The same as n calls of cr_dedup_request (the same checks, merging and replies), at
 * a lower cost per request: the type's checks are made once, and the requests that
 * travel straight to their owners go to the mailbox in chunks (cr_async_many). Local;
 * may run handlers as cr_dedup_request does. */
void cr_dedup_request_many(cr_comm *comm, int id, const int *owners, const void *payloads,
                           size_t len, size_t n, cr_dedup_reply_fn reply_fn, void *const *ctxs);

/* Answer the request being served with `len` bytes of `data` (copied; len may be 0
 * and may exceed the buffer size). Only from serve, exactly once. Local. */
void cr_dedup_reply(cr_comm *comm, cr_dedup_req *req, const void *data, size_t len);

/* The rank that issued the request being served (of merged requests, the first to
 * reach the owner's side of the merge). */
int cr_dedup_origin(const cr_dedup_req *req);

/* The rank the request being served came from: the previous hop on its way (this
 * rank for its own requests). The reply goes back there. */
int cr_dedup_from(const cr_dedup_req *req);

/* Requests this rank has sent (or passed on) and still waits for replies to: 0 after
 * cr_barrier. Local. */
size_t cr_dedup_pending(const cr_comm *comm);

/* The counters of requests with replies on this rank (cr_dedup_request's own and
 * those passing through). Conservation over all ranks: requests = requests_served +
 * requests_merged_at_source + requests_merged_at_hops + requests_coalesced, and
 * replies_fanned_out = the three merged terms. */
typedef struct cr_dedup_stats {
    uint64_t requests;         /* cr_dedup_request calls on this rank */
    uint64_t requests_served;  /* requests this rank answered as their owner (each a merged
                                  request counts once) */
    uint64_t requests_merged_at_source; /* cr_dedup_request calls that joined an identical
                                  request still waiting in this rank's send buffer */
    uint64_t requests_merged_at_hops;   /* ... requests passing through that did so */
    uint64_t requests_coalesced; /* requests (issued or passing through) that joined an
                                  identical request already sent and waiting for its reply */
    uint64_t replies_fanned_out; /* reply copies made for merged requesters (all but the
                                  first of each merged request) */
    uint64_t request_bytes_saved; /* request bytes not sent because of merging and
                                  coalescing (payload and the 16-byte request header) */
    uint64_t requests_direct;  /* cr_dedup_request calls sent straight to their owner
                                  with no waiting entry, since nothing could join them:
                                  one hop to the owner, and a type without a key or
                                  whose merging rests, or while CR_DEDUP_WAITING_MOST
                                  requests wait (docs/dedup.md) */
    uint64_t peak_waiting;     /* the most requests that waited for replies on this rank at
                                  once: entries and the requests that joined them (a peak,
                                  not a sum) */
} cr_dedup_stats;

/* Copy this rank's request counters (all zero before the first request type is
 * registered). Local; runs no handlers. cr_stats_reset zeroes them too. */
void cr_dedup_stats_get(cr_comm *comm, cr_dedup_stats *out);
/* Zero this rank's request counters. Local. */
void cr_dedup_stats_reset(cr_comm *comm);
/* Print min / mean / max of every request counter over all ranks to `out` on rank 0.
 * Collective; call it outside handlers. */
void cr_dedup_stats_print(cr_comm *comm, FILE *out);

#ifdef __cplusplus
}
#endif

#endif
