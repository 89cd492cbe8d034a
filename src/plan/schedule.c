/* A plan's schedule: which segments of which messages travel together in one MPI
 * message ("unit"), and an order in which the units can be sent.
 *
 * A relay can send a link only once everything it forwards on it has arrived, so the
 * units depend on each other. One unit per link is the plan's message count, but the
 * links' dependencies may form a cycle (a relay's link waiting, through other relays,
 * for itself); then the links on the cycle are sent per hop index, where a piece of
 * hop h waits only for pieces of hop h - 1. The extra messages are counted. */
#include "courier/plan.h"

#include "common/fatal.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct cr_plan_schedule {
    const cr_plan *plan;
    cr_plan_segment *seg; /* grouped by unit */
    uint64_t nseg;
    cr_plan_unit *units;  /* in an order that sends no unit before those it waits for */
    uint64_t nunits;
    uint64_t splits;
    uint64_t *seg_base;   /* the segments of message x in path order start here */
};

typedef struct seg_key {
    int from, to, piece; /* piece: -1 whole link, else the hop index */
    uint64_t x;
    int h;
} seg_key;

static int cmp_key(const void *a, const void *b)
{
    const seg_key *p = a, *q = b;
    if (p->from != q->from)
        return p->from < q->from ? -1 : 1;
    if (p->to != q->to)
        return p->to < q->to ? -1 : 1;
    if (p->piece != q->piece)
        return p->piece < q->piece ? -1 : 1;
    if (p->x != q->x)
        return p->x < q->x ? -1 : 1;
    return (p->h > q->h) - (p->h < q->h);
}

/* Group the segments into units: whole links, except the units marked in split[]
 * (indexed by the previous grouping through unit_of), which go per hop index. */
static void group(cr_plan_schedule *s, const unsigned char *split, const uint64_t *unit_of)
{
    seg_key *keys = cr_xmalloc((s->nseg ? s->nseg : 1) * sizeof *keys);
    uint64_t k = 0;
    for (uint64_t x = 0; x < cr_plan_messages(s->plan); x++) {
        const int *path;
        int len = cr_plan_path(s->plan, x, &path);
        for (int h = 0; h + 1 < len; h++, k++) {
            bool apart = split && split[unit_of[k]];
            keys[k] = (seg_key){path[h], path[h + 1], apart ? h : -1, x, h};
        }
    }
    qsort(keys, s->nseg, sizeof *keys, cmp_key);
    free(s->units);
    s->units = cr_xmalloc((s->nseg ? s->nseg : 1) * sizeof *s->units);
    s->nunits = 0;
    s->splits = 0;
    for (uint64_t i = 0; i < s->nseg; i++) {
        bool same_link = i > 0 && keys[i].from == keys[i - 1].from && keys[i].to == keys[i - 1].to;
        if (!same_link || keys[i].piece != keys[i - 1].piece) {
            s->splits += same_link;
            s->units[s->nunits++] =
                (cr_plan_unit){keys[i].from, keys[i].to, keys[i].piece + 1, i, 0};
        }
        s->units[s->nunits - 1].count++;
        s->seg[i] = (cr_plan_segment){keys[i].x, keys[i].h};
    }
    free(keys);
}

/* unit_of[k] for segment k in path order (seg_base[x] + h). */
static uint64_t *units_of_segments(const cr_plan_schedule *s)
{
    uint64_t *unit_of = cr_xmalloc((s->nseg ? s->nseg : 1) * sizeof *unit_of);
    for (uint64_t u = 0; u < s->nunits; u++)
        for (uint64_t i = s->units[u].first; i < s->units[u].first + s->units[u].count; i++)
            unit_of[s->seg_base[s->seg[i].message] + (uint64_t)s->seg[i].hop] = u;
    return unit_of;
}

/* Kahn's algorithm over the units: a unit waits for the units that bring the
 * segments it forwards. Writes a sending order into order[] (the units it could
 * place), marks the others in stuck[] and returns how many are stuck. */
