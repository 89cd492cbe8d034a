/* The sending calls' shared helpers (send.c), for multicast.c and dispatch.c. */
#ifndef COURIER_MAILBOX_SEND_H
#define COURIER_MAILBOX_SEND_H

#include "mailbox/mailbox_internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The checks every sending call makes (a clear fatal error on bad input),
 * the counts of what user code sent (which may poll the network, and under waits make
 * a reentrant handler wait), and the broadcast's fan-out on the node it reached. */
void cr_bad_message(const cr_comm *c, const char *fn, int handler, const void *payload,
                    size_t len);
static inline void cr_check_message(const cr_comm *c, const char *fn, int handler,
                                    const void *payload, size_t len)
{
    if ((unsigned)handler >= c->handlers.count || len > CR_MAX_PAYLOAD || (len && !payload))
        cr_bad_message(c, fn, handler, payload, len);
}
/* Is `handler` a combining one? Then its payloads must hold its key (fatal if not). */
bool cr_check_key(const cr_comm *c, const char *fn, int handler, size_t len);
void cr_count_sent(cr_comm *c, uint64_t msgs, size_t len);
void cr_bcast_fanout(cr_comm *c, int handler, int origin, const void *payload, size_t len);

#endif
