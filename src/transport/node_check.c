/* MPI's nodes against the processor names (node_check.h). */
#include "transport/node_check.h"

#include <stdlib.h>

uint64_t cr_node_name_hash(const char *name, size_t len)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < len && name[i]; i++) {
        h ^= (unsigned char)name[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int distinct(uint64_t *v, int p)
{
    qsort(v, (size_t)p, sizeof *v, compare_u64);
    int n = p > 0;
    for (int i = 1; i < p; i++)
        n += v[i] != v[i - 1];
    return n;
}

/* Every MPI node carries one name (each rank's name is its node leader's), and there
 * are as many names as nodes: then no name spans two nodes either. */
bool cr_node_check_run(const int *node_of, const uint64_t *name_hash, int p,
                       uint64_t *scratch, cr_node_check *out)
{
    out->first_rank = -1;
    for (int r = 0; r < p; r++) {
        scratch[r] = (uint64_t)node_of[r];
        if (out->first_rank < 0 && name_hash[r] != name_hash[node_of[r]])
            out->first_rank = r;
    }
    out->mpi_nodes = distinct(scratch, p);
    for (int r = 0; r < p; r++)
        scratch[r] = name_hash[r];
    out->name_nodes = distinct(scratch, p);
    if (out->first_rank < 0 && out->mpi_nodes != out->name_nodes) {
        /* Some name spans several nodes: name the first rank that is not its name's
         * first holder's node. */
        for (int r = 0; r < p && out->first_rank < 0; r++)
            for (int q = 0; q < r; q++)
                if (name_hash[q] == name_hash[r]) {
                    if (node_of[q] != node_of[r])
                        out->first_rank = r;
                    break;
                }
    }
    return out->first_rank < 0;
}
