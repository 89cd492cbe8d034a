/* The parallel line reader (include/courier/io.h) under mpirun: every line of every
 * input delivered exactly once, checked by the count and a checksum of the lines
 * against a sequential read done here with independent code; lines that begin or
 * end exactly at a rank's boundary; CRLF; no final newline; a line over 1 MiB;
 * more ranks than lines; many small files and a directory; a .gz file; comments
 * and blank lines; errors agreed by every rank before any line is delivered. */
#include "harness.h"

#include <courier.h>

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static char dir[256];

typedef struct sums {
    uint64_t lines, hash, bytes;
} sums;

static uint64_t line_hash(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull ^ len;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h * 0x9e3779b97f4a7c15ull;
}

static void add_line(sums *s, const char *text, size_t len)
{
    s->lines++;
    s->hash += line_hash(text, len);
    s->bytes += len;
}

/* The sequential reference: the whole text in memory, split at every "\n"; a final
 * piece without "\n" is a line if it is not empty; a "\r" before the end is not
 * part of the line. */
static void reference_text(const char *text, size_t n, sums *s)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && text[i] != '\n')
            continue;
        if (i == n && start == n)
            break;
        size_t len = i - start;
        if (len > 0 && text[start + len - 1] == '\r')
            len--;
        add_line(s, text + start, len);
        start = i + 1;
    }
}

static char *slurp(const char *path, size_t *n)
{
    gzFile f = gzopen(path, "rb");
    size_t cap = 1 << 16;
    char *buf = malloc(cap);
    *n = 0;
    int got;
    while ((got = gzread(f, buf + *n, (unsigned)(cap - *n))) > 0) {
        *n += (size_t)got;
        if (*n == cap)
            buf = realloc(buf, cap *= 2);
    }
    gzclose(f);
    return buf;
}

static void reference(const char *const *paths, size_t n, sums *s)
{
    *s = (sums){0};
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        stat(paths[i], &st);
        if (S_ISDIR(st.st_mode)) {
            struct dirent **names;
            int k = scandir(paths[i], &names, NULL, alphasort);
            for (int j = 0; j < k; j++) {
                if (names[j]->d_name[0] != '.') {
                    char child[512];
                    snprintf(child, sizeof child, "%s/%s", paths[i], names[j]->d_name);
                    const char *one = child;
                    sums part;
                    reference(&one, 1, &part);
                    s->lines += part.lines, s->hash += part.hash, s->bytes += part.bytes;
                }
                free(names[j]);
            }
            free(names);
            continue;
        }
        size_t len;
        char *text = slurp(paths[i], &len);
        reference_text(text, len, s);
        free(text);
    }
}

/* Whether the read asked for a NUL after each line (not cr_io_opts.unterminated). */
static bool want_nul = true;

static int collect(const cr_line *line, void *user, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    if (want_nul && line->text[line->len] != '\0')
        return 1;
    add_line(user, line->text, line->len);
    return 0;
}

/* The same a run at a time; the lines of a run must lie in file order and their
 * offsets name where they start (a line's offset past the previous line's end). */
static int collect_run(const cr_line_run *run, void *user, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    if (run->count < 1 || run->count > CR_LINE_RUN)
        return 1;
    for (size_t i = 0; i < run->count; i++) {
        if (want_nul && run->text[i][run->len[i]] != '\0')
            return 1;
        if (i && cr_line_run_offset(run, i) <= cr_line_run_offset(run, i - 1) + run->len[i - 1])
            return 1;
        add_line(user, run->text[i], run->len[i]);
    }
    return 0;
}

static void check_same(const sums *got, const sums *want, const char *what)
{
    uint64_t lines = sum_all(got->lines), hash = sum_all(got->hash),
             bytes = sum_all(got->bytes);
    CHECK(lines == want->lines, "%s: %llu lines delivered, %llu in the files", what,
          (unsigned long long)lines, (unsigned long long)want->lines);
    CHECK(hash == want->hash && bytes == want->bytes, "%s: the lines' checksum differs "
          "(a line cut, doubled or lost)", what);
}

