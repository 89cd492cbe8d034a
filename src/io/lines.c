/* The parallel line reader. The plain files are laid end to end and split into P
 * byte ranges; a line belongs to the range that holds its first byte. A rank whose
 * range starts inside a file looks at the byte before it: unless that byte ends a
 * line, the first (partial) line is its left neighbour's, and it starts after the
 * next newline. It reads on past its range's end only to finish its last line. So
 * every line is delivered once, whatever the line lengths and P. */
#include "courier/io.h"

#include "courier/coll.h"
#include "courier/mailbox.h"
#include "io/io_internal.h"

#include "common/fatal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define DEFAULT_READ_BYTES ((size_t)1 << 20)
/* Past its range a rank reads in small steps: only the end of its last line is its. */
#define TAIL_READ_BYTES ((size_t)64 << 10)
#define PREFETCH_AHEAD 4096

void cr_io_opts_init(cr_io_opts *o)
{
    *o = (cr_io_opts){.read_bytes = DEFAULT_READ_BYTES};
}

/* A window on one file: bytes [start, end) of buf are read and not yet delivered;
 * buf[0] is byte `base` of the file. Newlines are found 64 bytes at a time: `bits`
 * has a bit for each newline of buf[block .. block + 64) not yet delivered, and
 * covers the bytes up to `masked` (less than block + 64 while the block is not all
 * read). One byte of buf is always spare for the NUL after a final line. A mapped
 * reader's buf is the file mapped from byte `base` to its end, all of it "read". */
typedef struct reader {
    const char *path;
    int fd;
    io_gunzip *gz;
    char *buf;
    size_t cap, start, end, block, masked, step, max_line;
    uint64_t bits;
    uint64_t base, limit; /* plain files read in `step`s up to limit, then in tails */
    bool eof;
    char *map; /* the mapping (cr_io_opts.unterminated), or NULL */
    size_t map_len;
    uint64_t *read; /* the stats' counter of bytes read */
} reader;

static int reader_grow(reader *r, char *err, size_t errlen)
{
    if (r->max_line && r->end - r->start > r->max_line) {
        cr_set_error(err, errlen, "%s: the line at byte %llu is longer than %zu bytes",
                     r->path, (unsigned long long)(r->base + r->start), r->max_line);
        return -1;
    }
    size_t cap = r->cap * 2;
    char *buf = cap > r->cap ? realloc(r->buf, cap) : NULL;
    if (!buf) {
        cr_set_error(err, errlen, "%s: the line at byte %llu is longer than memory allows "
                     "(%zu bytes held)", r->path, (unsigned long long)(r->base + r->start),
                     r->cap);
        return -1;
    }
    r->buf = buf;
    r->cap = cap;
    return 0;
}

/* Read more bytes after `end`, first moving the undelivered ones to the front. */
static int reader_fill(reader *r, char *err, size_t errlen)
{
    if (r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->base += r->start;
        r->end -= r->start;
        if (r->block < r->start) { /* the bits below start: delivered lines' newlines */
            size_t shift = r->start - r->block;
            r->bits = shift >= 64 ? 0 : r->bits >> shift;
            r->block = r->start;
        }
        r->block -= r->start;
        r->masked -= r->start;
        r->start = 0;
    }
    if (r->end + 1 >= r->cap && reader_grow(r, err, errlen))
        return -1;
    size_t want = r->cap - 1 - r->end;
    uint64_t at = r->base + r->end;
    size_t step = at < r->limit ? r->step : TAIL_READ_BYTES;
    if (at < r->limit && r->limit - at < step)
        step = (size_t)(r->limit - at);
    if (want > step)
        want = step;
    long got;
    if (r->gz) {
        got = io_gunzip_read(r->gz, r->buf + r->end, want, r->path, err, errlen);
        if (got < 0)
            return -1;
    } else {
        do
            got = pread(r->fd, r->buf + r->end, want, (off_t)at);
        while (got < 0 && errno == EINTR);
        if (got < 0) {
            cr_set_error(err, errlen, "%s: read error at byte %llu: %s", r->path,
                         (unsigned long long)at, strerror(errno));
            return -1;
        }
        *r->read += (uint64_t)got;
    }
    r->eof = got == 0;
    r->end += (size_t)got;
    return 0;
}

