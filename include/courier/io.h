/* Courier input: a parallel line reader. A list of files (directories expanded in
 * sorted order) is split among the ranks by bytes, so each rank reads about 1/P of
 * the data, and every line is handed exactly once to a callback on the rank that
 * holds its first byte. Gzip-compressed files (".gz") cannot be entered in the
 * middle: each goes whole to one rank. docs/io.md has the details and the costs. */
#ifndef COURIER_IO_H
#define COURIER_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_comm cr_comm;

/* One line as the callback sees it. text is the line without its ending ("\n" or
 * "\r\n"), followed by a NUL at text[len]; it may itself hold NUL bytes, so len is
 * the line's length. text is valid only during the call. */
typedef struct cr_line {
    const char *text;
    size_t len;
    const char *path; /* the file it comes from */
    uint64_t offset;  /* the byte of that file where the line starts (of the
                         uncompressed text for a .gz file) */
} cr_line;

/* Called once per line. Return 0 to go on. To stop with an error, write a one-line
 * message into err[0 .. errlen) and return non-zero: this rank reads no further and
 * the read returns -1 with that message. cr_io_line_number turns line->offset into
 * a line number for the message. The callback may call cr_async (handlers may then
 * run, as in any cr_async), but not a collective. */
typedef int (*cr_line_fn)(const cr_line *line, void *user, char *err, size_t errlen);

typedef struct cr_io_opts {
    const char *comment; /* lines that begin with this prefix are not delivered (NULL:
                            every line is) */
    bool skip_blank;     /* empty lines (after removing "\r") are not delivered */
    size_t read_bytes;   /* bytes asked of the file system per read; a longer line
                            grows the buffer to hold it (default 1 MiB) */
    size_t max_line;     /* a longer line is an error naming its byte, before it is
                            held whole (0: no limit but memory) */
} cr_io_opts;

/* Defaults: no comment prefix, blank lines delivered, 1 MiB reads, no line limit.
 * Local. */
void cr_io_opts_init(cr_io_opts *opts);

/* What a rank read. */
typedef struct cr_io_stats {
    uint64_t files;  /* files this rank opened */
    uint64_t lines;  /* lines delivered to the callback */
    uint64_t bytes;  /* bytes of text this rank's lines hold, endings included */
    uint64_t read;   /* bytes read from the files (compressed bytes for .gz): its
                        share plus the ends of lines that cross into the next share */
} cr_io_stats;

/* Read every line of `paths` (npaths of them) once across the comm. A path is a
 * regular file or a directory, whose regular files are read in byte order of their
 * names (names beginning with '.' are left out; subdirectories are entered). The
 * plain files are laid end to end and rank r of P reads the lines that begin in
 * bytes [T*r/P, T*(r+1)/P) of the T bytes; the k-th .gz file goes whole to rank
 * k % P. A file without a final newline ends with its last line all the same.
 *
 * Before any line is delivered every rank checks the paths: a missing, unreadable
 * or non-regular file (a device such as /dev/zero, a pipe) makes the call return -1
 * on every rank with the same one-line message naming it. An error while reading
 * (a callback's, a read error, a corrupt .gz) also returns -1 on every rank, with
 * the message of the lowest rank that had one. Returns 0 otherwise. stats may be
 * NULL. Collective; runs handlers while the ranks agree (cr_allreduce). */
int cr_io_read_lines(cr_comm *comm, const char *const *paths, size_t npaths,
                     const cr_io_opts *opts, cr_line_fn fn, void *user, cr_io_stats *stats,
                     char *err, size_t errlen);

/* The same split, read by rank `rank` of `size` without a comm and without
 * agreement: a rank's own errors come back to it alone (-1 and the message), so the
 * caller must make the ranks agree (cr_graph_read_edges' callers do). Local. */
int cr_io_read_share(const char *const *paths, size_t npaths, const cr_io_opts *opts, int rank,
                     int size, cr_line_fn fn, void *user, cr_io_stats *stats, char *err,
                     size_t errlen);

/* The 1-based number of the line that starts at byte `offset` of `path` (counted by
 * reading the file up to there: meant for error messages). 0 if the file cannot be
 * read. Local. */
uint64_t cr_io_line_number(const char *path, uint64_t offset);

#ifdef __cplusplus
}
#endif

#endif
