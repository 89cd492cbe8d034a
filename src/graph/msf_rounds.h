/* Boruvka's rounds and the edge and forest records they share with the filtering
 * form (msf.c). Internal to src/graph. */
#ifndef COURIER_GRAPH_MSF_ROUNDS_H
#define COURIER_GRAPH_MSF_ROUNDS_H

#include "courier/darray.h"
#include "courier/mailbox.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An edge between two components (vertices at first). The order of edges is
 * (key, id): key is the weight's bits made to order as the weight (msf_weight_key),
 * id is unique over the graph, so the forest is unique even with tied weights. */
typedef struct msf_edge {
    uint64_t u, v, id;
    uint32_t key;
    uint32_t pad;
} msf_edge;

static inline bool msf_lighter(const msf_edge *x, const msf_edge *y)
{
    return x->key < y->key || (x->key == y->key && x->id < y->id);
}

/* The weight's bits, made to order as the weights do (negative ones included). */
static inline uint32_t msf_weight_key(uint32_t bits)
{
    return (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
}
float msf_key_weight(uint32_t key);

/* What the rounds found on this rank. */
typedef struct msf_forest {
    uint64_t *ids; /* this rank's forest edges (ids) */
    size_t n, cap;
    double weight;  /* their weights, summed */
    uint64_t rounds;
    double t_choose, t_double, t_relabel; /* seconds in each phase */
} msf_forest;

void msf_forest_add(msf_forest *f, uint64_t id, uint32_t key);

/* Boruvka's rounds on two distributed arrays over n vertices: lock-step (with d's
 * route and aggregation) or asynchronous (on the comm's route). */
typedef struct msf_rounds msf_rounds;

/* Collective. */
msf_rounds *msf_rounds_create(cr_comm *comm, uint64_t n, bool lockstep,
                              const cr_darray_opts *d);
/* Collective: the forest of the edges (each rank its share; `e` is contracted in
 * place). label[0 .. count) ends as the component root of each vertex of this rank's
 * block (cr_darray_block). Adds to *f. */
void msf_rounds_run(msf_rounds *s, msf_edge *e, size_t m, uint64_t *label, msf_forest *f);
/* Local: the lock-step statistics of the two arrays (zero when asynchronous). */
void msf_rounds_stats(const msf_rounds *s, cr_darray_stats *best, cr_darray_stats *parent);
/* Collective. */
void msf_rounds_destroy(msf_rounds *s);


#endif
