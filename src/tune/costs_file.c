/* The calibration file of include/courier/tune.h: what courier-calibrate measured on
 * a machine, as "key value" lines a person can read (docs/tuning.md, "Calibration").
 * A file is refused whole, with one line naming the problem, when its version is not
 * this library's, when it describes a node with another number of processors, or
 * when a value is missing, repeated, not a number or out of range. */
#include "courier/tune.h"

#include "common/fatal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A file larger than this is not a calibration file: refused before it is read. */
#define COSTS_FILE_MAX 4096

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

int cr_tune_costs_save(const char *path, const cr_tune_costs *c, const cr_tune_shape *shape,
                       char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        cr_set_error(err, errlen, "%s: cannot write the calibration: %s", path, strerror(errno));
        return -1;
    }
    fprintf(f, "# Courier's costs on this machine, from courier-calibrate (docs/tuning.md):\n"
               "# seconds per message (alpha), per byte (beta), per record appended and\n"
               "# handled, per record more under a route that forwards, and per record a\n"
               "# rank passes on for another; within a node (_on) and between nodes (_off).\n");
    fprintf(f, "courier-tune %d\nprocessors %d\nranks_per_node %d\nmachine_ranks %d\n",
            CR_TUNE_FILE_VERSION, shape->processors, shape->ranks_per_node,
            shape->machine_ranks);
    cr_tune_costs copy = *c;
    for (size_t i = 0; i < NCOST_FIELDS; i++)
        fprintf(f, "%s %.6e\n", cost_fields[i].name, *cost_at(&copy, i));
    if (ferror(f) | (fclose(f) != 0)) {
        cr_set_error(err, errlen, "%s: cannot write the calibration: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* What one parse has seen: a value once per key. */
typedef struct costs_parse {
    const char *path;
    int version, processors, ranks_per_node, machine_ranks;
    unsigned seen; /* bit i: cost_fields[i]; bits 28-31: machine ranks, version,
                      processors, ranks per node */
    cr_tune_costs costs;
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

static int parse_line(costs_parse *p, char *text, int line, char *err, size_t errlen)
{
    char *save = NULL, *key = strtok_r(text, " \t\r", &save);
    char *value = key ? strtok_r(NULL, " \t\r", &save) : NULL;
    if (!key || key[0] == '#')
        return 0;
    if (!value || strtok_r(NULL, " \t\r", &save)) {
        cr_set_error(err, errlen, "%s:%d: expected 'key value', found '%s'", p->path, line, key);
        return -1;
    }
    unsigned bit = 0;
    for (size_t i = 0; i < NCOST_FIELDS && !bit; i++)
        if (!strcmp(key, cost_fields[i].name))
            bit = 1u << i;
    bit = !strcmp(key, "courier-tune") ? SEEN_VERSION
          : !strcmp(key, "processors")  ? SEEN_PROCESSORS
          : !strcmp(key, "ranks_per_node") ? SEEN_RANKS
          : !strcmp(key, "machine_ranks")  ? SEEN_MACHINE
                                           : bit;
    if (!bit) {
        cr_set_error(err, errlen, "%s:%d: unknown key '%s'", p->path, line, key);
        return -1;
    }
    if (p->seen & bit) {
        cr_set_error(err, errlen, "%s:%d: '%s' is given twice", p->path, line, key);
        return -1;
    }
    if (bit == SEEN_VERSION)
        return parse_int_key(p, bit, &p->version, key, value, line, err, errlen);
    if (bit == SEEN_PROCESSORS)
        return parse_int_key(p, bit, &p->processors, key, value, line, err, errlen);
    if (bit == SEEN_RANKS)
        return parse_int_key(p, bit, &p->ranks_per_node, key, value, line, err, errlen);
    if (bit == SEEN_MACHINE)
        return parse_int_key(p, bit, &p->machine_ranks, key, value, line, err, errlen);
    char *end;
    errno = 0;
    double v = strtod(value, &end);
    if (errno || end == value || *end || !isfinite(v) || v < 0 || v > 1.0) {
        cr_set_error(err, errlen, "%s:%d: %s '%s' is not a cost in seconds (0 to 1)", p->path,
                     line, key, value);
        return -1;
    }
    for (size_t i = 0; i < NCOST_FIELDS; i++)
        if (bit == 1u << i)
            *cost_at(&p->costs, i) = v;
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

static int check_complete(const costs_parse *p, const cr_tune_shape *here, char *err,
                          size_t errlen)
{
    if (!(p->seen & SEEN_VERSION)) {
        cr_set_error(err, errlen, "%s: not a calibration file (no 'courier-tune' line)", p->path);
        return -1;
    }
    if (p->version != CR_TUNE_FILE_VERSION) {
        cr_set_error(err, errlen, "%s: a calibration of format version %d; this library reads "
                     "version %d (run courier-calibrate again)",
                     p->path, p->version, CR_TUNE_FILE_VERSION);
        return -1;
    }
    for (size_t i = 0; i < NCOST_FIELDS; i++)
        if (!(p->seen & (1u << i))) {
            cr_set_error(err, errlen, "%s: '%s' is missing", p->path, cost_fields[i].name);
            return -1;
        }
    const char *shape_key = !(p->seen & SEEN_PROCESSORS) ? "processors"
                            : !(p->seen & SEEN_RANKS)     ? "ranks_per_node"
                            : !(p->seen & SEEN_MACHINE)   ? "machine_ranks"
                                                          : NULL;
    if (shape_key) {
        cr_set_error(err, errlen, "%s: '%s' is missing", p->path, shape_key);
        return -1;
    }
    if (here && here->processors && p->processors != here->processors) {
        cr_set_error(err, errlen, "%s: calibrated on nodes of %d processors; this node has %d "
                     "(run courier-calibrate on this machine)",
                     p->path, p->processors, here->processors);
        return -1;
    }
    return 0;
}

int cr_tune_costs_load(const char *path, const cr_tune_shape *here, cr_tune_costs *c,
                       cr_tune_shape *shape, char *err, size_t errlen)
{
    char buf[COSTS_FILE_MAX];
    if (!path || read_small_file(path, buf, sizeof buf, err, errlen))
        return path ? -1 : (cr_set_error(err, errlen, "no calibration file named"), -1);
    costs_parse p = {.path = path};
    int line = 1;
    for (char *at = buf, *next; at; at = next, line++) {
        next = strchr(at, '\n');
        if (next)
            *next++ = '\0';
        if (parse_line(&p, at, line, err, errlen))
            return -1;
    }
    if (check_complete(&p, here, err, errlen))
        return -1;
    *c = p.costs;
    if (shape)
        *shape = (cr_tune_shape){.processors = p.processors, .ranks_per_node = p.ranks_per_node,
                                 .machine_ranks = p.machine_ranks};
    return 0;
}
