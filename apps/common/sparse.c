/* Sparse matrices for apps/plan and apps/spmv: see sparse.h. */
#include "sparse.h"
#include "cli.h"

#include "courier/graph.h"
#include "courier/rng.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifdef COURIER_HAVE_METIS
#include <metis.h>
#endif

static void set_err(char *err, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "sparse: out of memory (%zu bytes)\n", n);
        abort();
    }
    return p;
}

void sparse_free(sparse_matrix *m)
{
    free(m->col_ptr);
    free(m->row);
    free(m->val);
    memset(m, 0, sizeof *m);
}

/* ---------------------------------------------------------------- from entries */

typedef struct entry {
    uint64_t col, row;
    double val;
} entry;

typedef struct entries {
    entry *v;
    uint64_t count, cap;
} entries;

static void push(entries *e, uint64_t row, uint64_t col, double val)
{
    if (e->count == e->cap) {
        e->cap = e->cap ? 2 * e->cap : 1024;
        entry *nv = realloc(e->v, e->cap * sizeof *nv);
        if (!nv) {
            fprintf(stderr, "sparse: out of memory for %" PRIu64 " entries\n", e->cap);
            abort();
        }
        e->v = nv;
    }
    e->v[e->count++] = (entry){col, row, val};
}

static int cmp_entry(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->col != y->col)
        return x->col < y->col ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* Sort, sum repeats, and compress by columns. Frees the entries. */
static void compress(entries *e, uint64_t n, sparse_matrix *m)
{
    qsort(e->v, e->count, sizeof *e->v, cmp_entry);
    uint64_t k = 0;
    for (uint64_t i = 0; i < e->count; i++) {
        if (k > 0 && e->v[k - 1].col == e->v[i].col && e->v[k - 1].row == e->v[i].row)
            e->v[k - 1].val += e->v[i].val;
        else
            e->v[k++] = e->v[i];
    }
    m->n = n;
    m->nnz = k;
    m->col_ptr = calloc(n + 1, sizeof *m->col_ptr);
    m->row = xmalloc(k * sizeof *m->row);
    m->val = xmalloc(k * sizeof *m->val);
    if (!m->col_ptr) {
        fprintf(stderr, "sparse: out of memory for %" PRIu64 " columns\n", n);
        abort();
    }
    for (uint64_t i = 0; i < k; i++) {
        m->col_ptr[e->v[i].col + 1]++;
        m->row[i] = e->v[i].row;
        m->val[i] = e->v[i].val;
    }
    for (uint64_t j = 0; j < n; j++)
        m->col_ptr[j + 1] += m->col_ptr[j];
    free(e->v);
    memset(e, 0, sizeof *e);
}

/* A value for a generated entry: the same for (i, j) and (j, i), in [1, 2). */
static double gen_value(uint64_t i, uint64_t j)
{
    uint64_t a = i < j ? i : j, b = i < j ? j : i;
    uint64_t h = (a * 0x9e3779b97f4a7c15ULL) ^ (b + 0x632be59bd9b4e019ULL);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 32;
    return 1.0 + (double)(h >> 11) / 9007199254740992.0;
}

/* ---------------------------------------------------------------- generators */

static int load_graph(cr_gen_kind kind, bool permute, const char *args, uint64_t seed,
                      sparse_matrix *m, char *err, size_t errlen)
{
    cr_gen_params p;
    cr_graph_gen_params_init(&p);
    p.kind = kind;
    p.permute = permute;
    p.seed = seed;
    char *end;
    errno = 0;
    long scale = strtol(args, &end, 10);
    if (end == args || errno || (*end && *end != ':')) {
        set_err(err, errlen, "bad generator scale in '%s'", args);
        return -1;
    }
    p.scale = (int)scale;
    if (*end == ':') {
        const char *e = end + 1;
        p.edgefactor = strtod(e, &end);
        if (end == e || *end || !(p.edgefactor > 0)) {
            set_err(err, errlen, "bad edge factor in '%s'", args);
            return -1;
        }
    }
    if (scale < 1 || scale > 30) {
        set_err(err, errlen, "generator scale %ld is out of range 1..30", scale);
        return -1;
    }
    if (!m)
        return 0; /* checked only */
    cr_edge_list list = {0};
    if (cr_graph_generate(&p, 0, 1, &list, err, errlen) != 0)
        return -1;
    entries e = {0};
    for (size_t i = 0; i < list.count; i++) {
        uint64_t u = list.edges[i].u, v = list.edges[i].v;
        push(&e, u, v, gen_value(u, v));
        if (u != v)
            push(&e, v, u, gen_value(u, v));
    }
    uint64_t n = list.nvertices;
    cr_graph_edges_free(&list);
    compress(&e, n, m);
    return 0;
}

