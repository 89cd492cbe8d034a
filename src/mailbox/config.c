/* Defaults of every cr_config field, and the mailbox's own COURIER_* variables and
 * range checks; the modules check their fields themselves, and src/courier.c
 * composes them into cr_config_from_env and cr_config_validate. */
#include "mailbox/config.h"
#include "common/fatal.h"
#include "common/number.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)

#define WATCHDOG_MIN 0.1 /* below this the state lines would flood the terminal */

/* The mailbox's numeric settings: one row each drives the default, the environment
 * variable and cr_config_validate, so a range is written once. */
typedef enum setting_kind {
    SET_SIZE,    /* size_t bytes; the variable takes K, M, G suffixes */
    SET_UINT,    /* unsigned */
    SET_INT,     /* int */
    SET_BOOL,    /* bool, from 0 or 1 */
    SET_SECONDS, /* double seconds; the variable takes the units s, ms, us */
    SET_CHOICE,  /* an enum (stored as an int) or a bool, named by one of its words */
} setting_kind;

/* A word a SET_CHOICE variable takes, the value it stands for and the value's name in
 * C (for the message of cr_config_validate). */
typedef struct choice {
    const char *word;
    int value;
    const char *c_name;
} choice;
static const choice recv_choices[] = {{"probe", CR_RECV_PROBE, "CR_RECV_PROBE"},
                                      {"prepost", CR_RECV_PREPOST, "CR_RECV_PREPOST"},
                                      {NULL, 0, NULL}};
static const choice on_off[] = {{"on", 1, "true"}, {"off", 0, "false"}, {NULL, 0, NULL}};
static const choice flow_choices[] = {{"waits", CR_FLOW_WAITS, "CR_FLOW_WAITS"},
                                      {"deep-held", CR_FLOW_DEEP_HELD, "CR_FLOW_DEEP_HELD"},
                                      {NULL, 0, NULL}};
static const choice tune_choices[] = {{"calibrate", 1, "true"}, {"off", 0, "false"},
                                      {NULL, 0, NULL}};

typedef struct setting {
    const char *env;   /* its variable */
    const char *field; /* its cr_config field, named in validation messages */
    size_t offset;     /* of the field in cr_config */
    setting_kind kind;
    double min, max;
    double dflt;
    bool zero_is_off;  /* 0 is allowed below min: the feature is off */
    const char *doc;   /* what it sets (docs/configuration.md says more) */
    bool is_bool;      /* SET_CHOICE: the field is a bool, not an enum */
    const choice *choices; /* SET_CHOICE: in the order messages list them, ended by a
                              NULL word */
} setting;

_Static_assert(sizeof(cr_recv_mode) == sizeof(int) && sizeof(cr_flow_policy) == sizeof(int),
               "SET_CHOICE stores an enum as an int");

