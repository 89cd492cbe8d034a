/* The line reader's file list: what every rank knows before it reads a byte. */
#ifndef COURIER_IO_INTERNAL_H
#define COURIER_IO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct io_file {
    char *path;
    uint64_t size; /* bytes on disk (compressed for .gz) */
    bool gz;
} io_file;

typedef struct io_list {
    io_file *files;
    size_t count, cap;
    uint64_t plain_bytes; /* the plain files' sizes summed: what the byte ranges split */
    size_t gz_count;
} io_list;

/* Expand paths (directories in byte order of their names, recursively, names
 * beginning with '.' left out) into regular files with their sizes. Returns 0, or
 * -1 with a one-line error naming the first path that is missing, not a regular
 * file or a directory, or cannot be listed. Local. */
int io_list_build(const char *const *paths, size_t npaths, io_list *out, char *err,
                  size_t errlen);
void io_list_free(io_list *list);

/* A .gz file's text (io/gunzip.c). open takes the descriptor (close closes it);
 * NULL: no memory. read gives up to len bytes; 0 at the end of the last member;
 * -1 with a one-line message naming `path` when the file is not gzip, is corrupt,
 * ends inside a member, or has bytes after its last member that are not another
 * member: each met before any byte after it is given out. */
typedef struct io_gunzip io_gunzip;
io_gunzip *io_gunzip_open(int fd);
long io_gunzip_read(io_gunzip *g, char *buf, size_t len, const char *path, char *err,
                    size_t errlen);
void io_gunzip_close(io_gunzip *g);

typedef struct cr_comm cr_comm;

/* Rank `rank`'s part [*lo, *hi) of n items (bytes, records) cut into `size` parts that
 * differ by at most one. Pure. */
static inline void io_share(uint64_t n, int rank, int size, uint64_t *lo, uint64_t *hi)
{
    *lo = (uint64_t)((unsigned __int128)n * (unsigned)rank / (unsigned)size);
    *hi = (uint64_t)((unsigned __int128)n * (unsigned)(rank + 1) / (unsigned)size);
}

/* Every rank returns the same: 0 if rc was 0 everywhere, else -1 with the message
 * (in err) of the lowest rank whose rc was not 0. Collective; runs handlers. */
int io_agree(cr_comm *comm, int rc, char *err, size_t errlen);

#endif
