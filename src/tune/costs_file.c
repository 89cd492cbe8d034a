/* The calibration file of include/courier/tune.h: what courier-calibrate measured on
 * a machine, as "key value" lines a person can read (docs/tuning.md, "Calibration").
 * A file holds one calibration per job shape, each from its "courier-tune" line to
 * the next; a job reads the one of its node's processors nearest its shape. A file is
 * refused whole, with one line naming the problem, when a calibration's version is
 * not this library's, when none describes a node with this number of processors, or
 * when a value is missing, repeated, not a number or out of range. */
#include "courier/tune.h"

#include "common/fatal.h"
#include "common/number.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/* A file larger than this is not a calibration file: refused before it is read. */
#define COSTS_FILE_MAX (CR_TUNE_FILE_MOST * 1024)

void cr_tune_shape_here(cr_tune_shape *s, int ranks_per_node)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    s->processors = online > 0 && online < (1L << 30) ? (int)online : 0;
    s->ranks_per_node = ranks_per_node;
    s->machine_ranks = 0;
}

/* The costs' fields by name, in the order a saved file lists them. */
typedef struct cost_field {
    const char *name;
    size_t offset;
} cost_field;

static const cost_field cost_fields[] = {
    {"alpha_on", offsetof(cr_tune_costs, alpha_on)},
    {"alpha_off", offsetof(cr_tune_costs, alpha_off)},
    {"beta_on", offsetof(cr_tune_costs, beta_on)},
    {"beta_off", offsetof(cr_tune_costs, beta_off)},
    {"append", offsetof(cr_tune_costs, append)},
    {"handle", offsetof(cr_tune_costs, handle)},
    {"route_record", offsetof(cr_tune_costs, route_record)},
    {"forward", offsetof(cr_tune_costs, forward)},
};
#define NCOST_FIELDS (sizeof cost_fields / sizeof cost_fields[0])

static double *cost_at(cr_tune_costs *c, size_t i)
{
    return (double *)((char *)c + cost_fields[i].offset);
}

/* One calibration of a file: the costs and the shape they were measured with. */
typedef struct costs_block {
    cr_tune_costs costs;
    cr_tune_shape shape;
} costs_block;

static void write_block(FILE *f, const costs_block *b)
{
    fprintf(f, "courier-tune %d\nprocessors %d\nranks_per_node %d\nmachine_ranks %d\n",
            CR_TUNE_FILE_VERSION, b->shape.processors, b->shape.ranks_per_node,
            b->shape.machine_ranks);
    cr_tune_costs copy = b->costs;
    for (size_t i = 0; i < NCOST_FIELDS; i++)
        fprintf(f, "%s %.6e\n", cost_fields[i].name, *cost_at(&copy, i));
}

/* The file written whole beside the old one, then renamed over it: a job killed
 * meanwhile leaves the old file, and a reader sees one or the other, never half.
 * The temporary file is created anew (O_EXCL), never through a planted link. */
static int write_blocks(const char *path, const costs_block *b, int n, char *err, size_t errlen)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp) {
        cr_set_error(err, errlen, "%s: path too long", path);
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        cr_set_error(err, errlen, "%s: cannot write the calibration: %s", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    fprintf(f, "# Courier's costs on this machine, from courier-calibrate (docs/tuning.md):\n"
               "# seconds per message (alpha), per byte (beta), per record appended and\n"
               "# handled, per record more under a route that forwards, and per record a\n"
               "# rank passes on for another; within a node (_on) and between nodes (_off).\n"
               "# One calibration per job shape; a job reads the one measured with its\n"
               "# number of ranks on a machine, or the nearest.\n");
    for (int i = 0; i < n; i++)
        write_block(f, &b[i]);
    bool ok = fflush(f) == 0 && !ferror(f) && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        cr_set_error(err, errlen, "%s: cannot write the calibration: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* An exclusive lock on PATH.lock for a read-modify-write of the file: two
 * calibrations added at once both end up in it. Returns the descriptor to close,
 * or -1 with a message. */
static int lock_file(const char *path, char *err, size_t errlen)
{
    char lock[4096];
    if ((size_t)snprintf(lock, sizeof lock, "%s.lock", path) >= sizeof lock) {
        cr_set_error(err, errlen, "%s: path too long", path);
        return -1;
    }
    int fd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        cr_set_error(err, errlen, "%s: cannot lock the calibration file: %s", lock,
                     strerror(errno));
        return -1;
    }
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            cr_set_error(err, errlen, "%s: cannot lock the calibration file: %s", lock,
                         strerror(errno));
            close(fd);
            return -1;
        }
    }
    return fd;
}

