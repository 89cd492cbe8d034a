/* Wire format of a send buffer: records packed back to back, each an 8-byte header
 * followed by the payload padded to a multiple of 8 bytes, so every payload a
 * handler sees is 8-byte aligned. A record that travels through other ranks (a
 * route other than direct) carries an 8-byte route block between header and
 * payload: its final destination and the rank that sent it. Header fields are in host byte order: all ranks of
 * one job run on the same architecture. */
#ifndef COURIER_MAILBOX_RECORD_H
#define COURIER_MAILBOX_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CR_REC_ALIGN 8

typedef struct cr_rec_hdr {
    uint32_t len;     /* payload bytes, without padding */
    uint16_t handler; /* registered handler id */
    uint16_t flags;   /* CR_REC_* bits */
} cr_rec_hdr;

enum {
    CR_REC_ROUTED = 1, /* a cr_rec_route block follows the header */
    CR_REC_BCAST = 2,  /* (with ROUTED) a broadcast copy: deliver here and to this node */
};

typedef struct cr_rec_route {
    int32_t dest;   /* final destination */
    int32_t origin; /* the rank that called cr_async: the handler's src */
} cr_rec_route;

_Static_assert(sizeof(cr_rec_hdr) == CR_REC_ALIGN, "record header must stay 8 bytes");
_Static_assert(sizeof(cr_rec_route) == CR_REC_ALIGN, "route block must stay 8 bytes");

static inline size_t cr_rec_pad(size_t len)
{
    return (len + (CR_REC_ALIGN - 1)) & ~(size_t)(CR_REC_ALIGN - 1);
}

/* Bytes a record with a payload of `len` bytes occupies in a buffer. */
static inline size_t cr_rec_size(size_t len)
{
    return sizeof(cr_rec_hdr) + cr_rec_pad(len);
}

/* ... with a route block. */
static inline size_t cr_rec_size_routed(size_t len)
{
    return sizeof(cr_rec_hdr) + sizeof(cr_rec_route) + cr_rec_pad(len);
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

/* Write one record at `dst`, which has room for cr_rec_size(len) bytes. */
static inline void cr_rec_write(char *dst, uint16_t handler, const void *payload, uint32_t len)
{
    cr_rec_hdr h = {.len = len, .handler = handler, .flags = 0};
    memcpy(dst, &h, sizeof h);
    cr_rec_write_payload(dst + sizeof h, payload, len);
}

/* Write a routed record (room for cr_rec_size_routed(len) bytes); `flags` adds to
 * CR_REC_ROUTED. */
static inline void cr_rec_write_routed(char *dst, uint16_t handler, uint16_t flags,
                                       cr_rec_route route, const void *payload, uint32_t len)
{
    cr_rec_hdr h = {.len = len, .handler = handler, .flags = (uint16_t)(flags | CR_REC_ROUTED)};
    memcpy(dst, &h, sizeof h);
    memcpy(dst + sizeof h, &route, sizeof route);
    cr_rec_write_payload(dst + sizeof h + sizeof route, payload, len);
}

/* One record seen in a received buffer. */
typedef struct cr_rec_view {
    uint16_t handler;
    uint16_t flags;
    uint32_t len;
    const char *payload;
    cr_rec_route route; /* valid when flags has CR_REC_ROUTED */
} cr_rec_view;

typedef enum cr_rec_status {
    CR_REC_OK = 1,        /* *out holds the next record */
    CR_REC_END = 0,       /* the buffer is used up */
    CR_REC_TRUNCATED = -1 /* the buffer ends inside a record: corrupt input */
} cr_rec_status;

/* Read the record at *off in buf[0, len) and advance *off past it. */
static inline cr_rec_status cr_rec_next(const char *buf, size_t len, size_t *off,
                                        cr_rec_view *out)
{
    if (*off == len)
        return CR_REC_END;
    if (len - *off < sizeof(cr_rec_hdr))
        return CR_REC_TRUNCATED;
    cr_rec_hdr h;
    memcpy(&h, buf + *off, sizeof h);
    bool routed = h.flags & CR_REC_ROUTED;
    size_t size = routed ? cr_rec_size_routed(h.len) : cr_rec_size(h.len);
    if (size > len - *off)
        return CR_REC_TRUNCATED;
    out->handler = h.handler;
    out->flags = h.flags;
    out->len = h.len;
    out->payload = buf + *off + sizeof h;
    if (routed) {
        memcpy(&out->route, out->payload, sizeof out->route);
        out->payload += sizeof out->route;
    }
    *off += size;
    return CR_REC_OK;
}

#endif
