/* Two data planes as one (near_far.h). The near plane queues what it cannot copy at
 * once, so its held blocks count against the far plane's slots: the bound on sends
 * in flight (and the memory they pin) stays the one the caller configured. */
#include "transport/near_far.h"

#include "common/fatal.h"

#include <stddef.h>
#include <stdlib.h>

typedef struct near_far {
    cr_data_plane base;
    cr_data_plane *near, *far;
    bool near_first; /* which plane polls first next time */
} near_far;

static near_far *nf(const cr_data_plane *d)
{
    return (near_far *)((char *)d - offsetof(near_far, base));
}

static int slots_free(cr_data_plane *d)
{
    near_far *n = nf(d);
    return n->far->ops->slots_free(n->far) - n->near->ops->inflight(n->near);
}

static int inflight(cr_data_plane *d)
{
    near_far *n = nf(d);
    return n->far->ops->inflight(n->far) + n->near->ops->inflight(n->near);
}

static bool send(cr_data_plane *d, int dest, char *data, size_t len, size_t cap)
{
    near_far *n = nf(d);
    cr_data_plane *p = n->near->ops->reaches(n->near, dest) ? n->near : n->far;
    return p->ops->send(p, dest, data, len, cap);
}

static int complete(cr_data_plane *d, cr_give_back_fn give_back, void *arg)
{
    near_far *n = nf(d);
    int moved = n->near->ops->complete(n->near, give_back, arg);
    return moved + n->far->ops->complete(n->far, give_back, arg);
}

/* The planes take turns at going first, so neither starves the other when the
 * budget is small. */
static size_t poll(cr_data_plane *d, int budget, cr_deliver_fn deliver, void *arg)
{
    near_far *n = nf(d);
    n->near_first = !n->near_first;
    cr_data_plane *first = n->near_first ? n->near : n->far;
    cr_data_plane *second = n->near_first ? n->far : n->near;
    size_t got = first->ops->poll(first, budget, deliver, arg);
    if ((int)got >= budget)
        return got;
    return got + second->ops->poll(second, budget - (int)got, deliver, arg);
}

static void next_phase(cr_data_plane *d)
{
    near_far *n = nf(d);
    n->near->ops->next_phase(n->near);
    n->far->ops->next_phase(n->far);
}

static uint64_t shared_sends(const cr_data_plane *d)
{
    const near_far *n = nf(d);
    return n->near->ops->shared_sends(n->near);
}

static const cr_data_ops near_far_ops = {
    .slots_free = slots_free,
    .inflight = inflight,
    .reaches = NULL,
    .send = send,
    .complete = complete,
    .poll = poll,
    .next_phase = next_phase,
    .shared_sends = shared_sends,
};

cr_data_plane *cr_near_far_create(cr_data_plane *near, cr_data_plane *far)
{
    near_far *n = cr_xcalloc(1, sizeof *n);
    n->base.ops = &near_far_ops;
    n->near = near;
    n->far = far;
    return &n->base;
}

void cr_near_far_destroy(cr_data_plane *d)
{
    if (d)
        free(nf(d));
}
