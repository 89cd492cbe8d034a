/* Word count with a distributed counting set: each rank takes every P-th line of a
 * text and inserts each word; inserts of one word that meet in a send buffer are
 * added together on the way, so a frequent word costs one record per buffer, not
 * one per occurrence. Rank 0 prints the 20 most frequent words.
 *
 *   scripts/mpirun.sh -np 3 build/examples/wordcount [FILE]
 *
 * Without FILE it counts a built-in text. Words are runs of letters and digits,
 * lower-cased, at most 23 bytes (longer ones are counted apart and reported). Every
 * rank checks the words it owns, and the top 20, against a sequential count of the
 * whole text (sorting every word). */
#include <courier.h>

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORD_MAX 23 /* bytes; the key is the word padded with zeros to 24 */
#define TOP 20

typedef struct word {
    char bytes[WORD_MAX + 1];
} word;

/* Calls fn(word, arg) for every word of lines first, first + step, ...; returns the
 * number of words too long to count. */
static uint64_t each_word(const char *text, int first, int step,
                          void (*fn)(const word *, void *), void *arg)
{
    uint64_t too_long = 0;
    int line = 0;
    for (const char *p = text; *p;) {
        if (*p == '\n') {
            line++, p++;
            continue;
        }
        if (!isalnum((unsigned char)*p)) {
            p++;
            continue;
        }
        word w = {{0}};
        size_t n = 0;
        for (; isalnum((unsigned char)*p); p++, n++)
            if (n < WORD_MAX)
                w.bytes[n] = (char)tolower((unsigned char)*p);
        if (line % step != first)
            continue;
        if (n > WORD_MAX)
            too_long++;
        else
            fn(&w, arg);
    }
    return too_long;
}

static void insert_word(const word *w, void *cs)
{
    cr_counting_set_insert(cs, w);
}

/* The sequential count: every word of the text, sorted, counted in runs. */
typedef struct all_words {
    word *w;
    size_t n, cap;
} all_words;

static void collect(const word *w, void *arg)
{
    all_words *a = arg;
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 1024;
        word *bigger = realloc(a->w, a->cap * sizeof *bigger);
        if (!bigger) {
            fprintf(stderr, "wordcount: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        a->w = bigger;
    }
    a->w[a->n++] = *w;
}

static int by_bytes(const void *x, const void *y)
{
    return memcmp(x, y, sizeof(word));
}

typedef struct counted {
    word w;
    uint64_t count;
} counted;

/* The order of cr_counting_set_top_k: larger counts first, then the key's bytes. */
static int by_count(const void *x, const void *y)
{
    const counted *a = x, *b = y;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return memcmp(&a->w, &b->w, sizeof a->w);
}

static const char builtin[] =
    "It is a truth universally acknowledged that a single rank in charge\n"
    "of a good buffer must be in want of a barrier\n"
    "However little known the feelings or views of such a rank may be\n"
    "on its first entering a communicator this truth is so well fixed\n"
    "in the minds of the surrounding ranks that it is considered\n"
    "the rightful property of some one or other of their handlers\n";

static char *read_text(const char *path)
{
    if (!path) {
        /* The built-in text, 200 times: enough records for buffers to merge. */
        size_t n = strlen(builtin);
        char *t = malloc(200 * n + 1);
        if (!t)
            return NULL;
        for (int i = 0; i < 200; i++)
            memcpy(t + (size_t)i * n, builtin, n);
        t[200 * n] = 0;
        return t;
    }
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *t = NULL;
    size_t len = 0, cap = 0, got;
    char chunk[65536];
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + got + 1 > cap) {
            cap = 2 * (len + got + 1);
            char *bigger = realloc(t, cap);
            if (!bigger) {
                free(t);
                fclose(f);
                return NULL;
            }
            t = bigger;
        }
        memcpy(t + len, chunk, got);
        len += got;
    }
    fclose(f);
    if (!t && (t = malloc(1)) == NULL)
        return NULL;
    t[len] = 0;
    return t;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const char *path = argc > 1 ? argv[1] : NULL;
    char *text = read_text(path);
    /* Every rank reads the file; the lowest that cannot says so, once. */
    int rank, size, failed, first_failed;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    failed = text ? size : rank;
    MPI_Allreduce(&failed, &first_failed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first_failed < size) {
        if (first_failed == rank)
            fprintf(stderr, "wordcount: %s: cannot read the file\n", path ? path : "(text)");
        free(text);
        MPI_Finalize();
        return 2;
    }
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, NULL);
    char err[200];
    cr_counting_set *cs = cr_counting_set_create(comm, sizeof(word), err, sizeof err);
    if (!cs) {
        fprintf(stderr, "wordcount: %s\n", err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    uint64_t too_long = each_word(text, rank, size, insert_word, cs);
    word top[TOP];
    uint64_t top_counts[TOP];
    size_t ntop = cr_counting_set_top_k(cs, TOP, top, top_counts); /* collective: a barrier */

    /* The check: the sequential count of the whole text, on every rank. */
    all_words a = {0};
    each_word(text, 0, 1, collect, &a);
    qsort(a.w, a.n, sizeof *a.w, by_bytes);
    counted *runs = malloc((a.n + 1) * sizeof *runs);
    size_t nruns = 0;
    for (size_t i = 0; i < a.n; i++) {
        if (nruns && !memcmp(&runs[nruns - 1].w, &a.w[i], sizeof(word)))
            runs[nruns - 1].count++;
        else
            runs[nruns++] = (counted){a.w[i], 1};
    }
    cr_map *map = cr_counting_set_map(cs);
    uint64_t wrong = 0, owned = 0, total = 0;
    for (size_t i = 0; i < nruns; i++) {
        if (cr_map_owner(map, &runs[i].w) != rank)
            continue;
        owned++;
        const uint64_t *got = cr_map_local_find(map, &runs[i].w);
        wrong += !got || *got != runs[i].count;
        total += got ? *got : 0;
    }
    wrong += owned != cr_counting_set_local_size(cs);
    qsort(runs, nruns, sizeof *runs, by_count);
    size_t want_top = nruns < TOP ? nruns : TOP;
    wrong += ntop != want_top;
    for (size_t i = 0; i < ntop && i < want_top; i++)
        wrong += memcmp(&top[i], &runs[i].w, sizeof(word)) || top_counts[i] != runs[i].count;

    uint64_t sums[4] = {wrong, total, owned, too_long}, all[4];
    MPI_Allreduce(sums, all, 4, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("wordcount: the %zu most frequent words:\n", ntop);
        for (size_t i = 0; i < ntop; i++)
            printf("  %8llu  %s\n", (unsigned long long)top_counts[i], top[i].bytes);
        printf("wordcount: %llu words, %llu distinct, %llu too long; %llu wrong: %s\n",
               (unsigned long long)all[1], (unsigned long long)all[2],
               (unsigned long long)all[3], (unsigned long long)all[0],
               all[0] == 0 ? "exact" : "WRONG");
    }
    free(runs);
    free(a.w);
    free(text);
    cr_counting_set_destroy(cs);
    cr_comm_destroy(comm);
    MPI_Finalize();
    return all[0] == 0 ? 0 : 1;
}