static int load_stencil(int dims, const char *args, sparse_matrix *m, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    long k = strtol(args, &end, 10);
    long max = dims == 2 ? 20000 : 700;
    if (end == args || *end || errno || k < 1 || k > max) {
        set_err(err, errlen, "stencil size '%s' must be an integer in 1..%ld", args, max);
        return -1;
    }
    if (!m)
        return 0;
    uint64_t kk = (uint64_t)k, n = dims == 2 ? kk * kk : kk * kk * kk;
    entries e = {0};
    for (uint64_t i = 0; i < n; i++) {
        uint64_t c[3] = {i % kk, (i / kk) % kk, dims == 3 ? i / (kk * kk) : 0};
        push(&e, i, i, 2.0 * dims);
        uint64_t stride = 1;
        for (int d = 0; d < dims; d++, stride *= kk) {
            if (c[d] > 0)
                push(&e, i, i - stride, -1.0);
            if (c[d] + 1 < kk)
                push(&e, i, i + stride, -1.0);
        }
    }
    compress(&e, n, m);
    return 0;
}

/* ---------------------------------------------------------------- like the thesis's */

/* The 15 matrices of Table 6.1 of the message-sharing thesis (docs/references.md):
 * rows, nonzeros and the coefficient of variation of the row degrees. `dims` and
 * `far` (the share of each row's couplings that go to rows anywhere in the matrix,
 * chosen in proportion to their degrees, instead of to near neighbours in a 2D or
 * 3D mesh) were set once per matrix, by scripts/calibrate_like.sh, so that the
 * initial average messages per rank at 512 ranks under the block partition comes
 * near the thesis's Table 6.2 (docs/plan.md). */
static const struct like_shape {
    const char *name;
    uint64_t rows, nnz;
    double cv;
    int dims;   /* of the mesh: 2 or 3 */
    int dofs;   /* rows per mesh node, coupled as a block */
    double far;
} like_table[] = {
    {"cbuckle", 13681, 676515, 0.16, 2, 12, 0.0},
    {"msc10848", 10848, 1229778, 0.42, 2, 12, 0.0},
    {"fe_rotor", 99617, 1324862, 0.29, 3, 12, 0.0312},
    {"sparsine", 50000, 1548988, 0.36, 3, 1, 0.0156},
    {"coAuthorsDBLP", 299067, 1955352, 1.50, 3, 1, 0.0469},
    {"net125", 36720, 2577200, 0.95, 3, 1, 0.0117},
    {"nd3k", 9000, 3279360, 0.26, 3, 12, 0.0156},
    {"GaAsH6", 61349, 3381809, 2.44, 3, 1, 0.0029},
    {"pkustk04", 55590, 4218660, 1.46, 2, 6, 0.0},
    {"gupta2", 62064, 4248286, 5.20, 3, 1, 0.0097},
    {"TSOPF_FS_b300_c2", 56814, 8767466, 6.23, 3, 1, 0.0009},
    {"pattern1", 19242, 9323432, 0.78, 3, 12, 0.0156},
    {"SiO2", 155331, 11283503, 4.05, 3, 1, 0.0049},
    {"human_gene_2", 14340, 18068388, 1.09, 2, 1, 0.0058},
    {"coPapersCiteseer", 434102, 32073440, 1.37, 3, 1, 0.0009},
};
#define LIKE_COUNT (sizeof like_table / sizeof like_table[0])

size_t sparse_like_count(void)
{
    return LIKE_COUNT;
}

const char *sparse_like_name(size_t i)
{
    return i < LIKE_COUNT ? like_table[i].name : NULL;
}

/* Morton (Z-order) code <-> 3D coordinates, 21 bits each: consecutive codes stay
 * close in space, so a block partition of the rows cuts the mesh into compact
 * pieces, as a partitioner would. */
static uint64_t spread3(uint64_t x)
{
    x &= 0x1fffff;
    x = (x | x << 32) & 0x1f00000000ffffULL;
    x = (x | x << 16) & 0x1f0000ff0000ffULL;
    x = (x | x << 8) & 0x100f00f00f00f00fULL;
    x = (x | x << 4) & 0x10c30c30c30c30c3ULL;
    x = (x | x << 2) & 0x1249249249249249ULL;
    return x;
}

static uint64_t compact3(uint64_t x)
{
    x &= 0x1249249249249249ULL;
    x = (x | x >> 2) & 0x10c30c30c30c30c3ULL;
    x = (x | x >> 4) & 0x100f00f00f00f00fULL;
    x = (x | x >> 8) & 0x1f0000ff0000ffULL;
    x = (x | x >> 16) & 0x1f00000000ffffULL;
    x = (x | x >> 32) & 0x1fffff;
    return x;
}

