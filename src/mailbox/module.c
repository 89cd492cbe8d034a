/* Modules attached to a comm (module.h): a short list the event loop polls and
 * cr_comm_destroy tears down, newest first. */
#include "mailbox/mailbox_internal.h"
#include "mailbox/module.h"

#include "common/fatal.h"

#include <stdlib.h>

void *cr_module_state(cr_comm *c, const cr_module_type *type)
{
    for (int i = 0; i < c->nmodules; i++)
        if (c->modules[i].type == type)
            return c->modules[i].state;
    return NULL;
}

void cr_module_attach(cr_comm *c, const cr_module_type *type, void *state)
{
    if (cr_module_state(c, type))
        cr_fatal("internal error: module '%s' attached twice", type->name);
    if (c->nmodules == CR_MAX_MODULES)
        cr_fatal("internal error: more than %d modules on one comm", CR_MAX_MODULES);
    c->modules[c->nmodules++] = (cr_module){.type = type, .state = state};
}

void *cr_module_state_or_new(cr_comm *c, const cr_module_type *type, size_t size, bool *fresh)
{
    void *s = cr_module_state(c, type);
    *fresh = s == NULL;
    if (!s) {
        s = cr_xcalloc(1, size);
        cr_module_attach(c, type, s);
    }
    return s;
}

void cr_module_state_free(cr_comm *c, void *state)
{
    (void)c;
    free(state);
}

int cr_modules_poll(cr_comm *c, bool *in_flight)
{
    int work = 0;
    *in_flight = false;
    for (int i = 0; i < c->nmodules; i++) {
        const cr_module *m = &c->modules[i];
        if (!m->type->poll)
            continue;
        int n = m->type->poll(c, m->state);
        if (n >= 0) {
            *in_flight = true;
            work += n;
        }
    }
    return work;
}

void cr_modules_drain(cr_comm *c)
{
    for (int i = 0; i < c->nmodules; i++)
        if (c->modules[i].type->drain)
            c->modules[i].type->drain(c, c->modules[i].state);
}

void cr_modules_route_changed(cr_comm *c)
{
    for (int i = 0; i < c->nmodules; i++)
        if (c->modules[i].type->route_changed)
            c->modules[i].type->route_changed(c, c->modules[i].state);
}

void cr_modules_stats_reset(cr_comm *c)
{
    for (int i = 0; i < c->nmodules; i++)
        if (c->modules[i].type->stats_reset)
            c->modules[i].type->stats_reset(c, c->modules[i].state);
}

void cr_modules_stats_print(cr_comm *c, FILE *out)
{
    for (int i = 0; i < c->nmodules; i++)
        if (c->modules[i].type->stats_print)
            c->modules[i].type->stats_print(c, c->modules[i].state, out);
}

void cr_modules_destroy(cr_comm *c)
{
    while (c->nmodules > 0) {
        cr_module *m = &c->modules[--c->nmodules];
        m->type->destroy(c, m->state);
    }
}

const int *cr_module_handler_depth(const cr_comm *c)
{
    return &c->handler_depth;
}

bool cr_module_in_handler(const cr_comm *c)
{
    return c->handler_depth > 0;
}

bool cr_module_busy(const cr_comm *c)
{
    return c->waiting || c->in_loop;
}

void cr_module_wait(cr_comm *c, bool (*done)(cr_comm *, void *), void *arg, const char *reason)
{
    cr_wait_until(c, done, arg, reason);
}

void cr_module_note_work(cr_comm *c)
{
    cr_engine_note_work(c);
}

/* ---- channels: the comm's transport's, passed through */

const cr_node_area *cr_module_node_area(cr_comm *c)
{
    const cr_node_mem_ops *mem = c->tp->ops->node_mem;
    return mem && mem->area ? mem->area(c->tp) : NULL;
}

cr_chan *cr_module_chan_open(cr_comm *c)
{
    return c->tp->ops->chan->open(c->tp);
}

void cr_module_chan_close(cr_comm *c, cr_chan *ch)
{
    c->tp->ops->chan->close(ch);
}

void cr_module_chan_isend(cr_comm *c, cr_chan *ch, int dest, int tag, const void *buf,
                          size_t len, bool synchronous, cr_chan_req *r)
{
    c->tp->ops->chan->isend(ch, dest, tag, buf, len, synchronous, r);
}