static void path_of(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

static void write_file(const char *name, const char *text, size_t len)
{
    char path[512];
    path_of(path, sizeof path, name);
    FILE *f = fopen(path, "wb");
    fwrite(text, 1, len, f);
    fclose(f);
}

/* Lines of random lengths 0..max (some CRLF), from a seed. */
static char *random_text(uint64_t seed, size_t bytes, size_t max, size_t *len)
{
    char *t = malloc(bytes + 1);
    size_t n = 0;
    uint64_t x = seed;
    while (n < bytes) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        size_t l = (size_t)(x >> 33) % (max + 1);
        for (size_t i = 0; i < l && n < bytes; i++)
            t[n++] = (char)('a' + (x >> (i % 50)) % 26);
        if (n < bytes && (x >> 20) % 7 == 0)
            t[n++] = '\r';
        if (n < bytes)
            t[n++] = '\n';
    }
    *len = n;
    return t;
}

/* Rank 0 writes the inputs; every rank learns the directory. */
static void make_inputs(void)
{
    if (test_rank == 0) {
        snprintf(dir, sizeof dir, "/tmp/courier-io-XXXXXX");
        if (!mkdtemp(dir))
            dir[0] = '\0';
        write_file("empty.txt", "", 0);
        write_file("one.txt", "hello\n", 6);
        write_file("crlf.txt", "a b\r\nc d\r\n\r\ne f\r\n", 17);
        write_file("nofinal.txt", "first\nsecond\nthird", 18);
        size_t n;
        char *t = random_text(7, 200000, 120, &n);
        write_file("many.txt", t, n);
        char path[512];
        path_of(path, sizeof path, "many.txt.gz");
        gzFile gz = gzopen(path, "wb");
        gzwrite(gz, t, (unsigned)n);
        gzclose(gz);
        free(t);
        /* a line of 1.5 MiB between short ones */
        size_t big = (3u << 19);
        char *l = malloc(big + 64);
        size_t k = (size_t)sprintf(l, "short\nshort two\n");
        memset(l + k, 'x', big);
        k += big;
        k += (size_t)sprintf(l + k, "\nafter\n");
        write_file("long.txt", l, k);
        free(l);
        path_of(path, sizeof path, "small");
        mkdir(path, 0700);
        for (int i = 0; i < 60; i++) {
            char name[64], text[64];
            snprintf(name, sizeof name, "small/part-%03d", i);
            int len = snprintf(text, sizeof text, "%d\nline %d\n%s", i, i, i % 3 ? "end\n" : "");
            write_file(name, text, (size_t)len);
        }
        write_file("small/.hidden", "not read\n", 9);
        write_file("comments.txt", "# head\nx 1\n\n# mid\n%% other\ny 2\n", 31);
        write_file("stop.txt", "ok\nok\nSTOP here\nok\n", 19);
    }
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
}

/* A file of `total` bytes where each rank boundary total*r/P is a line start (the
 * byte before it a newline) or, with at_newline, itself a newline. */
