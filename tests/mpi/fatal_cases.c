/* Misuse and corrupt input that must stop the job with a one-line message naming
 * the problem, and diagnostics that must appear in a job that succeeds. Run as:
 * fatal_cases CASE; tests/expect.sh checks the exit status and the message. */
#include "mailbox/mailbox_internal.h"
#include "mailbox/record.h"

#include <courier.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void nop(cr_comm *c, int src, const void *p, size_t len, void *u)
{
    (void)c, (void)src, (void)p, (void)len, (void)u;
}

/* A serve function that forgets to reply, and a reply callback never reached. */
static void serve_silently(cr_comm *c, cr_dedup_req *req, const void *p, size_t len, void *u)
{
    (void)c, (void)req, (void)p, (void)len, (void)u;
}

static void serve_in_runs(cr_comm *c, const void *p, size_t stride, size_t len, size_t n,
                          void *replies, void *u)
{
    (void)c, (void)p, (void)stride, (void)len, (void)u;
    memset(replies, 0, n * sizeof(uint64_t));
}

/* A serve_many that replies as serve would: the request it names is not being served. */
static void serve_in_runs_replying(cr_comm *c, const void *p, size_t stride, size_t len,
                                   size_t n, void *replies, void *u)
{
    (void)p, (void)stride, (void)len, (void)n, (void)replies, (void)u;
    uint64_t v = 0;
    cr_dedup_reply(c, NULL, &v, sizeof v);
}

static void no_reply(cr_comm *c, const void *data, size_t len, void *ctx)
{
    (void)c, (void)data, (void)len, (void)ctx;
}

static void nop_batch(cr_comm *c, const cr_batch *b, void *u)
{
    (void)c, (void)b, (void)u;
}

/* Two handlers that do the same (nothing) but are different functions. */
static void handler_a(cr_comm *c, int src, const void *p, size_t len, void *u)
{
    (void)c, (void)src, (void)p, (void)len, (void)u;
}

static void handler_b(cr_comm *c, int src, const void *p, size_t len, void *u)
{
    (void)c, (void)src, (void)p, (void)len, (void)u;
}

static void exchange_inside(cr_comm *c, int src, const void *p, size_t len, void *u)
{
    (void)src, (void)p, (void)len, (void)u;
    cr_nbx_result r;
    cr_nbx_exchange(c, 0, NULL, NULL, NULL, &r);
}

static void allreduce_inside(cr_comm *c, int src, const void *p, size_t len, void *u)
{
    (void)src, (void)p, (void)len, (void)u;
    int x = 1, y;
    cr_allreduce(c, &x, &y, 1, CR_INT32, CR_OP_SUM, NULL);
}

static void barrier_inside(cr_comm *c, int src, const void *p, size_t len, void *u)
{
    (void)src, (void)p, (void)len, (void)u;
    cr_barrier(c);
}

/* A reentrant handler that sends rank 0 far more than the cap (the test sets a tiny
 * one) while rank 0 sleeps: it waits by handling until rank 0 receives. */
static void flood_rank0(cr_comm *c, int src, const void *p, size_t len, void *u)
{
    (void)src, (void)p, (void)len;
    char rec[64] = {0};
    for (int i = 0; i < 64; i++)
        cr_async(c, 0, *(const int *)u, rec, sizeof rec);
}

/* Send a hand-made buffer to rank (me + 1) % P through the comm's transport,
 * counted like a real send so the barrier waits until it has been handled. */
/* A token passed round the ranks, 10 ms per hop; rank 0 ends the job from a handler
 * with MPI_Abort once it has circulated for two and a half seconds (trace-handler-abort):
 * half-way between two of the once-a-second writes of the parts, which all ranks start
 * together, so the test sees what the timer wrote and not whether a kill can cut a
 * write in progress (it can, at a page boundary: docs/tracing.md). */
static double token_start;
static void pass_token(cr_comm *c, int src, const void *p, size_t len, void *u)
{
    (void)src, (void)p, (void)len;
    int *h = u;
    if (c->rank == 0 && MPI_Wtime() - token_start > 2.5)
        MPI_Abort(MPI_COMM_WORLD, 7);
    /* slowly: the events of two seconds must not fill a part's 1 MiB buffer */
    nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    cr_async(c, (c->rank + 1) % c->size, *h, NULL, 0);
}

/* A handler that misuses the API: the rank that runs it ends inside its wait. */
static void misuse(cr_comm *c, int src, const void *p, size_t len, void *u)
{
    (void)src, (void)p, (void)len;
    cr_async(c, c->size, *(int *)u, NULL, 0);
}

