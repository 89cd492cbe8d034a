#include "common/fatal.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

noreturn void cr_fatal(const char *fmt, ...)
{
    int initialized = 0, finalized = 0, rank = -1;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized)
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);

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

    if (initialized && !finalized) {
        /* Give the launcher a moment to forward the line: MPICH's Hydra may end the
         * job before it has read what the aborting rank wrote last. */
        nanosleep(&(struct timespec){.tv_nsec = 100 * 1000 * 1000}, NULL);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    exit(1);
}

void *cr_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        cr_fatal("out of memory allocating %zu bytes", n);
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