static uint64_t spread2(uint64_t x)
{
    x &= 0xffffffffULL;
    x = (x | x << 16) & 0x0000ffff0000ffffULL;
    x = (x | x << 8) & 0x00ff00ff00ff00ffULL;
    x = (x | x << 4) & 0x0f0f0f0f0f0f0f0fULL;
    x = (x | x << 2) & 0x3333333333333333ULL;
    x = (x | x << 1) & 0x5555555555555555ULL;
    return x;
}

static uint64_t compact2(uint64_t x)
{
    x &= 0x5555555555555555ULL;
    x = (x | x >> 1) & 0x3333333333333333ULL;
    x = (x | x >> 2) & 0x0f0f0f0f0f0f0f0fULL;
    x = (x | x >> 4) & 0x00ff00ff00ff00ffULL;
    x = (x | x >> 8) & 0x0000ffff0000ffffULL;
    x = (x | x >> 16) & 0xffffffffULL;
    return x;
}

static double uniform01(uint64_t *rng)
{
    return ((double)(cr_rng_next(rng) >> 11) + 0.5) / 9007199254740992.0;
}

/* A row degree with the given mean and coefficient of variation (log-normal). */
static uint64_t lognormal_degree(uint64_t *rng, double mean, double cv, uint64_t max)
{
    double s2 = log(1 + cv * cv), mu = log(mean) - s2 / 2;
    double z = sqrt(-2 * log(uniform01(rng))) * cos(2 * M_PI * uniform01(rng));
    double d = exp(mu + sqrt(s2) * z);
    return d < 1 ? 1 : d > (double)max ? max : (uint64_t)(d + 0.5);
}

/* A near neighbour of row i within the square or cube of half-side h around it (in
 * dims dimensions), or i if the draw fell outside the matrix. */
static uint64_t near_row(uint64_t *rng, uint64_t i, uint64_t n, int dims, int64_t h)
{
    int64_t c[3];
    int64_t top = dims == 2 ? 0xffffffffLL : 0x1fffffLL;
    for (int d = 0; d < dims; d++) {
        c[d] = (int64_t)(dims == 2 ? compact2(i >> d) : compact3(i >> d));
        c[d] += (int64_t)cr_rng_bounded(cr_rng_next(rng), (uint64_t)(2 * h + 1)) - h;
        if (c[d] < 0 || c[d] > top)
            return i;
    }
    uint64_t j = 0;
    for (int d = 0; d < dims; d++)
        j |= (dims == 2 ? spread2((uint64_t)c[d]) : spread3((uint64_t)c[d])) << d;
    return j < n ? j : i;
}

