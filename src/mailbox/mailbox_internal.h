/* The cr_comm structure and the functions the mailbox files share with each other.
 * Not installed. No file of the mailbox calls MPI: bytes move through c->tp
 * (src/transport). The modules built on the mailbox (coll, nbx, dedup, darray,
 * container, graph) see only module.h. */
#ifndef COURIER_MAILBOX_INTERNAL_H
#define COURIER_MAILBOX_INTERNAL_H

#include "courier/mailbox.h"
#include "courier/tune.h"
#include "mailbox/backoff.h"
#include "mailbox/combine.h"
#include "mailbox/outbuf.h"
#include "mailbox/park.h"
#include "mailbox/record.h"
#include "mailbox/registry.h"
#include "mailbox/termination.h"
#include "mailbox/trace.h"
#include "route/route_internal.h"
#include "transport/transport.h"

#include <ev.h>
#include <stdbool.h>

typedef enum cr_flush_cause {
    CR_FLUSH_SIZE = 1,
    CR_FLUSH_CAP,
    CR_FLUSH_TIMER,
    CR_FLUSH_BARRIER,
    CR_FLUSH_RELAY,
} cr_flush_cause;

/* The progress engine: a libev loop with MPI polling in prepare/check/idle
 * watchers and the flush, back-off and watchdog timers. */
/* The mailbox's side of the event loop (work.c): the engine calls these from its
 * watchers and knows nothing else of the mailbox. */
typedef struct cr_loop_work {
    void (*prepare)(cr_comm *c);           /* before the loop would block */
    bool (*check)(cr_comm *c);             /* after each iteration; true if it found work */
    void (*timer)(cr_comm *c, double now); /* the flush timer fired */
    void (*idle)(cr_comm *c);              /* the loop woke from a back-off sleep */
    void (*watchdog)(cr_comm *c);          /* the watchdog timer fired */
    void (*dump)(cr_comm *c, const char *why); /* print the rank's state (SIGUSR1) */
} cr_loop_work;
extern const cr_loop_work cr_mailbox_loop_work;

typedef struct cr_engine {
    const cr_loop_work *work;
    struct ev_loop *loop;
    ev_prepare prepare;  /* sends deferred buffers when slots have come free */
    ev_check check;      /* polls MPI after every loop iteration */
    ev_idle idle;        /* keeps a waiting loop from blocking; counts empty polls */
    ev_timer backoff;    /* wakes a waiting loop that went to sleep */
    ev_timer flush_timer;
    ev_timer watchdog;
    ev_signal dump;      /* SIGUSR1 prints the rank's state (first comm only) */
    cr_backoff backoff_state; /* empty polls and the current sleep (backoff.h) */
    double sleep_start;  /* trace time the current sleep began */
    double sim_timer;    /* simulation: virtual time the flush timer last ran */
    double last_full;    /* loop time of the last full iteration from user code's polls */
    bool last_poll_worked;
} cr_engine;

/* Records appended from user code between two polls of the network. */
#define CR_POLL_EVERY 1024
/* ... at most, after polls that found nothing (see cr_count_sent in send.c). */
#define CR_POLL_MAX 16384

/* Buffers this rank sent to itself, in order, waiting for the event loop to handle
 * them (a ring). They never go through the transport: no MPI send, no slot. */
typedef struct cr_selfq {
    cr_block *blocks;
    int head;
    int n;
    int cap;
    unsigned deepest; /* the deepest generation of a record queued since the queue was
                         last empty (0 when empty) */
} cr_selfq;

/* The flow policy (docs/flow_control.md), chosen once when the comm is created, the
 * way the transport is: what a rank does with a buffer that arrives, the receiving
 * half of a poll, where a walk over received records stops, what a handler's and a
 * forwarder's sends may wait for, and the memory bound that follows. Dispatch
 * (dispatch.c) calls the table and never asks which policy is on; the two tables are
 * in flow_waits.c and flow_deep_held.c. */
