/* histogram: the classic aggregation benchmark (bale's histo) and its request/reply
 * twin (bale's index gather). Each rank sends N random increments into a table of T
 * counters block-distributed over the ranks: through Courier (an 8-byte record per
 * update: one cr_async each, or with --prepared chunks of 256 through cr_async_many),
 * bulk-synchronously (bucket by owner, MPI_Alltoall of counts,
 * MPI_Alltoallv), and as the machine's ceiling in one process without MPI (rank 0
 * does every rank's updates in a plain loop). In gather mode each rank instead reads
 * N random counters, each read a request answered by a reply. Every mode verifies. */
#include "cli.h"
#include "skew.h"
#include <courier/rng.h>

#include <courier.h>

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] =
    "Usage: mpirun -np P histogram [options]\n"
    "\n"
    "Each rank sends N random increments (8-byte counter indices) into a table of T\n"
    "counters block-distributed over the ranks, then the result is verified: the\n"
    "counters sum to N*P and a per-index checksum matches the updates sent.\n"
    "\n"
    "  --updates N      updates per rank (default 2M; suffixes K, M, G)\n"
    "  --table T        counters in the whole table (default 1M)\n"
    "  --mode M[,M...]  which runs, in this order (default both):\n"
    "                     courier    an 8-byte record per update (cr_async; with\n"
    "                                --prepared, chunks through cr_async_many)\n"
    "                     alltoallv  bucket by owner, MPI_Alltoallv\n"
    "                     local      the ceiling: rank 0 alone does all ranks' updates\n"
    "                                into the whole table in a plain loop, no MPI (the\n"
    "                                other ranks sleep meanwhile)\n"
    "                     gather     N reads per rank of random counters, each a request\n"
    "                                answered by a reply (bale's index gather); verified\n"
    "                                against the values the owners hold\n"
    "                     both = courier,alltoallv; all = courier,alltoallv,local,gather\n"
    "  --handler H      batch (one call per run of updates, cr_handler_type.batch) or\n"
    "                   record (one call per update) (default batch)\n"
    "  --combine        courier mode: 16-byte updates {index, amount} to a summing handler,\n"
    "                   merged wherever two for one counter meet in a send buffer, at\n"
    "                   their source or at a forwarding rank (include/courier/dedup.h);\n"
    "                   gather mode: reads are cr_dedup_request, merged with identical\n"
    "                   reads on their way and coalesced while in flight, the replies\n"
    "                   split again on the way back\n"
    "  --skew S         draw index floor(range * u^S) of a uniform u, hashed over the\n"
    "                   table: S = 1 (default) is uniform, larger S puts most updates\n"
    "                   on a few counters spread over the ranks\n"
    "  --buffer-kb K    Courier flush threshold in KiB (default: COURIER_BUFFER_SIZE or 64)\n"
    "  --route R        direct, nr, nlnr, grid, grid:AxB..., hypercube (default:\n"
    "                   COURIER_ROUTE or direct); see docs/routing.md\n"
    "  --node-size K    each node cut into virtual nodes of K ranks (default:\n"
    "                   COURIER_NODE_SIZE, or the nodes MPI reports)\n"
    "  --reps R         repetitions per mode; the median time is reported (default 3)\n"
    "  --seed S         random seed (default 1)\n"
    "  --hotspot        send every update to counters of rank 0 (all-to-one)\n"
    "  --darray         courier and gather modes through the library's distributed array\n"
    "                   (include/courier/darray.h, merge add): cr_darray_async_write per\n"
    "                   update, cr_darray_async_read per read; counters owned by a rank\n"
    "                   of the same node are updated and read in place in the node's\n"
    "                   shared memory, the others by records (docs/darray.md)\n"
    "  --prepared       draw every update's (and read's) owner and offset before the\n"
    "                   timed section, as bale's histogram and index gather do\n"
    "                   (courier, local and gather modes): the timed loop only sends,\n"
    "                   or only adds; without --combine\n";

enum { MODE_COURIER, MODE_ALLTOALLV, MODE_LOCAL, MODE_GATHER, NMODES };
static const char *const mode_names[] = {"courier", "alltoallv", "local", "gather", NULL};
static const char *const handler_names[] = {"batch", "record", NULL};

typedef struct table {
    uint64_t *count; /* this rank's block */
    uint64_t first;  /* global index of count[0] */
    uint64_t len;
    uint64_t total;  /* T */
    uint64_t base, extra, cut; /* T / P, T % P, and the first index in a block of base */
    uint64_t range;  /* updates draw indices from [0, range): T, or rank 0's block */
    double skew;     /* 1: uniform; s > 1: index floor(range * u^s) of a uniform u, hashed
                        over the table, so a few counters (anywhere) get most updates */
    int size;
} table;

/* Balanced blocks: the first T % P ranks own one counter more. */
static inline int owner_of(const table *t, uint64_t idx)
{
    return idx < t->cut ? (int)(idx / (t->base + 1)) : (int)(t->extra + (idx - t->cut) / t->base);
}

/* The global index of rank r's first counter. */
static inline uint64_t block_start(const table *t, int r)
{
    uint64_t ur = (uint64_t)r;
    return ur * t->base + (ur < t->extra ? ur : t->extra);
}

/* The next index of a stream: uniform, or skewed (--skew). */
static inline uint64_t draw(const table *t, uint64_t *s)
{
    return app_skewed_key(t->range, t->skew, s);
}

