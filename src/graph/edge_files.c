/* Edge-list files: text, Courier's binary form, and the Graph500 reference's dump.
 * Every rank reads its own share; no MPI here (cr_graph_build agrees on the vertex
 * count). A malformed file gives the same one-line error on every rank. */
#include "graph/graph_internal.h"

#include "common/fatal.h"
#include "common/number.h"
#include "courier/io.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static const char magic[8] = {'C', 'R', 'G', 'R', 'A', 'P', 'H', '1'};
#define BIN_HEADER 32 /* magic, edges, flags, vertices */
#define BIN_WEIGHTED 1u

static void note_vertex(cr_edge_list *out, uint64_t u, uint64_t v)
{
    uint64_t top = (u > v ? u : v) + 1;
    if (top > out->nvertices)
        out->nvertices = top;
}

/* Where a reader's edges go: kept in the list, or handed over in chunks. */
typedef struct edge_sink {
    cr_edge_list *list;
    size_t chunk; /* 0: keep them all */
    graph_chunk_fn fn;
    void *user;
} edge_sink;

static int sink_flush(edge_sink *s, char *err, size_t errlen)
{
    if (!s->chunk || !s->list->count)
        return 0;
    int rc = s->fn(s->user, s->list, err, errlen);
    s->list->count = 0;
    return rc;
}

static int sink_edge(edge_sink *s, uint64_t u, uint64_t v, const float *w, char *err,
                     size_t errlen)
{
    cr_edge_list_push(s->list, u, v, w);
    return s->chunk && s->list->count == s->chunk ? sink_flush(s, err, errlen) : 0;
}

/* Room for `count` edges at once (a chunk's at most). */
static void sink_reserve(edge_sink *s, size_t count, bool weighted)
{
    cr_edge_list_reserve(s->list, s->chunk && s->chunk < count ? s->chunk : count, weighted);
}

/* A vertex id: decimal digits after spaces or tabs, below 2^62. By hand rather than
 * strtoull, which took 40% of reading a large edge list (locale, bases, signs). */
