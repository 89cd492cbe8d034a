/* Courier mailbox: asynchronous messages with handlers over MPI.
 *
 * A cr_comm wraps an MPI communicator. Ranks register handlers (collectively, in
 * the same order), then send each other small messages with cr_async(). Messages
 * are copied into per-destination buffers and sent in bulk; the receiving rank runs
 * the registered handler for each one, and handlers may send further messages.
 * cr_barrier() returns once every message sent before it, and every message those
 * messages caused, has been handled exactly once on its destination.
 *
 * Order and memory (docs/flow_control.md). Under the default flow policy
 * (COURIER_FLOW=deep-held) each record carries its generation: 0 from user code, one
 * more from a handler. A rank handles the deepest generation first; records of one
 * generation from one rank are handled in the order they were sent, records of
 * different generations may not be. Each rank's memory stays within
 * cr_memory_bound.
 *
 * Threading: a cr_comm is used by one thread. Errors (docs/architecture.md): misuse
 * of the API (a bad rank, an unknown handler, a barrier called from a handler)
 * prints one line naming the problem to stderr and calls MPI_Abort; a bad setting
 * in the environment does the same at cr_comm_create. Nothing here returns an
 * error except the parsers (cr_config_validate, the name parsers).
 *
 * Which calls may run handlers. Handlers run only inside Courier calls that run the
 * event loop, never asynchronously. Called from the main program, these may run
 * handlers of incoming messages before they return:
 *   cr_register, cr_register_type, cr_async, cr_async_bcast, cr_async_mcast,
 *   cr_progress, cr_barrier,
 *   cr_nbx_exchange[_with], cr_request_wait, cr_request_test, cr_comm_destroy.
 * So a handler may already run for a message that a faster rank sent right after
 * it returned from cr_register: set up the state handlers use (counters, tables)
 * before cr_register, not after it. cr_async and cr_async_bcast copy the payload
 * before they can run any handler, so the caller may reuse one buffer for every
 * call even if handlers write to it. These never run handlers: cr_flush,
 * cr_comm_rank, cr_comm_size, cr_comm_config, cr_comm_layout, cr_comm_router,
 * cr_stats_get, cr_stats_reset, cr_config_*. Called from inside a handler, no call
 * runs another handler (handlers are never re-entered).
 */
#ifndef COURIER_MAILBOX_H
#define COURIER_MAILBOX_H

#include "courier/route.h"
#include "courier/settings.h"

#include <mpi.h>

/* The MPI this Courier was built with, as its pkg-config file and CMake package
 * record it: a program compiled against another MPI's <mpi.h> stops here. */
#if defined(COURIER_BUILT_WITH_OPEN_MPI) && !defined(OPEN_MPI)
#error "Courier was built with Open MPI, but this <mpi.h> is another MPI's: compile with Open MPI's mpicc"
#endif
#if defined(COURIER_BUILT_WITH_MPICH) && !defined(MPICH_VERSION)
#error "Courier was built with MPICH, but this <mpi.h> is another MPI's: compile with MPICH's mpicc"
#endif
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_comm cr_comm;

/* Called on the destination rank for every message sent to `handler`.
 * `src` is the rank that called cr_async(). `payload` is valid only during the call
 * and is aligned to 8 bytes; `len` is the length given to cr_async(). `user` is the
 * pointer given to cr_register(). A handler may call cr_async() and cr_async_bcast(),
 * but not cr_barrier(), cr_register() or cr_comm_destroy(). */
typedef void (*cr_handler_fn)(cr_comm *comm, int src, const void *payload, size_t len,
                              void *user);

/* Consecutive records for one handler, from one received buffer, handed over in one
 * call (see cr_handler_type). Record i's payload is at payloads + i * stride, 8-byte
 * aligned, `len` bytes long (every record of a batch has the same length); its
 * sender is cr_batch_src(batch, i). Valid only during the call. */
typedef struct cr_batch {
    const char *payloads; /* payload of record 0 */
    size_t stride;        /* bytes from one payload to the next */
    size_t len;           /* payload bytes of every record */
    size_t count;         /* records in the batch, at least 1 */
    int src;              /* sender of every record, when `origins` is NULL */
    const char *origins;  /* else record i's sender is the int32_t at origins + i * stride
                             (records routed through other ranks) */
} cr_batch;

static inline const void *cr_batch_payload(const cr_batch *b, size_t i)
{
    return b->payloads + i * b->stride;
}

