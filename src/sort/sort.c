/* cr_sort: sample sort on the mailbox (include/courier/sort.h, docs/sort.md).
 *
 * The steps, each collective:
 *  1. the ranks' counts (an allgather): N, and each rank's place in the input;
 *  2. a sample of the records, one in each of S equal strata of the input
 *     (systematic random sampling, S = 128 P, all records when N <= S), sent to
 *     rank 0, which sorts it and cuts it into P - 1 splitters for everyone (an
 *     allgatherv of which only rank 0's part is not empty);
 *  3. each rank counts its records per bucket, and the counts are summed (an
 *     allreduce): a bucket above 1.5 N / P + 1 draws a sample twice as large, up to
 *     three draws;
 *  4. every record goes to its bucket's rank as mailbox records of up to 16 KiB of
 *     records each, then a barrier; each rank sorts what it received;
 *  5. unless the buckets are within the tolerance, the edges move so that every rank
 *     holds its exact block (records with their place in the output, a barrier).
 * Ties are broken by the record's place in the input, its tag, so all-equal keys cut
 * like distinct ones (the idea of tie-breaking by position: Axtmann and Sanders,
 * "Robust massively parallel sorting", ALENEX 2017, section 5). Sample sort itself:
 * Frazer and McKellar, "Samplesort: a sampling approach to minimal storage tree
 * sorting", JACM 1970; docs/references.md. */
#include "common/block.h"
#include "common/fatal.h"
#include "courier/coll.h"
#include "courier/sort.h"
#include "mailbox/module.h"
#include "sort/local.h"

#include <stdlib.h>
#include <string.h>

enum {
    SAMPLES_PER_RANK = 128,  /* S = 128 P: buckets within 1.5 N / P whp (docs/sort.md) */
    MAX_DRAWS = 3,
    CHUNK_BYTES = 16 << 10,  /* a sample's or a final exchange's mailbox record, at most */
    MAX_BINNED_RANKS = 64,   /* above, the bins' counts (P x NBINS) are not summed */
};



/* What the handlers of one cr_sort fill. A faster rank may send before this rank
 * has reached the step (it waits in the collective before it, running handlers), so
 * every buffer a handler fills grows on demand from the start of the call; each step
 * then checks that exactly what was counted arrived. */
typedef struct sort_job {
    size_t rb;        /* record bytes */
    size_t width;     /* bytes of an entry in the bucket exchange */
    char *recv;       /* the bucket's entries, as they arrive */
    size_t recv_n, recv_cap;
    char *samples;    /* rank 0: the sample, as it arrives (rb + 8 bytes each) */
    size_t samples_n, samples_cap;
    char *out;        /* the final exchange: this rank's block, allocated when its
                         first records arrive (its place is known from step 1) */
    uint64_t out_first;
    size_t out_n, out_got;
    const sort_order *order;
    bool binned;      /* records go to their bin's place (recv is exactly the bucket) */
    bin_range bins;
    size_t bin_at[NBINS], bin_end[NBINS];
} sort_job;

typedef struct sort_state {
    int h_bucket, h_sample, h_place;
    sort_job *job;
} sort_state;

static int sort_poll(cr_comm *comm, void *state)
{
    (void)comm;
    (void)state;
    return -1;
}

static const cr_module_type sort_module = {.name = "sort", .poll = sort_poll,
                                           .destroy = cr_module_state_free};

/* Make room for `more` entries of `width` bytes after the n held. */
static void reserve(char **base, size_t n, size_t *cap, size_t more, size_t width)
{
    if (n + more <= *cap)
        return;
    size_t want = *cap ? *cap : 64;
    while (want < n + more)
        want *= 2;
    if (want > SIZE_MAX / width)
        cr_fatal("cr_sort: %zu entries of %zu bytes do not fit in memory", want, width);
    char *grown = realloc(*base, want * width);
    if (!grown)
        cr_fatal("cr_sort: out of memory for %zu received entries of %zu bytes", want, width);
    *base = grown;
    *cap = want;
}

