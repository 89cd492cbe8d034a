/* Fatal errors: one line on stderr naming the problem, then the whole job ends. */
#ifndef COURIER_COMMON_FATAL_H
#define COURIER_COMMON_FATAL_H

#include <stddef.h>
#include <stdnoreturn.h>

/* Print "courier: rank R: <message>" and abort the whole job (exit if no transport
 * has said how). Used for misuse of the API and for corrupt input from the network. */
noreturn void cr_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* How cr_fatal names this rank (-1: none) and ends the whole job (may return when
 * it cannot, then cr_fatal exits): set by the transport that runs the job. Local. */
void cr_fatal_set_job(int (*rank)(void), void (*end)(void));

/* Functions cr_fatal calls, newest first, after printing its line and before ending
 * the job: what must reach the disk (a trace) does so. At most 8; a hook must not
 * call cr_fatal. Local. */
void cr_fatal_hook_add(void (*fn)(void *arg), void *arg);
void cr_fatal_hook_remove(void (*fn)(void *arg), void *arg);

/* Format a one-line error into err[0 .. errlen) for functions that report errors
 * to their caller; does nothing if err is NULL or errlen is 0. */
void cr_set_error(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* malloc/realloc that abort with a message instead of returning NULL. */
void *cr_xmalloc(size_t n);
void *cr_xcalloc(size_t count, size_t n);
void *cr_xrealloc(void *p, size_t n);
/* cr_xmalloc of n * size bytes (n * size overflowing ends the job too) for a large
 * array: from 1 MiB up, the whole 2 MiB pages inside it are asked to be huge pages
 * (madvise; a hint), since first touching small pages costs more than filling them
 * where page faults are dear (a virtual machine: docs/design-notes.md, "Page
 * faults"). Not aligned to 2 MiB: the allocator did not give a freed aligned block
 * back to the next aligned request of its size, so a kernel called once per trial
 * took fresh memory every call (design-notes.md, "Large blocks"). Freed with free(). */
void *cr_xmalloc_large(size_t n, size_t size);
/* The same, rounded up to whole 2 MiB pages and aligned to them, so that every byte
 * is covered by the hint: for arrays kept from one call to the next (a graph's
 * lists, a comm's scratch), which then cost one fault per 2 MiB in the first call
 * instead of one per 4 KiB. Not for arrays allocated and freed every call (see
 * cr_xmalloc_large). Freed with free(). */
void *cr_xmalloc_huge(size_t n, size_t size);

/* Make the array *v (capacity *cap elements of `elem` bytes) hold at least `need`
 * elements, doubling from 16. */
void cr_xgrow(void **v, int *cap, int need, size_t elem);

#endif