int cr_tune_costs_save(const char *path, const cr_tune_costs *c, const cr_tune_shape *shape,
                       char *err, size_t errlen)
{
    costs_block b = {.costs = *c, .shape = *shape};
    int lock = lock_file(path, err, errlen);
    if (lock < 0)
        return -1;
    int rc = write_blocks(path, &b, 1, err, errlen);
    close(lock);
    return rc;
}

/* What the parse of one calibration has seen: a value once per key. */
typedef struct costs_parse {
    const char *path;
    int line;    /* of its 'courier-tune' line */
    int version;
    unsigned seen; /* bit i: cost_fields[i]; bits 28-31: machine ranks, version,
                      processors, ranks per node */
    costs_block block;
} costs_parse;

enum {
    SEEN_MACHINE = 1u << 28,
    SEEN_VERSION = 1u << 29,
    SEEN_PROCESSORS = 1u << 30,
    SEEN_RANKS = 1u << 31
};

static int parse_int_key(costs_parse *p, unsigned bit, int *out, const char *key,
                         const char *value, int line, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno || end == value || *end || v < 0 || v > (1L << 30)) {
        cr_set_error(err, errlen, "%s:%d: %s '%s' is not a whole number", p->path, line, key,
                     value);
        return -1;
    }
    *out = (int)v;
    p->seen |= bit;
    return 0;
}

static unsigned key_bit(const char *key)
{
    for (size_t i = 0; i < NCOST_FIELDS; i++)
        if (!strcmp(key, cost_fields[i].name))
            return 1u << i;
    return !strcmp(key, "courier-tune")     ? SEEN_VERSION
           : !strcmp(key, "processors")     ? SEEN_PROCESSORS
           : !strcmp(key, "ranks_per_node") ? SEEN_RANKS
           : !strcmp(key, "machine_ranks")  ? SEEN_MACHINE
                                            : 0;
}

/* One "key value" line into the calibration being read. */
static int parse_pair(costs_parse *p, const char *key, const char *value, int line, char *err,
                      size_t errlen)
{
    unsigned bit = key_bit(key);
    if (!bit) {
        cr_set_error(err, errlen, "%s:%d: unknown key '%s'", p->path, line, key);
        return -1;
    }
    if (p->seen & bit) {
        cr_set_error(err, errlen, "%s:%d: '%s' is given twice", p->path, line, key);
        return -1;
    }
    cr_tune_shape *sh = &p->block.shape;
    if (bit == SEEN_VERSION)
        return parse_int_key(p, bit, &p->version, key, value, line, err, errlen);
    if (bit == SEEN_PROCESSORS)
        return parse_int_key(p, bit, &sh->processors, key, value, line, err, errlen);
    if (bit == SEEN_RANKS)
        return parse_int_key(p, bit, &sh->ranks_per_node, key, value, line, err, errlen);
    if (bit == SEEN_MACHINE)
        return parse_int_key(p, bit, &sh->machine_ranks, key, value, line, err, errlen);
    char *end;
    errno = 0;
    double v = cr_strtod_c(value, &end);
    if (errno || end == value || *end || !isfinite(v) || v < 0 || v > 1.0) {
        cr_set_error(err, errlen, "%s:%d: %s '%s' is not a cost in seconds (0 to 1)", p->path,
                     line, key, value);
        return -1;
    }
    for (size_t i = 0; i < NCOST_FIELDS; i++)
        if (bit == 1u << i)
            *cost_at(&p->block.costs, i) = v;
    p->seen |= bit;
    return 0;
}

/* The whole file into buf (NUL-terminated), refused if it is not a small regular file. */
static int read_small_file(const char *path, char *buf, size_t cap, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        cr_set_error(err, errlen, "%s: cannot read the calibration: %s", path, strerror(errno));
        return -1;
    }
    size_t n = fread(buf, 1, cap, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n == cap) {
        cr_set_error(err, errlen, "%s: %s", path,
                     bad ? "cannot read the calibration" : "too large for a calibration file");
        return -1;
    }
    if (memchr(buf, '\0', n)) {
        cr_set_error(err, errlen, "%s: not a calibration file (it holds a NUL byte)", path);
        return -1;
    }
    buf[n] = '\0';
    return 0;
}

