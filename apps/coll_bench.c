/* coll_bench: OSU-style latency of Courier's collectives next to the MPI library's,
 * for every algorithm, in one run. */
#include "cli.h"

#include <courier.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: mpirun -np P coll_bench [options]\n"
    "\n"
    "Median latency (slowest rank, a barrier before every call) of allreduce and\n"
    "allgather, for each Courier algorithm and for MPI_Allreduce / MPI_Allgather.\n"
    "Before every call, of Courier's and of MPI's, the output is filled with a poison\n"
    "byte; after it, the output is compared with the result computed locally from every\n"
    "rank's input, so an algorithm that writes nothing, or part, is caught.\n"
    "\n"
    "  --collective C    allreduce, allgather or both (default both)\n"
    "  --counts LIST     allreduce sizes in doubles; 0 stands for one int32\n"
    "                    (default 0,255: the paper's 1 int and 255 doubles)\n"
    "  --sizes LIST      allgather bytes per rank (default 8,64,512,4K,32K,256K,1M)\n"
    "  --reps R          timed calls per point after 3 warm-ups (default 100)\n"
    "  --self-test       add an algorithm that does nothing: the check must catch it and\n"
    "                    the run must fail (the test suite's proof that the check works)\n";

enum { BOTH, ALLREDUCE, ALLGATHER };
static const char *const collectives[] = {"both", "allreduce", "allgather", NULL};

enum { NOTHING = -2, POISON = 0xA5 };

typedef struct algo {
    const char *name;
    int id, ports; /* id -1: the MPI library; NOTHING: writes nothing (--self-test) */
} algo;

static const algo reduce_algos[] = {
    {"mpi", -1, 0},      {"binomial", CR_ALLREDUCE_BINOMIAL, 0},
    {"butterfly", CR_ALLREDUCE_BUTTERFLY, 0}, {"dissem", CR_ALLREDUCE_DISSEMINATION, 0},
    {"bruck1", CR_ALLREDUCE_BRUCK, 1},         {"bruck2", CR_ALLREDUCE_BRUCK, 2},
    {"shared", CR_ALLREDUCE_SHARED, 0},        {"auto", CR_ALLREDUCE_AUTO, 0},
    {"nothing", NOTHING, 0},
};
static const algo gather_algos[] = {
    {"mpi", -1, 0},  {"ring", CR_ALLGATHER_RING, 0},   {"neighbor", CR_ALLGATHER_NEIGHBOR, 0},
    {"recdbl", CR_ALLGATHER_RECDOUBLING, 0}, {"bruck", CR_ALLGATHER_BRUCK, 0},
    {"sparbit", CR_ALLGATHER_SPARBIT, 0},     {"shared", CR_ALLGATHER_SHARED, 0},
    {"auto", CR_ALLGATHER_AUTO, 0},
    {"nothing", NOTHING, 0},
};
#define NALGO 8 /* the "nothing" after them runs only under --self-test */

typedef struct bench {
    app *a;
    cr_comm *comm;
    int reps;
    bool self_test;
    double *times;
    FILE *csv;
} bench;

static double median_of(bench *b, double *t)
{
    return app_median(t, b->reps) * 1e6;
}

static void header(const bench *b, const char *what, const algo *algos)
{
    if (b->a->rank != 0)
        return;
    printf("\n%s on %d ranks: median microseconds per call\n\n| bytes |", what, b->a->size);
    for (int i = 0; i < NALGO; i++)
        printf(" %s |", algos[i].name);
    printf(" best courier | best / mpi |\n|---|");
    for (int i = 0; i < NALGO + 2; i++)
        printf("---|");
    printf("\n");
}

/* One row: the MPI library and every algorithm at one size; the best of Courier's
 * forced algorithms is compared with MPI. */
static void row(bench *b, const char *what, size_t bytes, const double *us,
                const char *const *actual)
{
    int best = 1;
    for (int i = 2; i < NALGO - 1; i++)
        if (us[i] < us[best])
            best = i;
    if (b->a->rank == 0) {
        printf("| %zu |", bytes);
        for (int i = 0; i < NALGO; i++)
            printf(" %.2f |", us[i]);
        printf(" %s | %.2f |\n", actual[best], us[best] / us[0]);
        fflush(stdout);
    }
    for (int i = 0; b->csv && i < NALGO; i++)
        fprintf(b->csv, "%d,%s,%zu,%s,%.3f\n", b->a->size, what, bytes, actual[i], us[i]);
}