static void append(char **base, size_t *n, size_t *cap, size_t width, const void *src,
                   size_t len, const char *what)
{
    if (len % width)
        cr_fatal("cr_sort: %s: a record of %zu bytes is not a whole number of entries of %zu "
                 "bytes: the ranks called cr_sort with different options", what, len, width);
    reserve(base, *n, cap, len / width, width);
    memcpy(*base + *n * width, src, len);
    *n += len / width;
}

/* An entry of this rank's bucket to the next place of its bin. */
static inline void place_in_bin(sort_job *j, const void *entry)
{
    size_t bin = sort_bin_of(j->bins, sort_key(j->order, entry));
    if (bin >= NBINS || j->bin_at[bin] == j->bin_end[bin])
        cr_fatal("cr_sort: more records arrived for a part of this rank's bucket than were "
                 "counted (a key function that answers differently for the same record?)");
    char *to = j->recv + j->bin_at[bin]++ * j->width;
    if (j->width == sizeof(uint64_t)) /* a constant size: a move, not a call */
        memcpy(to, entry, sizeof(uint64_t));
    else
        memcpy(to, entry, j->width);
    j->recv_n++;
}

static void on_buckets(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    sort_job *j = ((sort_state *)user)->job;
    if (!j)
        cr_fatal("cr_sort: records arrived outside a sort");
    if (b->len != j->width)
        cr_fatal("cr_sort: a record of %zu bytes arrived where entries have %zu: the ranks "
                 "called cr_sort with different options", b->len, j->width);
    if (j->binned) {
        for (size_t i = 0; i < b->count; i++)
            place_in_bin(j, cr_batch_payload(b, i));
        return;
    }
    reserve(&j->recv, j->recv_n, &j->recv_cap, b->count, j->width);
    char *to = j->recv + j->recv_n * j->width;
    if (b->stride == b->len) {
        memcpy(to, b->payloads, b->count * b->len);
    } else {
        for (size_t i = 0; i < b->count; i++)
            memcpy(to + i * b->len, cr_batch_payload(b, i), b->len);
    }
    j->recv_n += b->count;
}

static void on_sample(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm, (void)src;
    sort_job *j = ((sort_state *)user)->job;
    if (!j)
        cr_fatal("cr_sort: a sample arrived outside a sort");
    append(&j->samples, &j->samples_n, &j->samples_cap, j->rb + 8, payload, len, "the sample");
}

static void *alloc_or_die(size_t count, size_t size, const char *what)
{
    if (count && size > SIZE_MAX / count)
        cr_fatal("cr_sort: %s: %zu entries of %zu bytes do not fit in memory", what, count, size);
    return count ? cr_xmalloc(count * size) : NULL;
}

/* payload: the first record's place in the output (8 bytes), then records */
static void on_place(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm, (void)src;
    sort_job *j = ((sort_state *)user)->job;
    uint64_t pos;
    if (!j || len < 8)
        cr_fatal("cr_sort: a malformed record of the final exchange");
    memcpy(&pos, payload, 8);
    size_t k = (len - 8) / j->rb;
    if ((len - 8) % j->rb || pos < j->out_first || pos - j->out_first + k > j->out_n)
        cr_fatal("cr_sort: records for places %llu.. arrived at the rank of places %llu..%llu",
                 (unsigned long long)pos, (unsigned long long)j->out_first,
                 (unsigned long long)(j->out_first + j->out_n));
    if (!j->out)
        j->out = cr_xmalloc_large(j->out_n ? j->out_n : 1, j->rb);
    memcpy(j->out + (pos - j->out_first) * j->rb, (const char *)payload + 8, len - 8);
    j->out_got += k;
}

static sort_state *state_of(cr_comm *comm)
{
    bool fresh;
    sort_state *s = cr_module_state_or_new(comm, &sort_module, sizeof *s, &fresh);
    if (!fresh)
        return s;
    s->h_bucket = cr_register_type(comm, &(cr_handler_type){.batch = on_buckets, .name = "sort bucket"}, s);
    s->h_sample = cr_register_type(comm, &(cr_handler_type){.fn = on_sample, .name = "sort sample"}, s);
    s->h_place = cr_register_type(comm, &(cr_handler_type){.fn = on_place, .name = "sort place"}, s);
    return s;
}

void cr_sort_opts_init(cr_sort_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->seed = 1;
}

/* ---- 2. the sample and the splitters ---------------------------------------------- */

