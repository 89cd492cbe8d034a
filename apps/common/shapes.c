/* The thesis's six-dimension grid shapes (section 5.2.1) for any power of two. */
#include "shapes.h"

#include <courier/route.h>

#include <stdio.h>
#include <string.h>

const char *const app_shape_names[] = {"increase", "decrease", "hourglass",
                                       "inverse-hourglass", "locality", NULL};
#define SHAPE_LOCALITY 4

/* The locality route's group: 16 consecutive ranks, the largest power of two that
 * divides the thesis machine's 48 cores per node. */
#define LOCALITY_GROUP 16

/* Exponents of the shapes at 4096 = 2^12 ranks. */
static const int thesis_exps[4][6] = {
    {1, 1, 1, 2, 3, 4}, /* increase: 2x2x2x4x8x16 */
    {4, 3, 2, 1, 1, 1}, /* decrease */
    {3, 2, 1, 1, 2, 3}, /* hourglass: 8x4x2x2x4x8 */
    {1, 2, 3, 3, 2, 1}, /* inverse hourglass */
};

/* Exponents for 2^e: the thesis's times e/12, each at least 1, adding up to e; the
 * units left over or taken back go to (or come from) the dimensions with the
 * largest scaled share first. */
static void scale_exps(const int *base, int e, int *out)
{
    int sum = 0;
    for (int d = 0; d < 6; d++) {
        out[d] = base[d] * e / 12;
        out[d] = out[d] < 1 ? 1 : out[d];
        sum += out[d];
    }
    while (sum != e) {
        int best = -1;
        for (int d = 0; d < 6; d++) {
            if (sum > e && out[d] <= 1)
                continue;
            /* the dimension furthest below (or above) its exact share */
            double gap = (double)base[d] * e / 12.0 - out[d];
            double bg = best < 0 ? 0 : (double)base[best] * e / 12.0 - out[best];
            if (best < 0 || (sum < e ? gap > bg : gap < bg))
                best = d;
        }
        out[best] += sum < e ? 1 : -1;
        sum += sum < e ? 1 : -1;
    }
}

/* A hypercube between groups of LOCALITY_GROUP ranks, then one exchange inside the
 * group: 2x...x2x16, the last dimension the least significant (consecutive ranks). */
static int locality_spec(int p, int e, char *spec, size_t len)
{
    if (p < 2 * LOCALITY_GROUP || (1 << e) != p) {
        snprintf(spec, len, "the locality shape needs a power of two of at least %d ranks "
                 "(a hypercube between groups of %d), not %d", 2 * LOCALITY_GROUP,
                 LOCALITY_GROUP, p);
        return -1;
    }
    size_t at = (size_t)snprintf(spec, len, "grid:");
    for (int d = 0; (1 << d) < p / LOCALITY_GROUP && at < len; d++)
        at += (size_t)snprintf(spec + at, len - at, "2x");
    if (at < len)
        snprintf(spec + at, len - at, "%d", LOCALITY_GROUP);
    return 0;
}

static int build_spec(const char *name, int p, char *spec, size_t len)
{
    int kind = -1;
    for (int k = 0; app_shape_names[k]; k++)
        if (!strcmp(name, app_shape_names[k]))
            kind = k;
    int e = 0;
    while (e < 31 && (1 << e) < p)
        e++;
    if (kind < 0) {
        snprintf(spec, len, "unknown grid shape '%s'", name);
        return -1;
    }
    if (kind == SHAPE_LOCALITY)
        return locality_spec(p, e, spec, len);
    if (p < 64 || (1 << e) != p) {
        snprintf(spec, len, "the %s shape needs a power of two of at least 64 ranks "
                 "(six dimensions), not %d", name, p);
        return -1;
    }
    int exps[6];
    scale_exps(thesis_exps[kind], e, exps);
    size_t at = (size_t)snprintf(spec, len, "grid:");
    for (int d = 0; d < 6 && at < len; d++)
        at += (size_t)snprintf(spec + at, len - at, "%s%d", d ? "x" : "", 1 << exps[d]);
    return 0;
}

int app_shape_spec(const char *name, int p, char *spec, size_t len)
{
    if (build_spec(name, p, spec, len))
        return -1;
    /* A shape the runtime would refuse (too many dimensions for a grid route) is
     * refused here, with its reason, rather than found by a run. */
    cr_route r;
    char err[200];
    if (cr_route_parse(spec, &r, err, sizeof err)) {
        snprintf(spec, len, "the %s shape at %d ranks: %s", name, p, err);
        return -1;
    }
    return 0;
}