/* One size of one collective: the buffers, MPI's result, and how to start each. */
typedef struct point {
    const char *what; /* "allreduce" or "allgather" */
    const algo *algos;
    char *in, *out, *want;
    size_t bytes;     /* reported size: the vector, or one rank's block */
    size_t out_bytes; /* compared with MPI's result */
    size_t count;     /* allreduce elements */
    cr_dtype type;
    void (*mpi)(const struct point *pt);
    cr_request *(*start)(bench *b, const struct point *pt, const cr_coll_opts *o);
} point;

/* One call of algorithm al, untimed parts outside: the output poisoned before, the
 * result compared after with the one computed locally (every rank agrees on the
 * verdict, so a wrong result ends the job with one line). Returns the slowest rank's
 * seconds. */
static double one_call(bench *b, const point *pt, const algo *al, char *name, size_t namelen,
                       int rep)
{
    memset(pt->out, POISON, pt->out_bytes);
    cr_coll_opts o = {.algorithm = al->id, .ports = al->ports};
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (al->id == -1) {
        pt->mpi(pt);
    } else if (al->id != NOTHING) {
        cr_request *q = pt->start(b, pt, &o);
        snprintf(name, namelen, "%s", cr_request_algorithm(q));
        cr_request_wait(&q);
    }
    double dt = app_max_time(MPI_Wtime() - t0);
    int wrong = memcmp(pt->out, pt->want, pt->out_bytes) != 0, any;
    MPI_Allreduce(&wrong, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any)
        app_error(b->a, "%s %s of %zu bytes: a wrong result in call %d (after %d warm-ups)",
                 pt->what, name, pt->bytes, rep + 4, 3);
    return dt;
}

/* Time every algorithm at one point (3 warm-ups, then b->reps calls with a barrier
 * before each, slowest rank), check every call's result, print the row. */
static void measure(bench *b, const point *pt)
{
    double us[NALGO];
    char names[NALGO + 1][32];
    const char *actual[NALGO];
    for (int k = 0; k < NALGO + b->self_test; k++) {
        const algo *al = &pt->algos[k];
        snprintf(names[k], sizeof names[k], "%s", al->name);
        for (int rep = -3; rep < b->reps; rep++) {
            double dt = one_call(b, pt, al, names[k], sizeof names[k], rep);
            if (rep >= 0)
                b->times[rep] = dt;
        }
        if (k < NALGO) {
            us[k] = median_of(b, b->times);
            actual[k] = names[k];
        }
    }
    row(b, pt->what, pt->bytes, us, actual);
}

static void mpi_allreduce(const point *pt)
{
    MPI_Allreduce(pt->in, pt->out, (int)pt->count, pt->type == CR_INT32 ? MPI_INT32_T : MPI_DOUBLE,
                  MPI_SUM, MPI_COMM_WORLD);
}

static cr_request *start_allreduce(bench *b, const point *pt, const cr_coll_opts *o)
{
    return cr_iallreduce(b->comm, pt->in, pt->out, pt->count, pt->type, CR_OP_SUM, o);
}

static void mpi_allgather(const point *pt)
{
    MPI_Allgather(pt->in, (int)pt->bytes, MPI_BYTE, pt->out, (int)pt->bytes, MPI_BYTE,
                  MPI_COMM_WORLD);
}

static cr_request *start_allgather(bench *b, const point *pt, const cr_coll_opts *o)
{
    return cr_iallgather(b->comm, pt->in, pt->bytes, pt->out, o);
}