/* A row chosen in proportion to its degree: cum holds the running sums. */
static uint64_t weighted_row(uint64_t *rng, const uint64_t *cum, uint64_t n)
{
    uint64_t r = cr_rng_bounded(cr_rng_next(rng), cum[n - 1]), lo = 0, hi = n - 1;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (cum[mid] > r)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* like:NAME[/D][:F[:K]]: a symmetric matrix shaped like the named matrix of Table
 * 6.1, with its rows and nonzeros divided by D (default 1). Each row draws a degree
 * (the matrix's mean and cv) and couples to half that many rows, a share `far` of
 * them anywhere, the rest near it in a 2D or 3D mesh laid out in Morton order. */
static int load_like(const char *args, uint64_t seed, sparse_matrix *m, char *err, size_t errlen)
{
    char name[64];
    size_t len = strcspn(args, "/:");
    snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), args);
    const struct like_shape *sh = NULL;
    for (size_t k = 0; k < LIKE_COUNT; k++)
        if (!strcmp(like_table[k].name, name))
            sh = &like_table[k];
    if (!sh) {
        set_err(err, errlen, "like:%s: not a matrix of the thesis's Table 6.1 (e.g. like:cbuckle)",
                name);
        return -1;
    }
    /* /D divides the size; :F[:K[:B]] overrides the far share, the mesh dimension and
     * the rows per node (for calibrating the table, scripts/calibrate_like.sh). */
    uint64_t div = 1;
    double far = sh->far;
    int dims = sh->dims, dofs = sh->dofs;
    const char *rest = args + len;
    char *end;
    if (*rest == '/') {
        errno = 0;
        unsigned long long d = strtoull(rest + 1, &end, 10);
        if (end == rest + 1 || (*end && *end != ':') || errno || d < 1 || d > sh->rows / 16) {
            set_err(err, errlen, "like:%s: the divisor in '%s' must be an integer in 1..%llu",
                    name, args, (unsigned long long)(sh->rows / 16));
            return -1;
        }
        div = d;
        rest = end;
    }
    if (*rest == ':') {
        far = strtod(rest + 1, &end);
        if (end == rest + 1 || (*end && *end != ':') || !(far >= 0 && far <= 1)) {
            set_err(err, errlen, "like:%s: the far share in '%s' must be in 0..1", name, args);
            return -1;
        }
        rest = end;
        if (*rest == ':') {
            long k = strtol(rest + 1, &end, 10);
            if (end == rest + 1 || (*end && *end != ':') || (k != 2 && k != 3)) {
                set_err(err, errlen, "like:%s: the mesh dimension in '%s' must be 2 or 3", name,
                        args);
                return -1;
            }
            dims = (int)k;
            rest = end;
            if (*rest == ':') {
                long b = strtol(rest + 1, &end, 10);
                if (end == rest + 1 || *end || b < 1 || b > 64) {
                    set_err(err, errlen, "like:%s: the rows per node in '%s' must be in 1..64",
                            name, args);
                    return -1;
                }
                dofs = (int)b;
                rest = end;
            }
        }
    }
    if (*rest) {
        set_err(err, errlen, "like:%s: cannot read '%s' (like:NAME[/D][:F[:K[:B]]])", name, args);
        return -1;
    }
    if (!m)
        return 0;
    uint64_t n = sh->rows / div, nnz = sh->nnz / div, rng = seed * 0x9e3779b97f4a7c15ULL + 7;
    uint64_t nodes = (n + (uint64_t)dofs - 1) / (uint64_t)dofs;
    /* Node degrees, in nodes: a row couples with the dofs rows of each neighbour. */
    double mean = (double)(nnz - n) / (double)n / dofs;
    uint64_t *deg = xmalloc(nodes * sizeof *deg), *cum = xmalloc(nodes * sizeof *cum);
    for (uint64_t v = 0, total = 0; v < nodes; v++) {
        deg[v] = lognormal_degree(&rng, mean, sh->cv, nodes - 1 ? nodes - 1 : 1);
        cum[v] = total += deg[v];
    }
    entries e = {0};
    for (uint64_t v = 0; v < nodes; v++) {
        uint64_t half = (deg[v] + 1) / 2, r0 = v * (uint64_t)dofs;
        double reach = dims == 2 ? sqrt(2.0 * (double)deg[v]) : cbrt(2.0 * (double)deg[v]);
        int64_t h = (int64_t)ceil((reach - 1) / 2);
        h = h < 1 ? 1 : h;
        for (uint64_t a = r0; a < r0 + (uint64_t)dofs && a < n; a++)
            for (uint64_t b = r0; b < r0 + (uint64_t)dofs && b < n; b++)
                push(&e, a, b, a == b ? (double)(deg[v] * (uint64_t)dofs + 1) : -gen_value(a, b));
        for (uint64_t k = 0; k < half; k++) {
            uint64_t w = v;
            for (int tries = 0; w == v && tries < 8; tries++)
                w = uniform01(&rng) < far ? weighted_row(&rng, cum, nodes)
                                          : near_row(&rng, v, nodes, dims, h);
            if (w == v)
                continue;
            uint64_t w0 = w * (uint64_t)dofs;
            for (uint64_t a = r0; a < r0 + (uint64_t)dofs && a < n; a++)
                for (uint64_t b = w0; b < w0 + (uint64_t)dofs && b < n; b++) {
                    push(&e, a, b, -gen_value(a, b));
                    push(&e, b, a, -gen_value(a, b));
                }
        }
    }
    free(deg);
    free(cum);
    compress(&e, n, m);
    return 0;
}

/* ---------------------------------------------------------------- Matrix Market */

typedef enum { MM_REAL, MM_INTEGER, MM_PATTERN } mm_field;
typedef enum { MM_GENERAL, MM_SYMMETRIC, MM_SKEW } mm_symmetry;

static int mm_header(const char *line, mm_field *field, mm_symmetry *sym, char *err,
                     size_t errlen, const char *path)
{
    char banner[64], object[64], format[64], f[64], s[64];
    if (sscanf(line, "%63s %63s %63s %63s %63s", banner, object, format, f, s) != 5 ||
        strcasecmp(banner, "%%MatrixMarket") != 0) {
        set_err(err, errlen, "%s:1: not a Matrix Market file (no %%%%MatrixMarket header)", path);
        return -1;
    }
    if (strcasecmp(object, "matrix") != 0 || strcasecmp(format, "coordinate") != 0) {
        set_err(err, errlen, "%s:1: only 'matrix coordinate' files are supported, not '%s %s'",
                path, object, format);
        return -1;
    }
    if (!strcasecmp(f, "real") || !strcasecmp(f, "double"))
        *field = MM_REAL;
    else if (!strcasecmp(f, "integer"))
        *field = MM_INTEGER;
    else if (!strcasecmp(f, "pattern"))
        *field = MM_PATTERN;
    else {
        set_err(err, errlen, "%s:1: field '%s' is not supported (real, integer, pattern)", path, f);
        return -1;
    }
    if (!strcasecmp(s, "general"))
        *sym = MM_GENERAL;
    else if (!strcasecmp(s, "symmetric"))
        *sym = MM_SYMMETRIC;
    else if (!strcasecmp(s, "skew-symmetric"))
        *sym = MM_SKEW;
    else {
        set_err(err, errlen,
                "%s:1: symmetry '%s' is not supported (general, symmetric, skew-symmetric)", path, s);
        return -1;
    }
    return 0;
}

