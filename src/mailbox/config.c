/* Defaults of every cr_config field, and the mailbox's own COURIER_* variables and
 * range checks; the modules check their fields themselves, and src/courier.c
 * composes them into cr_config_from_env and cr_config_validate. */
#include "mailbox/config.h"
#include "common/fatal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)

/* Accepted ranges, shared by the environment parser and cr_config_validate. */
#define BUFFER_MIN 1
#define BUFFER_MAX GiB
#define CAP_MIN 1
#define CAP_MAX (64 * GiB)
#define INFLIGHT_MIN 1
#define INFLIGHT_MAX 65536
#define INTERVAL_MAX 3600.0
#define WATCHDOG_MIN 0.1 /* below this the state lines would flood the terminal */
#define WATCHDOG_MAX 86400.0
#define VERBOSITY_MAX 3
#define NODE_SIZE_MAX (1 << 30)
#define NEST_LIMIT_MAX 64
#define WATCHDOG_ABORT_MAX 1000

void cr_config_init(cr_config *cfg)
{
    memset(cfg, 0, sizeof *cfg); /* padding too, so configs compare bytewise */
    cfg->buffer_bytes = 64 * KiB;
    cfg->buffer_cap_bytes = 32 * MiB;
    cfg->max_inflight = 32;
    cfg->nest_limit = 16;
    cfg->flush_interval = 0.005;
    cfg->watchdog_seconds = 60.0;
    cfg->verbosity = 0;
    cfg->recv_mode = CR_RECV_PROBE;
    cfg->route = (cr_route){.kind = CR_ROUTE_DIRECT};
    cfg->node_size = 0;
    cfg->exchange = CR_SX_NBX;
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
    double v = strtod(s, &end);
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

/* Each env_* helper returns 1 when the variable is set and valid, 0 when it is not
 * set, -1 with a message when its value is bad. */
static int env_size(const char *name, size_t min, size_t max, size_t *out, char *err,
                    size_t errlen)
{
    const char *s = getenv(name);
    if (!s)
        return 0;
    size_t v;
    if (!parse_size(s, &v) || v < min || v > max) {
        cr_set_error(err, errlen,
                  "%s='%s' is not valid: expected a size in bytes from %zu to %zu "
                  "(suffixes K, M, G allowed)",
                  name, s, min, max);
        return -1;
    }
    *out = v;
    return 1;
}

static int env_long(const char *name, long min, long max, long *out, char *err, size_t errlen)
{
    const char *s = getenv(name);
    if (!s)
        return 0;
    long v;
    if (!parse_long(s, &v) || v < min || v > max) {
        cr_set_error(err, errlen, "%s='%s' is not valid: expected an integer from %ld to %ld",
                  name, s, min, max);
        return -1;
    }
    *out = v;
    return 1;
}

static int env_seconds(const char *name, double max, double *out, char *err, size_t errlen)
{
    const char *s = getenv(name);
    if (!s)
        return 0;
    double v;
    if (!parse_seconds(s, &v) || v < 0 || v > max) {
        cr_set_error(err, errlen,
                  "%s='%s' is not valid: expected seconds from 0 to %g "
                  "(a number, optionally with the unit s, ms or us)",
                  name, s, max);
        return -1;
    }
    *out = v;
    return 1;
}

int cr_mailbox_config_from_env(cr_config *cfg, char *err, size_t errlen)
{
    cr_config c = *cfg;
    long l;
    int r;

    if (env_size("COURIER_BUFFER_SIZE", BUFFER_MIN, BUFFER_MAX, &c.buffer_bytes, err,
                 errlen) < 0)
        return -1;
    if (env_size("COURIER_BUFFER_CAP", CAP_MIN, CAP_MAX, &c.buffer_cap_bytes, err, errlen) < 0)
        return -1;
    if ((r = env_long("COURIER_MAX_INFLIGHT", INFLIGHT_MIN, INFLIGHT_MAX, &l, err, errlen)) < 0)
        return -1;
    if (r)
        c.max_inflight = (unsigned)l;
    if ((r = env_long("COURIER_NEST_LIMIT", 0, NEST_LIMIT_MAX, &l, err, errlen)) < 0)
        return -1;
    if (r)
        c.nest_limit = (unsigned)l;
    if (env_seconds("COURIER_FLUSH_INTERVAL", INTERVAL_MAX, &c.flush_interval, err, errlen) < 0)
        return -1;
    if (env_seconds("COURIER_WATCHDOG", WATCHDOG_MAX, &c.watchdog_seconds, err, errlen) < 0)
        return -1;
    if (c.watchdog_seconds > 0 && c.watchdog_seconds < WATCHDOG_MIN) {
        cr_set_error(err, errlen, "COURIER_WATCHDOG='%s' is not valid: expected 0 (off) or "
                     "seconds from %g to %g", getenv("COURIER_WATCHDOG"), WATCHDOG_MIN, WATCHDOG_MAX);
        return -1;
    }
    if ((r = env_long("COURIER_WATCHDOG_ABORT", 0, WATCHDOG_ABORT_MAX, &l, err, errlen)) < 0)
        return -1;
    if (r)
        c.watchdog_abort = (unsigned)l;
    if ((r = env_long("COURIER_STATS", 0, 1, &l, err, errlen)) < 0)
        return -1;
    if (r)
        c.print_stats = l != 0;
    if ((r = env_long("COURIER_VERBOSE", 0, VERBOSITY_MAX, &l, err, errlen)) < 0)
        return -1;
    if (r)
        c.verbosity = (int)l;

    const char *recv = getenv("COURIER_RECV");
    if (recv) {
        if (!strcmp(recv, "probe"))
            c.recv_mode = CR_RECV_PROBE;
        else if (!strcmp(recv, "prepost"))
            c.recv_mode = CR_RECV_PREPOST;
        else {
            cr_set_error(err, errlen, "COURIER_RECV='%s' is not valid: expected probe or prepost",
                      recv);
            return -1;
        }
    }
    if ((r = env_long("COURIER_NODE_SIZE", 0, NODE_SIZE_MAX, &l, err, errlen)) < 0)
        return -1;
    if (r)
        c.node_size = (unsigned)l;

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
    const char *trace = getenv("COURIER_TRACE");
    if (trace) {
        if (strlen(trace) >= sizeof c.trace_path) {
            cr_set_error(err, errlen, "COURIER_TRACE is not valid: the path is longer than %zu "
                         "characters", sizeof c.trace_path - 1);
            return -1;
        }
        snprintf(c.trace_path, sizeof c.trace_path, "%s", trace);
    }
    *cfg = c;
    return 0;
}

int cr_mailbox_config_validate(const cr_config *cfg, char *err, size_t errlen)
{
    if (cfg->buffer_bytes < BUFFER_MIN || cfg->buffer_bytes > BUFFER_MAX) {
        cr_set_error(err, errlen, "buffer_bytes=%zu is out of range: expected %zu to %zu",
                  cfg->buffer_bytes, (size_t)BUFFER_MIN, (size_t)BUFFER_MAX);
        return -1;
    }
    if (cfg->buffer_cap_bytes < CAP_MIN || cfg->buffer_cap_bytes > CAP_MAX) {
        cr_set_error(err, errlen, "buffer_cap_bytes=%zu is out of range: expected %zu to %zu",
                  cfg->buffer_cap_bytes, (size_t)CAP_MIN, (size_t)CAP_MAX);
        return -1;
    }
    if (cfg->max_inflight < INFLIGHT_MIN || cfg->max_inflight > INFLIGHT_MAX) {
        cr_set_error(err, errlen, "max_inflight=%u is out of range: expected %d to %d",
                  cfg->max_inflight, INFLIGHT_MIN, INFLIGHT_MAX);
        return -1;
    }
    if (cfg->nest_limit > NEST_LIMIT_MAX) {
        cr_set_error(err, errlen, "nest_limit=%u is out of range: expected 0 to %d",
                     cfg->nest_limit, NEST_LIMIT_MAX);
        return -1;
    }
    if (!(cfg->flush_interval >= 0 && cfg->flush_interval <= INTERVAL_MAX)) {
        cr_set_error(err, errlen, "flush_interval=%g is out of range: expected 0 to %g seconds",
                  cfg->flush_interval, INTERVAL_MAX);
        return -1;
    }
    if (!(cfg->watchdog_seconds == 0 ||
          (cfg->watchdog_seconds >= WATCHDOG_MIN && cfg->watchdog_seconds <= WATCHDOG_MAX))) {
        cr_set_error(err, errlen, "watchdog_seconds=%g is out of range: expected 0 (off) or "
                     "%g to %g seconds", cfg->watchdog_seconds, WATCHDOG_MIN, WATCHDOG_MAX);
        return -1;
    }
    if (cfg->watchdog_abort > WATCHDOG_ABORT_MAX) {
        cr_set_error(err, errlen, "watchdog_abort=%u is out of range: expected 0 (never) to %d",
                     cfg->watchdog_abort, WATCHDOG_ABORT_MAX);
        return -1;
    }
    if (cfg->verbosity < 0 || cfg->verbosity > VERBOSITY_MAX) {
        cr_set_error(err, errlen, "verbosity=%d is out of range: expected 0 to %d", cfg->verbosity,
                  VERBOSITY_MAX);
        return -1;
    }
    if (cfg->recv_mode != CR_RECV_PROBE && cfg->recv_mode != CR_RECV_PREPOST) {
        cr_set_error(err, errlen, "recv_mode=%d is not valid: expected CR_RECV_PROBE or CR_RECV_PREPOST",
                  (int)cfg->recv_mode);
        return -1;
    }
    if (cfg->node_size > NODE_SIZE_MAX) {
        cr_set_error(err, errlen, "node_size=%u is out of range: expected 0 to %d", cfg->node_size,
                  NODE_SIZE_MAX);
        return -1;
    }
    if (memchr(cfg->trace_path, '\0', sizeof cfg->trace_path) == NULL) {
        cr_set_error(err, errlen, "trace_path is not a terminated string of at most %zu "
                     "characters", sizeof cfg->trace_path - 1);
        return -1;
    }
    const cr_route *rt = &cfg->route;
    if ((unsigned)rt->kind > CR_ROUTE_HYPERCUBE) {
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

/* Every COURIER_* variable the library reads (the modules' included). */
static const char *const known_variables[] = {
    "COURIER_BUFFER_SIZE", "COURIER_BUFFER_CAP", "COURIER_MAX_INFLIGHT", "COURIER_NEST_LIMIT",
    "COURIER_FLUSH_INTERVAL", "COURIER_WATCHDOG", "COURIER_WATCHDOG_ABORT", "COURIER_STATS",
    "COURIER_VERBOSE", "COURIER_RECV", "COURIER_ROUTE", "COURIER_NODE_SIZE", "COURIER_TRACE",
    "COURIER_EXCHANGE", "COURIER_ALLREDUCE", "COURIER_ALLGATHER",
};
#define NKNOWN (sizeof known_variables / sizeof known_variables[0])

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
    const char *best = known_variables[0];
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < NKNOWN; i++) {
        size_t d = edit_distance(name, known_variables[i]);
        if (d < best_d)
            best = known_variables[i], best_d = d;
    }
    return best;
}

bool cr_config_is_known_variable(const char *name)
{
    for (size_t i = 0; i < NKNOWN; i++)
        if (!strcmp(name, known_variables[i]))
            return true;
    return false;
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
