/* Sparse data exchange (include/courier/nbx.h): NBX, PEX and PCX as one state
 * machine each, stepped from the comm's event loop so the mailbox keeps running.
 *
 * Protocols after Hoefler, Siebert and Lumsdaine, PPoPP 2010
 * (Hoefler, Siebert and Lumsdaine 2010, docs/references.md): PEX exchanges sizes with an
 * all-to-all, PCX counts with a reduce-scatter, NBX needs no metadata at all and
 * finishes with a non-blocking barrier entered once its synchronous sends matched.
 *
 * Consecutive exchanges alternate between two tags. A rank can only start exchange
 * k+2 after every rank has entered the collective of exchange k+1, that is, after
 * every rank has finished exchange k, so two tags keep messages of neighbouring
 * exchanges apart, also for the wildcard receives of NBX and PCX. */
#include "courier/nbx.h"
#include "mailbox/module.h"
#include "nbx/exchange_internal.h"

#include "common/fatal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define SX_TAG 0x5800
/* Messages taken per step, so the mailbox and timers are not starved. */
#define SX_RECV_BUDGET 32

typedef struct nbx_msg {
    int source;
    size_t size;
    size_t offset; /* into the arena */
    size_t seq;    /* arrival order: ties between messages of one source keep it */
} nbx_msg;

typedef struct nbx_state {
    cr_comm *c;
    cr_chan *ch;
    int tag;
    cr_nbx_protocol protocol;
    size_t n_out;
    const int *dests;
    const void *const *bufs;
    const size_t *sizes;
    cr_chan_req *sends;

    nbx_msg *in;
    size_t nin, in_cap;
    char *arena;
    size_t arena_len, arena_cap;

    /* NBX */
    bool barrier_started;
    /* NBX: the barrier; PEX and PCX: the metadata collective */
    cr_chan_req coll;
    bool coll_done;
    uint64_t *meta_out, *meta_in;
    uint64_t expected; /* PCX: messages addressed to me */
    /* PEX */
    cr_chan_req *recvs; /* one per source that sends exactly one message */
    int nrecvs;
    uint64_t *left;     /* per source: messages still to probe for (sources with > 1) */
    size_t *next_off;   /* per source: where its next message goes */
    int multi_sources;  /* sources with messages left to probe for */
    bool sends_done;
} nbx_state;

/* ---------------------------------------------------------------- names */

static const char *const protocol_names[] = {"default", "nbx", "pex", "pcx"};

const char *cr_nbx_protocol_name(cr_nbx_protocol p)
{
    return (unsigned)p <= CR_NBX_PROTOCOL_PCX ? protocol_names[p] : "invalid";
}

int cr_nbx_protocol_parse(const char *name, cr_nbx_protocol *out, char *err, size_t errlen)
{
    for (int i = 0; name && i <= CR_NBX_PROTOCOL_PCX; i++)
        if (!strcmp(name, protocol_names[i])) {
            *out = (cr_nbx_protocol)i;
            return 0;
        }
    cr_set_error(err, errlen, "unknown sparse-exchange protocol '%s': expected default, nbx, "
                 "pex or pcx", name ? name : "(null)");
    return -1;
}

/* ---------------------------------------------------------------- results */

void cr_nbx_result_free(cr_nbx_result *r)
{
    free(r->sources);
    free(r->sizes);
    free(r->data);
    free(r->storage);
    memset(r, 0, sizeof *r);
}

static void arena_reserve(nbx_state *s, size_t more)
{
    if (s->arena_len + more <= s->arena_cap)
        return;
    size_t cap = s->arena_cap ? s->arena_cap : 4096;
    while (cap < s->arena_len + more)
        cap *= 2;
    s->arena = cr_xrealloc(s->arena, cap);
    s->arena_cap = cap;
}

static nbx_msg *add_msg(nbx_state *s, int source, size_t size, size_t offset)
{
    if (s->nin == s->in_cap) {
        s->in_cap = s->in_cap ? 2 * s->in_cap : 16;
        s->in = cr_xrealloc(s->in, s->in_cap * sizeof *s->in);
    }
    nbx_msg *m = &s->in[s->nin];
    *m = (nbx_msg){.source = source, .size = size, .offset = offset, .seq = s->nin};
    s->nin++;
    return m;
}

