/* The COURIER_TRACE timeline writer (see trace.h). */
#include "mailbox/trace.h"

#include "common/fatal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PART_BUFFER ((size_t)1 << 20)

struct cr_trace {
    FILE *out;
    char *buf;       /* stdio buffer of the part file */
    char path[4096]; /* the merged file */
    char part[4200]; /* this rank's part */
    cr_transport *tp;
    int rank, size;
    double t0;       /* the transport's clock at the start */
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
    tp->ops->allreduce_u64(tp, &x, &y, 1, CR_REDUCE_SUM);
}

cr_trace *cr_trace_open(const char *path, cr_transport *tp)
{
    uint64_t mine = path && path[0] && !active, all;
    tp->ops->allreduce_u64(tp, &mine, &all, 1, CR_REDUCE_MIN);
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
    tp->ops->allreduce_u64(tp, &ok, &all_ok, 1, CR_REDUCE_MIN);
    if (!ok)
        cr_fatal("COURIER_TRACE: cannot create '%s': %s", t->part, strerror(errno));
    if (!all_ok)
        barrier(tp); /* ended by the failing rank's abort */
    t->buf = cr_xmalloc(PART_BUFFER);
    setvbuf(t->out, t->buf, _IOFBF, PART_BUFFER);
    /* Every line starts with a comma: rank 0 opens the array with a metadata event. */
    fprintf(t->out, ",{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
            "\"args\":{\"name\":\"rank %d\"}}\n", t->rank, t->rank);
    fprintf(t->out, ",{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
            "\"args\":{\"sort_index\":%d}}\n", t->rank, t->rank);
    barrier(tp);
    t->t0 = tp->ops->now(tp);
    active = t;
    return t;
}

double cr_trace_now(const cr_trace *t)
{
    return (t->tp->ops->now(t->tp) - t->t0) * 1e6;
}

static void args(FILE *f, const char *k1, int64_t v1, const char *k2, int64_t v2, const char *k3,
                 int64_t v3)
{
    fputs(",\"args\":{", f);
    const char *sep = "";
    if (k1)
        fprintf(f, "\"%s\":%lld", k1, (long long)v1), sep = ",";
    if (k2)
        fprintf(f, "%s\"%s\":%lld", sep, k2, (long long)v2), sep = ",";
    if (k3)
        fprintf(f, "%s\"%s\":%lld", sep, k3, (long long)v3);
    fputc('}', f);
}

void cr_trace_instant(cr_trace *t, const char *name, const char *k1, int64_t v1, const char *k2,
                      int64_t v2, const char *k3, int64_t v3)
{
    fprintf(t->out, ",{\"name\":\"%s\",\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":0,\"ts\":%.3f",
            name, t->rank, cr_trace_now(t));
    args(t->out, k1, v1, k2, v2, k3, v3);
    fputs("}\n", t->out);
}

void cr_trace_span(cr_trace *t, const char *name, double start, const char *k1, int64_t v1,
                   const char *k2, int64_t v2)
{
    double now = cr_trace_now(t);
    fprintf(t->out, ",{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":0,\"ts\":%.3f,\"dur\":%.3f",
            name, t->rank, start, now - start);
    args(t->out, k1, v1, k2, v2, NULL, 0);
    fputs("}\n", t->out);
}

/* Rank 0: the merged file is '{"traceEvents":[' + a first event + every part + ']}'. */
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
    char part[sizeof t->part], chunk[1 << 16];
    for (int r = 0; r < t->size; r++) {
        part_name(part, sizeof part, t->path, r);
        FILE *in = fopen(part, "r");
        if (!in) {
            fprintf(stderr, "courier: COURIER_TRACE: part '%s' is missing\n", part);
            continue;
        }
        size_t n;
        while ((n = fread(chunk, 1, sizeof chunk, in)) > 0)
            fwrite(chunk, 1, n, out);
        fclose(in);
        remove(part);
    }
    fputs("]}\n", out);
    if (fclose(out) != 0)
        fprintf(stderr, "courier: COURIER_TRACE: writing '%s' failed\n", t->path);
}

void cr_trace_close(cr_trace *t)
{
    if (!t)
        return;
    if (fclose(t->out) != 0)
        fprintf(stderr, "courier: rank %d: COURIER_TRACE: writing '%s' failed\n", t->rank,
                t->part);
    free(t->buf);
    barrier(t->tp); /* every part is complete */
    if (t->rank == 0)
        merge(t);
    if (active == t)
        active = NULL;
    free(t);
}
