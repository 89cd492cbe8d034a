/* The multicast (cr_async_mcast) sends one record per next hop, not per destination:
 * the record is for the reserved handler CR_MCAST_HANDLER, goes to the hop, and
 * carries the user's handler, payload and the destinations that hop serves. Where it
 * arrives (dispatch.c), it is handled if this rank is listed, and the rest of the
 * list is split again by next hop here. A route that shares a hop between
 * destinations thus carries one copy over it. Its handler sees the caller as `src`:
 * the route block keeps the origin. */
#include "mailbox/multicast.h"

#include "common/fatal.h"
#include "mailbox/append.h"
#include "mailbox/send.h"

#include <stdlib.h>
#include <string.h>

/* A multicast record: this header, the payload padded to 8 bytes, then ndest
 * int32 destinations. */
typedef struct mcast_hdr {
    uint32_t len;     /* the user's payload bytes */
    uint16_t handler; /* the user's handler */
    uint16_t zero;
    uint32_t ndest;
    uint32_t zero2;
} mcast_hdr;

static size_t mcast_dests_at(size_t len)
{
    return sizeof(mcast_hdr) + ((len + 7) & ~(size_t)7);
}

/* Working memory for one multicast being split: the (next hop, destination) pairs
 * and the record under construction. Blocks are kept on a free list and reused, so
 * a multicast allocates nothing once the list holds a block large enough; a nested
 * multicast (from a handler that runs while this one appends) takes another. */
typedef struct cr_mcast_scratch {
    struct cr_mcast_scratch *next;
    size_t cap;
    uint64_t *pairs; /* inside data */
    char *rec;       /* inside data, 8-byte aligned */
    _Alignas(8) char data[];
} cr_mcast_scratch;

static cr_mcast_scratch *mcast_take(cr_comm *c, size_t ndest, size_t rec_bytes)
{
    size_t need = ndest * sizeof(uint64_t) + rec_bytes;
    cr_mcast_scratch *s = c->mcast_free;
    if (s)
        c->mcast_free = s->next;
    if (!s || s->cap < need) {
        s = cr_xrealloc(s, sizeof *s + need);
        s->cap = need;
    }
    s->pairs = (uint64_t *)s->data;
    s->rec = s->data + ndest * sizeof(uint64_t);
    return s;
}

static void mcast_give(cr_comm *c, cr_mcast_scratch *s)
{
    s->next = c->mcast_free;
    c->mcast_free = s;
}

void cr_mcast_free_all(cr_comm *c)
{
    while (c->mcast_free) {
        cr_mcast_scratch *s = c->mcast_free;
        c->mcast_free = s->next;
        free(s);
    }
}

static int by_pair(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Send the record in s->rec (header and payload written) to the destinations
 * dests[0, n) other than this rank, one record per next hop, as created by `origin`.
 * Appends may wait (from user code) and run handlers: everything they read is in s. */
static void mcast_split(cr_comm *c, cr_mcast_scratch *s, const int32_t *dests, size_t n,
                        int origin)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (dests[i] != c->rank)
            s->pairs[k++] = (uint64_t)cr_next_hop(c, dests[i]) << 32 | (uint32_t)dests[i];
    qsort(s->pairs, k, sizeof *s->pairs, by_pair);
    mcast_hdr h;
    memcpy(&h, s->rec, sizeof h);
    size_t at = mcast_dests_at(h.len);
    for (size_t i = 0; i < k;) {
        int hop = (int)(s->pairs[i] >> 32);
        uint32_t m = 0;
        for (; i < k && (int)(s->pairs[i] >> 32) == hop; i++, m++) {
            int32_t d = (int32_t)(uint32_t)s->pairs[i];
            memcpy(s->rec + at + m * sizeof d, &d, sizeof d);
        }
        h.ndest = m;
        memcpy(s->rec, &h, sizeof h);
        cr_append(c, hop, origin, CR_MCAST_HANDLER, 0, s->rec, at + m * sizeof(int32_t));
    }
}