/* The newlines of the 64 bytes at p, one bit each (SSE2: four 16-byte compares). */
static inline uint64_t newline_bits(const char *p)
{
#ifdef __SSE2__
    const __m128i nl = _mm_set1_epi8('\n');
    uint64_t m = 0;
    for (int i = 0; i < 4; i++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
        m |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, nl)) << (16 * i);
    }
    return m;
#else
    uint64_t m = 0;
    for (int i = 0; i < 64; i++)
        m |= (uint64_t)(p[i] == '\n') << i;
    return m;
#endif
}

/* The index in buf of the next newline not yet delivered, or SIZE_MAX if none has
 * been read. A memchr per line costs more than the line's other work when lines are
 * short (an edge list's are 15 bytes). */
static inline __attribute__((always_inline)) size_t next_newline(reader *r)
{
    for (;;) {
        if (r->bits)
            return r->block + (size_t)__builtin_ctzll(r->bits);
        if (r->masked == r->block + 64) {
            r->block += 64;
            continue;
        }
        if (r->masked == r->end)
            return SIZE_MAX;
        if (r->masked == r->block && r->end - r->block >= 64) {
            r->bits = newline_bits(r->buf + r->block);
            r->masked = r->block + 64;
            continue;
        }
        size_t stop = r->end - r->block < 64 ? r->end : r->block + 64;
        for (size_t i = r->masked; i < stop; i++)
            r->bits |= (uint64_t)(r->buf[i] == '\n') << (i - r->block);
        r->masked = stop;
    }
}

/* The next line: *line (its start in buf) and *len (without "\n"); returns 2 for a
 * line that ends with a newline, 1 for a last line without one, 0 at the end of the
 * file, -1 on an error. */
static inline __attribute__((always_inline)) int reader_next(reader *r, char **line, size_t *len,
                                                             char *err, size_t errlen)
{
    for (;;) {
        size_t nl = next_newline(r);
        if (nl != SIZE_MAX) {
            r->bits &= r->bits - 1;
            *line = r->buf + r->start;
            *len = nl - r->start;
            r->start = nl + 1;
            return 2;
        }
        if (r->eof) {
            if (r->start == r->end)
                return 0;
            *line = r->buf + r->start;
            *len = r->end - r->start;
            r->start = r->end;
            return 1;
        }
        if (reader_fill(r, err, errlen))
            return -1;
    }
}

/* The lines gathered for one call of a run callback (cr_io_read_line_runs). Their
 * text points into the reader's buffer, so a run is handed over before the buffer
 * moves (every refill). */
typedef struct run_buf {
    const char *text[CR_LINE_RUN];
    size_t len[CR_LINE_RUN];
} run_buf;

typedef struct delivery {
    const cr_io_opts *opts;
    size_t comment_len;
    cr_line_fn fn;         /* a call per line, or */
    cr_line_run_fn run_fn; /* a call per run, gathered in `run` */
    run_buf *run;
    void *user;
    cr_io_stats *stats;
} delivery;

uint64_t cr_line_run_offset(const cr_line_run *run, size_t i)
{
    return run->base_offset + (uint64_t)(run->text[i] - run->base);
}

/* What the per-line path reads and counts. Copied into locals of the loops that use
 * it: the NUL each line gets is a char store, after which the compiler must reload
 * anything reachable through a pointer. */
typedef struct sink {
    bool terminate; /* write the NUL after each line (not in a mapping) */
    bool skip_blank;
    const char *comment;
    size_t comment_len;
    size_t count; /* lines gathered in the delivery's run */
    uint64_t lines, bytes;
} sink;

