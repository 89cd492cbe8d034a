/* Routes: parsing, resolution for a layout, and next_hop, a pure function of
 * (me, dest). No route keeps per-record state: a rank decides the next hop from the
 * final destination alone, so records carry only their destination and origin. */
#include "route/route_internal.h"

#include "common/fatal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIM_MAX 1048576u


static const char *const kind_names[] = {"direct", "nr", "nlnr", "grid", "hypercube", "auto"};

#define EXPECTED "expected direct, nr, nlnr, grid, grid:AxBx..., hypercube or auto"

/* "4x2x2" into dims; false on anything else. */
static bool parse_dims(const char *s, cr_route *r)
{
    r->ndims = 0;
    for (;;) {
        if (!isdigit((unsigned char)*s) || r->ndims == CR_ROUTE_MAX_DIMS)
            return false;
        errno = 0;
        char *end;
        unsigned long v = strtoul(s, &end, 10);
        if (errno || v < 1 || v > DIM_MAX)
            return false;
        r->dims[r->ndims++] = (unsigned)v;
        if (*end == '\0')
            return true;
        if (*end != 'x' && *end != 'X')
            return false;
        s = end + 1;
    }
}

int cr_route_parse(const char *text, cr_route *out, char *err, size_t errlen)
{
    cr_route r = {0};
    if (!text) {
        cr_set_error(err, errlen, "no route given: " EXPECTED);
        return -1;
    }
    for (int k = 0; k < (int)(sizeof kind_names / sizeof *kind_names); k++)
        if (!strcmp(text, kind_names[k])) {
            r.kind = (cr_route_kind)k;
            *out = r;
            return 0;
        }
    if (!strncmp(text, "grid:", 5)) {
        r.kind = CR_ROUTE_GRID;
        if (parse_dims(text + 5, &r)) {
            *out = r;
            return 0;
        }
        cr_set_error(err, errlen,
                  "route '%s' is not valid: grid dimensions are 1 to %d numbers from 1 to %u "
                  "joined by 'x', as in grid:4x2",
                  text, CR_ROUTE_MAX_DIMS, DIM_MAX);
        return -1;
    }
    cr_set_error(err, errlen, "route '%s' is not valid: " EXPECTED, text);
    return -1;
}

int cr_route_format(const cr_route *r, char *buf, size_t len)
{
    if ((unsigned)r->kind > CR_ROUTE_AUTO)
        return snprintf(buf, len, "invalid(%d)", (int)r->kind);
    if (r->kind != CR_ROUTE_GRID || r->ndims == 0)
        return snprintf(buf, len, "%s", kind_names[r->kind]);
    int n = snprintf(buf, len, "grid:");
    for (unsigned i = 0; i < r->ndims; i++) {
        size_t used = n < 0 ? len : (size_t)n;
        n += snprintf(used < len ? buf + used : NULL, used < len ? len - used : 0, "%s%u",
                      i ? "x" : "", r->dims[i]);
    }
    return n;
}

/* ---------------------------------------------------------------- resolution */

/* "grid" without dimensions: two, as square as P allows (rows x columns). */
static void auto_grid(cr_route *r, int nranks)
{
    unsigned cols = (unsigned)ceil(sqrt((double)nranks));
    if (cols < 1)
        cols = 1;
    r->ndims = 2;
    r->dims[0] = ((unsigned)nranks + cols - 1) / cols;
    r->dims[1] = cols;
}

static int resolve_grid(cr_router *rt, char *err, size_t errlen)
{
    cr_route *r = &rt->route;
    if (r->ndims == 0)
        auto_grid(r, rt->nranks);
    /* Cells beyond 2^40 only arise from typos; refusing them keeps blocks in a long. */
    const long cell_limit = 1L << 40;
    long cells = 1;
    for (int s = (int)r->ndims - 1; s >= 0; s--) {
        rt->block[s] = cells;
        if (cells > cell_limit / (long)r->dims[s]) {
            cr_set_error(err, errlen, "grid route has more than 2^40 cells; use smaller dimensions");
            return -1;
        }
        cells *= (long)r->dims[s];
    }
    if (cells < rt->nranks) {
        char name[128];
        cr_route_format(r, name, sizeof name);
        cr_set_error(err, errlen,
                  "route %s has %ld cells but the job has %d ranks; the product of the grid "
                  "dimensions must be at least the number of ranks",
                  name, cells, rt->nranks);
        return -1;
    }
    rt->max_hops = 0;
    for (unsigned s = 0; s < r->ndims; s++)
        rt->max_hops += r->dims[s] > 1;
    return 0;
}

static int floor_log2(int v)
{
    int k = 0;
    while ((2 << k) <= v)
        k++;
    return k;
}