#define AT(f) #f, offsetof(cr_config, f)
static const setting settings[] = {
    {"COURIER_BUFFER_SIZE", AT(buffer_bytes), SET_SIZE, 1, (double)GiB, 64 * KiB, false,
     "flush threshold of a destination's send buffer", false, NULL},
    {"COURIER_BUFFER_CAP", AT(buffer_cap_bytes), SET_SIZE, 1, 64.0 * (double)GiB, 32 * MiB,
     false, "bytes a rank's send buffers may hold before it waits", false, NULL},
    {"COURIER_MAX_INFLIGHT", AT(max_inflight), SET_UINT, 1, 65536, 32, false,
     "sends in flight per rank at most", false, NULL},
    {"COURIER_NEST_LIMIT", AT(nest_limit), SET_UINT, 0, 64, 16, false,
     "how deep a reentrant handler over the cap may handle buffers", false, NULL},
    {"COURIER_PARK_CAP", AT(park_cap_bytes), SET_SIZE, 1, 64.0 * (double)GiB, 0, true,
     "under COURIER_FLOW=deep-held, bytes from other ranks a rank parks before it stops "
     "taking buffers (0: COURIER_MAX_INFLIGHT buffers of COURIER_BUFFER_SIZE)", false, NULL},
    {"COURIER_PARK_RELIEF", AT(park_relief_polls), SET_UINT, 0, 1 << 20, 64, false,
     "most polls without progress before a paused rank with a full park takes a buffer; the "
     "first relief comes after one, each further one after twice as many (0: never)", false,
     NULL},
    {"COURIER_FLUSH_INTERVAL", AT(flush_interval), SET_SECONDS, 0, 3600, 0.005, false,
     "longest a partly filled buffer waits while the rank is idle", false, NULL},
    {"COURIER_WATCHDOG", AT(watchdog_seconds), SET_SECONDS, WATCHDOG_MIN, 86400, 60, true,
     "seconds without progress before the watchdog reports (0: off)", false, NULL},
    {"COURIER_WATCHDOG_ABORT", AT(watchdog_abort), SET_UINT, 0, 1000, 0, false,
     "reports after which the watchdog ends the job (0: never)", false, NULL},
    {"COURIER_STATS", AT(print_stats), SET_BOOL, 0, 1, 0, false,
     "print the counters when the comm is destroyed", false, NULL},
    {"COURIER_VERBOSE", AT(verbosity), SET_INT, 0, 3, 0, false, "diagnostic output level",
     false, NULL},
    {"COURIER_DENSE_RANKS", AT(dense_ranks), SET_UINT, 0, 1 << 30, 1024, false,
     "largest job whose ranks keep send state for every destination (above it: only for "
     "the destinations used; 0: always only those)", false, NULL},
    {"COURIER_NODE_SIZE", AT(node_size), SET_UINT, 0, 1 << 30, 0, false,
     "ranks per virtual node (0: the nodes MPI reports)", false, NULL},
    {"COURIER_SHM_BYTES", AT(shm_bytes), SET_SIZE, 0, 64.0 * (double)GiB, 16 * MiB, false,
     "shared memory a rank offers the other ranks of its node for their rings (too little "
     "for two slots per sender: the node's blocks go through MPI)", false, NULL},
    {"COURIER_RECV", AT(recv_mode), SET_CHOICE, 0, 0, CR_RECV_PROBE, false,
     "how a rank receives blocks (docs/receive.md)", false, recv_choices},
    {"COURIER_SHM", AT(shm), SET_CHOICE, 0, 0, 1, false,
     "blocks between ranks of a node through rings in shared memory", true, on_off},
    {"COURIER_FLOW", AT(flow), SET_CHOICE, 0, 0, CR_FLOW_DEEP_HELD, false,
     "the flow policy (docs/flow_control.md)", false, flow_choices},
    {"COURIER_TUNE", AT(tune_calibrate), SET_CHOICE, 0, 0, 0, false,
     "when something is auto, measure the costs at creation", true, tune_choices},
};
#undef AT
#define NSETTINGS (sizeof settings / sizeof settings[0])

static double value_of(const cr_config *cfg, const setting *t)
{
    const char *at = (const char *)cfg + t->offset;
    size_t z;
    unsigned u;
    int i;
    bool b;
    double d;
    switch (t->kind) {
    case SET_SIZE: memcpy(&z, at, sizeof z); return (double)z;
    case SET_UINT: memcpy(&u, at, sizeof u); return u;
    case SET_INT: memcpy(&i, at, sizeof i); return i;
    case SET_BOOL: memcpy(&b, at, sizeof b); return b;
    case SET_CHOICE:
        if (t->is_bool) {
            memcpy(&b, at, sizeof b);
            return b;
        }
        memcpy(&i, at, sizeof i);
        return i;
    default: memcpy(&d, at, sizeof d); return d;
    }
}

/* v is in range (in_range) and whole where the kind is. */
static void store(cr_config *cfg, const setting *t, double v)
{
    char *at = (char *)cfg + t->offset;
    size_t z = (size_t)v;
    unsigned u = (unsigned)v;
    int i = (int)v;
    bool b = v != 0;
    switch (t->kind) {
    case SET_SIZE: memcpy(at, &z, sizeof z); break;
    case SET_UINT: memcpy(at, &u, sizeof u); break;
    case SET_INT: memcpy(at, &i, sizeof i); break;
    case SET_BOOL: memcpy(at, &b, sizeof b); break;
    case SET_SECONDS: memcpy(at, &v, sizeof v); break;
    case SET_CHOICE:
        if (t->is_bool)
            memcpy(at, &b, sizeof b);
        else
            memcpy(at, &i, sizeof i);
        break;
    }
}