typedef struct cr_flow_ops {
    const char *name;
    /* A buffer arrived from src (or this rank handed one to itself): valid only
     * during the call. */
    void (*take)(cr_comm *c, int src, const char *buf, size_t len);
    /* The receiving half of a poll from the loop (no handler running); `worked`:
     * the poll already completed sends. Returns the work done. */
    size_t (*poll)(cr_comm *c, bool worked);
    /* The generation of what a handler of a record of generation `gen` sends. */
    uint16_t (*child_gen)(unsigned gen);
    /* Does a walk stop after one record of a handler so marked (cr_handler_type
     * reentrant), whose children may be deeper than the rest of the run? */
    bool (*stops_after)(bool reentrant);
    /* Is the rank paused, so that a walk stops here? */
    bool (*paused)(const cr_comm *c);
    /* A reentrant handler appended a record (its call has nothing left to do). */
    void (*reentrant_sent)(cr_comm *c);
    /* A record was passed on for another rank: what the policy does then, and
     * whether the walk stops here (one call per record passed on). */
    bool (*forwarded)(cr_comm *c);
    /* cr_memory_bound: the most the mailbox holds for trees `depth` deep. */
    uint64_t (*memory_bound)(const cr_comm *c, unsigned depth);
} cr_flow_ops;
extern const cr_flow_ops cr_flow_waits, cr_flow_deep_held;

/* A module attached to the comm (module.h). */
#define CR_MAX_MODULES 8
typedef struct cr_module {
    const struct cr_module_type *type;
    void *state;
} cr_module;

/* Flow control: what bounds a rank's memory and when user code and handlers wait
 * (docs/flow_control.md; the flow_*.c policies and flush.c). */
typedef struct cr_flow {
    int nest;             /* waits by handling inside each other now (flow_waits.c) */
    bool in_reentrant;    /* the handler running now is reentrant (cr_handler_type) */
    bool throttling;      /* user code waits for room (flush.c): its time is counted there */
    uint64_t sent_in_waits; /* payload bytes sent by handlers run inside waits, ever: not
                               the output of the handler that waited */
    uint64_t msgs_in_waits; /* ... and their records */
    uint64_t peak_call_wire; /* the most buffer bytes one handler call appended (records
                                with their padding, route blocks and run headers) */
    size_t largest_record;  /* the largest payload cr_async or cr_async_bcast took */
    bool unheld_output;     /* a handler that is not reentrant sent records */
    bool taking_relief;     /* deep-held: the buffer being received is a relief */
    size_t peak_relief_bytes; /* deep-held: most bytes of relief buffers in the park at once */
    bool cap_blocked;     /* the cap flush found no free slot; retry after a send completes */
    bool in_cap_flush;
    int ndeferred;        /* buffers whose flush waits for a free slot */
    int *scratch;         /* the cap flush's ordering of the active buffers */
    int scratch_cap;
    size_t inflight_bytes; /* capacity of the blocks the transport holds for sends in flight */
    size_t self_bytes;     /* capacity of the blocks queued to this rank itself */
    size_t buffer_room;    /* the cap less the two above: what the send buffers may hold
                              before an append takes the slow path (cr_update_room) */
} cr_flow;

/* What tuning decides at run time (autotune.c, docs/tuning.md): the route, the
 * buffer size, and the park's cap that follows from the buffer size unless
 * COURIER_PARK_CAP fixes it. It starts from the configuration (or the first choice
 * under auto), and only cr_autotune_* change it, through one function. */
typedef struct cr_choice {
    cr_route route;      /* the route records take now (never CR_ROUTE_AUTO) */
    size_t buffer_bytes; /* the send buffers' threshold now */
    size_t park_cap;     /* deep-held: the most a rank parks from other ranks */
} cr_choice;

/* COURIER_ROUTE=auto and COURIER_BUFFER_SIZE=auto (autotune.c, docs/tuning.md). */
typedef struct cr_tune_state {
    cr_choice now;         /* what the comm runs with now */
    cr_config in_effect;   /* the configuration with `now` in it: cr_comm_config's answer */
    bool route_auto, buffer_auto; /* chosen by the model, at creation and between epochs */
    cr_route route_given;  /* the route configured (kind CR_ROUTE_AUTO when chosen) */
    size_t most;           /* the buffer size configured: the transport's receives take
                              no larger, so no choice exceeds it */
    size_t largest_buffer; /* the largest buffer size this comm has run (the memory bound) */
    cr_tune_costs costs;   /* measured at creation, COURIER_TUNE_FILE's, or the defaults */
    bool measured;         /* COURIER_TUNE=calibrate measured them */
    bool from_machine;     /* the transport prescribed them (the simulation's) */
    cr_tune_shape file_shape; /* the shape of COURIER_TUNE_FILE's calibration read */
    uint64_t records_before_reset, bytes_before_reset; /* cr_stats' msgs_sent and
                              bytes_sent before their resets: the cumulative records this
                              rank created, which barrier waves sum */
    uint64_t merged_before_reset; /* ... and merged_at_source + merged_at_hops */
    uint64_t records_seen, bytes_seen, merged_seen; /* those sums at the end of the
                              last barrier */
    uint64_t epochs;       /* barriers completed */
    cr_tune_traffic window[CR_TUNE_WINDOW]; /* the last epochs that sent records, oldest
                              first: what the second choice weighs together */
    double own[CR_TUNE_WINDOW]; /* ... and the program's own time in each */
    int nwindow;
    double epoch_start;    /* when the last one ended on this rank */
} cr_tune_state;