static bool parse_id(const char **s, uint64_t *out)
{
    const char *p = *s;
    while (*p == ' ' || *p == '\t')
        p++;
    if ((unsigned)(*p - '0') > 9)
        return false;
    uint64_t v = 0;
    int digits = 0;
    for (; (unsigned)(*p - '0') <= 9; p++, digits++) {
        if (digits == 19) /* 19 digits cannot overflow 64 bits; more is too large */
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (v >= CR_GRAPH_MAX_VERTICES)
        return false;
    *s = p;
    *out = v;
    return true;
}

/* The start of a bad line for an error message: printable ASCII as it is, anything
 * else (binary garbage, terminal escapes) as \xNN, cut after 40 input bytes. */
static void quote_line(const char *line, char *out, size_t outlen)
{
    size_t o = 0;
    for (size_t i = 0; line[i] && line[i] != '\n' && line[i] != '\r' && o + 8 < outlen; i++) {
        unsigned char ch = (unsigned char)line[i];
        if (i == 40) {
            o += (size_t)snprintf(out + o, outlen - o, "...");
            break;
        }
        if (ch >= 0x20 && ch < 0x7f && ch != '\\')
            out[o++] = (char)ch;
        else
            o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", ch);
    }
    out[o] = '\0';
}

/* The longest line a text edge list may have: an edge with a weight and a comment
 * fits many times over, and a corrupt file (no newline for megabytes) is refused
 * before it is held in memory. */
#define LINE_MAX_BYTES ((size_t)1 << 20)

/* What every rank learns from the start of a text file before it reads its share:
 * whether edges carry weights (the first edge decides), and for a Matrix Market
 * file its size line. */
typedef struct text_form {
    bool market;       /* Matrix Market coordinate: 1-based ids, '%' comments */
    uint64_t data_at;  /* Matrix Market: lines before this byte are the header */
    uint64_t rows, cols;
    int weighted;      /* -1: no edge seen yet */
    bool settled;      /* the probe has seen what it needs */
    cr_edge_list *out;
    edge_sink *sink;
} text_form;

static bool line_end(char c)
{
    return c == '\0' || c == '#' || c == '%';
}

/* "u v" or "u v w" (ids from 0, or from 1 in Matrix Market), then a comment or
 * nothing; *end is where the edge's text stops (at its comment or its end). */
static bool parse_edge(const char *s, uint64_t *u, uint64_t *v, float *w, bool *has_w,
                       const char **end)
{
    *has_w = false;
    if (!parse_id(&s, u) || !parse_id(&s, v))
        return false;
    while (*s == ' ' || *s == '\t')
        s++;
    if (!line_end(*s)) {
        char *stop;
        errno = 0;
        *w = strtof(s, &stop); /* in the C locale: read_text */
        if (stop == s || errno != 0)
            return false;
        *has_w = true;
        for (s = stop; *s == ' ' || *s == '\t'; s++)
            ;
    }
    *end = s;
    return line_end(*s);
}

/* path:LINE: for an error at a line; the number is counted only when one is needed. */
static void line_error(char *err, size_t errlen, const cr_line *l, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void line_error(char *err, size_t errlen, const cr_line *l, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    cr_set_error(err, errlen, "%s:%" PRIu64 ": %s", l->path,
                 cr_io_line_number(l->path, l->offset), what);
}

/* A NUL byte at or after `from`: text has none, and a NUL would otherwise end the
 * line early and hide the rest. Only the stretches the parser did not read are
 * searched (a comment, or the line after a NUL that stopped it). */
static int check_nul(const cr_line *l, const char *from, char *err, size_t errlen)
{
    const char *nul = memchr(from, '\0', l->len - (size_t)(from - l->text));
    if (!nul)
        return 0;
    line_error(err, errlen, l, "a NUL byte at column %zu (not a text edge list?)",
               (size_t)(nul - l->text) + 1);
    return -1;
}

static int edge_line(const cr_line *l, void *user, char *err, size_t errlen)
{
    text_form *t = user;
    if (l->offset < t->data_at)
        return 0;
    if (l->len > LINE_MAX_BYTES) {
        line_error(err, errlen, l, "line longer than %zu bytes (not a text edge list?)",
                   LINE_MAX_BYTES);
        return -1;
    }
    const char *s = l->text;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s == '\0' || *s == '#' || (t->market && *s == '%'))
        return check_nul(l, s, err, errlen);
    uint64_t u, v;
    float w = 0;
    bool has_w;
    const char *end = s;
    bool ok = parse_edge(s, &u, &v, &w, &has_w, &end);
    if (check_nul(l, ok ? end : s, err, errlen))
        return -1;
    if (!ok) {
        char quoted[200];
        quote_line(l->text, quoted, sizeof quoted);
        line_error(err, errlen, l, "expected 'u v' or 'u v w' (vertex ids from %d to 2^62), "
                   "got '%s'", t->market ? 1 : 0, quoted);
        return -1;
    }
    if (has_w && !isfinite(w)) {
        line_error(err, errlen, l, "the weight is not a finite number (NaN or infinite)");
        return -1;
    }
    if (t->market) {
        if (u == 0 || v == 0 || u > t->rows || v > t->cols) {
            line_error(err, errlen, l, "entry (%" PRIu64 ", %" PRIu64 ") outside the %" PRIu64
                       " x %" PRIu64 " matrix of the size line (ids count from 1)", u, v,
                       t->rows, t->cols);
            return -1;
        }
        u--, v--;
    }
    if (t->weighted < 0) {
        t->weighted = has_w;
        t->settled = true; /* the probe stops here */
        return 1;
    }
    if (has_w != (t->weighted == 1)) {
        line_error(err, errlen, l, "%s a weight, unlike the first edge", has_w ? "has" : "lacks");
        return -1;
    }
    note_vertex(t->out, u, v);
    return sink_edge(t->sink, u, v, has_w ? &w : NULL, err, errlen);
}

/* "%%MatrixMarket matrix coordinate FIELD SYMMETRY": pattern means no weights. */
static int market_banner(text_form *t, const cr_line *l, char *err, size_t errlen)
{
    char object[32], format[32], field[32], symmetry[32];
    if (sscanf(l->text, "%%%%MatrixMarket %31s %31s %31s %31s", object, format, field,
               symmetry) != 4 || strcasecmp(object, "matrix") ||
        strcasecmp(format, "coordinate")) {
        line_error(err, errlen, l, "a Matrix Market file Courier reads is 'matrix coordinate' "
                   "(pattern, real, integer or double): got '%.80s'", l->text);
        return -1;
    }
    if (!strcasecmp(field, "pattern"))
        t->weighted = 0;
    else if (!strcasecmp(field, "real") || !strcasecmp(field, "integer") ||
             !strcasecmp(field, "double"))
        t->weighted = 1;
    else {
        line_error(err, errlen, l, "Matrix Market field '%s' is not pattern, real, integer or "
                   "double", field);
        return -1;
    }
    t->market = true;
    t->data_at = UINT64_MAX; /* until the size line */
    return 0;
}

/* The probe: the first lines of the file, read by every rank, until the first edge
 * (or a Matrix Market file's size line) settles the form. */
static int probe_line(const cr_line *l, void *user, char *err, size_t errlen)
{
    text_form *t = user;
    if (l->offset == 0 && l->len >= 14 && !memcmp(l->text, "%%MatrixMarket", 14))
        return market_banner(t, l, err, errlen);
    if (!t->market)
        return edge_line(l, user, err, errlen);
    const char *s = l->text;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s == '%' || *s == '\0')
        return 0;
    unsigned long long rows, cols, entries;
    char extra;
    if (sscanf(s, "%llu %llu %llu %c", &rows, &cols, &entries, &extra) != 3 || rows == 0 ||
        cols == 0 || rows >= (1ULL << 62) || cols >= (1ULL << 62)) {
        line_error(err, errlen, l, "expected the Matrix Market size line 'rows columns "
                   "entries'");
        return -1;
    }
    t->rows = rows, t->cols = cols;
    t->data_at = l->offset + 1;
    t->out->nvertices = rows > cols ? rows : cols;
    t->settled = true;
    return 1;
}