static uint64_t sort_units(const cr_plan_schedule *s, const uint64_t *unit_of, uint64_t *order,
                           unsigned char *stuck)
{
    uint64_t n = s->nunits, ndeps = 0;
    uint64_t *wait = cr_xcalloc(n + 1, sizeof *wait);
    uint64_t *out_ptr = cr_xcalloc(n + 1, sizeof *out_ptr);
    for (uint64_t u = 0; u < n; u++)
        for (uint64_t i = s->units[u].first; i < s->units[u].first + s->units[u].count; i++)
            if (s->seg[i].hop > 0) {
                wait[u]++;
                out_ptr[unit_of[s->seg_base[s->seg[i].message] + (uint64_t)s->seg[i].hop - 1] + 1]++;
                ndeps++;
            }
    for (uint64_t u = 0; u < n; u++)
        out_ptr[u + 1] += out_ptr[u];
    uint64_t *out = cr_xmalloc((ndeps ? ndeps : 1) * sizeof *out);
    uint64_t *fill = cr_xmalloc((n + 1) * sizeof *fill);
    memcpy(fill, out_ptr, (n + 1) * sizeof *fill);
    for (uint64_t u = 0; u < n; u++)
        for (uint64_t i = s->units[u].first; i < s->units[u].first + s->units[u].count; i++)
            if (s->seg[i].hop > 0)
                out[fill[unit_of[s->seg_base[s->seg[i].message] + (uint64_t)s->seg[i].hop - 1]]++] = u;
    uint64_t head = 0, tail = 0;
    for (uint64_t u = 0; u < n; u++)
        if (wait[u] == 0)
            order[tail++] = u;
    while (head < tail) {
        uint64_t u = order[head++];
        for (uint64_t k = out_ptr[u]; k < out_ptr[u + 1]; k++)
            if (--wait[out[k]] == 0)
                order[tail++] = out[k];
    }
    for (uint64_t u = 0; u < n; u++)
        stuck[u] = wait[u] > 0;
    free(wait);
    free(out_ptr);
    free(out);
    free(fill);
    return n - tail;
}

static void reorder(cr_plan_schedule *s, const uint64_t *order)
{
    cr_plan_unit *sorted = cr_xmalloc((s->nunits ? s->nunits : 1) * sizeof *sorted);
    for (uint64_t k = 0; k < s->nunits; k++)
        sorted[k] = s->units[order[k]];
    free(s->units);
    s->units = sorted;
}

cr_plan_schedule *cr_plan_schedule_create(const cr_plan *plan)
{
    cr_plan_schedule *s = cr_xcalloc(1, sizeof *s);
    s->plan = plan;
    uint64_t nmsg = cr_plan_messages(plan);
    s->seg_base = cr_xcalloc(nmsg + 1, sizeof *s->seg_base);
    for (uint64_t x = 0; x < nmsg; x++) {
        const int *path;
        s->seg_base[x + 1] = s->seg_base[x] + (uint64_t)cr_plan_path(plan, x, &path) - 1;
    }
    s->nseg = s->seg_base[nmsg];
    s->seg = cr_xmalloc((s->nseg ? s->nseg : 1) * sizeof *s->seg);
    group(s, NULL, NULL);
    for (int round = 0;; round++) {
        uint64_t *unit_of = units_of_segments(s);
        uint64_t *order = cr_xmalloc((s->nunits ? s->nunits : 1) * sizeof *order);
        unsigned char *stuck = cr_xcalloc(s->nunits + 1, 1);
        uint64_t left = sort_units(s, unit_of, order, stuck);
        if (left == 0)
            reorder(s, order);
        else if (round >= 2)
            cr_fatal("plan schedule: %llu units still wait on each other after splitting",
                     (unsigned long long)left);
        else
            group(s, round == 1 ? memset(stuck, 1, s->nunits) : stuck, unit_of);
        free(unit_of);
        free(order);
        free(stuck);
        if (left == 0)
            break;
    }
    return s;
}

void cr_plan_schedule_destroy(cr_plan_schedule *s)
{
    if (!s)
        return;
    free(s->seg);
    free(s->units);
    free(s->seg_base);
    free(s);
}

uint64_t cr_plan_schedule_units(const cr_plan_schedule *s, const cr_plan_unit **units)
{
    *units = s->units;
    return s->nunits;
}

const cr_plan_segment *cr_plan_schedule_segments(const cr_plan_schedule *s)
{
    return s->seg;
}

uint64_t cr_plan_schedule_splits(const cr_plan_schedule *s)
{
    return s->splits;
}