/* The choice of t whose word is `word` (or, when word is NULL, whose value is v), or
 * NULL. */
static const choice *choice_of(const setting *t, const char *word, double v)
{
    for (int k = 0; t->choices[k].word; k++)
        if (word ? !strcmp(word, t->choices[k].word) : v == t->choices[k].value)
            return &t->choices[k];
    return NULL;
}

/* "a or b", "a, b or c": the choices' words (or their names in C). */
static void list_choices(const setting *t, bool in_c, char *out, size_t len)
{
    int n = 0;
    while (t->choices && t->choices[n].word)
        n++;
    size_t used = 0;
    out[0] = '\0';
    for (int k = 0; k < n && used < len; k++) {
        const char *sep = k == 0 ? "" : k == n - 1 ? " or " : ", ";
        int w = snprintf(out + used, len - used, "%s%s", sep,
                         in_c ? t->choices[k].c_name : t->choices[k].word);
        used += w > 0 ? (size_t)w : 0;
    }
}

/* NaN is in no range. */
static bool in_range(const setting *t, double v)
{
    if (t->kind == SET_CHOICE)
        return choice_of(t, NULL, v) != NULL;
    return (t->zero_is_off && v == 0) || (v >= t->min && v <= t->max);
}

void cr_config_init(cr_config *cfg)
{
    memset(cfg, 0, sizeof *cfg); /* padding too, so configs compare bytewise */
    for (size_t i = 0; i < NSETTINGS; i++)
        store(cfg, &settings[i], settings[i].dflt);
    cfg->route = (cr_route){.kind = CR_ROUTE_DIRECT};
    cfg->exchange = CR_NBX_PROTOCOL_NBX;
    cfg->allreduce = CR_ALLREDUCE_AUTO;
    cfg->allreduce_ports = 0;
    cfg->allgather = CR_ALLGATHER_AUTO;
}

/* "65536", "64K", "64KiB", "1m", "2 GB": binary multiples, case-insensitive. */
static bool parse_size(const char *s, size_t *out)
{
    while (isspace((unsigned char)*s))
        s++;
    if (!isdigit((unsigned char)*s))
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE)
        return false;
    while (isspace((unsigned char)*end))
        end++;
    unsigned long long mult = 1;
    if (*end) {
        switch (toupper((unsigned char)*end)) {
        case 'B': mult = 1; break;
        case 'K': mult = KiB; break;
        case 'M': mult = MiB; break;
        case 'G': mult = GiB; break;
        default: return false;
        }
        end++;
        if (mult > 1 && (!strcasecmp(end, "iB") || !strcasecmp(end, "B")))
            end += strlen(end);
        if (*end)
            return false;
    }
    if (v > SIZE_MAX / mult)
        return false;
    *out = (size_t)(v * mult);
    return true;
}

/* A plain decimal number of seconds, or one with the unit s, ms or us. */
static bool parse_seconds(const char *s, double *out)
{
    errno = 0;
    char *end;
    double v = cr_strtod_c(s, &end);
    if (end == s || errno == ERANGE || !isfinite(v))
        return false;
    while (isspace((unsigned char)*end))
        end++;
    if (!strcmp(end, "ms"))
        v /= 1e3;
    else if (!strcmp(end, "us"))
        v /= 1e6;
    else if (*end && strcmp(end, "s"))
        return false;
    *out = v;
    return true;
}

static bool parse_long(const char *s, long *out)
{
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || errno == ERANGE)
        return false;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return false;
    *out = v;
    return true;
}

/* Read setting t's variable into cfg if it is set: 0, or -1 with a message naming
 * the variable, the value and what it takes if the value is bad. */
