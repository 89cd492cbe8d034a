/* The COURIER_TRACE timeline writer (see trace.h). */
#include "mailbox/trace.h"

#include "common/fatal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define PART_BUFFER ((size_t)1 << 20)
#define EVENT_MAX 1024 /* one event line at most (user phase names are cut to fit) */
#define PHASES_MAX 64  /* user phases open at once (cr_trace_begin) */
#define TRAILER "]}\n"
/* Buffered events reach the part at least this often (microseconds of the trace's
 * clock) while events arrive, so an end Courier does not see (an MPI_Abort from user
 * code, a kill) loses at most the last interval. */
#define FLUSH_EVERY_US 1e6

struct cr_trace {
    FILE *out;
    char *buf;       /* events not yet in the part file */
    size_t len;
    off_t file_end;  /* where the part's trailer starts: the next events go there */
    bool write_failed;
    char path[4096]; /* the merged file */
    char part[4200]; /* this rank's part */
    cr_transport *tp;
    int rank, size;
    double t0;       /* the transport's clock at the start */
    double flushed_at; /* cr_trace_now at the last flush */
    const char *wait; /* the wait in progress (cr_trace_wait_begin), or NULL */
    double wait_start;
    int nphases;     /* user phases open (cr_trace_begin) */
    double phase_start[PHASES_MAX];
    char phase_name[PHASES_MAX][128];
};

/* One timeline per process: the first traced comm owns it. */
static cr_trace *active;

static void part_name(char *out, size_t len, const char *path, int rank)
{
    snprintf(out, len, "%s.rank%d.part", path, rank);
}

/* All ranks wait for each other. */
static void barrier(cr_transport *tp)
{
    uint64_t x = 0, y;
    tp->ops->group->allreduce_u64(tp, &x, &y, 1, CR_OP_SUM);
}

/* Append the buffered events to the part and close the JSON after them, so the file
 * is a complete document after every flush: whatever ends the process later (an
 * abort, a kill after a watchdog report), what was flushed can be read. Events and
 * trailer go in one pwrite: a kill between two writes would leave the events without
 * their trailer, and only a kill inside the one write can still cut it. */
void cr_trace_flush(cr_trace *t)
{
    if (!t || !t->out)
        return;
    memcpy(t->buf + t->len, TRAILER, sizeof TRAILER - 1);
    size_t n = t->len + sizeof TRAILER - 1, done = 0;
    while (done < n) {
        ssize_t w = pwrite(fileno(t->out), t->buf + done, n - done, t->file_end + (off_t)done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            t->write_failed = true;
            break;
        }
        done += (size_t)w;
    }
    if (done == n)
        t->file_end += (off_t)t->len;
    t->len = 0;
    if (t->tp)
        t->flushed_at = cr_trace_now(t);
}

/* Add one whole event line to the buffer, flushing first when it would not fit,
 * and after it once FLUSH_EVERY_US has passed since the last flush. */
static void add_event(cr_trace *t, const char *line, size_t n)
{
    if (t->len + n > PART_BUFFER)
        cr_trace_flush(t);
    memcpy(t->buf + t->len, line, n);
    t->len += n;
    if (cr_trace_now(t) - t->flushed_at >= FLUSH_EVERY_US)
        cr_trace_flush(t);
}

static void end_open_spans(cr_trace *t);

/* The job ends (cr_fatal, or exit without cr_comm_destroy): the wait and the user
 * phases still open are written as spans up to now, marked unfinished, so the
 * trace shows where each rank was. */
static void flush_hook(void *arg)
{
    end_open_spans(arg);
    cr_trace_flush(arg);
}

static void flush_at_exit(void)
{
    if (!active)
        return;
    end_open_spans(active);
    cr_trace_flush(active);
}