static bool blank_or_comment(const char *line)
{
    while (isspace((unsigned char)*line))
        line++;
    return *line == '\0' || *line == '%';
}

/* Read one line into buf; -1 at end of file, -2 if it does not fit. */
static int read_line(FILE *f, char *buf, size_t len)
{
    if (!fgets(buf, (int)len, f))
        return -1;
    size_t l = strlen(buf);
    if (l == len - 1 && buf[l - 1] != '\n' && !feof(f))
        return -2;
    return 0;
}

static int mm_entry(const char *line, mm_field field, uint64_t n, uint64_t *i, uint64_t *j,
                    double *v)
{
    char *end;
    const char *p = line;
    errno = 0;
    unsigned long long a = strtoull(p, &end, 10);
    if (end == p || errno)
        return -1;
    p = end;
    unsigned long long b = strtoull(p, &end, 10);
    if (end == p || errno)
        return -1;
    p = end;
    if (a < 1 || a > n || b < 1 || b > n)
        return -2;
    *v = 1.0;
    if (field != MM_PATTERN) {
        *v = strtod(p, &end);
        if (end == p)
            return -1;
        p = end;
    }
    while (isspace((unsigned char)*p))
        p++;
    if (*p)
        return -1;
    *i = a - 1;
    *j = b - 1;
    return 0;
}

static int load_mm(const char *path, sparse_matrix *m, char *err, size_t errlen)
{
    FILE *f = cr_io_fopen_regular(path, err, errlen);
    if (!f)
        return -1;
    char line[1024];
    uint64_t lineno = 1, rows = 0, cols = 0, nnz = 0, seen = 0;
    mm_field field;
    mm_symmetry sym;
    entries e = {0};
    int rc = -1;
    if (read_line(f, line, sizeof line) != 0) {
        set_err(err, errlen, "%s:1: empty file, not a Matrix Market file", path);
        goto out;
    }
    if (mm_header(line, &field, &sym, err, errlen, path) != 0)
        goto out;
    if (!m) { /* checked only: the file opens and says what it is */
        rc = 0;
        goto out;
    }
    bool have_size = false;
    for (;;) {
        int r = read_line(f, line, sizeof line);
        lineno++;
        if (r == -1)
            break;
        if (r == -2) {
            set_err(err, errlen, "%s:%" PRIu64 ": line longer than %zu characters", path, lineno,
                    sizeof line - 2);
            goto out;
        }
        if (blank_or_comment(line))
            continue;
        if (!have_size) {
            unsigned long long a, b, c;
            char extra;
            if (sscanf(line, "%llu %llu %llu %c", &a, &b, &c, &extra) != 3) {
                set_err(err, errlen, "%s:%" PRIu64 ": expected 'rows columns entries'", path, lineno);
                goto out;
            }
            rows = a, cols = b, nnz = c;
            if (rows != cols || rows == 0) {
                set_err(err, errlen, "%s:%" PRIu64 ": the matrix is %" PRIu64 " x %" PRIu64
                        "; the SpMV needs a square, non-empty one", path, lineno, rows, cols);
                goto out;
            }
            have_size = true;
            continue;
        }
        uint64_t i, j;
        double v;
        int er = mm_entry(line, field, rows, &i, &j, &v);
        if (er == -2) {
            set_err(err, errlen, "%s:%" PRIu64 ": index out of range 1..%" PRIu64, path, lineno, rows);
            goto out;
        }
        if (er != 0) {
            set_err(err, errlen, "%s:%" PRIu64 ": malformed entry (expected 'row column%s')", path,
                    lineno, field == MM_PATTERN ? "" : " value");
            goto out;
        }
        if (++seen > nnz) {
            set_err(err, errlen, "%s:%" PRIu64 ": more entries than the %" PRIu64 " announced",
                    path, lineno, nnz);
            goto out;
        }
        push(&e, i, j, v);
        if (sym != MM_GENERAL && i != j)
            push(&e, j, i, sym == MM_SKEW ? -v : v);
    }
    if (!have_size) {
        set_err(err, errlen, "%s:%" PRIu64 ": no size line", path, lineno - 1);
        goto out;
    }
    if (seen < nnz) {
        set_err(err, errlen, "%s:%" PRIu64 ": %" PRIu64 " entries announced, %" PRIu64 " found",
                path, lineno - 1, nnz, seen);
        goto out;
    }
    compress(&e, rows, m);
    rc = 0;
out:
    free(e.v);
    fclose(f);
    return rc;
}

/* ---------------------------------------------------------------- load */

static int load_one(const char *spec, uint64_t seed, sparse_matrix *m, char *err, size_t errlen);

