/* Word count with a combining handler: each rank takes every P-th line of a text and
 * sends (word, 1) to the word's owner. The handler is registered with a key (the
 * word) and the rule "sum": two records for the same word that meet in a send buffer
 * become one record carrying the sum, so a frequent word costs one record per buffer,
 * not one per occurrence.
 *
 *   scripts/mpirun.sh -np 3 build/examples/wordcount [FILE]
 *
 * Without FILE it counts a built-in text. Words are runs of letters and digits,
 * lower-cased, at most 23 bytes (longer ones are counted apart and reported). Every
 * rank checks its words against a sequential count of the whole text; rank 0 prints
 * the most frequent word. */
#include <courier.h>

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORD_MAX 23 /* bytes; the key is the word padded with zeros to 24 */

typedef struct word_count {
    char word[WORD_MAX + 1]; /* the key: 24 bytes */
    uint64_t count;          /* the value the rule sums */
} word_count;

/* This rank's words: an open-addressing table that doubles when half full. */
typedef struct table {
    word_count *slots;
    size_t cap, used;
} table;

static uint64_t hash_word(const char *w)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *w; w++)
        h = (h ^ (unsigned char)*w) * 0x100000001b3ULL;
    return h;
}

static word_count *table_find(table *t, const char *w, int create);

static void table_grow(table *t)
{
    table old = *t;
    t->cap = old.cap ? old.cap * 2 : 1024;
    t->used = 0;
    t->slots = calloc(t->cap, sizeof *t->slots);
    if (!t->slots) {
        fprintf(stderr, "wordcount: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < old.cap; i++)
        if (old.slots[i].word[0])
            table_find(t, old.slots[i].word, 1)->count = old.slots[i].count;
    free(old.slots);
}

static word_count *table_find(table *t, const char *w, int create)
{
    if (create && 2 * (t->used + 1) > t->cap)
        table_grow(t);
    if (!t->cap)
        return NULL;
    for (size_t i = hash_word(w) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        word_count *s = &t->slots[i];
        if (!s->word[0]) {
            if (!create)
                return NULL;
            strcpy(s->word, w);
            t->used++;
            return s;
        }
        if (!strcmp(s->word, w))
            return s;
    }
}

static void on_count(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm, (void)src, (void)len;
    const word_count *wc = payload;
    table_find(user, wc->word, 1)->count += wc->count;
}

/* Calls fn(word, arg) for every word of lines[first], lines[first + step], ...;
 * returns the number of words too long to count. */
static uint64_t each_word(const char *text, int first, int step,
                          void (*fn)(const char *, void *), void *arg)
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
        char w[WORD_MAX + 1];
        size_t n = 0;
        for (; isalnum((unsigned char)*p); p++, n++)
            if (n < WORD_MAX)
                w[n] = (char)tolower((unsigned char)*p);
        if (line % step != first)
            continue;
        if (n > WORD_MAX) {
            too_long++;
            continue;
        }
        w[n] = 0;
        fn(w, arg);
    }
    return too_long;
}

typedef struct sender {
    cr_comm *comm;
    int handler;
} sender;

static void send_word(const char *w, void *arg)
{
    sender *s = arg;
    word_count wc = {.count = 1};
    strcpy(wc.word, w); /* the rest of the key stays zero */
    int owner = (int)(hash_word(w) % (uint64_t)cr_comm_size(s->comm));
    cr_async(s->comm, owner, s->handler, &wc, sizeof wc);
}

typedef struct checker {
    table *expect;
    int rank, size;
} checker;

static void count_if_mine(const char *w, void *arg)
{
    checker *c = arg;
    if ((int)(hash_word(w) % (uint64_t)c->size) == c->rank)
        table_find(c->expect, w, 1)->count++;
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
    int rank0, size0, failed, first_failed;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank0);
    MPI_Comm_size(MPI_COMM_WORLD, &size0);
    failed = text ? size0 : rank0;
    MPI_Allreduce(&failed, &first_failed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first_failed < size0) {
        if (first_failed == rank0)
            fprintf(stderr, "wordcount: %s: cannot read the file\n", path ? path : "(text)");
        free(text);
        MPI_Finalize();
        return 2;
    }
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, NULL);
    int rank = cr_comm_rank(comm), size = cr_comm_size(comm);
    table words = {0};
    /* Key: the 24-byte word; rule: sum the 8-byte count after it. */
    cr_dedup_rule sum = {.key_len = sizeof(((word_count *)0)->word), .op = CR_DEDUP_SUM,
                         .type = CR_DEDUP_UINT64};
    sender s = {comm, cr_dedup_register(comm, &(cr_handler_type){.fn = on_count}, &sum, &words)};

    uint64_t too_long = each_word(text, rank, size, send_word, &s);
    cr_barrier(comm);

    /* Check against a sequential count of the words this rank owns. */
    table expect = {0};
    checker c = {&expect, rank, size};
    each_word(text, 0, 1, count_if_mine, &c);
    uint64_t wrong = words.used != expect.used, total = 0, best = 0;
    const char *best_word = "";
    for (size_t i = 0; i < words.cap; i++) {
        word_count *w = &words.slots[i];
        if (!w->word[0])
            continue;
        word_count *e = table_find(&expect, w->word, 0);
        wrong += !e || e->count != w->count;
        total += w->count;
        if (w->count > best || (w->count == best && strcmp(w->word, best_word) < 0))
            best = w->count, best_word = w->word;
    }
    uint64_t sums[4] = {wrong, total, words.used, too_long}, all[4];
    MPI_Allreduce(sums, all, 4, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    /* The most frequent word: the largest count, then the rank that holds it prints. */
    struct { long count; int rank; } mine = {(long)best, rank}, top;
    MPI_Allreduce(&mine, &top, 1, MPI_LONG_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    if (rank == top.rank)
        printf("wordcount: most frequent word '%s', %llu times\n", best_word,
               (unsigned long long)best);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("wordcount: %llu words, %llu distinct, %llu too long; %llu wrong: %s\n",
               (unsigned long long)all[1], (unsigned long long)all[2],
               (unsigned long long)all[3], (unsigned long long)all[0],
               all[0] == 0 ? "exact" : "WRONG");
    free(words.slots);
    free(expect.slots);
    free(text);
    cr_comm_destroy(comm);
    MPI_Finalize();
    return all[0] == 0 ? 0 : 1;
}