struct cr_comm {
    cr_transport *tp; /* moves the buffers; owned by the comm */
    cr_module modules[CR_MAX_MODULES];
    int nmodules;
    bool modules_in_flight; /* some module has work in flight: the loop must not sleep */
    int rank;
    int size;
    /* The configuration as given (defaults, environment, the caller's fields): never
     * written after cr_comm_create_on, so const. What tuning changes is c->tune.now. */
    const cr_config cfg;

    cr_registry handlers;
    cr_outbufs out;
    cr_selfq self; /* buffers to this rank, not yet handled */
    cr_combine_index combine; /* records of combining handlers in the send buffers */
    cr_combine_key pending_key; /* the combining record being appended (append.c) */
    int ncombining;           /* combining handlers registered */
    cr_engine engine;
    cr_term term;
    cr_stats stats;

    cr_layout *layout;
    cr_router *router;
    bool routed;          /* a route other than direct: records may need forwarding */
    bool relay_pending;   /* some buffer holds forwarded records (see cr_flush_relays) */

    uint64_t mpi_sent_total;    /* data messages issued, ever (termination counter) */
    uint64_t shm_sends_base;    /* the transport's ring sends at the last cr_stats_reset */
    uint64_t mpi_handled_total; /* data messages fully handled, ever */

    int handler_depth;    /* > 0 while a received buffer is being handled */
    const cr_flow_ops *fops; /* COURIER_FLOW: waits or deep-held (flow_*.c) */
    uint16_t send_gen;    /* the generation of what is appended now (record.h) */
    cr_park park;         /* under deep-held: received buffers not yet handled */
    unsigned relief_streak; /* under deep-held: reliefs taken since the rank last handled
                               a parked record */
    unsigned refused_polls; /* under deep-held: polls in a row that refused buffers and
                               found nothing else to do */
    int trace_phases;     /* cr_trace_begin calls not yet ended */
    int last_handler;     /* id + 1 of the handler that ran last; 0 = none yet (the
                             watchdog names it) */
    bool waiting;         /* inside cr_wait_until */
    bool in_loop;         /* inside ev_run */
    unsigned poll_countdown;
    unsigned poll_every;  /* records between user code's polls: CR_POLL_EVERY .. CR_POLL_MAX */
    char *bcast_copy;     /* cr_async_bcast's private copy of the payload (see there) */
    size_t bcast_copy_cap;
    struct cr_mcast_scratch *mcast_free; /* cr_async_mcast's working blocks, for reuse */
    cr_flow flow;         /* memory bounds and waits (docs/flow_control.md) */
    double now;           /* loop time at the last iteration: stamps buffers without a call */
    double last_activity; /* loop time of the last observable progress, for the watchdog */
    const char *wait_reason; /* what cr_wait_until is waiting for, for the watchdog */
    uint64_t barriers_entered; /* cr_barrier calls so far, never reset (watchdog reports) */
    struct cr_watchdog *watch; /* watchdog reports (watchdog.c) */
    struct cr_trace *trace;    /* COURIER_TRACE timeline, or NULL (trace.h) */
    cr_tune_state tune;
};

/* True when the caller may block in cr_wait_until (user code, not a handler or a
 * loop callback). */
static inline bool cr_can_wait(const cr_comm *c)
{
    return c->handler_depth == 0 && !c->waiting && !c->in_loop;
}

/* flush.c: sending buffers */
/* The handler id of multicast records (multicast.c): never registered
 * (CR_MAX_HANDLERS keeps user ids below it). */
