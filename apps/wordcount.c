/* wordcount: a word count on a distributed counting set (cr_counting_set,
 * include/courier/container.h), of text files or of a generated corpus.
 *  - Files (--input): split among the ranks by bytes with the line reader
 *    (include/courier/io.h); a word is a maximal run of ASCII letters, digits and
 *    '_', case kept. Verified against a sequential recount of every word when the
 *    input is small enough (else the counts must add up to the words read). The
 *    counts can be saved (--save) and added to a later run's (--load), on any
 *    number of ranks.
 *  - Generated (the default), for benchmarking: each rank draws its words from a
 *    Zipf distribution over a vocabulary (word i with probability proportional to
 *    1 / i^s), spelled as letters, then counts them. Verified: the counts add up
 *    to every word drawn, and, when the corpus is small enough to draw again, every
 *    word's count equals a recount.
 * Timed from the first insert to the barrier that applies the last; the most
 * frequent words are printed. */
#include "cli.h"

#include <courier.h>
#include <courier/rng.h>

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "Usage: mpirun -np P wordcount [options] [--input PATH [PATH...]]\n"
    "\n"
    "Counts words with a distributed counting set and prints the rate, the most\n"
    "frequent words and the check. With --input, the words of text files: each rank\n"
    "reads about 1/P of the bytes. Without, a generated corpus: each rank draws N\n"
    "words from a Zipf distribution over V words (word i with probability\n"
    "proportional to 1 / i^s), then inserts them.\n"
    "\n"
    "  --input PATH     count the words (runs of ASCII letters, digits and '_', case\n"
    "                   kept, up to 31 bytes) of PATH, a file or a directory; more\n"
    "                   paths may follow the options\n"
    "  --save DIR       save the counts to directory DIR (docs/io.md)\n"
    "  --overwrite      let --save replace a save DIR holds already\n"
    "  --load DIR       add the counts saved in DIR (by a run at any rank count) before\n"
    "                   counting; a save of --input words loads as such without --input\n"
    "  --top K          print the K most frequent words (default 10, at most 1000)\n"
    "  --words N        generated: words per rank (default 4M; suffixes K, M, G)\n"
    "  --vocabulary V   generated: distinct words the corpus draws from (default 100K)\n"
    "  --skew S         generated: the Zipf exponent s, 0 (uniform) to 4 (default 1)\n"
    "  --seed S         random seed (default 1)\n"
    "  --buffer-kb K    Courier flush threshold in KiB (default: COURIER_BUFFER_SIZE or 64)\n"
    "  --route R        direct, nr, nlnr, grid, grid:AxB..., hypercube (default:\n"
    "                   COURIER_ROUTE or direct)\n"
    "  --node-size K    each node cut into virtual nodes of K ranks\n"
    "\n"
    "--validate: yes recounts every word; auto (the default) recounts when N * P is at\n"
    "most 64M or the input at most 64 MiB; the total is checked in any case (a recount\n"
    "is not made after --load).\n";

#define WORD_LEN 16 /* the key: up to 15 letters, zero-padded */
#define TOP_DEFAULT 10
#define TOP_MAX 1000
#define FILE_WORD 32 /* --input: the key, a word of up to 31 bytes zero-padded */

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

typedef struct wc_opts {
    uint64_t n, vocabulary;
    double skew;
    int validate; /* 0 no, 1 yes, 2 auto */
    const char **inputs;
    size_t ninputs;
    const char *save, *load;
    bool overwrite;
    size_t top;
    app_shared sh;
} wc_opts;

