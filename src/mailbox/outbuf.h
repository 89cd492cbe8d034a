/* Per-destination send buffers.
 *
 * Each destination owns one growable byte buffer of packed records. The table keeps
 * a list of the non-empty ones (so flushing everything, or the oldest, costs time in
 * the number of busy destinations, not in P), the bytes held in total, and a small
 * pool of full-size blocks returned by completed sends. This file decides nothing
 * about when to send; the mailbox does.
 *
 * Two layouts of the per-destination state. Dense: a table of P entries indexed by
 * rank, one load per record. Sparse: an open-addressing map from rank to entry that
 * holds only the destinations this rank has used, so memory follows the partners a
 * rank has, not P (the simulated transport keeps P virtual ranks in one process,
 * where P entries each would be O(P^2)). Entries never move once created. */
#ifndef COURIER_MAILBOX_OUTBUF_H
#define COURIER_MAILBOX_OUTBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mailbox/record.h"

typedef struct cr_outbuf {
    char *data;
    size_t len;
    size_t cap;
    double since;       /* time the oldest record in the buffer was appended */
    int32_t active_at;  /* 1 + index in cr_outbufs.active, 0 while empty */
    uint8_t deferred;   /* why a due flush is waiting for a send slot (a cr_flush_cause), 0 if not */
    uint8_t relay;      /* holds records forwarded for other ranks (routing) */
    uint16_t run_count; /* records in the open run (the last one in the buffer), whose
                           header says 1 until the run is closed */
    size_t limit;       /* min(threshold, cap): a record that keeps len below it needs
                           neither a flush nor more room */
    size_t run_at;      /* offset of the open run's header */
    uint64_t run_key;   /* cr_run_key of the run records may join; CR_RUN_NONE if none
                           (no run, or the open run is full) */
    uint32_t gen;       /* times the buffer was taken: the combining index's slots
                           for an older generation are dead (combine.h) */
    uint8_t sent;       /* an MPI message went there since the statistics' reset */
} cr_outbuf;

/* What a destination that was never used looks like (cr_outbufs_peek). */
extern const cr_outbuf cr_outbuf_unused;

typedef struct cr_outbufs {
    cr_outbuf *bufs;   /* dense: [nbufs] by destination; NULL when sparse */
    int nbufs;         /* destinations (P) */
    int nentries;      /* per-destination entries held (dense: nbufs) */
    /* sparse: destination -> entry, linear probing; keys -1 where empty */
    int32_t *keys;
    cr_outbuf **vals;
    uint32_t mask;
    int shift;         /* 32 - log2(mask + 1), for the multiplicative hash */
    cr_outbuf **chunks; /* entries, CR_OUTBUF_CHUNK per chunk, never moved */
    int nchunks;
    int *active; /* destinations with a non-empty buffer */
    int active_cap;
    int nactive;
    size_t threshold;  /* a buffer this full is due to be sent */
    size_t block_size; /* size of pooled blocks: threshold rounded to 8 bytes */
    size_t total;      /* bytes held in all buffers */
    size_t peak;       /* largest `total` seen before the last take (cr_outbufs_peak) */
    char **pool;
    int npool;
    int pool_max;
} cr_outbufs;

/* A buffer detached for sending: the sender owns `data` until it calls recycle. */
typedef struct cr_block {
    char *data;
    size_t len;
    size_t cap;
} cr_block;

/* `sparse` chooses the map (see above) over the table of ndest entries. */
void cr_outbufs_init(cr_outbufs *o, int ndest, size_t threshold, int pool_max, bool sparse);
void cr_outbufs_free(cr_outbufs *o);

/* Send buffers of `threshold` bytes from now on. Only while every buffer is empty
 * (after a barrier): the pooled blocks of the old size are freed. */
void cr_outbufs_set_threshold(cr_outbufs *o, size_t threshold);

/* Sparse layout: the entry of a destination not used before, created empty. */
cr_outbuf *cr_outbufs_add(cr_outbufs *o, int dest);

static inline uint32_t cr_outbufs_home(const cr_outbufs *o, int dest)
{
    return ((uint32_t)dest * UINT32_C(0x9E3779B1)) >> o->shift;
}

/* dest's entry, or NULL if the sparse map has none. */
static inline cr_outbuf *cr_outbufs_find(const cr_outbufs *o, int dest)
{
    if (o->bufs)
        return &o->bufs[dest];
    for (uint32_t i = cr_outbufs_home(o, dest);; i = (i + 1) & o->mask) {
        if (o->keys[i] == dest)
            return o->vals[i];
        if (o->keys[i] < 0)
            return NULL;
    }
}

/* dest's entry, created on first use. */
static inline cr_outbuf *cr_outbufs_at(cr_outbufs *o, int dest)
{
    cr_outbuf *b = cr_outbufs_find(o, dest);
    return b ? b : cr_outbufs_add(o, dest);
}

