/* Request and reply: a table of n entries is spread over the ranks; each rank looks
 * up random keys, the owner's serve function answers, and the reply runs a callback
 * back on the requester. Requests for the same key merge on their way (key_len) and,
 * with coalescing, join one already in flight: the owner serves each key far less
 * often than it is asked, and every request still gets its own reply.
 *
 *   scripts/mpirun.sh -np 4 build/examples/lookup [LOOKUPS_PER_RANK [ENTRIES]]
 *
 * The table holds value(k) = k * k + 1 at key k; every reply is checked. */
#include <courier.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t entries = 1000;
static uint64_t first, count; /* this rank's block of keys */
static uint64_t *values;      /* values[k - first] */
static uint64_t served, answered, wrong;

static uint64_t value_of(uint64_t k)
{
    return k * k + 1;
}

static void serve(cr_comm *comm, cr_dedup_req *req, const void *payload, size_t len, void *user)
{
    (void)len, (void)user;
    uint64_t k;
    memcpy(&k, payload, sizeof k);
    served++;
    cr_dedup_reply(comm, req, &values[k - first], sizeof(uint64_t));
}

/* ctx carries the key that was asked for, so the answer can be checked. */
static void on_reply(cr_comm *comm, const void *data, size_t len, void *ctx)
{
    (void)comm;
    uint64_t v, k = (uint64_t)(uintptr_t)ctx;
    memcpy(&v, data, sizeof v);
    answered++;
    wrong += len != sizeof v || v != value_of(k);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    uint64_t lookups = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
    if (argc > 2)
        entries = strtoull(argv[2], NULL, 10);
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, NULL);
    int rank = cr_comm_rank(comm), size = cr_comm_size(comm);
    if (entries < (uint64_t)size) {
        if (rank == 0)
            fprintf(stderr, "lookup: %llu entries are fewer than the %d ranks\n",
                    (unsigned long long)entries, size);
        cr_comm_destroy(comm);
        MPI_Finalize();
        return 2;
    }
    cr_darray_block(entries, size, rank, &first, &count);
    values = malloc((count ? count : 1) * sizeof *values);
    if (!values) {
        fprintf(stderr, "lookup: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (uint64_t i = 0; i < count; i++)
        values[i] = value_of(first + i);
    int get = cr_dedup_register_request(
        comm, &(cr_dedup_request_type){.serve = serve, .key_len = 8, .coalesce = 1}, NULL);

    uint64_t state = 0x9e3779b97f4a7c15ULL * (uint64_t)(rank + 1);
    for (uint64_t i = 0; i < lookups; i++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        uint64_t k = (state >> 33) % entries;
        cr_dedup_request(comm, cr_darray_owner(entries, size, k), get, &k, sizeof k, on_reply,
                         (void *)(uintptr_t)k);
    }
    cr_barrier(comm); /* every request has its reply here */

    uint64_t mine[3] = {answered, wrong, served}, all[3];
    MPI_Allreduce(mine, all, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    int ok = all[0] == lookups * (uint64_t)size && all[1] == 0;
    if (rank == 0)
        printf("lookup: %llu requests, %llu replies, %llu wrong, the owners served %llu: %s\n",
               (unsigned long long)(lookups * (uint64_t)size), (unsigned long long)all[0],
               (unsigned long long)all[1], (unsigned long long)all[2], ok ? "exact" : "WRONG");
    free(values);
    cr_comm_destroy(comm);
    MPI_Finalize();
    return ok ? 0 : 1;
}
