/* The arithmetic of an operator (cr_op, include/courier/types.h) on one value of
 * each element type: the one definition that the combining rules (src/dedup), the
 * collectives (src/coll), the darray's merges and the simulated transport's
 * reductions all use. Sums of signed integers wrap instead of trapping; bitwise
 * operators on floating types and the operators without arithmetic (first, last,
 * user) leave the first value as it is: their callers check or handle them. */
#ifndef COURIER_COMMON_OP_H
#define COURIER_COMMON_OP_H

#include "courier/types.h"

#include <stdint.h>

#define CR_DEFINE_OP(name, T, SUM)                                                         \
    static inline T name(cr_op op, T a, T b)                                               \
    {                                                                                      \
        switch (op) {                                                                      \
        case CR_OP_SUM: return SUM;                                                        \
        case CR_OP_MIN: return b < a ? b : a;                                              \
        case CR_OP_MAX: return b > a ? b : a;                                              \
        default: return a;                                                                 \
        }                                                                                  \
    }

#define CR_DEFINE_BITS_OP(name, T, SUM)                                                    \
    CR_DEFINE_OP(name##_arith, T, SUM)                                                     \
    static inline T name(cr_op op, T a, T b)                                               \
    {                                                                                      \
        if (op == CR_OP_BOR)                                                               \
            return a | b;                                                                  \
        if (op == CR_OP_BAND)                                                              \
            return a & b;                                                                  \
        return name##_arith(op, a, b);                                                     \
    }

CR_DEFINE_BITS_OP(cr_op_i32, int32_t, (int32_t)((uint32_t)a + (uint32_t)b))
CR_DEFINE_BITS_OP(cr_op_i64, int64_t, (int64_t)((uint64_t)a + (uint64_t)b))
CR_DEFINE_BITS_OP(cr_op_u64, uint64_t, a + b)
CR_DEFINE_OP(cr_op_f32, float, a + b)
CR_DEFINE_OP(cr_op_f64, double, a + b)

#endif
