/* Wire format of a send buffer: a sequence of runs. A run is an 8-byte header
 * followed by `count` records of one handler, all with the same payload length and
 * the same flags. Each record is its payload padded to a multiple of 8 bytes, so
 * every payload a handler sees is 8-byte aligned; a routed run (a route other than
 * direct) puts an 8-byte route block before each payload: the record's final
 * destination and the rank that created it. So an 8-byte update costs 8 bytes on the
 * wire (16 when routed) plus its share of one header, instead of a header of its own
 * (docs/architecture.md, "Wire format"). Header fields are in host byte order: all
 * ranks of one job run on the same architecture. */
#ifndef COURIER_MAILBOX_RECORD_H
#define COURIER_MAILBOX_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CR_REC_ALIGN 8

typedef struct cr_run_hdr {
    uint32_t len;     /* payload bytes of each record, without padding */
    uint16_t handler; /* registered handler id */
    uint16_t info;    /* bits 0-1: CR_REC_* flags; bits 2-5: the records' generation;
                         bits 6-15: records in the run */
} cr_run_hdr;

enum {
    CR_REC_ROUTED = 1, /* every record carries a cr_rec_route block */
    CR_REC_BCAST = 2,  /* (with ROUTED) broadcast copies: deliver here and to this node */
    CR_REC_FLAG_BITS = 2,
};

/* The generation of a record: how many handlers, one sending from the one before,
 * lie between it and user code (0 from user code, one more from a handler, the same
 * when a route passes it on), at most CR_REC_GEN_MAX. Under COURIER_FLOW=deep-held a
 * rank handles the deepest generation first (docs/flow_control.md); otherwise every
 * record is of generation 0. */
#define CR_REC_GEN_SHIFT CR_REC_FLAG_BITS
#define CR_REC_GEN_BITS 4
#define CR_REC_GEN_MAX ((1u << CR_REC_GEN_BITS) - 1)
/* The bits of `info` below the count: flags and generation. */
#define CR_REC_BITS (CR_REC_FLAG_BITS + CR_REC_GEN_BITS)
#define CR_REC_BITS_MASK ((1u << CR_REC_BITS) - 1)

/* Records in one run, at most: the count fills the 10 high bits of `info`. */
#define CR_RUN_MAX ((1u << (16 - CR_REC_BITS)) - 1)
/* What one more record adds to `info`. */
#define CR_RUN_ONE (1u << CR_REC_BITS)

/* A run's flags and generation, as `info` holds them below the count. */
static inline uint16_t cr_run_bits(uint16_t flags, unsigned gen)
{
    return (uint16_t)(flags | gen << CR_REC_GEN_SHIFT);
}

typedef struct cr_rec_route {
    int32_t dest;   /* final destination */
    int32_t origin; /* the rank that called cr_async: the handler's src */
} cr_rec_route;

_Static_assert(sizeof(cr_run_hdr) == CR_REC_ALIGN, "run header must stay 8 bytes");
_Static_assert(sizeof(cr_rec_route) == CR_REC_ALIGN, "route block must stay 8 bytes");

static inline size_t cr_rec_pad(size_t len)
{
    return (len + (CR_REC_ALIGN - 1)) & ~(size_t)(CR_REC_ALIGN - 1);
}

/* Bytes one record of a run takes after the header: its payload padded, plus the
 * route block when the run is routed. */
static inline size_t cr_rec_stride(size_t len, bool routed)
{
    return cr_rec_pad(len) + (routed ? sizeof(cr_rec_route) : 0);
}

/* The run's identity: records may join a run only when all of it matches. A key
 * always has its top bit set (a count bit of `info`, never a flag), so it is never
 * CR_RUN_NONE, 0: a zeroed send buffer table means "no open run" without being
 * written, and P destinations cost no memory until they are used. */
#define CR_RUN_KEY_MARK ((uint64_t)1 << 63)
#define CR_RUN_NONE ((uint64_t)0)
#define CR_REC_FLAG_MASK ((1u << CR_REC_FLAG_BITS) - 1)

static inline uint64_t cr_run_key(uint16_t handler, uint16_t flags, uint32_t len)
{
    return (uint64_t)len | (uint64_t)handler << 32 | (uint64_t)flags << 48 | CR_RUN_KEY_MARK;
}

