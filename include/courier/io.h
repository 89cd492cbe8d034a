/* Courier input: a parallel line reader. A list of files (directories expanded in
 * sorted order) is split among the ranks by bytes, so each rank reads about 1/P of
 * the data, and every line is handed exactly once to a callback on the rank that
 * holds its first byte. Gzip-compressed files (".gz") cannot be entered in the
 * middle: each goes whole to one rank. docs/io.md has the details and the costs.
 *
 * Errors (docs/architecture.md): files, disks and their contents give -1 with one
 * line in `err`, the same on every rank; misuse ends the job with one line. */
#ifndef COURIER_IO_H
#define COURIER_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_comm cr_comm;

/* One line as the callback sees it. text is the line without its ending ("\n" or
 * "\r\n"), followed by a NUL at text[len] (unless cr_io_opts.unterminated); it may
 * itself hold NUL bytes, so len is the line's length. text is valid only during the
 * call. */
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
    bool unterminated;   /* the callback does not need the NUL after a line: text[len]
                            is then whatever follows the line in the file (its ending;
                            nothing is readable past the file's last byte). The reader
                            then maps plain files instead of copying them into a buffer
                            (not with max_line, nor for .gz files), about 1.4 times as
                            fast (docs/io.md); a file cut shorter while it is read then
                            ends the process with SIGBUS */
} cr_io_opts;

/* Defaults: no comment prefix, blank lines delivered, 1 MiB reads, no line limit,
 * every line followed by a NUL. Local. */
void cr_io_opts_init(cr_io_opts *opts);

/* Whether the reader takes `path` for a gzip-compressed file, which it decompresses
 * and gives whole to one rank: its name ends in ".gz". Local, pure. */
bool cr_io_compressed(const char *path);

/* Open `path` for reading if it is a regular file, without waiting on a FIFO that
 * has no writer: a FIFO, device or directory is refused with "PATH: not a regular
 * file". Returns a descriptor (O_CLOEXEC, blocking reads), or -1 with a one-line
 * message in err. Local; the caller closes it. */
int cr_io_open_regular(const char *path, char *err, size_t errlen);
/* The same as a stdio stream opened for reading ("r"); NULL with the message. */
FILE *cr_io_fopen_regular(const char *path, char *err, size_t errlen);

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

/* Lines handed over in runs, for callbacks whose work per line is a few
 * instructions: a call per line would cost more than the line. Line i of a run is
 * text[i], len[i] bytes without its ending, with a NUL at text[i][len[i]] unless
 * the options say unterminated (as cr_line's text); every line of a run comes from
 * `path`, in file order. Valid only during the call. */
#define CR_LINE_RUN 256 /* the most lines a run holds */

typedef struct cr_line_run {
    size_t count; /* lines in the run, 1 .. CR_LINE_RUN */
    const char *const *text;
    const size_t *len;
    const char *path;
    const char *base;     /* with base_offset: where the lines lie in the file (see */
    uint64_t base_offset; /* cr_line_run_offset) */
} cr_line_run;

/* The byte of run->path where line i of the run starts. Local. */
uint64_t cr_line_run_offset(const cr_line_run *run, size_t i);

/* Called once per run, as cr_line_fn per line (0 to go on; non-zero with a message
 * in err to stop). */
typedef int (*cr_line_run_fn)(const cr_line_run *run, void *user, char *err, size_t errlen);

/* cr_io_read_lines with the lines handed over in runs of up to CR_LINE_RUN: the
 * same split, the same lines in the same order on the same rank, the same options,
 * statistics and errors. Collective; runs handlers while the ranks agree. */
int cr_io_read_line_runs(cr_comm *comm, const char *const *paths, size_t npaths,
                         const cr_io_opts *opts, cr_line_run_fn fn, void *user,
                         cr_io_stats *stats, char *err, size_t errlen);

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

/* ---------------------------------------------------------------- save and load */

/* A save is a directory: one file per rank of the job that wrote it ("part-000000"
 * ...), holding fixed-size records, and a text file "manifest" written last, with
 * the format version, the kind, the record size, a number of the kind's own, the
 * rank count, and per part its record count and checksum. Loading reads the
 * records back on any number of ranks. The containers' and the darray's save and
 * load calls are built on these two; they serve a program's own records too. */
