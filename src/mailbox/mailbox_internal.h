/* The cr_comm structure and the functions the mailbox files share with each other
 * and with src/nbx. Not installed. */
#ifndef COURIER_MAILBOX_INTERNAL_H
#define COURIER_MAILBOX_INTERNAL_H

#include "courier/mailbox.h"
#include "mailbox/outbuf.h"
#include "mailbox/record.h"
#include "mailbox/registry.h"
#include "mailbox/sendq.h"
#include "mailbox/trace.h"
#include "nbx/termination.h"
#include "nlnr/route_internal.h"

#include <ev.h>
#include <stdbool.h>

/* MPI tags on the data communicator. The low bit is the sender's barrier phase
 * parity: a rank receives only messages of its own phase, so a message sent after
 * a barrier is never handled by a rank still inside that barrier (at most two
 * adjacent phases coexist). In prepost mode, buffers above small_max bytes get
 * CR_TAG_LARGE, which is probed rather than pre-posted. */
enum { CR_TAG_SMALL = 2, CR_TAG_LARGE = 4 };

static inline int cr_data_tag(int base, unsigned parity)
{
    return base | (int)(parity & 1);
}

typedef enum cr_flush_cause {
    CR_FLUSH_SIZE = 1,
    CR_FLUSH_CAP,
    CR_FLUSH_TIMER,
    CR_FLUSH_BARRIER,
    CR_FLUSH_RELAY,
} cr_flush_cause;

typedef struct cr_recv {
    /* probe mode: one buffer, grown to the largest message seen */
    char *buf;
    size_t cap;
    /* prepost mode: a ring of receives of small_max bytes each */
    int npost;
    MPI_Request *reqs;
    char **bufs;
    int *done;
    MPI_Status *statuses;
} cr_recv;

/* The progress engine: a libev loop with MPI polling in prepare/check/idle
 * watchers and the flush, back-off and watchdog timers. */
typedef struct cr_engine {
    struct ev_loop *loop;
    ev_prepare prepare;  /* sends deferred buffers when slots have come free */
    ev_check check;      /* polls MPI after every loop iteration */
    ev_idle idle;        /* keeps a waiting loop from blocking; counts empty polls */
    ev_timer backoff;    /* wakes a waiting loop that went to sleep */
    ev_timer flush_timer;
    ev_timer watchdog;
    ev_signal dump;      /* SIGUSR1 prints the rank's state (first comm only) */
    unsigned empty_polls;
    double sleep;        /* current back-off sleep in seconds, 0 while spinning */
    double sleep_start;  /* trace time the current sleep began */
    bool last_poll_worked;
} cr_engine;

struct cr_comm {
    MPI_Comm data; /* record buffers */
    MPI_Comm term_comm; /* barrier and registration waves (non-blocking reductions) */
    MPI_Comm ctrl; /* the runtime's blocking collectives: creation, statistics */
    MPI_Comm exchange_comm; /* cr_sparse_exchange, or MPI_COMM_NULL before the first */
    uint64_t exchanges;     /* cr_sparse_exchange calls so far (tag parity) */
    MPI_Comm coll_comm;     /* collectives (src/coll), or MPI_COMM_NULL before the first */
    uint64_t coll_seq;      /* collectives started (their tags) */
    struct cr_request *coll_active; /* started and not complete */
    struct cr_coll_cache *coll_cache; /* plans built so far (src/coll/coll.c) */
    int rank;
    int size;
    cr_config cfg;
    size_t small_max; /* largest buffer sent with CR_TAG_SMALL (same on all ranks) */
    unsigned parity;  /* barriers completed, mod 2: the phase of sends and receives */

    cr_registry handlers;
    cr_outbufs out;
    cr_sendq sendq;
    cr_recv recv;
    cr_engine engine;
    cr_term term;
    cr_stats stats;

    cr_layout *layout;
    cr_router *router;
    bool routed;          /* a route other than direct: records may need forwarding */
    bool relay_pending;   /* some buffer holds forwarded records (see cr_flush_relays) */
    uint8_t *sent_to;     /* [P] 1 if this rank sent an MPI message there since the stats reset */

    uint64_t mpi_sent_total;    /* data messages issued, ever (termination counter) */
    uint64_t mpi_handled_total; /* data messages fully handled, ever */

