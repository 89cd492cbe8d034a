/* cr_stats_print: min / mean / max of every counter over the ranks. */
#include "mailbox/mailbox_internal.h"
#include "mailbox/module.h"

#include "common/fatal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    size_t offset;
} fields[] = {
#define F(name) {#name, offsetof(cr_stats, name)}
    F(msgs_sent),       F(bytes_sent),       F(msgs_handled),   F(bytes_handled),
    F(flushes_size),    F(flushes_cap),      F(flushes_timer),  F(flushes_barrier), F(flushes_relay),
    F(mpi_sends),       F(mpi_bytes_sent),   F(mpi_recvs),      F(slot_waits),
    F(deferred_flushes), F(peak_buffered_bytes), F(peak_inflight),
    F(peak_inflight_bytes), F(peak_self_bytes), F(peak_memory_bytes), F(peak_handler_output),
    F(throttled_us),    F(handler_waits),    F(peak_nesting),   F(cap_overruns),
    F(barriers),
    F(barrier_epochs),  F(forwarded),        F(partners),       F(partners_off_node),
    F(send_states),
    F(mpi_sends_off_node), F(mpi_bytes_on_node), F(mpi_bytes_off_node), F(local_buffers),
    F(batches),         F(merged_at_source), F(merged_at_hops), F(merged_bytes),
    F(peak_parked_bytes), F(reliefs), F(shm_sends), F(deepest_generation),
    F(tune_switches),
#undef F
};

#define NFIELDS (sizeof fields / sizeof fields[0])

void cr_module_print_counters(cr_comm *c, FILE *out, const char *title,
                              const char *const *names, const uint64_t *values, size_t n)
{
    double *v = cr_xmalloc(4 * n * sizeof *v);
    double *mn = v + n, *mx = v + 2 * n, *sum = v + 3 * n;
    for (size_t i = 0; i < n; i++)
        v[i] = (double)values[i];
    c->tp->ops->group->allreduce_double(c->tp, v, mn, (int)n, CR_OP_MIN);
    c->tp->ops->group->allreduce_double(c->tp, v, mx, (int)n, CR_OP_MAX);
    c->tp->ops->group->allreduce_double(c->tp, v, sum, (int)n, CR_OP_SUM);
    if (c->rank == 0) {
        int width = 33 - (int)strlen(title); /* the columns of cr_stats_print */
        fprintf(out, "%s over %d ranks %*s %16s %16s\n", title, c->size, width < 4 ? 4 : width,
                "min", "mean", "max");
        for (size_t i = 0; i < n; i++)
            fprintf(out, "  %-32s %16.0f %16.1f %16.0f\n", names[i], mn[i], sum[i] / c->size,
                    mx[i]);
        fflush(out);
    }
    free(v);
}

void cr_stats_print(cr_comm *c, FILE *out)
{
    cr_stats s;
    cr_stats_get(c, &s);
    const char *names[NFIELDS];
    uint64_t values[NFIELDS];
    for (size_t i = 0; i < NFIELDS; i++) {
        names[i] = fields[i].name;
        values[i] = *(const uint64_t *)((const char *)&s + fields[i].offset);
    }
    cr_module_print_counters(c, out, "courier stats", names, values, NFIELDS);
    cr_modules_stats_print(c, out);
}

void cr_stats_get(const cr_comm *c, cr_stats *out)
{
    *out = c->stats;
    out->peak_buffered_bytes = cr_outbufs_peak(&c->out);
    out->send_states = (uint64_t)c->out.nentries;
    out->peak_memory_bytes = cr_peak_memory(c);
    if (c->tp->data->ops->shared_sends)
        out->shm_sends = c->tp->data->ops->shared_sends(c->tp->data) - c->shm_sends_base;
}

void cr_stats_reset(cr_comm *c)
{
    c->tune.records_before_reset += c->stats.msgs_sent;
    c->tune.bytes_before_reset += c->stats.bytes_sent;
    c->tune.merged_before_reset += c->stats.merged_at_source + c->stats.merged_at_hops;
    memset(&c->stats, 0, sizeof c->stats);
    if (c->tp->data->ops->shared_sends)
        c->shm_sends_base = c->tp->data->ops->shared_sends(c->tp->data);
    cr_note_memory(c); /* the peaks start from what is held now */
    cr_outbufs_clear_sent(&c->out);
    c->out.peak = c->out.total;
    cr_modules_stats_reset(c);
}

uint64_t cr_memory_bound(const cr_comm *c, unsigned depth)
{
    return c->fops->memory_bound(c, depth);
}