static inline int cr_batch_src(const cr_batch *b, size_t i)
{
    if (!b->origins)
        return b->src;
    int32_t origin;
    memcpy(&origin, b->origins + i * b->stride, sizeof origin);
    return (int)origin;
}

/* A batch handler: called once for a batch of records instead of once per record.
 * The same rules as for cr_handler_fn apply. */
typedef void (*cr_batch_fn)(cr_comm *comm, const cr_batch *batch, void *user);

/* What a handler is: the options table of cr_register_type (in the manner of Redis's
 * dictType). Set exactly one of `fn` and `batch`. A batch handler pays one indirect
 * call per batch instead of one per record, which matters when the work per record is
 * a few instructions (a counter increment, a bitmap test); the records arrive in the
 * same order either way. */
typedef struct cr_handler_type {
    cr_handler_fn fn;   /* called once per record */
    cr_batch_fn batch;  /* called once per batch of consecutive records */
    /* Combining (optional; include/courier/dedup.h builds these from named rules).
     * When key_len > 0, two records for this handler with the same final destination,
     * the same length and equal first key_len bytes that meet in one send buffer (at
     * their source, or at a rank that forwards them under a route) become one:
     * combine(dst, src, len, combine_user) merges src's payload into dst's, in the
     * buffer, and the handler runs once for the result, with the sender of the first.
     * So every contribution is applied exactly once, but not always by its own
     * record. 0 < key_len <= CR_MAX_KEY, key_len <= the payload length. */
    size_t key_len;
    void (*combine)(void *dst, const void *src, size_t len, void *user);
    void *combine_user;
    /* Bounded memory (docs/flow_control.md). When true, a cr_async or cr_async_bcast
     * this handler makes that finds its rank over the memory cap (its send buffers and
     * its queue to itself hold COURIER_BUFFER_CAP bytes, or a buffer waits for a send
     * slot) does not return at once: it handles received buffers until the rank is
     * below the cap, at most COURIER_NEST_LIMIT calls deep. So handlers that send more
     * than they receive keep the rank within the bound, as user code does. Other
     * handlers, this one included, then run inside this call: set it only if the
     * handler keeps no state across its cr_async calls that another call of it would
     * break (the payload it passed has been copied by then). */
    bool reentrant;
    /* Optional: a name for diagnostics (the watchdog's report of the last handler a
     * rank ran, the handler-table check). Not copied: a string literal, or one that
     * lives as long as the comm. */
    const char *name;
} cr_handler_type;

/* Longest key of a combining handler, in bytes. */
#define CR_MAX_KEY 64

/* Largest number of handlers per comm (the id travels in 16 bits). */
#define CR_MAX_HANDLERS 65535
/* Largest payload of one message, in bytes (one MPI send of int-sized count). */
#define CR_MAX_PAYLOAD ((size_t)0x7fff0000)

/* How a rank receives buffers. Both are correct; see docs/receive.md for the
 * measurement behind the default. */
typedef enum cr_recv_mode {
    CR_RECV_PROBE = 0,   /* MPI_Improbe + MPI_Mrecv into one reusable buffer */
    CR_RECV_PREPOST = 1, /* a ring of pre-posted MPI_Irecv; large buffers probed */
} cr_recv_mode;

/* How a rank bounds what handlers send (docs/flow_control.md). */
typedef enum cr_flow_policy {
    /* A reentrant handler's cr_async over the cap handles received buffers until the
     * rank is below it, nested up to COURIER_NEST_LIMIT deep. */
    CR_FLOW_WAITS = 0,
    /* The default. Records carry their generation (handlers between them and user
     * code); a rank parks what it receives, handles the deepest generation first, and
     * pauses handling, between two records of a reentrant handler or a route, while
     * its send buffers and sends in flight hold the cap. */
    CR_FLOW_DEEP_HELD = 1,
} cr_flow_policy;

/* Runtime settings. Start from cr_config_init() and change fields, or read the
 * COURIER_* environment variables with cr_config_from_env(). */
