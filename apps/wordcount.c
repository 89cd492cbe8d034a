/* wordcount: the word count of a generated corpus on a distributed counting set
 * (cr_counting_set, include/courier/container.h), for benchmarking. Each rank draws
 * its words from a Zipf distribution over a vocabulary (word i has probability
 * proportional to 1 / i^s), spelled as letters, then counts them; timed from the first
 * insert to the barrier that applies the last. Verified: the counts add up to every
 * word drawn, and, when the corpus is small enough to draw again, every word's count
 * equals a recount; the 20 most frequent words are printed. */
#include "cli.h"

#include <courier.h>
#include <courier/rng.h>

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: mpirun -np P wordcount [options]\n"
    "\n"
    "Counts the words of a generated corpus with a distributed counting set: each\n"
    "rank draws N words from a Zipf distribution over V words (word i with\n"
    "probability proportional to 1 / i^s), then inserts them; prints the rate, the 20\n"
    "most frequent words and the check.\n"
    "\n"
    "  --words N        words per rank (default 4M; suffixes K, M, G)\n"
    "  --vocabulary V   distinct words the corpus draws from (default 100K)\n"
    "  --skew S         the Zipf exponent s, 0 (uniform) to 4 (default 1)\n"
    "  --validate V     yes, no, auto: recount every word when N * P is at most 64M\n"
    "                   (default auto); the total is checked in any case\n"
    "  --seed S         random seed (default 1)\n"
    "  --buffer-kb K    Courier flush threshold in KiB (default: COURIER_BUFFER_SIZE or 64)\n"
    "  --route R        direct, nr, nlnr, grid, grid:AxB..., hypercube (default:\n"
    "                   COURIER_ROUTE or direct)\n"
    "  --node-size K    treat ranks [i*K, (i+1)*K) as node i\n"
    "  --csv FILE       append one line to FILE (header written if new)\n"
    "  --stats          print Courier's counters at the end\n"
    "  --help           show this text\n";

#define WORD_LEN 16 /* the key: up to 15 letters, zero-padded */
#define TOP 20

typedef struct word {
    char bytes[WORD_LEN];
} word;

/* Word i's spelling: i's digits in base 26, always `digits` letters (so that no two
 * words are spelled alike), then 0 to 5 letters from a hash of i, so that lengths
 * vary as a text's do. */
static word spell(uint64_t i, int digits)
{
    word w;
    memset(&w, 0, sizeof w);
    int k = 0;
    for (uint64_t x = i; k < digits; k++, x /= 26)
        w.bytes[k] = (char)('a' + x % 26);
    uint64_t h = cr_rng_hash64(i ^ 0x776f7264ULL);
    for (int extra = (int)(h % 6); extra > 0 && k < WORD_LEN - 1; extra--, k++) {
        h /= 26;
        w.bytes[k] = (char)('a' + h % 26);
    }
    return w;
}

/* Letters enough to spell n distinct words. */
static int digits_for(uint64_t n)
{
    int d = 1;
    for (uint64_t cap = 26; cap < n; cap *= 26)
        d++;
    return d;
}

/* The Zipf distribution's cumulative weights, to draw by binary search. */
typedef struct zipf {
    double *cdf;
    uint64_t n;
} zipf;

static void zipf_init(const app *a, zipf *z, uint64_t n, double s)
{
    z->n = n;
    z->cdf = app_calloc(a, n, sizeof *z->cdf, "the Zipf table");
    double sum = 0;
    for (uint64_t i = 0; i < n; i++)
        z->cdf[i] = sum += pow((double)(i + 1), -s);
    for (uint64_t i = 0; i < n; i++)
        z->cdf[i] /= sum;
}