/* dest's entry to read, or cr_outbuf_unused (empty, generation 0) if it has none:
 * looking does not create one. */
static inline const cr_outbuf *cr_outbufs_peek(const cr_outbufs *o, int dest)
{
    const cr_outbuf *b = cr_outbufs_find(o, dest);
    return b ? b : &cr_outbuf_unused;
}

/* Clear every entry's `sent` mark (the statistics' reset). */
void cr_outbufs_clear_sent(cr_outbufs *o);

/* Make room for `bytes` more bytes in buffer b (growing it when needed). */
void cr_outbufs_grow(cr_outbufs *o, cr_outbuf *b, size_t bytes);

/* Write the open run's count into its header; the run takes no more records. Done
 * when a run is followed by another and when the buffer is taken, so the per-record
 * path only counts in the outbuf. */
static inline void cr_outbuf_close_run(cr_outbuf *b)
{
    if (b->run_count > 1)
        cr_run_set_count(b->data + b->run_at, b->run_count);
    b->run_count = 0;
    b->run_key = CR_RUN_NONE;
}

static inline void cr_outbufs_close_run(cr_outbufs *o, int dest)
{
    cr_outbuf_close_run(cr_outbufs_at(o, dest));
}

/* Bytes a record of `key` with `stride` bytes would add to buffer b: its stride if
 * it continues the open run, else a run header more. */
static inline size_t cr_outbuf_rec_size(const cr_outbuf *b, uint64_t key, size_t stride)
{
    return b->run_key == key ? stride : stride + sizeof(cr_run_hdr);
}

/* True when appending `bytes` would push non-empty buffer b past the threshold, so
 * it should be sent first. An empty buffer always accepts one record, however big. */
static inline bool cr_outbuf_overflows(const cr_outbufs *o, const cr_outbuf *b, size_t bytes)
{
    return b->len != 0 && b->len + bytes > o->threshold;
}

/* Reserve `bytes` at the end of dest's buffer and return where to write them. The
 * bytes count as buffered from now on. `now` stamps the first record of a buffer. */
static inline char *cr_outbuf_append(cr_outbufs *o, cr_outbuf *b, int dest, size_t bytes,
                                     double now)
{
    if (b->cap - b->len < bytes)
        cr_outbufs_grow(o, b, bytes);
    if (b->len == 0) {
        b->since = now;
        o->active[o->nactive++] = dest;
        b->active_at = o->nactive;
    }
    char *at = b->data + b->len;
    b->len += bytes;
    o->total += bytes;
    return at;
}

static inline char *cr_outbufs_append(cr_outbufs *o, int dest, size_t bytes, double now)
{
    return cr_outbuf_append(o, cr_outbufs_at(o, dest), dest, bytes, now);
}

/* Reserve room in dest's buffer b for one record of `key` (handler, flags, payload
 * length) taking `stride` bytes, continuing the open run when the key matches and
 * opening a new run otherwise; returns where the record goes. The per-record path of
 * every send: in the common case it adds the stride and counts the record in the
 * run's header. */
static inline char *cr_outbuf_append_rec(cr_outbufs *o, cr_outbuf *b, int dest, uint64_t key,
                                         size_t stride, double now)
{
    if (b->run_key == key) {
        if (b->cap - b->len < stride)
            cr_outbufs_grow(o, b, stride);
        if (++b->run_count == CR_RUN_MAX)
            b->run_key = CR_RUN_NONE;
        char *at = b->data + b->len;
        b->len += stride;
        o->total += stride;
        return at;
    }
    cr_outbuf_close_run(b);
    size_t at_off = b->len;
    char *hdr = cr_outbuf_append(o, b, dest, sizeof(cr_run_hdr) + stride, now);
    cr_run_write_hdr(hdr, (uint16_t)(key >> 32), (uint16_t)((key >> 48) & CR_REC_BITS_MASK),
                     (uint32_t)key);
    b->run_at = at_off;
    b->run_key = key;
    b->run_count = 1;
    return hdr + sizeof(cr_run_hdr);
}

/* The largest number of bytes buffered at once so far. */
static inline size_t cr_outbufs_peak(const cr_outbufs *o)
{
    return o->total > o->peak ? o->total : o->peak;
}

static inline bool cr_outbuf_full(const cr_outbufs *o, const cr_outbuf *b)
{
    return b->len >= o->threshold;
}

/* Detach dest's buffer (which must be non-empty); dest starts over empty. */
cr_block cr_outbufs_take(cr_outbufs *o, int dest);

/* Give back a block whose send completed: kept in the pool or freed. */
void cr_outbufs_recycle(cr_outbufs *o, char *data, size_t cap);

#endif
