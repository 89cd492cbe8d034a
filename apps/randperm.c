/* randperm: bale's random permutation on Courier. A uniform random permutation of
 * 0 .. N-1, block-distributed, made by dart throwing (Gibbons, Matias and
 * Ramachandran, as bale's README defines it): each rank throws its block of the
 * values at random slots of a target table of 2N slots, distributed cyclically; once
 * every dart has stuck (one cr_barrier), each rank packs its slots' values in order
 * and sends them to their places in the permutation.
 *
 * Two darts that meet in a slot are settled by a priority drawn for each value
 * (one random order of all the values, the same on every rank), not by which came
 * first: the slot keeps the higher, and its rank throws the other again. The first
 * come would keep a rank's darts to its own slots ahead of darts still in buffers,
 * and since the slots pack rank by rank, a rank's values would lean to its own part
 * of the permutation (a chi-square test at 3 ranks saw it). With one order every
 * value's darts are its list of wishes and the slots' choice is that order: the
 * stuck darts are the proposers' stable matching of Gale and Shapley, the same
 * whatever order the darts arrive in, and the same as throwing the values one after
 * another in the priority order, which is uniform. A value's k-th wish is a hash of
 * the seed, the value and k, so a seed gives the same table at any rank count and
 * any timing, and the same permutation at a given rank count (the slots pack rank
 * by rank). */
#include "cli.h"

#include <courier.h>

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: mpirun -np P randperm [-n N | -N TOTAL] [--reps R] [-s SEED]\n"
    "                             [--chi-square TRIALS] [--fingerprint] [--route R]\n"
    "                             [--slot-bytes B] [--node-size K] [--buffer-kb K]\n"
    "\n"
    "Makes a uniform random permutation of 0 .. TOTAL-1 in a block-distributed array\n"
    "by dart throwing (bale's randperm), and prints the mean time of the trials.\n"
    "\n"
    "  -n, --per-rank N      values per rank (default 1M; K, M and G suffixes)\n"
    "  -N, --total TOTAL     values in all instead (blocks differ by at most one)\n"
    "  --reps R              trials (default 3)\n"
    "  -s, --seed S          the darts' seed (default 1; each trial its own): a seed\n"
    "                        makes the same permutation at the same rank count\n"
    "  --chi-square TRIALS   instead: TRIALS permutations of a small TOTAL (at most 6;\n"
    "                        default 4), and a chi-square test of how often each of\n"
    "                        the TOTAL! permutations came out; fails below p = 1e-6\n"
    "  --slot-bytes B        bytes of a target slot: 4 (the value alone; the default\n"
    "                        when TOTAL < 2^32 - 1) or 8 (the value and its count of\n"
    "                        throws); both make the same permutations\n"
    "  --fingerprint         print a fingerprint of each trial's permutation: the\n"
    "                        same for the same seed, TOTAL and rank count, whatever\n"
    "                        the route, buffer size or timing\n"
    "  --route R, --node-size K, --buffer-kb K   the mailbox's route, virtual nodes\n"
    "                        and buffer size\n"
    "\n"
    "Validation (--validate, default yes): every value 0 .. TOTAL-1 exactly once in\n"
    "the permutation (each value marks its owner's bitmap: duplicates and missing\n"
    "values counted), and each rank holds its block.\n";

#define EMPTY UINT64_MAX
#define NARROW_EMPTY UINT32_MAX
#define PREFETCH_AHEAD 8 /* darts ahead whose slot is asked for (the table is large) */
/* A dart in a slot or on its way: the value, and how many wishes it has used. */
#define VALUE_BITS 40
#define VALUE_MASK ((UINT64_C(1) << VALUE_BITS) - 1)
#define MAX_TOTAL (UINT64_C(1) << VALUE_BITS)
#define MAX_THROWS ((UINT64_C(1) << (64 - VALUE_BITS)) - 2) /* keeps EMPTY apart */

static const app *the_app; /* for app_fail from the handlers */

