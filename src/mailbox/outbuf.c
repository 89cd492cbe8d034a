#include "mailbox/outbuf.h"

#include "common/fatal.h"

#include <stdlib.h>

/* A fresh buffer starts this small and doubles, so that a job with many destinations
 * does not reserve a full threshold for each of them. */
#define INITIAL_CAPACITY ((size_t)1024)

void cr_outbufs_init(cr_outbufs *o, int ndest, size_t threshold, int pool_max)
{
    /* All zero is an empty buffer with no open run: the table is not written here,
     * so a destination never used costs no resident memory (at P = 1024 on the
     * simulated transport, writing P entries per rank was 40% of a run). */
    o->bufs = cr_xcalloc((size_t)ndest, sizeof *o->bufs);
    o->nbufs = ndest;
    o->active = cr_xmalloc((size_t)ndest * sizeof *o->active);
    o->nactive = 0;
    o->threshold = threshold;
    o->block_size = (threshold + 7) & ~(size_t)7;
    o->total = 0;
    o->peak = 0;
    o->pool_max = pool_max > 0 ? pool_max : 0;
    o->pool = cr_xmalloc((size_t)(o->pool_max ? o->pool_max : 1) * sizeof *o->pool);
    o->npool = 0;
}

void cr_outbufs_free(cr_outbufs *o)
{
    /* Only a non-empty buffer holds memory (take detaches it; grow is always
     * followed by an append), and the non-empty ones are the active list. */
    for (int i = 0; i < o->nactive; i++)
        free(o->bufs[o->active[i]].data);
    for (int i = 0; i < o->npool; i++)
        free(o->pool[i]);
    free(o->bufs);
    free(o->active);
    free(o->pool);
    *o = (cr_outbufs){0};
}

void cr_outbufs_grow(cr_outbufs *o, int dest, size_t bytes)
{
    cr_outbuf *b = &o->bufs[dest];
    size_t need = b->len + bytes;
    if (need < b->len)
        cr_fatal("send buffer size overflow");
    if (!b->data && o->npool && need <= o->block_size) {
        b->data = o->pool[--o->npool];
        b->cap = o->block_size;
        b->limit = b->cap < o->threshold ? b->cap : o->threshold;
        return;
    }
    size_t limit = o->block_size > need ? o->block_size : need;
    size_t cap = b->cap ? b->cap : (INITIAL_CAPACITY < limit ? INITIAL_CAPACITY : limit);
    while (cap < need)
        cap = cap > limit / 2 ? limit : 2 * cap;
    b->data = cr_xrealloc(b->data, cap);
    b->cap = cap;
    b->limit = cap < o->threshold ? cap : o->threshold;
}

cr_block cr_outbufs_take(cr_outbufs *o, int dest)
{
    cr_outbufs_close_run(o, dest);
    cr_outbuf *b = &o->bufs[dest];
    cr_block blk = {.data = b->data, .len = b->len, .cap = b->cap};

    int at = b->active_at;
    int last = o->active[--o->nactive];
    o->active[at - 1] = last;
    o->bufs[last].active_at = at;
    b->active_at = 0;

    if (o->total > o->peak)
        o->peak = o->total;
    o->total -= b->len;
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->limit = 0;
    b->gen++;
    b->deferred = 0;
    b->relay = 0;
    return blk;
}

void cr_outbufs_recycle(cr_outbufs *o, char *data, size_t cap)
{
    if (cap == o->block_size && o->npool < o->pool_max)
        o->pool[o->npool++] = data;
    else
        free(data);
}
