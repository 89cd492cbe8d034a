/* A neighbourhood sum on the distributed array: vertex v of a ring with chords holds
 * x[v] = v; every vertex needs the sum of its neighbours' values. Each rank queues a
 * read of every neighbour of its vertices, and one lock-step step fetches them all,
 * identical reads merged on their way (a vertex read by many is fetched once per
 * rank and hop), then writes the sums into a second array with one more step.
 *
 *   scripts/mpirun.sh -np 4 build/examples/neighbour_sum [VERTICES]
 *
 * Neighbours of v: v - 1, v + 1 and v + n/2 (mod n). The sums are checked exactly. */
#include <courier.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define DEGREE 3

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, NULL);
    int rank = cr_comm_rank(comm), size = cr_comm_size(comm);
    if (n < 2 * (uint64_t)size) {
        if (rank == 0)
            fprintf(stderr, "neighbour_sum: %llu vertices are fewer than 2 per rank (%d ranks)\n",
                    (unsigned long long)n, size);
        cr_comm_destroy(comm);
        MPI_Finalize();
        return 2;
    }
    cr_darray_opts opts;
    cr_darray_opts_init(&opts); /* direct route, hash aggregation */
    cr_darray *x = cr_darray_create(comm, n, sizeof(uint64_t), &opts);
    cr_darray *sum = cr_darray_create(comm, n, sizeof(uint64_t), &opts);

    uint64_t first, count;
    uint64_t *mine = cr_darray_local(x, &first, &count);
    for (uint64_t i = 0; i < count; i++)
        mine[i] = first + i;

    /* Lock-step: queue every neighbour's read, then one step answers them all. */
    uint64_t *got = malloc((count ? count : 1) * DEGREE * sizeof *got);
    if (!got) {
        fprintf(stderr, "neighbour_sum: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (uint64_t i = 0; i < count; i++) {
        uint64_t v = first + i;
        uint64_t nb[DEGREE] = {(v + n - 1) % n, (v + 1) % n, (v + n / 2) % n};
        for (int d = 0; d < DEGREE; d++)
            cr_darray_read(x, nb[d], &got[i * DEGREE + d]);
    }
    cr_darray_step(x);

    /* Write each sum to the vertex's slot in the second array (its own rank's, here;
     * any index works) and check it. */
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t v = first + i, s = 0;
        for (int d = 0; d < DEGREE; d++)
            s += got[i * DEGREE + d];
        uint64_t expect = (v + n - 1) % n + (v + 1) % n + (v + n / 2) % n;
        wrong += s != expect;
        cr_darray_write(sum, v, &s);
    }
    cr_darray_step(sum);
    uint64_t total = 0;
    uint64_t *sums = cr_darray_local(sum, &first, &count);
    for (uint64_t i = 0; i < count; i++)
        total += sums[i];

    cr_darray_stats st;
    cr_darray_stats_get(x, &st);
    uint64_t local[3] = {wrong, total, st.merged_local + st.merged_hops}, all[3];
    MPI_Allreduce(local, all, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    /* Every value is counted DEGREE times: the sum of all sums is 3 * n (n - 1) / 2. */
    uint64_t expect_total = DEGREE * (n * (n - 1) / 2);
    int ok = all[0] == 0 && all[1] == expect_total;
    if (rank == 0)
        printf("neighbour_sum: %llu vertices, %llu reads merged, sums total %llu (expected "
               "%llu), %llu wrong: %s\n",
               (unsigned long long)n, (unsigned long long)all[2], (unsigned long long)all[1],
               (unsigned long long)expect_total, (unsigned long long)all[0], ok ? "exact" : "WRONG");
    free(got);
    cr_darray_destroy(sum);
    cr_darray_destroy(x);
    cr_comm_destroy(comm);
    MPI_Finalize();
    return ok ? 0 : 1;
}
