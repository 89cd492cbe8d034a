/* The distributed array's block layout as a value: the owners of many indices found
 * without recomputing the quotients. Defined in array.c, beside cr_darray_block.
 * Not installed. */
#ifndef COURIER_DARRAY_LAYOUT_H
#define COURIER_DARRAY_LAYOUT_H

#include <stdint.h>

/* The block distribution of n elements over p ranks (cr_darray_block) with its
 * quotients computed once, for finding many indices' owners: indices below `cut` are
 * in blocks of `big` = base + 1, the rest in blocks of `base`; `shift` replaces the
 * division when every block has the same power-of-two size (-1 otherwise). */
typedef struct darray_layout {
    uint64_t cut, big, base, extra;
    int shift;
} darray_layout;

darray_layout darray_layout_of(uint64_t n, int p);

static inline int darray_layout_owner(const darray_layout *l, uint64_t i)
{
    if (l->shift >= 0)
        return (int)(i >> l->shift);
    if (i < l->cut)
        return (int)(i / l->big);
    return (int)(l->extra + (i - l->cut) / l->base);
}

#endif