/* Send this rank's share of a draw of `samples` to rank 0 (tagged entries). */
static void send_sample(cr_comm *comm, sort_state *st, const sort_order *o, const char *rec,
                        size_t n, uint64_t first, uint64_t total, uint64_t samples, uint64_t seed)
{
    size_t ew = o->rb + 8, per = CHUNK_BYTES / ew ? CHUNK_BYTES / ew : 1, k = 0;
    char *chunk = alloc_or_die(per, ew, "the sample");
    for (uint64_t i = sort_sample_first_stratum(total, samples, first); i < samples; i++) {
        uint64_t pos = sort_sample_position(total, samples, i, seed);
        if (pos < first)
            continue;
        if (pos >= first + n)
            break;
        memcpy(chunk + k * ew, rec + (pos - first) * o->rb, o->rb);
        memcpy(chunk + k * ew + o->rb, &pos, 8);
        if (++k == per) {
            cr_async(comm, 0, st->h_sample, chunk, k * ew);
            k = 0;
        }
    }
    if (k)
        cr_async(comm, 0, st->h_sample, chunk, k * ew);
    free(chunk);
}

/* The P - 1 splitters of a draw, on every rank (tagged entries), their keys apart. */
static char *draw_splitters(cr_comm *comm, sort_state *st, sort_job *job, const sort_order *o,
                            const char *rec, size_t n, uint64_t first, uint64_t total,
                            uint64_t samples, uint64_t seed, uint64_t **keys_out)
{
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    size_t ew = o->rb + 8, nsplit = (size_t)p - 1;
    send_sample(comm, st, o, rec, n, first, total, samples, seed);
    cr_barrier(comm);
    char *split = alloc_or_die(nsplit ? nsplit : 1, ew, "the splitters");
    if (me == 0) {
        if (job->samples_n != samples)
            cr_fatal("cr_sort: rank 0 received %zu sample records of %llu drawn",
                     job->samples_n, (unsigned long long)samples);
        char *tmp = alloc_or_die(samples, ew, "the sample's sort");
        const char *sorted = sort_entries(o, job->samples, tmp, samples, ew, true);
        for (size_t q = 1; q <= nsplit; q++) {
            size_t at = (size_t)cr_block_first(samples, p, (int)q);
            if (at >= samples)
                at = samples - 1;
            memcpy(split + (q - 1) * ew, sorted + at * ew, ew);
        }
        free(tmp);
        /* a faster rank's next draw may already be arriving: start it afresh */
        free(job->samples);
        job->samples = NULL;
        job->samples_n = job->samples_cap = 0;
    }
    size_t *sizes = cr_xcalloc((size_t)p, sizeof *sizes), *offs = cr_xcalloc((size_t)p, sizeof *offs);
    sizes[0] = nsplit * ew;
    cr_allgatherv(comm, split, split, sizes, offs, NULL);
    free(sizes);
    free(offs);
    *keys_out = NULL;
    if (sort_has_key(o) && nsplit) {
        /* keys, then tags: the search reads both without a branch */
        uint64_t *keys = alloc_or_die(2 * nsplit, sizeof *keys, "the splitters' keys");
        for (size_t q = 0; q < nsplit; q++) {
            keys[q] = sort_key(o, split + q * ew);
            keys[nsplit + q] = sort_tag_at(split + q * ew, o->rb);
        }
        *keys_out = keys;
    }
    return split;
}

/* counts[q]: this rank's records for rank q; with bins (ranges[q], q's bins),
 * counts[p + q NBINS + b] those of them in q's bin b, and dest_of[i] record i's
 * rank (the exchange then needs no search). */
static void count_buckets(const sort_order *o, const sort_splitters *sp, const bin_range *ranges,
                          int p, const char *rec, size_t n, uint64_t first, uint64_t *counts,
                          uint8_t *dest_of)
{
    int dests[1024];
    uint64_t *bins = counts + p;
    for (size_t from = 0; from < n; from += 1024) {
        size_t k = n - from < 1024 ? n - from : 1024;
        const char *block = rec + from * o->rb;
        sort_buckets(o, sp, block, k, first + from, dests);
        if (!ranges) {
            for (size_t i = 0; i < k; i++)
                counts[dests[i]]++;
            continue;
        }
        for (size_t i = 0; i < k; i++) {
            int q = dests[i];
            counts[q]++;
            bins[(size_t)q * NBINS + sort_bin_of(ranges[q], sort_key(o, block + i * o->rb))]++;
            dest_of[from + i] = (uint8_t)q;
        }
    }
}