/* Hand the `count` lines gathered in d->run to the run callback. Returns 0, or -1
 * when the callback stopped. */
static int flush_run(const reader *r, const delivery *d, size_t count, char *err, size_t errlen)
{
    run_buf *rb = d->run;
    if (!rb || !count)
        return 0;
    cr_line_run run = {.count = count, .text = rb->text, .len = rb->len, .path = r->path,
                       .base = r->buf, .base_offset = r->base};
    if (d->run_fn(&run, d->user, err, errlen) == 0)
        return 0;
    if (err && errlen && !err[0])
        cr_set_error(err, errlen, "%s: the line callback stopped in the run of lines from byte %llu",
                     r->path, (unsigned long long)cr_line_run_offset(&run, 0));
    return -1;
}

/* One line to the callback (or left out by the filters); `ended`: it ended with a
 * newline. Returns 0, or -1 when the callback stopped. */
static inline __attribute__((always_inline)) int deliver_one(const reader *r, const delivery *d,
                                                             run_buf *rb, sink *k, char *text,
                                                             size_t len, bool ended, char *err,
                                                             size_t errlen)
{
    k->bytes += len + ended;
    if (len > 0 && text[len - 1] == '\r')
        len--;
    if (k->terminate)
        text[len] = '\0';
    if ((k->skip_blank && len == 0) ||
        (k->comment_len && len >= k->comment_len && !memcmp(text, k->comment, k->comment_len)))
        return 0;
    k->lines++;
    if (rb) { /* gathered: one call per CR_LINE_RUN lines */
        rb->text[k->count] = text;
        rb->len[k->count] = len;
        if (++k->count < CR_LINE_RUN)
            return 0;
        k->count = 0;
        return flush_run(r, d, CR_LINE_RUN, err, errlen);
    }
    cr_line line = {.text = text, .len = len, .path = r->path,
                    .offset = r->base + (uint64_t)(text - r->buf)};
    if (d->fn(&line, d->user, err, errlen) == 0)
        return 0;
    if (err && errlen && !err[0])
        cr_set_error(err, errlen, "%s: the line callback stopped at byte %llu", r->path,
                     (unsigned long long)line.offset);
    return -1;
}

/* The lines whose newlines lie in whole 64-byte blocks already read, with the
 * reader's state in locals, which the callback cannot reach, so that they stay in
 * registers: tens of millions of lines go through here. Stops at `stop`, at an
 * error, or where the next block is not all read (reader_next goes on from there). */
static int deliver_whole_blocks(reader *r, uint64_t stop, const delivery *d, sink *ks,
                                char *err, size_t errlen)
{
    char *buf = r->buf;
    size_t start = r->start, block = r->block, masked = r->masked, end = r->end;
    uint64_t bits = r->bits, limit = stop - r->base; /* the caller knows stop > r->base */
    run_buf *rb = d->run;
    sink k = *ks;
    int rc = 0;
    while (start < limit) {
        if (!bits) {
            if (masked != block + 64 || end - masked < 64)
                break;
            block += 64;
            __builtin_prefetch(buf + block + PREFETCH_AHEAD);
            bits = newline_bits(buf + block);
            masked = block + 64;
            continue;
        }
        size_t nl = block + (size_t)__builtin_ctzll(bits);
        bits &= bits - 1;
        char *text = buf + start;
        start = nl + 1;
        if ((rc = deliver_one(r, d, rb, &k, text, nl - (size_t)(text - buf), true, err,
                              errlen)) != 0)
            break;
    }
    r->start = start, r->block = block, r->masked = masked, r->bits = bits;
    *ks = k;
    return rc;
}

/* The lines gathered so far to the run callback (none without one). */
static int hand_over(const reader *r, const delivery *d, sink *k, char *err, size_t errlen)
{
    size_t count = k->count;
    k->count = 0;
    return flush_run(r, d, count, err, errlen);
}

