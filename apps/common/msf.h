/* Boruvka's minimum spanning forest on the distributed array (the rounds of
 * apps/boruvka, shared with the simulated-transport test): see apps/boruvka.c for
 * the algorithm and docs/graph.md. */
#ifndef COURIER_APPS_MSF_H
#define COURIER_APPS_MSF_H

#include "cli.h"

#include <courier.h>

#include <stddef.h>
#include <stdint.h>

/* An edge between two components: the order key is (weight bits, id). */
typedef struct msf_edge {
    uint64_t a, b; /* components (vertices at first) */
    uint64_t w;    /* the weight's float bits: ordered as the weight for w >= 0 */
    uint64_t id;   /* unique over the graph */
} msf_edge;

/* What the rounds found on this rank. */
typedef struct msf_forest {
    uint64_t *ids; /* this rank's forest edges (ids) */
    size_t n, cap;
    double weight;  /* their weights, summed */
    uint64_t rounds;
    double t_choose, t_double, t_relabel; /* seconds in each phase */
} msf_forest;

/* A sum over all ranks of the comm (collective, and a barrier: no rank returns
 * before every rank has called it); the app passes MPI_Allreduce, the
 * simulated-transport test one made of mailbox messages. */
typedef uint64_t (*msf_sum_fn)(cr_comm *comm, uint64_t mine, void *ctx);

typedef struct msf msf;

/* Collective: the two arrays over n vertices, lock-step (`async` 0, with d's route
 * and aggregation) or asynchronous (on the comm's route). */
msf *msf_create(const app *a, cr_comm *comm, uint64_t n, int async, const cr_darray_opts *d,
                msf_sum_fn sum, void *sum_ctx);

/* Collective: the forest of the edges (each rank its share, ids unique over the
 * graph; `e` is contracted in place). label[0 .. count) ends as the component root
 * of each of this rank's vertices (msf_local's block). Adds to *f (zero it first). */
void msf_run(msf *s, msf_edge *e, size_t m, uint64_t *label, msf_forest *f);

/* Local: this rank's block of vertices. */
void msf_local(const msf *s, uint64_t *first, uint64_t *count);

/* Local: the lock-step statistics of the two arrays (zero in async mode). */
void msf_darray_stats(const msf *s, cr_darray_stats *best, cr_darray_stats *parent);

/* Collective: free the arrays. */
void msf_destroy(msf *s);

#endif
