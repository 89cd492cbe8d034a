/* cr_stats_print: min / mean / max of every counter over the ranks. */
#include "mailbox/mailbox_internal.h"

#include <stddef.h>

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
    F(mpi_sends_off_node), F(mpi_bytes_on_node), F(mpi_bytes_off_node), F(local_buffers),
    F(batches),         F(merged_at_source), F(merged_at_hops), F(merged_bytes),
    F(requests),        F(requests_served),  F(requests_merged_at_source),
    F(requests_merged_at_hops), F(requests_coalesced), F(replies_fanned_out),
    F(request_bytes_saved),
#undef F
};

#define NFIELDS (sizeof fields / sizeof fields[0])

void cr_stats_print(cr_comm *c, FILE *out)
{
    cr_stats s;
    cr_stats_get(c, &s);
    double v[NFIELDS], mn[NFIELDS], mx[NFIELDS], sum[NFIELDS];
    for (size_t i = 0; i < NFIELDS; i++)
        v[i] = (double)*(const uint64_t *)((const char *)&s + fields[i].offset);
    c->tp->ops->allreduce_double(c->tp, v, mn, NFIELDS, CR_REDUCE_MIN);
    c->tp->ops->allreduce_double(c->tp, v, mx, NFIELDS, CR_REDUCE_MAX);
    c->tp->ops->allreduce_double(c->tp, v, sum, NFIELDS, CR_REDUCE_SUM);
    if (c->rank != 0)
        return;
    fprintf(out, "courier stats over %d ranks %20s %16s %16s\n", c->size, "min", "mean", "max");
    for (size_t i = 0; i < NFIELDS; i++)
        fprintf(out, "  %-32s %16.0f %16.1f %16.0f\n", fields[i].name, mn[i], sum[i] / c->size,
                mx[i]);
    fflush(out);
}

void cr_stats_get(const cr_comm *c, cr_stats *out)
{
    *out = c->stats;
    out->peak_buffered_bytes = cr_outbufs_peak(&c->out);
    out->peak_memory_bytes = cr_peak_memory(c);
}

void cr_stats_reset(cr_comm *c)
{
    memset(&c->stats, 0, sizeof c->stats);
    cr_note_memory(c); /* the peaks start from what is held now */
    memset(c->sent_to, 0, (size_t)c->size * sizeof *c->sent_to);
    c->out.peak = c->out.total;
}
