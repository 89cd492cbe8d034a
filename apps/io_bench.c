/* io_bench: what reading and saving cost (docs/io.md).
 *   --mode edges   read a graph file with cr_graph_read_edges: the slowest rank's
 *                  time, and the bytes each rank read from the file system (from
 *                  /proc/self/io) against the file's size;
 *   --mode lines   deliver every line of the inputs with cr_io_read_lines to a
 *                  callback that counts them and their bytes: bytes per second
 *                  per rank;
 *   --mode runs    the same with cr_io_read_line_runs (a call per run of lines);
 *   --mode count   the baseline of lines and runs, timed with the same clock: each
 *                  rank read()s its equal share of the file and counts its
 *                  newlines with memchr, as wc -l does, with nothing per line;
 *   --mode save    a counting set of --keys keys over the ranks, saved to --dir and
 *                  loaded back into an empty one: the time of each, the bytes
 *                  written, and the load checked (keys and counts).
 * Each measurement is repeated --reps times; the median is printed. With
 * --expect-lines N the lines, runs and count modes fail unless every repetition
 * delivered (or counted) exactly N lines. */
#include "cli.h"

#include <courier.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
    "Usage: mpirun -np P io_bench --mode edges|lines|runs|count|save [options] [PATH...]\n"
    "\n"
    "Times reading and saving (docs/io.md). The median of --reps runs is printed.\n"
    "\n"
    "  --mode M         edges: read the graph file PATH with cr_graph_read_edges;\n"
    "                   lines: deliver every line of PATH... with cr_io_read_lines;\n"
    "                   runs: the same in runs of lines (cr_io_read_line_runs);\n"
    "                   count: the baseline, timed alike: each rank read()s its share\n"
    "                   of the one file PATH and counts newlines with memchr;\n"
    "                   save: save a counting set of --keys keys to --dir, load it back\n"
    "  --keys N         save: distinct keys, 8 bytes each, over all ranks (default 10M)\n"
    "  --dir DIR        save: the directory (replaced if it holds a save; default\n"
    "                   io_bench.save)\n"
    "  --read-kb K      lines, runs: KiB asked of the file system per read (default:\n"
    "                   the reader's, 1024)\n"
    "  --unterminated   lines, runs: the lines need no NUL after them\n"
    "                   (cr_io_opts.unterminated: plain files are mapped, not copied)\n"
    "  --expect-lines N lines, runs, count: fail unless exactly N lines were delivered\n"
    "                   (or counted) in every repetition (give wc -l's count)\n"
    "  --reps R         repetitions (default 3)\n";

enum { MODE_EDGES, MODE_LINES, MODE_SAVE, MODE_RUNS, MODE_COUNT };

typedef struct bench_opts {
    int mode;
    uint64_t keys, reps, read_kb;
    int64_t expect_lines; /* -1: not checked */
    bool unterminated;
    const char *dir;
    const char **paths;
    size_t npaths;
    app_shared sh; /* the common flags */
    FILE *csv;     /* --csv, on rank 0 */
} bench_opts;

/* One CSV line of a measurement (the columns of CSV_HEADER). */
#define CSV_HEADER "mode,ranks,items,mib,seconds,load_seconds,most_read,ok"
static void csv_line(const app *a, const bench_opts *o, const char *mode, uint64_t items,
                     double mib, double seconds, double load_seconds, double most_read, int ok)
{
    if (a->rank == 0 && o->csv)
        fprintf(o->csv, "%s,%d,%" PRIu64 ",%.3f,%.6f,%.6f,%.4f,%d\n", mode, a->size, items, mib,
                seconds, load_seconds, most_read, ok);
}

