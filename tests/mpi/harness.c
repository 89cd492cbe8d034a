#include "harness.h"

#include <stdlib.h>

int test_rank, test_size;
long test_errors;

void verdict(void)
{
    long total = 0;
    MPI_Allreduce(&test_errors, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    test_errors = 0;
    if (total != 0)
        fail_msg("%ld check(s) failed over %d ranks (see stderr)", total, test_size);
}

uint64_t sum_all(uint64_t v)
{
    uint64_t s;
    MPI_Allreduce(&v, &s, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return s;
}

int run_mpi_tests(int argc, char **argv, const struct CMUnitTest *tests, size_t n,
                  const char *group)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &test_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &test_size);
    if (test_rank != 0)
        cmocka_set_message_output(CM_OUTPUT_STDOUT), (void)freopen("/dev/null", "w", stdout);
    int failed = _cmocka_run_group_tests(group, tests, n, NULL, NULL);
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any ? 1 : 0;
}