/* Deliver the lines of r that start before byte `stop`: whole blocks on the fast
 * path, and a line at a time through reader_next where a block is partly read (a
 * refill, the end of the file). */
static int deliver_lines(reader *r, uint64_t stop, const delivery *d, char *err, size_t errlen)
{
    sink k = {.terminate = !r->map, .skip_blank = d->opts->skip_blank,
              .comment = d->opts->comment, .comment_len = d->comment_len};
    int rc = 0;
    while (rc == 0 && r->base + r->start < stop) {
        /* a run is handed over before reader_next may refill (and move) the buffer */
        if ((rc = deliver_whole_blocks(r, stop, d, &k, err, errlen)) != 0 ||
            (rc = hand_over(r, d, &k, err, errlen)) != 0 || r->base + r->start >= stop)
            break;
        char *text;
        size_t len;
        int more = reader_next(r, &text, &len, err, errlen);
        if (more <= 0) {
            rc = more;
            break;
        }
        rc = deliver_one(r, d, d->run, &k, text, len, more == 2, err, errlen);
        if (rc == 0)
            rc = hand_over(r, d, &k, err, errlen);
    }
    d->stats->lines += k.lines;
    d->stats->bytes += k.bytes;
    return rc;
}

/* Map the open plain file from byte `at` (rounded down to a page) to its end as it
 * is now, every byte of it "read": with lines left unterminated nothing is written
 * into the text, and the kernel's copy into a buffer, a third of a rank's time on
 * a cached file, is saved. Pages are mapped only as the lines reach them. Returns
 * false where the file cannot be mapped; the caller reads it instead. */
static bool reader_map(reader *r, uint64_t at)
{
    struct stat st;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0 || fstat(r->fd, &st) != 0)
        return false;
    uint64_t base = at - at % (uint64_t)page, size = (uint64_t)st.st_size;
    if (base >= size || size - base > SIZE_MAX)
        return false;
    void *m = mmap(NULL, (size_t)(size - base), PROT_READ, MAP_PRIVATE, r->fd, (off_t)base);
    if (m == MAP_FAILED)
        return false;
    r->map = r->buf = m;
    r->map_len = r->end = (size_t)(size - base);
    r->base = base;
    r->start = r->block = r->masked = (size_t)(at - base);
    r->eof = true;
    return true;
}

/* Lines of `f` that start in bytes [from, to) of it (a .gz file: all of them). */
static int read_file(const io_file *f, uint64_t from, uint64_t to, const delivery *d,
                     char *err, size_t errlen)
{
    reader r = {.path = f->path, .fd = -1, .limit = to, .read = &d->stats->read};
    uint64_t first = from ? from - 1 : 0; /* the byte the share's reading starts at */
    r.step = d->opts->read_bytes ? d->opts->read_bytes : DEFAULT_READ_BYTES;
    r.max_line = d->opts->max_line;
    r.fd = cr_io_open_regular(f->path, err, errlen); /* no longer a regular file? */
    if (r.fd < 0)
        return -1;
    d->stats->files++;
    int rc = 0;
    if (f->gz) {
        r.gz = io_gunzip_open(r.fd);
        if (!r.gz) {
            cr_set_error(err, errlen, "%s: no memory to decompress it", f->path);
            close(r.fd);
            return -1;
        }
        r.fd = -1;
        d->stats->read += f->size;
        to = UINT64_MAX;
        r.limit = UINT64_MAX;
    } else if (!d->opts->unterminated || d->opts->max_line || !reader_map(&r, first)) {
        posix_fadvise(r.fd, (off_t)from, (off_t)(to - from), POSIX_FADV_SEQUENTIAL);
    }
    if (!r.map) {
        r.cap = (r.step < 4096 ? 4096 : r.step) + 1;
        r.buf = malloc(r.cap);
        if (!r.buf) {
            cr_set_error(err, errlen, "%s: no memory for a %zu-byte read buffer", f->path, r.cap);
            rc = -1;
        }
        r.base = first;
    }
    if (rc == 0 && from > 0) {
        /* the line that holds byte from - 1 is the left neighbour's, unless that
         * byte ends it: skip through the first newline at or after it */
        char *skipped;
        size_t len;
        rc = reader_next(&r, &skipped, &len, err, errlen) < 0 ? -1 : 0;
    }
    if (rc == 0)
        rc = deliver_lines(&r, to, d, err, errlen);
    if (r.map) { /* what the lines reached, and the block scanned ahead of them */
        size_t reached = r.masked > r.start ? r.masked : r.start;
        *r.read += r.base + reached - first;
        munmap(r.map, r.map_len);
    } else {
        free(r.buf);
    }
    io_gunzip_close(r.gz);
    if (r.fd >= 0)
        close(r.fd);
    return rc;
}

