/* What COURIER_ROUTE=auto with COURIER_BUFFER_SIZE=auto must run after each epoch
 * (docs/tuning.md, "The second choice"), worked out from the model's public functions:
 * shared by the simulated test (tests/sim/test_sim.c) and the MPI one
 * (tests/mpi/test_mailbox.c), which compare it with what every rank runs. */
#ifndef COURIER_TESTS_TUNE_EXPECT_H
#define COURIER_TESTS_TUNE_EXPECT_H

#include <courier.h>
#include <courier/tune.h>

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

/* The configuration after each of `n` epochs in which every rank sent
 * records_per_dest[e] records of `record_bytes` bytes to every other rank (records
 * that do not merge: no keys, one phase), for a comm
 * on `l` that chose at creation for 4096 records of 16 bytes per rank; the buffers no
 * larger than `most`, all of a rank's held to `cap`. After each epoch the comm weighs
 * the last CR_TUNE_WINDOW epochs together. Returns the moves, or -1 when the model
 * predicts nothing. (The program's own time is taken as 0: the simulation has none,
 * and the MPI test's costs make the predictions seconds long.) */
static int tune_expect_epochs(const cr_layout *l, size_t most, size_t cap,
                              const cr_tune_costs *c, const double *records_per_dest,
                              size_t record_bytes, int n, cr_route *route, size_t *buffer)
{
    int p = cr_layout_ranks(l), moves = 0, count = 0, nwindow = 0;
    cr_tune_prediction table[5 * CR_TUNE_NBUFFERS];
    cr_tune_traffic window[CR_TUNE_WINDOW];
    cr_tune_traffic t = {.records_per_dest = p > 1 ? 4096.0 / (p - 1) : 0, .record_bytes = 16};
    int best = cr_tune_choose(l, NULL, 0, cap, &t, c, table, &count);
    if (best < 0 || table[best].buffer_bytes > most)
        return -1;
    cr_route now = table[best].route;
    size_t now_buffer = table[best].buffer_bytes;
    double alpha = cr_layout_nodes(l) > 1 ? c->alpha_off : c->alpha_on;
    double move = 2 * alpha * ceil(log2((double)p));
    for (int e = 0; e < n && p == 1; e++) /* one rank learns nothing from its epochs */
        route[e] = now, buffer[e] = now_buffer;
    for (int e = 0; e < n && p > 1; e++) {
        if (nwindow == CR_TUNE_WINDOW) {
            for (int k = 1; k < CR_TUNE_WINDOW; k++)
                window[k - 1] = window[k];
            nwindow--;
        }
        window[nwindow++] = (cr_tune_traffic){.records_per_dest = records_per_dest[e],
                                              .record_bytes = record_bytes};
        best = cr_tune_choose_over(l, NULL, 0, cap, window, nwindow, c, table, &count);
        if (best < 0 || table[best].buffer_bytes > most)
            return -1;
        double current = -1;
        for (int i = 0; i < count; i++)
            if (table[i].route.kind == now.kind && table[i].buffer_bytes == now_buffer)
                current = table[i].seconds;
        if (current < 0)
            return -1;
        bool other_route = table[best].route.kind != now.kind;
        if (cr_tune_worth_switching(current, table[best].seconds, other_route ? move : 0)) {
            now = table[best].route;
            now_buffer = table[best].buffer_bytes;
            moves++;
        }
        route[e] = now;
        buffer[e] = now_buffer;
    }
    return moves;
}

#endif