static int env_setting(const setting *t, cr_config *cfg, char *err, size_t errlen)
{
    const char *s = getenv(t->env);
    if (!s)
        return 0;
    if (t->offset == offsetof(cr_config, buffer_bytes) && !strcmp(s, "auto")) {
        cfg->buffer_auto = true; /* chosen when the comm is created (courier/tune.h) */
        return 0;
    }
    if (t->kind == SET_CHOICE) {
        const choice *ch = choice_of(t, s, 0);
        if (ch) {
            store(cfg, t, ch->value);
            return 0;
        }
        char words[128];
        list_choices(t, false, words, sizeof words);
        cr_set_error(err, errlen, "%s='%s' is not valid: expected %s", t->env, s, words);
        return -1;
    }
    double v = 0;
    bool parsed;
    if (t->kind == SET_SIZE) {
        size_t z = 0;
        parsed = parse_size(s, &z);
        v = (double)z;
    } else if (t->kind == SET_SECONDS) {
        parsed = parse_seconds(s, &v);
    } else {
        long l = 0;
        parsed = parse_long(s, &l);
        v = (double)l;
    }
    if (parsed && in_range(t, v)) {
        store(cfg, t, v);
        return 0;
    }
    if (t->kind == SET_SIZE)
        cr_set_error(err, errlen, "%s='%s' is not valid: expected a size in bytes from %.0f to "
                     "%.0f (suffixes K, M, G allowed)", t->env, s, t->min, t->max);
    else if (t->kind == SET_SECONDS && t->zero_is_off && parsed && v > 0 && v < t->min)
        cr_set_error(err, errlen, "%s='%s' is not valid: expected 0 (off) or seconds from %g to "
                     "%g", t->env, s, t->min, t->max);
    else if (t->kind == SET_SECONDS)
        cr_set_error(err, errlen, "%s='%s' is not valid: expected seconds from %g to %g (a "
                     "number, optionally with the unit s, ms or us)", t->env, s,
                     t->zero_is_off ? 0.0 : t->min, t->max);
    else
        cr_set_error(err, errlen, "%s='%s' is not valid: expected an integer from %.0f to %.0f",
                     t->env, s, t->min, t->max);
    return -1;
}

/* A path variable, when set, into dst (cap bytes with the NUL). Returns 0, or -1 with
 * the line naming the variable when the path does not fit. */
static int path_from_env(const char *name, char *dst, size_t cap, char *err, size_t errlen)
{
    const char *value = getenv(name);
    if (!value)
        return 0;
    if (strlen(value) >= cap) {
        cr_set_error(err, errlen, "%s is not valid: the path is longer than %zu characters", name,
                     cap - 1);
        return -1;
    }
    snprintf(dst, cap, "%s", value);
    return 0;
}

/* The cap a configuration from the environment had below its buffer size (0: none).
 * Below the buffer size, every buffer is flushed as soon as it holds a record: at the
 * default sizes' ratio that ran 16 times slower. Such a cap is raised to the buffer
 * size, and rank 0 says so once (cr_config_warn_raised). */
static size_t raised_cap_from;

int cr_mailbox_config_from_env(cr_config *cfg, char *err, size_t errlen)
{
    cr_config c = *cfg;
    for (size_t i = 0; i < NSETTINGS; i++)
        if (env_setting(&settings[i], &c, err, errlen) < 0)
            return -1;

    const char *route = getenv("COURIER_ROUTE");
    if (route) {
        char why[256];
        if (cr_route_parse(route, &c.route, why, sizeof why)) {
            const char *reason = strstr(why, "is not valid: ");
            cr_set_error(err, errlen, "COURIER_ROUTE='%s' is not valid: %s", route,
                      reason ? reason + strlen("is not valid: ") : why);
            return -1;
        }
    }
    if (path_from_env("COURIER_TRACE", c.trace_path, sizeof c.trace_path, err, errlen) ||
        path_from_env("COURIER_TUNE_FILE", c.tune_file, sizeof c.tune_file, err, errlen))
        return -1;
    if (c.buffer_cap_bytes < c.buffer_bytes) {
        raised_cap_from = c.buffer_cap_bytes;
        c.buffer_cap_bytes = c.buffer_bytes;
    }
    *cfg = c;
    return 0;
}