typedef struct cr_config {
    size_t buffer_bytes;     /* COURIER_BUFFER_SIZE: a destination's buffer is sent
                                when it holds this many bytes (1 B .. 1 GiB) */
    bool buffer_auto;        /* COURIER_BUFFER_SIZE=auto: the comm chooses buffer_bytes
                                (1 to 64 KiB, at most buffer_bytes) when it is created,
                                by the cost model of courier/tune.h */
    size_t buffer_cap_bytes; /* COURIER_BUFFER_CAP: when all buffers together hold
                                this many bytes, the largest are sent first */
    unsigned max_inflight;   /* COURIER_MAX_INFLIGHT: sends in flight per rank before
                                cr_async() waits (back-pressure), 1 .. 65536 */
    double flush_interval;   /* COURIER_FLUSH_INTERVAL: seconds a buffer may wait
                                before the timer sends it; 0 turns the timer off */
    double watchdog_seconds; /* COURIER_WATCHDOG: a barrier that makes no progress
                                for this long prints each stuck rank's state; 0 = off */
    int verbosity;           /* COURIER_VERBOSE: 0 quiet .. 3 trace */
    cr_recv_mode recv_mode;  /* COURIER_RECV: probe | prepost */
    cr_route route;          /* COURIER_ROUTE: direct | nr | nlnr | grid[:AxB..] | hypercube
                                | auto (chosen at creation: courier/tune.h) */
    unsigned node_size;      /* COURIER_NODE_SIZE: 0 = nodes as MPI reports them; k > 0 =
                                virtual nodes of k consecutive ranks */
    cr_nbx_protocol exchange; /* COURIER_EXCHANGE: nbx | pex | pcx, the protocol of
                                cr_nbx_exchange (include/courier/nbx.h) */
    cr_allreduce_algorithm allreduce; /* COURIER_ALLREDUCE: auto | binomial | butterfly |
                                dissemination[:n] | bruck[:n] (include/courier/coll.h) */
    unsigned allreduce_ports; /* the n of dissemination:n and bruck:n; 0 = automatic */
    cr_allgather_algorithm allgather; /* COURIER_ALLGATHER: auto | ring | neighbor |
                                recdoubling | bruck | sparbit */
    unsigned nest_limit;     /* COURIER_NEST_LIMIT: how many calls deep a reentrant
                                handler's cr_async handles received buffers while its
                                rank is over the cap (0 .. 64; 0 = never) */
    cr_flow_policy flow;     /* COURIER_FLOW: deep-held (default) | waits
                                (docs/flow_control.md) */
    size_t park_cap_bytes;   /* COURIER_PARK_CAP: under deep-held, a rank stops taking
                                other ranks' buffers while this many bytes of theirs wait
                                in its park; 0 = automatic: max_inflight buffers of
                                buffer_bytes, what one sender may have in flight */
    unsigned park_relief_polls; /* COURIER_PARK_RELIEF: under deep-held, a rank that is
                                paused, refuses buffers and makes no progress takes one
                                buffer anyway (a relief): after one poll, each further
                                relief while it handles nothing after twice as many
                                polls, up to this many; 0 = never, which can deadlock
                                (for tests) */
    unsigned watchdog_abort; /* COURIER_WATCHDOG_ABORT: after this many watchdog intervals
                                without progress, end the job with one line naming the
                                ranks not in the barrier and the last handler each ran
                                (0 = never, the default; at most 1000) */
    unsigned dense_ranks;    /* COURIER_DENSE_RANKS: in a job of up to this many ranks
                                (default 1024) a rank keeps its send state in a table of
                                one entry per rank (one load per record); above it, in a
                                map holding only the destinations it has used (memory
                                follows the partners, not P); 0 = always the map */
    bool shm;                /* COURIER_SHM: on (true, the default) = blocks between ranks
                                of one node go through rings in shared memory
                                (docs/shared_memory.md); off = through MPI */
    size_t shm_bytes;        /* COURIER_SHM_BYTES: shared memory a rank offers the other
                                ranks of its node for their rings (default 16 MiB); too
                                little for 2 slots per sender turns the path off */
    bool print_stats;        /* COURIER_STATS: 1 = print the counters over all ranks
                                (cr_stats_print) at cr_comm_destroy; 0 = no */
    char trace_path[256];    /* COURIER_TRACE: write a timeline of the runtime's events
                                to this file (Chrome trace JSON, docs/tracing.md);
                                "" = off. Only the first traced comm of a process. */
    char tune_file[256];     /* COURIER_TUNE_FILE: the costs COURIER_ROUTE=auto and
                                COURIER_BUFFER_SIZE=auto choose with, as courier-calibrate
                                wrote them (docs/tuning.md); "" = the defaults. A file
                                that cannot be used ends cr_comm_create with one line. */
    bool tune_calibrate;     /* COURIER_TUNE=calibrate: when something is auto,
                                cr_comm_create measures the costs first (cr_calibrate,
                                a few milliseconds) instead of reading tune_file;
                                false (COURIER_TUNE=off) = the file or the defaults */
} cr_config;

