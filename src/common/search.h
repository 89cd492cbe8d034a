/* The one binary search of the library: the first index in [lo, hi) of an ascending
 * array whose element is not below key (a lower bound), defined once for each
 * element type the library searches. */
#ifndef COURIER_COMMON_SEARCH_H
#define COURIER_COMMON_SEARCH_H

#include <stdint.h>

#define CR_DEFINE_LOWER_BOUND(name, T)                                                     \
    static inline uint64_t name(const T *a, uint64_t lo, uint64_t hi, T key)              \
    {                                                                                      \
        while (lo < hi) {                                                                  \
            uint64_t mid = lo + (hi - lo) / 2;                                             \
            if (a[mid] < key)                                                              \
                lo = mid + 1;                                                              \
            else                                                                           \
                hi = mid;                                                                  \
        }                                                                                  \
        return lo;                                                                         \
    }

CR_DEFINE_LOWER_BOUND(cr_lower_bound_u64, uint64_t)
CR_DEFINE_LOWER_BOUND(cr_lower_bound_u32, uint32_t)
CR_DEFINE_LOWER_BOUND(cr_lower_bound_int, int)

#endif