/* Collective: a block too large to allocate on any rank ends the job with one line. */
static void table_init(const app *a, table *t, uint64_t total, int rank, int size)
{
    uint64_t base = total / (uint64_t)size, extra = total % (uint64_t)size;
    t->total = total;
    t->size = size;
    t->base = total / (uint64_t)size;
    t->extra = total % (uint64_t)size;
    t->cut = t->extra * (t->base + 1);
    t->len = base + ((uint64_t)rank < extra);
    t->first = (uint64_t)rank * base + ((uint64_t)rank < extra ? (uint64_t)rank : extra);
    t->count = t->len <= SIZE_MAX / sizeof *t->count ? calloc(t->len ? t->len : 1, sizeof *t->count)
                                                      : NULL;
    char err[160];
    snprintf(err, sizeof err, "--table %llu: cannot allocate this rank's block of %llu counters "
             "(%.1f GiB)", (unsigned long long)total, (unsigned long long)t->len,
             (double)t->len * sizeof *t->count / (1 << 30));
    app_agree(a, t->count ? NULL : err);
    t->range = total;
    t->skew = 1.0;
}

static void on_increment(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm;
    (void)src;
    (void)len;
    table *t = user;
    uint64_t idx;
    memcpy(&idx, payload, sizeof idx);
    t->count[idx - t->first]++;
}

static void on_increments(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    table *t = user;
    uint64_t *count = t->count, first = t->first;
    for (size_t k = 0; k < b->count; k++) {
        uint64_t idx;
        memcpy(&idx, cr_batch_payload(b, k), sizeof idx);
        count[idx - first]++;
    }
}

/* --prepared: the payload is the counter's offset in the owner's block. */
static void on_offset(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm, (void)src, (void)len;
    table *t = user;
    uint64_t off;
    memcpy(&off, payload, sizeof off);
    t->count[off]++;
}

static void on_offsets(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    uint64_t *count = ((table *)user)->count;
    for (size_t k = 0; k < b->count; k++) {
        uint64_t off;
        memcpy(&off, cr_batch_payload(b, k), sizeof off);
        count[off]++;
    }
}

static uint64_t stream_seed(uint64_t seed, int rank)
{
    return cr_rng_hash64(seed * 0x100000001b3ULL + (uint64_t)rank);
}

static void run_courier(cr_comm *comm, int h, table *t, uint64_t n, uint64_t seed, int rank)
{
    uint64_t s = stream_seed(seed, rank);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t idx = draw(t, &s);
        cr_async(comm, owner_of(t, idx), h, &idx, sizeof idx);
    }
    cr_barrier(comm);
}

/* --darray: the table is a cr_darray; one cr_darray_async_write per update. */
static void run_darray(cr_comm *comm, cr_darray *arr, table *t, uint64_t n, uint64_t seed,
                       int rank)
{
    uint64_t s = stream_seed(seed, rank), one = 1;
    for (uint64_t i = 0; i < n; i++)
        cr_darray_async_write(arr, draw(t, &s), &one);
    cr_barrier(comm);
}

/* --prepared, as bale's histogram packs its updates before it starts the clock: an
 * update is (offset in the owner's block) << PREP_OWNER_BITS | owner. */
#define PREP_OWNER_BITS 20

static void prepare(const table *t, uint64_t *prep, uint64_t n, uint64_t seed, int rank)
{
    uint64_t s = stream_seed(seed, rank);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t idx = draw(t, &s);
        int owner = owner_of(t, idx);
        prep[i] = (idx - block_start(t, owner)) << PREP_OWNER_BITS | (uint64_t)owner;
    }
}

/* The updates go in chunks through cr_async_many: unpacking a chunk into owners and
 * offsets is a tight loop, and the library then appends the chunk's records with its
 * checks made once. */
#define PREP_CHUNK 256

static void run_prepared(cr_comm *comm, int h, const uint64_t *prep, uint64_t n)
{
    const uint64_t mask = (1u << PREP_OWNER_BITS) - 1;
    int owner[PREP_CHUNK];
    uint64_t off[PREP_CHUNK];
    for (uint64_t i = 0; i < n; i += PREP_CHUNK) {
        size_t k = n - i < PREP_CHUNK ? (size_t)(n - i) : PREP_CHUNK;
        for (size_t j = 0; j < k; j++) {
            owner[j] = (int)(prep[i + j] & mask);
            off[j] = prep[i + j] >> PREP_OWNER_BITS;
        }
        cr_async_many(comm, h, owner, off, sizeof *off, k);
    }
    cr_barrier(comm);
}

/* --darray --prepared: the packed updates back to global indices. */
static void run_darray_prepared(cr_comm *comm, cr_darray *arr, const table *t,
                                const uint64_t *prep, uint64_t n)
{
    const uint64_t mask = (1u << PREP_OWNER_BITS) - 1, one = 1;
    for (uint64_t i = 0; i < n; i++)
        cr_darray_async_write(arr, block_start(t, (int)(prep[i] & mask)) +
                                       (prep[i] >> PREP_OWNER_BITS), &one);
    cr_barrier(comm);
}

/* --combine: an update is {index, amount}, and a summing handler merges the updates
 * of one counter wherever they meet in a send buffer (include/courier/dedup.h). */
static void on_sums(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    table *t = user;
    for (size_t k = 0; k < b->count; k++) {
        uint64_t u[2];
        memcpy(u, cr_batch_payload(b, k), sizeof u);
        t->count[u[0] - t->first] += u[1];
    }
}

static void run_combining(cr_comm *comm, int h, table *t, uint64_t n, uint64_t seed, int rank)
{
    uint64_t s = stream_seed(seed, rank);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t u[2] = {draw(t, &s), 1};
        cr_async(comm, owner_of(t, u[0]), h, u, sizeof u);
    }
    cr_barrier(comm);
}