/* Visit rank `rank`'s parts of the list: its byte range of the plain files and the
 * .gz files k with k % size == rank (whole: to = UINT64_MAX). */
typedef int (*part_fn)(const io_file *f, uint64_t from, uint64_t to, const delivery *d,
                       char *err, size_t errlen);
static int each_part(const io_list *l, int rank, int size, part_fn visit, const delivery *d,
                     char *err, size_t errlen)
{
    uint64_t lo, hi;
    io_share(l->plain_bytes, rank, size, &lo, &hi);
    uint64_t at = 0; /* where the next plain file starts in the concatenation */
    size_t gz_index = 0;
    for (size_t i = 0; i < l->count; i++) {
        const io_file *f = &l->files[i];
        if (f->gz) {
            if (gz_index++ % (size_t)size == (size_t)rank &&
                visit(f, 0, UINT64_MAX, d, err, errlen))
                return -1;
            continue;
        }
        uint64_t from = lo > at ? lo - at : 0, to = hi - at < f->size ? hi - at : f->size;
        if (hi > at && from < to && visit(f, from, to, d, err, errlen))
            return -1;
        at += f->size;
    }
    return 0;
}

/* A file this rank will read can be opened (checked before any line is delivered). */
static int check_part(const io_file *f, uint64_t from, uint64_t to, const delivery *d,
                      char *err, size_t errlen)
{
    (void)from, (void)to, (void)d;
    int fd = open(f->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cr_set_error(err, errlen, "%s: cannot open: %s", f->path, strerror(errno));
        return -1;
    }
    close(fd);
    return 0;
}

static int read_share(const io_list *l, const cr_io_opts *opts, int rank, int size,
                      cr_line_fn fn, cr_line_run_fn run_fn, void *user, cr_io_stats *stats,
                      char *err, size_t errlen)
{
    cr_io_opts defaults;
    if (!opts) {
        cr_io_opts_init(&defaults);
        opts = &defaults;
    }
    cr_io_stats mine = {0};
    delivery d = {.opts = opts, .comment_len = opts->comment ? strlen(opts->comment) : 0,
                  .fn = fn, .run_fn = run_fn, .user = user, .stats = &mine};
    if (run_fn && !(d.run = malloc(sizeof *d.run))) {
        cr_set_error(err, errlen, "no memory for a run of %d lines", CR_LINE_RUN);
        return -1;
    }
    if (err && errlen)
        err[0] = '\0';
    int rc = each_part(l, rank, size, read_file, &d, err, errlen);
    free(d.run);
    if (stats)
        *stats = mine;
    return rc;
}