static void parse(app *a, int argc, char **argv, bench_opts *o)
{
    static const char *const modes[] = {"edges", "lines", "save", "runs", "count", NULL};
    *o = (bench_opts){.mode = -1, .keys = 10000000, .reps = 3, .dir = "io_bench.save",
                      .expect_lines = -1};
    app_shared_init(&o->sh);
    static const struct option opts[] = {
        {"mode", required_argument, 0, 'm'}, {"keys", required_argument, 0, 'k'},
        {"dir", required_argument, 0, 'd'},  {"reps", required_argument, 0, 'r'},
        {"read-kb", required_argument, 0, 'b'}, {"unterminated", no_argument, 0, 'u'},
        {"expect-lines", required_argument, 0, 'L'}, APP_LONG_COMMON, {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'm': o->mode = app_parse_choice(a, "--mode", optarg, modes); break;
        case 'k': o->keys = app_parse_u64(a, "--keys", optarg, 1, 1ULL << 34); break;
        case 'd': o->dir = optarg; break;
        case 'r': o->reps = app_parse_u64(a, "--reps", optarg, 1, 1000); break;
        case 'b': o->read_kb = app_parse_u64(a, "--read-kb", optarg, 1, 1 << 20); break;
        case 'u': o->unterminated = true; break;
        case 'L': o->expect_lines = (int64_t)app_parse_u64(a, "--expect-lines", optarg, 0, INT64_MAX); break;
        default: app_other_option(a, ch, optarg, &o->sh, argv);
        }
    }
    if (o->mode < 0)
        app_usage_error(a, "--mode is required (edges, lines, runs, count or save)");
    o->paths = (const char **)argv + optind;
    o->npaths = (size_t)(argc - optind);
    if (o->mode != MODE_SAVE && o->npaths == 0)
        app_usage_error(a, "--mode %s needs a file to read", modes[o->mode]);
    if (o->mode == MODE_EDGES && o->npaths != 1)
        app_usage_error(a, "--mode edges reads one graph file");
    if (o->mode == MODE_COUNT && o->npaths != 1)
        app_usage_error(a, "--mode count reads one file");
    if (o->expect_lines >= 0 && o->mode != MODE_LINES && o->mode != MODE_RUNS &&
        o->mode != MODE_COUNT)
        app_usage_error(a, "--expect-lines goes with --mode lines, runs or count");
    if (o->mode == MODE_SAVE && o->npaths)
        app_usage_error(a, "unexpected argument '%s'", o->paths[0]);
    /* save: two sets' tables (about 43 bytes a key each at their fullest) and the
     * loading ranks' records (16 bytes a key), on this machine's ranks */
    double need = (double)o->keys * (2 * 43 + 16), phys = app_physical_memory();
    if (o->mode == MODE_SAVE && phys > 0 && need > phys)
        app_usage_error(a, "--keys %llu needs about %.1f GiB, more than this machine's %.1f GiB",
                        (unsigned long long)o->keys, need / (1 << 30), phys / (1 << 30));
    o->csv = app_open_csv(a, o->sh.csv, CSV_HEADER);
}

/* Bytes this process has read through read() and pread() (rchar of /proc/self/io). */
static uint64_t bytes_read(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    uint64_t v = 0;
    char line[128];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "rchar: %" SCNu64, &v) == 1)
            break;
    if (f)
        fclose(f);
    return v;
}