/* a+b: the sum of two inputs of the same size. */
static int load_sum(const char *spec, const char *plus, uint64_t seed, sparse_matrix *m,
                    char *err, size_t errlen)
{
    char *left = strndup(spec, (size_t)(plus - spec));
    if (!left) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    if (!m) {
        int rc = load_one(left, seed, NULL, err, errlen);
        free(left);
        return rc != 0 ? -1 : sparse_load(plus + 1, seed + 1, NULL, err, errlen);
    }
    sparse_matrix a, b;
    int rc = load_one(left, seed, &a, err, errlen);
    free(left);
    if (rc != 0)
        return -1;
    if (sparse_load(plus + 1, seed + 1, &b, err, errlen) != 0) {
        sparse_free(&a);
        return -1;
    }
    if (a.n != b.n) {
        set_err(err, errlen, "'%s': the summed inputs have %llu and %llu rows", spec,
                (unsigned long long)a.n, (unsigned long long)b.n);
        sparse_free(&a);
        sparse_free(&b);
        return -1;
    }
    entries e = {0};
    const sparse_matrix *parts[2] = {&a, &b};
    for (int t = 0; t < 2; t++)
        for (uint64_t j = 0; j < parts[t]->n; j++)
            for (uint64_t k = parts[t]->col_ptr[j]; k < parts[t]->col_ptr[j + 1]; k++)
                push(&e, parts[t]->row[k], j, parts[t]->val[k]);
    uint64_t n = a.n;
    sparse_free(&a);
    sparse_free(&b);
    compress(&e, n, m);
    return 0;
}

int sparse_load(const char *spec, uint64_t seed, sparse_matrix *m, char *err, size_t errlen)
{
    const char *plus = strchr(spec, '+');
    if (plus)
        return load_sum(spec, plus, seed, m, err, errlen);
    return load_one(spec, seed, m, err, errlen);
}

int sparse_check(const char *spec, char *err, size_t errlen)
{
    return sparse_load(spec, 0, NULL, err, errlen);
}

/* m NULL: only check the spec (its arguments; a file opens and has a header). */
static int load_one(const char *spec, uint64_t seed, sparse_matrix *m, char *err, size_t errlen)
{
    if (m)
        memset(m, 0, sizeof *m);
    static const struct {
        const char *prefix;
        int what; /* 0..3 graphs, 4 stencil2d, 5 stencil3d, 6 like */
    } gens[] = {{"rmat:", 0}, {"rmatp:", 1}, {"gnm:", 2}, {"rgg:", 3},
                {"stencil2d:", 4}, {"stencil3d:", 5}, {"like:", 6}};
    for (size_t g = 0; g < sizeof gens / sizeof gens[0]; g++) {
        size_t l = strlen(gens[g].prefix);
        if (strncmp(spec, gens[g].prefix, l) != 0)
            continue;
        const char *args = spec + l;
        switch (gens[g].what) {
        case 0: return load_graph(CR_GEN_RMAT, false, args, seed, m, err, errlen);
        case 1: return load_graph(CR_GEN_RMAT, true, args, seed, m, err, errlen);
        case 2: return load_graph(CR_GEN_GNM, false, args, seed, m, err, errlen);
        case 3: return load_graph(CR_GEN_RGG, false, args, seed, m, err, errlen);
        case 4: return load_stencil(2, args, m, err, errlen);
        case 5: return load_stencil(3, args, m, err, errlen);
        default: return load_like(args, seed, m, err, errlen);
        }
    }
    return load_mm(spec, m, err, errlen);
}

void sparse_name(const char *spec, char *out, size_t len)
{
    const char *base = strrchr(spec, '/');
    base = base ? base + 1 : spec;
    snprintf(out, len, "%s", base);
    size_t l = strlen(out);
    if (l > 4 && strcmp(out + l - 4, ".mtx") == 0)
        out[l - 4] = '\0';
}

/* ---------------------------------------------------------------- partitions */

void sparse_block_partition(uint64_t n, int parts, int *part)
{
    for (uint64_t i = 0; i < n; i++)
        part[i] = (int)((unsigned __int128)i * (unsigned)parts / n);
}

int sparse_read_partition(const char *path, uint64_t n, int parts, int *part, char *err,
                          size_t errlen)
{
    FILE *f = cr_io_fopen_regular(path, err, errlen);
    if (!f)
        return -1;
    char line[256];
    uint64_t lineno = 0, k = 0;
    int rc = -1;
    for (;;) {
        int r = read_line(f, line, sizeof line);
        lineno++;
        if (r == -1)
            break;
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (*p == '\0' || *p == '%' || *p == '#')
            continue;
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        while (isspace((unsigned char)*end))
            end++;
        if (r == -2 || end == p || *end || errno || v < 0 || v >= parts) {
            set_err(err, errlen, "%s:%" PRIu64 ": expected a part in 0..%d", path, lineno, parts - 1);
            goto out;
        }
        if (k == n) {
            set_err(err, errlen, "%s:%" PRIu64 ": more than the matrix's %" PRIu64 " rows", path,
                    lineno, n);
            goto out;
        }
        part[k++] = (int)v;
    }
    if (k < n) {
        set_err(err, errlen, "%s: %" PRIu64 " parts for a matrix of %" PRIu64 " rows", path, k, n);
        goto out;
    }
    rc = 0;
out:
    fclose(f);
    return rc;
}