cr_trace *cr_trace_open(const char *path, cr_transport *tp)
{
    uint64_t mine = path && path[0] && !active, all;
    tp->ops->group->allreduce_u64(tp, &mine, &all, 1, CR_OP_MIN);
    if (!all)
        return NULL;
    cr_trace *t = cr_xcalloc(1, sizeof *t);
    t->tp = tp;
    t->rank = tp->rank;
    t->size = tp->size;
    if (strlen(path) >= sizeof t->path)
        cr_fatal("COURIER_TRACE: the path is longer than %zu characters", sizeof t->path - 1);
    snprintf(t->path, sizeof t->path, "%s", path);
    part_name(t->part, sizeof t->part, path, t->rank);
    t->out = fopen(t->part, "w");
    uint64_t ok = t->out != NULL, all_ok;
    tp->ops->group->allreduce_u64(tp, &ok, &all_ok, 1, CR_OP_MIN);
    if (!ok)
        cr_fatal("COURIER_TRACE: cannot create '%s': %s", t->part, strerror(errno));
    if (!all_ok)
        barrier(tp); /* ended by the failing rank's abort */
    t->buf = cr_xmalloc(PART_BUFFER + sizeof TRAILER); /* room to write the trailer with it */
    /* A part is a trace of its own: a header line, one event per line (every one but
     * the first starting with a comma), and the trailer line. */
    fprintf(t->out, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"rank\":%d,\"ranks\":%d},"
            "\"traceEvents\":[\n", t->rank, t->size);
    fprintf(t->out, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
            "\"args\":{\"name\":\"rank %d\"}}\n", t->rank, t->rank);
    if (fflush(t->out) != 0)
        t->write_failed = true;
    t->file_end = (off_t)ftell(t->out); /* from here on, pwrite only */
    char line[EVENT_MAX];
    int n = snprintf(line, sizeof line, ",{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,"
                     "\"tid\":0,\"args\":{\"sort_index\":%d}}\n", t->rank, t->rank);
    add_event(t, line, (size_t)n);
    cr_trace_flush(t);
    barrier(tp);
    t->t0 = tp->ops->host->now(tp);
    t->flushed_at = 0;
    active = t;
    cr_fatal_hook_add(flush_hook, t);
    static int exit_hook;
    if (!exit_hook++)
        atexit(flush_at_exit);
    return t;
}

double cr_trace_now(const cr_trace *t)
{
    return (t->tp->ops->host->now(t->tp) - t->t0) * 1e6;
}

static int args(char *out, size_t room, const char *k1, int64_t v1, const char *k2, int64_t v2,
                const char *k3, int64_t v3)
{
    int n = snprintf(out, room, ",\"args\":{");
    const char *sep = "";
    if (k1)
        n += snprintf(out + n, room - (size_t)n, "\"%s\":%lld", k1, (long long)v1), sep = ",";
    if (k2)
        n += snprintf(out + n, room - (size_t)n, "%s\"%s\":%lld", sep, k2, (long long)v2), sep = ",";
    if (k3)
        n += snprintf(out + n, room - (size_t)n, "%s\"%s\":%lld", sep, k3, (long long)v3);
    n += snprintf(out + n, room - (size_t)n, "}}\n");
    return n;
}

void cr_trace_instant(cr_trace *t, const char *name, const char *k1, int64_t v1, const char *k2,
                      int64_t v2, const char *k3, int64_t v3)
{
    char line[EVENT_MAX];
    int n = snprintf(line, sizeof line,
                     ",{\"name\":\"%s\",\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":0,\"ts\":%.3f",
                     name, t->rank, cr_trace_now(t));
    n += args(line + n, sizeof line - (size_t)n, k1, v1, k2, v2, k3, v3);
    add_event(t, line, (size_t)n);
}

void cr_trace_span(cr_trace *t, const char *name, double start, const char *k1, int64_t v1,
                   const char *k2, int64_t v2)
{
    char line[EVENT_MAX];
    double now = cr_trace_now(t);
    int n = snprintf(line, sizeof line,
                     ",{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":0,\"ts\":%.3f,\"dur\":%.3f",
                     name, t->rank, start, now - start);
    n += args(line + n, sizeof line - (size_t)n, k1, v1, k2, v2, NULL, 0);
    add_event(t, line, (size_t)n);
}

void cr_trace_wait_begin(cr_trace *t, const char *name, double start)
{
    t->wait = name;
    t->wait_start = start;
}

void cr_trace_wait_end(cr_trace *t)
{
    t->wait = NULL;
}

