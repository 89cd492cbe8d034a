/* Word count of text files with the parallel line reader and a distributed counting
 * set. The files (or directories) named on the command line are split among the
 * ranks by bytes (cr_io_read_lines): each rank reads about 1/P of them and inserts
 * the words of its lines; inserts of one word that meet in a send buffer are added
 * together on the way. Rank 0 prints the 10 most frequent words.
 *
 *   scripts/mpirun.sh -np 3 build/examples/wordcount README.md docs
 *
 * A word is a maximal run of ASCII letters, digits and '_', case kept, of at most 31
 * bytes (longer ones are counted apart and reported). The check: the counts in the
 * set add up to the words the ranks read. */
#include <courier.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORD_BYTES 32 /* the key: the word, zero-padded */
#define TOP 10

typedef struct counter {
    cr_counting_set *words;
    uint64_t read, too_long;
} counter;

static int in_word(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_';
}

/* The line reader's callback: every word of one line into the counting set. */
static int count_line(const cr_line *line, void *user, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    counter *c = user;
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
        if (n >= WORD_BYTES) {
            c->too_long++;
            continue;
        }
        char key[WORD_BYTES] = {0};
        memcpy(key, w, n);
        cr_counting_set_insert(c->words, key);
        c->read++;
    }
    return 0;
}

static void add_count(const void *key, uint64_t count, void *user)
{
    (void)key;
    *(uint64_t *)user += count;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np P wordcount FILE|DIRECTORY...\n");
        MPI_Finalize();
        return 2;
    }
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, NULL);
    char err[256];
    counter c = {.words = cr_counting_set_create(comm, WORD_BYTES, err, sizeof err)};
    if (!c.words) {
        fprintf(stderr, "wordcount: %s\n", err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* count_line goes by each line's length and needs no NUL after it: the reader may
     * then map the files instead of copying them. Collective: every rank gets the
     * same verdict, so every rank stops together. */
    cr_io_opts io;
    cr_io_opts_init(&io);
    io.unterminated = true;
    int rc = cr_io_read_lines(comm, (const char *const *)argv + 1, (size_t)argc - 1, &io,
                              count_line, &c, NULL, err, sizeof err);
    if (rc != 0) {
        if (rank == 0)
            fprintf(stderr, "wordcount: %s\n", err);
        cr_counting_set_destroy(c.words);
        cr_comm_destroy(comm);
        MPI_Finalize();
        return 1;
    }
    char top[TOP][WORD_BYTES];
    uint64_t counts[TOP];
    size_t ntop = cr_counting_set_top_k(c.words, TOP, top, counts); /* a barrier first */
    uint64_t counted = 0, distinct = cr_counting_set_size(c.words);
    cr_counting_set_for_all(c.words, add_count, &counted);
    uint64_t mine[3] = {c.read, c.too_long, counted}, all[3];
    MPI_Allreduce(mine, all, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("wordcount: the %zu most frequent words:\n", ntop);
        for (size_t i = 0; i < ntop; i++)
            printf("  %8llu  %s\n", (unsigned long long)counts[i], top[i]);
        printf("wordcount: %llu words read, %llu counted, %llu distinct, %llu longer than %d "
               "bytes: %s\n", (unsigned long long)all[0], (unsigned long long)all[2],
               (unsigned long long)distinct, (unsigned long long)all[1], WORD_BYTES - 1,
               all[0] == all[2] ? "the counts add up" : "WRONG");
    }
    cr_counting_set_destroy(c.words);
    cr_comm_destroy(comm);
    MPI_Finalize();
    return all[0] == all[2] ? 0 : 1;
}