bool sparse_have_metis(void)
{
#ifdef COURIER_HAVE_METIS
    return true;
#else
    return false;
#endif
}

#ifdef COURIER_HAVE_METIS
static int compare_idx(const void *a, const void *b)
{
    idx_t x = *(const idx_t *)a, y = *(const idx_t *)b;
    return (x > y) - (x < y);
}

/* The graph of A + A^T without its diagonal, in METIS's compressed form: every
 * off-diagonal entry (i, j) links i and j, once however often it appears. */
static int metis_graph(const sparse_matrix *m, idx_t **xadj_out, idx_t **adj_out, char *err,
                       size_t errlen)
{
    uint64_t n = m->n;
    if (n >= (uint64_t)IDX_MAX || 2 * m->nnz >= (uint64_t)IDX_MAX) {
        set_err(err, errlen, "a matrix of %" PRIu64 " rows and %" PRIu64 " nonzeros is too "
                "large for METIS's %d-bit indices", n, m->nnz, IDXTYPEWIDTH);
        return -1;
    }
    idx_t *xadj = calloc(n + 1, sizeof *xadj);
    idx_t *adj = malloc((2 * m->nnz + 1) * sizeof *adj);
    if (!xadj || !adj) {
        free(xadj), free(adj);
        set_err(err, errlen, "out of memory for the graph METIS partitions");
        return -1;
    }
    for (uint64_t j = 0; j < n; j++)
        for (uint64_t k = m->col_ptr[j]; k < m->col_ptr[j + 1]; k++)
            if (m->row[k] != j)
                xadj[m->row[k] + 1]++, xadj[j + 1]++;
    for (uint64_t i = 0; i < n; i++)
        xadj[i + 1] += xadj[i];
    idx_t *fill = malloc(n * sizeof *fill);
    if (!fill) {
        free(xadj), free(adj);
        set_err(err, errlen, "out of memory for the graph METIS partitions");
        return -1;
    }
    memcpy(fill, xadj, n * sizeof *fill);
    for (uint64_t j = 0; j < n; j++)
        for (uint64_t k = m->col_ptr[j]; k < m->col_ptr[j + 1]; k++) {
            uint64_t i = m->row[k];
            if (i != j)
                adj[fill[i]++] = (idx_t)j, adj[fill[j]++] = (idx_t)i;
        }
    free(fill);
    /* A neighbour appears twice where both (i, j) and (j, i) are entries: sort each
     * list and keep one. */
    idx_t out = 0, start = 0;
    for (uint64_t i = 0; i < n; i++) {
        idx_t end = xadj[i + 1];
        qsort(adj + start, (size_t)(end - start), sizeof *adj, compare_idx);
        xadj[i] = out;
        for (idx_t k = start; k < end; k++)
            if (k == start || adj[k] != adj[k - 1])
                adj[out++] = adj[k];
        start = end;
    }
    xadj[n] = out;
    *xadj_out = xadj;
    *adj_out = adj;
    return 0;
}
#endif

int sparse_metis_partition(const sparse_matrix *m, int parts, uint64_t seed, int *part,
                           char *err, size_t errlen)
{
#ifdef COURIER_HAVE_METIS
    if (parts == 1 || m->n <= (uint64_t)parts) {
        sparse_block_partition(m->n, parts, part);
        return 0;
    }
    idx_t *xadj, *adj;
    if (metis_graph(m, &xadj, &adj, err, errlen) != 0)
        return -1;
    idx_t nv = (idx_t)m->n, ncon = 1, np = parts, objval = 0;
    idx_t *where = malloc(m->n * sizeof *where);
    if (!where) {
        free(xadj), free(adj);
        set_err(err, errlen, "out of memory for METIS's partition");
        return -1;
    }
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    /* The thesis's baseline minimized communication volume with a hypergraph
     * partitioner. METIS's total-volume objective is the closer one but took more
     * than six minutes on one imitated matrix of 9,000 dense rows (like:nd3k) where
     * the edge cut takes seconds: the cut it is. */
    options[METIS_OPTION_OBJTYPE] = METIS_OBJTYPE_CUT;
    options[METIS_OPTION_SEED] = (idx_t)(seed & 0x7fffffff);
    int rc = METIS_PartGraphKway(&nv, &ncon, xadj, adj, NULL, NULL, NULL, &np, NULL, NULL,
                                 options, &objval, where);
    free(xadj);
    free(adj);
    if (rc != METIS_OK) {
        free(where);
        set_err(err, errlen, "METIS could not partition the matrix into %d parts (error %d)",
                parts, rc);
        return -1;
    }
    for (uint64_t i = 0; i < m->n; i++)
        part[i] = (int)where[i];
    free(where);
    return 0;
#else
    (void)m, (void)parts, (void)seed, (void)part;
    set_err(err, errlen, "this build has no METIS (install libmetis-dev and reconfigure)");
    return -1;
#endif
}

