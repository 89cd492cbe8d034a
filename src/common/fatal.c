#include "common/fatal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define MAX_HOOKS 8
static struct {
    void (*fn)(void *arg);
    void *arg;
} hooks[MAX_HOOKS];
static int nhooks;

void cr_fatal_hook_add(void (*fn)(void *arg), void *arg)
{
    if (nhooks < MAX_HOOKS)
        hooks[nhooks].fn = fn, hooks[nhooks++].arg = arg;
}

void cr_fatal_hook_remove(void (*fn)(void *arg), void *arg)
{
    for (int i = 0; i < nhooks; i++)
        if (hooks[i].fn == fn && hooks[i].arg == arg) {
            hooks[i] = hooks[--nhooks];
            return;
        }
}

static void run_hooks(void)
{
    static int running; /* a hook that fails ends in cr_fatal again: run them once */
    if (running++)
        return;
    for (int i = nhooks - 1; i >= 0; i--)
        hooks[i].fn(hooks[i].arg);
}

/* The job's rank and how to end the whole job: the transport's (src/transport/mpi.c
 * sets them when it starts); none: no rank in the line, and exit. */
static int (*job_rank)(void);
static void (*job_end)(void);

void cr_fatal_set_job(int (*rank)(void), void (*end)(void))
{
    job_rank = rank;
    job_end = end;
}

noreturn void cr_fatal(const char *fmt, ...)
{
    int rank = job_rank ? job_rank() : -1;

    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (rank >= 0)
        fprintf(stderr, "courier: rank %d: %s\n", rank, msg);
    else
        fprintf(stderr, "courier: %s\n", msg);
    fflush(stderr);
    run_hooks();
    if (job_end)
        job_end(); /* returns only if the job cannot be ended (no MPI running) */
    exit(1);
}

void *cr_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        cr_fatal("out of memory allocating %zu bytes", n);
    return p;
}

#define HUGE_PAGE ((uintptr_t)2 << 20)

/* n * size, or the job ends when it overflows. */
static size_t array_bytes(size_t n, size_t size)
{
    if (n && size > SIZE_MAX / n)
        cr_fatal("out of memory: %zu elements of %zu bytes overflow the address space", n, size);
    return n * size;
}

void *cr_xmalloc_huge(size_t n, size_t size)
{
    size_t bytes = array_bytes(n, size);
    if (bytes < HUGE_PAGE / 2)
        return cr_xmalloc(bytes);
    /* whole huge pages, aligned: the hint then covers every byte */
    size_t whole = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    void *p = NULL;
    if (whole < bytes || posix_memalign(&p, HUGE_PAGE, whole))
        cr_fatal("out of memory allocating %zu bytes", bytes);
#ifdef MADV_HUGEPAGE
    (void)madvise(p, whole, MADV_HUGEPAGE);
#endif
    return p;
}

void *cr_xmalloc_large(size_t n, size_t size)
{
    size_t bytes = array_bytes(n, size);
    if (bytes < HUGE_PAGE / 2)
        return cr_xmalloc(bytes);
    void *p = malloc(bytes);
    if (!p)
        cr_fatal("out of memory allocating %zu bytes", bytes);
#ifdef MADV_HUGEPAGE
    uintptr_t from = ((uintptr_t)p + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    uintptr_t to = ((uintptr_t)p + bytes) / HUGE_PAGE * HUGE_PAGE;
    if (to > from)
        (void)madvise((void *)from, to - from, MADV_HUGEPAGE);
#endif
    return p;
}

void *cr_xcalloc(size_t count, size_t n)
{
    void *p = calloc(count ? count : 1, n ? n : 1);
    if (!p)
        cr_fatal("out of memory allocating %zu x %zu bytes", count, n);
    return p;
}

void *cr_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        cr_fatal("out of memory growing a buffer to %zu bytes", n);
    return q;
}

void cr_xgrow(void **v, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return;
    int c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    *v = cr_xrealloc(*v, (size_t)c * elem);
    *cap = c;
}

void cr_set_error(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
