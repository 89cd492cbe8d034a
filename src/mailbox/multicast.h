/* The multicast's records (multicast.c): what dispatch needs to read one that
 * arrived and to pass its other destinations on. */
#ifndef COURIER_MAILBOX_MULTICAST_H
#define COURIER_MAILBOX_MULTICAST_H

#include "mailbox/mailbox_internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A multicast record as it arrived: the user's handler and payload, how many
 * destinations it lists, and whether this rank is one of them. */
typedef struct cr_mcast_view {
    const char *payload;
    uint32_t len;
    uint16_t handler;
    uint32_t ndest;
    bool mine;
} cr_mcast_view;

/* Read the multicast record rec[0, rec_len) from rank src; a record whose header,
 * destinations and length disagree ends the job (cr_fatal). Local. */
cr_mcast_view cr_mcast_read(const cr_comm *c, int src, const char *rec, size_t rec_len);

/* Send the record on to its destinations other than this rank, one record per next
 * hop, as created by `origin`, in the generation c->send_gen. Called while the
 * record is handled (dispatch.c), where no append waits. */
void cr_mcast_pass_on(cr_comm *c, const char *rec, size_t rec_len, const cr_mcast_view *v,
                      int origin);

#endif