/* A calibration is whole: this library's version, every cost and its shape. */
static int check_complete(const costs_parse *p, char *err, size_t errlen)
{
    if (p->version != CR_TUNE_FILE_VERSION) {
        cr_set_error(err, errlen, "%s:%d: a calibration of format version %d; this library "
                     "reads version %d (run courier-calibrate again)",
                     p->path, p->line, p->version, CR_TUNE_FILE_VERSION);
        return -1;
    }
    for (size_t i = 0; i < NCOST_FIELDS; i++)
        if (!(p->seen & (1u << i))) {
            cr_set_error(err, errlen, "%s:%d: '%s' is missing", p->path, p->line,
                         cost_fields[i].name);
            return -1;
        }
    const char *shape_key = !(p->seen & SEEN_PROCESSORS) ? "processors"
                            : !(p->seen & SEEN_RANKS)     ? "ranks_per_node"
                            : !(p->seen & SEEN_MACHINE)   ? "machine_ranks"
                                                          : NULL;
    if (shape_key) {
        cr_set_error(err, errlen, "%s:%d: '%s' is missing", p->path, p->line, shape_key);
        return -1;
    }
    return 0;
}

static bool same_shape(const cr_tune_shape *a, const cr_tune_shape *b)
{
    return a->processors == b->processors && a->ranks_per_node == b->ranks_per_node &&
           a->machine_ranks == b->machine_ranks;
}

/* No two calibrations of one file describe the same shape: which to read would be a
 * guess. */
static int check_distinct(const char *path, const costs_parse *p, int n, char *err,
                          size_t errlen)
{
    for (int i = 1; i < n; i++)
        for (int j = 0; j < i; j++)
            if (same_shape(&p[i].block.shape, &p[j].block.shape)) {
                const cr_tune_shape *s = &p[i].block.shape;
                cr_set_error(err, errlen, "%s:%d: a second calibration of %d ranks on %d "
                             "processors (%d to a node; the first at line %d)",
                             path, p[i].line, s->machine_ranks, s->processors,
                             s->ranks_per_node, p[j].line);
                return -1;
            }
    return 0;
}

/* Splits the text into its calibrations, each from its 'courier-tune' line to the
 * next; refuses a key before the first. Returns how many, or -1. */
