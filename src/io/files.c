/* The file list of the line reader: paths expanded into regular files, in an order
 * every rank computes alike (sorted by the bytes of the names, not the locale). */
#include "io/io_internal.h"

#include "common/fatal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool cr_io_compressed(const char *path)
{
    size_t n = strlen(path);
    return n >= 3 && !strcmp(path + n - 3, ".gz");
}

int cr_io_open_regular(const char *path, char *err, size_t errlen)
{
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        cr_set_error(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        /* a device (/dev/zero) never ends; a pipe cannot be split or read twice */
        cr_set_error(err, errlen, "%s: not a regular file", path);
        close(fd);
        return -1;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        cr_set_error(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

FILE *cr_io_fopen_regular(const char *path, char *err, size_t errlen)
{
    int fd = cr_io_open_regular(path, err, errlen);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        cr_set_error(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

static void add_file(io_list *l, const char *path, uint64_t size)
{
    if (l->count == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->files = cr_xrealloc(l->files, l->cap * sizeof *l->files);
    }
    io_file *f = &l->files[l->count++];
    f->path = cr_xmalloc(strlen(path) + 1);
    strcpy(f->path, path);
    f->size = size;
    f->gz = cr_io_compressed(path);
    if (f->gz)
        l->gz_count++;
    else
        l->plain_bytes += size;
}

static int visible(const struct dirent *d)
{
    return d->d_name[0] != '.';
}

static int by_bytes(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int add_path(io_list *l, const char *path, int depth, char *err, size_t errlen);

static int add_directory(io_list *l, const char *path, int depth, char *err, size_t errlen)
{
    struct dirent **names;
    int n = scandir(path, &names, visible, by_bytes);
    if (n < 0) {
        cr_set_error(err, errlen, "%s: cannot list the directory: %s", path, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if (rc == 0) {
            size_t len = strlen(path) + strlen(names[i]->d_name) + 2;
            char *child = cr_xmalloc(len);
            snprintf(child, len, "%s/%s", path, names[i]->d_name);
            rc = add_path(l, child, depth + 1, err, errlen);
            free(child);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

/* depth bounds a directory that contains itself through a link. */
static int add_path(io_list *l, const char *path, int depth, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        cr_set_error(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        if (depth >= 64) {
            cr_set_error(err, errlen, "%s: directories nested more than 64 deep (a link "
                         "loop?)", path);
            return -1;
        }
        return add_directory(l, path, depth, err, errlen);
    }
    if (!S_ISREG(st.st_mode)) {
        /* a device (/dev/zero) never ends; a pipe cannot be split or read twice */
        cr_set_error(err, errlen, "%s: not a regular file or a directory", path);
        return -1;
    }
    add_file(l, path, (uint64_t)st.st_size);
    return 0;
}

int io_list_build(const char *const *paths, size_t npaths, io_list *out, char *err,
                  size_t errlen)
{
    *out = (io_list){0};
    for (size_t i = 0; i < npaths; i++) {
        if (!paths[i] || !paths[i][0]) {
            cr_set_error(err, errlen, "input path %zu is empty", i + 1);
            io_list_free(out);
            return -1;
        }
        if (add_path(out, paths[i], 0, err, errlen)) {
            io_list_free(out);
            return -1;
        }
    }
    return 0;
}

void io_list_free(io_list *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->files[i].path);
    free(l->files);
    *l = (io_list){0};
}