typedef struct dart {
    uint64_t slot;  /* the local index on the slot's rank */
    uint64_t value; /* the value, and in its top bits the wishes it has used */
} dart;

typedef struct perm_run {
    cr_comm *comm;
    int rank, size;
    uint64_t total, slots;  /* N and M = 2N */
    uint64_t *target;       /* this rank's slots (cyclic: slot s on rank s mod P): a
                               value and the wishes it has used, or EMPTY */
    uint32_t *narrow;       /* instead, when every value fits 32 bits: the value alone
                               (NARROW_EMPTY when free), half the memory to touch */
    uint64_t local_slots;
    uint64_t wish_key;      /* this permutation's wishes (see throw_dart) */
    uint64_t priority_key;  /* this permutation's order of the values (see priority) */
    uint64_t throws;        /* darts this rank threw (retries included) */
    int h_dart, h_place, h_mark;
    uint64_t *perm;         /* this rank's block of the permutation */
    uint64_t first, count, placed;
    unsigned char *seen;    /* validation: this rank's values marked */
    uint64_t duplicates;
} perm_run;

/* Throw a value at its next wish: wish k of value v is the same on every rank. */
static void throw_dart(perm_run *r, uint64_t dart_word)
{
    uint64_t value = dart_word & VALUE_MASK, used = dart_word >> VALUE_BITS;
    if (used >= MAX_THROWS)
        app_fail(the_app, "value %llu was thrown %llu times", (unsigned long long)value,
                 (unsigned long long)used);
    uint64_t wish = cr_rng_hash64(r->wish_key ^ cr_rng_hash64(dart_word));
    uint64_t s = cr_rng_bounded(wish, r->slots);
    dart d = {.slot = s / (uint64_t)r->size, .value = dart_word + (UINT64_C(1) << VALUE_BITS)};
    r->throws++;
    cr_async(r->comm, (int)(s % (uint64_t)r->size), r->h_dart, &d, sizeof d);
}

/* A value's rank in this permutation's random order of the values: the same on every
 * rank, drawn afresh for each permutation (ties, at 2^-64, go to the smaller value). */
static bool outranks(const perm_run *r, uint64_t a, uint64_t b)
{
    a &= VALUE_MASK, b &= VALUE_MASK;
    uint64_t pa = cr_rng_hash64(r->priority_key ^ a), pb = cr_rng_hash64(r->priority_key ^ b);
    return pa < pb || (pa == pb && a < b);
}

/* The dart word of a value found in slot `slot` (local) of a narrow table: the wish
 * that led it there is found again by trying its wishes in order. Should two of its
 * wishes name this slot, the earlier is taken; the value then tries again wishes
 * that were refused it before, and is refused again (a slot's value only ever gets
 * better), so the darts that stick, a stable matching, are the same. */
static uint64_t narrow_word(const perm_run *r, uint64_t value, uint64_t slot)
{
    uint64_t s = slot * (uint64_t)r->size + (uint64_t)r->rank;
    for (uint64_t used = 0; used < MAX_THROWS; used++) {
        uint64_t word = value | used << VALUE_BITS;
        if (cr_rng_bounded(cr_rng_hash64(r->wish_key ^ cr_rng_hash64(word)), r->slots) == s)
            return word + (UINT64_C(1) << VALUE_BITS);
    }
    app_fail(the_app, "value %llu is in slot %llu, which none of its wishes names",
             (unsigned long long)value, (unsigned long long)s);
    return 0;
}

static void settle_narrow(perm_run *r, dart d)
{
    uint32_t *slot = &r->narrow[d.slot];
    if (*slot == NARROW_EMPTY) {
        *slot = (uint32_t)(d.value & VALUE_MASK);
    } else if (outranks(r, d.value, *slot)) {
        uint64_t bumped = narrow_word(r, *slot, d.slot);
        *slot = (uint32_t)(d.value & VALUE_MASK);
        throw_dart(r, bumped);
    } else {
        throw_dart(r, d.value);
    }
}