int cr_io_read_share(const char *const *paths, size_t npaths, const cr_io_opts *opts, int rank,
                     int size, cr_line_fn fn, void *user, cr_io_stats *stats, char *err,
                     size_t errlen)
{
    if (stats)
        *stats = (cr_io_stats){0};
    if (size < 1 || rank < 0 || rank >= size || !fn) {
        cr_set_error(err, errlen, "cr_io_read_share: rank %d of %d ranks, callback %s", rank,
                     size, fn ? "given" : "missing");
        return -1;
    }
    io_list l;
    if (io_list_build(paths, npaths, &l, err, errlen))
        return -1;
    int rc = each_part(&l, rank, size, check_part, NULL, err, errlen);
    if (rc == 0)
        rc = read_share(&l, opts, rank, size, fn, NULL, user, stats, err, errlen);
    io_list_free(&l);
    return rc;
}

/* cr_io_read_lines and cr_io_read_line_runs: one of fn and run_fn is set. */
static int read_lines(cr_comm *comm, const char *const *paths, size_t npaths,
                      const cr_io_opts *opts, cr_line_fn fn, cr_line_run_fn run_fn, void *user,
                      cr_io_stats *stats, char *err, size_t errlen)
{
    if (stats)
        *stats = (cr_io_stats){0};
    io_list l;
    int rc = io_list_build(paths, npaths, &l, err, errlen);
    if (rc == 0)
        rc = each_part(&l, cr_comm_rank(comm), cr_comm_size(comm), check_part, NULL, err, errlen);
    /* the ranks must split the same bytes: a file that grows while they list it
     * would give two ranks one line or none */
    uint64_t sizes[2] = {rc ? 0 : l.plain_bytes, rc ? 0 : UINT64_MAX - l.plain_bytes}, low[2];
    cr_allreduce(comm, sizes, low, 2, CR_UINT64, CR_OP_MIN, NULL);
    if (rc == 0 && (low[0] != l.plain_bytes || UINT64_MAX - low[1] != l.plain_bytes)) {
        cr_set_error(err, errlen, "%s: the input's size differs between ranks (%llu against "
                     "%llu bytes): is it being written?", npaths ? paths[0] : "(no paths)",
                     (unsigned long long)low[0], (unsigned long long)(UINT64_MAX - low[1]));
        rc = -1;
    }
    if (io_agree(comm, rc, err, errlen)) {
        io_list_free(&l);
        return -1;
    }
    rc = read_share(&l, opts, cr_comm_rank(comm), cr_comm_size(comm), fn, run_fn, user, stats,
                    err, errlen);
    io_list_free(&l);
    return io_agree(comm, rc, err, errlen);
}

int cr_io_read_lines(cr_comm *comm, const char *const *paths, size_t npaths,
                     const cr_io_opts *opts, cr_line_fn fn, void *user, cr_io_stats *stats,
                     char *err, size_t errlen)
{
    if (!fn)
        cr_fatal("cr_io_read_lines: no line callback");
    return read_lines(comm, paths, npaths, opts, fn, NULL, user, stats, err, errlen);
}

int cr_io_read_line_runs(cr_comm *comm, const char *const *paths, size_t npaths,
                         const cr_io_opts *opts, cr_line_run_fn fn, void *user,
                         cr_io_stats *stats, char *err, size_t errlen)
{
    if (!fn)
        cr_fatal("cr_io_read_line_runs: no run callback");
    return read_lines(comm, paths, npaths, opts, NULL, fn, user, stats, err, errlen);
}

uint64_t cr_io_line_number(const char *path, uint64_t offset)
{
    gzFile gz = gzopen(path, "rb"); /* reads plain files as they are too */
    if (!gz)
        return 0;
    char buf[1 << 16];
    uint64_t at = 0, line = 1;
    while (at < offset) {
        size_t want = offset - at < sizeof buf ? (size_t)(offset - at) : sizeof buf;
        int got = gzread(gz, buf, (unsigned)want);
        if (got <= 0)
            break;
        for (const char *p = buf; (p = memchr(p, '\n', (size_t)got - (size_t)(p - buf))); p++)
            line++;
        at += (uint64_t)got;
    }
    gzclose(gz);
    return at == offset ? line : 0;
}
