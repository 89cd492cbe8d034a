/* Helpers every graph kernel shares: its state on a comm, one agreed error, the
 * vertex of an adjacency slot, a sort of ids. */
#include "graph/graph_internal.h"

#include "courier/route.h"

#include "common/fatal.h"
#include "mailbox/module.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int graph_agree(cr_comm *comm, const char *mine, char *err, size_t errlen)
{
    uint64_t me = mine ? (uint64_t)cr_comm_rank(comm) : UINT64_MAX, first;
    cr_module_allreduce_u64(comm, &me, &first, 1, CR_OP_MIN);
    if (first == UINT64_MAX)
        return 0;
    /* the lowest failing rank's message, to every rank: its bytes as words, the
     * others' zero, combined by MAX */
    uint64_t words[32] = {0}, all[32];
    if (me == first)
        strncpy((char *)words, mine, sizeof words - 1);
    cr_module_allreduce_u64(comm, words, all, 32, CR_OP_MAX);
    ((char *)all)[sizeof all - 1] = 0;
    if (err && errlen)
        snprintf(err, errlen, "%s", (const char *)all);
    return -1;
}

uint64_t graph_local_of_slot(const cr_graph *g, uint64_t k)
{
    uint64_t lo = 0, hi = g->count; /* offsets[lo] <= k < offsets[hi] */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (g->offsets[mid] <= k)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Quicksort with insertion sort below 24 items: lists are mostly short. One body for
 * both widths of id. */
#define DEFINE_SORT_IDS(name, type)                                                     \
    void name(type *a, uint64_t n)                                                      \
    {                                                                                   \
        while (n > 24) {                                                                \
            type p = a[n / 2];                                                          \
            uint64_t i = 0, j = n - 1;                                                  \
            for (;;) {                                                                  \
                while (a[i] < p)                                                        \
                    i++;                                                                \
                while (a[j] > p)                                                        \
                    j--;                                                                \
                if (i >= j)                                                             \
                    break;                                                              \
                type t = a[i];                                                          \
                a[i++] = a[j], a[j--] = t;                                              \
            }                                                                           \
            /* [0, j] <= p <= [j + 1, n): recurse on the smaller part */                \
            if (j + 1 < n - j - 1) {                                                    \
                name(a, j + 1);                                                         \
                a += j + 1, n -= j + 1;                                                 \
            } else {                                                                    \
                name(a + j + 1, n - j - 1);                                             \
                n = j + 1;                                                              \
            }                                                                           \
        }                                                                               \
        for (uint64_t i = 1; i < n; i++) {                                              \
            type x = a[i];                                                              \
            uint64_t k = i;                                                             \
            for (; k > 0 && a[k - 1] > x; k--)                                          \
                a[k] = a[k - 1];                                                        \
            a[k] = x;                                                                   \
        }                                                                               \
    }

DEFINE_SORT_IDS(graph_sort_ids, uint64_t)
DEFINE_SORT_IDS(graph_sort_ids32, uint32_t)

void graph_ids_sort(graph_ids a, uint64_t from, uint64_t n)
{
    if (a.u32)
        graph_sort_ids32(a.u32 + from, n);
    else
        graph_sort_ids(a.u64 + from, n);
}

static bool wide_forced;

void graph_ids_force_wide(bool wide)
{
    wide_forced = wide;
}

bool graph_ids_narrow(uint64_t n)
{
    return n <= UINT32_MAX && !wide_forced;
}

graph_ids graph_ids_alloc(uint64_t n, uint64_t vertices)
{
    if (graph_ids_narrow(vertices))
        return (graph_ids){.u32 = graph_xmalloc_large(n, sizeof(uint32_t))};
    return (graph_ids){.u64 = graph_xmalloc_large(n, sizeof(uint64_t))};
}

void graph_ids_free(graph_ids a)
{
    free(a.u32);
    free(a.u64);
}

uint64_t graph_longest_list(const uint64_t *off, uint64_t n)
{
    uint64_t most = 0;
    for (uint64_t i = 0; i < n; i++)
        if (off[i + 1] - off[i] > most)
            most = off[i + 1] - off[i];
    return most;
}

uint64_t graph_ids_lower_bound(graph_ids a, uint64_t lo, uint64_t hi, uint64_t key)
{
    if (!a.u32)
        return cr_lower_bound_u64(a.u64, lo, hi, key);
    if (key > UINT32_MAX) /* above every 4-byte id */
        return hi;
    return cr_lower_bound_u32(a.u32, lo, hi, (uint32_t)key);
}

void *graph_xmalloc_large(size_t n, size_t size)
{
    return cr_xmalloc_huge(n ? n : 1, size); /* kept with the graph */
}

typedef struct node_array_state {
    cr_node_segment *seg;
    size_t bytes; /* what it has room for */
    bool none;    /* the comm's node cannot share memory: asked once */
} node_array_state;

void graph_node_array_free(cr_comm *comm, void *state)
{
    cr_module_node_segment_destroy(((node_array_state *)state)->seg);
    cr_module_state_free(comm, state);
}

cr_node_segment *graph_node_array(cr_graph *g, const cr_module_type *type, size_t bytes)
{
    if (cr_layout_nodes(cr_module_layout(g->comm)) != 1)
        return NULL;
    bool fresh;
    node_array_state *s = cr_module_state_or_new(g->comm, type, sizeof *s, &fresh);
    if (s->none || (s->seg && s->bytes >= bytes))
        return s->seg; /* the same on every rank: so are the graphs and the sizes */
    cr_module_node_segment_destroy(s->seg);
    s->seg = cr_module_node_segment_create(g->comm, g->rank == 0 ? bytes : 0);
    s->bytes = bytes;
    s->none = s->seg == NULL;
    return s->seg;
}