static int by_source(const void *a, const void *b)
{
    const nbx_msg *x = a, *y = b;
    if (x->source != y->source)
        return x->source < y->source ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Hand the arena to the result, with messages ordered by source. */
static void build_result(nbx_state *s, cr_nbx_result *r)
{
    if (s->nin > 1)
        qsort(s->in, s->nin, sizeof *s->in, by_source);
    memset(r, 0, sizeof *r);
    r->count = s->nin;
    size_t n = s->nin ? s->nin : 1;
    r->sources = cr_xmalloc(n * sizeof *r->sources);
    r->sizes = cr_xmalloc(n * sizeof *r->sizes);
    r->data = cr_xmalloc(n * sizeof *r->data);
    if (!s->arena)
        s->arena = cr_xmalloc(1); /* zero-byte messages still get a valid pointer */
    for (size_t i = 0; i < s->nin; i++) {
        r->sources[i] = s->in[i].source;
        r->sizes[i] = s->in[i].size;
        r->data[i] = s->arena + s->in[i].offset;
        r->total_bytes += s->in[i].size;
    }
    r->storage = s->arena;
    s->arena = NULL;
}

/* ---------------------------------------------------------------- common steps */

/* Receive what has arrived from anyone (NBX, PCX). Returns messages taken. */
static int receive_any(nbx_state *s)
{
    int taken = 0;
    while (taken < SX_RECV_BUDGET) {
        cr_chan_msg m;
        if (!cr_module_chan_probe(s->c, s->ch, CR_CHAN_ANY_SOURCE, s->tag, &m))
            break;
        arena_reserve(s, m.len);
        cr_module_chan_recv_probed(s->c, s->ch, &m, s->arena + s->arena_len);
        add_msg(s, m.source, m.len, s->arena_len);
        s->arena_len += m.len;
        taken++;
    }
    return taken;
}

static void start_sends(nbx_state *s, bool synchronous)
{
    for (size_t i = 0; i < s->n_out; i++)
        cr_module_chan_isend(s->c, s->ch, s->dests[i], s->tag, s->bufs ? s->bufs[i] : NULL,
                             s->sizes[i], synchronous, &s->sends[i]);
}

static bool test_sends(nbx_state *s)
{
    if (!s->sends_done)
        s->sends_done = cr_module_chan_testall(s->c, s->ch, s->sends, s->n_out);
    return s->sends_done;
}

/* ---------------------------------------------------------------- NBX */

static bool nbx_step(cr_comm *c, void *arg)
{
    nbx_state *s = arg;
    bool worked = receive_any(s) > 0;
    bool flag = false;
    if (!s->barrier_started) {
        if (test_sends(s)) {
            /* every own message has been matched: join the consensus */
            cr_module_chan_ibarrier(c, s->ch, &s->coll);
            s->barrier_started = true;
            worked = true;
        }
    } else {
        flag = cr_module_chan_test(c, s->ch, &s->coll);
    }
    if (worked || flag)
        cr_module_note_work(c);
    return flag;
}

/* ---------------------------------------------------------------- PCX */

static bool pcx_step(cr_comm *c, void *arg)
{
    nbx_state *s = arg;
    bool worked = receive_any(s) > 0;
    if (!s->coll_done && cr_module_chan_test(c, s->ch, &s->coll)) {
        s->coll_done = true;
        s->expected = s->meta_in[0];
        worked = true;
    }
    bool done = s->coll_done && s->nin == s->expected && test_sends(s);
    if (worked || done)
        cr_module_note_work(c);
    return done;
}

/* ---------------------------------------------------------------- PEX */

/* The sizes are known: lay the sources out in rank order, post one receive per
 * source that sends a single message, probe for the rest source by source. */
static void pex_post_receives(nbx_state *s)
{
    int p = cr_comm_size(s->c);
    size_t total = 0;
    for (int src = 0; src < p; src++)
        total += s->meta_in[2 * src + 1];
    arena_reserve(s, total);
    s->recvs = cr_xcalloc((size_t)p, sizeof *s->recvs);
    s->left = cr_xcalloc((size_t)p, sizeof *s->left);
    s->next_off = cr_xcalloc((size_t)p, sizeof *s->next_off);
    size_t off = 0;
    for (int src = 0; src < p; src++) {
        uint64_t count = s->meta_in[2 * src], bytes = s->meta_in[2 * src + 1];
        if (count == 1) {
            add_msg(s, src, bytes, off);
            cr_module_chan_irecv(s->c, s->ch, src, s->tag, s->arena + off, bytes,
                                 &s->recvs[s->nrecvs++]);
        } else if (count > 1) {
            s->left[src] = count;
            s->next_off[src] = off;
            s->multi_sources++;
        }
        off += bytes;
    }
    s->arena_len = total;
}

static bool pex_probe_multi(nbx_state *s)
{
    bool worked = false;
    for (int src = 0; src < cr_comm_size(s->c) && s->multi_sources > 0; src++) {
        while (s->left[src] > 0) {
            cr_chan_msg m;
            if (!cr_module_chan_probe(s->c, s->ch, src, s->tag, &m))
                break;
            cr_module_chan_recv_probed(s->c, s->ch, &m, s->arena + s->next_off[src]);
            add_msg(s, src, m.len, s->next_off[src]);
            s->next_off[src] += m.len;
            s->multi_sources -= --s->left[src] == 0;
            worked = true;
        }
    }
    return worked;
}

static bool pex_step(cr_comm *c, void *arg)
{
    nbx_state *s = arg;
    bool worked = false;
    if (!s->coll_done) {
        if (!cr_module_chan_test(c, s->ch, &s->coll))
            return false;
        s->coll_done = true;
        pex_post_receives(s);
        worked = true;
    }
    worked |= pex_probe_multi(s);
    bool recvs_done = cr_module_chan_testall(c, s->ch, s->recvs, (size_t)s->nrecvs);
    bool done = recvs_done && s->multi_sources == 0 && test_sends(s);
    if (worked || done)
        cr_module_note_work(c);
    return done;
}

/* ---------------------------------------------------------------- the module */

/* The exchange's state on one comm: its own channel, and the call count whose
 * parity separates consecutive exchanges' tags. */
typedef struct exchange_state {
    cr_chan *ch;
    uint64_t calls;
} exchange_state;

static void exchange_destroy(cr_comm *c, void *state)
{
    exchange_state *st = state;
    cr_module_chan_close(c, st->ch);
    free(st);
}

static const cr_module_type exchange_module = {
    .name = "sparse exchange",
    .poll = NULL, /* an exchange runs inside its own wait */
    .destroy = exchange_destroy,
};

static exchange_state *state_of(cr_comm *c)
{
    bool fresh;
    exchange_state *st = cr_module_state_or_new(c, &exchange_module, sizeof *st, &fresh);
    if (fresh)
        st->ch = cr_module_chan_open(c);
    return st;
}

/* ---------------------------------------------------------------- entry */

static void check_arguments(const cr_comm *c, size_t n_out, const int *dests,
                            const void *const *bufs, const size_t *sizes)
{
    if (n_out > 0 && (!dests || !sizes))
        cr_fatal("cr_nbx_exchange: %zu messages but dests or sizes is NULL", n_out);
    if (n_out > (size_t)INT_MAX)
        cr_fatal("cr_nbx_exchange: %zu messages is more than %d", n_out, INT_MAX);
    for (size_t i = 0; i < n_out; i++) {
        if (dests[i] < 0 || dests[i] >= cr_comm_size(c))
            cr_fatal("cr_nbx_exchange: message %zu has destination rank %d, out of range "
                     "[0, %d)", i, dests[i], cr_comm_size(c));
        if (sizes[i] > (size_t)INT_MAX)
            cr_fatal("cr_nbx_exchange: message %zu has %zu bytes; the limit is %d (MPI counts "
                     "are int)", i, sizes[i], INT_MAX);
        if (sizes[i] > 0 && (!bufs || !bufs[i]))
            cr_fatal("cr_nbx_exchange: message %zu has %zu bytes but no buffer", i, sizes[i]);
    }
}

void cr_nbx_exchange_with(cr_comm *c, cr_nbx_protocol protocol, size_t n_out,
                             const int *dests, const void *const *bufs, const size_t *sizes,
                             cr_nbx_result *result)
{
    if (cr_module_in_handler(c))
        cr_fatal("cr_nbx_exchange was called from inside a handler; call it from the main "
                 "program");
    if (cr_module_busy(c))
        cr_fatal("cr_nbx_exchange was called while the runtime is already waiting");
    if (protocol == CR_NBX_PROTOCOL_DEFAULT)
        protocol = cr_comm_config(c)->exchange;
    if (protocol < CR_NBX_PROTOCOL_NBX || protocol > CR_NBX_PROTOCOL_PCX)
        cr_fatal("cr_nbx_exchange: protocol %d is not valid: expected CR_NBX_PROTOCOL_NBX, CR_NBX_PROTOCOL_PEX "
                 "or CR_NBX_PROTOCOL_PCX", (int)protocol);
    check_arguments(c, n_out, dests, bufs, sizes);
    exchange_state *st = state_of(c);

    nbx_state s = {.c = c, .ch = st->ch, .tag = SX_TAG + (int)(st->calls++ & 1),
                  .protocol = protocol, .n_out = n_out, .dests = dests, .bufs = bufs,
                  .sizes = sizes};
    s.sends = cr_xcalloc(n_out ? n_out : 1, sizeof *s.sends);
    bool (*step)(cr_comm *, void *) = nbx_step;
    const char *what = "cr_nbx_exchange (nbx)";
    if (protocol == CR_NBX_PROTOCOL_NBX) {
        start_sends(&s, true);
    } else {
        int p = cr_comm_size(c);
        size_t per = protocol == CR_NBX_PROTOCOL_PEX ? 2 : 1;
        s.meta_out = cr_xcalloc((size_t)p * per, sizeof *s.meta_out);
        s.meta_in = cr_xcalloc((size_t)p * per, sizeof *s.meta_in);
        for (size_t i = 0; i < n_out; i++) {
            s.meta_out[per * (size_t)dests[i]]++;
            if (per == 2)
                s.meta_out[2 * (size_t)dests[i] + 1] += sizes[i];
        }
        if (protocol == CR_NBX_PROTOCOL_PEX) {
            cr_module_chan_ialltoall(c, s.ch, s.meta_out, s.meta_in, 2 * sizeof *s.meta_out,
                                     &s.coll);
            step = pex_step;
            what = "cr_nbx_exchange (pex)";
        } else {
            cr_module_chan_ireduce_scatter_sum(c, s.ch, s.meta_out, s.meta_in, &s.coll);
            step = pcx_step;
            what = "cr_nbx_exchange (pcx)";
        }
        start_sends(&s, false);
    }
    cr_module_wait(c, step, &s, what);
    build_result(&s, result);
    free(s.sends);
    free(s.in);
    free(s.meta_out);
    free(s.meta_in);
    free(s.recvs);
    free(s.left);
    free(s.next_off);
}

void cr_nbx_exchange(cr_comm *c, size_t n_out, const int *dests, const void *const *bufs,
                        const size_t *sizes, cr_nbx_result *result)
{
    cr_nbx_exchange_with(c, CR_NBX_PROTOCOL_DEFAULT, n_out, dests, bufs, sizes, result);
}

/* ---------------------------------------------------------------- configuration */

int cr_exchange_config_from_env(cr_config *cfg, char *err, size_t errlen)
{
    cr_config c = *cfg;
    const char *exchange = getenv("COURIER_EXCHANGE");
    if (exchange) {
        if (cr_nbx_protocol_parse(exchange, &c.exchange, NULL, 0) || c.exchange == CR_NBX_PROTOCOL_DEFAULT) {
            cr_set_error(err, errlen, "COURIER_EXCHANGE='%s' is not valid: expected nbx, pex or pcx",
                      exchange);
            return -1;
        }
    }
    *cfg = c;
    return 0;
}

int cr_exchange_config_validate(const cr_config *cfg, char *err, size_t errlen)
{
    if (cfg->exchange < CR_NBX_PROTOCOL_NBX || cfg->exchange > CR_NBX_PROTOCOL_PCX) {
        cr_set_error(err, errlen, "exchange=%d is not valid: expected CR_NBX_PROTOCOL_NBX, CR_NBX_PROTOCOL_PEX or CR_NBX_PROTOCOL_PCX",
                  (int)cfg->exchange);
        return -1;
    }
    return 0;
}