static uint64_t zipf_draw(const zipf *z, uint64_t *state)
{
    double u = (double)(cr_rng_next(state) >> 11) * 0x1.0p-53;
    uint64_t lo = 0, hi = z->n - 1;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (z->cdf[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static uint64_t stream_seed(uint64_t seed, int rank)
{
    return cr_rng_hash64(seed * 0x100000001b3ULL + (uint64_t)rank);
}

typedef struct totals {
    uint64_t words, distinct;
} totals;

static void add_count(const void *key, uint64_t count, void *user)
{
    totals *t = user;
    t->words += count;
    t->distinct++;
    (void)key;
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "wordcount", usage, &argc, &argv);
    uint64_t n = 4u << 20, vocabulary = 100000;
    double skew = 1.0;
    int validate = 2;
    static const char *const validations[] = {"no", "yes", "auto", NULL};
    app_shared sh;
    app_shared_init(&sh);
    static const struct option opts[] = {
        APP_LONG_SEED, APP_LONG_BUFFER_KB, APP_LONG_ROUTE, APP_LONG_NODE_SIZE, APP_LONG_CSV,
        APP_LONG_STATS,
        {"words", required_argument, 0, 'n'},    {"vocabulary", required_argument, 0, 'v'},
        {"skew", required_argument, 0, 's'},     {"validate", required_argument, 0, 'V'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'n': n = app_parse_u64(&a, "--words", optarg, 1, 1ULL << 32); break;
        case 'v': vocabulary = app_parse_u64(&a, "--vocabulary", optarg, 1, 1ULL << 28); break;
        case 's': skew = app_parse_double(&a, "--skew", optarg, 0, 4); break;
        case 'V': validate = app_parse_choice(&a, "--validate", optarg, validations); break;
        case 'h': app_help(&a);
        default: app_other_option(&a, ch, optarg, &sh, argv);
        }
    }
    app_no_operands(&a, argc, argv);
    /* Per rank: the corpus (16 bytes a word), the Zipf table (8 bytes a word of the
     * vocabulary), the recount (8 more), and the set's share of the vocabulary (up to
     * 4 slots of 32 bytes a word) on this machine's ranks. */
    bool recount = validate == 1 || (validate == 2 && (double)n * a.size <= 64e6);
    double need = a.size * ((double)n * WORD_LEN + (double)vocabulary * (recount ? 16 : 8)) +
                  (double)vocabulary * 128;
    double phys = app_physical_memory();
    if (phys > 0 && need > phys)
        app_usage_error(&a, "--words %llu and --vocabulary %llu need about %.1f GiB on this "
                        "machine's %d ranks, more than its %.1f GiB", (unsigned long long)n,
                        (unsigned long long)vocabulary, need / (1 << 30), a.size,
                        phys / (1 << 30));
    FILE *csv = app_open_csv(&a, sh.csv, "ranks,words_per_rank,vocabulary,skew,buffer_bytes,"
                                         "route,seconds,words_per_s,distinct,verified");

    zipf z;
    zipf_init(&a, &z, vocabulary, skew);
    word *corpus = app_calloc(&a, n, sizeof *corpus, "the corpus");
    int digits = digits_for(vocabulary);
    uint64_t s = stream_seed(sh.seed, a.rank);
    for (uint64_t i = 0; i < n; i++)
        corpus[i] = spell(zipf_draw(&z, &s), digits);

    cr_config cfg;
    app_comm_flags flags = app_shared_comm_flags(&sh);
    cr_comm *comm = app_comm_create(&a, &flags, &cfg);
    char err[200];
    cr_counting_set *cs = cr_counting_set_create(comm, sizeof(word), err, sizeof err);
    if (!cs)
        app_error(&a, "%s", err);
    cr_barrier(comm);
    double t0 = MPI_Wtime();
    for (uint64_t i = 0; i < n; i++)
        cr_counting_set_insert(cs, &corpus[i]);
    cr_barrier(comm);
    double seconds = app_max_time(MPI_Wtime() - t0);
    free(corpus);

    word top[TOP];
    uint64_t counts[TOP];
    size_t ntop = cr_counting_set_top_k(cs, TOP, top, counts);
    totals t = {0};
    cr_counting_set_for_all(cs, add_count, &t);
    uint64_t wrong = 0;
    if (recount) { /* every rank draws every rank's words again, counting its own */
        uint64_t *expect = app_calloc(&a, vocabulary, sizeof *expect, "the recount");
        for (int r = 0; r < a.size; r++) {
            uint64_t rs = stream_seed(sh.seed, r);
            for (uint64_t i = 0; i < n; i++)
                expect[zipf_draw(&z, &rs)]++;
        }
        cr_map *map = cr_counting_set_map(cs);
        for (uint64_t i = 0; i < vocabulary; i++) {
            word w = spell(i, digits);
            if (cr_map_owner(map, &w) != a.rank)
                continue;
            const uint64_t *got = cr_map_local_find(map, &w);
            wrong += expect[i] ? !got || *got != expect[i] : got != NULL;
        }
        free(expect);
    }
    uint64_t in[3] = {t.words, t.distinct, wrong}, sum[3];
    MPI_Allreduce(in, sum, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    bool ok = sum[0] == n * (uint64_t)a.size && sum[2] == 0;
    double rate = (double)n * a.size / seconds;
    char route[128];
    cr_route_format(&cfg.route, route, sizeof route);
    if (a.rank == 0) {
        printf("wordcount: %d ranks, %llu words per rank, vocabulary %llu, Zipf s = %g, route "
               "%s\n", a.size, (unsigned long long)n, (unsigned long long)vocabulary, skew,
               route);
        printf("  %.4f s, %.2f M words/s, %llu distinct words\n", seconds, rate / 1e6,
               (unsigned long long)sum[1]);
        printf("  the %zu most frequent:", ntop);
        for (size_t i = 0; i < ntop; i++)
            printf("%s %s %llu", i ? "," : "", top[i].bytes, (unsigned long long)counts[i]);
        printf("\n  %s\n", !ok ? "WRONG: the counts do not match"
                           : recount ? "verified: every word's count equals a recount"
                                     : "verified: the counts add up to every word drawn");
        if (csv)
            fprintf(csv, "%d,%llu,%llu,%g,%zu,%s,%.6f,%.1f,%llu,%d\n", a.size,
                    (unsigned long long)n, (unsigned long long)vocabulary, skew,
                    cfg.buffer_bytes, route, seconds, rate, (unsigned long long)sum[1], ok);
    }
    if (csv)
        fclose(csv);
    if (sh.stats)
        cr_stats_print(comm, stdout);
    cr_counting_set_destroy(cs);
    free(z.cdf);
    app_comm_destroy(comm);
    MPI_Finalize();
    return ok ? 0 : 1;
}
