/* Save and load: one file of fixed-size records per saving rank and a manifest
 * written last. A part's checksum is the sum of its records' hashes, each hashed
 * with its position in the part, so ranks that load different pieces of a part can
 * add their sums and check the whole, and a record moved within a part is caught. */
#include "courier/io.h"

#include "courier/coll.h"
#include "courier/mailbox.h"
#include "courier/rng.h"
#include "io/io_internal.h"

#include "common/fatal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SAVE_VERSION 2 /* 2: type, byte order and generation; 1 is still read */
#define MAX_RECORD_BYTES ((size_t)1 << 20)
#define MAX_PARTS ((uint64_t)1 << 24)
#define WRITE_BUFFER ((size_t)1 << 20)
#define DIRECT_WRITE_BYTES ((size_t)64 << 10)

/* The hash of the record at `position` of its part. */
static inline uint64_t record_hash(const unsigned char *p, size_t n, uint64_t position)
{
    uint64_t h = position * 0x9e3779b97f4a7c15ull + n; /* mixed by the words and the end */
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    if (i < n) {
        uint64_t w = 0;
        memcpy(&w, p + i, n - i);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
    }
    return cr_rng_hash64(h);
}

static void join(char *out, size_t n, const char *dir, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

/* A part's file name: part-NNNNNN for a save's first generation, part-NNNNNN.G for
 * a later one, so that an overwrite writes beside the save it replaces. */
static void part_file(char *out, size_t n, unsigned gen, uint64_t part)
{
    if (gen == 0)
        snprintf(out, n, "part-%06" PRIu64, part);
    else
        snprintf(out, n, "part-%06" PRIu64 ".%u", part, gen);
}

static void part_name(char *out, size_t n, const char *dir, unsigned gen, uint64_t part)
{
    char file[64];
    part_file(file, sizeof file, gen, part);
    snprintf(out, n, "%s/%s", dir, file);
}

/* Whether `name` is a part file's name; its generation and index if so. */
static bool parse_part_file(const char *name, unsigned *gen, uint64_t *part)
{
    char tail;
    *gen = 0;
    if (sscanf(name, "part-%6" SCNu64 "%c", part, &tail) == 1)
        return strlen(name) == 11;
    return sscanf(name, "part-%6" SCNu64 ".%u%c", part, gen, &tail) == 2 && name[11] == '.';
}

/* This machine's byte order, as a manifest names it. */
static const char *byte_order(void)
{
    const uint16_t one = 1;
    unsigned char low;
    memcpy(&low, &one, 1);
    return low ? "little" : "big";
}

static const char *type_of(const cr_save_kind *k)
{
    return k->type && k->type[0] ? k->type : "bytes";
}

static void check_kind(const char *call, const cr_save_kind *k)
{
    if (!k || !k->kind || !k->kind[0] || strlen(k->kind) > 63 || strpbrk(k->kind, " \t\r\n"))
        cr_fatal("%s: the kind's name must be 1 to 63 bytes without white space", call);
    if (k->record_bytes == 0 || k->record_bytes > MAX_RECORD_BYTES)
        cr_fatal("%s: record_bytes %zu is not in 1 .. %zu", call, k->record_bytes,
                 MAX_RECORD_BYTES);
    if (strlen(type_of(k)) > 31 || strpbrk(type_of(k), " \t\r\n"))
        cr_fatal("%s: the type's name must be at most 31 bytes without white space", call);
}

/* ---------------------------------------------------------------- saving */

struct cr_save_writer {
    FILE *f;
    const char *path; /* for messages */
    size_t record_bytes;
    uint64_t count, sum;
    int failed; /* errno of the first failed write */
};

/* All of buf to fd. */
static int write_fully(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t put = write(fd, buf, len);
        if (put < 0 && errno == EINTR)
            continue;
        if (put <= 0)
            return -1;
        buf += put, len -= (size_t)put;
    }
    return 0;
}