/* Fill `cfg` with the defaults. Local. */
void cr_config_init(cr_config *cfg);

/* Override fields of `cfg` from the COURIER_* environment variables that are set.
 * Returns 0, or -1 with a one-line message naming the variable, its value and the
 * accepted range in `err` (if not NULL); `cfg` is unchanged on error. Local. */
int cr_config_from_env(cr_config *cfg, char *err, size_t errlen);

/* Check that every field of `cfg` is in range. Returns 0, or -1 with a one-line
 * message in `err`. Local. */
int cr_config_validate(const cr_config *cfg, char *err, size_t errlen);

/* Create a mailbox on `comm` (collective over `comm`). The runtime duplicates
 * `comm`, so its traffic never matches the caller's. `cfg` may be NULL: the defaults
 * with the environment applied. An invalid configuration on any rank aborts the job
 * with a message. The caller keeps ownership of `comm` and `cfg`. */
cr_comm *cr_comm_create(MPI_Comm comm, const cr_config *cfg);

/* Finish all traffic (as cr_barrier) and free the mailbox and its duplicated
 * communicators. Collective; not from a handler. */
void cr_comm_destroy(cr_comm *comm);

/* This rank's number and the number of ranks in the comm (those of the MPI
 * communicator it was created on). Local. */
int cr_comm_rank(const cr_comm *comm);
int cr_comm_size(const cr_comm *comm);
/* The configuration in effect (after defaults and environment). Local; the comm
 * owns it, and it lives as long as the comm. */
const cr_config *cr_comm_config(const cr_comm *comm);
/* The node layout and the resolved route the comm uses. Owned by the comm. */
const cr_layout *cr_comm_layout(const cr_comm *comm);
const cr_router *cr_comm_router(const cr_comm *comm);

/* Register a handler and return its id (0, 1, 2, ... in call order). Collective:
 * every rank registers the same handlers in the same order, as with MPI datatypes.
 * The ranks compare each registration: a different number of handlers, or a handler
 * that differs in its function, kind (per record, batch, combining, request), key
 * length, combine rule or reentrant flag, ends the job with one line naming the
 * handler id and two ranks that disagree (functions are compared by their offset in
 * the executable, so every rank must run the same program). `user` is passed to every call.
 * Runs the event loop while it waits for the other ranks, so handlers registered
 * earlier may run, for messages faster ranks sent after they returned from it, and
 * so may the handler being registered: a handler that sends to its own id must not
 * read that id from where the caller stores cr_register's result before it has
 * returned (apps/cc.c registers first and sends only after a barrier). */
int cr_register(cr_comm *comm, cr_handler_fn fn, void *user);

/* Register a handler described by `type` (copied; the caller keeps it) and return its
 * id. Collective, and may run handlers, as cr_register. cr_register(c, fn, user) is
 * cr_register_type with only `fn` set. */
int cr_register_type(cr_comm *comm, const cr_handler_type *type, void *user);

/* Send `len` bytes of `payload` to `handler` on rank `dest`. Local: the payload is
 * copied before the call can run any handler, and before it returns. Large payloads
 * (above the buffer size) travel as a send of their own. From user code, may run
 * handlers of incoming messages while it waits for a free send slot or for the
 * memory the rank holds to fall below COURIER_BUFFER_CAP (back-pressure), or polls.
 * From a handler, runs none, unless the handler is reentrant (cr_handler_type) and
 * the rank is over the cap: then it handles received buffers before it returns. */
void cr_async(cr_comm *comm, int dest, int handler, const void *payload, size_t len);

/* Send n records of `len` bytes each for `handler`: record i is the len bytes at
 * payloads + i * len, to rank dests[i]. The same as n calls of cr_async in order
 * (the same checks, the same back-pressure and handling), at a lower cost per
 * record: the checks that depend only on the handler and the size are made once,
 * and records that join an open run of their destination's buffer are appended in a
 * loop with nothing else to do. Local; may run handlers as cr_async does. */
void cr_async_many(cr_comm *comm, int handler, const int *dests, const void *payloads,
                   size_t len, size_t n);

