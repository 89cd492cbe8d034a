/* The distributed array's base: the public names of the block distribution
 * (common/block.h), the merge rules and the byte vectors the lock-step mode builds
 * its buffers in. darray.c (creation, the asynchronous mode) and lockstep.c both
 * build on it. */
#include "darray/darray_internal.h"

#include "common/fatal.h"
#include "common/op.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- the block distribution ---------------------------------------------------- */

void cr_darray_block(uint64_t n, int p, int r, uint64_t *first, uint64_t *count)
{
    *first = cr_block_first(n, p, r);
    *count = cr_block_count(n, p, r);
}

int cr_darray_owner(uint64_t n, int p, uint64_t i)
{
    return cr_block_owner(n, p, i);
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
    if (o->merge == CR_OP_LAST) {
        memcpy(dst, src, a->elem);
        return;
    }
    if (o->merge == CR_OP_USER) {
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
    switch (o->type) {
    case CR_INT64: x.i = cr_op_i64(o->merge, x.i, y.i); break;
    case CR_UINT64: x.u = cr_op_u64(o->merge, x.u, y.u); break;
    default: x.d = cr_op_f64(o->merge, x.d, y.d); break;
    }
    memcpy(dst, &x, 8);
}


void cr_darray_apply_shared(const cr_darray *a, void *dst, const void *src)
{
    _Atomic uint64_t *e = dst;
    uint64_t v;
    memcpy(&v, src, 8);
    /* Relaxed: the ranks see each other's merges after the barrier that ends the
     * phase, whose messages order them; within a phase only atomicity matters. */
    if (a->opts.merge == CR_OP_LAST) {
        atomic_store_explicit(e, v, memory_order_relaxed);
        return;
    }
    if (a->opts.merge == CR_OP_SUM && a->opts.type != CR_DOUBLE) {
        atomic_fetch_add_explicit(e, v, memory_order_relaxed);
        return;
    }
    uint64_t old = atomic_load_explicit(e, memory_order_relaxed);
    for (;;) {
        uint64_t next = old;
        cr_darray_apply(a, &next, &v);
        if (next == old || atomic_compare_exchange_weak_explicit(e, &old, next,
                                                                  memory_order_relaxed,
                                                                  memory_order_relaxed))
            return;
    }
}

_Atomic uint64_t *cr_darray_near_elem(const cr_darray *a, int owner, uint64_t i)
{
    if (!a->near || !a->near[owner].part)
        return NULL;
    return (_Atomic uint64_t *)(void *)(a->near[owner].part + (i - a->near[owner].first) * 8);
}

cr_darray_apply_fn cr_darray_owned_apply(const cr_darray *a)
{
    return a->near ? cr_darray_apply_shared : cr_darray_apply;
}
