/* Label propagation (cc_label.h): every vertex starts with its own id and offers it
 * to its larger neighbours; a vertex offered a smaller label takes it and offers it
 * on, from the handler. Offers are records of a combining handler keyed by the
 * target with rule min, so offers to one vertex that meet in a buffer become one.
 * One barrier ends it: when no offer is left anywhere, every label is its
 * component's minimum. */
#include "cc_label.h"

#include <string.h>

/* Offer `label` to every neighbour of my vertex i that could take it. */
static void offer(cr_comm *comm, cc_label *p, uint64_t i, uint64_t label)
{
    uint64_t deg;
    const uint64_t *nb = p->adj.neighbours(p->adj.graph, i, &deg);
    for (uint64_t j = 0; j < deg; j++) {
        if (nb[j] <= label)
            continue; /* its own id is already at most this label */
        uint64_t rec[2] = {nb[j], label};
        cr_async(comm, p->adj.owner(p->adj.graph, nb[j]), p->handler, rec, sizeof rec);
    }
}

static void on_offers(cr_comm *comm, const cr_batch *b, void *user)
{
    cc_label *p = user;
    for (size_t k = 0; k < b->count; k++) {
        uint64_t rec[2];
        memcpy(rec, cr_batch_payload(b, k), sizeof rec);
        uint64_t i = rec[0] - p->adj.first;
        if (rec[1] >= p->label[i])
            continue;
        p->label[i] = rec[1];
        p->updates++;
        offer(comm, p, i, rec[1]);
    }
}

/* A handler may run inside its own registration, before cr_register has returned
 * the id it sends with: so no rank offers before every rank has registered and set
 * its labels (the barrier in cc_label_run). */
void cc_label_register(cr_comm *comm, cc_label *state)
{
    memset(state, 0, sizeof *state);
    cr_dedup_rule min = {.key_len = 8, .op = CR_DEDUP_MIN, .type = CR_DEDUP_UINT64};
    state->handler = cr_dedup_register(comm, &(cr_handler_type){.batch = on_offers}, &min, state);
}

void cc_label_run(cr_comm *comm, cc_label *p, const cc_adjacency *adj, uint64_t *label)
{
    p->adj = *adj, p->label = label, p->updates = 0;
    for (uint64_t i = 0; i < adj->count; i++)
        label[i] = adj->first + i;
    cr_barrier(comm); /* every rank's labels are set before the first offer */
    for (uint64_t i = 0; i < adj->count; i++)
        offer(comm, p, i, label[i]);
    cr_barrier(comm);
}