/* Each rank's bins, from the splitters' keys (the bucket of rank q holds keys from
 * the (q-1)-th splitter's to the q-th's, both included: ties go by tag). */
static void bins_of_ranks(const uint64_t *split_keys, int p, bin_range *ranges)
{
    for (int q = 0; q < p; q++)
        ranges[q] = sort_bins_between(q ? split_keys[q - 1] : 0, q < p - 1 ? split_keys[q] : UINT64_MAX);
}

/* This rank's bucket becomes an array of exactly its size, its bins laid out from
 * their counts; what arrived before (appended) moves to its bins. From here on
 * records go to their bins as they arrive. */
static void start_bins(sort_job *job, bin_range range, const uint64_t *bin_counts, uint64_t bucket)
{
    char *early = job->recv;
    size_t nearly = job->recv_n;
    job->recv = cr_xmalloc_large(bucket ? bucket : 1, job->width);
    job->recv_cap = (size_t)bucket;
    job->recv_n = 0;
    size_t at = 0;
    for (size_t b = 0; b < NBINS; b++) {
        job->bin_at[b] = at;
        at += bin_counts[b];
        job->bin_end[b] = at;
    }
    if (at != bucket)
        cr_fatal("cr_sort: the bins of this rank's bucket hold %zu records of its %llu", at,
                 (unsigned long long)bucket);
    job->bins = range;
    job->binned = true;
    for (size_t i = 0; i < nearly; i++)
        place_in_bin(job, early + i * job->width);
    free(early);
}

/* Each bin sorted alone (in cache when bins are even); the bucket stays in place. */
static void sort_bins(sort_job *job, const sort_order *o, char *scratch, size_t scratch_bytes,
                      bool tagged)
{
    size_t w = job->width, largest = 0;
    for (size_t b = 0, from = 0; b < NBINS; from = job->bin_end[b], b++)
        largest = job->bin_end[b] - from > largest ? job->bin_end[b] - from : largest;
    char *own = NULL;
    if (scratch_bytes < largest * w)
        scratch = own = alloc_or_die(largest, w, "a bin's scratch");
    for (size_t b = 0, from = 0; b < NBINS; from = job->bin_end[b], b++) {
        char *bin = job->recv + from * w;
        size_t k = job->bin_end[b] - from;
        char *sorted = sort_entries(o, bin, scratch, k, w, tagged);
        if (sorted != bin)
            memcpy(bin, sorted, k * w);
    }
    free(own);
}

/* ---- 4. the bucket exchange --------------------------------------------------------- */

/* Records go in blocks: their destinations computed, then one cr_async_many (the
 * mailbox appends them to its buffers in runs, one copy each). */
enum { SEND_BLOCK = 4096 };

static void exchange_buckets(cr_comm *comm, sort_state *st, sort_job *job, const sort_order *o,
                             const sort_splitters *sp, const uint8_t *dest_of, const char *rec,
                             size_t n, uint64_t first, bool tagged)
{
    size_t w = job->width;
    int me = cr_comm_rank(comm);
    int *dests = cr_xmalloc(SEND_BLOCK * sizeof *dests);
    char *away = alloc_or_die(SEND_BLOCK, w, "the exchange's entries");
    char hold[4096 + 8]; /* one own entry on its way to its bin */
    for (size_t from = 0; from < n; from += SEND_BLOCK) {
        size_t k = n - from < SEND_BLOCK ? n - from : SEND_BLOCK, sent = 0;
        const char *block = rec + from * o->rb;
        if (dest_of)
            for (size_t i = 0; i < k; i++)
                dests[i] = dest_of[from + i];
        else
            sort_buckets(o, sp, block, k, first + from, dests);
        size_t own = 0;
        for (size_t i = 0; !job->binned && i < k; i++)
            own += dests[i] == me;
        reserve(&job->recv, job->recv_n, &job->recv_cap, own, w);
        /* this rank's own records go straight to their place (their bin's, when
         * binned); the others are packed (with their tags when stable) for one
         * cr_async_many */
        for (size_t i = 0; i < k; i++) {
            char *e;
            if (dests[i] == me && job->binned && !tagged) {
                place_in_bin(job, block + i * o->rb);
                continue;
            }
            if (dests[i] == me) {
                e = job->binned ? hold : job->recv + job->recv_n++ * w;
            } else {
                dests[sent] = dests[i];
                e = away + sent++ * w;
            }
            memcpy(e, block + i * o->rb, o->rb);
            if (tagged) {
                uint64_t tag = first + from + i;
                memcpy(e + o->rb, &tag, 8);
            }
            if (e == hold)
                place_in_bin(job, hold);
        }
        if (sent)
            cr_async_many(comm, st->h_bucket, dests, away, w, sent);
    }
    free(away);
    free(dests);
    cr_barrier(comm);
}

