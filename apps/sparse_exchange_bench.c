/* sparse_exchange_bench: time per cr_nbx_exchange for NBX, PEX and PCX, the
 * microbenchmark of Hoefler et al. (PPoPP 2010): every rank sends one message to k
 * random other ranks. All protocols run the same patterns in one job. */
#include "cli.h"
#include <courier/rng.h>

#include <courier.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: mpirun -np P sparse_exchange_bench [options]\n"
    "\n"
    "Every rank sends one message of B bytes to each of k random other ranks (the same\n"
    "neighbours for every protocol) and receives whatever is addressed to it, with\n"
    "cr_nbx_exchange under NBX, PEX and PCX. Prints the median time per exchange\n"
    "(slowest rank) for every k and B; every exchange's result is verified.\n"
    "\n"
    "  --neighbours LIST  values of k (default 1,2,4,6,P-1, those below P)\n"
    "  --sizes LIST       message sizes in bytes (default 8,64,512,4K,64K)\n"
    "  --reps R           timed exchanges per point, after one warm-up (default 50)\n"
    "  --seed S           random seed for the neighbours (default 1)\n";

static const cr_nbx_protocol protocols[] = {CR_NBX_PROTOCOL_NBX, CR_NBX_PROTOCOL_PEX, CR_NBX_PROTOCOL_PCX};
#define NPROT 3
#define MAX_LIST 32

/* k distinct random ranks other than me (a partial Fisher-Yates shuffle). */
static void pick_neighbours(const app *a, int k, uint64_t seed, int *out)
{
    int me = a->rank, size = a->size;
    int *others = app_calloc(a, (size_t)size, sizeof *others, "the rank list");
    int n = 0;
    for (int r = 0; r < size; r++)
        if (r != me)
            others[n++] = r;
    uint64_t s = cr_rng_hash64(seed * 0x9e3779b97f4a7c15ULL + (uint64_t)me);
    for (int i = 0; i < k; i++) {
        int j = i + (int)cr_rng_bounded(cr_rng_next(&s), (uint64_t)(n - i));
        int t = others[i];
        others[i] = others[j];
        others[j] = t;
        out[i] = others[i];
    }
    free(others);
}

static uint64_t tag_of(int src, int dest, size_t size)
{
    return cr_rng_hash64(((uint64_t)src << 32) ^ (uint64_t)dest ^ ((uint64_t)size << 48));
}

