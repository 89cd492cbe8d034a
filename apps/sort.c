/* sort: records sorted across the ranks by cr_sort (include/courier/sort.h), against
 * a bulk-synchronous sample sort over MPI_Alltoallv and against one core sorting all
 * the records (qsort and a radix sort, the faster kept). Every mode sorts the same
 * records: an unsigned 64-bit key at the start of each, the rest filler; every rank
 * makes its own from the seed. */
#include "cli.h"

#include <courier.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: mpirun -np P sort [--records N] [--bytes B] [--keys uniform|skewed|equal]\n"
    "                         [--mode courier,alltoallv,serial|all] [--reps R] [--stable]\n"
    "                         [--tolerance T] [--seed S] [--route R] [--node-size K]\n"
    "                         [--buffer-kb K]\n"
    "\n"
    "Sorts N records per rank of B bytes, each an unsigned 64-bit key followed by\n"
    "filler, so that rank r ends with the r-th block of the sorted order, and prints\n"
    "the mean time of the trials of each mode (and the fastest and slowest).\n"
    "\n"
    "  --records N   records per rank (default 1M; K, M and G suffixes)\n"
    "  --bytes B     bytes per record, 8 (the key alone) to 4096 (default 8)\n"
    "  --keys D      uniform: any 64-bit key (default); skewed: nine in ten keys one of\n"
    "                16 values, the rest uniform; equal: every key the same\n"
    "  --mode M      a comma-separated list, or all (default courier):\n"
    "                  courier    cr_sort: sample sort on the mailbox\n"
    "                  alltoallv  the same sample sort, bulk-synchronous: MPI_Alltoallv\n"
    "                             of the buckets, and of the edges to exact blocks\n"
    "                  serial     rank 0 alone sorts all N * P records with qsort and\n"
    "                             with a radix sort; the faster counts\n"
    "                The modes alternate within each trial.\n"
    "  --reps R      trials of each mode (default 3)\n"
    "  --stable      equal keys keep their input order (courier only)\n"
    "  --tolerance T a rank may hold (1 +- T) N records when the sample cut that well,\n"
    "                saving the exchange to exact blocks (default 0: exact blocks)\n"
    "  --seed S      the keys' seed (default 1)\n"
    "  --route R, --node-size K, --buffer-kb K   the mailbox's route, virtual nodes\n"
    "                and buffer size (as COURIER_ROUTE, COURIER_NODE_SIZE and\n"
    "                COURIER_BUFFER_SIZE)\n"
    "\n"
    "Validation (--validate, default yes; linear in N): the order within and between\n"
    "ranks, every rank's block size, and that the records are the same multiset (two\n"
    "sums of two hashes of every record's bytes, before and after).\n";

enum { MODE_COURIER, MODE_ALLTOALLV, MODE_SERIAL, NMODES };
static const char *const mode_names[] = {"courier", "alltoallv", "serial", NULL};
static const char *const key_names[] = {"uniform", "skewed", "equal", NULL};
enum { KEYS_UNIFORM, KEYS_SKEWED, KEYS_EQUAL };
enum { MAX_REPS = 100 };

typedef struct sort_app {
    uint64_t n;       /* records per rank */
    size_t bytes;
    int keys;
    int want[NMODES];
    int reps;
    bool stable;
    double tolerance;
    uint64_t seed;
    app_shared sh;
} sort_app;

/* ---- the records ---------------------------------------------------------------- */

static uint64_t key_of(const sort_app *o, int rank, uint64_t i)
{
    uint64_t h = cr_rng_hash64(o->seed * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)rank << 40) ^ i);
    switch (o->keys) {
    case KEYS_SKEWED: return h % 10 ? cr_rng_hash64(h % 16) : cr_rng_hash64(h);
    case KEYS_EQUAL: return 0x2a;
    default: return h;
    }
}