/* ---- 5. exact blocks ------------------------------------------------------------------ */

static void exchange_places(cr_comm *comm, sort_state *st, sort_job *job, const char *sorted,
                            size_t n, uint64_t gfirst, uint64_t total, cr_sort_stats *stats)
{
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    size_t rb = job->rb;
    if (!job->out)
        job->out = cr_xmalloc_large(job->out_n ? job->out_n : 1, rb);
    size_t per = CHUNK_BYTES / rb ? CHUNK_BYTES / rb : 1;
    char *msg = alloc_or_die(1, 8 + per * rb, "the final exchange's chunk");
    uint64_t pos = gfirst, end = gfirst + n;
    while (pos < end) {
        int q = cr_block_owner(total, p, pos);
        uint64_t qend = cr_block_first(total, p, q + 1);
        uint64_t upto = qend < end ? qend : end;
        const char *from = sorted + (pos - gfirst) * rb;
        if (q == me) {
            memcpy(job->out + (pos - job->out_first) * rb, from, (upto - pos) * rb);
            job->out_got += upto - pos;
            pos = upto;
            continue;
        }
        size_t k = upto - pos < per ? (size_t)(upto - pos) : per;
        memcpy(msg, &pos, 8);
        memcpy(msg + 8, from, k * rb);
        cr_async(comm, q, st->h_place, msg, 8 + k * rb);
        stats->moved_final += k;
        pos += k;
    }
    free(msg);
    cr_barrier(comm);
    if (job->out_got != job->out_n)
        cr_fatal("cr_sort: rank %d holds %zu records of its block of %zu after the final exchange",
                 me, job->out_got, job->out_n);
}

/* ---- the call ------------------------------------------------------------------------- */

static bool within_tolerance(const uint64_t *totals, int p, uint64_t total, double t)
{
    bool exact = true;
    for (int q = 0; q < p; q++)
        exact = exact && totals[q] == cr_block_count(total, p, q);
    if (exact || t <= 0)
        return exact;
    double share = (double)total / p;
    for (int q = 0; q < p; q++)
        if ((double)totals[q] > share * (1 + t) || (double)totals[q] < share * (1 - t))
            return false;
    return true;
}

