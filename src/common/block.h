/* The block distribution every module uses (the distributed array, the graph, the
 * bag's rebalancing): n items over p ranks in consecutive blocks, the first n % p
 * ranks holding one item more, so blocks differ by at most one. Pure functions.
 * Not installed: users see it as cr_darray_block and cr_darray_owner. */
#ifndef COURIER_COMMON_BLOCK_H
#define COURIER_COMMON_BLOCK_H

#include <stdint.h>

/* The first item rank r holds (r = p gives n). */
static inline uint64_t cr_block_first(uint64_t n, int p, int r)
{
    uint64_t base = n / (uint64_t)p, extra = n % (uint64_t)p, ur = (uint64_t)r;
    return ur * base + (ur < extra ? ur : extra);
}

/* How many items rank r holds. */
static inline uint64_t cr_block_count(uint64_t n, int p, int r)
{
    return n / (uint64_t)p + ((uint64_t)r < n % (uint64_t)p);
}

/* The distribution with its quotients computed once, for the owners of many items:
 * items below `cut` lie in blocks of `big` = base + 1, the rest in blocks of `base`;
 * `shift` replaces the division when every block has the same power-of-two size
 * (-1 otherwise). */
typedef struct cr_block_layout {
    uint64_t cut, big, base, extra;
    int shift;
} cr_block_layout;

static inline cr_block_layout cr_block_layout_of(uint64_t n, int p)
{
    uint64_t base = n / (uint64_t)p, extra = n % (uint64_t)p;
    int shift = extra == 0 && base && !(base & (base - 1)) ? __builtin_ctzll(base) : -1;
    return (cr_block_layout){.cut = extra * (base + 1), .big = base + 1, .base = base,
                             .extra = extra, .shift = shift};
}

static inline int cr_block_layout_owner(const cr_block_layout *l, uint64_t i)
{
    if (l->shift >= 0)
        return (int)(i >> l->shift);
    if (i < l->cut)
        return (int)(i / l->big);
    return (int)(l->extra + (i - l->cut) / l->base);
}

/* The rank that holds item i (i < n). */
static inline int cr_block_owner(uint64_t n, int p, uint64_t i)
{
    cr_block_layout l = cr_block_layout_of(n, p);
    return cr_block_layout_owner(&l, i);
}

#endif
