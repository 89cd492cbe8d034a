/* Courier's shared vocabulary: the element types and the operators every module that
 * reduces, merges or combines names the same way (collectives, combining handlers,
 * the distributed array, and the transport underneath them). Each module says which
 * of them it accepts.
 *
 * Zero is neither a type nor an operator, so a zeroed options struct means "not
 * given": a module that has a default uses it (the distributed array's merge is an
 * overwrite), the others refuse with one line. */
#ifndef COURIER_TYPES_H
#define COURIER_TYPES_H

#ifdef __cplusplus
extern "C" {
#endif

/* An element's type. */
typedef enum cr_dtype {
    CR_INT32 = 1,
    CR_INT64,
    CR_UINT64,
    CR_FLOAT,
    CR_DOUBLE,
} cr_dtype;

/* How two values (or two records) become one. */
typedef enum cr_op {
    CR_OP_SUM = 1, /* added (integers wrap) */
    CR_OP_MIN,     /* the smaller */
    CR_OP_MAX,     /* the larger */
    CR_OP_BAND,    /* bitwise and: integers only */
    CR_OP_BOR,     /* bitwise or: integers only */
    CR_OP_FIRST,   /* the first one met stays, later ones are dropped */
    CR_OP_LAST,    /* the later one replaces the earlier (an overwrite) */
    CR_OP_USER,    /* a function the caller gives, named where the operator is */
} cr_op;

#ifdef __cplusplus
}
#endif

#endif
