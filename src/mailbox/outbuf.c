#include "mailbox/outbuf.h"

#include "common/fatal.h"

#include <stdlib.h>
#include <string.h>

/* Sparse layout: entries are allocated this many at a time and never move. */
#define CR_OUTBUF_CHUNK 32
#define INITIAL_SLOTS 16

const cr_outbuf cr_outbuf_unused = {0};

/* A fresh buffer starts this small and doubles, so that a job with many destinations
 * does not reserve a full threshold for each of them. */
#define INITIAL_CAPACITY ((size_t)1024)

static void sparse_alloc(cr_outbufs *o, uint32_t slots)
{
    o->keys = cr_xmalloc(slots * sizeof *o->keys);
    memset(o->keys, 0xff, slots * sizeof *o->keys); /* -1: empty */
    o->vals = cr_xmalloc(slots * sizeof *o->vals);
    o->mask = slots - 1;
    int bits = 0;
    while ((1u << bits) < slots)
        bits++;
    o->shift = 32 - bits;
}

void cr_outbufs_init(cr_outbufs *o, int ndest, size_t threshold, int pool_max, bool sparse)
{
    *o = (cr_outbufs){0};
    o->nbufs = ndest;
    if (sparse) {
        sparse_alloc(o, INITIAL_SLOTS);
        o->active_cap = CR_OUTBUF_CHUNK;
    } else {
        /* All zero is an empty buffer with no open run: the table is not written
         * here, so a destination never used costs no resident memory once the
         * table is large enough to come from fresh pages. */
        o->bufs = cr_xcalloc((size_t)ndest, sizeof *o->bufs);
        o->nentries = ndest;
        o->active_cap = ndest;
    }
    o->active = cr_xmalloc((size_t)o->active_cap * sizeof *o->active);
    o->threshold = threshold;
    o->block_size = (threshold + 7) & ~(size_t)7;
    o->pool_max = pool_max > 0 ? pool_max : 0;
    o->pool = cr_xmalloc((size_t)(o->pool_max ? o->pool_max : 1) * sizeof *o->pool);
}

/* Twice the slots, every entry placed again (the entries themselves stay put). */
static void sparse_grow(cr_outbufs *o)
{
    int32_t *keys = o->keys;
    cr_outbuf **vals = o->vals;
    uint32_t old = o->mask + 1;
    sparse_alloc(o, 2 * old);
    for (uint32_t k = 0; k < old; k++) {
        if (keys[k] < 0)
            continue;
        uint32_t i = cr_outbufs_home(o, keys[k]);
        while (o->keys[i] >= 0)
            i = (i + 1) & o->mask;
        o->keys[i] = keys[k];
        o->vals[i] = vals[k];
    }
    free(keys);
    free(vals);
}

cr_outbuf *cr_outbufs_add(cr_outbufs *o, int dest)
{
    if (2 * ((uint32_t)o->nentries + 1) > o->mask + 1)
        sparse_grow(o);
    int at = o->nentries % CR_OUTBUF_CHUNK;
    if (at == 0) {
        o->chunks = cr_xrealloc(o->chunks, ((size_t)o->nchunks + 1) * sizeof *o->chunks);
        o->chunks[o->nchunks++] = cr_xcalloc(CR_OUTBUF_CHUNK, sizeof(cr_outbuf));
    }
    cr_outbuf *b = &o->chunks[o->nchunks - 1][at];
    o->nentries++;
    if (o->nentries > o->active_cap) { /* a destination is active at most once */
        o->active_cap *= 2;
        o->active = cr_xrealloc(o->active, (size_t)o->active_cap * sizeof *o->active);
    }
    uint32_t i = cr_outbufs_home(o, dest);
    while (o->keys[i] >= 0)
        i = (i + 1) & o->mask;
    o->keys[i] = dest;
    o->vals[i] = b;
    return b;
}

void cr_outbufs_clear_sent(cr_outbufs *o)
{
    if (o->bufs) {
        for (int d = 0; d < o->nbufs; d++)
            if (o->bufs[d].sent) /* reading leaves untouched pages unmapped */
                o->bufs[d].sent = 0;
        return;
    }
    for (int k = 0; k < o->nentries; k++)
        o->chunks[k / CR_OUTBUF_CHUNK][k % CR_OUTBUF_CHUNK].sent = 0;
}

void cr_outbufs_free(cr_outbufs *o)
{
    /* Only a non-empty buffer holds memory (take detaches it; grow is always
     * followed by an append), and the non-empty ones are the active list. */
    for (int i = 0; i < o->nactive; i++)
        free(cr_outbufs_at(o, o->active[i])->data);
    for (int i = 0; i < o->npool; i++)
        free(o->pool[i]);
    free(o->bufs);
    for (int k = 0; k < o->nchunks; k++)
        free(o->chunks[k]);
    free(o->chunks);
    free(o->keys);
    free(o->vals);
    free(o->active);
    free(o->pool);
    *o = (cr_outbufs){0};
}

void cr_outbufs_set_threshold(cr_outbufs *o, size_t threshold)
{
    if (o->nactive > 0)
        cr_fatal("internal error: send buffers resized while %d hold records", o->nactive);
    for (int i = 0; i < o->npool; i++)
        free(o->pool[i]);
    o->npool = 0;
    o->threshold = threshold;
    o->block_size = (threshold + 7) & ~(size_t)7;
}

void cr_outbufs_grow(cr_outbufs *o, cr_outbuf *b, size_t bytes)
{
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
    cr_outbuf *b = cr_outbufs_at(o, dest);
    cr_outbuf_close_run(b);
    cr_block blk = {.data = b->data, .len = b->len, .cap = b->cap};

    int at = b->active_at;
    int last = o->active[--o->nactive];
    o->active[at - 1] = last;
    cr_outbufs_at(o, last)->active_at = at;
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
