/* cmocka under mpirun. Checks never return early: each rank counts its failures
 * (CHECK), and verdict() sums them over all ranks, so every rank fails the same
 * test and no rank is left behind in a collective. */
#ifndef COURIER_TESTS_HARNESS_H
#define COURIER_TESTS_HARNESS_H

#include <mpi.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

extern int test_rank, test_size;
extern long test_errors;

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            if (test_errors++ < 8) {                                                     \
                fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", test_rank,         \
                        __FILE__, __LINE__, #cond);                                      \
                fprintf(stderr, __VA_ARGS__);                                            \
                fputc('\n', stderr);                                                     \
            }                                                                            \
        }                                                                                \
    } while (0)

/* Fail the current test on every rank if any rank recorded a failure. */
void verdict(void);

/* Sum of v over all ranks. */
uint64_t sum_all(uint64_t v);

struct cr_comm;
/* Conservation: over all ranks, the records created with cr_async equal the records
 * handled plus those merged into others (combining handlers), and the records
 * created equal `expect` (pass UINT64_MAX to skip that comparison).
 * Collective; call it after a cr_barrier. */
void check_conserved(struct cr_comm *comm, uint64_t expect);

/* The defaults with `route` (a cr_route_parse text; a bad one ends the test with
 * status 2), virtual nodes of 2 ranks and, when not 0, `buffer_bytes`. Local. */
struct cr_config;
void config_on_route(struct cr_config *cfg, const char *route, size_t buffer_bytes);

/* MPI_Init, run the group (output from rank 0 only), MPI_Finalize. */
int run_mpi_tests(int argc, char **argv, const struct CMUnitTest *tests, size_t n,
                  const char *group);

#define RUN_MPI_TESTS(argc, argv, tests)                                                 \
    run_mpi_tests(argc, argv, tests, sizeof(tests) / sizeof((tests)[0]), __FILE__)

#endif