    int handler_depth;    /* > 0 while a received buffer is being handled */
    bool waiting;         /* inside cr_wait_until */
    bool in_loop;         /* inside ev_run */
    bool cap_blocked;     /* the cap flush found no free slot; retry after a send completes */
    bool in_cap_flush;
    int ndeferred;        /* buffers whose flush waits for a free slot */
    unsigned poll_countdown;
    int *scratch;         /* size P, for the cap flush's ordering */
    char *bcast_copy;     /* cr_async_bcast's private copy of the payload (see there) */
    size_t bcast_copy_cap;
    double now;           /* loop time at the last iteration: stamps buffers without a call */
    double last_activity; /* loop time of the last observable progress, for the watchdog */
    const char *wait_reason; /* what cr_wait_until is waiting for, for the watchdog */
    uint64_t barriers_entered; /* cr_barrier calls so far, never reset (watchdog reports) */
    struct cr_watchdog *watch; /* watchdog reports (watchdog.c) */
    struct cr_trace *trace;    /* COURIER_TRACE timeline, or NULL (trace.h) */
};

/* True when the caller may block in cr_wait_until (user code, not a handler or a
 * loop callback). */
static inline bool cr_can_wait(const cr_comm *c)
{
    return c->handler_depth == 0 && !c->waiting && !c->in_loop;
}

/* comm.c: append a record for `dest` to the buffer of `hop`, flushing as cr_async
 * does. route == NULL writes a plain record. */
void cr_enqueue(cr_comm *c, int hop, int handler, uint16_t flags, const cr_rec_route *route,
                const void *payload, size_t len);
/* Enqueue a record received for another rank; its buffer is then sent as soon as
 * incoming traffic pauses (cr_flush_relays). */
void cr_relay(cr_comm *c, int hop, int handler, uint16_t flags, const cr_rec_route *route,
              const void *payload, size_t len);
/* Deliver a broadcast copy that reached this node: fan out to the node, then handle. */
void cr_bcast_fanout(cr_comm *c, int handler, int origin, const void *payload, size_t len);

/* flush.c: sending buffers */
bool cr_flush_dest(cr_comm *c, int dest, cr_flush_cause cause, bool may_wait);
bool cr_flush_all_nowait(cr_comm *c, cr_flush_cause cause);
void cr_flush_for_cap(cr_comm *c);
void cr_flush_aged(cr_comm *c, double now);
void cr_retry_deferred(cr_comm *c);
void cr_flush_relays(cr_comm *c);

/* nbx/termination.c: the collective half of cr_register */
void cr_term_register_wave(cr_comm *c);

/* recv.c: receiving and handling */
void cr_recv_init(cr_comm *c);
void cr_recv_free(cr_comm *c);
size_t cr_recv_poll(cr_comm *c, int budget);
/* The phase changed (a barrier returned): receive the new phase's tags. */
void cr_recv_next_phase(cr_comm *c);
void cr_dispatch(cr_comm *c, int src, const char *buf, size_t len);

/* progress.c: the event loop */
void cr_engine_init(cr_comm *c);
void cr_engine_free(cr_comm *c);
/* Complete finished sends; returns how many. */
int cr_complete_sends(cr_comm *c);
/* Complete sends, then (outside handlers) receive and handle. Returns the work done. */
size_t cr_poll(cr_comm *c);
size_t cr_engine_run_nowait(cr_comm *c);
/* Run the loop until done(c, NULL) is true; `reason` names the wait for the watchdog. */
void cr_wait_until(cr_comm *c, bool (*done)(cr_comm *, void *), void *arg, const char *reason);
/* A wait's `done` found work of its own (not mailbox traffic): stop backing off. */
void cr_engine_note_work(cr_comm *c);
double cr_now(cr_comm *c);
void cr_print_state(cr_comm *c, FILE *out, const char *why);

/* watchdog.c: one summary from rank 0 instead of a line from every stuck rank */
void cr_watchdog_init(cr_comm *c);
/* The watchdog timer fired (every half interval while the rank waits). */
void cr_watchdog_tick(cr_comm *c);
/* Rank 0 takes the reports that have arrived (cheap; called while it idles). */
void cr_watchdog_collect(cr_comm *c);
/* Collective, after the last barrier: receive reports still in flight, free. */
void cr_watchdog_free(cr_comm *c);

#endif