/* On the slot's rank: the dart sticks if the slot is free; if not, the slot keeps
 * the value that outranks the other, and the other is thrown again from here. */
static void on_darts(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    perm_run *r = user;
    for (size_t i = 0; i < b->count; i++) {
        if (i + PREFETCH_AHEAD < b->count) { /* overlap the misses of the darts ahead */
            uint64_t ahead;
            memcpy(&ahead, cr_batch_payload(b, i + PREFETCH_AHEAD), sizeof ahead);
            if (r->narrow)
                __builtin_prefetch(&r->narrow[ahead]);
            else
                __builtin_prefetch(&r->target[ahead]);
        }
        dart d;
        memcpy(&d, cr_batch_payload(b, i), sizeof d);
        if (d.slot >= r->local_slots)
            app_fail(the_app, "a dart for slot %llu of %llu",
                     (unsigned long long)d.slot, (unsigned long long)r->local_slots);
        if (r->narrow) {
            settle_narrow(r, d);
            continue;
        }
        uint64_t *slot = &r->target[d.slot];
        if (*slot == EMPTY) {
            *slot = d.value;
        } else if (outranks(r, d.value, *slot)) {
            uint64_t bumped = *slot;
            *slot = d.value;
            throw_dart(r, bumped);
        } else {
            throw_dart(r, d.value);
        }
    }
}

/* payload: the first value's place in the permutation, then values */
static void on_place(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm, (void)src;
    perm_run *r = user;
    uint64_t pos;
    memcpy(&pos, payload, 8);
    size_t k = (len - 8) / 8;
    if (pos < r->first || pos - r->first + k > r->count)
        app_fail(the_app, "values for places %llu.. reached the block at %llu",
                 (unsigned long long)pos, (unsigned long long)r->first);
    memcpy(r->perm + (pos - r->first), (const char *)payload + 8, k * 8);
    r->placed += k;
}

static void on_marks(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    perm_run *r = user;
    for (size_t i = 0; i < b->count; i++) {
        uint64_t v;
        memcpy(&v, cr_batch_payload(b, i), sizeof v);
        uint64_t at = v - r->first;
        if (v < r->first || at >= r->count || r->seen[at])
            r->duplicates++; /* out of range counts too: it stands for a missing one */
        else
            r->seen[at] = 1;
    }
}

/* One permutation into r->perm. */
static void make_permutation(perm_run *r, uint64_t seed)
{
    int p = r->size, me = r->rank;
    r->wish_key = cr_rng_hash64(seed * 0x9e3779b97f4a7c15ULL);
    r->priority_key = cr_rng_hash64(~seed);
    if (r->narrow)
        memset(r->narrow, 0xff, r->local_slots * sizeof *r->narrow); /* NARROW_EMPTY */
    else
        for (uint64_t i = 0; i < r->local_slots; i++)
            r->target[i] = EMPTY;
    r->placed = 0;
    cr_barrier(r->comm);
    for (uint64_t i = 0; i < r->count; i++)
        throw_dart(r, r->first + i);
    cr_barrier(r->comm); /* every dart has stuck: throws again are messages handlers sent */
    /* pack, then send each run to its places */
    uint64_t stuck = 0;
    if (r->narrow) {
        for (uint64_t i = 0; i < r->local_slots; i++)
            if (r->narrow[i] != NARROW_EMPTY)
                r->narrow[stuck++] = r->narrow[i];
    } else {
        for (uint64_t i = 0; i < r->local_slots; i++)
            if (r->target[i] != EMPTY)
                r->target[stuck++] = r->target[i] & VALUE_MASK;
    }
    uint64_t *counts = malloc((size_t)p * sizeof *counts), pos = 0;
    if (!counts)
        app_fail(the_app, "out of memory for %d counts", p);
    cr_allgather(r->comm, &stuck, sizeof stuck, counts, NULL);
    for (int q = 0; q < me; q++)
        pos += counts[q];
    free(counts);
    enum { CHUNK = 2048 };
    uint64_t msg[CHUNK + 1];
    for (uint64_t done = 0; done < stuck;) {
        int q = cr_darray_owner(r->total, p, pos);
        uint64_t qfirst, qcount;
        cr_darray_block(r->total, p, q, &qfirst, &qcount);
        uint64_t k = qfirst + qcount - pos;
        k = k < stuck - done ? k : stuck - done;
        k = k < CHUNK ? k : CHUNK;
        uint64_t *to = q == me ? r->perm + (pos - r->first) : msg + 1;
        if (r->narrow)
            for (uint64_t i = 0; i < k; i++)
                to[i] = r->narrow[done + i];
        else
            memcpy(to, r->target + done, k * 8);
        if (q == me) {
            r->placed += k;
        } else {
            msg[0] = pos;
            cr_async(r->comm, q, r->h_place, msg, (k + 1) * 8);
        }
        done += k;
        pos += k;
    }
    cr_barrier(r->comm);
}