static void bench_allreduce(bench *b, size_t count, cr_dtype type)
{
    size_t bytes = count * (type == CR_INT32 ? 4 : 8);
    point pt = {.what = "allreduce", .algos = reduce_algos, .bytes = bytes, .out_bytes = bytes,
                .count = count, .type = type, .mpi = mpi_allreduce, .start = start_allreduce,
                .in = app_calloc(b->a, bytes, 1, "the input"),
                .out = app_calloc(b->a, bytes, 1, "the output"),
                .want = app_calloc(b->a, bytes, 1, "the expected result")};
    int p = b->a->size;
    for (size_t i = 0; i < count; i++) { /* the sum over ranks, computed here: exact */
        if (type == CR_INT32) {
            ((int32_t *)pt.in)[i] = b->a->rank * 3 + (int32_t)i;
            ((int32_t *)pt.want)[i] = 3 * (p * (p - 1) / 2) + p * (int32_t)i;
        } else {
            ((double *)pt.in)[i] = b->a->rank + (double)i / 4; /* exact in binary: any order */
            ((double *)pt.want)[i] = (double)p * (p - 1) / 2 + p * ((double)i / 4);
        }
    }
    measure(b, &pt);
    free(pt.in);
    free(pt.out);
    free(pt.want);
}

static void bench_allgather(bench *b, size_t bytes)
{
    size_t total = bytes * (size_t)b->a->size;
    point pt = {.what = "allgather", .algos = gather_algos, .bytes = bytes, .out_bytes = total,
                .mpi = mpi_allgather, .start = start_allgather,
                .in = app_calloc(b->a, bytes + 1, 1, "the input"),
                .out = app_calloc(b->a, total + 1, 1, "the output"),
                .want = app_calloc(b->a, total + 1, 1, "the expected result")};
    for (size_t i = 0; i < bytes; i++)
        pt.in[i] = (char)(b->a->rank * 31 + (int)i);
    for (int r = 0; r < b->a->size; r++) /* every rank's block, computed here */
        for (size_t i = 0; i < bytes; i++)
            pt.want[(size_t)r * bytes + i] = (char)(r * 31 + (int)i);
    measure(b, &pt);
    free(pt.in);
    free(pt.out);
    free(pt.want);
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "coll_bench", usage, &argc, &argv);
    int which = BOTH;
    uint64_t reps = 100, counts[32] = {0, 255}, sizes[32] = {8, 64, 512, 4096, 32768, 262144, 1 << 20};
    int ncounts = 2, nsizes = 7;
    const char *csv = NULL;
    app_shared sh; /* the common flags */
    app_shared_init(&sh);
    static const struct option opts[] = {
        {"collective", required_argument, 0, 'C'}, {"counts", required_argument, 0, 'n'},
        {"sizes", required_argument, 0, 'b'},      {"reps", required_argument, 0, 'r'},
        {"self-test", no_argument, 0, 'S'},        APP_LONG_COMMON, {0, 0, 0, 0}};
    bool self_test = false;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'C': which = app_parse_choice(&a, "--collective", optarg, collectives); break;
        case 'n': ncounts = app_parse_list(&a, "--counts", optarg, 0, 1u << 24, counts, 32); break;
        case 'b': nsizes = app_parse_list(&a, "--sizes", optarg, 0, 1u << 26, sizes, 32); break;
        case 'r': reps = app_parse_u64(&a, "--reps", optarg, 1, 100000); break;
        case 'S': self_test = true; break;
        default: app_other_option(&a, ch, optarg, &sh, argv);
        }
    }
    app_no_operands(&a, argc, argv);
    csv = sh.csv;

    bench b = {.a = &a, .reps = (int)reps, .self_test = self_test, .times = app_calloc(&a, reps, sizeof(double), "the timings")};
    b.csv = app_open_csv(&a, csv, "ranks,collective,bytes,algorithm,median_us");
    b.comm = app_comm_create(&a, &(app_comm_flags){.stats = sh.stats}, NULL);
    if (which != ALLGATHER) {
        header(&b, "allreduce (sum)", reduce_algos);
        for (int i = 0; i < ncounts; i++)
            bench_allreduce(&b, counts[i] ? counts[i] : 1, counts[i] ? CR_DOUBLE : CR_INT32);
    }
    if (which != ALLREDUCE) {
        header(&b, "allgather", gather_algos);
        for (int i = 0; i < nsizes; i++)
            bench_allgather(&b, sizes[i]);
    }
    if (b.csv)
        fclose(b.csv);
    free(b.times);
    app_comm_destroy(b.comm);
    MPI_Finalize();
    return 0;
}