void cr_sort(cr_comm *comm, void **records, size_t *count, const cr_sort_opts *opts,
             cr_sort_stats *stats_out)
{
    double t0 = cr_module_now(comm);
    char err[200];
    sort_order o;
    if (cr_module_in_handler(comm))
        cr_fatal("cr_sort: called from a handler; sort from the main program");
    if (sort_order_of(opts, &o, err, sizeof err))
        cr_fatal("cr_sort: %s", err);
    if (!records || !count || (*count && !*records))
        cr_fatal("cr_sort: no records given (records or count NULL, or NULL with a count)");
    sort_state *st = state_of(comm);
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    cr_sort_stats stats = {0};

    sort_job job = {.rb = o.rb, .width = o.rb + (opts->stable ? 8 : 0), .order = &o};
    st->job = &job;

    /* 1. counts and places */
    uint64_t mine = *count, *counts = alloc_or_die((size_t)p, sizeof *counts, "the counts");
    cr_allgather(comm, &mine, sizeof mine, counts, NULL);
    uint64_t total = 0, first = 0;
    for (int q = 0; q < p; q++) {
        if (q == me)
            first = total;
        total += counts[q];
    }
    free(counts);
    stats.total = total;
    char *rec = *records;
    size_t n = *count;
    job.out_first = cr_block_first(total, p, me);
    job.out_n = (size_t)cr_block_count(total, p, me);

    double t1 = cr_module_now(comm);
    /* 2, 3. splitters that cut well, and the buckets' sizes (and their bins') */
    bool binned = sort_has_key(&o) && p > 1 && p <= MAX_BINNED_RANKS && total > 0;
    size_t ncounts = (size_t)p + (binned ? (size_t)p * NBINS : 0);
    uint64_t *totals = cr_xcalloc(ncounts, sizeof *totals);
    uint64_t *mycounts = cr_xcalloc(ncounts, sizeof *mycounts);
    bin_range *ranges = binned ? cr_xcalloc((size_t)p, sizeof *ranges) : NULL;
    uint8_t *dest_of = binned ? alloc_or_die(n ? n : 1, 1, "the records' ranks") : NULL;
    uint64_t bound = (total + (uint64_t)p - 1) / (uint64_t)p * 3 / 2 + 1;
    uint64_t samples = (uint64_t)SAMPLES_PER_RANK * (uint64_t)p;
    char *split = NULL;
    uint64_t *split_keys = NULL;
    sort_splitters sp = {0};
    for (unsigned draw = 1; total > 0 && p > 1; draw++, samples *= 2) {
        free(split);
        free(split_keys);
        uint64_t s = samples < total ? samples : total;
        split = draw_splitters(comm, st, &job, &o, rec, n, first, total, s,
                               opts->seed + draw * 0x632be59bd9b4e019ULL, &split_keys);
        sp = (sort_splitters){.entries = split, .keys = split_keys,
                              .tags = split_keys ? split_keys + (p - 1) : NULL, .n = (size_t)p - 1};
        memset(mycounts, 0, ncounts * sizeof *mycounts);
        if (binned)
            bins_of_ranks(split_keys, p, ranges);
        count_buckets(&o, &sp, ranges, p, rec, n, first, mycounts, dest_of);
        cr_allreduce(comm, mycounts, totals, ncounts, CR_UINT64, CR_OP_SUM, NULL);
        stats.samples = s;
        stats.draws = draw;
        stats.largest = 0;
        for (int q = 0; q < p; q++)
            stats.largest = totals[q] > stats.largest ? totals[q] : stats.largest;
        if (stats.largest <= bound || draw == MAX_DRAWS || s == total)
            break;
    }
    if (p == 1 || total == 0) {
        totals[0] = total;
        stats.largest = total;
    }
    free(mycounts);

    double t2 = cr_module_now(comm);
    stats.sample_seconds = t2 - t1;
    /* 4. every record to its bucket, and the bucket sorted */
    uint64_t gfirst = 0;
    for (int q = 0; q < me; q++)
        gfirst += totals[q];
    if (job.recv_n > totals[me])
        cr_fatal("cr_sort: rank %d received %zu records before the exchange, of the %llu its "
                 "bucket counted", me, job.recv_n, (unsigned long long)totals[me]);
    if (totals[me] > SIZE_MAX / job.width)
        cr_fatal("cr_sort: this rank's bucket of %llu records of %zu bytes does not fit in memory",
                 (unsigned long long)totals[me], job.width);
    if (binned) {
        start_bins(&job, ranges[me], totals + p + (size_t)me * NBINS, totals[me]);
    } else if (job.recv_cap != totals[me]) { /* exactly the bucket: what arrived early stays */
        char *exact = cr_xmalloc_large(totals[me] ? totals[me] : 1, job.width);
        if (job.recv_n)
            memcpy(exact, job.recv, job.recv_n * job.width);
        free(job.recv);
        job.recv = exact;
        job.recv_cap = (size_t)totals[me];
    }
    exchange_buckets(comm, st, &job, &o, &sp, dest_of, rec, n, first, opts->stable);
    free(dest_of);
    *records = NULL;
    free(split);
    free(split_keys);
    if (job.recv_n != totals[me])
        cr_fatal("cr_sort: rank %d received %zu records of the %llu its bucket counted (a key "
                 "function or comparator that answers differently for the same record?)", me,
                 job.recv_n, (unsigned long long)totals[me]);
    stats.received = job.recv_n;
    double t3 = cr_module_now(comm);
    stats.exchange_seconds = t3 - t2;
    /* The input, sent, is the local sort's scratch (memory touched already costs
     * nothing to fill again). When the bucket is larger (on about half the ranks,
     * by a little), a buffer of the bucket's size takes the input's place: sorting in
     * place instead chases cycles through the bucket at three times the cost, more
     * than a fresh buffer's page faults (docs/design-notes.md, "cr_sort's scratch"). */
    size_t input_bytes = n * o.rb, need = job.recv_n * job.width;
    if (binned)
        sort_bins(&job, &o, rec, input_bytes, opts->stable);
    if (!binned && input_bytes < need && job.recv_n > 1) {
        free(rec);
        rec = cr_xmalloc_large(job.recv_n, job.width);
        input_bytes = need;
    }
    char *scratch = input_bytes >= need ? rec : NULL;
    char *sorted = binned ? job.recv
                          : sort_entries(&o, job.recv, scratch, job.recv_n, job.width, opts->stable);
    char *spare = rec;
    size_t spare_bytes = input_bytes;
    if (sorted != job.recv) { /* the sorted entries ended in the input */
        spare = job.recv;
        spare_bytes = job.recv_cap * job.width;
    }
    if (opts->stable) /* drop the tags: the records close up in place */
        for (size_t i = 0; i < job.recv_n; i++)
            memmove(sorted + i * o.rb, sorted + i * job.width, o.rb);

    double t4 = cr_module_now(comm);
    stats.local_seconds = t4 - t3;
    /* 5. exact blocks, unless the buckets are within the tolerance */
    if (within_tolerance(totals, p, total, opts->tolerance)) {
        free(spare);
        *records = sorted;
        *count = job.recv_n;
    } else {
        stats.rebalanced = true;
        if (!job.out && spare_bytes >= job.out_n * o.rb) {
            job.out = spare; /* no record arrived early: the spare buffer takes the block */
            spare = NULL;
        }
        exchange_places(comm, st, &job, sorted, job.recv_n, gfirst, total, &stats);
        free(sorted);
        free(spare);
        *records = job.out;
        *count = job.out_n;
    }
    if (*count == 0) {
        free(*records);
        *records = NULL;
    }
    free(totals);
    free(ranges);
    st->job = NULL;
    stats.seconds = cr_module_now(comm) - t0;
    stats.final_seconds = cr_module_now(comm) - t4;
    if (stats_out)
        *stats_out = stats;
}