#define CR_MCAST_HANDLER 0xFFFFu
/* Free cr_async_mcast's working blocks (at cr_comm_destroy). */
void cr_mcast_free_all(cr_comm *c);

bool cr_flush_dest(cr_comm *c, int dest, cr_flush_cause cause, bool may_wait);
bool cr_flush_all_nowait(cr_comm *c, cr_flush_cause cause);
void cr_flush_for_cap(cr_comm *c);
void cr_flush_aged(cr_comm *c, double now);
void cr_retry_deferred(cr_comm *c);
void cr_flush_relays(cr_comm *c);

/* module.c: poll every module (work done; *in_flight if any has work in flight),
 * and destroy them all */
int cr_modules_poll(cr_comm *c, bool *in_flight);
void cr_modules_destroy(cr_comm *c);
void cr_modules_stats_reset(cr_comm *c);
void cr_modules_drain(cr_comm *c);
void cr_modules_route_changed(cr_comm *c);
void cr_modules_stats_print(cr_comm *c, FILE *out);

/* autotune.c: the costs COURIER_ROUTE=auto and COURIER_BUFFER_SIZE=auto choose with:
 * `measured` (COURIER_TUNE=calibrate), COURIER_TUNE_FILE's or the defaults, slowed
 * where ranks share processors (collective; false, with one line in why, if the file
 * cannot be used). The first choice, at creation before the router exists (local).
 * The second, after a barrier, from its last wave's sums over all ranks (the records
 * created ever, their bytes, the ranks' nanoseconds in the epoch): it may move the
 * comm to another route (collective then, on every rank alike) or buffer size. */
bool cr_autotune_costs(cr_comm *c, const cr_tune_costs *measured, char *why, size_t len);
void cr_autotune_first(cr_comm *c);
void cr_autotune_epoch(cr_comm *c, const cr_term_epoch *sums);
/* Move the comm to `route` as the second choice does (the modules told, then a
 * reduction so that no rank sends under the new route before every rank has it).
 * Collective; only where nothing is in flight, right after cr_barrier. The tests use
 * it to make moves the model would not make. */
void cr_autotune_take_route(cr_comm *c, const cr_route *route);

/* barrier.c: a barrier whose waves carry `kind` (cr_comm_destroy's is its own, so a
 * rank that skipped a cr_barrier is told, not matched with it) */
void cr_barrier_as(cr_comm *c, cr_wave_kind kind);
/* barrier.c: the collective half of cr_register */
void cr_term_register_wave(cr_comm *c);
/* cr_register_type with a module's kind name and extra signature (module.h). */
int cr_register_checked(cr_comm *c, const cr_handler_type *type, void *user, const char *kind,
                        uint64_t extra);

/* dispatch.c: receive and handle up to `budget` buffers from other ranks */
size_t cr_recv_poll(cr_comm *c, int budget);

/* The next hop of a record to dest: dest itself, or the route's choice. The one
 * place this is decided (cr_append, and modules through cr_module_next_hop). */
static inline int cr_next_hop(const cr_comm *c, int dest)
{
    if (!c->routed || dest == c->rank)
        return dest;
    return cr_router_next_hop(c->router, c->rank, dest);
}

/* Sends in flight, and whether another may start now. */
static inline int cr_inflight(cr_comm *c)
{
    return c->tp->data->ops->inflight(c->tp->data);
}
static inline bool cr_slot_free(cr_comm *c)
{
    return c->tp->data->ops->slots_free(c->tp->data) > 0;
}

/* comm.c: what a comm left open holds, in one line (the MPI transport prints it when
 * MPI_Finalize finds the comm never destroyed). */
void cr_comm_describe_open(void *comm, char *buf, size_t len);

/* comm.c: the core of cr_comm_create, on any transport (the MPI one, or a virtual
 * rank of the simulation). Takes ownership of tp and layout. `config_error` is this
 * rank's configuration error or NULL: any rank's error ends the job. `measured`: the
 * costs auto chooses with, as cr_calibrate measured them (the same on every rank), or
 * NULL for cfg's tune_file or the defaults. Collective. */
cr_comm *cr_comm_create_on(cr_transport *tp, cr_layout *layout, const cr_config *cfg,
                           const char *config_error, const cr_tune_costs *measured);

