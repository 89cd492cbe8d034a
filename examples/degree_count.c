/* Degree count: every rank reads its share of an edge list and tells the owner of
 * each endpoint to add one to its degree. A batch handler takes a run of records in
 * one call, which is what a few-instruction handler wants.
 *
 *   scripts/mpirun.sh -np 4 build/examples/degree_count [VERTICES [EDGES]]
 *
 * The edges are generated (the same on every rank count); each rank checks the
 * degrees it owns against a count of its own, and rank 0 prints the total. */
#include <courier.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t nvertices = 1 << 16, nedges = 1 << 20;
static uint64_t first, count; /* this rank's block of vertices */
static uint64_t *degree;      /* degree[v - first] */

/* Edge e's endpoints: a fixed pseudo-random function of e. */
static uint64_t mix(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static void edge(uint64_t e, uint64_t *u, uint64_t *v)
{
    *u = mix(2 * e + 1) % nvertices;
    *v = mix(2 * e + 2) % nvertices;
}

static void on_increments(cr_comm *comm, const cr_batch *batch, void *user)
{
    (void)comm, (void)user;
    for (size_t i = 0; i < batch->count; i++) {
        uint64_t v;
        memcpy(&v, cr_batch_payload(batch, i), sizeof v);
        degree[v - first]++;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc > 1)
        nvertices = strtoull(argv[1], NULL, 10);
    if (argc > 2)
        nedges = strtoull(argv[2], NULL, 10);
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, NULL);
    int rank = cr_comm_rank(comm), size = cr_comm_size(comm);
    if (nvertices < (uint64_t)size) {
        if (rank == 0)
            fprintf(stderr, "degree_count: %llu vertices are fewer than the %d ranks\n",
                    (unsigned long long)nvertices, size);
        cr_comm_destroy(comm);
        MPI_Finalize();
        return 2;
    }
    cr_darray_block(nvertices, size, rank, &first, &count); /* the usual block split */
    degree = calloc(count ? count : 1, sizeof *degree);
    if (!degree) {
        fprintf(stderr, "degree_count: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* Set up what the handler uses before registering: it may run inside. */
    int inc = cr_register_type(comm, &(cr_handler_type){.batch = on_increments}, NULL);

    /* Edges are dealt round-robin to the ranks; both ends get one each. */
    for (uint64_t e = (uint64_t)rank; e < nedges; e += (uint64_t)size) {
        uint64_t u, v;
        edge(e, &u, &v);
        cr_async(comm, cr_darray_owner(nvertices, size, u), inc, &u, sizeof u);
        cr_async(comm, cr_darray_owner(nvertices, size, v), inc, &v, sizeof v);
    }
    cr_barrier(comm);

    /* Check: count this rank's degrees from the whole edge list, sequentially. */
    uint64_t *expect = calloc(count ? count : 1, sizeof *expect);
    if (!expect) {
        fprintf(stderr, "degree_count: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (uint64_t e = 0; e < nedges; e++) {
        uint64_t u, v;
        edge(e, &u, &v);
        if (u - first < count)
            expect[u - first]++;
        if (v - first < count)
            expect[v - first]++;
    }
    uint64_t wrong = 0, sum = 0;
    for (uint64_t i = 0; i < count; i++) {
        wrong += degree[i] != expect[i];
        sum += degree[i];
    }
    uint64_t totals[2] = {wrong, sum}, all[2];
    MPI_Allreduce(totals, all, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("degree_count: %llu vertices, %llu edges, degrees sum to %llu (expected %llu), "
               "%llu wrong: %s\n",
               (unsigned long long)nvertices, (unsigned long long)nedges,
               (unsigned long long)all[1], (unsigned long long)(2 * nedges),
               (unsigned long long)all[0], all[0] == 0 && all[1] == 2 * nedges ? "exact" : "WRONG");
    free(expect);
    free(degree);
    cr_comm_destroy(comm);
    MPI_Finalize();
    return all[0] == 0 && all[1] == 2 * nedges ? 0 : 1;
}
