/* The cost model of a distributed array's lock-step step (include/courier/tune.h,
 * docs/tuning.md "Lock-step"): the exchanges of the thesis's k-dimensional grid
 * (Peters 2024, docs/references.md, Algorithm 3), with the requests that meet on a
 * rank merged at every hop (4.4) and the replies sent back the same way (4.5). */
#include "courier/tune.h"

#include <math.h>

/* The part of dimension d's partners of rank 0 that are on another node (rank 0
 * has coordinate 0 in every dimension: its partners are j * fill, j = 1 .. n - 1). */
static double off_node_part(const cr_layout *l, int n, int fill)
{
    if (n < 2)
        return 0;
    int mine = cr_layout_node_of(l, 0), off = 0;
    for (int j = 1; j < n; j++)
        off += cr_layout_node_of(l, j * fill) != mine;
    return (double)off / (double)(n - 1);
}

/* The records a rank holds at a hop where it has gathered the requests of `g` ranks
 * for 1/g of the indices: m draws (its share) among distinct / g indices, of which
 * the expected number of different ones stays when they merge. */
static double held_at(double m, double distinct, double g, bool merged)
{
    if (!merged || m <= 0)
        return m;
    double keys = fmax(distinct, 1) / g;
    return keys * -expm1(-m / keys);
}

double cr_tune_step_predict(const cr_layout *layout, const int *dims, int ndims,
                            const cr_tune_step *t, const cr_tune_costs *c)
{
    if (!layout || !dims || !t || !c || ndims < 0 || !(t->requests >= 0) ||
        !(t->distinct >= 0) || !isfinite(t->requests))
        return -1;
    int p = cr_layout_ranks(layout);
    long cells = 1;
    for (int d = 0; d < ndims; d++) {
        if (dims[d] < 1)
            return -1;
        cells *= dims[d];
        if (cells > p)
            return -1;
    }
    if (cells != p)
        return -1;
    double m = t->requests / p, g = 1, held = m, seconds = 0;
    double ways = t->reply_bytes ? 2 : 1; /* reads: the replies come back */
    double bytes = (double)(t->request_bytes + t->reply_bytes);
    int fill = p;
    for (int d = 0; d < ndims; d++) {
        int n = dims[d];
        fill /= n;
        held = held_at(m, t->distinct, g, t->merged);
        double leaving = held * (n - 1) / n;
        /* a partner gets a segment unless none of the held records is for it */
        double partners = (n - 1) * -expm1(held * log1p(-1.0 / n));
        double off = off_node_part(layout, n, fill);
        double alpha = off * c->alpha_off + (1 - off) * c->alpha_on;
        double beta = off * c->beta_off + (1 - off) * c->beta_on;
        seconds += partners * ways * alpha + leaving * bytes * beta + leaving * ways * c->append;
        g *= n;
    }
    seconds += held * c->handle; /* what the last exchange brings to its owner */
    return seconds * (c->slowdown > 1 ? c->slowdown : 1);
}
