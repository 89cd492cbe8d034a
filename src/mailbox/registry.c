#include "mailbox/registry.h"

#include "common/fatal.h"

#include <stdlib.h>

void cr_registry_init(cr_registry *r)
{
    r->entries = NULL;
    r->count = 0;
    r->capacity = 0;
}

void cr_registry_free(cr_registry *r)
{
    free(r->entries);
    cr_registry_init(r);
}

int cr_registry_add_entry(cr_registry *r, cr_handler_entry entry)
{
    if (r->count >= CR_MAX_HANDLERS)
        return -1;
    cr_xgrow((void **)&r->entries, &r->capacity, (int)r->count + 1, sizeof *r->entries);
    r->entries[r->count] = entry;
    return (int)r->count++;
}

int cr_registry_add(cr_registry *r, cr_handler_fn fn, void *user)
{
    return cr_registry_add_entry(r, (cr_handler_entry){.fn = fn, .user = user});
}