/* Send the same message to every rank, the caller included. Local; may run handlers
 * as cr_async does (after the payload is copied). Under a route other than direct,
 * one copy per node crosses between nodes and is fanned out on the node it
 * reaches. */
void cr_async_bcast(cr_comm *comm, int handler, const void *payload, size_t len);

/* Send the same message to each of the n ranks in `ranks` (each at most once; the
 * caller may be one of them): the handler runs once on each, with the caller as
 * `src`. Local; may run handlers as cr_async does (after the payload and the list are
 * copied). Under a route, one copy travels per next hop, not per destination: where
 * the routes to several listed ranks share a hop, one record carries the payload and
 * the list of ranks beyond it, and is split again where the routes part. A rank out
 * of range or listed twice ends the job with one line. The record holds the payload
 * and 4 bytes per listed rank, at most CR_MAX_PAYLOAD in all. */
void cr_async_mcast(cr_comm *comm, const int *ranks, size_t n, int handler, const void *payload,
                    size_t len);

/* Send every buffered message now, without waiting for delivery. Local. */
void cr_flush(cr_comm *comm);

/* Make progress without blocking: complete sends, receive and handle what has
 * arrived, run due timers. Returns the number of messages handled. Local. */
size_t cr_progress(cr_comm *comm);

/* Return when every message sent on `comm` before the barrier, on any rank, and
 * every message sent by the handlers they caused, recursively, has been handled.
 * Collective. Must not be called from a handler. */
void cr_barrier(cr_comm *comm);

/* Mark a phase of the program in the COURIER_TRACE timeline: a span from
 * cr_trace_begin to the matching cr_trace_end, on a track of its own under the rank's
 * runtime events; phases nest. `name` is copied (cut at 127 bytes). Local; cheap and
 * harmless when tracing is off. A cr_trace_end without a cr_trace_begin ends the job
 * with one line. */
void cr_trace_begin(cr_comm *comm, const char *name);
void cr_trace_end(cr_comm *comm);

/* Counters of one rank. Messages are cr_async() records; "mpi" counts are the MPI
 * sends and receives that carried them. */
typedef struct cr_stats {
    uint64_t msgs_sent;        /* records this rank created with cr_async */
    uint64_t bytes_sent;       /* their payload bytes */
    uint64_t msgs_handled;     /* records handled on this rank */
    uint64_t bytes_handled;    /* their payload bytes */
    uint64_t flushes_size;     /* buffers sent because they reached buffer_bytes */
    uint64_t flushes_cap;      /* ... because all buffers reached buffer_cap_bytes */
    uint64_t flushes_timer;    /* ... because they were older than flush_interval */
    uint64_t flushes_barrier;  /* ... by cr_barrier, cr_flush or cr_comm_destroy */
    uint64_t flushes_relay;    /* ... because they held forwarded records and no more arrived */
    uint64_t mpi_sends;        /* MPI sends issued */
    uint64_t mpi_bytes_sent;   /* bytes in them (headers included) */
    uint64_t mpi_recvs;        /* MPI receives completed */
    uint64_t slot_waits;       /* times cr_async waited for a free send slot */
    uint64_t deferred_flushes; /* flushes postponed because a handler found no slot */
    uint64_t peak_buffered_bytes; /* most bytes held in send buffers at once */
    uint64_t peak_inflight;    /* most sends in flight at once */
    /* Memory, per component (docs/flow_control.md): each peak since the last reset. */
    uint64_t peak_inflight_bytes; /* most bytes of blocks held by sends in flight at once */
    uint64_t peak_self_bytes;  /* most bytes of buffers to this rank itself waiting to be handled */
    uint64_t peak_memory_bytes; /* most bytes held at once: send buffers, sends in flight,
                                  buffers to itself and (COURIER_FLOW=deep-held) buffers
                                  parked */
    uint64_t peak_handler_output; /* most payload bytes one handler call sent (cr_async and
                                  cr_async_bcast from handlers; forwarded records not included) */
    uint64_t throttled_us;     /* microseconds user code waited for a send slot or for its own
                                  queue to shorten (the slot_waits), and reentrant handlers
                                  waited over the cap (the handler_waits) */
    uint64_t handler_waits;    /* times a reentrant handler's call, or a forwarded record,
                                  found the rank over the cap and handled buffers until it
                                  was below (docs/flow_control.md) */
    uint64_t peak_nesting;     /* most such waits inside each other at once */
    uint64_t cap_overruns;     /* calls that found the rank over the cap at COURIER_NEST_LIMIT
                                  and went on without waiting: the bound holds while 0 */
    uint64_t barriers;         /* cr_barrier calls */
    uint64_t barrier_epochs;   /* termination rounds over all barriers */
    uint64_t forwarded;        /* records this rank passed on for other ranks (routing) */
    uint64_t partners;         /* distinct ranks this rank sent MPI messages to */
    uint64_t partners_off_node; /* ... of them on other nodes */
    uint64_t send_states;      /* destinations this rank keeps send state for: every rank
                                  up to COURIER_DENSE_RANKS, else those it has used (its
                                  partners and the hops of its routes); never reset */
    uint64_t mpi_sends_off_node; /* MPI sends to other nodes */
    uint64_t mpi_bytes_on_node;  /* bytes of MPI sends within the node */
    uint64_t mpi_bytes_off_node; /* bytes of MPI sends to other nodes */
    uint64_t local_buffers;    /* buffers of records to this rank itself, handed to its own
                                  event loop without MPI (not in mpi_sends or mpi_recvs) */
    uint64_t batches;          /* calls of batch handlers (cr_handler_type.batch) */
    uint64_t merged_at_source; /* records of combining handlers this rank merged into an
                                  earlier record in its own send buffer (cr_async) */
    uint64_t merged_at_hops;   /* ... records it forwarded for others, merged (routes) */
    uint64_t merged_bytes;     /* bytes of buffer space these merges saved */
    uint64_t peak_parked_bytes; /* COURIER_FLOW=deep-held: most bytes of received buffers
                                  parked and not yet handled at once */
    uint64_t reliefs;          /* ... buffers taken over the park cap to break a cycle of
                                  paused ranks (docs/flow_control.md) */
    uint64_t shm_sends;        /* of mpi_sends, the blocks copied into a ring in memory
                                  shared with the receiver's node (COURIER_SHM) */
    uint64_t deepest_generation; /* ... the deepest generation of the records handled here
                                  (handlers between them and user code; at most 15, which
                                  deeper chains share) */
    uint64_t tune_switches;    /* times COURIER_ROUTE=auto or COURIER_BUFFER_SIZE=auto moved
                                  the comm to another route or buffer size after a barrier
                                  (docs/tuning.md) */
} cr_stats;