static void make_records(const sort_app *o, int rank, char *rec, uint64_t n, uint64_t first_i)
{
    for (uint64_t i = 0; i < n; i++) {
        char *e = rec + i * o->bytes;
        uint64_t k = key_of(o, rank, first_i + i);
        memcpy(e, &k, 8);
        for (size_t b = 8; b < o->bytes; b++)
            e[b] = (char)(rank * 7 + (int)((first_i + i) >> (b % 8 * 4)) + (int)b);
    }
}

/* Two sums of two hashes of every record's bytes. */
static void fingerprint(const char *rec, uint64_t n, size_t bytes, uint64_t out[2])
{
    out[0] = out[1] = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t h = 0xcbf29ce484222325ULL, g = 7;
        for (size_t b = 0; b < bytes; b++) {
            h = (h ^ (unsigned char)rec[i * bytes + b]) * 0x100000001b3ULL;
            g = g * 131 + (unsigned char)rec[i * bytes + b];
        }
        out[0] += cr_rng_hash64(h);
        out[1] += cr_rng_hash64(g ^ 0x5bd1e995);
    }
}

static uint64_t key_at(const char *rec, size_t bytes, uint64_t i)
{
    uint64_t k;
    memcpy(&k, rec + i * bytes, 8);
    return k;
}

/* ---- the local sorts of the baselines: a radix sort like cr_sort's, and qsort ---- */

/* Least significant digit passes over the digits that are not constant, between a
 * and tmp; the sorted records end in a. */
static void lsd_records(char *a, char *tmp, uint64_t n, size_t w)
{
    uint64_t count[8][256];
    memset(count, 0, sizeof count);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t k = key_at(a, w, i);
        for (int d = 0; d < 8; d++)
            count[d][(k >> (8 * d)) & 0xff]++;
    }
    char *src = a, *dst = tmp;
    for (int d = 0; d < 8; d++) {
        uint64_t at[256], sum = 0;
        bool skip = false;
        for (int b = 0; b < 256; b++) {
            skip = skip || count[d][b] == n;
            at[b] = sum;
            sum += count[d][b];
        }
        if (skip)
            continue;
        if (w == 8) {
            const uint64_t *s = (const void *)src;
            uint64_t *t = (void *)dst;
            for (uint64_t i = 0; i < n; i++)
                t[at[(s[i] >> (8 * d)) & 0xff]++] = s[i];
        } else {
            for (uint64_t i = 0; i < n; i++)
                memcpy(dst + at[(key_at(src, w, i) >> (8 * d)) & 0xff]++ * w, src + i * w, w);
        }
        char *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * w);
}

/* One most significant digit pass (on the highest digit that differs) from a into
 * tmp, then each of its 256 buckets by lsd_records, in cache when they are small:
 * the local sort cr_sort gives its bins, so every mode sorts alike. */
enum { RADIX_SMALL = 1 << 16 };

static void radix_records(char *a, char *tmp, uint64_t n, size_t w)
{
    if (n <= RADIX_SMALL) {
        lsd_records(a, tmp, n, w);
        return;
    }
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t k = key_at(a, w, i);
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
    }
    if (lo == hi)
        return;
    unsigned shift = 8 * ((63 - (unsigned)__builtin_clzll(lo ^ hi)) / 8);
    uint64_t count[256] = {0}, at[256], sum = 0;
    for (uint64_t i = 0; i < n; i++)
        count[(key_at(a, w, i) >> shift) & 0xff]++;
    for (int b = 0; b < 256; b++) {
        at[b] = sum;
        sum += count[b];
    }
    for (uint64_t i = 0; i < n; i++)
        memcpy(tmp + at[(key_at(a, w, i) >> shift) & 0xff]++ * w, a + i * w, w);
    for (uint64_t b = 0, from = 0; b < 256; from += count[b], b++)
        if (count[b]) {
            lsd_records(tmp + from * w, a + from * w, count[b], w);
            memcpy(a + from * w, tmp + from * w, count[b] * w);
        }
}

static int compare_keys(const void *x, const void *y)
{
    uint64_t a, b;
    memcpy(&a, x, 8);
    memcpy(&b, y, 8);
    return (a > b) - (a < b);
}

