/* The distributed check of a component labelling (components.h). The labels are
 * copied into a lock-step distributed array; then every rank reads, in chunks, the
 * labels of its edges' ends and of its vertices' labels, and counts what breaks an
 * invariant. */
#include "components.h"

#include <courier.h>

#include <stdlib.h>
#include <string.h>

#define CHUNK (1u << 20) /* edges or vertices read per step: bounds the memory */

/* Over the ranks of the comm checked (not MPI_COMM_WORLD: the comm may be a part). */
static uint64_t sum_u64(cr_comm *comm, uint64_t x)
{
    uint64_t y;
    cr_allreduce(comm, &x, &y, 1, CR_UINT64, CR_OP_SUM, NULL);
    return y;
}

/* Steps every rank makes for `count` local items: the largest over the ranks. */
static uint64_t steps_for(cr_comm *comm, uint64_t count)
{
    uint64_t mine = (count + CHUNK - 1) / CHUNK, all;
    cr_allreduce(comm, &mine, &all, 1, CR_UINT64, CR_OP_MAX, NULL);
    return all;
}

static uint64_t end_of(const void *edges, size_t stride, size_t j, int which)
{
    uint64_t x;
    memcpy(&x, (const char *)edges + j * stride + (size_t)which * 8, 8);
    return x;
}

static uint64_t split_edges(cr_darray *labels, const void *edges, size_t m, size_t stride,
                            uint64_t *buf)
{
    uint64_t bad = 0, steps = steps_for(cr_darray_comm(labels), m);
    for (uint64_t s = 0; s < steps; s++) {
        size_t lo = s * CHUNK < m ? s * CHUNK : m, hi = lo + CHUNK < m ? lo + CHUNK : m;
        for (size_t j = lo; j < hi; j++) {
            cr_darray_read(labels, end_of(edges, stride, j, 0), &buf[2 * (j - lo)]);
            cr_darray_read(labels, end_of(edges, stride, j, 1), &buf[2 * (j - lo) + 1]);
        }
        cr_darray_step(labels);
        for (size_t j = lo; j < hi; j++)
            bad += buf[2 * (j - lo)] != buf[2 * (j - lo) + 1];
    }
    return bad;
}

static uint64_t stray_labels(cr_darray *labels, const uint64_t *label, uint64_t nl, uint64_t *buf)
{
    uint64_t bad = 0, steps = steps_for(cr_darray_comm(labels), nl);
    for (uint64_t s = 0; s < steps; s++) {
        uint64_t lo = s * CHUNK < nl ? s * CHUNK : nl, hi = lo + CHUNK < nl ? lo + CHUNK : nl;
        for (uint64_t i = lo; i < hi; i++)
            cr_darray_read(labels, label[i], &buf[i - lo]);
        cr_darray_step(labels);
        for (uint64_t i = lo; i < hi; i++)
            bad += buf[i - lo] != label[i];
    }
    return bad;
}

/* Copy the labels into a new lock-step array (writes routed to the owners), or
 * NULL if a label is not a vertex (counted in *out_of_range). */
static cr_darray *labels_array(cr_comm *comm, uint64_t n, uint64_t first, const uint64_t *label,
                               uint64_t nl, uint64_t *out_of_range)
{
    uint64_t bad = 0;
    for (uint64_t i = 0; i < nl; i++)
        bad += label[i] >= n;
    *out_of_range = sum_u64(comm, bad);
    if (*out_of_range)
        return NULL;
    cr_darray_opts o;
    cr_darray_opts_init(&o);
    cr_darray *labels = cr_darray_create(comm, n, 8, &o);
    uint64_t steps = steps_for(comm, nl);
    for (uint64_t s = 0; s < steps; s++) {
        uint64_t lo = s * CHUNK < nl ? s * CHUNK : nl, hi = lo + CHUNK < nl ? lo + CHUNK : nl;
        for (uint64_t i = lo; i < hi; i++)
            cr_darray_write(labels, first + i, &label[i]);
        cr_darray_step(labels);
    }
    return labels;
}

app_components_check app_check_components(const app *a, cr_comm *comm, uint64_t n,
                                          uint64_t first, const uint64_t *label, uint64_t nl,
                                          const void *edges, size_t m, size_t stride,
                                          int smallest, uint64_t forest_edges)
{
    app_components_check c = {0};
    uint64_t roots = 0, above = 0, out_of_range;
    for (uint64_t i = 0; i < nl; i++) {
        roots += label[i] == first + i;
        above += label[i] > first + i;
    }
    c.components = sum_u64(comm, roots);
    c.above_self = smallest ? sum_u64(comm, above) : 0;
    cr_darray *labels = labels_array(comm, n, first, label, nl, &out_of_range);
    if (labels) {
        uint64_t *buf = app_calloc(a, 2 * CHUNK, 8, "the check's reads");
        c.split_edges = sum_u64(comm, split_edges(labels, edges, m, stride, buf));
        c.stray_labels = sum_u64(comm, stray_labels(labels, label, nl, buf));
        free(buf);
        cr_darray_destroy(labels);
    }
    int forest_ok = forest_edges == UINT64_MAX || forest_edges + c.components == n;
    c.ok = !out_of_range && !c.split_edges && !c.stray_labels && !c.above_self && forest_ok;
    if (a->rank == 0) {
        if (out_of_range)
            fprintf(stderr, "%s: CHECK FAILED: %llu labels are not vertices\n", a->name,
                    (unsigned long long)out_of_range);
        if (c.split_edges)
            fprintf(stderr, "%s: CHECK FAILED: %llu edges join vertices with different labels\n",
                    a->name, (unsigned long long)c.split_edges);
        if (c.stray_labels)
            fprintf(stderr, "%s: CHECK FAILED: %llu vertices have a label that is not a root\n",
                    a->name, (unsigned long long)c.stray_labels);
        if (c.above_self)
            fprintf(stderr, "%s: CHECK FAILED: %llu vertices have a label above their own id\n",
                    a->name, (unsigned long long)c.above_self);
        if (!forest_ok)
            fprintf(stderr, "%s: CHECK FAILED: the forest has %llu edges, but %llu vertices in "
                    "%llu components need %llu\n", a->name, (unsigned long long)forest_edges,
                    (unsigned long long)n, (unsigned long long)c.components,
                    (unsigned long long)(n - c.components));
    }
    return c;
}
