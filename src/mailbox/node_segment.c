/* Segments shared by the ranks of a node, for modules (module.h): the comm's layout
 * names the nodes (MPI's, cut into COURIER_NODE_SIZE virtual nodes; the simulation's
 * virtual nodes), the transport maps the memory (transport.h, cr_node_mem_ops), and
 * the node barrier is a counter in the segment's first line with a generation that
 * the last rank to arrive advances (a sense-reversing central barrier), waited for
 * in the comm's loop so records keep moving while a rank waits. */
#include "mailbox/mailbox_internal.h"
#include "mailbox/module.h"

#include "common/fatal.h"
#include "courier/route.h"

#include <stdatomic.h>
#include <stdlib.h>

/* The barrier's line, before member 0's part (every member's part begins after a
 * line of its own, so all parts are aligned alike). */
enum { HEADER = 64 };

typedef struct barrier_line {
    _Atomic uint64_t arrived;
    _Atomic uint64_t generation;
} barrier_line;

struct cr_node_segment {
    cr_comm *comm;
    cr_node_mem mem;
    bool mapped; /* mem holds a segment (every rank maps one, or none does) */
    int node;
};

static barrier_line *line_of(const cr_node_segment *s)
{
    return (barrier_line *)(void *)s->mem.part[0];
}

cr_node_segment *cr_module_node_segment_create(cr_comm *c, size_t bytes)
{
    const cr_node_mem_ops *ops = c->tp->ops->node_mem;
    const cr_layout *l = c->layout;
    int node = cr_layout_node_of(l, c->rank);
    cr_node_segment *s = cr_xcalloc(1, sizeof *s);
    s->comm = c;
    s->node = node;
    if (bytes > SIZE_MAX - HEADER)
        cr_fatal("cr_module_node_segment_create: %zu bytes per rank cannot be mapped", bytes);
    if (ops)
        s->mapped = ops->create(c->tp, node, cr_layout_node_size(l, node),
                                cr_layout_local_index(l, c->rank), bytes + HEADER, &s->mem);
    /* one answer for the job: a module then has one code path on every rank */
    uint64_t mine = s->mapped, all;
    c->tp->ops->group->allreduce_u64(c->tp, &mine, &all, 1, CR_OP_MIN);
    if (!all) {
        if (s->mapped)
            ops->destroy(c->tp, &s->mem);
        free(s);
        return NULL;
    }
    return s;
}

int cr_module_node_segment_size(const cr_node_segment *s)
{
    return s->mem.size;
}

int cr_module_node_segment_rank(const cr_node_segment *s)
{
    return s->mem.rank;
}

int cr_module_node_segment_member(const cr_node_segment *s, int i)
{
    return cr_layout_member(s->comm->layout, s->node, i);
}

void *cr_module_node_segment_part(const cr_node_segment *s, int i)
{
    if (i < 0 || i >= s->mem.size)
        cr_fatal("internal error: part %d of a node segment of %d ranks", i, s->mem.size);
    return s->mem.part[i] + HEADER;
}

typedef struct barrier_wait {
    barrier_line *line;
    uint64_t generation;
} barrier_wait;

static bool generation_moved(cr_comm *c, void *arg)
{
    (void)c;
    barrier_wait *w = arg;
    return atomic_load_explicit(&w->line->generation, memory_order_acquire) != w->generation;
}

void cr_module_node_segment_barrier(cr_node_segment *s)
{
    barrier_line *line = line_of(s);
    barrier_wait w = {line, atomic_load_explicit(&line->generation, memory_order_acquire)};
    uint64_t before = atomic_fetch_add_explicit(&line->arrived, 1, memory_order_acq_rel);
    if (before + 1 == (uint64_t)s->mem.size) {
        /* the last to arrive: reset for the next barrier, then let the others go (a
         * rank that sees the new generation sees the reset too) */
        atomic_store_explicit(&line->arrived, 0, memory_order_relaxed);
        atomic_store_explicit(&line->generation, w.generation + 1, memory_order_release);
        return;
    }
    cr_wait_until(s->comm, generation_moved, &w, "node barrier");
}

void cr_module_node_segment_destroy(cr_node_segment *s)
{
    if (!s)
        return;
    cr_module_node_segment_barrier(s); /* no member reads it any more */
    s->comm->tp->ops->node_mem->destroy(s->comm->tp, &s->mem);
    free(s);
}