static void end_open_spans(cr_trace *t)
{
    if (!t || !t->out || !t->tp)
        return;
    if (t->wait) {
        cr_trace_span(t, t->wait, t->wait_start, "unfinished", 1, NULL, 0);
        t->wait = NULL;
    }
    double now = cr_trace_now(t);
    for (int i = (t->nphases < PHASES_MAX ? t->nphases : PHASES_MAX) - 1; i >= 0; i--) {
        char line[EVENT_MAX];
        int n = snprintf(line, sizeof line,
                         ",{\"name\":\"%s\",\"cat\":\"user\",\"ph\":\"X\",\"pid\":%d,"
                         "\"tid\":1,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"unfinished\":1}}\n",
                         t->phase_name[i], t->rank, t->phase_start[i], now - t->phase_start[i]);
        add_event(t, line, (size_t)n);
    }
    t->nphases = 0;
}

/* A user's phase name as JSON string content: quotes, backslashes and control
 * characters escaped, cut to fit. */
static void json_text(char *out, size_t room, const char *in)
{
    size_t o = 0;
    for (; *in && o + 7 < room; in++) {
        unsigned char ch = (unsigned char)*in;
        if (ch == '"' || ch == '\\')
            out[o++] = '\\', out[o++] = (char)ch;
        else if (ch < 0x20)
            o += (size_t)snprintf(out + o, room - o, "\\u%04x", ch);
        else
            out[o++] = (char)ch;
    }
    out[o] = '\0';
}

void cr_trace_phase_begin(cr_trace *t, const char *name)
{
    if (t->nphases < PHASES_MAX) {
        json_text(t->phase_name[t->nphases], sizeof t->phase_name[0], name);
        t->phase_start[t->nphases] = cr_trace_now(t);
    }
    t->nphases++;
}

void cr_trace_phase_end(cr_trace *t)
{
    if (t->nphases-- > PHASES_MAX || t->nphases < 0)
        return;
    char line[EVENT_MAX];
    double now = cr_trace_now(t), start = t->phase_start[t->nphases];
    int n = snprintf(line, sizeof line,
                     ",{\"name\":\"%s\",\"cat\":\"user\",\"ph\":\"X\",\"pid\":%d,\"tid\":1,"
                     "\"ts\":%.3f,\"dur\":%.3f}\n",
                     t->phase_name[t->nphases], t->rank, start, now - start);
    add_event(t, line, (size_t)n);
}

/* Rank 0: the merged file is a header, a first event, then every part's event lines
 * (the part's own header and trailer left out), each after a comma. */
static void merge(cr_trace *t)
{
    FILE *out = fopen(t->path, "w");
    if (!out) {
        fprintf(stderr, "courier: COURIER_TRACE: cannot create '%s': %s; the parts stay in "
                "%s.rank*.part\n", t->path, strerror(errno), t->path);
        return;
    }
    fprintf(out, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"ranks\":%d},\"traceEvents\":[\n"
            "{\"name\":\"trace_start\",\"ph\":\"i\",\"s\":\"g\",\"pid\":0,\"tid\":0,\"ts\":0}\n",
            t->size);
    char part[sizeof t->part];
    char *line = NULL;
    size_t cap = 0;
    for (int r = 0; r < t->size; r++) {
        part_name(part, sizeof part, t->path, r);
        FILE *in = fopen(part, "r");
        if (!in) {
            fprintf(stderr, "courier: COURIER_TRACE: part '%s' is missing\n", part);
            continue;
        }
        for (long no = 0; getline(&line, &cap, in) > 0; no++) {
            if (no == 0 || !strcmp(line, TRAILER))
                continue; /* the part's header and trailer */
            if (line[0] != ',')
                fputc(',', out);
            fputs(line, out);
        }
        fclose(in);
        remove(part);
    }
    free(line);
    fputs(TRAILER, out);
    if (fclose(out) != 0)
        fprintf(stderr, "courier: COURIER_TRACE: writing '%s' failed\n", t->path);
}

void cr_trace_close(cr_trace *t)
{
    if (!t)
        return;
    cr_trace_flush(t);
    cr_fatal_hook_remove(flush_hook, t);
    if (active == t)
        active = NULL;
    if (t->write_failed | ferror(t->out) | (fclose(t->out) != 0))
        fprintf(stderr, "courier: rank %d: COURIER_TRACE: writing '%s' failed\n", t->rank,
                t->part);
    t->out = NULL;
    free(t->buf);
    barrier(t->tp); /* every part is complete */
    if (t->rank == 0)
        merge(t);
    free(t);
}