static void parse(app *a, int argc, char **argv, wc_opts *o)
{
    *o = (wc_opts){.n = 4u << 20, .vocabulary = 100000, .skew = 1.0, .top = TOP_DEFAULT};
    app_shared_init(&o->sh);
    o->inputs = app_calloc(a, (size_t)argc + 1, sizeof *o->inputs, "the input list");
    static const struct option opts[] = {
        APP_LONG_SEED, APP_LONG_BUFFER_KB, APP_LONG_ROUTE, APP_LONG_NODE_SIZE,
        {"words", required_argument, 0, 'n'},    {"vocabulary", required_argument, 0, 'v'},
        {"skew", required_argument, 0, 's'},     {"input", required_argument, 0, 'i'},
        {"save", required_argument, 0, 'S'},
        {"load", required_argument, 0, 'L'},     {"overwrite", no_argument, 0, 'O'},
        {"top", required_argument, 0, 't'},
        APP_LONG_COMMON, {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'n': o->n = app_parse_u64(a, "--words", optarg, 1, 1ULL << 32); break;
        case 'v': o->vocabulary = app_parse_u64(a, "--vocabulary", optarg, 1, 1ULL << 28); break;
        case 's': o->skew = app_parse_double(a, "--skew", optarg, 0, 4); break;
        case 'i': o->inputs[o->ninputs++] = optarg; break;
        case 'S': o->save = optarg; break;
        case 'L': o->load = optarg; break;
        case 'O': o->overwrite = true; break;
        case 't': o->top = (size_t)app_parse_u64(a, "--top", optarg, 1, TOP_MAX); break;
        default: app_other_option(a, ch, optarg, &o->sh, argv);
        }
    }
    if (o->ninputs == 0)
        app_no_operands(a, argc, argv);
    while (optind < argc)
        o->inputs[o->ninputs++] = argv[optind++];
    o->validate = app_validate_or(&o->sh, APP_VALIDATE_AUTO);
    if (o->overwrite && !o->save)
        app_usage_error(a, "--overwrite goes with --save");
    /* refused now rather than after the count: a save that is there stays */
    char manifest[4096];
    if (o->save && !o->overwrite &&
        snprintf(manifest, sizeof manifest, "%s/manifest", o->save) < (int)sizeof manifest &&
        access(manifest, F_OK) == 0)
        app_usage_error(a, "--save %s: the directory holds a save already (add --overwrite to "
                        "replace it)", o->save);
}

/* Whether every word is recounted: asked for, or by default when the work (words
 * drawn, bytes read) is at most `limit`. Counts added by --load are not recounted. */
static bool recounts(const wc_opts *o, double work, double limit)
{
    return !o->load && (o->validate == 1 || (o->validate == 2 && work <= limit));
}

/* ---------------------------------------------------------------- generated corpus */

/* Draws the corpus, counts it (timed), and checks it; returns the seconds. */
static double count_generated(const app *a, const wc_opts *o, cr_counting_set *cs,
                              uint64_t *wrong)
{
    /* Per rank: the corpus (16 bytes a word), the Zipf table (8 bytes a word of the
     * vocabulary), the recount (8 more), and the set's share of the vocabulary (up to
     * 4 slots of 32 bytes a word) on this machine's ranks. */
    bool recount = recounts(o, (double)o->n * a->size, 64e6);
    double need = a->size * ((double)o->n * WORD_LEN +
                             (double)o->vocabulary * (recount ? 16 : 8)) +
                  (double)o->vocabulary * 128;
    double phys = app_physical_memory();
    if (phys > 0 && need > phys)
        app_usage_error(a, "--words %llu and --vocabulary %llu need about %.1f GiB on this "
                        "machine's %d ranks, more than its %.1f GiB", (unsigned long long)o->n,
                        (unsigned long long)o->vocabulary, need / (1 << 30), a->size,
                        phys / (1 << 30));
    zipf z;
    zipf_init(a, &z, o->vocabulary, o->skew);
    word *corpus = app_calloc(a, o->n, sizeof *corpus, "the corpus");
    int digits = digits_for(o->vocabulary);
    uint64_t s = stream_seed(o->sh.seed, a->rank);
    for (uint64_t i = 0; i < o->n; i++)
        corpus[i] = spell(zipf_draw(&z, &s), digits);
    cr_comm *comm = cr_map_comm(cr_counting_set_map(cs));
    cr_barrier(comm);
    double t0 = MPI_Wtime();
    for (uint64_t i = 0; i < o->n; i++)
        cr_counting_set_insert(cs, &corpus[i]);
    cr_barrier(comm);
    double seconds = app_max_time(MPI_Wtime() - t0);
    free(corpus);
    *wrong = 0;
    if (recount) { /* every rank draws every rank's words again, counting its own */
        uint64_t *expect = app_calloc(a, o->vocabulary, sizeof *expect, "the recount");
        for (int r = 0; r < a->size; r++) {
            uint64_t rs = stream_seed(o->sh.seed, r);
            for (uint64_t i = 0; i < o->n; i++)
                expect[zipf_draw(&z, &rs)]++;
        }
        cr_map *map = cr_counting_set_map(cs);
        for (uint64_t i = 0; i < o->vocabulary; i++) {
            word w = spell(i, digits);
            if (cr_map_owner(map, &w) != a->rank)
                continue;
            const uint64_t *got = cr_map_local_find(map, &w);
            *wrong += expect[i] ? !got || *got != expect[i] : got != NULL;
        }
        free(expect);
    }
    free(z.cdf);
    return seconds;
}