const char *const sparse_partitioners[] = {"block", "metis", NULL};

const char *sparse_partition_misuse(const char *file, int partitioner)
{
    if (file && partitioner != SPARSE_BLOCK)
        return "--partition FILE and --partitioner metis both say how to partition";
    if (partitioner == SPARSE_METIS && !sparse_have_metis())
        return "--partitioner metis: this build has no METIS (install libmetis-dev and "
               "reconfigure)";
    return NULL;
}

int sparse_partition(const sparse_matrix *m, int parts, const char *file, int partitioner,
                     uint64_t seed, int *part, char *err, size_t errlen)
{
    if (file)
        return sparse_read_partition(file, m->n, parts, part, err, errlen);
    if (partitioner == SPARSE_METIS)
        return sparse_metis_partition(m, parts, seed, part, err, errlen);
    sparse_block_partition(m->n, parts, part);
    return 0;
}

/* ---------------------------------------------------------------- the communication */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Section 2.1: the part owning column j computes a_ij x_j; when part[i] differs, the
 * partial sum of row i travels to part[i], once per (sending part, row). Keys
 * (sender << 40 | row) sorted and made unique give, per sender, the rows it sends;
 * grouped by the row's part they are the messages. */
void spmv_comm_build(const sparse_matrix *m, const int *part, int nranks, spmv_comm *c)
{
    if (nranks > 4096 || m->n >= (1ULL << 40)) {
        fprintf(stderr, "sparse: at most 4096 parts and 2^40 rows\n");
        abort();
    }
    uint64_t nk = 0;
    uint64_t *keys = xmalloc(m->nnz * sizeof *keys);
    for (uint64_t j = 0; j < m->n; j++)
        for (uint64_t k = m->col_ptr[j]; k < m->col_ptr[j + 1]; k++)
            if (part[m->row[k]] != part[j])
                keys[nk++] = (uint64_t)part[j] << 40 | m->row[k];
    qsort(keys, nk, sizeof *keys, cmp_u64);
    uint64_t u = 0;
    for (uint64_t i = 0; i < nk; i++)
        if (u == 0 || keys[u - 1] != keys[i])
            keys[u++] = keys[i];
    /* Re-key as (sender, dest part, row) so each message's rows are contiguous. */
    for (uint64_t i = 0; i < u; i++) {
        uint64_t s = keys[i] >> 40, row = keys[i] & ((1ULL << 40) - 1);
        keys[i] = s << 52 | (uint64_t)part[row] << 40 | row;
    }
    qsort(keys, u, sizeof *keys, cmp_u64);
    memset(c, 0, sizeof *c);
    c->nranks = nranks;
    c->ptr = calloc((size_t)nranks + 1, sizeof *c->ptr);
    c->rows = xmalloc(u * sizeof *c->rows);
    uint64_t nmsg = 0;
    for (uint64_t i = 0; i < u; i++)
        if (i == 0 || keys[i] >> 40 != keys[i - 1] >> 40)
            nmsg++;
    c->dest = xmalloc(nmsg * sizeof *c->dest);
    c->volume = xmalloc(nmsg * sizeof *c->volume);
    c->rows_ptr = xmalloc((nmsg + 1) * sizeof *c->rows_ptr);
    if (!c->ptr) {
        fprintf(stderr, "sparse: out of memory\n");
        abort();
    }
    uint64_t x = 0;
    c->rows_ptr[0] = 0;
    for (uint64_t i = 0; i < u; i++) {
        if (i == 0 || keys[i] >> 40 != keys[i - 1] >> 40) {
            int s = (int)(keys[i] >> 52);
            c->dest[x] = (int)((keys[i] >> 40) & 0xfff);
            c->volume[x] = 0;
            c->ptr[s + 1]++;
            x++;
        }
        c->rows[i] = keys[i] & ((1ULL << 40) - 1);
        c->volume[x - 1]++;
        c->rows_ptr[x] = i + 1;
    }
    for (int r = 0; r < nranks; r++)
        c->ptr[r + 1] += c->ptr[r];
    free(keys);
}

void spmv_comm_free(spmv_comm *c)
{
    free(c->ptr);
    free(c->dest);
    free(c->volume);
    free(c->rows_ptr);
    free(c->rows);
    memset(c, 0, sizeof *c);
}