cr_router *cr_router_create(const cr_route *route, const cr_layout *layout, char *err,
                            size_t errlen)
{
    if (route->kind == CR_ROUTE_AUTO) {
        cr_set_error(err, errlen, "route auto is chosen by a comm (courier/tune.h): a router "
                     "needs the route it chose");
        return NULL;
    }
    if ((unsigned)route->kind > CR_ROUTE_HYPERCUBE) {
        cr_set_error(err, errlen, "route kind %d is not valid: " EXPECTED, (int)route->kind);
        return NULL;
    }
    cr_router *rt = cr_xcalloc(1, sizeof *rt);
    rt->route = *route;
    rt->layout = layout;
    rt->nranks = layout->nranks;
    switch (route->kind) {
    case CR_ROUTE_DIRECT: rt->max_hops = 1; break;
    case CR_ROUTE_NR: rt->max_hops = 2; break;
    case CR_ROUTE_NLNR: rt->max_hops = 3; break;
    case CR_ROUTE_GRID:
        if (resolve_grid(rt, err, errlen)) {
            free(rt);
            return NULL;
        }
        break;
    case CR_ROUTE_HYPERCUBE:
        rt->cube = 1 << floor_log2(rt->nranks);
        rt->max_hops = floor_log2(rt->nranks) + (rt->cube < rt->nranks ? 2 : 0);
        break;
    case CR_ROUTE_AUTO: break; /* refused above */
    }
    return rt;
}

void cr_router_destroy(cr_router *rt)
{
    free(rt);
}

int cr_router_max_hops(const cr_router *rt)
{
    return rt->max_hops;
}

const cr_route *cr_router_route(const cr_router *rt)
{
    return &rt->route;
}

/* ---------------------------------------------------------------- next hops */

/* Node-remote: cross to the rank with my local index on the destination node (wrapped
 * when that node is smaller), which delivers on its node. */
static int nr_next(const cr_layout *l, int me, int dest)
{
    int to = l->node_of[dest];
    if (l->node_of[me] == to)
        return dest;
    return cr_layout_member(l, to, l->local_index[me] % cr_layout_node_size(l, to));
}

/* Node-local / node-remote (YGM): the pair of nodes (A, B) has one channel, from rank
 * B mod |A| of A to rank A mod |B| of B, the same link in both directions. Each rank
 * of A owns the channels to about N/|A| nodes, so off-node partners stay below N. */
static int nlnr_next(const cr_layout *l, int me, int dest)
{
    int a = l->node_of[me], b = l->node_of[dest];
    if (a == b)
        return dest;
    int out = cr_layout_member(l, a, b % cr_layout_node_size(l, a));
    if (me != out)
        return out;
    return cr_layout_member(l, b, a % cr_layout_node_size(l, b));
}

/* Grid (thesis 4.2): ranks are mixed-radix numbers with dims[0] most significant, so
 * later hops stay among nearby ranks. Each hop copies the destination's coordinates
 * up to the first one that differs. When that cell is a hole (rank >= P, only in the
 * last, partial block), the hop goes to the existing ranks of the block instead,
 * spread by the rest of my coordinates (thesis 3.2, holes of an incomplete grid). */
static int grid_next(const cr_router *rt, int me, int dest)
{
    for (unsigned s = 0; s < rt->route.ndims; s++) {
        long b = rt->block[s];
        if (me / b == dest / b)
            continue;
        long base = dest / b * b;
        long cand = base + me % b;
        if (cand >= rt->nranks)
            cand = base + me % b % (rt->nranks - base);
        return (int)cand;
    }
    return dest;
}

/* Hypercube (thesis 3.2): a cube over the largest power of two H <= P. A rank r >= H
 * is represented by r - H: it hands its records to its representative, and records
 * for it travel the cube to the representative, which hands them over. Within the
 * cube each hop fixes the highest differing bit. */
static int hypercube_next(const cr_router *rt, int me, int dest)
{
    int h = rt->cube;
    if (me >= h)
        return me - h;
    int target = dest >= h ? dest - h : dest;
    if (target == me)
        return dest;
    unsigned diff = (unsigned)(me ^ target);
    unsigned high = 1u << floor_log2((int)diff);
    unsigned low = high - 1;
    return (int)(((unsigned)target & ~low) | ((unsigned)me & low));
}

int cr_router_next_hop(const cr_router *rt, int me, int dest)
{
    switch (rt->route.kind) {
    case CR_ROUTE_NR: return nr_next(rt->layout, me, dest);
    case CR_ROUTE_NLNR: return nlnr_next(rt->layout, me, dest);
    case CR_ROUTE_GRID: return grid_next(rt, me, dest);
    case CR_ROUTE_HYPERCUBE: return hypercube_next(rt, me, dest);
    case CR_ROUTE_DIRECT:
    case CR_ROUTE_AUTO: break; /* no router has it */
    }
    return dest;
}