uint64_t cr_sort_check_order(cr_comm *comm, const void *records, size_t count,
                             const cr_sort_opts *opts)
{
    char err[200];
    sort_order o;
    if (sort_order_of(opts, &o, err, sizeof err))
        cr_fatal("cr_sort_check_order: %s", err);
    const char *rec = records;
    uint64_t breaks = 0;
    for (size_t i = 1; i < count; i++)
        breaks += sort_compare(&o, rec + (i - 1) * o.rb, rec + i * o.rb) > 0;
    /* each rank's first and last record, for the order between ranks */
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    size_t ew = 8 + 2 * o.rb;
    char *mine = cr_xcalloc(1, ew), *all = alloc_or_die((size_t)p, ew, "the ends of the ranks");
    uint64_t has = count > 0;
    memcpy(mine, &has, 8);
    if (count) {
        memcpy(mine + 8, rec, o.rb);
        memcpy(mine + 8 + o.rb, rec + (count - 1) * o.rb, o.rb);
    }
    cr_allgather(comm, mine, ew, all, NULL);
    if (count)
        for (int q = me + 1; q < p; q++) {
            uint64_t h;
            memcpy(&h, all + (size_t)q * ew, 8);
            if (!h)
                continue;
            breaks += sort_compare(&o, rec + (count - 1) * o.rb, all + (size_t)q * ew + 8) > 0;
            break;
        }
    free(mine);
    free(all);
    uint64_t sum;
    cr_allreduce(comm, &breaks, &sum, 1, CR_UINT64, CR_OP_SUM, NULL);
    return sum;
}