static void run_alltoallv(const app *a, table *t, uint64_t n, uint64_t seed, int rank, int size)
{
    uint64_t *updates = app_calloc(a, n, sizeof *updates, "the updates");
    uint64_t *sendbuf = app_calloc(a, n, sizeof *sendbuf, "the send buffer");
    int *scount = app_calloc(a, (size_t)size, sizeof(int), "the counts");
    int *rcount = app_calloc(a, (size_t)size, sizeof(int), "the counts");
    int *sdispl = app_calloc(a, (size_t)size, sizeof(int), "the displacements");
    int *rdispl = app_calloc(a, (size_t)size, sizeof(int), "the displacements");
    uint64_t s = stream_seed(seed, rank);
    for (uint64_t i = 0; i < n; i++) {
        updates[i] = draw(t, &s);
        scount[owner_of(t, updates[i])]++;
    }
    MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD);
    int stotal = 0, rtotal = 0;
    for (int r = 0; r < size; r++) {
        sdispl[r] = stotal;
        rdispl[r] = rtotal;
        stotal += scount[r];
        rtotal += rcount[r];
    }
    int *fill = app_calloc(a, (size_t)size, sizeof(int), "the displacements");
    memcpy(fill, sdispl, (size_t)size * sizeof(int));
    for (uint64_t i = 0; i < n; i++)
        sendbuf[fill[owner_of(t, updates[i])]++] = updates[i];
    uint64_t *recvbuf = app_calloc(a, (size_t)rtotal, sizeof *recvbuf, "the receive buffer");
    MPI_Alltoallv(sendbuf, scount, sdispl, MPI_UINT64_T, recvbuf, rcount, rdispl, MPI_UINT64_T,
                  MPI_COMM_WORLD);
    for (int i = 0; i < rtotal; i++)
        t->count[recvbuf[i] - t->first]++;
    free(updates);
    free(sendbuf);
    free(recvbuf);
    free(scount);
    free(rcount);
    free(sdispl);
    free(rdispl);
    free(fill);
}

/* ---------------------------------------------------------------- local: the ceiling */

/* Wait for the other ranks without spinning, so the one rank at work has the cores. */
static void wait_sleeping(void)
{
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    for (int done = 0;;) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    }
}

/* Rank 0 does every rank's updates into the whole table (`full`, T counters), with
 * the same streams as the other modes; returns its time, on every rank, and whether
 * the counts verify (sum and per-index checksum, as verify() does). */