static bool validate(const app *a, perm_run *r)
{
    memset(r->seen, 0, r->count ? r->count : 1);
    r->duplicates = 0;
    for (uint64_t i = 0; i < r->count; i++) {
        uint64_t v = r->perm[i];
        int q = v < r->total ? cr_darray_owner(r->total, r->size, v) : 0;
        cr_async(r->comm, q, r->h_mark, &v, sizeof v);
    }
    cr_barrier(r->comm);
    uint64_t missing = 0;
    for (uint64_t i = 0; i < r->count; i++)
        missing += !r->seen[i];
    uint64_t bad[3] = {r->duplicates, missing, r->placed != r->count}, sum[3];
    cr_allreduce(r->comm, bad, sum, 3, CR_UINT64, CR_OP_SUM, NULL);
    if ((sum[0] || sum[1] || sum[2]) && a->rank == 0)
        fprintf(stderr, "randperm: not a permutation: %llu values twice or out of range, %llu "
                "missing, %llu ranks without their whole block\n", (unsigned long long)sum[0],
                (unsigned long long)sum[1], (unsigned long long)sum[2]);
    return !(sum[0] || sum[1] || sum[2]);
}

/* A fingerprint of the whole permutation (which value at which place), the same on
 * every rank: equal for equal permutations, and unequal otherwise but by chance. */
static uint64_t fingerprint(perm_run *r)
{
    uint64_t mine = 0, all = 0;
    for (uint64_t i = 0; i < r->count; i++)
        mine += cr_rng_hash64((r->first + i) ^ cr_rng_hash64(r->perm[i]));
    cr_allreduce(r->comm, &mine, &all, 1, CR_UINT64, CR_OP_SUM, NULL);
    return all;
}

/* The index of a permutation of 0 .. n-1 among the n! (its Lehmer code). */
static uint64_t lehmer(const uint64_t *v, int n)
{
    uint64_t code = 0;
    for (int i = 0; i < n; i++) {
        uint64_t smaller = 0;
        for (int j = i + 1; j < n; j++)
            smaller += v[j] < v[i];
        code = code * (uint64_t)(n - i) + smaller;
    }
    return code;
}