int cr_mailbox_config_validate(const cr_config *cfg, char *err, size_t errlen)
{
    for (size_t i = 0; i < NSETTINGS; i++) {
        const setting *t = &settings[i];
        double v = value_of(cfg, t);
        if (in_range(t, v))
            continue;
        char names[128];
        list_choices(t, true, names, sizeof names);
        if (t->kind == SET_CHOICE)
            cr_set_error(err, errlen, "%s=%.0f is not valid: expected %s", t->field, v, names);
        else if (t->kind == SET_SECONDS)
            cr_set_error(err, errlen, "%s=%g is out of range: expected %s%g to %g seconds",
                         t->field, v, t->zero_is_off ? "0 (off) or " : "", t->min, t->max);
        else
            cr_set_error(err, errlen, "%s=%.0f is out of range: expected %.0f to %.0f", t->field,
                         v, t->min, t->max);
        return -1;
    }
    if (cfg->tune_calibrate && cfg->tune_file[0]) {
        cr_set_error(err, errlen, "COURIER_TUNE=calibrate and COURIER_TUNE_FILE (%s) both give "
                     "the costs auto chooses with; set one of them", cfg->tune_file);
        return -1;
    }
    if (memchr(cfg->trace_path, '\0', sizeof cfg->trace_path) == NULL) {
        cr_set_error(err, errlen, "trace_path is not a terminated string of at most %zu "
                     "characters", sizeof cfg->trace_path - 1);
        return -1;
    }
    const cr_route *rt = &cfg->route;
    if ((unsigned)rt->kind > CR_ROUTE_AUTO) {
        cr_set_error(err, errlen, "route.kind=%d is not valid: expected a cr_route_kind", (int)rt->kind);
        return -1;
    }
    if (rt->kind == CR_ROUTE_GRID) {
        bool ok = rt->ndims <= CR_ROUTE_MAX_DIMS;
        for (unsigned i = 0; ok && i < rt->ndims; i++)
            ok = rt->dims[i] >= 1;
        if (!ok) {
            cr_set_error(err, errlen,
                      "route grid has %u dimensions: expected 0 (chosen from P) to %d, each at least 1",
                      rt->ndims, CR_ROUTE_MAX_DIMS);
            return -1;
        }
    }
    return 0;
}

/* The COURIER_* variables the library reads besides the settings table's (the
 * modules' included). */
static const char *const other_variables[] = {
    "COURIER_ROUTE", "COURIER_TRACE", "COURIER_TUNE_FILE",
    "COURIER_EXCHANGE", "COURIER_ALLREDUCE", "COURIER_ALLGATHER",
};
#define NOTHER (sizeof other_variables / sizeof other_variables[0])
#define NKNOWN (NSETTINGS + NOTHER)

static const char *known_variable(size_t i)
{
    return i < NSETTINGS ? settings[i].env : other_variables[i - NSETTINGS];
}

/* Levenshtein distance of two short names (longer ones are cut at 63 bytes). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strnlen(a, 63), lb = strnlen(b, 63), row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *cr_config_nearest_variable(const char *name)
{
    const char *best = known_variable(0);
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < NKNOWN; i++) {
        size_t d = edit_distance(name, known_variable(i));
        if (d < best_d)
            best = known_variable(i), best_d = d;
    }
    return best;
}

bool cr_config_is_known_variable(const char *name)
{
    for (size_t i = 0; i < NKNOWN; i++)
        if (!strcmp(name, known_variable(i)))
            return true;
    return false;
}

void cr_config_warn_raised(FILE *out, const cr_config *cfg)
{
    if (raised_cap_from && cfg->buffer_cap_bytes == cfg->buffer_bytes)
        fprintf(out, "courier: warning: COURIER_BUFFER_CAP (%zu bytes) is below the buffer size "
                "COURIER_BUFFER_SIZE (%zu bytes), which would send every record alone: raised "
                "to %zu\n", raised_cap_from, cfg->buffer_bytes, cfg->buffer_bytes);
}

void cr_config_warn_unknown(FILE *out)
{
    extern char **environ;
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "COURIER_", 8))
            continue;
        char name[64];
        size_t n = strcspn(*e, "=");
        snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), *e);
        if (!cr_config_is_known_variable(name))
            fprintf(out, "courier: warning: %s is not a Courier setting and is ignored; did you "
                    "mean %s?\n", name, cr_config_nearest_variable(name));
    }
}