static double run_local(const table *t, uint64_t *full, uint64_t *indices, uint64_t n,
                        uint64_t seed, int rank, int size, int *ok)
{
    double sec = 0;
    if (rank == 0) {
        memset(full, 0, t->total * sizeof *full);
        if (indices) /* --prepared: every rank's indices drawn before the clock starts */
            for (int r = 0; r < size; r++) {
                uint64_t s = stream_seed(seed, r);
                for (uint64_t i = 0; i < n; i++)
                    indices[(uint64_t)r * n + i] = draw(t, &s);
            }
        double t0 = MPI_Wtime();
        if (indices) {
            for (uint64_t i = 0; i < n * (uint64_t)size; i++)
                full[indices[i]]++;
        } else {
            for (int r = 0; r < size; r++) {
                uint64_t s = stream_seed(seed, r);
                for (uint64_t i = 0; i < n; i++)
                    full[draw(t, &s)]++;
            }
        }
        sec = MPI_Wtime() - t0;
        uint64_t sum = 0, check = 0, sent = 0;
        for (uint64_t i = 0; i < t->total; i++) {
            sum += full[i];
            check += full[i] * cr_rng_hash64(i);
        }
        for (int r = 0; r < size; r++) {
            uint64_t s = stream_seed(seed, r);
            for (uint64_t i = 0; i < n; i++)
                sent += cr_rng_hash64(draw(t, &s));
        }
        *ok = sum == n * (uint64_t)size && check == sent;
    }
    wait_sleeping();
    double res[2] = {sec, *ok};
    MPI_Bcast(res, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    *ok = res[1] != 0;
    return res[0];
}

/* ---------------------------------------------------------------- gather: request/reply */

/* Each rank reads N random counters of the table. A request is one 8-byte word: the
 * counter's offset in its owner's block (high 32 bits) and the slot of the answer in
 * the requester's array (low 32 bits), as bale's index gather packs it; the owner
 * answers {slot, value}. The table holds hash(i) at global index i, so every answer
 * can be checked. */
typedef struct gather {
    table *t;
    uint64_t *got; /* [N] answers, by slot */
    uint64_t answers;
    uint64_t served; /* requests that reached this rank as their owner */
    int h_reply;
    int merged;      /* --combine: reads are cr_dedup_request, merged on their way */
} gather;

/* --combine: a read is a request {global index} (the key), merged with identical
 * reads wherever they meet and coalesced while in flight; the reply is the value. */
static gather *merged_gather; /* the reply callback's counter of answers */

/* The owner's side, a run of reads at a time (serve_many): the counters are fetched
 * for the whole run first, so that their cache misses overlap. */
static void serve_reads(cr_comm *comm, const void *payloads, size_t stride, size_t len, size_t n,
                        void *replies, void *user)
{
    (void)comm, (void)len;
    gather *g = user;
    const char *p = payloads;
    uint64_t *out = replies;
    for (size_t i = 0; i < n; i++) {
        uint64_t idx;
        memcpy(&idx, p + i * stride, sizeof idx);
        __builtin_prefetch(&g->t->count[idx - g->t->first]);
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t idx;
        memcpy(&idx, p + i * stride, sizeof idx);
        out[i] = g->t->count[idx - g->t->first];
    }
    g->served += n;
}

static void got_read(cr_comm *comm, const void *data, size_t len, void *slot)
{
    (void)comm, (void)len;
    memcpy(slot, data, sizeof(uint64_t));
    merged_gather->answers++;
}

/* The replies of the direct requests, a run at a time (replied_many): got_read for
 * each, with the answer slots fetched a few ahead. */
static void got_reads(cr_comm *comm, const void *replies, size_t stride, size_t len, size_t n,
                      void *user)
{
    (void)comm, (void)len;
    gather *g = user;
    for (size_t i = 0; i < n; i++) {
        if (i + 8 < n)
            __builtin_prefetch(cr_dedup_replied_ctx(replies, stride, i + 8), 1);
        memcpy(cr_dedup_replied_ctx(replies, stride, i), cr_dedup_replied_data(replies, stride, i),
               sizeof(uint64_t));
    }
    g->answers += n;
}

/* Requests and replies go in chunks through cr_async_many (see run_prepared). */
#define GATHER_CHUNK 256

static void on_requests(cr_comm *comm, const cr_batch *b, void *user)
{
    gather *g = user;
    g->served += b->count;
    int src[GATHER_CHUNK];
    uint64_t reply[GATHER_CHUNK][2];
    for (size_t k = 0; k < b->count; k += GATHER_CHUNK) {
        size_t m = b->count - k < GATHER_CHUNK ? b->count - k : GATHER_CHUNK;
        for (size_t j = 0; j < m; j++) {
            uint64_t w;
            memcpy(&w, cr_batch_payload(b, k + j), sizeof w);
            src[j] = cr_batch_src(b, k + j);
            reply[j][0] = w & 0xffffffffu;
            reply[j][1] = g->t->count[w >> 32];
        }
        cr_async_many(comm, g->h_reply, src, reply, sizeof reply[0], m);
    }
}

static void on_replies(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    gather *g = user;
    for (size_t k = 0; k < b->count; k++) {
        uint64_t reply[2];
        memcpy(reply, cr_batch_payload(b, k), sizeof reply);
        g->got[reply[0]] = reply[1];
    }
    g->answers += b->count;
}

static void run_gather(cr_comm *comm, int h_request, gather *g, uint64_t n, uint64_t seed,
                       int rank)
{
    const table *t = g->t;
    uint64_t s = stream_seed(seed, rank);
    g->answers = 0;
    g->served = 0;
    int owner[GATHER_CHUNK];
    uint64_t w[GATHER_CHUNK];
    if (g->merged) {
        void *slot[GATHER_CHUNK];
        for (uint64_t i = 0; i < n; i += GATHER_CHUNK) {
            size_t m = n - i < GATHER_CHUNK ? (size_t)(n - i) : GATHER_CHUNK;
            for (size_t j = 0; j < m; j++) {
                w[j] = draw(t, &s);
                owner[j] = owner_of(t, w[j]);
                slot[j] = &g->got[i + j];
            }
            cr_dedup_request_many(comm, h_request, owner, w, sizeof *w, m, got_read, slot);
        }
        cr_barrier(comm);
        return;
    }
    for (uint64_t i = 0; i < n; i += GATHER_CHUNK) {
        size_t m = n - i < GATHER_CHUNK ? (size_t)(n - i) : GATHER_CHUNK;
        for (size_t j = 0; j < m; j++) {
            uint64_t idx = draw(t, &s);
            owner[j] = owner_of(t, idx);
            w[j] = (idx - block_start(t, owner[j])) << 32 | (i + j);
        }
        cr_async_many(comm, h_request, owner, w, sizeof *w, m);
    }
    cr_barrier(comm);
}

/* --prepared, as bale's index gather packs its requests before it starts the clock:
 * the reads drawn by prepare() (the same stream as run_gather's), each sent with its
 * slot. */
static void run_gather_prepared(cr_comm *comm, int h_request, gather *g, const uint64_t *prep,
                                uint64_t n)
{
    const uint64_t mask = (1u << PREP_OWNER_BITS) - 1;
    g->answers = 0;
    g->served = 0;
    int owner[GATHER_CHUNK];
    uint64_t w[GATHER_CHUNK];
    for (uint64_t i = 0; i < n; i += GATHER_CHUNK) {
        size_t m = n - i < GATHER_CHUNK ? (size_t)(n - i) : GATHER_CHUNK;
        for (size_t j = 0; j < m; j++) {
            owner[j] = (int)(prep[i + j] & mask);
            w[j] = (prep[i + j] >> PREP_OWNER_BITS) << 32 | (i + j);
        }
        cr_async_many(comm, h_request, owner, w, sizeof *w, m);
    }
    cr_barrier(comm);
}

/* --darray: one cr_darray_async_read per read, its answer by got_read. */
static void run_darray_gather(cr_comm *comm, cr_darray *arr, gather *g, uint64_t n,
                              uint64_t seed, int rank)
{
    uint64_t s = stream_seed(seed, rank);
    g->answers = 0;
    g->served = 0;
    merged_gather = g;
    for (uint64_t i = 0; i < n; i++)
        cr_darray_async_read(arr, draw(g->t, &s), got_read, &g->got[i]);
    cr_barrier(comm);
}

/* Every answer arrived once and holds hash(index asked), on every rank. */
static int verify_gather(const gather *g, uint64_t n, uint64_t seed, int rank)
{
    uint64_t s = stream_seed(seed, rank), bad = g->answers != n, any;
    for (uint64_t i = 0; i < n; i++)
        bad += g->got[i] != cr_rng_hash64(draw(g->t, &s));
    MPI_Allreduce(&bad, &any, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return any == 0;
}

/* --mode: a comma-separated list of modes, or both / all. */
static void parse_modes(const app *a, const char *value, int *want)
{
    memset(want, 0, NMODES * sizeof *want);
    char buf[256];
    if (snprintf(buf, sizeof buf, "%s", value) >= (int)sizeof buf)
        app_usage_error(a, "--mode '%s' is too long", value);
    for (char *tok = buf, *next; tok; tok = next) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        if (!strcmp(tok, "both")) {
            want[MODE_COURIER] = want[MODE_ALLTOALLV] = 1;
        } else if (!strcmp(tok, "all")) {
            for (int m = 0; m < NMODES; m++)
                want[m] = 1;
        } else {
            int m = 0;
            while (m < NMODES && strcmp(tok, mode_names[m]))
                m++;
            if (m == NMODES)
                app_usage_error(a, "bad value for --mode: '%s' (expected a comma-separated list "
                                "of: courier, alltoallv, local, gather, both, all)", tok);
            want[m] = 1;
        }
    }
}

/* What the route did in the last courier repetition, reduced over the ranks. */
typedef struct traffic {
    double sends_max, sends_mean, partners_max, partners_mean, off_node_partners_max;
    double bytes_on_node, bytes_off_node, forwarded;
    double handled, handled_max, merged_at_source, merged_at_hops; /* records */
    double served, served_max; /* gather: requests reaching their owners */
    double req_merged_at_source, req_merged_at_hops, req_coalesced; /* gather --combine */
} traffic;

/* Collective: the traffic counters over all ranks; `served` is this rank's requests
 * that reached it as their owner (gather mode). */
static traffic reduce_traffic(cr_comm *comm, int size, uint64_t served)
{
    cr_stats s;
    cr_stats_get(comm, &s);
    double mine[4] = {(double)s.mpi_sends, (double)s.partners, (double)s.partners_off_node,
                      (double)s.msgs_handled};
    double sums[8] = {(double)s.mpi_sends, (double)s.partners, (double)s.mpi_bytes_on_node,
                      (double)s.mpi_bytes_off_node, (double)s.forwarded, (double)s.msgs_handled,
                      (double)s.merged_at_source, (double)s.merged_at_hops};
    double maxes[4], totals[8];
    MPI_Allreduce(mine, maxes, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(sums, totals, 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    traffic tr = {.sends_max = maxes[0], .sends_mean = totals[0] / size,
                  .partners_max = maxes[1], .partners_mean = totals[1] / size,
                  .off_node_partners_max = maxes[2], .bytes_on_node = totals[2],
                  .bytes_off_node = totals[3], .forwarded = totals[4], .handled = totals[5],
                  .handled_max = maxes[3], .merged_at_source = totals[6],
                  .merged_at_hops = totals[7]};
    cr_dedup_stats rs;
    cr_dedup_stats_get(comm, &rs);
    double req[4] = {(double)served, (double)rs.requests_merged_at_source,
                     (double)rs.requests_merged_at_hops, (double)rs.requests_coalesced};
    double req_totals[4], served_max;
    MPI_Allreduce(req, req_totals, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&req[0], &served_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    tr.served = req_totals[0];
    tr.served_max = served_max;
    tr.req_merged_at_source = req_totals[1];
    tr.req_merged_at_hops = req_totals[2];
    tr.req_coalesced = req_totals[3];
    return tr;
}

/* Verify the table: the counters sum to N*P, and sum(count[i] * hash(i)) equals the
 * sum of hash(idx) over every update sent, so each update landed on its own index. */
static int verify(const table *t, uint64_t n, uint64_t seed, int rank, int size)
{
    uint64_t local[2] = {0, 0}, sent = 0, global[2], sent_total;
    for (uint64_t i = 0; i < t->len; i++) {
        local[0] += t->count[i];
        local[1] += t->count[i] * cr_rng_hash64(t->first + i);
    }
    uint64_t s = stream_seed(seed, rank);
    for (uint64_t i = 0; i < n; i++)
        sent += cr_rng_hash64(draw(t, &s));
    MPI_Allreduce(local, global, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&sent, &sent_total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return global[0] == n * (uint64_t)size && global[1] == sent_total;
}

static const char *const units[] = {"updates", "updates", "updates", "requests"};

/* What the command line asked for. */
typedef struct hist_opts {
    uint64_t n, total, seed;
    int want[NMODES], reps, hotspot, per_record, combine, prepared, darray;
    double skew;
    app_shared sh; /* --buffer-kb, --seed, --route, --node-size and the common flags */
} hist_opts;

static void parse_options(app *a, int argc, char **argv, hist_opts *o)
{
    *o = (hist_opts){.n = 2u << 20, .total = 1u << 20, .want = {1, 1, 0, 0}, .reps = 3,
                     .skew = 1.0};
    app_shared_init(&o->sh);
    static const struct option opts[] = {
        {"updates", required_argument, 0, 'n'}, {"table", required_argument, 0, 't'},
        APP_LONG_BUFFER_KB, APP_LONG_SEED, APP_LONG_ROUTE,
        APP_LONG_NODE_SIZE,
        {"mode", required_argument, 0, 'm'},    {"reps", required_argument, 0, 'r'},
        {"hotspot", no_argument, 0, 'H'},
        {"handler", required_argument, 0, 'D'}, {"combine", no_argument, 0, 'C'},
        {"skew", required_argument, 0, 'k'},    {"prepared", no_argument, 0, 'P'},
        {"darray", no_argument, 0, 'A'},
        APP_LONG_COMMON, {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'n': o->n = app_parse_u64(a, "--updates", optarg, 1, 1ULL << 31); break;
        case 't': o->total = app_parse_u64(a, "--table", optarg, 1, 1ULL << 62); break;
        case 'm': parse_modes(a, optarg, o->want); break;
        case 'r': o->reps = (int)app_parse_u64(a, "--reps", optarg, 1, 1000); break;
        case 'H': o->hotspot = 1; break;
        case 'D': o->per_record = app_parse_choice(a, "--handler", optarg, handler_names); break;
        case 'C': o->combine = 1; break;
        case 'P': o->prepared = 1; break;
        case 'A': o->darray = 1; break;
        case 'k': o->skew = app_parse_double(a, "--skew", optarg, 1.0, 100.0); break;
        default: app_other_option(a, ch, optarg, &o->sh, argv);
        }
    }
    app_no_operands(a, argc, argv);
    o->seed = o->sh.seed;
}

/* Every combination the options cannot run, and a table or update arrays larger than
 * the machine, refused before anything is allocated or printed. */
static void check_options(const app *a, const hist_opts *o)
{
    const int *want = o->want;
    uint64_t n = o->n, total = o->total;
    if (!want[0] && !want[1] && !want[2] && !want[3])
        app_usage_error(a, "--mode names no mode");
    if (total < (uint64_t)a->size)
        app_usage_error(a, "--table %llu is smaller than the number of ranks (%d)",
                        (unsigned long long)total, a->size);
    if (o->prepared && o->combine)
        app_usage_error(a, "--prepared and --combine do not go together (prepared updates "
                        "are plain offsets)");
    if (o->darray && (o->combine || o->per_record))
        app_usage_error(a, "--darray merges by the array's rule: it takes neither --combine "
                        "nor --handler record");
    if (o->prepared && (a->size > (1 << PREP_OWNER_BITS) ||
                        total / (uint64_t)a->size >= (1ULL << (64 - PREP_OWNER_BITS))))
        app_usage_error(a, "--prepared packs an update in 64 bits: at most 2^%d ranks and "
                        "2^%d counters per rank", PREP_OWNER_BITS, 64 - PREP_OWNER_BITS);
    if (want[MODE_ALLTOALLV] && n * (uint64_t)a->size > (1ULL << 31) - 1)
        app_usage_error(a, "alltoallv mode needs updates * ranks below 2^31 (MPI int counts)");
    if (want[MODE_GATHER] && total / (uint64_t)a->size >= (1ULL << 32))
        app_usage_error(a, "gather mode needs fewer than 2^32 counters per rank (--table %llu "
                        "over %d ranks)", (unsigned long long)total, a->size);
    /* The kernel overcommits: a calloc that succeeds is no proof the memory exists,
     * so the table (blocks, plus the whole table again for local mode) and the
     * per-rank update arrays (three of them in alltoallv mode, the answers in gather
     * mode) are held against the machine's memory before anything is allocated. */
    double need = (double)total * 8 * (want[MODE_LOCAL] ? 2 : 1) +
                  (double)n * a->size * 8 * (want[MODE_ALLTOALLV] ? 3 : 0) +
                  (double)n * a->size * 8 * (want[MODE_GATHER] ? 1 : 0) +
                  (double)n * a->size * 8 * (o->prepared ? 1 + want[MODE_LOCAL] : 0);
    double phys = app_physical_memory();
    if (phys > 0 && need > phys)
        app_usage_error(a, "--table %llu and --updates %llu need about %.1f GiB on this "
                        "machine's %d ranks, more than its %.1f GiB: cannot allocate this "
                        "rank's block of %llu counters and its updates",
                        (unsigned long long)total, (unsigned long long)n, need / (1 << 30),
                        a->size, phys / (1 << 30), (unsigned long long)(total / (uint64_t)a->size));
}

/* A run's comm, table, handlers and buffers (set_up makes them, tear_down frees them),
 * and what the repetitions measured. */
typedef struct hist_run {
    cr_comm *comm;
    cr_config cfg;
    char route_name[128];
    FILE *out; /* --csv, on rank 0 */
    table t;
    cr_darray *arr; /* --darray: the table */
    gather g;
    int h, h_prepared, h_request;
    uint64_t *prep, *local_indices, *full;
    traffic tr[NMODES];
    double times[NMODES][1000];
    int verified[NMODES];
} hist_run;

static void register_handlers(app *a, const hist_opts *o, hist_run *r)
{
    cr_comm *comm = r->comm;
    if (o->combine) {
        cr_dedup_rule sum = {.key_len = 8, .op = CR_OP_SUM, .type = CR_UINT64};
        r->h = cr_dedup_register(comm, &(cr_handler_type){.batch = on_sums}, &sum, &r->t);
    } else {
        cr_handler_type inc = o->per_record ? (cr_handler_type){.fn = on_increment}
                                            : (cr_handler_type){.batch = on_increments};
        r->h = cr_register_type(comm, &inc, &r->t);
    }
    r->h_prepared = r->h_request = -1;
    if (o->prepared) {
        cr_handler_type off = o->per_record ? (cr_handler_type){.fn = on_offset}
                                            : (cr_handler_type){.batch = on_offsets};
        r->h_prepared = cr_register_type(comm, &off, &r->t);
        r->prep = app_calloc(a, o->n, sizeof *r->prep, "the prepared updates");
    }
    r->g = (gather){.t = &r->t};
    if (o->want[MODE_GATHER]) {
        gather *g = &r->g;
        g->got = app_calloc(a, o->n, sizeof *g->got, "the answers of gather mode");
        g->merged = o->combine;
        merged_gather = g;
        if (o->combine)
            r->h_request = cr_dedup_register_request(
                comm,
                &(cr_dedup_request_type){.serve_many = serve_reads,
                                         .reply_len = sizeof(uint64_t), .key_len = 8,
                                         .coalesce = 1, .replied_many = got_reads},
                g);
        else
            r->h_request = cr_register_type(comm, &(cr_handler_type){.batch = on_requests}, g);
        g->h_reply = cr_register_type(comm, &(cr_handler_type){.batch = on_replies}, g);
    }
}

/* Local mode keeps the whole table on rank 0 (and, prepared, every rank's indices):
 * refused on every rank when it cannot be allocated. */
static void allocate_local(app *a, const hist_opts *o, hist_run *r)
{
    if (!o->want[MODE_LOCAL])
        return;
    uint64_t total = o->total, n = o->n;
    if (a->rank == 0)
        r->full = total <= SIZE_MAX / sizeof *r->full ? calloc(total, sizeof *r->full) : NULL;
    char err[160];
    snprintf(err, sizeof err, "--mode local: cannot allocate the whole table of %llu "
             "counters on rank 0", (unsigned long long)total);
    app_agree(a, a->rank == 0 && !r->full ? err : NULL);
    if (o->prepared && a->rank == 0)
        r->local_indices = n <= SIZE_MAX / sizeof *r->local_indices / (uint64_t)a->size
                               ? malloc(n * (uint64_t)a->size * sizeof *r->local_indices)
                               : NULL;
    snprintf(err, sizeof err, "--mode local --prepared: cannot allocate every rank's %llu "
             "indices on rank 0", (unsigned long long)n);
    app_agree(a, o->prepared && a->rank == 0 && !r->local_indices ? err : NULL);
}

/* --darray: the table's counters become the array's blocks (the same distribution). */
static void table_in_darray(hist_run *r)
{
    cr_darray_opts ao;
    cr_darray_opts_init(&ao);
    ao.merge = CR_OP_SUM;
    ao.type = CR_UINT64;
    ao.node = CR_DARRAY_NODE_IN_PLACE;
    r->arr = cr_darray_create(r->comm, r->t.total, sizeof(uint64_t), &ao);
    uint64_t first, count;
    free(r->t.count);
    r->t.count = cr_darray_local(r->arr, &first, &count);
    if (first != r->t.first || count != r->t.len) {
        fprintf(stderr, "histogram: internal error: the darray's block differs from the "
                        "table's\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void set_up(app *a, const hist_opts *o, hist_run *r)
{
    r->out = app_open_csv(a, o->sh.csv, "mode,ranks,updates_per_rank,table,buffer_bytes,route,"
                                        "nodes,seconds,updates_per_s,verified,mpi_sends_max,"
                                        "mpi_sends_mean,partners_max,partners_mean,"
                                        "off_node_partners_max,bytes_on_node,bytes_off_node,"
                                        "forwarded,peak_rss_mib,records_handled,"
                                        "records_handled_max,merged_at_source,merged_at_hops");
    app_comm_flags flags = app_shared_comm_flags(&o->sh);
    r->comm = app_comm_create(a, &flags, &r->cfg);
    table_init(a, &r->t, o->total, a->rank, a->size);
    if (o->hotspot)
        r->t.range = o->total / (uint64_t)a->size; /* rank 0 owns at least this many */
    r->t.skew = o->skew;
    register_handlers(a, o, r);
    if (o->darray)
        table_in_darray(r);
    allocate_local(a, o, r);
    cr_route_format(&r->cfg.route, r->route_name, sizeof r->route_name);
    for (int m = 0; m < NMODES; m++)
        r->verified[m] = 1;
    if (a->rank != 0)
        return;
    printf("histogram: %d ranks, %llu updates per rank (%llu in total), %llu counters, "
           "buffer %zu bytes, %d repetition(s), %s handlers%s%s\n",
           a->size, (unsigned long long)o->n, (unsigned long long)o->n * (unsigned long long)a->size,
           (unsigned long long)o->total, r->cfg.buffer_bytes, o->reps,
           o->darray ? "darray" : o->combine ? "combining" : handler_names[o->per_record],
           o->hotspot ? ", every update to rank 0" : "", o->skew != 1.0 ? ", skewed" : "");
    printf("  route %s over %d node(s)%s\n", r->route_name,
           cr_layout_nodes(cr_comm_layout(r->comm)), r->cfg.node_size ? " (virtual)" : "");
}

/* One repetition of mode m, timed and verified. */
static void run_mode(const app *a, const hist_opts *o, hist_run *r, int m, int rep)
{
    table *t = &r->t;
    uint64_t rseed = o->seed + (uint64_t)rep, n = o->n;
    memset(t->count, 0, t->len * sizeof *t->count);
    if (m == MODE_GATHER)
        for (uint64_t i = 0; i < t->len; i++)
            t->count[i] = cr_rng_hash64(t->first + i);
    bool courier = m == MODE_COURIER || m == MODE_GATHER, last = rep == o->reps - 1;
    if (courier && last)
        cr_stats_reset(r->comm);
    bool prepared_gather = r->prep && m == MODE_GATHER && !r->arr && !r->g.merged;
    if (r->prep && (m == MODE_COURIER || prepared_gather))
        prepare(t, r->prep, n, rseed, a->rank);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    switch (m) {
    case MODE_COURIER:
        if (r->arr && r->prep)
            run_darray_prepared(r->comm, r->arr, t, r->prep, n);
        else if (r->arr)
            run_darray(r->comm, r->arr, t, n, rseed, a->rank);
        else if (r->prep)
            run_prepared(r->comm, r->h_prepared, r->prep, n);
        else
            (o->combine ? run_combining : run_courier)(r->comm, r->h, t, n, rseed, a->rank);
        break;
    case MODE_ALLTOALLV: run_alltoallv(a, t, n, rseed, a->rank, a->size); break;
    case MODE_GATHER:
        if (r->arr)
            run_darray_gather(r->comm, r->arr, &r->g, n, rseed, a->rank);
        else if (prepared_gather)
            run_gather_prepared(r->comm, r->h_request, &r->g, r->prep, n);
        else
            run_gather(r->comm, r->h_request, &r->g, n, rseed, a->rank);
        break;
    default: {
        int ok = 0;
        r->times[m][rep] = run_local(t, r->full, r->local_indices, n, rseed, a->rank, a->size, &ok);
        r->verified[m] &= ok;
        return;
    }
    }
    r->times[m][rep] = app_max_time(MPI_Wtime() - t0);
    if (m == MODE_GATHER)
        r->verified[m] &= verify_gather(&r->g, n, rseed, a->rank);
    else
        r->verified[m] &= verify(t, n, rseed, a->rank, a->size);
    if (courier && last)
        r->tr[m] = reduce_traffic(r->comm, a->size, m == MODE_GATHER ? r->g.served : 0);
}

/* The line (and CSV line) of each mode: the median time and the rate. */
static void report_modes(const app *a, const hist_opts *o, hist_run *r, double *rate,
                         long rss_max)
{
    for (int m = 0; m < NMODES; m++) {
        if (!o->want[m])
            continue;
        double sec = app_median(r->times[m], o->reps);
        rate[m] = (double)o->n * a->size / sec;
        if (a->rank != 0)
            continue;
        printf("  %-10s %9.4f s  %8.2f M %s/s in total  %7.2f M/s per rank  %s\n",
               mode_names[m], sec, rate[m] / 1e6, units[m], rate[m] / 1e6 / a->size,
               r->verified[m] ? "verified" : "VERIFICATION FAILED");
        const traffic *tr = &r->tr[m];
        if (r->out)
            fprintf(r->out, "%s,%d,%llu,%llu,%zu,%s,%d,%.6f,%.1f,%d,%.0f,%.1f,%.0f,%.2f,%.0f,"
                            "%.0f,%.0f,%.0f,%.1f,%.0f,%.0f,%.0f,%.0f\n",
                    mode_names[m], a->size, (unsigned long long)o->n, (unsigned long long)o->total,
                    r->cfg.buffer_bytes,
                    m == MODE_COURIER || m == MODE_GATHER ? r->route_name : "-",
                    cr_layout_nodes(cr_comm_layout(r->comm)), sec, rate[m], r->verified[m],
                    tr->sends_max, tr->sends_mean, tr->partners_max, tr->partners_mean,
                    tr->off_node_partners_max, tr->bytes_on_node, tr->bytes_off_node,
                    tr->forwarded, rss_max / 1024.0, tr->handled, tr->handled_max,
                    tr->merged_at_source, tr->merged_at_hops);
    }
}

/* Rank 0's lines on the traffic of the modes on the mailbox, and the ratios. */
static void report_traffic(const hist_opts *o, const hist_run *r, const double *rate)
{
    const int *want = o->want;
    static const int courier_modes[] = {MODE_COURIER, MODE_GATHER};
    for (int k = 0; k < 2; k++) {
        int m = courier_modes[k];
        const traffic *tr = &r->tr[m];
        if (want[m])
            printf("  %s traffic: MPI sends per rank max %.0f mean %.1f; partners per rank max "
                   "%.0f mean %.2f (off node max %.0f); bytes on node %.1f MiB, off node %.1f "
                   "MiB; %.0f records forwarded; %.0f records handled (most on one rank "
                   "%.0f), %.0f merged at their source, %.0f at hops\n",
                   mode_names[m], tr->sends_max, tr->sends_mean, tr->partners_max,
                   tr->partners_mean, tr->off_node_partners_max, tr->bytes_on_node / 1048576.0,
                   tr->bytes_off_node / 1048576.0, tr->forwarded, tr->handled, tr->handled_max,
                   tr->merged_at_source, tr->merged_at_hops);
    }
    const traffic *g = &r->tr[MODE_GATHER];
    if (want[MODE_GATHER])
        printf("  gather requests: %.0f reached their owners (most on one rank %.0f); %.0f "
               "merged at their source, %.0f at hops, %.0f coalesced in flight\n",
               g->served, g->served_max, g->req_merged_at_source, g->req_merged_at_hops,
               g->req_coalesced);
    if (want[MODE_COURIER] && want[MODE_ALLTOALLV])
        printf("  ratio courier / alltoallv throughput: %.2f\n",
               rate[MODE_COURIER] / rate[MODE_ALLTOALLV]);
    if (want[MODE_LOCAL])
        for (int m = 0; m < NMODES; m++)
            if (want[m] && m != MODE_LOCAL)
                printf("  ratio %s / local: %.3f\n", mode_names[m], rate[m] / rate[MODE_LOCAL]);
}

static void report(const app *a, const hist_opts *o, hist_run *r)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    long rss = ru.ru_maxrss, rss_max = 0, rss_min = 0;
    MPI_Reduce(&rss, &rss_max, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&rss, &rss_min, 1, MPI_LONG, MPI_MIN, 0, MPI_COMM_WORLD);
    double rate[NMODES] = {0};
    report_modes(a, o, r, rate, rss_max);
    if (r->out)
        fclose(r->out);
    if (a->rank == 0) {
        report_traffic(o, r, rate);
        printf("  peak resident memory per rank: %.1f to %.1f MiB\n", rss_min / 1024.0,
               rss_max / 1024.0);
    }
    if (o->sh.stats && (o->want[MODE_COURIER] || o->want[MODE_GATHER]))
        cr_stats_print(r->comm, stdout);
}

static void tear_down(hist_run *r)
{
    if (r->arr)
        cr_darray_destroy(r->arr); /* holds the table */
    else
        free(r->t.count);
    app_comm_destroy(r->comm);
    free(r->full);
    free(r->local_indices);
    free(r->prep);
    free(r->g.got);
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "histogram", usage, &argc, &argv);
    hist_opts o;
    parse_options(&a, argc, argv, &o);
    check_options(&a, &o);
    static hist_run r; /* the timings are large */
    set_up(&a, &o, &r);
    for (int rep = 0; rep < o.reps; rep++)
        for (int m = 0; m < NMODES; m++)
            if (o.want[m])
                run_mode(&a, &o, &r, m, rep);
    report(&a, &o, &r);
    tear_down(&r);
    int ok = 1;
    for (int m = 0; m < NMODES; m++)
        ok &= r.verified[m];
    MPI_Finalize();
    return ok ? 0 : 1;
}
