/* The distributed array's base: the block distribution, the merge rules and the
 * byte vectors the lock-step mode builds its buffers in. darray.c (creation, the
 * asynchronous mode) and lockstep.c both build on it. */
#include "darray/darray_internal.h"
#include "darray/layout.h"

#include "common/fatal.h"

#include <stdlib.h>
#include <string.h>

/* ---- the block distribution ---------------------------------------------------- */

/* The first n % p ranks hold one element more: blocks differ by at most one. */
void cr_darray_block(uint64_t n, int p, int r, uint64_t *first, uint64_t *count)
{
    uint64_t base = n / (uint64_t)p, extra = n % (uint64_t)p, ur = (uint64_t)r;
    *count = base + (ur < extra);
    *first = ur * base + (ur < extra ? ur : extra);
}

static int log2_exact(uint64_t x)
{
    return x && !(x & (x - 1)) ? __builtin_ctzll(x) : -1;
}

darray_layout darray_layout_of(uint64_t n, int p)
{
    uint64_t base = n / (uint64_t)p, extra = n % (uint64_t)p;
    return (darray_layout){.cut = extra * (base + 1), .big = base + 1, .base = base,
                           .extra = extra, .shift = extra == 0 ? log2_exact(base) : -1};
}

int cr_darray_owner(uint64_t n, int p, uint64_t i)
{
    darray_layout l = darray_layout_of(n, p);
    return darray_layout_owner(&l, i);
}

/* ---- bytes ------------------------------------------------------------------- */

void *darray_bytes_grow(darray_bytes *b, size_t more)
{
    if (b->len + more > b->cap || !b->data) { /* never NULL, even for 0 darray_bytes */
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + more)
            cap *= 2;
        b->data = cr_xrealloc(b->data, cap);
        b->cap = cap;
    }
    void *at = b->data + b->len;
    b->len += more;
    return at;
}

void darray_bytes_free(darray_bytes *b)
{
    free(b->data);
    *b = (darray_bytes){0};
}

/* ---- merge rules -------------------------------------------------------------- */

void cr_darray_apply(const cr_darray *a, void *dst, const void *src)
{
    const cr_darray_opts *o = &a->opts;
    if (o->merge == CR_DARRAY_OVERWRITE) {
        memcpy(dst, src, a->elem);
        return;
    }
    if (o->merge == CR_DARRAY_USER) {
        o->combine(dst, src, a->elem, o->combine_user);
        return;
    }
    union {
        int64_t i;
        uint64_t u;
        double d;
    } x, y;
    memcpy(&x, dst, 8);
    memcpy(&y, src, 8);
    bool add = o->merge == CR_DARRAY_ADD, min = o->merge == CR_DARRAY_MIN;
    switch (o->type) {
    case CR_DEDUP_INT64:
        x.i = add ? (int64_t)((uint64_t)x.i + (uint64_t)y.i)
                  : (min ? (y.i < x.i ? y.i : x.i) : (y.i > x.i ? y.i : x.i));
        break;
    case CR_DEDUP_UINT64:
        x.u = add ? x.u + y.u : (min ? (y.u < x.u ? y.u : x.u) : (y.u > x.u ? y.u : x.u));
        break;
    default:
        x.d = add ? x.d + y.d : (min ? (y.d < x.d ? y.d : x.d) : (y.d > x.d ? y.d : x.d));
        break;
    }
    memcpy(dst, &x, 8);
}

