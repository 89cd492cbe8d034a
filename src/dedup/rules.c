/* The built-in combining rules of include/courier/dedup.h. The mailbox merges with
 * a plain function pointer (cr_handler_type.combine); a built-in rule is one such
 * function per operation and value type, and its `user` pointer carries the offset
 * of the first value (the key rounded up to 8 bytes) as an integer, so no rule needs
 * memory of its own. */
#include "courier/dedup.h"

#include "common/fatal.h"
#include "common/op.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static size_t value_offset(const void *user)
{
    return (size_t)(uintptr_t)user;
}

/* One function per (operation, type): combine every 8-byte value after the key. */
#define RULE(name, T, EXPR)                                                              \
    static void name(void *dst, const void *src, size_t len, void *user)                \
    {                                                                                    \
        char *d = dst;                                                                   \
        const char *s = src;                                                             \
        for (size_t off = value_offset(user); off + sizeof(T) <= len; off += sizeof(T)) { \
            T a, b;                                                                      \
            memcpy(&a, d + off, sizeof a);                                               \
            memcpy(&b, s + off, sizeof b);                                               \
            a = (EXPR);                                                                  \
            memcpy(d + off, &a, sizeof a);                                               \
        }                                                                                \
    }

RULE(sum_i64, int64_t, cr_op_i64(CR_OP_SUM, a, b))
RULE(sum_u64, uint64_t, cr_op_u64(CR_OP_SUM, a, b))
RULE(sum_f64, double, cr_op_f64(CR_OP_SUM, a, b))
RULE(min_i64, int64_t, cr_op_i64(CR_OP_MIN, a, b))
RULE(min_u64, uint64_t, cr_op_u64(CR_OP_MIN, a, b))
RULE(min_f64, double, cr_op_f64(CR_OP_MIN, a, b))
RULE(max_i64, int64_t, cr_op_i64(CR_OP_MAX, a, b))
RULE(max_u64, uint64_t, cr_op_u64(CR_OP_MAX, a, b))
RULE(max_f64, double, cr_op_f64(CR_OP_MAX, a, b))
RULE(bor_u64, uint64_t, cr_op_u64(CR_OP_BOR, a, b))
RULE(band_u64, uint64_t, cr_op_u64(CR_OP_BAND, a, b))

static void keep_first(void *dst, const void *src, size_t len, void *user)
{
    (void)dst, (void)src, (void)len, (void)user;
}

static void keep_last(void *dst, const void *src, size_t len, void *user)
{
    size_t key_len = value_offset(user); /* LAST carries the exact key length */
    memcpy((char *)dst + key_len, (const char *)src + key_len, len - key_len);
}

typedef void (*combine_fn)(void *, const void *, size_t, void *);

static combine_fn numeric(cr_op op, cr_dtype t)
{
    int k = t == CR_INT64 ? 0 : t == CR_UINT64 ? 1 : t == CR_DOUBLE ? 2 : -1;
    if (k < 0)
        return NULL;
    static const combine_fn sum[] = {sum_i64, sum_u64, sum_f64};
    static const combine_fn min[] = {min_i64, min_u64, min_f64};
    static const combine_fn max[] = {max_i64, max_u64, max_f64};
    switch (op) {
    case CR_OP_SUM: return sum[k];
    case CR_OP_MIN: return min[k];
    case CR_OP_MAX: return max[k];
    case CR_OP_BOR: return k == 2 ? NULL : bor_u64;   /* same bits for both integers */
    case CR_OP_BAND: return k == 2 ? NULL : band_u64;
    default: return NULL;
    }
}

int cr_dedup_rule_apply(const cr_dedup_rule *rule, cr_handler_type *type, char *err,
                        size_t errlen)
{
    if (!rule || rule->key_len < 1 || rule->key_len > CR_MAX_KEY) {
        snprintf(err, errlen, "dedup rule: key_len %zu is out of range: expected 1 to %d",
                 rule ? rule->key_len : 0, CR_MAX_KEY);
        return -1;
    }
    size_t values = (rule->key_len + 7) & ~(size_t)7;
    combine_fn fn = NULL;
    void *user = (void *)(uintptr_t)values;
    switch (rule->op) {
    case CR_OP_FIRST: fn = keep_first; break;
    case CR_OP_LAST: fn = keep_last, user = (void *)(uintptr_t)rule->key_len; break;
    case CR_OP_USER:
        fn = rule->combine, user = rule->combine_user;
        if (!fn) {
            snprintf(err, errlen, "dedup rule: op user needs a combine function");
            return -1;
        }
        break;
    case CR_OP_SUM:
    case CR_OP_MIN:
    case CR_OP_MAX:
    case CR_OP_BOR:
    case CR_OP_BAND:
        fn = numeric(rule->op, rule->type);
        if (!fn) {
            snprintf(err, errlen, "dedup rule: op %d does not apply to value type %d (sum, "
                     "min, max: int64, uint64 or double; bor, band: int64 or uint64)",
                     (int)rule->op, (int)rule->type);
            return -1;
        }
        break;
    default:
        snprintf(err, errlen, "dedup rule: unknown op %d", (int)rule->op);
        return -1;
    }
    type->key_len = rule->key_len;
    type->combine = fn;
    type->combine_user = user;
    return 0;
}

int cr_dedup_register(cr_comm *comm, const cr_handler_type *type, const cr_dedup_rule *rule,
                      void *user)
{
    cr_handler_type t = *type;
    char err[200];
    if (cr_dedup_rule_apply(rule, &t, err, sizeof err))
        cr_fatal("cr_dedup_register: %s", err + strlen("dedup rule: "));
    return cr_register_type(comm, &t, user);
}