void cr_save_write(cr_save_writer *w, const void *records, size_t count)
{
    const unsigned char *p = records;
    uint64_t sum = w->sum;
    if (w->record_bytes == 16) /* the containers' commonest record: the loop unrolled */
        for (size_t i = 0; i < count; i++, p += 16)
            sum += record_hash(p, 16, w->count + i);
    else
        for (size_t i = 0; i < count; i++, p += w->record_bytes)
            sum += record_hash(p, w->record_bytes, w->count + i);
    w->sum = sum;
    w->count += count;
    size_t bytes = count * w->record_bytes;
    if (w->failed || bytes == 0)
        return;
    /* a large block goes straight to the file: through stdio it would be copied once
     * more; small ones gather in stdio's buffer */
    if (bytes >= DIRECT_WRITE_BYTES) {
        if (fflush(w->f) != 0 || write_fully(fileno(w->f), records, bytes) != 0)
            w->failed = errno ? errno : EIO;
    } else if (fwrite(records, w->record_bytes, count, w->f) != count) {
        w->failed = errno ? errno : EIO;
    }
}

/* The save directory, owned by the user who saves: created private (0700) if it does
 * not exist; a directory of another user is refused, since its owner could replace
 * the files a save writes. */
static int open_save_dir(const char *dir, bool create, char *err, size_t errlen)
{
    if (create && mkdir(dir, 0700) != 0 && errno != EEXIST) {
        cr_set_error(err, errlen, "%s: cannot create the save directory: %s", dir,
                     strerror(errno));
        return -1;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        struct stat st;
        if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
            cr_set_error(err, errlen, "%s: exists and is not a directory", dir);
        else
            cr_set_error(err, errlen, "%s: cannot open the save directory: %s", dir,
                         strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_uid != geteuid()) {
        cr_set_error(err, errlen, "%s: the save directory belongs to another user (uid %lu); "
                     "save into a directory of your own", dir, (unsigned long)st.st_uid);
        close(fd);
        return -1;
    }
    return fd;
}

/* The generation a new save takes: one past any part file the directory holds (a
 * save's, or one an interrupted save left), so the new parts never replace a file
 * of the save they may replace. */
static unsigned next_generation(int dirfd)
{
    int fd = dup(dirfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return 1;
    }
    unsigned next = 0, gen;
    uint64_t part;
    for (struct dirent *e; (e = readdir(d));)
        if (parse_part_file(e->d_name, &gen, &part) && gen + 1 > next && gen < UINT32_MAX - 1)
            next = gen + 1;
    closedir(d);
    return next;
}

/* Rank 0 makes the directory ready and picks the new save's generation. A save in
 * the way is refused unless an overwrite was asked for; it stays whole until the
 * new save's manifest replaces its own. */
static int prepare_dir(const char *dir, unsigned flags, unsigned *gen, char *err,
                       size_t errlen)
{
    int dirfd = open_save_dir(dir, true, err, errlen);
    if (dirfd < 0)
        return -1;
    struct stat st;
    if (fstatat(dirfd, "manifest", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        !(flags & CR_SAVE_OVERWRITE)) {
        cr_set_error(err, errlen, "%s: holds a save already (overwrite it explicitly, or "
                     "save elsewhere)", dir);
        close(dirfd);
        return -1;
    }
    *gen = next_generation(dirfd);
    close(dirfd);
    return 0;
}

/* A new file of the save, relative to the directory: never through a link planted
 * under its name, never over a file that exists, readable by its owner only. */
static FILE *create_in(int dirfd, const char *name, const char *shown, char *err,
                       size_t errlen)
{
    int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        cr_set_error(err, errlen, "%s: cannot create: %s", shown, strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    return f;
}

static int write_part(const char *dir, int dirfd, unsigned gen, int rank,
                      const cr_save_kind *k, unsigned flags,
                      void (*fill)(cr_save_writer *, void *), void *user, uint64_t out[2],
                      char *err, size_t errlen)
{
    char path[4096], file[64];
    part_file(file, sizeof file, gen, (uint64_t)rank);
    part_name(path, sizeof path, dir, gen, (uint64_t)rank);
    cr_save_writer w = {.path = path, .record_bytes = k->record_bytes};
    w.f = create_in(dirfd, file, path, err, errlen);
    if (!w.f)
        return -1;
    setvbuf(w.f, NULL, _IOFBF, WRITE_BUFFER);
    errno = 0;
    fill(&w, user);
    if (!w.failed && (flags & CR_SAVE_SYNC) && (fflush(w.f) != 0 || fsync(fileno(w.f)) != 0))
        w.failed = errno ? errno : EIO;
    if (fclose(w.f) != 0 && !w.failed)
        w.failed = errno ? errno : EIO;
    if (w.failed) {
        cr_set_error(err, errlen, "%s: write failed: %s", path, strerror(w.failed));
        unlinkat(dirfd, file, 0);
        return -1;
    }
    out[0] = w.count;
    out[1] = w.sum;
    return 0;
}

/* After the new manifest is in place: every part file but the new save's, which an
 * earlier save or an interrupted one left, is removed. */
static void remove_other_parts(int dirfd, unsigned keep, int parts)
{
    int fd = dup(dirfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    unsigned gen;
    uint64_t part;
    for (struct dirent *e; (e = readdir(d));)
        if (parse_part_file(e->d_name, &gen, &part) && (gen != keep || part >= (uint64_t)parts))
            unlinkat(dirfd, e->d_name, 0);
    closedir(d);
}

/* Rank 0 writes the manifest to a temporary name and renames it over the old one:
 * that rename is the moment the new save replaces the old, whole, for any reader,
 * whether the job ends before it, after it or not at all. Then the old parts go.
 * With CR_SAVE_SYNC the manifest and the directory reach the device too (the parts
 * did before). */
static int write_manifest(const char *dir, int dirfd, unsigned gen, const cr_save_kind *k,
                          unsigned flags, int parts, const uint64_t *table, char *err,
                          size_t errlen)
{
    char path[4096], tmp[4096];
    join(path, sizeof path, dir, "manifest");
    join(tmp, sizeof tmp, dir, ".manifest.tmp");
    unlinkat(dirfd, ".manifest.tmp", 0); /* an interrupted save's; a link is not followed */
    FILE *f = create_in(dirfd, ".manifest.tmp", tmp, err, errlen);
    if (!f)
        return -1;
    fprintf(f, "courier-save %d\nkind %s\nrecord_bytes %zu\nmeta %" PRIu64 "\ntype %s\n"
            "byte_order %s\ngeneration %u\nparts %d\n", SAVE_VERSION, k->kind,
            k->record_bytes, k->meta, type_of(k), byte_order(), gen, parts);
    for (int p = 0; p < parts; p++)
        fprintf(f, "part %d %" PRIu64 " %016" PRIx64 "\n", p, table[2 * p], table[2 * p + 1]);
    fprintf(f, "end\n");
    bool ok = fflush(f) == 0 && (!(flags & CR_SAVE_SYNC) || fsync(fileno(f)) == 0);
    ok = fclose(f) == 0 && ok;
    if (!ok || renameat(dirfd, ".manifest.tmp", dirfd, "manifest") != 0 ||
        ((flags & CR_SAVE_SYNC) && fsync(dirfd) != 0)) {
        cr_set_error(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        unlinkat(dirfd, ".manifest.tmp", 0);
        return -1;
    }
    remove_other_parts(dirfd, gen, parts);
    return 0;
}

int cr_io_save(cr_comm *comm, const char *dir, const cr_save_kind *kind, unsigned flags,
               void (*fill)(cr_save_writer *w, void *user), void *user, char *err,
               size_t errlen)
{
    check_kind("cr_io_save", kind);
    if (!fill || !dir || !dir[0])
        cr_fatal("cr_io_save: no %s", fill ? "directory" : "fill callback");
    if (flags & ~(CR_SAVE_OVERWRITE | CR_SAVE_SYNC))
        cr_fatal("cr_io_save: unknown flags 0x%x (CR_SAVE_OVERWRITE, CR_SAVE_SYNC)",
                 flags & ~(CR_SAVE_OVERWRITE | CR_SAVE_SYNC));
    int rank = cr_comm_rank(comm), size = cr_comm_size(comm);
    unsigned gen = 0;
    int rc = rank == 0 ? prepare_dir(dir, flags, &gen, err, errlen) : 0;
    if (io_agree(comm, rc, err, errlen))
        return -1;
    uint64_t g = gen;
    cr_allreduce(comm, &g, &g, 1, CR_UINT64, CR_OP_MAX, NULL); /* rank 0's */
    gen = (unsigned)g;
    int dirfd = open_save_dir(dir, false, err, errlen);
    if (io_agree(comm, dirfd < 0 ? -1 : 0, err, errlen)) {
        if (dirfd >= 0)
            close(dirfd);
        return -1;
    }
    uint64_t mine[2] = {0, 0};
    rc = write_part(dir, dirfd, gen, rank, kind, flags, fill, user, mine, err, errlen);
    if (io_agree(comm, rc, err, errlen)) {
        close(dirfd);
        return -1;
    }
    uint64_t *table = malloc(2 * sizeof *table * (size_t)size);
    if (!table)
        cr_fatal("cr_io_save: no memory for the table of %d parts", size);
    cr_allgather(comm, mine, sizeof mine, table, NULL);
    rc = rank == 0 ? write_manifest(dir, dirfd, gen, kind, flags, size, table, err, errlen) : 0;
    free(table);
    close(dirfd);
    return io_agree(comm, rc, err, errlen);
}

/* ---------------------------------------------------------------- loading */

typedef struct manifest {
    char kind[64];
    char type[32], order[16]; /* version 1: "bytes" and this machine's */
    unsigned gen;             /* its parts' generation (part_file) */
    size_t record_bytes;
    uint64_t meta, parts;
    uint64_t *count, *sum, *first; /* per part; first: its first record's index */
    uint64_t total;
} manifest;

static void manifest_free(manifest *m)
{
    free(m->count);
    free(m->sum);
    free(m->first);
    *m = (manifest){0};
}

static int bad_manifest(const char *path, const char *why, char *err, size_t errlen)
{
    cr_set_error(err, errlen, "%s: %s", path, why);
    return -1;
}

static int parse_manifest(FILE *f, const char *path, manifest *m, char *err, size_t errlen)
{
    char line[256];
    int version;
    if (!fgets(line, sizeof line, f) || sscanf(line, "courier-save %d", &version) != 1)
        return bad_manifest(path, "not a Courier save manifest", err, errlen);
    if (version < 1 || version > SAVE_VERSION) {
        cr_set_error(err, errlen, "%s: save format version %d; this Courier reads versions 1 "
                     "to %d", path, version, SAVE_VERSION);
        return -1;
    }
    strcpy(m->type, "bytes");
    strcpy(m->order, byte_order());
    if (!fgets(line, sizeof line, f) || sscanf(line, "kind %63s", m->kind) != 1 ||
        !fgets(line, sizeof line, f) || sscanf(line, "record_bytes %zu", &m->record_bytes) != 1 ||
        !fgets(line, sizeof line, f) || sscanf(line, "meta %" SCNu64, &m->meta) != 1 ||
        (version >= 2 &&
         (!fgets(line, sizeof line, f) || sscanf(line, "type %31s", m->type) != 1 ||
          !fgets(line, sizeof line, f) || sscanf(line, "byte_order %15s", m->order) != 1 ||
          !fgets(line, sizeof line, f) || sscanf(line, "generation %u", &m->gen) != 1)) ||
        !fgets(line, sizeof line, f) || sscanf(line, "parts %" SCNu64, &m->parts) != 1 ||
        m->parts == 0 || m->parts > MAX_PARTS)
        return bad_manifest(path, "a damaged header (kind, record_bytes, meta, type, byte_order, "
                            "generation, parts)", err,
                            errlen);
    if (m->record_bytes == 0 || m->record_bytes > MAX_RECORD_BYTES) {
        cr_set_error(err, errlen, "%s: record_bytes %zu is not in 1 .. %zu (damaged?)", path,
                     m->record_bytes, MAX_RECORD_BYTES);
        return -1;
    }
    m->count = calloc(m->parts, sizeof *m->count);
    m->sum = calloc(m->parts, sizeof *m->sum);
    m->first = calloc(m->parts, sizeof *m->first);
    if (!m->count || !m->sum || !m->first)
        return bad_manifest(path, "no memory for its table of parts", err, errlen);
    for (uint64_t p = 0; p < m->parts; p++) {
        uint64_t index;
        if (!fgets(line, sizeof line, f) ||
            sscanf(line, "part %" SCNu64 " %" SCNu64 " %" SCNx64, &index, &m->count[p],
                   &m->sum[p]) != 3 || index != p) {
            cr_set_error(err, errlen, "%s: the line of part %" PRIu64 " is damaged or missing",
                         path, p);
            return -1;
        }
        m->first[p] = m->total;
        if (m->count[p] > UINT64_MAX / 2 / m->record_bytes - m->total)
            return bad_manifest(path, "record counts too large to be true", err, errlen);
        m->total += m->count[p];
    }
    if (!fgets(line, sizeof line, f) || strcmp(line, "end\n"))
        return bad_manifest(path, "no 'end' line (cut short?)", err, errlen);
    return 0;
}

static int read_manifest(const char *dir, manifest *m, char *err, size_t errlen)
{
    char path[4096];
    join(path, sizeof path, dir, "manifest");
    FILE *f = fopen(path, "r");
    if (!f) {
        cr_set_error(err, errlen, "%s: cannot open: %s (no save in %s?)", path, strerror(errno),
                     dir);
        return -1;
    }
    int rc = parse_manifest(f, path, m, err, errlen);
    fclose(f);
    return rc;
}

int cr_io_save_info(const char *dir, cr_save_info *info, char *err, size_t errlen)
{
    manifest m = {0};
    int rc = read_manifest(dir, &m, err, errlen);
    if (rc == 0) {
        *info = (cr_save_info){.record_bytes = m.record_bytes, .meta = m.meta,
                               .records = m.total, .parts = m.parts};
        memcpy(info->kind, m.kind, sizeof info->kind);
        memcpy(info->type, m.type, sizeof info->type);
    }
    manifest_free(&m);
    return rc;
}

/* The manifest, checked against what the caller expects, and every part's size. */
static int open_save(const char *dir, const cr_save_kind *k, manifest *m, char *err,
                     size_t errlen)
{
    char path[4096];
    if (read_manifest(dir, m, err, errlen))
        return -1;
    if (strcmp(m->kind, k->kind)) {
        cr_set_error(err, errlen, "%s: holds a %s, not a %s", dir, m->kind, k->kind);
        return -1;
    }
    if (strcmp(m->order, byte_order())) {
        cr_set_error(err, errlen, "%s: saved on a %s-endian machine, and this one is "
                     "%s-endian (records are not converted)", dir, m->order, byte_order());
        return -1;
    }
    if (strcmp(m->type, "bytes") && strcmp(type_of(k), "bytes") && strcmp(m->type, type_of(k))) {
        cr_set_error(err, errlen, "%s: holds %s records, not %s", dir, m->type, type_of(k));
        return -1;
    }
    const char *meta = k->meta_name ? k->meta_name : "meta";
    if (m->record_bytes != k->record_bytes || m->meta != k->meta) {
        cr_set_error(err, errlen, "%s: records of %zu bytes and %s %" PRIu64 ", but this %s "
                     "has %zu and %" PRIu64, dir, m->record_bytes, meta, m->meta, k->kind,
                     k->record_bytes, k->meta);
        return -1;
    }
    for (uint64_t p = 0; p < m->parts; p++) {
        struct stat st;
        part_name(path, sizeof path, dir, m->gen, p);
        if (stat(path, &st) != 0) {
            cr_set_error(err, errlen, "%s: missing: %s", path, strerror(errno));
            return -1;
        }
        if ((uint64_t)st.st_size != m->count[p] * m->record_bytes) {
            cr_set_error(err, errlen, "%s: %lld bytes, but the manifest says %" PRIu64 " records "
                         "of %zu bytes (truncated or replaced?)", path, (long long)st.st_size,
                         m->count[p], m->record_bytes);
            return -1;
        }
    }
    return 0;
}

static int read_fully(int fd, unsigned char *buf, size_t len, uint64_t at)
{
    while (len > 0) {
        ssize_t got = pread(fd, buf, len, (off_t)at);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        buf += got, len -= (size_t)got, at += (uint64_t)got;
    }
    return 0;
}

/* This rank's records of one part: mapped from the file where it can be (no copy,
 * no memory of the job's own: the pages are the file system's cache), else read
 * into memory of their own. */
typedef struct piece {
    void *map; /* the mapping, or NULL when the records were read */
    size_t map_len;
    unsigned char *records;
    uint64_t first, count;
} piece;

static void piece_free(piece *pc)
{
    if (pc->map)
        munmap(pc->map, pc->map_len);
    else
        free(pc->records);
}

/* Records [a - lo, b - lo) of part fd (a part's first record is the save's lo).
 * Returns 0, -1 (errno says why), or -2 for a part cut short since its size was
 * checked: it is refused before it is mapped, since a mapping read past the file's
 * end would end the process with SIGBUS. */
static int piece_get(int fd, const manifest *m, uint64_t lo, uint64_t a, uint64_t b, piece *pc)
{
    size_t rb = m->record_bytes, bytes = (size_t)(b - a) * rb;
    uint64_t at = (a - lo) * rb, page = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t from = at - at % page;
    *pc = (piece){.first = a, .count = b - a, .map_len = bytes + (size_t)(at - from)};
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -1;
    if ((uint64_t)st.st_size < at + bytes)
        return -2;
    void *map = mmap(NULL, pc->map_len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, (off_t)from);
    if (map != MAP_FAILED) {
        pc->map = map;
        pc->records = (unsigned char *)map + (at - from);
        return 0;
    }
    if (!(pc->records = malloc(bytes)))
        return -1;
    return read_fully(fd, pc->records, bytes, at);
}

/* Whether part p holds any of records [first, first + count). */
static bool part_overlaps(const manifest *m, uint64_t p, uint64_t first, uint64_t count)
{
    uint64_t lo = m->first[p], hi = lo + m->count[p];
    return hi > lo && hi > first && lo < first + count;
}

/* Records [first, first + count) of the save, a piece per part they lie in (at most
 * *n pieces); per part, the sum of the hashes and the number of records read go to
 * sums[2p], sums[2p + 1]. */
static int read_records(const char *dir, const manifest *m, uint64_t first, uint64_t count,
                        piece *pieces, size_t *n, uint64_t *sums, char *err, size_t errlen)
{
    size_t rb = m->record_bytes, got = 0;
    for (uint64_t p = 0; p < m->parts && count > 0; p++) {
        if (!part_overlaps(m, p, first, count))
            continue;
        uint64_t lo = m->first[p], hi = lo + m->count[p];
        uint64_t a = first > lo ? first : lo, b = first + count < hi ? first + count : hi;
        char path[4096];
        part_name(path, sizeof path, dir, m->gen, p);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        piece *pc = &pieces[got];
        int rc = fd < 0 ? -1 : piece_get(fd, m, lo, a, b, pc);
        if (rc == -2)
            cr_set_error(err, errlen, "%s: shorter than when the load began (changed while "
                         "it was read?)", path);
        else if (rc)
            cr_set_error(err, errlen, "%s: read failed: %s", path, strerror(errno ? errno : EIO));
        if (rc) {
            if (fd >= 0) {
                piece_free(pc);
                close(fd);
            }
            *n = got;
            return -1;
        }
        close(fd);
        got++;
        const unsigned char *at = pc->records;
        for (uint64_t i = a; i < b; i++, at += rb) {
            __builtin_prefetch(at + 1024); /* across the mapping's pages too */
            sums[2 * p] += record_hash(at, rb, i - lo);
        }
        sums[2 * p + 1] += b - a;
    }
    *n = got;
    return 0;
}

/* How many parts records [first, first + count) lie in. */
static size_t parts_touched(const manifest *m, uint64_t first, uint64_t count)
{
    size_t n = 0;
    for (uint64_t p = 0; p < m->parts; p++)
        n += part_overlaps(m, p, first, count);
    return n;
}

/* Together the ranks have read each part whole (or not: a caller's ranges may leave
 * records out); every part read whole must add up to its checksum. */
static int check_sums(cr_comm *comm, const char *dir, const manifest *m, uint64_t *sums,
                      char *err, size_t errlen)
{
    cr_allreduce(comm, sums, sums, 2 * m->parts, CR_UINT64, CR_OP_SUM, NULL);
    for (uint64_t p = 0; p < m->parts; p++) {
        if (sums[2 * p + 1] == m->count[p] && sums[2 * p] != m->sum[p]) {
            char path[4096];
            part_name(path, sizeof path, dir, m->gen, p);
            cr_set_error(err, errlen, "%s: checksum mismatch: the records are corrupted", path);
            return -1;
        }
    }
    return 0;
}

int cr_io_load(cr_comm *comm, const char *dir, const cr_save_kind *kind, const uint64_t *range,
               cr_load_fn fn, void *user, char *err, size_t errlen)
{
    check_kind("cr_io_load", kind);
    if (!fn || !dir || !dir[0])
        cr_fatal("cr_io_load: no %s", fn ? "directory" : "record callback");
    manifest m = {0};
    int rc = open_save(dir, kind, &m, err, errlen);
    if (io_agree(comm, rc, err, errlen)) {
        manifest_free(&m);
        return -1;
    }
    int rank = cr_comm_rank(comm), size = cr_comm_size(comm);
    uint64_t first, end;
    io_share(m.total, rank, size, &first, &end);
    uint64_t count = end - first;
    if (range) {
        first = range[0], count = range[1];
        if (first > m.total || count > m.total - first) {
            cr_set_error(err, errlen, "%s: records [%" PRIu64 ", %" PRIu64 ") asked for, the "
                         "save holds %" PRIu64, dir, first, first + count, m.total);
            rc = -1;
        }
    }
    uint64_t *sums = calloc(2 * m.parts, sizeof *sums);
    size_t npieces = rc == 0 && count > 0 ? parts_touched(&m, first, count) : 0;
    piece *pieces = calloc(npieces ? npieces : 1, sizeof *pieces);
    if (!sums || !pieces)
        cr_fatal("cr_io_load: no memory for the checksums of %" PRIu64 " parts", m.parts);
    if (rc == 0 && npieces > 0)
        rc = read_records(dir, &m, first, count, pieces, &npieces, sums, err, errlen);
    if (io_agree(comm, rc, err, errlen) == 0) {
        rc = check_sums(comm, dir, &m, sums, err, errlen); /* the same on every rank */
        for (size_t i = 0; rc == 0 && i < npieces; i++)
            fn(pieces[i].records, (size_t)pieces[i].count, pieces[i].first, user);
    } else {
        rc = -1;
    }
    for (size_t i = 0; i < npieces; i++)
        piece_free(&pieces[i]);
    free(pieces);
    free(sums);
    manifest_free(&m);
    return rc;
}