/* Chi-square test of uniformity over `trials` permutations of r->total <= 6. */
static bool chi_square(const app *a, perm_run *r, uint64_t trials, uint64_t seed)
{
    int n = (int)r->total, cells = 1;
    for (int i = 2; i <= n; i++)
        cells *= i;
    uint64_t *freq = app_calloc(a, (size_t)cells, sizeof *freq, "the frequencies");
    uint64_t *all = app_calloc(a, (size_t)n, sizeof *all, "a permutation");
    size_t *sizes = app_calloc(a, (size_t)r->size, sizeof *sizes, "sizes");
    size_t *offs = app_calloc(a, (size_t)r->size, sizeof *offs, "offsets");
    for (int q = 0; q < r->size; q++) {
        uint64_t f, c;
        cr_darray_block(r->total, r->size, q, &f, &c);
        sizes[q] = c * 8;
        offs[q] = f * 8;
    }
    bool ok = true;
    for (uint64_t t = 0; t < trials; t++) {
        make_permutation(r, seed + t);
        ok = validate(a, r) && ok;
        cr_allgatherv(r->comm, r->perm, all, sizes, offs, NULL);
        freq[lehmer(all, n)]++;
    }
    double expect = (double)trials / cells, x2 = 0;
    for (int c = 0; c < cells; c++)
        x2 += ((double)freq[c] - expect) * ((double)freq[c] - expect) / expect;
    /* the chi-square quantile at 1 - 1e-6 by the Wilson-Hilferty approximation */
    double df = cells - 1, z = 4.753424;
    double limit = df * pow(1 - 2 / (9 * df) + z * sqrt(2 / (9 * df)), 3);
    if (a->rank == 0)
        printf("randperm: %llu permutations of %d values: chi-square %.2f with %d degrees of "
               "freedom, limit %.2f (p = 1e-6): %s\n", (unsigned long long)trials, n, x2,
               cells - 1, limit, x2 <= limit ? "uniform" : "NOT UNIFORM");
    free(freq), free(all), free(sizes), free(offs);
    return ok && x2 <= limit;
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "randperm", usage, &argc, &argv);
    the_app = &a;
    uint64_t per_rank = 1 << 20, total = 0, seed = 1, chi_trials = 0;
    bool print_fingerprint = false;
    uint64_t slot_bytes = 0; /* 0: 4 when every value fits */
    int reps = 3;
    app_shared sh;
    app_shared_init(&sh);
    static const struct option opts[] = {
        {"per-rank", required_argument, 0, 'n'}, {"total", required_argument, 0, 'N'},
        {"reps", required_argument, 0, 'r'},     {"seed", required_argument, 0, 's'},
        {"chi-square", required_argument, 0, 'c'}, {"fingerprint", no_argument, 0, 'f'},
        {"slot-bytes", required_argument, 0, 'b'},
        APP_LONG_ROUTE, APP_LONG_NODE_SIZE, APP_LONG_BUFFER_KB, APP_LONG_COMMON, {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "n:N:s:", opts, NULL)) != -1) {
        switch (ch) {
        case 'n': per_rank = app_parse_u64(&a, "-n", optarg, 1, UINT64_C(1) << 34); break;
        case 'N': total = app_parse_u64(&a, "-N", optarg, 1, UINT64_C(1) << 40); break;
        case 'r': reps = (int)app_parse_u64(&a, "--reps", optarg, 1, 1000); break;
        case 's': seed = app_parse_u64(&a, "--seed", optarg, 0, UINT64_MAX); break;
        case 'c': chi_trials = app_parse_u64(&a, "--chi-square", optarg, 1, 10000000); break;
        case 'f': print_fingerprint = true; break;
        case 'b':
            slot_bytes = app_parse_u64(&a, "--slot-bytes", optarg, 4, 8);
            if (slot_bytes != 4 && slot_bytes != 8)
                app_usage_error(&a, "--slot-bytes %llu: expected 4 or 8", (unsigned long long)slot_bytes);
            break;
        default: app_other_option(&a, ch, optarg, &sh, argv);
        }
    }
    app_no_operands(&a, argc, argv);
    if (chi_trials && !total)
        total = 4;
    if (chi_trials && total > 6)
        app_usage_error(&a, "--chi-square counts every one of the TOTAL! permutations: -N %llu "
                        "is more than 6", (unsigned long long)total);
    if (!total)
        total = per_rank * (uint64_t)a.size;
    if (total > MAX_TOTAL)
        app_usage_error(&a, "%llu values in all: at most 2^40", (unsigned long long)total);
    if (slot_bytes == 4 && total >= NARROW_EMPTY)
        app_usage_error(&a, "--slot-bytes 4 holds values below 2^32 - 1, not %llu of them",
                        (unsigned long long)total);
    if (!slot_bytes)
        slot_bytes = total < NARROW_EMPTY ? 4 : 8;
    double need = (double)total * (2 * (double)slot_bytes + 8 + 1) * 1.5;
    double mem = app_physical_memory();
    if (mem > 0 && need > mem)
        app_usage_error(&a, "-N %llu needs about %.1f GiB, more than this machine's %.1f GiB",
                        (unsigned long long)total, need / (1 << 30), mem / (1 << 30));

    app_comm_flags flags = app_shared_comm_flags(&sh);
    perm_run r = {.rank = a.rank, .size = a.size, .total = total, .slots = 2 * total};
    r.comm = app_comm_create(&a, &flags, NULL);
    r.local_slots = (r.slots + (uint64_t)a.size - (uint64_t)a.rank - 1) / (uint64_t)a.size;
    cr_darray_block(total, a.size, a.rank, &r.first, &r.count);
    if (slot_bytes == 4)
        r.narrow = app_alloc_large(&a, r.local_slots ? r.local_slots : 1, 4, "the target table");
    else
        r.target = app_alloc_large(&a, r.local_slots ? r.local_slots : 1, 8, "the target table");
    r.perm = app_alloc_large(&a, r.count ? r.count : 1, 8, "the permutation's block");
    r.seen = app_calloc(&a, r.count ? r.count : 1, 1, "the validation's marks");
    r.h_dart = cr_register_type(r.comm, &(cr_handler_type){.batch = on_darts, .name = "dart"}, &r);
    r.h_place = cr_register(r.comm, on_place, &r);
    r.h_mark = cr_register_type(r.comm, &(cr_handler_type){.batch = on_marks, .name = "mark"}, &r);
    bool check = app_validate_or(&sh, APP_VALIDATE_YES) != APP_VALIDATE_NO, ok = true;
    if (chi_trials) {
        ok = chi_square(&a, &r, chi_trials, seed);
    } else {
        if (a.rank == 0 && !sh.quiet)
            printf("randperm: %d ranks, %llu values (%llu per rank), a target of %llu slots\n",
                   a.size, (unsigned long long)total, (unsigned long long)(total / a.size),
                   (unsigned long long)r.slots);
        double sum = 0, lo = 0, hi = 0;
        for (int t = 0; t < reps; t++) {
            r.throws = 0;
            cr_barrier(r.comm);
            double t0 = MPI_Wtime();
            make_permutation(&r, seed + (uint64_t)t * 0x51ed27);
            double s = app_max_time(MPI_Wtime() - t0);
            bool valid = !check || validate(&a, &r);
            ok = ok && valid;
            uint64_t throws = 0;
            cr_allreduce(r.comm, &r.throws, &throws, 1, CR_UINT64, CR_OP_SUM, NULL);
            uint64_t print = print_fingerprint ? fingerprint(&r) : 0;
            if (print_fingerprint && a.rank == 0)
                printf("  trial %d  permutation %016llx\n", t + 1, (unsigned long long)print);
            sum += s;
            lo = t == 0 || s < lo ? s : lo;
            hi = s > hi ? s : hi;
            if (a.rank == 0 && !sh.quiet)
                printf("  trial %d  %.4f s  %.2f M values/s  %.3f throws per value%s\n", t + 1, s,
                       (double)total / s / 1e6, (double)throws / (double)total,
                       valid ? "" : "  VALIDATION FAILED");
        }
        double mean = sum / reps;
        if (a.rank == 0)
            printf("  courier    mean %.4f s (%.4f-%.4f)  %.2f M values/s  %s\n", mean, lo, hi,
                   (double)total / mean / 1e6, !check ? "not validated" : ok ? "validated"
                                                                             : "VALIDATION FAILED");
    }
    if (sh.stats)
        cr_stats_print(r.comm, stdout);
    free(r.target), free(r.narrow), free(r.perm), free(r.seen);
    app_comm_destroy(r.comm);
    MPI_Finalize();
    return ok ? 0 : 1;
}
