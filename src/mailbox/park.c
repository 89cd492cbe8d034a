/* Received buffers parked by generation (park.h). */
#include "mailbox/park.h"

#include "common/fatal.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

void cr_park_init(cr_park *p)
{
    memset(p, 0, sizeof *p);
    p->free_block = p->free_run = NONE;
    for (unsigned g = 0; g < CR_PARK_LEVELS; g++)
        p->head[g] = p->tail[g] = NONE;
}

void cr_park_free(cr_park *p)
{
    for (uint32_t b = 0; b < p->nblocks; b++)
        free(p->blocks[b].data);
    free(p->blocks);
    free(p->runs);
    cr_park_init(p);
}

/* A block with room for `len` bytes: a free one (its old copy reused), or a new one. */
static uint32_t block_new(cr_park *p, size_t len)
{
    uint32_t b = p->free_block;
    if (b == NONE) {
        if ((p->nblocks & (p->nblocks - 1)) == 0) /* 0, 1, 2, 4, ...: grow by doubling */
            p->blocks = cr_xrealloc(p->blocks, (p->nblocks ? 2 * (size_t)p->nblocks : 1) *
                                                   sizeof *p->blocks);
        b = p->nblocks++;
        p->blocks[b] = (cr_parked_block){0};
    } else {
        p->free_block = p->blocks[b].runs_left;
    }
    cr_parked_block *blk = &p->blocks[b];
    if (blk->cap < len) {
        free(blk->data);
        blk->data = cr_xmalloc(len);
        blk->cap = len;
    }
    blk->len = len;
    return b;
}

static uint32_t run_new(cr_park *p)
{
    uint32_t r = p->free_run;
    if (r == NONE) {
        if ((p->nruns & (p->nruns - 1)) == 0)
            p->runs = cr_xrealloc(p->runs, (p->nruns ? 2 * (size_t)p->nruns : 1) * sizeof *p->runs);
        return p->nruns++;
    }
    p->free_run = p->runs[r].next;
    return r;
}

long cr_park_buffer(cr_park *p, int src, bool own, bool relief, const char *buf, size_t len,
                    uint32_t first_done, size_t *bad_off)
{
    /* Checked whole before anything is parked: a corrupt buffer parks nothing. */
    size_t off = 0;
    long runs = 0;
    cr_run_view v;
    cr_rec_status st;
    while ((st = cr_run_next(buf, len, &off, &v)) == CR_REC_OK)
        runs++;
    if (st == CR_REC_TRUNCATED) {
        *bad_off = off;
        return -1;
    }
    if (runs == 0)
        return 0;
    uint32_t b = block_new(p, len);
    cr_parked_block *blk = &p->blocks[b];
    memcpy(blk->data, buf, len);
    blk->src = src;
    blk->own = own;
    blk->relief = relief;
    if (relief)
        p->relief_bytes += len;
    blk->runs_left = (uint32_t)runs;
    p->bytes += len;
    if (!own)
        p->others_bytes += len;
    for (off = 0;;) {
        size_t at = off;
        if (cr_run_next(blk->data, len, &off, &v) != CR_REC_OK)
            break;
        uint32_t r = run_new(p);
        p->runs[r] =
            (cr_parked_run){.block = b, .off = (uint32_t)at, .done = at == 0 ? first_done : 0,
                            .next = NONE, .gen = v.gen};
        if (p->tail[v.gen] == NONE)
            p->head[v.gen] = r;
        else
            p->runs[p->tail[v.gen]].next = r;
        p->tail[v.gen] = r;
        p->levels |= 1u << v.gen;
        p->parked++;
    }
    return runs;
}

static int deepest(const cr_park *p)
{
    return 31 - __builtin_clz(p->levels);
}

uint32_t cr_park_next(const cr_park *p, cr_run_view *view, int *src)
{
    uint32_t r = p->head[deepest(p)];
    const cr_parked_run *run = &p->runs[r];
    const cr_parked_block *blk = &p->blocks[run->block];
    size_t off = run->off;
    cr_run_next(blk->data, blk->len, &off, view); /* checked when it was parked */
    *src = blk->src;
    return r;
}

bool cr_park_run_done(cr_park *p, uint32_t r)
{
    cr_parked_run *run = &p->runs[r];
    uint32_t g = run->gen;
    if (p->head[g] != r)
        cr_fatal("internal error: a parked run was finished out of its queue's order");
    p->head[g] = run->next;
    if (p->head[g] == NONE) {
        p->tail[g] = NONE;
        p->levels &= ~(1u << g);
    }
    p->parked--;
    uint32_t b = run->block;
    run->next = p->free_run;
    p->free_run = r;
    cr_parked_block *blk = &p->blocks[b];
    if (--blk->runs_left > 0)
        return false;
    p->bytes -= blk->len;
    if (!blk->own)
        p->others_bytes -= blk->len;
    if (blk->relief)
        p->relief_bytes -= blk->len;
    blk->runs_left = p->free_block;
    p->free_block = b;
    return true;
}