/* flush.c: complete finished sends; returns how many. */
int cr_complete_sends(cr_comm *c);
/* flush.c: the oldest buffer to this rank itself; false when there is none. */
bool cr_selfq_pop(cr_comm *c, cr_block *out);
void cr_selfq_free(cr_comm *c);
/* flush.c: the newest buffer to this rank itself; false when there is none. */
bool cr_selfq_pop_newest(cr_comm *c, cr_block *out);
/* dispatch.c: handle one buffer this rank sent itself (the newest if `newest`, else the
 * oldest); false when there is none. */
bool cr_self_handle_one(cr_comm *c, bool newest);
/* dispatch.c: handle up to `budget` buffers this rank sent itself; returns how many. */
size_t cr_self_poll(cr_comm *c, int budget);
/* work.c: complete sends, then (outside handlers) receive and handle. Returns the
 * work done. */
size_t cr_poll(cr_comm *c);

/* progress.c: the event loop */
void cr_engine_init(cr_comm *c, const cr_loop_work *work);
void cr_engine_free(cr_comm *c);
size_t cr_engine_run_nowait(cr_comm *c);
/* Run the loop until done(c, NULL) is true; `reason` names the wait for the watchdog. */
void cr_wait_until(cr_comm *c, bool (*done)(cr_comm *, void *), void *arg, const char *reason);
/* A wait's `done` found work of its own (not mailbox traffic): stop backing off. */
void cr_engine_note_work(cr_comm *c);
/* A wait that does not return to the loop (a wait by handling): run the watchdog's
 * tick now, with the loop's cached time brought up to date. */
void cr_engine_tick_watchdog(cr_comm *c);
double cr_now(cr_comm *c);
/* The current time (not the loop's cached one); the simulation's clock there. */
double cr_clock(cr_comm *c);
/* Bytes the mailbox holds now: send buffers, blocks in flight, blocks to itself, and
 * (under deep-held) received buffers parked and not yet handled. */
static inline size_t cr_held_bytes(const cr_comm *c)
{
    return c->out.total + c->flow.inflight_bytes + c->flow.self_bytes + c->park.bytes;
}
/* cr_stats.peak_memory_bytes as cr_stats_get gives it: what is held now may be
 * above the last peak taken. */
static inline uint64_t cr_peak_memory(const cr_comm *c)
{
    size_t held = cr_held_bytes(c);
    return held > c->stats.peak_memory_bytes ? held : c->stats.peak_memory_bytes;
}
/* Record the memory the mailbox holds now in the peaks of cr_stats (see there). Called
 * where a block changes hands, the only moments a component grows past its last
 * peak or the sum can reach a new one. */
void cr_note_memory(cr_comm *c);

/* Over the memory cap: the send buffers, the sends in flight and the queue to itself
 * together hold COURIER_BUFFER_CAP bytes. User code then waits in the event loop,
 * reentrant handlers and forwarded records wait by handling (flow_waits.c). */
static inline bool cr_over_cap(const cr_comm *c)
{
    return cr_held_bytes(c) >= c->cfg.buffer_cap_bytes;
}
/* Call whenever inflight_bytes or self_bytes changes. */
static inline void cr_update_room(cr_comm *c)
{
    size_t other = c->flow.inflight_bytes + c->flow.self_bytes;
    c->flow.buffer_room = c->cfg.buffer_cap_bytes > other ? c->cfg.buffer_cap_bytes - other : 0;
}
/* The most buffer bytes one record can take: the largest payload sent, padded, with
 * a route block and a run header of its own (the memory bounds' record term). */
static inline uint64_t cr_flow_record_bound(const cr_comm *c)
{
    return cr_rec_pad(c->flow.largest_record) + sizeof(cr_rec_route) + sizeof(cr_run_hdr);
}
/* flush.c: user code over the cap waits in the event loop until it is below. */
void cr_wait_below_cap(cr_comm *c);

/* watchdog.c: one summary from rank 0 instead of a line from every stuck rank, and
 * one rank's state line (the watchdog's fallback, SIGUSR1) */
void cr_print_state(cr_comm *c, FILE *out, const char *why);
void cr_watchdog_init(cr_comm *c);
/* The watchdog timer fired (every half interval while the rank waits). */
void cr_watchdog_tick(cr_comm *c);
/* Rank 0 takes the reports that have arrived (cheap; called while it idles). */
void cr_watchdog_collect(cr_comm *c);
/* Collective, after the last barrier: receive reports still in flight, free. */
void cr_watchdog_free(cr_comm *c);

#endif