static int parse_blocks(const char *path, char *text, costs_parse *p, char *err, size_t errlen)
{
    int n = 0, line = 1;
    for (char *at = text, *next; at; at = next, line++) {
        next = strchr(at, '\n');
        if (next)
            *next++ = '\0';
        char *save = NULL, *key = strtok_r(at, " \t\r", &save);
        char *value = key ? strtok_r(NULL, " \t\r", &save) : NULL;
        if (!key || key[0] == '#')
            continue;
        if (!value || strtok_r(NULL, " \t\r", &save)) {
            cr_set_error(err, errlen, "%s:%d: expected 'key value', found '%s'", path, line, key);
            return -1;
        }
        bool starts = !strcmp(key, "courier-tune");
        if (!starts && n == 0) {
            cr_set_error(err, errlen, "%s:%d: '%s' before the first 'courier-tune' line",
                         path, line, key);
            return -1;
        }
        if (starts && n == CR_TUNE_FILE_MOST) {
            cr_set_error(err, errlen, "%s:%d: more than %d calibrations in one file", path,
                         line, CR_TUNE_FILE_MOST);
            return -1;
        }
        if (starts)
            p[n++] = (costs_parse){.path = path, .line = line};
        if (parse_pair(&p[n - 1], key, value, line, err, errlen))
            return -1;
    }
    if (n == 0) {
        cr_set_error(err, errlen, "%s: not a calibration file (no 'courier-tune' line)", path);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (check_complete(&p[i], err, errlen))
            return -1;
    return check_distinct(path, p, n, err, errlen) ? -1 : n;
}

/* How far a calibration's shape is from the job's: the ratio of their ranks on a
 * machine, then of their ranks to a node, each as a distance in log (twice as many
 * ranks is as far as half as many). A shape that does not say (0) is farthest. */
static double shape_distance(int theirs, int ours)
{
    if (ours <= 0)
        return 0;
    return theirs <= 0 ? HUGE_VAL : fabs(log((double)theirs / ours));
}

static bool nearer(const cr_tune_shape *a, const cr_tune_shape *b, const cr_tune_shape *here)
{
    double da = shape_distance(a->machine_ranks, here->machine_ranks);
    double db = shape_distance(b->machine_ranks, here->machine_ranks);
    if (fabs(da - db) > 1e-12)
        return da < db;
    return shape_distance(a->ranks_per_node, here->ranks_per_node) + 1e-12 <
           shape_distance(b->ranks_per_node, here->ranks_per_node);
}

/* The calibration for `here`: of those measured on nodes of its processors, the one
 * nearest its shape, the earlier in the file on a tie; -1 with the line when none was
 * measured on such nodes. */
static int pick_block(const char *path, const costs_parse *p, int n, const cr_tune_shape *here,
                      char *err, size_t errlen)
{
    int best = -1;
    for (int i = 0; i < n; i++) {
        const cr_tune_shape *s = &p[i].block.shape;
        if (here && here->processors && s->processors != here->processors)
            continue;
        if (best < 0 || (here && nearer(s, &p[best].block.shape, here)))
            best = i;
    }
    if (best < 0)
        cr_set_error(err, errlen, "%s: calibrated on nodes of %d processors; this node has %d "
                     "(run courier-calibrate on this machine)",
                     path, p[0].block.shape.processors, here->processors);
    return best;
}

/* The calibrations of the file at `path` into p: how many, or -1 with the line. */
static int read_blocks(const char *path, costs_parse *p, char *err, size_t errlen)
{
    char buf[COSTS_FILE_MAX];
    if (read_small_file(path, buf, sizeof buf, err, errlen))
        return -1;
    return parse_blocks(path, buf, p, err, errlen);
}

int cr_tune_costs_load(const char *path, const cr_tune_shape *here, cr_tune_costs *c,
                       cr_tune_shape *shape, char *err, size_t errlen)
{
    costs_parse p[CR_TUNE_FILE_MOST];
    if (!path) {
        cr_set_error(err, errlen, "no calibration file named");
        return -1;
    }
    int n = read_blocks(path, p, err, errlen);
    int at = n > 0 ? pick_block(path, p, n, here, err, errlen) : -1;
    if (at < 0)
        return -1;
    *c = p[at].block.costs;
    if (shape)
        *shape = p[at].block.shape;
    return 0;
}

/* Orders calibrations by their ranks on a machine, then to a node. */
static int by_shape(const void *a, const void *b)
{
    const cr_tune_shape *x = &((const costs_block *)a)->shape;
    const cr_tune_shape *y = &((const costs_block *)b)->shape;
    if (x->machine_ranks != y->machine_ranks)
        return x->machine_ranks < y->machine_ranks ? -1 : 1;
    if (x->ranks_per_node != y->ranks_per_node)
        return x->ranks_per_node < y->ranks_per_node ? -1 : 1;
    return (x->processors > y->processors) - (x->processors < y->processors);
}

static int add_locked(const char *path, const cr_tune_costs *c, const cr_tune_shape *shape,
                      char *err, size_t errlen);

int cr_tune_costs_add(const char *path, const cr_tune_costs *c, const cr_tune_shape *shape,
                      char *err, size_t errlen)
{
    int lock = lock_file(path, err, errlen);
    if (lock < 0)
        return -1;
    int rc = add_locked(path, c, shape, err, errlen);
    close(lock);
    return rc;
}

static int add_locked(const char *path, const cr_tune_costs *c, const cr_tune_shape *shape,
                      char *err, size_t errlen)
{
    costs_parse p[CR_TUNE_FILE_MOST];
    costs_block out[CR_TUNE_FILE_MOST];
    int n = access(path, F_OK) == 0 ? read_blocks(path, p, err, errlen) : 0, kept = 0;
    if (n < 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (!same_shape(&p[i].block.shape, shape))
            out[kept++] = p[i].block;
    if (kept == CR_TUNE_FILE_MOST) {
        cr_set_error(err, errlen, "%s: holds %d calibrations already, the most one file may",
                     path, kept);
        return -1;
    }
    out[kept++] = (costs_block){.costs = *c, .shape = *shape};
    qsort(out, (size_t)kept, sizeof *out, by_shape);
    return write_blocks(path, out, kept, err, errlen);
}
