/* hello: every rank greets every rank, and every rank checks it heard from each
 * rank exactly once per round. */
#include "cli.h"

#include <courier.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: mpirun -np P hello [--rounds R] [--bcast] [--stall S] [--stats]\n"
    "\n"
    "Every rank sends one greeting to every rank (itself included) per round, then\n"
    "checks that it received exactly one greeting from each rank in each round.\n"
    "\n"
    "  --rounds R   rounds of greetings, each ended by cr_barrier (default 1)\n"
    "  --bcast      greet with cr_async_bcast instead of one cr_async per rank\n"
    "  --stall S    rank 0 computes S seconds before the first barrier while the others\n"
    "               wait in it (shows the idle back-off: time the run's CPU use)\n"
    "\n"
    "The runtime reads COURIER_* environment variables (see docs/configuration.md).\n";

typedef struct greeting {
    int32_t from;
    int32_t round;
} greeting;

typedef struct tally {
    uint64_t *heard; /* heard[round * P + from] */
    int size;
    uint64_t bad;
} tally;

static void on_greeting(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm;
    tally *t = user;
    greeting g;
    if (len != sizeof g) {
        t->bad++;
        return;
    }
    memcpy(&g, payload, sizeof g);
    if (g.from != src || g.from < 0 || g.from >= t->size)
        t->bad++;
    else
        t->heard[(size_t)g.round * (size_t)t->size + (size_t)g.from]++;
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "hello", usage, &argc, &argv);

    int rounds = 1, use_bcast = 0, stall = 0;
    app_shared sh; /* the common flags */
    app_shared_init(&sh);
    static const struct option opts[] = {{"rounds", required_argument, 0, 'r'},
                                         {"bcast", no_argument, 0, 'b'},
                                         {"stall", required_argument, 0, 'w'},
                                         APP_LONG_COMMON, {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'r': rounds = (int)app_parse_u64(&a, "--rounds", optarg, 1, 1000); break;
        case 'b': use_bcast = 1; break;
        case 'w': stall = (int)app_parse_u64(&a, "--stall", optarg, 0, 3600); break;
        default: app_other_option(&a, ch, optarg, &sh, argv);
        }
    }
    app_no_operands(&a, argc, argv);

    tally t = {.heard = app_calloc(&a, (size_t)rounds * (size_t)a.size, sizeof(uint64_t), "the tally"),
               .size = a.size};
    FILE *csv = app_open_csv(&a, sh.csv, "ranks,rounds,bcast,greetings,expected,seconds,ok");
    cr_comm *comm = app_comm_create(&a, NULL, NULL);
    double t0 = MPI_Wtime();
    int h = cr_register(comm, on_greeting, &t);

    for (int r = 0; r < rounds; r++) {
        greeting g = {.from = a.rank, .round = r};
        if (use_bcast)
            cr_async_bcast(comm, h, &g, sizeof g);
        else
            for (int dest = 0; dest < a.size; dest++)
                cr_async(comm, dest, h, &g, sizeof g);
        if (r == 0 && a.rank == 0 && stall) {
            volatile double sink = 0;
            for (double t0 = MPI_Wtime(); MPI_Wtime() - t0 < stall;)
                sink += 1;
        }
        cr_barrier(comm);
    }

    uint64_t wrong = t.bad;
    for (size_t i = 0; i < (size_t)rounds * (size_t)a.size; i++)
        wrong += t.heard[i] != 1;
    uint64_t wrong_total = 0, heard = 0, heard_total = 0;
    for (size_t i = 0; i < (size_t)rounds * (size_t)a.size; i++)
        heard += t.heard[i];
    MPI_Allreduce(&wrong, &wrong_total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&heard, &heard_total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);

    double seconds = app_max_time(MPI_Wtime() - t0);
    if (sh.stats)
        cr_stats_print(comm, stdout);
    app_comm_destroy(comm);
    free(t.heard);

    uint64_t expected = (uint64_t)rounds * (uint64_t)a.size * (uint64_t)a.size;
    int ok = wrong_total == 0 && heard_total == expected;
    if (a.rank == 0)
        printf("hello: %d ranks, %d round(s), %llu greetings delivered (expected %llu): %s\n",
               a.size, rounds, (unsigned long long)heard_total, (unsigned long long)expected,
               ok ? "verified, every rank heard from every rank exactly once per round"
                  : "FAILED");
    if (csv) {
        fprintf(csv, "%d,%d,%d,%llu,%llu,%.6f,%d\n", a.size, rounds, use_bcast,
                (unsigned long long)heard_total, (unsigned long long)expected, seconds, ok);
        fclose(csv);
    }
    MPI_Finalize();
    return ok ? 0 : 1;
}
