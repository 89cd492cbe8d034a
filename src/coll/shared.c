/* Shared-memory collectives' synchronisation (shared.h). */
#include "coll/shared.h"

#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

enum { LINE = 64 };

/* A rank's area: what it finished, and two posts. Each flag on its own cache line;
 * a post's data follows its flag, so the reader's one acquire covers it. */
typedef struct post {
    _Alignas(LINE) _Atomic uint64_t seq; /* the shared collective posted here */
    _Alignas(LINE) unsigned char data[CR_SHARED_MAX];
} post;

typedef struct area {
    _Alignas(LINE) _Atomic uint64_t finished; /* shared collectives this rank finished */
    post posts[2];
} area;

_Static_assert(sizeof(area) <= CR_NODE_AREA_BYTES, "the shared collectives fit the node area");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics are lock-free across processes");

static area *area_of(const cr_node_area *a, int r)
{
    return (area *)a->base[r];
}

bool cr_shared_fits(const cr_node_area *a, int p, size_t bytes)
{
    return a && a->size == p && p > 1 && bytes <= CR_SHARED_MAX;
}

/* The fewest shared collectives any rank has finished (they only grow, so a value
 * seen once stays a lower bound). */
static uint64_t fewest_finished(const cr_node_area *a)
{
    uint64_t fewest = UINT64_MAX;
    for (int r = 0; r < a->size; r++) {
        uint64_t f = atomic_load_explicit(&area_of(a, r)->finished, memory_order_acquire);
        fewest = f < fewest ? f : fewest;
    }
    return fewest;
}

bool cr_shared_post(const cr_node_area *a, uint64_t *seen, uint64_t seq, const void *data,
                    size_t len)
{
    /* The other ranks' counters are read only when what was seen last does not
     * already allow this post: each read is a cache line from another core. */
    if (seq > 2 && *seen < seq - 2) {
        *seen = fewest_finished(a);
        if (*seen < seq - 2)
            return false;
    }
    post *mine = &area_of(a, a->rank)->posts[seq & 1];
    if (len)
        memcpy(mine->data, data, len);
    atomic_store_explicit(&mine->seq, seq, memory_order_release);
    return true;
}

/* More ranks on the node than processors: a rank waited for may not be running, and
 * only giving up the processor lets it post. */
static bool oversubscribed(const cr_node_area *a)
{
    static long cpus;
    if (cpus == 0)
        cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 0 && a->size > cpus;
}

static bool all_posted(const cr_node_area *a, uint64_t seq)
{
    for (int r = 0; r < a->size; r++)
        if (atomic_load_explicit(&area_of(a, r)->posts[seq & 1].seq, memory_order_acquire) != seq)
            return false;
    return true;
}

bool cr_shared_ready(const cr_node_area *a, uint64_t seq)
{
    if (atomic_load_explicit(&area_of(a, a->rank)->finished, memory_order_relaxed) != seq - 1)
        return false;
    if (all_posted(a, seq))
        return true;
    if (oversubscribed(a))
        sched_yield();
    return false;
}

const void *cr_shared_block(const cr_node_area *a, uint64_t seq, int r)
{
    return area_of(a, r)->posts[seq & 1].data;
}

void cr_shared_finish(const cr_node_area *a, uint64_t seq)
{
    atomic_store_explicit(&area_of(a, a->rank)->finished, seq, memory_order_release);
}