/* ---- the bulk-synchronous sample sort --------------------------------------------- */

typedef struct tagged_key {
    uint64_t key, tag;
} tagged_key;

static int compare_tagged(const void *x, const void *y)
{
    const tagged_key *a = x, *b = y;
    if (a->key != b->key)
        return (a->key > b->key) - (a->key < b->key);
    return (a->tag > b->tag) - (a->tag < b->tag);
}

static int bucket_of(const tagged_key *split, int nsplit, uint64_t key, uint64_t tag)
{
    int lo = 0, hi = nsplit;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (split[mid].key > key || (split[mid].key == key && split[mid].tag > tag))
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* MPI_Alltoallv of whole records; received into `reuse` (reuse_bytes long) when it
 * is large enough, else into a new buffer. */
static void alltoallv_bytes(const app *a, const char *send, const uint64_t *scount, char **recv,
                            uint64_t *rtotal, size_t w, char *reuse, size_t reuse_bytes)
{
    int p = a->size;
    int *sc = app_calloc(a, (size_t)p, sizeof *sc, "counts"), *rc = app_calloc(a, (size_t)p, sizeof *rc, "counts");
    int *sd = app_calloc(a, (size_t)p, sizeof *sd, "offsets"), *rd = app_calloc(a, (size_t)p, sizeof *rd, "offsets");
    uint64_t off = 0;
    for (int q = 0; q < p; q++) {
        sc[q] = (int)(scount[q] * w);
        sd[q] = (int)off;
        off += scount[q] * w;
    }
    MPI_Alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, MPI_COMM_WORLD);
    uint64_t roff = 0;
    for (int q = 0; q < p; q++) {
        rd[q] = (int)roff;
        roff += (uint64_t)rc[q];
    }
    *recv = reuse && reuse_bytes >= roff ? reuse
                                         : app_alloc_large(a, roff ? roff : 1, 1, "the records received");
    MPI_Alltoallv(send, sc, sd, MPI_BYTE, *recv, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
    *rtotal = roff / w;
    free(sc), free(rc), free(sd), free(rd);
}

/* Sort rec (n records) across the ranks; returns this rank's block, *out_n records. */
static char *bsp_sort(const app *a, const sort_app *o, char *rec, uint64_t n, uint64_t *out_n)
{
    int p = a->size, me = a->rank;
    size_t w = o->bytes;
    uint64_t first = 0, total = 0;
    MPI_Exscan(&n, &first, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
        first = 0;
    MPI_Allreduce(&n, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    /* the sample: 128 P in all, each rank its share, at random places */
    uint64_t want = 128 * (uint64_t)p, mine = total ? (want * n + total - 1) / total : 0;
    if (mine > n)
        mine = n;
    int m = (int)mine, *counts = app_calloc(a, (size_t)p, sizeof(int), "counts");
    int *displs = app_calloc(a, (size_t)p, sizeof(int), "offsets");
    MPI_Allgather(&m, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
    int all = 0;
    for (int q = 0; q < p; q++) {
        displs[q] = all * 2;
        all += counts[q];
        counts[q] *= 2;
    }
    tagged_key *sample = app_calloc(a, (size_t)(all ? all : 1), sizeof *sample, "the sample");
    tagged_key *mysample = app_calloc(a, mine ? mine : 1, sizeof *mysample, "the sample");
    uint64_t s = o->seed ^ (uint64_t)me * 0x632be59bd9b4e019ULL;
    for (uint64_t i = 0; i < mine; i++) {
        uint64_t at = cr_rng_bounded(cr_rng_next(&s), n);
        mysample[i] = (tagged_key){key_at(rec, w, at), first + at};
    }
    MPI_Allgatherv(mysample, m * 2, MPI_UINT64_T, sample, counts, displs, MPI_UINT64_T, MPI_COMM_WORLD);
    qsort(sample, (size_t)all, sizeof *sample, compare_tagged);
    tagged_key *split = app_calloc(a, (size_t)p, sizeof *split, "the splitters");
    for (int q = 1; q < p; q++)
        split[q - 1] = all ? sample[(uint64_t)q * (uint64_t)all / (uint64_t)p] : (tagged_key){0, 0};
    int nsplit = all ? p - 1 : 0;
    /* the buckets, laid out by destination */
    uint64_t *scount = app_calloc(a, (size_t)p, sizeof *scount, "counts");
    for (uint64_t i = 0; i < n; i++)
        scount[bucket_of(split, nsplit, key_at(rec, w, i), first + i)]++;
    uint64_t *at = app_calloc(a, (size_t)p, sizeof *at, "offsets");
    for (int q = 1; q < p; q++)
        at[q] = at[q - 1] + scount[q - 1];
    char *send = app_alloc_large(a, n ? n : 1, w, "the send buffer");
    for (uint64_t i = 0; i < n; i++)
        memcpy(send + at[bucket_of(split, nsplit, key_at(rec, w, i), first + i)]++ * w, rec + i * w, w);
    char *recv;
    uint64_t got;
    alltoallv_bytes(a, send, scount, &recv, &got, w, NULL, 0);
    /* the same memory as cr_sort's: the buffers already touched (the input, the send
     * buffer) are the radix sort's scratch and the final block's, where they fit */
    char *scratch = n >= got ? rec : NULL, *fresh = NULL;
    if (!scratch)
        scratch = fresh = app_alloc_large(a, got ? got : 1, w, "the radix sort's scratch");
    radix_records(recv, scratch, got, w);
    free(fresh);
    free(send);
    /* exact blocks, unless within the tolerance */
    uint64_t gfirst = 0, lo = got, hi = got;
    MPI_Exscan(&got, &gfirst, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
        gfirst = 0;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    double share = (double)total / p;
    bool exact = hi - lo <= 1 && got == total / (uint64_t)p + ((uint64_t)me < total % (uint64_t)p);
    int ok_all, ok = exact || (o->tolerance > 0 && hi <= share * (1 + o->tolerance) &&
                               lo >= share * (1 - o->tolerance));
    MPI_Allreduce(&ok, &ok_all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    free(sample), free(mysample), free(split), free(counts), free(displs), free(at);
    if (ok_all) {
        free(rec);
        free(scount);
        *out_n = got;
        return recv;
    }
    for (int q = 0; q < p; q++) { /* the overlap of [gfirst, gfirst + got) with q's block */
        uint64_t bf = total / (uint64_t)p * (uint64_t)q + ((uint64_t)q < total % (uint64_t)p ? (uint64_t)q : total % (uint64_t)p);
        uint64_t bn = total / (uint64_t)p + ((uint64_t)q < total % (uint64_t)p);
        uint64_t x = bf > gfirst ? bf : gfirst, y = bf + bn < gfirst + got ? bf + bn : gfirst + got;
        scount[q] = y > x ? y - x : 0;
    }
    char *block;
    alltoallv_bytes(a, recv, scount, &block, out_n, w, rec, n * w);
    if (block != rec)
        free(rec);
    free(recv);
    free(scount);
    return block;
}

/* ---- one trial of a mode ------------------------------------------------------------ */

typedef struct trial {
    double seconds;
    bool ok;
    const char *how;   /* serial: which sort was faster */
    double steps[4];   /* courier: cr_sort_stats' steps, the slowest rank's */
} trial;

static bool validate(const app *a, cr_comm *comm, const sort_app *o, const char *rec, uint64_t n,
                     const uint64_t before[2])
{
    uint64_t after[2], sums[2], total = 0, mine = n;
    fingerprint(rec, n, o->bytes, after);
    MPI_Allreduce(after, sums, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    cr_sort_opts so;
    cr_sort_opts_init(&so);
    so.record_bytes = o->bytes;
    so.key_type = CR_UINT64;
    uint64_t breaks = cr_sort_check_order(comm, rec, n, &so);
    uint64_t block = total / (uint64_t)a->size + ((uint64_t)a->rank < total % (uint64_t)a->size);
    double share = (double)total / a->size;
    int fits = n == block || (o->tolerance > 0 && n <= share * (1 + o->tolerance) &&
                              n >= share * (1 - o->tolerance)), all_fit;
    MPI_Allreduce(&fits, &all_fit, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    bool ok = breaks == 0 && all_fit && sums[0] == before[0] && sums[1] == before[1] &&
              total == o->n * (uint64_t)a->size;
    if (!ok && a->rank == 0)
        fprintf(stderr, "sort: validation failed: %llu places out of order, blocks %s, records "
                "%s\n", (unsigned long long)breaks, all_fit ? "right" : "WRONG",
                sums[0] == before[0] && sums[1] == before[1] ? "the same" : "CHANGED");
    return ok;
}

static trial run_distributed(const app *a, cr_comm *comm, const sort_app *o, int mode, bool check)
{
    char *rec = app_calloc(a, o->n ? o->n : 1, o->bytes, "the records");
    make_records(o, a->rank, rec, o->n, 0);
    uint64_t before[2] = {0, 0}, mine[2];
    if (check) {
        fingerprint(rec, o->n, o->bytes, mine);
        MPI_Allreduce(mine, before, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    }
    cr_barrier(comm);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    uint64_t n;
    cr_sort_stats st = {0};
    if (mode == MODE_COURIER) {
        cr_sort_opts so;
        cr_sort_opts_init(&so);
        so.record_bytes = o->bytes;
        so.key_type = CR_UINT64;
        so.stable = o->stable;
        so.tolerance = o->tolerance;
        so.seed = o->seed;
        void *data = rec;
        size_t count = o->n;
        cr_sort(comm, &data, &count, &so, &st);
        rec = data;
        n = count;
    } else {
        rec = bsp_sort(a, o, rec, o->n, &n);
    }
    trial t = {.seconds = app_max_time(MPI_Wtime() - t0), .ok = true};
    double mine_steps[4] = {st.sample_seconds, st.exchange_seconds, st.local_seconds,
                            st.final_seconds};
    MPI_Allreduce(mine_steps, t.steps, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (check)
        t.ok = validate(a, comm, o, rec, n, before);
    free(rec);
    return t;
}

/* Rank 0 sorts every rank's records; the others wait in a cr_barrier, which backs
 * off rather than spins, so that the one core sorting has the machine to itself. */
static trial run_serial(const app *a, cr_comm *comm, const sort_app *o, bool check)
{
    trial t = {.ok = true, .how = "radix"};
    if (a->rank == 0) {
        uint64_t total = o->n * (uint64_t)a->size;
        char *rec = app_calloc(a, total ? total : 1, o->bytes, "all the records");
        char *tmp = app_alloc_large(a, total ? total : 1, o->bytes, "the radix sort's scratch");
        for (int r = 0; r < a->size; r++)
            make_records(o, r, rec + (uint64_t)r * o->n * o->bytes, o->n, 0);
        double t0 = MPI_Wtime();
        radix_records(rec, tmp, total, o->bytes);
        double radix = MPI_Wtime() - t0;
        for (uint64_t i = 1; check && i < total; i++)
            t.ok = t.ok && key_at(rec, o->bytes, i - 1) <= key_at(rec, o->bytes, i);
        for (int r = 0; r < a->size; r++)
            make_records(o, r, rec + (uint64_t)r * o->n * o->bytes, o->n, 0);
        t0 = MPI_Wtime();
        qsort(rec, total, o->bytes, compare_keys);
        double q = MPI_Wtime() - t0;
        for (uint64_t i = 1; check && i < total; i++)
            t.ok = t.ok && key_at(rec, o->bytes, i - 1) <= key_at(rec, o->bytes, i);
        t.seconds = radix < q ? radix : q;
        t.how = radix < q ? "radix" : "qsort";
        free(rec);
        free(tmp);
    }
    cr_barrier(comm);
    int ok = t.ok;
    MPI_Bcast(&t.seconds, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    t.ok = ok;
    return t;
}

/* ---- options and the report ---------------------------------------------------------- */

static void parse_modes(const app *a, const char *value, int *want)
{
    memset(want, 0, NMODES * sizeof *want);
    if (strcmp(value, "all") == 0) {
        for (int m = 0; m < NMODES; m++)
            want[m] = 1;
        return;
    }
    char buf[256];
    if (strlen(value) >= sizeof buf)
        app_usage_error(a, "--mode: '%.40s...' is too long", value);
    strcpy(buf, value);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        want[app_parse_choice(a, "--mode", tok, mode_names)] = 1;
}

static void parse_options(app *a, int argc, char **argv, sort_app *o)
{
    *o = (sort_app){.n = 1 << 20, .bytes = 8, .reps = 3, .seed = 1};
    o->want[MODE_COURIER] = 1;
    app_shared_init(&o->sh);
    static const struct option opts[] = {
        {"records", required_argument, 0, 'n'}, {"bytes", required_argument, 0, 'b'},
        {"keys", required_argument, 0, 'k'},    {"mode", required_argument, 0, 'm'},
        {"reps", required_argument, 0, 'r'},    {"stable", no_argument, 0, 's'},
        {"tolerance", required_argument, 0, 't'},
        APP_LONG_SEED, APP_LONG_ROUTE, APP_LONG_NODE_SIZE, APP_LONG_BUFFER_KB, APP_LONG_COMMON,
        {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'n': o->n = app_parse_u64(a, "--records", optarg, 0, UINT64_C(1) << 40); break;
        case 'b': o->bytes = (size_t)app_parse_u64(a, "--bytes", optarg, 8, 4096); break;
        case 'k': o->keys = app_parse_choice(a, "--keys", optarg, key_names); break;
        case 'm': parse_modes(a, optarg, o->want); break;
        case 'r': o->reps = (int)app_parse_u64(a, "--reps", optarg, 1, MAX_REPS); break;
        case 's': o->stable = true; break;
        case 't': o->tolerance = app_parse_double(a, "--tolerance", optarg, 0, 0.99); break;
        default: app_other_option(a, ch, optarg, &o->sh, argv);
        }
    }
    app_no_operands(a, argc, argv);
    if (o->sh.seed_given)
        o->seed = o->sh.seed;
    if (o->stable && (o->want[MODE_ALLTOALLV] || o->want[MODE_SERIAL]))
        app_usage_error(a, "--stable applies to --mode courier only (the baselines sort unstably)");
    /* every rank on this machine: its records, what it receives, the scratch and the
     * final block; rank 0 in serial mode: every rank's records and the scratch */
    double per_rank = (double)o->n * (double)o->bytes;
    double need = per_rank * 4 * a->size;
    if (o->want[MODE_SERIAL] && per_rank * 2 * a->size > need)
        need = per_rank * 2 * a->size;
    double mem = app_physical_memory();
    if (mem > 0 && need > mem)
        app_usage_error(a, "--records %llu of %zu bytes at %d ranks needs about %.1f GiB, more "
                        "than this machine's %.1f GiB", (unsigned long long)o->n, o->bytes,
                        a->size, need / (1 << 30), mem / (1 << 30));
    if (o->want[MODE_ALLTOALLV] && (double)o->n * (double)o->bytes * 2 > 2147483647.0)
        app_usage_error(a, "--mode alltoallv needs each rank's records below 1 GiB (MPI's int "
                        "counts of bytes)");
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "sort", usage, &argc, &argv);
    sort_app o;
    parse_options(&a, argc, argv, &o);
    app_comm_flags flags = app_shared_comm_flags(&o.sh);
    cr_config cfg;
    cr_comm *comm = app_comm_create(&a, &flags, &cfg);
    bool check = app_validate_or(&o.sh, APP_VALIDATE_YES) != APP_VALIDATE_NO;
    FILE *csv = app_open_csv(&a, o.sh.csv, "mode,ranks,records_per_rank,bytes,keys,stable,"
                             "tolerance,mean_s,min_s,max_s,mrecords_per_s,verified,job_peak_mib");
    double times[NMODES][MAX_REPS], steps[4] = {0};
    bool ok[NMODES];
    const char *how = "radix";
    for (int m = 0; m < NMODES; m++)
        ok[m] = true;
    if (a.rank == 0 && !o.sh.quiet)
        printf("sort: %d ranks, %llu records of %zu bytes per rank, %s keys%s\n", a.size,
               (unsigned long long)o.n, o.bytes, key_names[o.keys], o.stable ? ", stable" : "");
    for (int rep = 0; rep < o.reps; rep++)
        for (int m = 0; m < NMODES; m++) {
            if (!o.want[m])
                continue;
            app_progress(&a, "trial %d: %s", rep + 1, mode_names[m]);
            trial t = m == MODE_SERIAL ? run_serial(&a, comm, &o, check) : run_distributed(&a, comm, &o, m, check);
            times[m][rep] = t.seconds;
            ok[m] = ok[m] && t.ok;
            if (m == MODE_SERIAL)
                how = t.how;
            for (int k = 0; k < 4 && m == MODE_COURIER; k++)
                steps[k] += t.steps[k] / o.reps;
            if (a.rank == 0 && !o.sh.quiet)
                printf("  trial %d %-10s %9.4f s %8.2f M records/s%s\n", rep + 1, mode_names[m],
                       t.seconds, (double)o.n * a.size / t.seconds / 1e6,
                       t.ok ? "" : "  VALIDATION FAILED");
        }
    double job_mib = app_peak_job_mib(), mean[NMODES] = {0};
    bool all_ok = true;
    for (int m = 0; m < NMODES; m++) {
        if (!o.want[m])
            continue;
        double lo = times[m][0], hi = times[m][0];
        for (int r = 0; r < o.reps; r++) {
            mean[m] += times[m][r] / o.reps;
            lo = times[m][r] < lo ? times[m][r] : lo;
            hi = times[m][r] > hi ? times[m][r] : hi;
        }
        double rate = (double)o.n * a.size / mean[m] / 1e6;
        all_ok = all_ok && ok[m];
        if (a.rank == 0) {
            printf("  %-10s mean %9.4f s (%.4f-%.4f)  %8.2f M records/s  %s%s\n", mode_names[m],
                   mean[m], lo, hi, rate, !check ? "not validated" : ok[m] ? "validated" : "VALIDATION FAILED",
                   m == MODE_SERIAL ? (strcmp(how, "radix") == 0 ? "  (radix sort faster)" : "  (qsort faster)") : "");
            if (csv)
                fprintf(csv, "%s,%d,%llu,%zu,%s,%d,%g,%.6f,%.6f,%.6f,%.3f,%d,%.1f\n", mode_names[m],
                        a.size, (unsigned long long)o.n, o.bytes, key_names[o.keys], o.stable,
                        o.tolerance, mean[m], lo, hi, rate, check ? (int)ok[m] : -1, job_mib);
        }
    }
    if (a.rank == 0) {
        for (int m = MODE_ALLTOALLV; m < NMODES; m++)
            if (o.want[MODE_COURIER] && o.want[m])
                printf("  ratio courier / %s speed: %.2f\n", mode_names[m], mean[m] / mean[MODE_COURIER]);
        if (o.want[MODE_COURIER])
            printf("  courier's steps, slowest rank, mean of the trials: sample %.4f s, "
                   "exchange %.4f s, local sort %.4f s, exact blocks %.4f s\n", steps[0],
                   steps[1], steps[2], steps[3]);
        printf("  peak resident memory of the job (all ranks): %.1f MiB\n", job_mib);
    }
    if (csv)
        fclose(csv);
    if (o.sh.stats)
        cr_stats_print(comm, stdout);
    app_comm_destroy(comm);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