static int by_value(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static double median(double *v, uint64_t n)
{
    qsort(v, n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static uint64_t max_over_ranks(uint64_t v)
{
    uint64_t m;
    MPI_Allreduce(&v, &m, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

static uint64_t sum_over_ranks(uint64_t v)
{
    uint64_t s;
    MPI_Allreduce(&v, &s, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return s;
}

static void bench_edges(const app *a, const bench_opts *o)
{
    struct stat st;
    if (stat(o->paths[0], &st) != 0)
        app_error(a, "%s: cannot open", o->paths[0]);
    double *t = app_calloc(a, o->reps, sizeof *t, "the times");
    uint64_t edges = 0, most_read = 0;
    for (uint64_t r = 0; r < o->reps; r++) {
        cr_edge_list l;
        char err[512];
        MPI_Barrier(MPI_COMM_WORLD);
        uint64_t before = bytes_read();
        double t0 = MPI_Wtime();
        int rc = cr_graph_read_edges(o->paths[0], CR_FILE_AUTO, NULL, a->rank, a->size, &l, err,
                                     sizeof err);
        t[r] = app_max_time(MPI_Wtime() - t0);
        most_read = max_over_ranks(bytes_read() - before);
        app_agree(a, rc ? err : NULL);
        edges = sum_over_ranks(l.count);
        cr_graph_edges_free(&l);
    }
    if (a->rank == 0)
        printf("io_bench edges: %d ranks, %s, %.1f MiB, %" PRIu64 " edges: %.4f s (median of %"
               PRIu64 "); the most any rank read: %.3f of the file\n", a->size, o->paths[0],
               (double)st.st_size / (1 << 20), edges, median(t, o->reps), o->reps,
               (double)most_read / (double)st.st_size);
    csv_line(a, o, "edges", edges, (double)st.st_size / (1 << 20), median(t, o->reps), 0,
             (double)most_read / (double)st.st_size, 1);
    free(t);
}

static int count_line(const cr_line *line, void *user, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    uint64_t *n = user;
    n[0]++;
    n[1] += line->len;
    return 0;
}

/* The same count a run at a time: each line's length is still looked at. */
static int count_run(const cr_line_run *run, void *user, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    uint64_t *n = user, bytes = 0;
    for (size_t i = 0; i < run->count; i++)
        bytes += run->len[i];
    n[0] += run->count;
    n[1] += bytes;
    return 0;
}

/* --expect-lines: the same verdict on every rank (lines is a sum over ranks). */
static void check_lines(const app *a, const bench_opts *o, const char *mode, uint64_t lines)
{
    if (o->expect_lines >= 0 && lines != (uint64_t)o->expect_lines)
        app_error(a, "--mode %s delivered %" PRIu64 " lines, not the %" PRId64 " expected",
                  mode, lines, o->expect_lines);
}

/* This rank's newlines in bytes [from, to) of fd, read() in 1 MiB blocks; -1 on a
 * read error. */
static int64_t count_newlines(int fd, off_t from, off_t to, char *buf, size_t len)
{
    int64_t n = 0;
    while (from < to) {
        size_t want = (size_t)(to - from) < len ? (size_t)(to - from) : len;
        ssize_t got = pread(fd, buf, want, from);
        if (got <= 0)
            return -1;
        for (char *p = buf, *end = buf + got; (p = memchr(p, '\n', (size_t)(end - p))); p++)
            n++;
        from += got;
    }
    return n;
}

/* --mode count: the baseline of the lines and runs modes, on the same clock. */
static void bench_count(const app *a, const bench_opts *o)
{
    int fd = open(o->paths[0], O_RDONLY);
    struct stat st;
    char err[512] = "";
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        snprintf(err, sizeof err, "%s: cannot open as a regular file", o->paths[0]);
    app_agree(a, err[0] ? err : NULL);
    size_t len = (size_t)1 << 20;
    char *buf = app_calloc(a, len, 1, "the read buffer");
    double *t = app_calloc(a, o->reps, sizeof *t, "the times");
    off_t from = (off_t)((double)st.st_size * a->rank / a->size);
    off_t to = (off_t)((double)st.st_size * (a->rank + 1) / a->size);
    uint64_t lines = 0;
    for (uint64_t r = 0; r < o->reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        int64_t n = count_newlines(fd, from, to, buf, len);
        t[r] = app_max_time(MPI_Wtime() - t0);
        if (n < 0)
            snprintf(err, sizeof err, "%s: read failed", o->paths[0]);
        app_agree(a, n < 0 ? err : NULL);
        lines = sum_over_ranks((uint64_t)n);
        check_lines(a, o, "count", lines);
    }
    double s = median(t, o->reps);
    if (a->rank == 0)
        printf("io_bench count: %d ranks, %.1f MiB, %" PRIu64 " lines: %.4f s (median of %"
               PRIu64 "), %.1f MiB/s per rank\n", a->size, (double)st.st_size / (1 << 20), lines,
               s, o->reps, (double)st.st_size / a->size / s / (1 << 20));
    csv_line(a, o, "count", lines, (double)st.st_size / (1 << 20), s, 0, 0, 1);
    free(t), free(buf);
    close(fd);
}

static void bench_lines(const app *a, const bench_opts *o, bool runs)
{
    app_comm_flags flags = app_shared_comm_flags(&o->sh);
    flags.stats = o->sh.stats;
    cr_comm *comm = app_comm_create(a, &flags, NULL);
    double *t = app_calloc(a, o->reps, sizeof *t, "the times");
    uint64_t lines = 0, bytes = 0, slowest_bytes = 0;
    cr_io_opts io;
    cr_io_opts_init(&io);
    if (o->read_kb)
        io.read_bytes = (size_t)o->read_kb << 10;
    io.unterminated = o->unterminated;
    for (uint64_t r = 0; r < o->reps; r++) {
        uint64_t n[2] = {0, 0};
        cr_io_stats st;
        char err[512];
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        int rc = runs ? cr_io_read_line_runs(comm, o->paths, o->npaths, &io, count_run, n, &st,
                                             err, sizeof err)
                      : cr_io_read_lines(comm, o->paths, o->npaths, &io, count_line, n, &st,
                                         err, sizeof err);
        t[r] = app_max_time(MPI_Wtime() - t0);
        app_agree(a, rc ? err : NULL);
        lines = sum_over_ranks(n[0]);
        check_lines(a, o, runs ? "runs" : "lines", lines);
        bytes = sum_over_ranks(st.bytes);
        slowest_bytes = max_over_ranks(st.bytes);
    }
    double s = median(t, o->reps);
    if (a->rank == 0)
        printf("io_bench %s: %d ranks, %zu path%s, %.1f MiB, %" PRIu64 " lines: %.4f s "
               "(median of %" PRIu64 "), %.1f MiB/s per rank (the largest share %.1f MiB)\n",
               runs ? "runs" : "lines", a->size, o->npaths, o->npaths == 1 ? "" : "s", (double)bytes / (1 << 20), lines,
               s, o->reps, (double)bytes / a->size / s / (1 << 20),
               (double)slowest_bytes / (1 << 20));
    csv_line(a, o, runs ? "runs" : "lines", lines, (double)bytes / (1 << 20), s, 0,
             bytes ? (double)slowest_bytes / (double)bytes : 0, 1);
    free(t);
    app_comm_destroy(comm);
}

static void sum_counts(const void *key, uint64_t count, void *user)
{
    uint64_t k;
    memcpy(&k, key, 8);
    uint64_t *s = user;
    s[0]++;
    s[1] += count == 1 + k % 3;
}

static void bench_save(const app *a, const bench_opts *o)
{
    app_comm_flags flags = app_shared_comm_flags(&o->sh);
    flags.stats = o->sh.stats;
    cr_comm *comm = app_comm_create(a, &flags, NULL);
    char err[512];
    cr_counting_set *cs = cr_counting_set_create(comm, 8, err, sizeof err);
    cr_counting_set_reserve(cs, o->keys);
    for (uint64_t k = (uint64_t)a->rank; k < o->keys; k += (uint64_t)a->size)
        cr_counting_set_add(cs, &k, 1 + k % 3);
    cr_barrier(comm);
    /* the adds that wait on their owners (docs/containers.md) applied now: the save
     * is timed on a set that is built, not while it finishes building */
    (void)cr_counting_set_local_size(cs);
    double *ts = app_calloc(a, o->reps, sizeof *ts, "the times");
    double *tl = app_calloc(a, o->reps, sizeof *tl, "the times");
    uint64_t loaded[2] = {0, 0};
    for (uint64_t r = 0; r < o->reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        int rc = cr_counting_set_save(cs, o->dir, CR_SAVE_OVERWRITE, err, sizeof err);
        ts[r] = app_max_time(MPI_Wtime() - t0);
        app_agree(a, rc ? err : NULL);
        cr_counting_set *back = cr_counting_set_create(comm, 8, err, sizeof err);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        rc = cr_counting_set_load(back, o->dir, err, sizeof err);
        tl[r] = app_max_time(MPI_Wtime() - t0);
        app_agree(a, rc ? err : NULL);
        uint64_t s[2] = {0, 0};
        cr_counting_set_for_all(back, sum_counts, s);
        loaded[0] = sum_over_ranks(s[0]);
        loaded[1] = sum_over_ranks(s[1]);
        cr_counting_set_destroy(back);
    }
    double bytes = (double)o->keys * 16;
    double save = median(ts, o->reps), load = median(tl, o->reps);
    bool ok = loaded[0] == o->keys && loaded[1] == o->keys;
    if (a->rank == 0)
        printf("io_bench save: %d ranks, %" PRIu64 " keys, %.1f MiB of records: save %.4f s "
               "(%.1f MiB/s), load %.4f s (%.1f MiB/s) (medians of %" PRIu64 "); %s\n", a->size,
               o->keys, bytes / (1 << 20), save, bytes / save / (1 << 20), load,
               bytes / load / (1 << 20), o->reps,
               ok ? "loaded: every key with its count" : "WRONG: the load differs");
    csv_line(a, o, "save", o->keys, bytes / (1 << 20), save, load, 0, ok);
    free(ts);
    free(tl);
    cr_counting_set_destroy(cs);
    app_comm_destroy(comm);
    if (!ok) {
        if (o->csv)
            fclose(o->csv);
        MPI_Finalize();
        exit(1);
    }
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "io_bench", usage, &argc, &argv);
    bench_opts o;
    parse(&a, argc, argv, &o);
    if (o.mode == MODE_EDGES)
        bench_edges(&a, &o);
    else if (o.mode == MODE_LINES || o.mode == MODE_RUNS)
        bench_lines(&a, &o, o.mode == MODE_RUNS);
    else if (o.mode == MODE_COUNT)
        bench_count(&a, &o);
    else
        bench_save(&a, &o);
    if (o.csv)
        fclose(o.csv);
    MPI_Finalize();
    return 0;
}
