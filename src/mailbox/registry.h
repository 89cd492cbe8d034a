/* Handler registry: ids are indices into a growing array. */
#ifndef COURIER_MAILBOX_REGISTRY_H
#define COURIER_MAILBOX_REGISTRY_H

#include "courier/mailbox.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct cr_handler_entry {
    cr_handler_fn fn;   /* per record, or NULL for a batch handler */
    cr_batch_fn batch;  /* per batch, or NULL */
    void *user;
    size_t key_len;     /* > 0: a combining handler (cr_handler_type) */
    void (*combine)(void *dst, const void *src, size_t len, void *user);
    void *combine_user;
    bool reentrant;     /* waits by handling over the cap (cr_handler_type.reentrant) */
    const char *name;   /* cr_handler_type.name, or NULL */
    /* Combining that does not pay (append.c): looks-ups in the current window, how many
     * of them merged, and records left to append without looking. */
    uint32_t combine_tries, combine_hits, combine_skip;
} cr_handler_entry;

typedef struct cr_registry {
    cr_handler_entry *entries;
    uint32_t count;
    int capacity;
} cr_registry;

void cr_registry_init(cr_registry *r);
void cr_registry_free(cr_registry *r);
/* Append a handler; returns its id, or -1 when CR_MAX_HANDLERS are registered. */
int cr_registry_add(cr_registry *r, cr_handler_fn fn, void *user);
/* The same for a full entry (fn or batch set). */
int cr_registry_add_entry(cr_registry *r, cr_handler_entry entry);

/* The entry for `id`, or NULL when no handler has that id. */
static inline const cr_handler_entry *cr_registry_get(const cr_registry *r, uint32_t id)
{
    return id < r->count ? &r->entries[id] : NULL;
}

#endif