static void check_mcast_list(const cr_comm *c, cr_mcast_scratch *s, const int *ranks, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if ((unsigned)ranks[i] >= (unsigned)c->size)
            cr_fatal("cr_async_mcast: rank %d (entry %zu of the list) is out of range [0, %d)",
                     ranks[i], i, c->size);
        s->pairs[i] = (uint32_t)ranks[i];
    }
    qsort(s->pairs, n, sizeof *s->pairs, by_pair);
    for (size_t i = 1; i < n; i++)
        if (s->pairs[i] == s->pairs[i - 1])
            cr_fatal("cr_async_mcast: rank %d is listed twice (each rank gets one copy)",
                     (int)s->pairs[i]);
}

void cr_async_mcast(cr_comm *c, const int *ranks, size_t n, int handler, const void *payload,
                    size_t len)
{
    cr_check_message(c, "cr_async_mcast", handler, payload, len);
    if (n > 0 && !ranks)
        cr_fatal("cr_async_mcast: %zu ranks but the list is NULL", n);
    if (n > (size_t)c->size)
        cr_fatal("cr_async_mcast: %zu ranks listed, but the comm has %d (a rank is listed twice)",
                 n, c->size);
    if (c->ncombining > 0)
        cr_check_key(c, "cr_async_mcast", handler, len);
    size_t at = mcast_dests_at(len), rec = at + n * sizeof(int32_t);
    if (rec > CR_MAX_PAYLOAD)
        cr_fatal("cr_async_mcast: %zu bytes to %zu ranks is over the record limit of %zu bytes",
                 len, n, CR_MAX_PAYLOAD);
    if (n == 0)
        return;
    cr_mcast_scratch *s = mcast_take(c, n, rec);
    check_mcast_list(c, s, ranks, n);
    mcast_hdr h = {.len = (uint32_t)len, .handler = (uint16_t)handler, .ndest = (uint32_t)n};
    memcpy(s->rec, &h, sizeof h);
    if (len)
        memcpy(s->rec + sizeof h, payload, len); /* the caller's buffer may change below */
    int32_t *dests = (int32_t *)(s->rec + at);
    bool to_self = false;
    for (size_t i = 0; i < n; i++) {
        dests[i] = ranks[i];
        to_self |= ranks[i] == c->rank;
    }
    mcast_split(c, s, dests, n, c->rank);
    if (to_self) { /* this rank's copy, through its own queue like any record to itself */
        h.ndest = 1;
        int32_t me = c->rank;
        memcpy(s->rec, &h, sizeof h);
        memcpy(s->rec + at, &me, sizeof me);
        cr_append(c, c->rank, c->rank, CR_MCAST_HANDLER, 0, s->rec, at + sizeof me);
    }
    mcast_give(c, s);
    cr_count_sent(c, (uint64_t)n, len);
}

static void corrupt_mcast(int src, size_t len)
{
    cr_fatal("corrupt multicast record of %zu bytes from rank %d: its header, destinations "
             "and length disagree",
             len, src);
}

cr_mcast_view cr_mcast_read(const cr_comm *c, int src, const char *rec, size_t rec_len)
{
    mcast_hdr h;
    memcpy(&h, rec, sizeof h);
    size_t at = mcast_dests_at(h.len);
    if (h.len > rec_len || at > rec_len || (rec_len - at) / sizeof(int32_t) != h.ndest ||
        (rec_len - at) % sizeof(int32_t))
        corrupt_mcast(src, rec_len);
    cr_mcast_view v = {.payload = rec + sizeof h, .len = h.len, .handler = h.handler,
                       .ndest = h.ndest, .mine = false};
    for (uint32_t i = 0; i < h.ndest; i++) {
        int32_t d;
        memcpy(&d, rec + at + i * sizeof d, sizeof d);
        if ((unsigned)d >= (unsigned)c->size)
            corrupt_mcast(src, rec_len);
        v.mine |= d == c->rank;
    }
    return v;
}

void cr_mcast_pass_on(cr_comm *c, const char *rec, size_t rec_len, const cr_mcast_view *v,
                      int origin)
{
    size_t at = mcast_dests_at(v->len);
    cr_mcast_scratch *s = mcast_take(c, v->ndest, rec_len);
    memcpy(s->rec, rec, at);
    mcast_split(c, s, (const int32_t *)(rec + at), v->ndest, origin);
    mcast_give(c, s);
}