/* Every message must arrive once with its own tag: sums over the job must match. */
static int verify(const app *a, const cr_nbx_result *r, int k, size_t size, const int *dests)
{
    uint64_t local[4] = {0, 0, 0, 0}, global[4];
    for (int i = 0; i < k; i++)
        local[0] += tag_of(a->rank, dests[i], size);
    local[2] = (uint64_t)k;
    for (size_t i = 0; i < r->count; i++) {
        uint64_t t = tag_of(r->sources[i], a->rank, size), got = t;
        if (r->sizes[i] >= sizeof got)
            memcpy(&got, r->data[i], sizeof got);
        local[1] += r->sizes[i] == size && got == t ? t : 0;
    }
    local[3] = r->count;
    MPI_Allreduce(local, global, 4, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return global[0] == global[1] && global[2] == global[3];
}

/* One point of the table: k messages of `size` bytes to dests. */
typedef struct point {
    int k;
    size_t size;
    const int *dests;
    const void **bufs;
    const size_t *sizes;
    uint64_t reps;
    double *times; /* reps entries, scratch */
} point;

/* One protocol at one point: an exchange verified, then reps timed; the median in
 * microseconds into *median, the CSV line. Returns whether it verified. */
static int time_protocol(const app *a, cr_comm *comm, cr_nbx_protocol protocol,
                         const point *pt, FILE *out, double *median)
{
    cr_nbx_result r;
    cr_nbx_exchange_with(comm, protocol, (size_t)pt->k, pt->dests, pt->bufs, pt->sizes, &r);
    int ok = verify(a, &r, pt->k, pt->size, pt->dests);
    cr_nbx_result_free(&r);
    for (uint64_t rep = 0; rep < pt->reps; rep++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        cr_nbx_exchange_with(comm, protocol, (size_t)pt->k, pt->dests, pt->bufs, pt->sizes, &r);
        pt->times[rep] = app_max_time(MPI_Wtime() - t0);
        cr_nbx_result_free(&r);
    }
    *median = app_median(pt->times, (int)pt->reps) * 1e6;
    double min = pt->times[0] * 1e6; /* sorted by app_median */
    if (out)
        fprintf(out, "%d,%d,%zu,%s,%.2f,%.2f,%llu,%d\n", a->size, pt->k, pt->size,
                cr_nbx_protocol_name(protocol), *median, min, (unsigned long long)pt->reps, ok);
    if (!ok && a->rank == 0)
        fprintf(stderr, "sparse_exchange_bench: %s, k=%d, %zu bytes: VERIFICATION FAILED\n",
                cr_nbx_protocol_name(protocol), pt->k, pt->size);
    return ok;
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "sparse_exchange_bench", usage, &argc, &argv);
    uint64_t ks[MAX_LIST], sizes[MAX_LIST] = {8, 64, 512, 4096, 65536}, seed = 1, reps = 50;
    int nk = 0, nsizes = 5;
    const char *csv = NULL;
    app_shared sh; /* --seed and the common flags */
    app_shared_init(&sh);
    static const struct option opts[] = {
        {"neighbours", required_argument, 0, 'k'}, {"sizes", required_argument, 0, 'b'},
        {"reps", required_argument, 0, 'r'},       APP_LONG_SEED, APP_LONG_COMMON,
        {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'k': nk = app_parse_list(&a, "--neighbours", optarg, 0, 1u << 20, ks, MAX_LIST); break;
        case 'b': nsizes = app_parse_list(&a, "--sizes", optarg, 0, 1u << 30, sizes, MAX_LIST); break;
        case 'r': reps = app_parse_u64(&a, "--reps", optarg, 1, 100000); break;
        default: app_other_option(&a, ch, optarg, &sh, argv);
        }
    }
    app_no_operands(&a, argc, argv);
    csv = sh.csv;
    seed = sh.seed;
    if (nk == 0) {
        const uint64_t wanted[] = {1, 2, 4, 6, (uint64_t)a.size - 1};
        for (int i = 0; i < 5; i++)
            if (wanted[i] < (uint64_t)a.size && (nk == 0 || wanted[i] > ks[nk - 1]))
                ks[nk++] = wanted[i];
        if (nk == 0)
            ks[nk++] = 0; /* one rank: nobody to send to */
    }
    for (int i = 0; i < nk; i++)
        if (ks[i] >= (uint64_t)a.size)
            app_usage_error(&a, "--neighbours %llu is more than the %d other ranks",
                            (unsigned long long)ks[i], a.size - 1);

    FILE *out = app_open_csv(&a, csv, "ranks,neighbours,bytes,protocol,median_us,min_us,reps,verified");
    cr_comm *comm = app_comm_create(&a, &(app_comm_flags){.stats = sh.stats}, NULL);
    if (a.rank == 0)
        printf("sparse_exchange_bench: %d ranks, %llu timed exchanges per point; median time per "
               "exchange in microseconds (slowest rank)\n\n"
               "| k | bytes | nbx | pex | pcx | best |\n|---|---|---|---|---|---|\n",
               a.size, (unsigned long long)reps);

    int *dests = app_calloc(&a, (size_t)a.size, sizeof *dests, "the destinations");
    size_t *msg_sizes = app_calloc(&a, (size_t)a.size, sizeof *msg_sizes, "the sizes");
    const void **bufs = app_calloc(&a, (size_t)a.size, sizeof *bufs, "the buffers");
    double *times = app_calloc(&a, reps, sizeof *times, "the timings");
    int all_ok = 1;
    for (int ki = 0; ki < nk; ki++) {
        int k = (int)ks[ki];
        pick_neighbours(&a, k, seed + (uint64_t)ki, dests);
        for (int si = 0; si < nsizes; si++) {
            size_t size = (size_t)sizes[si];
            char *payload = app_calloc(&a, (size_t)k, size, "the payloads");
            for (int i = 0; i < k; i++) {
                uint64_t t = tag_of(a.rank, dests[i], size);
                bufs[i] = payload + (size_t)i * size;
                msg_sizes[i] = size;
                if (size >= sizeof t)
                    memcpy(payload + (size_t)i * size, &t, sizeof t);
            }
            double median[NPROT];
            for (int p = 0; p < NPROT; p++) {
                point pt = {.k = k, .size = size, .dests = dests, .bufs = bufs,
                            .sizes = msg_sizes, .reps = reps, .times = times};
                all_ok &= time_protocol(&a, comm, protocols[p], &pt, out, &median[p]);
            }
            int best = 0;
            for (int p = 1; p < NPROT; p++)
                if (median[p] < median[best])
                    best = p;
            if (a.rank == 0)
                printf("| %d | %zu | %.1f | %.1f | %.1f | %s |\n", k, size, median[0], median[1],
                       median[2], cr_nbx_protocol_name(protocols[best]));
            free(payload);
        }
    }
    if (out)
        fclose(out);
    if (a.rank == 0)
        printf("\n%s\n", all_ok ? "all exchanges verified" : "VERIFICATION FAILED");
    free(dests);
    free(msg_sizes);
    free(bufs);
    free(times);
    app_comm_destroy(comm);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
