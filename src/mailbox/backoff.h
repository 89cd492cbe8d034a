/* How a waiting rank backs off while its polls find nothing: the one definition,
 * used by the event loop (progress.c) and by the wait by handling (flow_waits.c).
 *
 * A wait needs another rank to move, and with ranks oversubscribing the cores that
 * rank needs this one's core. So after CR_BACKOFF_SPIN_POLLS empty polls a waiting
 * rank yields the processor at every poll, and after CR_BACKOFF_YIELD_POLLS more it
 * sleeps, from CR_BACKOFF_SLEEP_MIN doubling up to CR_BACKOFF_SLEEP_MAX, until a
 * poll finds work again. */
#ifndef COURIER_MAILBOX_BACKOFF_H
#define COURIER_MAILBOX_BACKOFF_H

#include <stdbool.h>

#define CR_BACKOFF_SPIN_POLLS 64
#define CR_BACKOFF_YIELD_POLLS 256
#define CR_BACKOFF_SLEEP_MIN 20e-6
#define CR_BACKOFF_SLEEP_MAX 1e-3

typedef struct cr_backoff {
    unsigned empty_polls; /* polls in a row that found nothing */
    double sleep;         /* the current sleep in seconds, 0 before the first */
} cr_backoff;

typedef enum cr_backoff_step {
    CR_BACKOFF_SPIN,  /* poll again at once */
    CR_BACKOFF_YIELD, /* yield the processor, then poll */
    CR_BACKOFF_SLEEP, /* sleep for b->sleep seconds, then poll */
} cr_backoff_step;

/* A poll found work: spin again. */
static inline void cr_backoff_reset(cr_backoff *b)
{
    b->empty_polls = 0;
    b->sleep = 0;
}

/* A poll found nothing: what to do before the next. `stay_awake`: work in flight
 * completes within a message time (a collective), so yield but do not sleep. */
static inline cr_backoff_step cr_backoff_next(cr_backoff *b, bool stay_awake)
{
    b->empty_polls++;
    if (b->empty_polls < CR_BACKOFF_SPIN_POLLS)
        return CR_BACKOFF_SPIN;
    if (b->empty_polls < CR_BACKOFF_SPIN_POLLS + CR_BACKOFF_YIELD_POLLS || stay_awake)
        return CR_BACKOFF_YIELD;
    double twice = 2 * b->sleep;
    b->sleep = b->sleep == 0 ? CR_BACKOFF_SLEEP_MIN
                             : (twice < CR_BACKOFF_SLEEP_MAX ? twice : CR_BACKOFF_SLEEP_MAX);
    return CR_BACKOFF_SLEEP;
}

#endif