/* Copy this rank's counters. Local. */
void cr_stats_get(const cr_comm *comm, cr_stats *out);

/* The most bytes this rank's mailbox may hold at once (cr_stats.peak_memory_bytes)
 * under the settings in effect, for a program whose handler depth is `depth` (the
 * longest chain of handlers each sending from the one before: 0 when only user code
 * sends), as docs/flow_control.md derives it. With C = buffer_cap_bytes, K =
 * buffer_bytes (rounded up to 8), S = max_inflight, L = nest_limit, Y = the most
 * buffer bytes one append (waits) or one handler call (deep-held) of this rank added
 * so far (records with padding, route blocks and run headers), Q = the park cap, R =
 * the most bytes of buffers taken as reliefs that waited in this rank's park at once
 * (0 without reliefs, cr_stats.reliefs), B = C + Y + K:
 *   waits:      C + (L + 1) Y + (S + 1) K, if no call reached the nesting limit
 *               (cap_overruns 0) and only reentrant handlers sent; else no bound
 *               (UINT64_MAX)
 *   deep-held:  C + Y + 2K  +  Q + B + R  +  (depth + 1)(K + Y), for depth up to 15
 *               (the generations records carry); else no bound (UINT64_MAX)
 * The depth term is necessary: no runtime can hold every program below a bound that
 * does not grow with its depth (docs/flow_control.md, "No runtime can bound memory
 * for every program"). Under deep-held a reentrant handler is called for one record
 * at a time and any other for a run of records, so Y is as large as what the latter
 * sends for a run. Local; runs no handlers. */
uint64_t cr_memory_bound(const cr_comm *comm, unsigned depth);
/* Zero this rank's counters, and those of the modules attached to the comm (such as
 * cr_dedup_stats). Local. */
void cr_stats_reset(cr_comm *comm);
/* Print min / mean / max of every counter over all ranks to `out` on rank 0, then
 * the counters of the modules attached to the comm (such as cr_dedup_stats).
 * Collective; call it outside handlers. */
void cr_stats_print(cr_comm *comm, FILE *out);

#ifdef __cplusplus
}
#endif

#endif
