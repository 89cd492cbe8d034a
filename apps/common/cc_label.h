/* Connected components by asynchronous label propagation on the mailbox (the
 * `label` design of apps/cc, shared with the simulated-transport test). */
#ifndef COURIER_APPS_CC_LABEL_H
#define COURIER_APPS_CC_LABEL_H

#include <courier.h>

#include <stdint.h>

/* This rank's vertices and how to reach their neighbours. */
typedef struct cc_adjacency {
    uint64_t first, count; /* my vertices: first .. first + count - 1 */
    /* the neighbours of my vertex first + i, and how many */
    const uint64_t *(*neighbours)(void *graph, uint64_t i, uint64_t *degree);
    int (*owner)(void *graph, uint64_t v); /* the rank that holds vertex v */
    void *graph;
} cc_adjacency;

/* One rank's state: the caller keeps it alive from cc_label_register until after
 * the comm's last barrier. */
typedef struct cc_label {
    cc_adjacency adj;
    uint64_t *label;  /* of my vertices */
    uint64_t updates; /* labels this rank lowered */
    int handler;
} cc_label;

/* Collective: register the offers' handler (a combining handler, rule min) on every
 * rank. Call it before any rank can send an offer (before cc_label_run). */
void cc_label_register(cr_comm *comm, cc_label *state);

/* Collective: label[i] becomes the smallest id in the component of vertex
 * first + i. Runs handlers; ends with a cr_barrier. */
void cc_label_run(cr_comm *comm, cc_label *state, const cc_adjacency *adj, uint64_t *label);

#endif