static int count_line(const cr_line *l, void *user, char *err, size_t errlen)
{
    (void)l, (void)err, (void)errlen;
    (*(size_t *)user)++;
    return 0;
}

/* Each rank parses the lines that begin in its byte range of the file (src/io);
 * the form is probed from the file's start first, so every rank applies the same
 * rules. */
static int read_text(const char *path, int rank, int size, edge_sink *sink, char *err,
                     size_t errlen)
{
    cr_edge_list *out = sink->list;
    text_form t = {.weighted = -1, .out = out, .sink = sink};
    cr_io_opts o;
    cr_io_opts_init(&o);
    o.max_line = LINE_MAX_BYTES;
    o.read_bytes = 64 << 10;
    const char *paths[] = {path};
    int rc = cr_io_read_share(paths, 1, &o, 0, 1, probe_line, &t, NULL, err, errlen);
    if (rc && !t.settled)
        return -1;
    if (t.market && !t.settled) {
        cr_set_error(err, errlen, "%s: a Matrix Market file without its size line", path);
        return -1;
    }
    if (!t.market)
        t.data_at = 0;
    if (t.weighted < 0)
        return 0; /* no edges */
    /* The list at its size at once: the lines of this rank's share, counted by a
     * mapped scan first (about a tenth of the parse), bound its edges. Not for a
     * compressed file, which would be decompressed twice: its list grows. */
    if (!cr_io_compressed(path) && !sink->chunk) {
        cr_io_opts count_opts;
        cr_io_opts_init(&count_opts);
        count_opts.unterminated = true;
        count_opts.max_line = LINE_MAX_BYTES; /* read, not mapped: a file cut shorter
                                                 meanwhile is an error, not SIGBUS */
        size_t lines = 0;
        if (cr_io_read_share(paths, 1, &count_opts, rank, size, count_line, &lines, NULL, err,
                             errlen))
            return -1;
        cr_edge_list_reserve(out, lines, t.weighted == 1);
    } else if (sink->chunk) {
        sink_reserve(sink, sink->chunk, t.weighted == 1);
    }
    o.read_bytes = 0;
    if (cr_io_read_share(paths, 1, &o, rank, size, edge_line, &t, NULL, err, errlen))
        return -1;
    return sink_flush(sink, err, errlen);
}

