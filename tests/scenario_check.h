/* The check of the shared test scenarios (the tests/..._scenarios.h headers, and
 * the simulated collectives): a failed condition is counted in `fails` and printed, the first 8 of
 * them, with the rank, the place and the message; the scenario goes on, so a run
 * reports every kind of failure, and the caller fails on a non-zero count. */
#ifndef COURIER_TESTS_SCENARIO_CHECK_H
#define COURIER_TESTS_SCENARIO_CHECK_H

#include <stdio.h>

#define SCENARIO_CHECK(fails, rank, cond, ...)                                            \
    do {                                                                                  \
        if (!(cond) && (fails)++ < 8) {                                                   \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", (rank), __FILE__,       \
                    __LINE__, #cond);                                                     \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fputc('\n', stderr);                                                          \
        }                                                                                 \
    } while (0)

#endif