static void inject(cr_comm *c, const void *buf, int len)
{
    char *copy = malloc((size_t)len);
    memcpy(copy, buf, (size_t)len);
    while (c->tp->data->ops->slots_free(c->tp->data) == 0)
        cr_progress(c);
    c->tp->data->ops->send(c->tp->data, (c->rank + 1) % c->size, copy, (size_t)len, (size_t)len);
    c->mpi_sent_total++;
}

/* cr_graph_read's check, run on every rank between the readings: rank 0 appends an
 * edge to the file (a file that changes while it is read), then everyone goes on. */
static const char *grow_file(void *user, uint64_t nvertices, uint64_t edges)
{
    (void)nvertices, (void)edges;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        FILE *f = fopen(user, "a");
        fputs("3 0\n", f);
        fclose(f);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return NULL;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const char *what = argc > 1 ? argv[1] : "";
    cr_comm *c = cr_comm_create(MPI_COMM_WORLD, NULL);
    int h = cr_register(c, nop, NULL);

    if (!strcmp(what, "unknown-handler")) {
        char rec[16];
        uint64_t x = 1;
        cr_run_write_hdr(rec, 9, 0, sizeof x);
        cr_rec_write(rec + 8, NULL, &x, sizeof x);
        if (c->rank == 0)
            inject(c, rec, sizeof rec);
    } else if (!strcmp(what, "truncated")) {
        char rec[16];
        cr_run_write_hdr(rec, 0, 0, 1000);
        memset(rec + 8, 0, 8);
        if (c->rank == 0)
            inject(c, rec, sizeof rec);
    } else if (!strcmp(what, "dedup-bad-key")) {
        cr_dedup_rule rule = {.key_len = 0, .op = CR_OP_SUM, .type = CR_INT64};
        cr_dedup_register(c, &(cr_handler_type){.fn = nop}, &rule, NULL);
    } else if (!strcmp(what, "dedup-short-payload")) {
        cr_dedup_rule rule = {.key_len = 16, .op = CR_OP_FIRST};
        int d = cr_dedup_register(c, &(cr_handler_type){.fn = nop}, &rule, NULL);
        uint64_t x = 1;
        cr_async(c, 0, d, &x, sizeof x);
    } else if (!strcmp(what, "request-not-a-type")) {
        uint64_t x = 1;
        cr_dedup_request(c, 0, h, &x, sizeof x, no_reply, NULL);
    } else if (!strcmp(what, "save-bad-flags")) {
        char err[200];
        cr_counting_set *cs = cr_counting_set_create(c, 8, err, sizeof err);
        cr_counting_set_save(cs, "fatal-save-never-made", 4, err, sizeof err);
    } else if (!strcmp(what, "request-short-key")) {
        int r = cr_dedup_register_request(
            c, &(cr_dedup_request_type){.serve = serve_silently, .key_len = 16}, NULL);
        uint64_t x = 1;
        cr_dedup_request(c, 0, r, &x, sizeof x, no_reply, NULL);
    } else if (!strcmp(what, "request-many-bad-owner")) {
        int r = cr_dedup_register_request(
            c, &(cr_dedup_request_type){.serve = serve_silently, .key_len = 8}, NULL);
        uint64_t x[2] = {1, 2};
        int owners[2] = {0, -1};
        void *ctxs[2] = {NULL, NULL};
        cr_dedup_request_many(c, r, owners, x, sizeof *x, 2, no_reply, ctxs);
    } else if (!strcmp(what, "serve-many-no-reply-len")) {
        cr_dedup_register_request(c, &(cr_dedup_request_type){.serve_many = serve_in_runs}, NULL);
    } else if (!strcmp(what, "serve-many-calls-reply")) {
        int r = cr_dedup_register_request(
            c, &(cr_dedup_request_type){.serve_many = serve_in_runs_replying, .reply_len = 8},
            NULL);
        uint64_t x = 1;
        if (c->rank == 1)
            cr_dedup_request(c, 0, r, &x, sizeof x, no_reply, NULL);
    } else if (!strcmp(what, "request-without-reply")) {
        int r = cr_dedup_register_request(c, &(cr_dedup_request_type){.serve = serve_silently},
                                          NULL);
        if (c->rank == 1)
            cr_dedup_request(c, 0, r, NULL, 0, no_reply, NULL);
    } else if (!strcmp(what, "handler-order")) {
        /* The last rank registers b before a: each id would run another function. */
        bool last = c->rank == c->size - 1;
        cr_register(c, last ? handler_b : handler_a, NULL);
        cr_register(c, last ? handler_a : handler_b, NULL);
    } else if (!strcmp(what, "handler-kind")) {
        bool last = c->rank == c->size - 1;
        cr_register_type(c, last ? &(cr_handler_type){.batch = nop_batch}
                                 : &(cr_handler_type){.fn = nop}, NULL);
    } else if (!strcmp(what, "handler-key-len")) {
        size_t key = c->rank == c->size - 1 ? 16 : 8;
        cr_dedup_rule rule = {.key_len = key, .op = CR_OP_SUM, .type = CR_INT64};
        cr_dedup_register(c, &(cr_handler_type){.fn = nop}, &rule, NULL);
    } else if (!strcmp(what, "handler-rule")) {
        cr_op op = c->rank == c->size - 1 ? CR_OP_MIN : CR_OP_SUM;
        cr_dedup_rule rule = {.key_len = 8, .op = op, .type = CR_INT64};
        cr_dedup_register(c, &(cr_handler_type){.fn = nop}, &rule, NULL);
    } else if (!strcmp(what, "request-key-len")) {
        size_t key = c->rank == c->size - 1 ? 16 : 8;
        cr_dedup_register_request(
            c, &(cr_dedup_request_type){.serve = serve_silently, .key_len = key}, NULL);
    } else if (!strcmp(what, "register-fn-and-batch")) {
        cr_register_type(c, &(cr_handler_type){.fn = nop, .batch = nop_batch}, NULL);
    } else if (!strcmp(what, "bad-dest")) {
        cr_async(c, c->size, h, NULL, 0);
    } else if (!strcmp(what, "many-bad-dest")) {
        int dests[3] = {0, c->size - 1, c->size};
        uint64_t v[3] = {1, 2, 3};
        cr_async_many(c, h, dests, v, sizeof *v, 3);
    } else if (!strcmp(what, "mcast-twice")) {
        int ranks[3] = {0, c->size - 1, 0};
        cr_async_mcast(c, ranks, 3, h, NULL, 0);
    } else if (!strcmp(what, "mcast-bad-rank")) {
        int ranks[2] = {0, c->size};
        cr_async_mcast(c, ranks, 2, h, NULL, 0);
    } else if (!strcmp(what, "bad-handler")) {
        cr_async(c, 0, h + 5, NULL, 0);
    } else if (!strcmp(what, "barrier-in-handler")) {
        int b = cr_register(c, barrier_inside, NULL);
        cr_async(c, 0, b, NULL, 0);
    } else if (!strcmp(what, "exchange-bad-dest")) {
        int dest = c->rank == 1 ? -1 : 0;
        size_t size = 4;
        const void *buf = &dest;
        cr_nbx_result r;
        cr_nbx_exchange(c, 1, &dest, &buf, &size, &r);
        cr_nbx_result_free(&r);
    } else if (!strcmp(what, "exchange-in-handler")) {
        int b = cr_register(c, exchange_inside, NULL);
        cr_async(c, 0, b, NULL, 0);
    } else if (!strcmp(what, "allreduce-band-double")) {
        double x = 1, y;
        cr_allreduce(c, &x, &y, 1, CR_DOUBLE, CR_OP_BAND, NULL);
    } else if (!strcmp(what, "allreduce-in-handler")) {
        int b = cr_register(c, allreduce_inside, NULL);
        cr_async(c, 0, b, NULL, 0);
    } else if (!strcmp(what, "user-op-without-function")) {
        int x = 1, y;
        cr_allreduce(c, &x, &y, 1, CR_INT32, CR_OP_USER, NULL);
    } else if (!strcmp(what, "graph-huge-count")) {
        /* a count only one rank claims, as a damaged header would give it */
        cr_edge_list none = {.nvertices = c->rank == 1 ? UINT64_MAX : 4};
        cr_graph_build(c, &none);
    } else if (!strcmp(what, "graph-count-beyond-memory")) {
        cr_edge_list none = {.nvertices = c->rank == 0 ? CR_GRAPH_MAX_VERTICES : 4};
        cr_graph_build(c, &none);
    } else if (!strcmp(what, "graph-file-changed")) {
        /* the check runs between the first reading and the second: it adds an edge */
        char path[] = "/tmp/courier-fatal-graph-XXXXXX";
        if (c->rank == 0) {
            int fd = mkstemp(path);
            FILE *f = fdopen(fd, "w");
            fputs("0 1\n1 2\n2 3\n", f);
            fclose(f);
        }
        MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
        cr_graph_read_opts o = {.check = grow_file, .user = path};
        char err[256];
        cr_graph_read(c, path, &o, NULL, err, sizeof err);
    } else if (!strcmp(what, "register-vs-barrier")) {
        if (c->rank == 0)
            cr_register(c, nop, NULL);
        else
            cr_barrier(c);
    } else if (!strcmp(what, "finalize-without-destroy")) {
        /* records sent, then MPI_Finalize with the comm still open */
        for (int r = 0; r < c->size; r++)
            cr_async(c, r, h, NULL, 0);
        MPI_Finalize();
        return 0;
    } else if (!strcmp(what, "skip-barrier-destroy")) {
        /* rank 0 skips a barrier the others call, then all destroy the comm */
        if (c->rank != 0)
            cr_barrier(c);
    } else if (!strcmp(what, "watchdog")) {
        /* the other ranks wait in the barrier far longer than COURIER_WATCHDOG */
        if (c->rank == 0)
            nanosleep(&(struct timespec){.tv_sec = 1, .tv_nsec = 500000000}, NULL);
    } else if (!strcmp(what, "watchdog-handler-wait")) {
        /* rank 1 waits by handling inside a handler, which does not return to the
         * event loop (whose timer runs the watchdog), far longer than COURIER_WATCHDOG */
        int flood = cr_register_type(c, &(cr_handler_type){.fn = flood_rank0, .reentrant = true},
                                     &h);
        cr_barrier(c);
        if (c->rank == 1)
            cr_async(c, 1, flood, NULL, 0);
        if (c->rank == 0)
            nanosleep(&(struct timespec){.tv_sec = 1, .tv_nsec = 500000000}, NULL);
    } else if (!strcmp(what, "watchdog-abort")) {
        /* Every rank greets every rank; the last rank then never joins the barrier.
         * With COURIER_WATCHDOG_ABORT the job ends, naming it and the last handler. */
        int greet = cr_register_type(c, &(cr_handler_type){.fn = nop, .name = "greet"}, NULL);
        for (int r = 0; r < c->size; r++)
            cr_async(c, r, greet, NULL, 0);
        cr_flush(c);
        if (c->rank == c->size - 1)
            for (;;) /* stuck in user code; ended by rank 0's abort */
                nanosleep(&(struct timespec){.tv_sec = 1}, NULL);
    } else if (!strcmp(what, "watchdog-summary")) {
        /* rank 0 waits and sums up: the last rank is the one that has not joined */
        if (c->rank == c->size - 1)
            nanosleep(&(struct timespec){.tv_sec = 1, .tv_nsec = 500000000}, NULL);
    } else if (!strcmp(what, "sigusr1")) {
        if (c->rank == 0)
            raise(SIGUSR1);
    } else if (!strcmp(what, "trace-abort")) {
        /* User phases, a barrier, then rank 0 misuses the API: its trace part must be
         * readable after the abort, with the phases in it (tests/check_trace_abort.py). */
        cr_trace_begin(c, "setup");
        for (int r = 0; r < c->size; r++)
            cr_async(c, r, h, NULL, 0);
        cr_barrier(c);
        cr_trace_begin(c, "a \"quoted\" phase");
        cr_trace_end(c);
        cr_trace_end(c);
        /* then rank 0 ends inside a barrier and a phase left open: both are in its
         * part, marked unfinished */
        int bad = cr_register(c, misuse, &h);
        cr_trace_begin(c, "left open");
        if (c->rank == c->size - 1)
            cr_async(c, 0, bad, NULL, 0);
        cr_barrier(c);
    } else if (!strcmp(what, "trace-handler-abort")) {
        /* A token circulates until a handler calls MPI_Abort, which Courier does not
         * see: every rank's part must still hold events (tests/check_trace_abort.py --events). */
        static int token;
        token = cr_register(c, pass_token, &token);
        token_start = MPI_Wtime();
        if (c->rank == 0)
            cr_async(c, 0, token, NULL, 0);
    } else if (!strcmp(what, "trace-end-without-begin")) {
        cr_trace_end(c);
    } else if (!strcmp(what, "none")) {
        /* a correct program, for diagnostics printed by a job that succeeds */
        for (int r = 0; r < c->size; r++)
            cr_async(c, r, h, NULL, 0);
    } else {
        fprintf(stderr, "fatal_cases: unknown case '%s'\n", what);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    cr_barrier(c);
    cr_comm_destroy(c);
    MPI_Finalize();
    return 0; /* reaching this is the failure expect_fail.sh reports */
}
