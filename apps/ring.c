/* ring: latency of one message hop. A token travels around the ring of ranks, each
 * hop sent from the handler of the previous one; the time per hop is the runtime's
 * end-to-end latency (buffering, flush, MPI, polling, dispatch). */
#include "cli.h"

#include <courier.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: mpirun -np P ring [--laps L] [--tokens T] [--payload B] [--csv FILE]\n"
    "\n"
    "Tokens travel around the ring of ranks L times; every hop is sent from the handler\n"
    "of the previous hop. Prints microseconds per hop. Unless COURIER_BUFFER_SIZE is\n"
    "set, the buffer is 1 byte, so every hop is its own MPI message.\n"
    "\n"
    "  --laps L      laps around the ring (default 2000)\n"
    "  --tokens T    tokens in flight at once, started by rank 0 (default 1)\n"
    "  --payload B   payload bytes per hop, at least 4 (default 8)\n"
    "\n"
    "The hop count is always checked: every token must make L laps.\n";

typedef struct ring {
    int h;
    uint64_t hops;
    char *buf;
    size_t payload;
} ring;

static void on_token(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    (void)src;
    ring *r = user;
    int32_t left;
    memcpy(&left, p, sizeof left);
    r->hops++;
    if (left-- == 0)
        return;
    memcpy(r->buf, p, len);
    memcpy(r->buf, &left, sizeof left);
    cr_async(comm, (cr_comm_rank(comm) + 1) % cr_comm_size(comm), r->h, r->buf, len);
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "ring", usage, &argc, &argv);
    uint64_t laps = 2000, tokens = 1, payload = 8;
    const char *csv = NULL;
    app_shared sh; /* the common flags */
    app_shared_init(&sh);
    static const struct option opts[] = {{"laps", required_argument, 0, 'l'},
                                         {"tokens", required_argument, 0, 't'},
                                         {"payload", required_argument, 0, 'p'},
                                         APP_LONG_COMMON,
                                         {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'l': laps = app_parse_u64(&a, "--laps", optarg, 1, 1u << 24); break;
        case 't': tokens = app_parse_u64(&a, "--tokens", optarg, 1, 1u << 16); break;
        case 'p': payload = app_parse_u64(&a, "--payload", optarg, 4, 1u << 24); break;
        default: app_other_option(&a, ch, optarg, &sh, argv);
        }
    }
    app_no_operands(&a, argc, argv);
    csv = sh.csv;
    uint64_t hops_per_token = laps * (uint64_t)a.size;
    if (hops_per_token > INT32_MAX)
        app_usage_error(&a, "--laps %llu times %d ranks is too many hops",
                        (unsigned long long)laps, a.size);

    cr_config cfg;
    cr_config_init(&cfg);
    cfg.buffer_bytes = 1; /* every hop its own message, unless COURIER_BUFFER_SIZE says */
    char err[512];
    if (cr_config_from_env(&cfg, err, sizeof err))
        app_usage_error(&a, "%s", err);
    cfg.print_stats |= sh.stats;
    FILE *f = app_open_csv(&a, csv, "ranks,tokens,hops,payload,buffer_bytes,recv,us_per_hop,ok");
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, &cfg);
    ring r = {.buf = app_calloc(&a, 1, payload, "the payload"), .payload = payload};
    /* The handler forwards tokens from r.buf; the launch loop has a buffer of its own. */
    char *launch = app_calloc(&a, 1, payload, "the payload");
    r.h = cr_register(comm, on_token, &r);

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (a.rank == 0)
        for (uint64_t t = 0; t < tokens; t++) {
            int32_t left = (int32_t)(hops_per_token - 1);
            memcpy(launch, &left, sizeof left);
            cr_async(comm, 1 % a.size, r.h, launch, payload);
        }
    cr_barrier(comm);
    double sec = app_max_time(MPI_Wtime() - t0);

    uint64_t hops = 0;
    MPI_Allreduce(&r.hops, &hops, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    int ok = hops == hops_per_token * tokens;
    double us = sec / (double)hops_per_token * 1e6;
    if (a.rank == 0) {
        printf("ring: %d ranks, %llu token(s), %llu hops each, %llu-byte payload, buffer %zu B, "
               "receive by %s: %.2f us per hop, %s\n",
               a.size, (unsigned long long)tokens, (unsigned long long)hops_per_token,
               (unsigned long long)payload, cfg.buffer_bytes,
               cfg.recv_mode == CR_RECV_PREPOST ? "prepost" : "probe", us,
               ok ? "all hops counted" : "HOP COUNT WRONG");
        if (f) {
            fprintf(f, "%d,%llu,%llu,%llu,%zu,%s,%.3f,%d\n", a.size, (unsigned long long)tokens,
                    (unsigned long long)hops_per_token, (unsigned long long)payload,
                    cfg.buffer_bytes, cfg.recv_mode == CR_RECV_PREPOST ? "prepost" : "probe", us,
                    ok);
            fclose(f);
        }
    }
    cr_comm_destroy(comm);
    free(r.buf);
    free(launch);
    MPI_Finalize();
    return ok ? 0 : 1;
}
