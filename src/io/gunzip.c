/* A .gz file's text, decompressed with zlib's inflate rather than its gzread: gzread
 * takes bytes after the last member that are not another member for the end of
 * the file, and reports a file cut short only after handing out its last bytes. Here
 * each of these is an error as soon as it is met, before its bytes are returned. */
#include "io/io_internal.h"

#include "common/fatal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define GUNZIP_IN ((size_t)256 << 10)

struct io_gunzip {
    int fd;
    z_stream z;
    bool in_member; /* inside a gzip member (between members: not) */
    bool raw_eof;   /* the file's last byte is in `in` */
    uint64_t members;
    uint64_t raw_read; /* bytes of the file read into `in` */
    unsigned char in[GUNZIP_IN];
};

io_gunzip *io_gunzip_open(int fd)
{
    io_gunzip *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->fd = fd;
    g->z.next_in = g->in;
    if (inflateInit2(&g->z, 16 + MAX_WBITS) != Z_OK) { /* 16: gzip wrapper only */
        free(g);
        return NULL;
    }
    return g;
}

void io_gunzip_close(io_gunzip *g)
{
    if (!g)
        return;
    inflateEnd(&g->z);
    close(g->fd);
    free(g);
}

/* The file's byte that inflate reads next. */
static uint64_t raw_at(const io_gunzip *g)
{
    return g->raw_read - g->z.avail_in;
}

/* More of the file after the bytes inflate has not taken yet. */
static int refill(io_gunzip *g, const char *path, char *err, size_t errlen)
{
    if (g->raw_eof)
        return 0;
    if (g->z.avail_in > 0)
        memmove(g->in, g->z.next_in, g->z.avail_in);
    g->z.next_in = g->in;
    ssize_t got;
    do
        got = read(g->fd, g->in + g->z.avail_in, GUNZIP_IN - g->z.avail_in);
    while (got < 0 && errno == EINTR);
    if (got < 0) {
        cr_set_error(err, errlen, "%s: read error at byte %llu: %s", path,
                     (unsigned long long)g->raw_read, strerror(errno));
        return -1;
    }
    g->raw_eof = got == 0;
    g->z.avail_in += (unsigned)got;
    g->raw_read += (uint64_t)got;
    return 0;
}

/* Between members: the end of the file, or the two magic bytes of another member. */
static int next_member(io_gunzip *g, const char *path, char *err, size_t errlen)
{
    while (g->z.avail_in < 2 && !g->raw_eof)
        if (refill(g, path, err, errlen))
            return -1;
    if (g->z.avail_in == 0 && g->members > 0)
        return 0; /* the end */
    if (g->z.avail_in < 2 || g->z.next_in[0] != 0x1f || g->z.next_in[1] != 0x8b) {
        if (g->members == 0)
            cr_set_error(err, errlen, "%s: not gzip data (a .gz file is read as "
                         "gzip-compressed)", path);
        else
            cr_set_error(err, errlen, "%s: data that is not gzip after the compressed "
                         "stream, at byte %llu (appended to the file?)", path,
                         (unsigned long long)raw_at(g));
        return -1;
    }
    inflateReset(&g->z);
    g->in_member = true;
    return 1;
}

long io_gunzip_read(io_gunzip *g, char *buf, size_t len, const char *path, char *err,
                    size_t errlen)
{
    g->z.next_out = (unsigned char *)buf;
    g->z.avail_out = (unsigned)(len > UINT32_MAX ? UINT32_MAX : len);
    unsigned want = g->z.avail_out;
    while (g->z.avail_out == want) {
        if (!g->in_member) {
            int more = next_member(g, path, err, errlen);
            if (more <= 0)
                return more; /* 0: the end; -1: an error */
        }
        if (g->z.avail_in == 0 && refill(g, path, err, errlen))
            return -1;
        if (g->z.avail_in == 0) {
            cr_set_error(err, errlen, "%s: the gzip data ends early, at byte %llu (cut "
                         "short?)", path, (unsigned long long)g->raw_read);
            return -1;
        }
        int rc = inflate(&g->z, Z_NO_FLUSH);
        if (rc == Z_STREAM_END) {
            g->in_member = false;
            g->members++;
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            cr_set_error(err, errlen, "%s: corrupt gzip data near byte %llu: %s", path,
                         (unsigned long long)raw_at(g), g->z.msg ? g->z.msg : "inflate failed");
            return -1;
        }
    }
    return (long)(want - g->z.avail_out);
}