static uint64_t get_le(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++, v >>= 8)
        p[i] = (unsigned char)v;
}

static bool read_at(FILE *f, off_t at, void *buf, size_t len)
{
    return fseeko(f, at, SEEK_SET) == 0 && fread(buf, 1, len, f) == len;
}

static off_t file_size(FILE *f)
{
    struct stat st;
    return fstat(fileno(f), &st) == 0 ? st.st_size : -1;
}

/* Rank r reads edges [m*r/P, m*(r+1)/P) of a file of m fixed-size records. */
static void my_block(uint64_t m, int rank, int size, uint64_t *lo, uint64_t *hi)
{
    *lo = (uint64_t)((unsigned __int128)m * (unsigned)rank / (unsigned)size);
    *hi = (uint64_t)((unsigned __int128)m * (unsigned)(rank + 1) / (unsigned)size);
}

static int read_binary(const char *path, FILE *f, int rank, int size, edge_sink *sink,
                       char *err, size_t errlen)
{
    cr_edge_list *out = sink->list;
    unsigned char h[BIN_HEADER];
    if (!read_at(f, 0, h, sizeof h) || memcmp(h, magic, sizeof magic)) {
        cr_set_error(err, errlen, "%s: not a Courier binary edge list (bad header)", path);
        return -1;
    }
    uint64_t m = get_le(h + 8, 8), flags = get_le(h + 16, 8);
    out->nvertices = get_le(h + 24, 8);
    if (out->nvertices > CR_GRAPH_MAX_VERTICES) {
        cr_set_error(err, errlen, "%s: header says %" PRIu64 " vertices, more than the 2^62 a "
                     "graph may have", path, out->nvertices);
        return -1;
    }
    bool weighted = flags & BIN_WEIGHTED;
    uint64_t per_edge = weighted ? 20 : 16;
    if (m > ((uint64_t)INT64_MAX - BIN_HEADER) / per_edge) {
        cr_set_error(err, errlen, "%s: header says %" PRIu64 " edges, more than a file can "
                     "hold (%" PRIu64 " bytes each)", path, m, per_edge);
        return -1;
    }
    off_t want = (off_t)(BIN_HEADER + m * per_edge);
    if (file_size(f) != want) {
        cr_set_error(err, errlen, "%s: header says %" PRIu64 " edges (%s), so %lld bytes, "
                           "but the file has %lld", path, m, weighted ? "weighted" : "unweighted",
                           (long long)want, (long long)file_size(f));
        return -1;
    }
    uint64_t lo, hi;
    my_block(m, rank, size, &lo, &hi);
    sink_reserve(sink, (size_t)(hi - lo), weighted);
    unsigned char rec[16];
    for (uint64_t i = lo; i < hi; i++) {
        unsigned char wb[4];
        float w;
        if (!read_at(f, (off_t)(BIN_HEADER + i * 16), rec, 16) ||
            (weighted && !read_at(f, (off_t)(BIN_HEADER + m * 16 + i * 4), wb, 4))) {
            cr_set_error(err, errlen, "%s: read error at edge %" PRIu64, path, i);
            return -1;
        }
        uint64_t u = get_le(rec, 8), v = get_le(rec + 8, 8);
        if (u >= out->nvertices || v >= out->nvertices) {
            cr_set_error(err, errlen, "%s: edge %" PRIu64 " (%" PRIu64 ", %" PRIu64 ") has "
                               "a vertex beyond the header's %" PRIu64, path, i, u, v,
                               out->nvertices);
            return -1;
        }
        uint32_t bits = (uint32_t)get_le(wb, 4);
        memcpy(&w, &bits, sizeof w);
        if (weighted && !isfinite(w)) {
            cr_set_error(err, errlen, "%s: edge %" PRIu64 " has a weight that is not a finite "
                         "number (NaN or infinite)", path, i);
            return -1;
        }
        if (sink_edge(sink, u, v, weighted ? &w : NULL, err, errlen))
            return -1;
    }
    return sink_flush(sink, err, errlen);
}