static void make_boundary_file(const char *name, size_t total, bool at_newline)
{
    if (test_rank == 0) {
        size_t n;
        char *t = random_text(11 + at_newline, total, 40, &n);
        for (size_t i = 0; i < total; i++)
            if (t[i] == '\n' || t[i] == '\r')
                t[i] = 'q'; /* only the newlines placed below, and a few others */
        for (size_t i = 97; i < total; i += 97)
            t[i] = '\n';
        for (int r = 1; r < test_size; r++) {
            size_t b = total * (size_t)r / (size_t)test_size;
            t[at_newline ? b : b - 1] = '\n';
        }
        write_file(name, t, total);
        free(t);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void read_and_check(cr_comm *comm, const char *const *names, size_t n,
                           const cr_io_opts *opts, const char *what)
{
    char paths[16][512];
    const char *p[16];
    for (size_t i = 0; i < n; i++) {
        path_of(paths[i], sizeof paths[i], names[i]);
        p[i] = paths[i];
    }
    sums want, got = {0}, share = {0};
    reference(p, n, &want);
    want_nul = !opts || !opts->unterminated;
    char err[256];
    cr_io_stats st;
    int rc = cr_io_read_lines(comm, p, n, opts, collect, &got, &st, err, sizeof err);
    CHECK(rc == 0, "%s: %s", what, err);
    if (!opts || (!opts->comment && !opts->skip_blank))
        check_same(&got, &want, what);
    CHECK(st.lines == got.lines, "%s: stats say %llu lines, %llu delivered", what,
          (unsigned long long)st.lines, (unsigned long long)got.lines);
    rc = cr_io_read_share(p, n, opts, test_rank, test_size, collect, &share, NULL, err,
                          sizeof err);
    CHECK(rc == 0, "%s (share): %s", what, err);
    if (!opts || (!opts->comment && !opts->skip_blank))
        check_same(&share, &want, what);
    /* in runs: the same lines on the same rank */
    sums runs = {0};
    cr_io_stats rst;
    rc = cr_io_read_line_runs(comm, p, n, opts, collect_run, &runs, &rst, err, sizeof err);
    CHECK(rc == 0, "%s (runs): %s", what, err);
    CHECK(runs.lines == got.lines && runs.hash == got.hash && runs.bytes == got.bytes,
          "%s (runs): rank %d got %llu lines in runs, %llu one by one, or other lines", what,
          test_rank, (unsigned long long)runs.lines, (unsigned long long)got.lines);
    CHECK(rst.lines == st.lines && rst.bytes == st.bytes && rst.read == st.read,
          "%s (runs): the statistics differ from those of cr_io_read_lines", what);
}

static cr_comm *new_comm(void)
{
    return cr_comm_create(MPI_COMM_WORLD, NULL);
}

static void test_each_file(void **state)
{
    (void)state;
    cr_comm *comm = new_comm();
    static const char *const each[] = {"empty.txt", "one.txt", "crlf.txt", "nofinal.txt",
                                       "many.txt", "many.txt.gz", "long.txt", "small"};
    for (size_t i = 0; i < sizeof each / sizeof *each; i++)
        read_and_check(comm, &each[i], 1, NULL, each[i]);
    cr_comm_destroy(comm);
    verdict();
}

static void test_many_at_once(void **state)
{
    (void)state;
    cr_comm *comm = new_comm();
    static const char *const all[] = {"one.txt", "small", "many.txt.gz", "empty.txt",
                                      "nofinal.txt", "many.txt", "crlf.txt", "long.txt",
                                      "many.txt.gz", "one.txt"};
    read_and_check(comm, all, sizeof all / sizeof *all, NULL, "ten inputs");
    cr_io_opts o;
    cr_io_opts_init(&o);
    o.read_bytes = 100; /* lines longer than a read, reads ending mid-line */
    read_and_check(comm, all, sizeof all / sizeof *all, &o, "ten inputs, 100-byte reads");
    cr_comm_destroy(comm);
    verdict();
}

/* Lines left unterminated: plain files are mapped, not read into a buffer; the same
 * lines on the same ranks, at the boundaries too (a mapped share that began at its
 * first byte rather than the byte before would deliver a line twice). */
static void test_unterminated(void **state)
{
    (void)state;
    cr_comm *comm = new_comm();
    cr_io_opts o;
    cr_io_opts_init(&o);
    o.unterminated = true;
    static const char *const each[] = {"empty.txt", "one.txt", "crlf.txt", "nofinal.txt",
                                       "many.txt", "many.txt.gz", "long.txt", "small"};
    for (size_t i = 0; i < sizeof each / sizeof *each; i++)
        read_and_check(comm, &each[i], 1, &o, each[i]);
    static const char *const all[] = {"one.txt", "small", "many.txt.gz", "empty.txt",
                                      "nofinal.txt", "many.txt", "crlf.txt", "long.txt",
                                      "many.txt.gz", "one.txt"};
    read_and_check(comm, all, sizeof all / sizeof *all, &o, "ten inputs, unterminated");
    make_boundary_file("starts.txt", 20011, false);
    make_boundary_file("ends.txt", 20011, true);
    static const char *const starts[] = {"starts.txt"}, *const ends[] = {"ends.txt"};
    read_and_check(comm, starts, 1, &o, "a line starting at each boundary, unterminated");
    read_and_check(comm, ends, 1, &o, "a newline at each boundary, unterminated");
    o.max_line = 1u << 21; /* read into a buffer: the NUL is there all the same */
    read_and_check(comm, ends, 1, &o, "a newline at each boundary, unterminated, max_line");
    cr_comm_destroy(comm);
    verdict();
}

static void test_boundaries(void **state)
{
    (void)state;
    cr_comm *comm = new_comm();
    make_boundary_file("starts.txt", 20011, false);
    make_boundary_file("ends.txt", 20011, true);
    static const char *const starts[] = {"starts.txt"}, *const ends[] = {"ends.txt"};
    cr_io_opts o;
    cr_io_opts_init(&o);
    for (size_t step = 1; step <= 4096; step *= 8) {
        o.read_bytes = step;
        read_and_check(comm, starts, 1, &o, "a line starting at each boundary");
        read_and_check(comm, ends, 1, &o, "a newline at each boundary");
    }
    cr_comm_destroy(comm);
    verdict();
}

static int count_x(const cr_line *line, void *user, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    uint64_t *n = user;
    n[0]++;
    n[1] += line->len && (line->text[0] == 'x' || line->text[0] == 'y');
    return 0;
}

static void test_comments_and_blanks(void **state)
{
    (void)state;
    cr_comm *comm = new_comm();
    char path[512];
    path_of(path, sizeof path, "comments.txt");
    const char *p = path;
    cr_io_opts o;
    cr_io_opts_init(&o);
    o.comment = "#";
    o.skip_blank = true;
    uint64_t n[2] = {0, 0};
    char err[256];
    CHECK(cr_io_read_lines(comm, &p, 1, &o, count_x, n, NULL, err, sizeof err) == 0, "%s", err);
    CHECK(sum_all(n[0]) == 3 && sum_all(n[1]) == 2, "comments and blank lines: %llu lines "
          "(want x, %%%% and y)", (unsigned long long)sum_all(n[0]));
    cr_comm_destroy(comm);
    verdict();
}

static int never(const cr_line *line, void *user, char *err, size_t errlen)
{
    (void)line, (void)err, (void)errlen;
    (*(uint64_t *)user)++;
    return 0;
}

/* The same message on every rank: compared through its checksum. */
static void check_agreed(const char *err, const char *needle, const char *what)
{
    uint64_t h = line_hash(err, strlen(err)), lo, hi;
    MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo == hi, "%s: the ranks report different errors (mine: %s)", what, err);
    CHECK(strstr(err, needle) != NULL, "%s: the error '%s' does not name '%s'", what, err,
          needle);
    CHECK(strchr(err, '\n') == NULL, "%s: the error is not one line", what);
}

static void expect_refused(cr_comm *comm, const char *const *paths, size_t n,
                           const char *needle, const char *what)
{
    uint64_t delivered = 0;
    char err[256] = "";
    int rc = cr_io_read_lines(comm, paths, n, NULL, never, &delivered, NULL, err, sizeof err);
    CHECK(rc == -1, "%s: accepted", what);
    CHECK(sum_all(delivered) == 0, "%s: %llu lines delivered before the error", what,
          (unsigned long long)sum_all(delivered));
    check_agreed(err, needle, what);
}

static void test_refused_before_reading(void **state)
{
    (void)state;
    cr_comm *comm = new_comm();
    char many[512], missing[512], small[512];
    path_of(many, sizeof many, "many.txt");
    path_of(missing, sizeof missing, "no-such-file");
    path_of(small, sizeof small, "small");
    const char *a[] = {many, missing};
    expect_refused(comm, a, 2, "no-such-file", "a missing file after a good one");
    const char *b[] = {small, "/dev/zero"};
    expect_refused(comm, b, 2, "/dev/zero", "/dev/zero");
    const char *c[] = {many, ""};
    expect_refused(comm, c, 2, "empty", "an empty path");
    /* a file only the owner of its bytes would open: readable by none here unless
     * root, so checked only where the mode bites */
    char locked[512];
    path_of(locked, sizeof locked, "locked.txt");
    if (test_rank == 0) {
        write_file("locked.txt", "secret\n", 7);
        chmod(locked, 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (access(locked, R_OK) != 0) {
        const char *d[] = {many, locked};
        expect_refused(comm, d, 2, "locked.txt", "an unreadable file");
    }
    cr_comm_destroy(comm);
    verdict();
}

static int stop_at(const cr_line *line, void *user, char *err, size_t errlen)
{
    (void)user;
    if (line->len >= 4 && !memcmp(line->text, "STOP", 4)) {
        snprintf(err, errlen, "%s:%llu: stopped here", line->path,
                 (unsigned long long)cr_io_line_number(line->path, line->offset));
        return 1;
    }
    return 0;
}

static int stop_in_run(const cr_line_run *run, void *user, char *err, size_t errlen)
{
    (void)user;
    for (size_t i = 0; i < run->count; i++)
        if (run->len[i] >= 4 && !memcmp(run->text[i], "STOP", 4)) {
            snprintf(err, errlen, "%s:%llu: stopped here", run->path,
                     (unsigned long long)cr_io_line_number(run->path,
                                                           cr_line_run_offset(run, i)));
            return 1;
        }
    return 0;
}

static void test_callback_error_agreed(void **state)
{
    (void)state;
    cr_comm *comm = new_comm();
    char path[512];
    path_of(path, sizeof path, "stop.txt");
    const char *p = path;
    char err[256] = "";
    CHECK(cr_io_read_lines(comm, &p, 1, NULL, stop_at, NULL, NULL, err, sizeof err) == -1,
          "the callback's error was not returned");
    check_agreed(err, "stop.txt:3: stopped here", "a callback's error on one rank");
    err[0] = '\0';
    CHECK(cr_io_read_line_runs(comm, &p, 1, NULL, stop_in_run, NULL, NULL, err, sizeof err) == -1,
          "the run callback's error was not returned");
    check_agreed(err, "stop.txt:3: stopped here", "a run callback's error on one rank");
    cr_comm_destroy(comm);
    verdict();
}

/* Lines of a damaged copy of many.txt.gz: each must be the next line of many.txt
 * whole (a line cut by the damage must not be delivered). */
typedef struct same_lines {
    FILE *original;
    uint64_t lines, wrong;
} same_lines;

static int compare_line(const cr_line *line, void *user, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    same_lines *s = user;
    char want[4096];
    s->lines++;
    size_t n = fgets(want, sizeof want, s->original) ? strcspn(want, "\n") : SIZE_MAX;
    if (n != SIZE_MAX && n > 0 && want[n - 1] == '\r') /* the reader takes "\r\n" as an end */
        n--;
    if (n != line->len || memcmp(want, line->text, line->len))
        s->wrong++;
    return 0;
}

static void expect_damaged(cr_comm *comm, const char *name, const char *needle, const char *what)
{
    char path[512], many[512], err[256] = "";
    path_of(path, sizeof path, name);
    path_of(many, sizeof many, "many.txt");
    same_lines s = {.original = fopen(many, "r")};
    CHECK(s.original != NULL, "%s: cannot open many.txt", what);
    const char *p = path;
    int rc = cr_io_read_lines(comm, &p, 1, NULL, compare_line, &s, NULL, err, sizeof err);
    fclose(s.original);
    CHECK(rc == -1, "%s: accepted (%llu lines)", what, (unsigned long long)sum_all(s.lines));
    CHECK(sum_all(s.wrong) == 0, "%s: %llu lines delivered that are not whole lines of the "
          "text", what, (unsigned long long)sum_all(s.wrong));
    check_agreed(err, needle, what);
}

/* A .gz file cut short, with bytes appended, or not gzip at all: refused, and no
 * line of it reaches the callback cut; two members end to end are one text. */
static void test_damaged_gz(void **state)
{
    (void)state;
    cr_comm *comm = new_comm();
    char many[512];
    path_of(many, sizeof many, "many.txt.gz");
    if (test_rank == 0) {
        char cmd[2200];
        snprintf(cmd, sizeof cmd, "cd '%s' && head -c $(( $(stat -c %%s many.txt.gz) / 2 )) "
                 "many.txt.gz > cut.gz && cp many.txt.gz trailing.gz && printf 'junk\\n' >> "
                 "trailing.gz && cp many.txt.gz zeros.gz && head -c 16 /dev/zero >> zeros.gz && "
                 "cp many.txt plain.gz && seq 1 5000 | gzip > seq.gz && cat seq.gz seq.gz > twice.gz",
                 dir);
        CHECK(system(cmd) == 0, "could not make the damaged files");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    expect_damaged(comm, "cut.gz", "cut.gz: the gzip data ends early", "a .gz cut short");
    expect_damaged(comm, "trailing.gz", "trailing.gz: data that is not gzip after the "
                   "compressed stream", "a .gz with bytes appended");
    expect_damaged(comm, "zeros.gz", "zeros.gz: data that is not gzip after", "a .gz with "
                   "zeros appended");
    expect_damaged(comm, "plain.gz", "plain.gz: not gzip data", "plain text named .gz");
    char twice[512], seq[512];
    path_of(twice, sizeof twice, "twice.gz");
    path_of(seq, sizeof seq, "seq.gz");
    uint64_t once = 0, two = 0;
    const char *a = seq, *b = twice;
    char err[256] = "";
    CHECK(cr_io_read_lines(comm, &a, 1, NULL, never, &once, NULL, err, sizeof err) == 0,
          "seq.gz: %s", err);
    CHECK(cr_io_read_lines(comm, &b, 1, NULL, never, &two, NULL, err, sizeof err) == 0,
          "twice.gz: %s", err);
    CHECK(sum_all(two) == 2 * sum_all(once) && sum_all(once) == 5000,
          "two members: %llu lines, one: %llu", (unsigned long long)sum_all(two),
          (unsigned long long)sum_all(once));
    cr_comm_destroy(comm);
    verdict();
}

static void test_line_number(void **state)
{
    (void)state;
    char path[512];
    path_of(path, sizeof path, "nofinal.txt");
    CHECK(cr_io_line_number(path, 0) == 1 && cr_io_line_number(path, 6) == 2 &&
          cr_io_line_number(path, 13) == 3, "line numbers of nofinal.txt");
    path_of(path, sizeof path, "many.txt.gz");
    CHECK(cr_io_line_number(path, 0) == 1, "line number in a .gz file");
    verdict();
}

static void remove_inputs(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank == 0 && dir[0]) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", dir);
    }
}

static int setup(void **state)
{
    (void)state;
    make_inputs();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    remove_inputs();
    return 0;
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_each_file, setup),
        cmocka_unit_test(test_many_at_once),
        cmocka_unit_test(test_boundaries),
        cmocka_unit_test(test_unterminated),
        cmocka_unit_test(test_comments_and_blanks),
        cmocka_unit_test(test_refused_before_reading),
        cmocka_unit_test(test_callback_error_agreed),
        cmocka_unit_test(test_damaged_gz),
        cmocka_unit_test_teardown(test_line_number, teardown),
    };
    return RUN_MPI_TESTS(argc, argv, tests);
}
