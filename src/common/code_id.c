#include "common/code_id.h"

#include "courier/rng.h"

#include <dlfcn.h>
#include <string.h>

/* FNV-1a over the bytes of a string, for the file name's share of the identity. */
static uint64_t hash_string(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

uint64_t cr_code_id(uintptr_t fn)
{
    if (fn == 0)
        return 0;
    Dl_info info;
    if (!dladdr((void *)fn, &info) || !info.dli_fbase)
        return cr_rng_hash64(fn); /* not in a mapped object: compare the address itself */
    const char *name = info.dli_fname ? info.dli_fname : "";
    const char *base = strrchr(name, '/');
    uint64_t offset = fn - (uintptr_t)info.dli_fbase;
    return cr_rng_hash64(hash_string(base ? base + 1 : name) ^ cr_rng_hash64(offset));
}