static int read_graph500(const char *path, FILE *f, const char *wpath, int rank, int size,
                         edge_sink *sink, char *err, size_t errlen)
{
    cr_edge_list *out = sink->list;
    off_t bytes = file_size(f);
    if (bytes < 0 || bytes % 12) {
        cr_set_error(err, errlen, "%s: size %lld is not a multiple of 12 bytes (a Graph500 "
                           "edge dump holds three uint32 per edge)", path, (long long)bytes);
        return -1;
    }
    uint64_t m = (uint64_t)bytes / 12;
    FILE *wf = NULL;
    if (wpath) {
        wf = cr_io_fopen_regular(wpath, err, errlen);
        if (!wf)
            return -1;
        if (file_size(wf) != (off_t)(m * 4)) {
            cr_set_error(err, errlen, "%s: %lld bytes, but %s has %" PRIu64 " edges, so "
                               "%" PRIu64 " bytes of float32 weights were expected", wpath,
                               (long long)file_size(wf), path, m, m * 4);
            fclose(wf);
            return -1;
        }
    }
    uint64_t lo, hi;
    my_block(m, rank, size, &lo, &hi);
    unsigned char rec[12], wb[4];
    int rc = 0;
    if (hi > lo && fseeko(f, (off_t)(lo * 12), SEEK_SET))
        rc = -1;
    if (wf && hi > lo && fseeko(wf, (off_t)(lo * 4), SEEK_SET))
        rc = -1;
    for (uint64_t i = lo; i < hi && rc == 0; i++) {
        if (fread(rec, 1, 12, f) != 12 || (wf && fread(wb, 1, 4, wf) != 4)) {
            rc = -1;
            break;
        }
        uint64_t high = get_le(rec + 8, 4);
        uint64_t u = get_le(rec, 4) | (high & 0xffff) << 32;
        uint64_t v = get_le(rec + 4, 4) | (high >> 16) << 32;
        float w;
        uint32_t bits = (uint32_t)get_le(wb, 4);
        memcpy(&w, &bits, sizeof w);
        if (wf && !isfinite(w)) {
            cr_set_error(err, errlen, "%s: weight %" PRIu64 " is not a finite number (NaN or "
                         "infinite)", wpath, i);
            fclose(wf);
            return -1;
        }
        note_vertex(out, u, v);
        if (sink_edge(sink, u, v, wf ? &w : NULL, err, errlen)) {
            if (wf)
                fclose(wf);
            return -1;
        }
    }
    if (rc)
        cr_set_error(err, errlen, "%s: read error", path);
    if (wf)
        fclose(wf);
    return rc ? rc : sink_flush(sink, err, errlen);
}