/* ---------------------------------------------------------------- text files */

typedef struct file_counter {
    cr_counting_set *cs;
    uint64_t words, too_long;
    /* the recount: the words this rank owns, from a sequential read of everything */
    cr_map *owners;
    char *mine;
    size_t nmine, cap;
    int rank;
} file_counter;

static bool in_word(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_';
}

/* Calls take(key) for every word of the line that fits a key. */
static void each_word(const cr_line *line, file_counter *c, void (*take)(file_counter *,
                                                                          const char *))
{
    const char *s = line->text, *end = s + line->len;
    while (s < end) {
        while (s < end && !in_word(*s))
            s++;
        const char *w = s;
        while (s < end && in_word(*s))
            s++;
        size_t n = (size_t)(s - w);
        if (n == 0)
            continue;
        if (n >= FILE_WORD) {
            c->too_long++;
            continue;
        }
        char key[FILE_WORD] = {0};
        memcpy(key, w, n);
        take(c, key);
    }
}

static void insert_word(file_counter *c, const char *key)
{
    cr_counting_set_insert(c->cs, key);
    c->words++;
}

static int count_line(const cr_line *line, void *user, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    each_word(line, user, insert_word);
    return 0;
}

static void keep_if_mine(file_counter *c, const char *key)
{
    if (cr_map_owner(c->owners, key) != c->rank)
        return;
    if (c->nmine == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 4096;
        char *bigger = realloc(c->mine, c->cap * FILE_WORD);
        if (!bigger) {
            fprintf(stderr, "wordcount: no memory for the recount\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        c->mine = bigger;
    }
    memcpy(c->mine + c->nmine++ * FILE_WORD, key, FILE_WORD);
}

static int recount_line(const cr_line *line, void *user, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    each_word(line, user, keep_if_mine);
    return 0;
}

static int by_key(const void *x, const void *y)
{
    return memcmp(x, y, FILE_WORD);
}

/* Every rank reads all of the input alone and checks the counts of the words it owns
 * (and that it owns no other word). Returns the words whose count is wrong. */
static uint64_t recount_files(const app *a, const wc_opts *o, cr_counting_set *cs)
{
    file_counter c = {.owners = cr_counting_set_map(cs), .rank = a->rank};
    char err[512];
    /* read into a buffer, as the count's mapped read is not: a check of that too */
    if (cr_io_read_share(o->inputs, o->ninputs, NULL, 0, 1, recount_line, &c, NULL, err,
                         sizeof err))
        app_error(a, "recount: %s", err);
    qsort(c.mine, c.nmine, FILE_WORD, by_key);
    uint64_t wrong = 0, distinct = 0;
    for (size_t i = 0; i < c.nmine;) {
        size_t j = i;
        while (j < c.nmine && !memcmp(c.mine + j * FILE_WORD, c.mine + i * FILE_WORD, FILE_WORD))
            j++;
        const uint64_t *got = cr_map_local_find(c.owners, c.mine + i * FILE_WORD);
        wrong += !got || *got != j - i;
        distinct++;
        i = j;
    }
    wrong += distinct != cr_counting_set_local_size(cs);
    free(c.mine);
    return wrong;
}

/* Reads and counts the input (timed); *bytes gets the input's size. */
/* Whether the run counts file words: --input given, or --load names a save of them
 * (its key bytes say so), which then loads without --input. A save that cannot be
 * read is left to the load to report. */
static bool counts_file_words(const wc_opts *o)
{
    cr_save_info info;
    char err[512];
    return o->ninputs > 0 ||
           (o->load && cr_io_save_info(o->load, &info, err, sizeof err) == 0 &&
            !strcmp(info.kind, "counting_set") && info.meta == FILE_WORD);
}

static double count_files(const app *a, const wc_opts *o, cr_counting_set *cs,
                          uint64_t words_bytes[2], uint64_t *too_long)
{
    if (o->ninputs == 0) /* only the counts of --load */
        return 0;
    file_counter c = {.cs = cs};
    char err[512];
    cr_comm *comm = cr_map_comm(cr_counting_set_map(cs));
    cr_io_stats st;
    cr_io_opts io;
    cr_io_opts_init(&io);
    io.unterminated = true; /* each_word goes by the length */
    cr_barrier(comm);
    double t0 = MPI_Wtime();
    int rc = cr_io_read_lines(comm, o->inputs, o->ninputs, &io, count_line, &c, &st, err,
                              sizeof err);
    cr_barrier(comm);
    double seconds = app_max_time(MPI_Wtime() - t0);
    app_agree(a, rc ? err : NULL); /* the same verdict on every rank already */
    words_bytes[0] = c.words;
    words_bytes[1] = st.bytes;
    *too_long = c.too_long;
    return seconds;
}

/* ---------------------------------------------------------------- the run */

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

static uint64_t counted_words(const app *a, cr_counting_set *cs, uint64_t *distinct)
{
    totals t = {0};
    cr_counting_set_for_all(cs, add_count, &t);
    uint64_t in[2] = {t.words, t.distinct}, sum[2];
    MPI_Allreduce(in, sum, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    (void)a;
    *distinct = sum[1];
    return sum[0];
}

static void load_counts(const app *a, const wc_opts *o, cr_counting_set *cs)
{
    char err[512];
    if (o->load && cr_counting_set_load(cs, o->load, err, sizeof err))
        app_agree(a, err); /* every rank has the message: the lowest prints it */
}

static void save_counts(const app *a, const wc_opts *o, cr_counting_set *cs)
{
    char err[512];
    if (o->save && cr_counting_set_save(cs, o->save, o->overwrite ? CR_SAVE_OVERWRITE : 0, err,
                                        sizeof err))
        app_agree(a, err);
}

static void print_top(const app *a, const wc_opts *o, cr_counting_set *cs, size_t key_len)
{
    char *keys = app_calloc(a, o->top, key_len, "the top words");
    uint64_t *counts = app_calloc(a, o->top, sizeof *counts, "the top counts");
    size_t ntop = cr_counting_set_top_k(cs, o->top, keys, counts);
    if (a->rank == 0) {
        printf("  the %zu most frequent:", ntop);
        for (size_t i = 0; i < ntop; i++)
            printf("%s %.*s %llu", i ? "," : "", (int)key_len, keys + i * key_len,
                   (unsigned long long)counts[i]);
        printf("\n");
    }
    free(keys);
    free(counts);
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "wordcount", usage, &argc, &argv);
    wc_opts o;
    parse(&a, argc, argv, &o);
    bool files = counts_file_words(&o);
    FILE *csv = app_open_csv(&a, o.sh.csv, "ranks,words_per_rank,vocabulary,skew,buffer_bytes,"
                                           "route,seconds,words_per_s,distinct,verified");
    cr_config cfg;
    app_comm_flags flags = app_shared_comm_flags(&o.sh);
    cr_comm *comm = app_comm_create(&a, &flags, &cfg);
    size_t key_len = files ? FILE_WORD : sizeof(word);
    char err[200];
    cr_counting_set *cs = cr_counting_set_create(comm, key_len, err, sizeof err);
    if (!cs)
        app_error(&a, "%s", err);
    load_counts(&a, &o, cs);
    uint64_t distinct, loaded = counted_words(&a, cs, &distinct);

    uint64_t wrong = 0, words_bytes[2] = {0, 0}, too_long = 0, seen[3];
    double seconds = files ? count_files(&a, &o, cs, words_bytes, &too_long)
                           : count_generated(&a, &o, cs, &wrong);
    if (!files)
        words_bytes[0] = o.n;
    MPI_Allreduce((uint64_t[3]){words_bytes[0], words_bytes[1], too_long}, seen, 3,
                  MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    bool recount = files ? recounts(&o, (double)seen[1], 64 << 20)
                         : recounts(&o, (double)o.n * a.size, 64e6);
    if (files && recount)
        wrong = recount_files(&a, &o, cs);
    uint64_t wrong_all, total = counted_words(&a, cs, &distinct);
    MPI_Allreduce(&wrong, &wrong_all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    bool ok = total == loaded + seen[0] && wrong_all == 0;
    char route[128];
    cr_route_format(&cfg.route, route, sizeof route);
    if (a.rank == 0) {
        if (files)
            printf("wordcount: %d ranks, %zu input path%s, %.1f MiB, route %s\n", a.size,
                   o.ninputs, o.ninputs == 1 ? "" : "s", (double)seen[1] / (1 << 20), route);
        else
            printf("wordcount: %d ranks, %llu words per rank, vocabulary %llu, Zipf s = %g, "
                   "route %s\n", a.size, (unsigned long long)o.n,
                   (unsigned long long)o.vocabulary, o.skew, route);
        printf("  %.4f s", seconds);
        if (seconds > 0)
            printf(", %.2f M words/s", (double)seen[0] / seconds / 1e6);
        if (files && seconds > 0)
            printf(", %.1f MiB/s per rank", (double)seen[1] / a.size / seconds / (1 << 20));
        printf(", %llu distinct words", (unsigned long long)distinct);
        if (o.load)
            printf(" (%llu words loaded)", (unsigned long long)loaded);
        if (files)
            printf("; %llu words longer than %d bytes not counted", (unsigned long long)seen[2],
                   FILE_WORD - 1);
        printf("\n");
    }
    print_top(&a, &o, cs, key_len);
    if (a.rank == 0) {
        printf("  %s\n", !ok ? "WRONG: the counts do not match"
                         : recount
                             ? "verified: every word's count equals a recount"
                             : o.load ? "verified: the counts add up to the words loaded and read"
                                      : "verified: the counts add up to every word read");
        if (csv)
            fprintf(csv, "%d,%llu,%llu,%g,%zu,%s,%.6f,%.1f,%llu,%d\n", a.size,
                    (unsigned long long)words_bytes[0], (unsigned long long)o.vocabulary,
                    o.skew, cfg.buffer_bytes, route, seconds,
                    seconds > 0 ? (double)seen[0] / seconds : 0, (unsigned long long)distinct,
                    ok);
    }
    save_counts(&a, &o, cs);
    if (csv)
        fclose(csv);
    if (o.sh.stats)
        cr_stats_print(comm, stdout);
    cr_counting_set_destroy(cs);
    free(o.inputs);
    app_comm_destroy(comm);
    MPI_Finalize();
    return ok ? 0 : 1;
}
