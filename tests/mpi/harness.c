#include "harness.h"

#include <courier.h>

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

void check_conserved(cr_comm *comm, uint64_t expect)
{
    cr_stats st;
    cr_stats_get(comm, &st);
    /* a record merged into another (combining handlers) is applied, but not handled
     * as a record of its own */
    uint64_t sent = sum_all(st.msgs_sent),
             handled = sum_all(st.msgs_handled + st.merged_at_source + st.merged_at_hops);
    uint64_t bsent = sum_all(st.bytes_sent), bhandled = sum_all(st.bytes_handled + st.merged_bytes);
    uint64_t msent = sum_all(st.mpi_sends), mrecv = sum_all(st.mpi_recvs);
    CHECK(sent == handled, "records sent %llu, handled %llu", (unsigned long long)sent,
          (unsigned long long)handled);
    CHECK(bsent == bhandled, "payload bytes sent %llu, handled %llu", (unsigned long long)bsent,
          (unsigned long long)bhandled);
    CHECK(msent == mrecv, "MPI sends %llu, receives %llu", (unsigned long long)msent,
          (unsigned long long)mrecv);
    CHECK(expect == UINT64_MAX || sent == expect, "records sent %llu, expected %llu",
          (unsigned long long)sent, (unsigned long long)expect);
}

int run_mpi_tests(int argc, char **argv, const struct CMUnitTest *tests, size_t n,
                  const char *group)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &test_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &test_size);
    if (test_rank != 0)
        cmocka_set_message_output(CM_OUTPUT_STDOUT), (void)freopen("/dev/null", "w", stdout);
    /* A rank that crashes, or fails a check of its own, must end the job: cmocka would
     * catch the signal and go on to the next test while the other ranks wait in this
     * one, until the test's timeout. A failure then ends the program at once (the
     * other tests do not run); CMOCKA_TEST_ABORT=0 in the environment runs them all. */
    setenv("CMOCKA_TEST_ABORT", "1", 0);
    int failed = _cmocka_run_group_tests(group, tests, n, NULL, NULL);
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any ? 1 : 0;
}

void config_on_route(cr_config *cfg, const char *route, size_t buffer_bytes)
{
    cr_config_init(cfg);
    char err[200];
    if (cr_route_parse(route, &cfg->route, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        exit(2);
    }
    cfg->node_size = 2;
    if (buffer_bytes)
        cfg->buffer_bytes = buffer_bytes;
}