static int read_into(const char *path, cr_file_format format, const char *weights_path,
                     int rank, int size, edge_sink *sink, char *err, size_t errlen)
{
    cr_edge_list *out = sink->list;
    memset(out, 0, sizeof *out);
    FILE *f = cr_io_fopen_regular(path, err, errlen);
    if (!f)
        return -1;
    if (format == CR_FILE_AUTO) {
        char head[8];
        size_t len = strlen(path);
        if (fread(head, 1, 8, f) == 8 && !memcmp(head, magic, 8))
            format = CR_FILE_BINARY;
        else if (len > 5 && !strcmp(path + len - 5, ".g500"))
            format = CR_FILE_GRAPH500;
        else
            format = CR_FILE_TEXT;
        rewind(f);
    }
    if (weights_path && format != CR_FILE_GRAPH500) {
        cr_set_error(err, errlen, "%s: a separate weights file only goes with the Graph500 "
                           "format", weights_path);
        fclose(f);
        return -1;
    }
    int rc;
    switch (format) {
    case CR_FILE_TEXT: {
        locale_t previous = cr_numbers_c_begin(); /* weights read with '.' in any locale */
        rc = read_text(path, rank, size, sink, err, errlen);
        cr_numbers_c_end(previous);
        break;
    }
    case CR_FILE_BINARY: rc = read_binary(path, f, rank, size, sink, err, errlen); break;
    default: rc = read_graph500(path, f, weights_path, rank, size, sink, err, errlen); break;
    }
    fclose(f);
    if (rc)
        cr_graph_edges_free(out);
    return rc;
}

int cr_graph_read_edges(const char *path, cr_file_format format, const char *weights_path, int rank,
                        int size, cr_edge_list *out, char *err, size_t errlen)
{
    edge_sink sink = {.list = out};
    return read_into(path, format, weights_path, rank, size, &sink, err, errlen);
}

int graph_read_chunks(const char *path, cr_file_format format, const char *weights_path,
                      int rank, int size, size_t chunk, graph_chunk_fn fn, void *user,
                      uint64_t *nvertices, char *err, size_t errlen)
{
    cr_edge_list list;
    edge_sink sink = {.list = &list, .chunk = chunk ? chunk : 1, .fn = fn, .user = user};
    int rc = read_into(path, format, weights_path, rank, size, &sink, err, errlen);
    *nvertices = rc ? 0 : list.nvertices;
    cr_graph_edges_free(&list);
    return rc;
}

int cr_graph_write_edges(const char *path, cr_file_format format, const cr_edge_list *l, char *err,
                         size_t errlen)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        cr_set_error(err, errlen, "%s: cannot create: %s", path, strerror(errno));
        return -1;
    }
    bool ok = true;
    if (format == CR_FILE_BINARY) {
        unsigned char h[BIN_HEADER], rec[16];
        memcpy(h, magic, 8);
        put_le(h + 8, l->count, 8);
        put_le(h + 16, l->weights ? BIN_WEIGHTED : 0, 8);
        put_le(h + 24, l->nvertices, 8);
        ok = fwrite(h, 1, sizeof h, f) == sizeof h;
        for (size_t i = 0; ok && i < l->count; i++) {
            put_le(rec, l->edges[i].u, 8);
            put_le(rec + 8, l->edges[i].v, 8);
            ok = fwrite(rec, 1, 16, f) == 16;
        }
        for (size_t i = 0; ok && l->weights && i < l->count; i++) {
            uint32_t bits;
            memcpy(&bits, &l->weights[i], 4);
            put_le(rec, bits, 4);
            ok = fwrite(rec, 1, 4, f) == 4;
        }
    } else if (format == CR_FILE_TEXT) {
        for (size_t i = 0; ok && i < l->count; i++) {
            if (l->weights)
                ok = fprintf(f, "%" PRIu64 " %" PRIu64 " %.9g\n", l->edges[i].u, l->edges[i].v,
                             (double)l->weights[i]) > 0;
            else
                ok = fprintf(f, "%" PRIu64 " %" PRIu64 "\n", l->edges[i].u, l->edges[i].v) > 0;
        }
    } else {
        cr_set_error(err, errlen, "%s: can only write text or binary edge lists", path);
        fclose(f);
        return -1;
    }
    if (fclose(f) != 0)
        ok = false;
    if (!ok)
        cr_set_error(err, errlen, "%s: write failed: %s", path, strerror(errno));
    return ok ? 0 : -1;
}