void cr_module_chan_irecv(cr_comm *c, cr_chan *ch, int src, int tag, void *buf, size_t len,
                          cr_chan_req *r)
{
    c->tp->ops->chan->irecv(ch, src, tag, buf, len, r);
}

void cr_module_chan_isendv(cr_comm *c, cr_chan *ch, int dest, int tag, const char *base,
                           const size_t *offs, const size_t *lens, int n, cr_chan_req *r)
{
    c->tp->ops->chan->isendv(ch, dest, tag, base, offs, lens, n, r);
}

void cr_module_chan_irecvv(cr_comm *c, cr_chan *ch, int src, int tag, char *base,
                           const size_t *offs, const size_t *lens, int n, cr_chan_req *r)
{
    c->tp->ops->chan->irecvv(ch, src, tag, base, offs, lens, n, r);
}

bool cr_module_chan_probe(cr_comm *c, cr_chan *ch, int src, int tag, cr_chan_msg *m)
{
    return c->tp->ops->chan->probe(ch, src, tag, m);
}

void cr_module_chan_recv_probed(cr_comm *c, cr_chan *ch, cr_chan_msg *m, void *buf)
{
    c->tp->ops->chan->recv_probed(ch, m, buf);
}

bool cr_module_chan_test(cr_comm *c, cr_chan *ch, cr_chan_req *r)
{
    return c->tp->ops->chan->test(ch, r);
}

/* Stops at the first request still pending: a poll of a thousand sends in flight
 * (a sparse exchange under direct routing) then costs the completed prefix and one
 * test, not a thousand; testing one request drives the transport's progress. */
bool cr_module_chan_testall(cr_comm *c, cr_chan *ch, cr_chan_req *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!c->tp->ops->chan->test(ch, &r[i]))
            return false;
    return true;
}

void cr_module_chan_ibarrier(cr_comm *c, cr_chan *ch, cr_chan_req *r)
{
    c->tp->ops->chan->ibarrier(ch, r);
}

void cr_module_chan_ialltoall(cr_comm *c, cr_chan *ch, const void *send, void *recv,
                              size_t bytes, cr_chan_req *r)
{
    c->tp->ops->chan->ialltoall(ch, send, recv, bytes, r);
}

void cr_module_chan_ireduce_scatter_sum(cr_comm *c, cr_chan *ch, const uint64_t *in,
                                        uint64_t *out, cr_chan_req *r)
{
    c->tp->ops->chan->ireduce_scatter_sum(ch, in, out, r);
}

static void check_reduction(int n, cr_op op)
{
    if (n < 1 || n > 32)
        cr_fatal("internal error: a module reduction of %d values", n);
    if (op != CR_OP_SUM && op != CR_OP_MIN && op != CR_OP_MAX)
        cr_fatal("internal error: a module reduction by operator %d", (int)op);
}

void cr_module_allreduce_u64(cr_comm *c, const uint64_t *in, uint64_t *out, int n,
                             cr_op op)
{
    check_reduction(n, op);
    c->tp->ops->group->allreduce_u64(c->tp, in, out, n, op);
}

void cr_module_allreduce_double(cr_comm *c, const double *in, double *out, int n,
                                cr_op op)
{
    check_reduction(n, op);
    c->tp->ops->group->allreduce_double(c->tp, in, out, n, op);
}

const cr_layout *cr_module_layout(const cr_comm *c)
{
    return c->layout;
}

const cr_tune_costs *cr_module_tune_costs(const cr_comm *c)
{
    return &c->tune.costs;
}

int cr_module_machine_ranks(const cr_comm *c)
{
    const cr_host_ops *host = c->tp->ops->host;
    return host->machine_ranks ? host->machine_ranks(c->tp) : 0;
}

double cr_module_now(const cr_comm *c)
{
    return c->tp->ops->host->now(c->tp);
}

int cr_module_next_hop(const cr_comm *c, int dest)
{
    return cr_next_hop(c, dest);
}

uint32_t cr_module_send_epoch(const cr_comm *c, int dest)
{
    return cr_outbufs_peek(&c->out, cr_next_hop(c, dest))->gen;
}

cr_stats *cr_module_stats(cr_comm *c)
{
    return &c->stats;
}

int cr_module_next_handler_id(const cr_comm *c)
{
    return (int)c->handlers.count;
}
