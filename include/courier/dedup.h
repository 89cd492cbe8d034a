/* Courier dedup: records with the same meaning merged on their way.
 *
 * A combining handler names a key (the first key_len bytes of its payload) and a
 * rule. When two of its records for the same destination meet in a send buffer,
 * at their source or at a rank that forwards them under a route, the mailbox merges
 * them in place with the rule, and the handler runs once for the result: two
 * increments of one counter become one increment by the sum, two visits of one
 * vertex become one visit. Every contribution is applied exactly once, though not
 * always by its own record (the handler's `src` is the sender of the first record
 * merged). See docs/dedup.md for where merging happens and what it guarantees.
 *
 * Still to come (docs/dedup.md): requests whose replies fan back out to every
 * merged requester, and requests coalesced while in flight.
 */
#ifndef COURIER_DEDUP_H
#define COURIER_DEDUP_H

#include "courier/mailbox.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cr_dedup_op {
    CR_DEDUP_SUM = 1, /* values added */
    CR_DEDUP_MIN,     /* the smaller value of each pair */
    CR_DEDUP_MAX,
    CR_DEDUP_BOR,     /* bitwise or (integer types) */
    CR_DEDUP_BAND,    /* bitwise and (integer types) */
    CR_DEDUP_FIRST,   /* the first record's payload stays, later ones are dropped */
    CR_DEDUP_LAST,    /* the later record's payload replaces the earlier one */
    CR_DEDUP_USER,    /* rule.combine */
} cr_dedup_op;

typedef enum cr_dedup_type {
    CR_DEDUP_INT64 = 1,
    CR_DEDUP_UINT64,
    CR_DEDUP_DOUBLE,
} cr_dedup_type;

/* How records of one handler merge. For SUM, MIN, MAX, BOR and BAND the values are
 * the 8-byte words of `type` after the key, from offset pad8(key_len) (the key
 * rounded up to 8 bytes) to the end of the payload; each word is combined with the
 * word at the same place. FIRST and LAST keep one payload whole, "first" and "last"
 * being the order in which the records meet in a buffer. USER calls
 * combine(dst, src, len, combine_user), which merges src's payload into dst's
 * (both `len` bytes, the key included, dst 8-byte aligned) and must not change
 * dst's key. */
typedef struct cr_dedup_rule {
    size_t key_len;     /* 1 .. CR_MAX_KEY */
    cr_dedup_op op;
    cr_dedup_type type; /* for SUM .. BAND */
    void (*combine)(void *dst, const void *src, size_t len, void *user); /* for USER */
    void *combine_user;
} cr_dedup_rule;

/* Set the combining fields of `type` (key_len, combine, combine_user) from `rule`.
 * Returns 0, or -1 with a one-line message in `err` naming what is wrong. Local;
 * `type`'s other fields are left alone. */
int cr_dedup_rule_apply(const cr_dedup_rule *rule, cr_handler_type *type, char *err,
                        size_t errlen);

/* Register `type` as a combining handler under `rule`; returns its id. Collective
 * and may run handlers, as cr_register. A bad rule ends the job with one line. */
int cr_dedup_register(cr_comm *comm, const cr_handler_type *type, const cr_dedup_rule *rule,
                      void *user);

#ifdef __cplusplus
}
#endif

#endif