/* Write a run header for one record at `dst`; `bits` are cr_run_bits. */
static inline void cr_run_write_hdr(char *dst, uint16_t handler, uint16_t bits, uint32_t len)
{
    cr_run_hdr h = {.len = len, .handler = handler, .info = (uint16_t)(bits | CR_RUN_ONE)};
    memcpy(dst, &h, sizeof h);
}

/* Set the count of the run whose header is at `hdr` (1 .. CR_RUN_MAX). */
static inline void cr_run_set_count(char *hdr, unsigned count)
{
    uint16_t info;
    memcpy(&info, hdr + offsetof(cr_run_hdr, info), sizeof info);
    info = (uint16_t)((info & (CR_RUN_ONE - 1)) | count << CR_REC_BITS);
    memcpy(hdr + offsetof(cr_run_hdr, info), &info, sizeof info);
}

/* Copy the payload to `dst` and zero its padding, so buffers never carry
 * uninitialized bytes. */
static inline void cr_rec_write_payload(char *dst, const void *payload, uint32_t len)
{
    /* The common small sizes as fixed-size copies the compiler inlines; a libc call
     * costs more than the copy itself. */
    switch (len) {
    case 0: return;
    case 8: memcpy(dst, payload, 8); return;
    case 16: memcpy(dst, payload, 16); return;
    default: break;
    }
    memcpy(dst, payload, len);
    size_t pad = cr_rec_pad(len) - len;
    if (pad)
        memset(dst + len, 0, pad);
}

/* Write one record of a run at `dst` (room for cr_rec_stride bytes); `route` is
 * NULL unless the run is routed. */
static inline void cr_rec_write(char *dst, const cr_rec_route *route, const void *payload,
                                uint32_t len)
{
    if (route) {
        memcpy(dst, route, sizeof *route);
        dst += sizeof *route;
    }
    cr_rec_write_payload(dst, payload, len);
}

/* One run seen in a received buffer. Record i's payload is at
 * first + i * stride; in a routed run its route block is the 8 bytes before it. */
typedef struct cr_run_view {
    uint16_t handler;
    uint16_t flags;
    uint16_t gen;
    uint32_t len;
    uint32_t count;
    size_t stride;
    const char *first;
} cr_run_view;

static inline cr_rec_route cr_run_route(const cr_run_view *run, size_t i)
{
    cr_rec_route r;
    memcpy(&r, run->first + i * run->stride - sizeof r, sizeof r);
    return r;
}

typedef enum cr_rec_status {
    CR_REC_OK = 1,        /* *out holds the next run */
    CR_REC_END = 0,       /* the buffer is used up */
    CR_REC_TRUNCATED = -1 /* the buffer ends inside a run: corrupt input */
} cr_rec_status;

/* Read the run at *off in buf[0, len) and advance *off past it. A run of no records
 * is corrupt input too. */
static inline cr_rec_status cr_run_next(const char *buf, size_t len, size_t *off,
                                        cr_run_view *out)
{
    if (*off == len)
        return CR_REC_END;
    if (len - *off < sizeof(cr_run_hdr))
        return CR_REC_TRUNCATED;
    cr_run_hdr h;
    memcpy(&h, buf + *off, sizeof h);
    bool routed = h.info & CR_REC_ROUTED;
    size_t count = h.info >> CR_REC_BITS;
    size_t stride = cr_rec_stride(h.len, routed);
    /* count < 2^10 and stride < 2^33: the product cannot overflow 64 bits. */
    if (count == 0 || count * stride > len - *off - sizeof h)
        return CR_REC_TRUNCATED;
    out->handler = h.handler;
    out->flags = (uint16_t)(h.info & ((1u << CR_REC_FLAG_BITS) - 1));
    out->gen = (uint16_t)((h.info >> CR_REC_GEN_SHIFT) & CR_REC_GEN_MAX);
    out->len = h.len;
    out->count = (uint32_t)count;
    out->stride = stride;
    out->first = buf + *off + sizeof h + (routed ? sizeof(cr_rec_route) : 0);
    *off += sizeof h + count * stride;
    return CR_REC_OK;
}

#endif