typedef struct cr_save_kind {
    const char *kind;    /* what the records are ("counting_set", a program's own
                            name): a load of another kind is refused; at most 63
                            bytes, no white space */
    size_t record_bytes; /* 1 .. 1 MiB */
    uint64_t meta;       /* the kind's own number (a key size, an array's length),
                            which a load must match */
    const char *meta_name; /* what meta is, for messages ("key bytes"; NULL: "meta") */
    const char *type;    /* what a record's bytes are ("double", "int64"; NULL or
                            "bytes": not said): a save of another type is refused,
                            unless one side does not say; at most 31 bytes */
} cr_save_kind;

#define CR_SAVE_OVERWRITE 1u /* replace a save the directory holds already */
#define CR_SAVE_SYNC 2u /* make the save durable before returning: every part, the
                           manifest and the directory flushed to the device (fsync),
                           so the save outlives a crash of the machine, not only of
                           the job; without it the file system writes it back in its
                           own time, as for any written file */

typedef struct cr_save_writer cr_save_writer;

/* Append `count` records (count * record_bytes bytes) to this rank's part. Local;
 * only inside the fill callback of cr_io_save. */
void cr_save_write(cr_save_writer *w, const void *records, size_t count);

/* Write a save of `kind` into directory `dir` (created if missing; its parent must
 * exist): fill(w, user) runs once on every rank and writes that rank's records with
 * cr_save_write. A directory that holds a save already is refused unless flags has
 * CR_SAVE_OVERWRITE; flags may add CR_SAVE_SYNC (any other bit ends the job with
 * one line). Returns 0, or -1 on every rank with the same one-line message (the
 * directory cannot be made, a save is there, a write failed: the disk full). The
 * manifest is written last and appears whole, so a save that failed half-way is no
 * save. Collective; runs handlers while the ranks agree. */
int cr_io_save(cr_comm *comm, const char *dir, const cr_save_kind *kind, unsigned flags,
               void (*fill)(cr_save_writer *w, void *user), void *user, char *err,
               size_t errlen);

/* Called with a run of `count` records (count * record_bytes bytes, valid during the
 * call, aligned as they lie in their part's file) and the index of the first over
 * the whole save (the saving ranks' parts end to end): a run per part the rank's
 * records lie in, in order. */
typedef void (*cr_load_fn)(const void *records, size_t count, uint64_t first, void *user);

/* Read a save of `kind` from `dir`. This rank reads records [first, first + count)
 * of the whole save when `range` points to {first, count}, or else an even share
 * (rank r of Q: records [N*r/Q, N*(r+1)/Q) of N). Every rank checks the manifest
 * and the parts' sizes, reads its records, and the ranks check every part's
 * checksum together, before fn sees any record: a missing or truncated part, a
 * corrupted one, a manifest of another kind, record size, meta or format version
 * gives -1 on every rank with the same one-line message, and fn is not called.
 * Otherwise fn is called for this rank's records, in order, and 0 is returned. The
 * records are mapped from the files (the file system's cache holds them, not the
 * job's memory), or read into memory where a file cannot be mapped. Collective;
 * runs handlers while the ranks agree; fn may send (cr_async) but not wait. */
int cr_io_load(cr_comm *comm, const char *dir, const cr_save_kind *kind, const uint64_t *range,
               cr_load_fn fn, void *user, char *err, size_t errlen);

/* What a save holds, from its manifest: for a program that sizes what it loads
 * into by the save (a counting set's key bytes are its meta). */
typedef struct cr_save_info {
    char kind[64];
    char type[32];       /* "bytes" when the save names no type */
    size_t record_bytes;
    uint64_t meta;
    uint64_t records;    /* over every part */
    uint64_t parts;      /* the rank count that saved it */
} cr_save_info;

/* Read the manifest of the save in `dir` into *info. Returns 0, or -1 with the
 * one-line message cr_io_load would give for a missing or damaged manifest (the
 * parts are not checked: cr_io_load does that). Local. */
int cr_io_save_info(const char *dir, cr_save_info *info, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
