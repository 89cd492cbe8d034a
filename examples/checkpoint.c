/* Checkpoint and restart: a distributed array saved by one job and loaded by the
 * next, at another rank count (docs/io.md). Element i keeps its index: the loading
 * ranks read their own blocks straight from the save.
 *
 *   scripts/mpirun.sh -np 4 build/examples/checkpoint save ckpt
 *   scripts/mpirun.sh -np 3 build/examples/checkpoint load ckpt
 *
 * save fills an array of 1M elements (element i is i * i mod 1000003) and writes it
 * to the directory, replacing a save there; load reads it into a new array and
 * checks every element. */
#include <courier.h>

#include <stdio.h>
#include <string.h>

#define N 1000000u

static uint64_t value_of(uint64_t i)
{
    return i * i % 1000003u;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 3 || (strcmp(argv[1], "save") && strcmp(argv[1], "load"))) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np P checkpoint save|load DIRECTORY\n");
        MPI_Finalize();
        return 2;
    }
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, NULL);
    cr_darray *a = cr_darray_create(comm, N, sizeof(uint64_t), NULL);
    uint64_t first, count, wrong = 0;
    uint64_t *mine = cr_darray_local(a, &first, &count);
    char err[256];
    int rc;
    if (!strcmp(argv[1], "save")) {
        for (uint64_t k = 0; k < count; k++)
            mine[k] = value_of(first + k);
        /* collective; a checkpoint must outlive a crash of the machine: synced */
        rc = cr_darray_save(a, argv[2], CR_SAVE_OVERWRITE | CR_SAVE_SYNC, err, sizeof err);
    } else {
        rc = cr_darray_load(a, argv[2], err, sizeof err); /* any rank count */
        for (uint64_t k = 0; rc == 0 && k < count; k++)
            wrong += mine[k] != value_of(first + k);
    }
    uint64_t all;
    MPI_Allreduce(&wrong, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (rc)
            fprintf(stderr, "checkpoint: %s\n", err); /* the same line on every rank */
        else
            printf("checkpoint: %s %u elements, %llu wrong\n",
                   argv[1][0] == 's' ? "saved" : "loaded", N, (unsigned long long)all);
    }
    cr_darray_destroy(a);
    cr_comm_destroy(comm);
    MPI_Finalize();
    return rc || all ? 1 : 0;
}
