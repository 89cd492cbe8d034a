/* The simulated transport (see sim.h and docs/simulation.md).
 *
 * What it models exactly: which blocks each rank sends to which, in which phase,
 * their bytes; synchronous sends (a send completes once the receiver has taken and
 * handled the block) and the cap on sends in flight; MPI's non-overtaking order
 * between one sender and one receiver within a phase; any order across senders;
 * the termination waves and blocking reductions as collectives. What it does not
 * model: time and bandwidth (the clock counts scheduling steps), and failures.
 *
 * State per virtual rank is its coroutine stack, its transport (slots) and the
 * blocks addressed to it; the world adds one scratch array of P stamps.
 *
 * Coroutines start with makecontext/setcontext and then switch with _setjmp and
 * _longjmp, which unlike swapcontext do not save and restore the signal mask: no
 * system call per switch, which at P = 4096 is most of the run time otherwise. */
/* _longjmp between coroutine stacks is what the switch below does on purpose; the
 * fortified longjmp would take it for a corrupted stack. */
#undef _FORTIFY_SOURCE
#include "transport/sim.h"

#include "common/fatal.h"
#include "common/op.h"
#include "courier/rng.h"

#include <setjmp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define FIBER_START(save, bottom, size) __sanitizer_start_switch_fiber(save, bottom, size)
#define FIBER_FINISH(save, bottom, size) __sanitizer_finish_switch_fiber(save, bottom, size)
#else
#define FIBER_START(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#define FIBER_FINISH(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#endif

#define DEFAULT_STACK ((size_t)256 << 10)

typedef struct block {
    struct block *next; /* in the receiver's inbox, in arrival order */
    int src;
    unsigned phase;
    char *data;
    size_t len;
    size_t cap;         /* the sender's capacity of data, given back with it */
    bool done;          /* taken and handled by the receiver */
} block;

/* A collective in progress: the ranks' contributions, combined. */
struct reduction;
typedef struct reduction {
    uint64_t gen;       /* which call of the sequence this slot holds */
    int joined;
    int n;
    bool is_double;
    cr_op op;
    uint64_t u[32];
    double d[32];
} reduction;

/* What the ranks of one comm share: inboxes and collectives. */
struct sim_chan_shared;

typedef struct shared_comm {
    block **inbox_head, **inbox_tail; /* [P] */
    size_t *inbox_len;                /* [P] */
    reduction wave[2];
    reduction red[2];
    struct sim_chan_shared **chans; /* module channels, in the order they were opened */
    int nchans, chans_cap;
    struct sim_mem_shared **mems; /* node segments, in the order they were created */
    int nmems, mems_cap;
} shared_comm;

typedef struct vrank {
    ucontext_t ctx;  /* only to start the coroutine */
    jmp_buf env;     /* where it continues when scheduled again */
    void *stack;
    bool started;
    bool finished;
    const struct reduction *blocked; /* waits for this collective to complete */
    uint64_t blocked_gen;
    int ncomms; /* comms this rank has created: the index of its next one */
    uint64_t run_chance; /* out of 2^32: a pick runs the rank with this chance (its speed) */
    uint64_t stalled_until; /* the rank does not run before this step */
} vrank;

struct cr_sim_world {
    int p;
    uint64_t rng;
    size_t stack_bytes;
    vrank *ranks;
    int *alive; /* ranks not finished */
    int nalive;
    int current;
    jmp_buf sched; /* the scheduler, waiting for the running rank to yield */
    const void *main_bottom; /* the scheduler's stack, for AddressSanitizer's fiber hooks */
    size_t main_size;
    shared_comm **comms;
    int ncomms, comms_cap;
    uint64_t steps;
    uint64_t progress; /* blocks moved and collectives joined: the deadlock detector */
    uint64_t stall_chance; /* out of 2^32: a rank that runs then stalls (0: never) */
    double costs[3];       /* per message, byte and record handled; all 0: none given */
    uint32_t *stamp;   /* [P] scratch for choosing a deliverable block */
    uint32_t stamp_gen;
    void (*entry)(cr_sim_world *, int, void *);
    void *arg;
};

typedef struct sim_transport {
    cr_transport base;
    cr_data_plane plane;
    cr_sim_world *w;
    shared_comm *sc;
    unsigned phase;
    int nslots;
    block **slots; /* NULL when free */
    int inflight;
    uint64_t wave_gen, red_gen;
    int chans_opened;
    int mems_created;
    /* Receive buffers not in use: a block is copied out of its sender's memory when it
     * is received, one buffer per delivery in progress (deliveries nest when a
     * reentrant handler waits, src/mailbox/flow_waits.c). */
    char **spare;
    size_t *spare_cap;
    int nspare, spare_max;
} sim_transport;

static sim_transport *st(cr_transport *t)
{
    return (sim_transport *)t;
}

static sim_transport *of_plane(const cr_data_plane *d)
{
    return (sim_transport *)((char *)d - offsetof(sim_transport, plane));
}

/* ---------------------------------------------------------------- coroutines */

static void switch_to_scheduler(cr_sim_world *w)
{
    vrank *r = &w->ranks[w->current];
    void *save = NULL;
    FIBER_START(&save, w->main_bottom, w->main_size);
    if (_setjmp(r->env) == 0)
        _longjmp(w->sched, 1);
    FIBER_FINISH(save, NULL, NULL);
}

static void sim_yield(cr_transport *t)
{
    switch_to_scheduler(st(t)->w);
}

/* Blocking collectives wait here, giving the processor away until `ready`. */
static bool complete_for(const cr_sim_world *w, const reduction *slot, uint64_t gen)
{
    return slot->gen == gen && slot->joined == w->p;
}

static void wait_for(cr_sim_world *w, const reduction *slot, uint64_t gen)
{
    vrank *v = &w->ranks[w->current];
    while (!complete_for(w, slot, gen)) {
        /* the scheduler does not switch to this rank until the collective is done */
        v->blocked = slot;
        v->blocked_gen = gen;
        switch_to_scheduler(w);
    }
    v->blocked = NULL;
}

static cr_sim_world *running_world;

static void rank_main(void)
{
    cr_sim_world *w = running_world;
    int rank = w->current;
    FIBER_FINISH(NULL, &w->main_bottom, &w->main_size);
    w->entry(w, rank, w->arg);
    w->ranks[rank].finished = true;
    FIBER_START(NULL, w->main_bottom, w->main_size); /* this fiber ends */
    _longjmp(w->sched, 1);
}

/* ---------------------------------------------------------------- blocks */

static int slots_free(cr_data_plane *d)
{
    return of_plane(d)->nslots - of_plane(d)->inflight;
}

static int inflight(cr_data_plane *d)
{
    return of_plane(d)->inflight;
}

static bool send_block(cr_data_plane *d, int dest, char *data, size_t len, size_t cap)
{
    sim_transport *s = of_plane(d);
    if (s->inflight == s->nslots)
        cr_fatal("internal error: a send without a free slot");
    if ((unsigned)dest >= (unsigned)s->w->p)
        cr_fatal("internal error: send to rank %d of %d", dest, s->w->p);
    block *b = cr_xcalloc(1, sizeof *b);
    *b = (block){.src = s->base.rank, .phase = s->phase, .data = data, .len = len, .cap = cap};
    for (int i = 0; i < s->nslots; i++)
        if (!s->slots[i]) {
            s->slots[i] = b;
            break;
        }
    s->inflight++;
    shared_comm *sc = s->sc;
    if (sc->inbox_tail[dest])
        sc->inbox_tail[dest]->next = b;
    else
        sc->inbox_head[dest] = b;
    sc->inbox_tail[dest] = b;
    sc->inbox_len[dest]++;
    s->w->progress++;
    return false;
}

static int complete(cr_data_plane *d, cr_give_back_fn give_back, void *arg)
{
    sim_transport *s = of_plane(d);
    int done = 0;
    for (int i = 0; i < s->nslots && s->inflight > 0; i++) {
        block *b = s->slots[i];
        if (b && b->done) {
            give_back(arg, b->data, b->cap);
            free(b);
            s->slots[i] = NULL;
            s->inflight--;
            done++;
        }
    }
    return done;
}

/* Unlink the block at *link from rank r's inbox (prev is the block before it). */
static block *unlink_block(shared_comm *sc, int r, block **link, block *prev)
{
    block *b = *link;
    *link = b->next;
    if (sc->inbox_tail[r] == b)
        sc->inbox_tail[r] = prev;
    sc->inbox_len[r]--;
    return b;
}

/* A random deliverable block: of this rank's phase, and the oldest such block of
 * its sender (MPI does not let a sender's messages overtake each other). */
/* A stamp no source carries yet: marks "seen" without clearing P entries. */
static void fresh_stamp(cr_sim_world *w)
{
    if (++w->stamp_gen == 0) {
        memset(w->stamp, 0, (size_t)w->p * sizeof *w->stamp);
        w->stamp_gen = 1;
    }
}

/* A deliverable block chosen by the seed among the first CHOOSE_CHOICES of this
 * rank's phase (each the oldest of its sender), looking at CHOOSE_WALK blocks at
 * most: a rank with thousands of blocks queued does not walk them all per receive
 * (the same window as an any-source probe of the channels, below). */
#define CHOOSE_WALK 256
#define CHOOSE_CHOICES 8

static block *choose(sim_transport *s)
{
    cr_sim_world *w = s->w;
    shared_comm *sc = s->sc;
    int r = s->base.rank;
    fresh_stamp(w);
    block *before[CHOOSE_CHOICES]; /* the block ahead of each choice (NULL: the head) */
    int n = 0, walked = 0;
    block *prev = NULL;
    for (block *b = sc->inbox_head[r]; b && n < CHOOSE_CHOICES && walked < CHOOSE_WALK;
         prev = b, b = b->next, walked++) {
        if (b->phase != s->phase || w->stamp[b->src] == w->stamp_gen)
            continue;
        w->stamp[b->src] = w->stamp_gen;
        before[n++] = prev;
    }
    if (n == 0)
        return NULL;
    int pick = (int)cr_rng_bounded(cr_rng_next(&w->rng), (uint64_t)n);
    block **link = before[pick] ? &before[pick]->next : &sc->inbox_head[r];
    return unlink_block(sc, r, link, before[pick]);
}

/* A receive buffer of at least `len` bytes (its capacity in *cap). */
static char *take_spare(sim_transport *s, size_t len, size_t *cap)
{
    char *buf = NULL;
    *cap = 0;
    if (s->nspare > 0) {
        buf = s->spare[--s->nspare];
        *cap = s->spare_cap[s->nspare];
    }
    if (*cap < len) {
        buf = cr_xrealloc(buf, len ? len : 1);
        *cap = len;
    }
    return buf;
}

static void keep_spare(sim_transport *s, char *buf, size_t cap)
{
    if (s->nspare == s->spare_max) {
        s->spare_max = s->spare_max ? 2 * s->spare_max : 4;
        s->spare = cr_xrealloc(s->spare, (size_t)s->spare_max * sizeof *s->spare);
        s->spare_cap = cr_xrealloc(s->spare_cap, (size_t)s->spare_max * sizeof *s->spare_cap);
    }
    s->spare[s->nspare] = buf;
    s->spare_cap[s->nspare++] = cap;
}

/* A block is received as MPI receives a synchronous send: copied into the
 * receiver's buffer, and from then on the send is complete, whether or not its
 * records have been handled. */
static size_t poll(cr_data_plane *d, int budget, cr_deliver_fn deliver, void *arg)
{
    sim_transport *s = of_plane(d);
    size_t got = 0;
    while (budget-- > 0) {
        block *b = choose(s);
        if (!b)
            break;
        size_t cap;
        char *buf = take_spare(s, b->len, &cap);
        int src = b->src;
        size_t len = b->len;
        memcpy(buf, b->data, len);
        b->done = true; /* the sender may reuse its block now */
        s->w->progress++;
        deliver(arg, src, buf, len);
        keep_spare(s, buf, cap);
        got++;
    }
    return got;
}

static void next_phase(cr_data_plane *d)
{
    of_plane(d)->phase ^= 1u;
}

static const cr_data_ops sim_data_ops = {
    .slots_free = slots_free,
    .inflight = inflight,
    .reaches = NULL,
    .send = send_block,
    .complete = complete,
    .poll = poll,
    .next_phase = next_phase,
    .shared_sends = NULL,
};

/* ---------------------------------------------------------------- collectives */

static reduction *join(cr_sim_world *w, reduction pair[2], uint64_t gen, int n, bool is_double,
                       cr_op op, const uint64_t *u, const double *d)
{
    if (n > 32)
        cr_fatal("internal error: a simulated reduction of %d values", n);
    reduction *slot = &pair[gen % 2];
    if (slot->gen != gen || slot->joined == 0) {
        *slot = (reduction){.gen = gen, .n = n, .is_double = is_double, .op = op};
        for (int i = 0; i < n; i++) {
            slot->u[i] = op == CR_OP_MIN ? UINT64_MAX : 0;
            slot->d[i] = op == CR_OP_MIN ? 1e308 : op == CR_OP_MAX ? -1e308 : 0;
        }
    }
    if (slot->n != n || slot->is_double != is_double || slot->op != op)
        cr_fatal("mismatched collective calls in the simulation (reduction %llu)",
                 (unsigned long long)gen);
    for (int i = 0; i < n; i++) {
        if (is_double) {
            slot->d[i] = cr_op_f64(op, slot->d[i], d[i]);
        } else {
            slot->u[i] = cr_op_u64(op, slot->u[i], u[i]);
        }
    }
    slot->joined++;
    w->progress++;
    return slot;
}

static void wave_join(cr_transport *t, const uint64_t in[CR_WAVE_WORDS])
{
    sim_transport *s = st(t);
    join(s->w, s->sc->wave, ++s->wave_gen, CR_WAVE_WORDS, false, CR_OP_SUM, in, NULL);
}

static bool wave_test(cr_transport *t, uint64_t out[CR_WAVE_WORDS])
{
    sim_transport *s = st(t);
    const reduction *slot = &s->sc->wave[s->wave_gen % 2];
    if (slot->gen != s->wave_gen || slot->joined != s->w->p)
        return false;
    memcpy(out, slot->u, CR_WAVE_WORDS * sizeof *out);
    return true;
}

/* A blocking reduction of integers (u) or doubles (d): join, wait, the result. */
static const reduction *reduce_blocking(cr_transport *t, int n, cr_op op,
                                        const uint64_t *u, const double *d)
{
    sim_transport *s = st(t);
    uint64_t gen = ++s->red_gen;
    reduction *slot = join(s->w, s->sc->red, gen, n, d != NULL, op, u, d);
    wait_for(s->w, slot, gen);
    return slot;
}

static void allreduce_u64(cr_transport *t, const uint64_t *in, uint64_t *out, int n,
                          cr_op op)
{
    memcpy(out, reduce_blocking(t, n, op, in, NULL)->u, (size_t)n * sizeof *out);
}

static void allreduce_double(cr_transport *t, const double *in, double *out, int n,
                             cr_op op)
{
    memcpy(out, reduce_blocking(t, n, op, NULL, in)->d, (size_t)n * sizeof *out);
}

/* ---------------------------------------------------------------- module channels
 *
 * Messages are copied when sent and wait in the receiver's list, in the order they
 * were sent, each visible to the receiver only after a random number of scheduling
 * steps (up to 4 per rank of the world: a message may arrive after the receiver's
 * other work, as on a network), and never before an earlier message of its sender
 * under the same tag; a synchronous send completes when the receiver takes it.
 * Receives match in the order they were posted (at every test on the channel), a
 * probe for any source picks at random among the oldest message of each source, so
 * a seed decides the interleaving. The collectives complete once every rank has
 * joined, in two slots per kind reused every other call (a rank joins call k+2
 * only after every rank has seen call k complete). */

typedef struct chan_op chan_op;

typedef struct chan_msg {
    struct chan_msg *next, *prev; /* the receiver's list, in sending order */
    uint64_t arrives; /* the scheduling step from which the receiver can see it */
    int src, tag;
    char *data;
    size_t len;
    chan_op *sender; /* a synchronous send waiting for this message to be taken */
} chan_msg;

typedef enum { OP_SEND, OP_RECV, OP_BARRIER, OP_ALLTOALL, OP_REDSCAT } op_kind;

struct chan_op {
    op_kind kind;
    bool done;
    struct chan_op *next_posted; /* receives not yet matched, in posting order */
    int src, tag;                /* receives */
    char *buf;
    size_t len;
    size_t *offs, *lens;         /* a receive into pieces of buf: npieces of them */
    int npieces;
    uint64_t gen;                /* collectives: which call */
    void *out;                   /* all-to-all and reduce-scatter: the result */
};

typedef struct chan_coll {
    uint64_t gen;
    int joined, taken;
    size_t bytes;
    char *data;     /* all-to-all: P x P blocks, [dest][src] */
    uint64_t *sums; /* reduce-scatter: P sums */
} chan_coll;

typedef struct sim_chan_shared {
    chan_msg **head, **tail; /* [P]: messages waiting at each rank */
    chan_coll coll[3][2];    /* barrier, all-to-all, reduce-scatter */
} sim_chan_shared;

struct cr_chan {
    sim_transport *s;
    sim_chan_shared *sh;
    chan_op *posted, *posted_tail;
    uint64_t gen[3];
};

static chan_op *op_of(const cr_chan_req *r)
{
    chan_op *op;
    memcpy(&op, r->opaque, sizeof op);
    return op;
}

static void op_set(cr_chan_req *r, chan_op *op)
{
    memset(r->opaque, 0, sizeof r->opaque);
    memcpy(r->opaque, &op, sizeof op);
}

static chan_op *new_op(cr_chan_req *r, op_kind kind)
{
    chan_op *op = cr_xcalloc(1, sizeof *op);
    op->kind = kind;
    op_set(r, op);
    return op;
}

static cr_chan *chan_open(cr_transport *t)
{
    sim_transport *s = st(t);
    shared_comm *sc = s->sc;
    int index = s->chans_opened++;
    if (index == sc->nchans) {
        cr_xgrow((void **)&sc->chans, &sc->chans_cap, sc->nchans + 1, sizeof *sc->chans);
        sim_chan_shared *sh = cr_xcalloc(1, sizeof *sh);
        sh->head = cr_xcalloc((size_t)s->w->p, sizeof *sh->head);
        sh->tail = cr_xcalloc((size_t)s->w->p, sizeof *sh->tail);
        sc->chans[sc->nchans++] = sh;
    }
    cr_chan *ch = cr_xcalloc(1, sizeof *ch);
    ch->s = s;
    ch->sh = sc->chans[index];
    return ch;
}

static void chan_close(cr_chan *ch)
{
    if (ch->posted)
        cr_fatal("internal error: a channel closed with receives posted");
    free(ch);
}

static void chan_isend(cr_chan *ch, int dest, int tag, const void *buf, size_t len,
                       bool synchronous, cr_chan_req *r)
{
    cr_sim_world *w = ch->s->w;
    if ((unsigned)dest >= (unsigned)w->p)
        cr_fatal("internal error: a channel message to rank %d of %d", dest, w->p);
    chan_op *op = new_op(r, OP_SEND);
    chan_msg *m = cr_xcalloc(1, sizeof *m);
    /* Visible after 0 to 4 P scheduling steps (about four turns of every rank), at most
     * 4096: beyond 1024 ranks a longer delay only makes receivers look again. */
    uint64_t delay = 4 * (uint64_t)(w->p < 1024 ? w->p : 1024);
    *m = (chan_msg){.arrives = w->steps + cr_rng_bounded(cr_rng_next(&w->rng), delay + 1),
                    .src = ch->s->base.rank, .tag = tag, .len = len,
                    .data = cr_xmalloc(len ? len : 1), .sender = synchronous ? op : NULL};
    if (len)
        memcpy(m->data, buf, len);
    op->done = !synchronous;
    sim_chan_shared *sh = ch->sh;
    m->prev = sh->tail[dest];
    if (sh->tail[dest])
        sh->tail[dest]->next = m;
    else
        sh->head[dest] = m;
    sh->tail[dest] = m;
    w->progress++;
}

/* Take message m out of this rank's list (in O(1): the list is doubly linked, so a
 * rank with thousands of queued messages does not walk them per receive), copy it
 * into buf (at most cap bytes) and free it; its synchronous sender completes. */
static size_t take_msg(cr_chan *ch, chan_msg *m, void *buf, size_t cap)
{
    int me = ch->s->base.rank;
    if (m->prev)
        m->prev->next = m->next;
    else
        ch->sh->head[me] = m->next;
    if (m->next)
        m->next->prev = m->prev;
    else
        ch->sh->tail[me] = m->prev;
    if (m->len > cap)
        cr_fatal("internal error: a channel message of %zu bytes for a receive of %zu",
                 m->len, cap);
    if (m->len)
        memcpy(buf, m->data, m->len);
    if (m->sender)
        m->sender->done = true;
    size_t len = m->len;
    free(m->data);
    free(m);
    ch->s->w->progress++;
    return len;
}

/* The oldest message from src under tag at this rank, if it has arrived: its link
 * and predecessor (a later one of the same sender and tag never overtakes it). */
static chan_msg *find_msg(cr_chan *ch, int src, int tag)
{
    for (chan_msg *m = ch->sh->head[ch->s->base.rank]; m; m = m->next)
        if (m->tag == tag && m->src == src)
            return m->arrives > ch->s->w->steps ? NULL : m;
    return NULL;
}

/* Match the posted receives, oldest first. */
static void match_posted(cr_chan *ch)
{
    chan_op *before = NULL;
    for (chan_op *op = ch->posted, *next; op; op = next) {
        next = op->next_posted;
        chan_msg *msg = find_msg(ch, op->src, op->tag);
        if (!msg) {
            before = op;
            continue;
        }
        if (op->npieces) {
            char *flat = cr_xmalloc(op->len ? op->len : 1);
            take_msg(ch, msg, flat, op->len);
            size_t at = 0;
            for (int k = 0; k < op->npieces; k++) {
                memcpy(op->buf + op->offs[k], flat + at, op->lens[k]);
                at += op->lens[k];
            }
            free(flat);
        } else {
            take_msg(ch, msg, op->buf, op->len);
        }
        op->done = true;
        if (before)
            before->next_posted = next;
        else
            ch->posted = next;
        if (ch->posted_tail == op)
            ch->posted_tail = before;
    }
}

/* A receive into buf: posted after the older ones, matched as soon as it can be. */
static chan_op *new_recv(cr_chan_req *r, int src, int tag, void *buf, size_t len)
{
    chan_op *op = new_op(r, OP_RECV);
    op->src = src;
    op->tag = tag;
    op->buf = buf;
    op->len = len;
    return op;
}

static void post_recv(cr_chan *ch, chan_op *op)
{
    if (ch->posted_tail)
        ch->posted_tail->next_posted = op;
    else
        ch->posted = op;
    ch->posted_tail = op;
    match_posted(ch);
}

static void chan_irecv(cr_chan *ch, int src, int tag, void *buf, size_t len, cr_chan_req *r)
{
    post_recv(ch, new_recv(r, src, tag, buf, len));
}

static size_t pieces_total(const size_t *lens, int n)
{
    size_t total = 0;
    for (int k = 0; k < n; k++)
        total += lens[k];
    return total;
}

static void chan_isendv(cr_chan *ch, int dest, int tag, const char *base, const size_t *offs,
                        const size_t *lens, int n, cr_chan_req *r)
{
    size_t total = pieces_total(lens, n), at = 0;
    char *flat = cr_xmalloc(total ? total : 1);
    for (int k = 0; k < n; k++) {
        memcpy(flat + at, base + offs[k], lens[k]);
        at += lens[k];
    }
    chan_isend(ch, dest, tag, flat, total, false, r);
    free(flat);
}

static void chan_irecvv(cr_chan *ch, int src, int tag, char *base, const size_t *offs,
                        const size_t *lens, int n, cr_chan_req *r)
{
    size_t *copy = cr_xmalloc((size_t)(2 * (n > 0 ? n : 1)) * sizeof *copy);
    memcpy(copy, offs, (size_t)n * sizeof *copy);
    memcpy(copy + n, lens, (size_t)n * sizeof *copy);
    chan_op *op = new_recv(r, src, tag, base, pieces_total(lens, n));
    op->offs = copy;
    op->lens = copy + n;
    op->npieces = n;
    post_recv(ch, op);
}

/* An any-source probe looks at this many of the oldest queued messages at most and
 * picks by the seed among the first PROBE_CHOICES that may be taken, so that a rank
 * with thousands of messages queued (direct routing at P = 4096) does not walk them
 * all per probe. Messages further back wait for those ahead to be taken or to
 * arrive, as in a network that delivers roughly in order; every interleaving of the
 * oldest few stays possible. */
#define PROBE_WALK 256
#define PROBE_CHOICES 8

/* Up to PROBE_CHOICES messages under `tag` that may be taken now (arrived, and the
 * oldest of their sender: a later one never overtakes it), oldest first. */
static int probe_choices(cr_chan *ch, int tag, chan_msg **choice)
{
    cr_sim_world *w = ch->s->w;
    fresh_stamp(w);
    int n = 0, walked = 0;
    for (chan_msg *x = ch->sh->head[ch->s->base.rank]; x && n < PROBE_CHOICES &&
                                                        walked < PROBE_WALK;
         x = x->next, walked++) {
        if (x->tag != tag || w->stamp[x->src] == w->stamp_gen)
            continue;
        w->stamp[x->src] = w->stamp_gen;
        if (x->arrives <= w->steps)
            choice[n++] = x;
    }
    return n;
}

static bool chan_probe(cr_chan *ch, int src, int tag, cr_chan_msg *m)
{
    match_posted(ch);
    cr_sim_world *w = ch->s->w;
    chan_msg *found = NULL;
    if (src != CR_CHAN_ANY_SOURCE) {
        found = find_msg(ch, src, tag);
    } else {
        chan_msg *choice[PROBE_CHOICES];
        int n = probe_choices(ch, tag, choice);
        if (n)
            found = choice[cr_rng_bounded(cr_rng_next(&w->rng), (uint64_t)n)];
    }
    if (!found)
        return false;
    m->source = found->src;
    m->len = found->len;
    memset(m->opaque, 0, sizeof m->opaque);
    memcpy(m->opaque, &found, sizeof found);
    return true;
}

/* The message chan_probe found: nothing on this rank takes messages between the
 * two calls, so it is still queued. */
static void chan_recv_probed(cr_chan *ch, cr_chan_msg *m, void *buf)
{
    chan_msg *want;
    memcpy(&want, m->opaque, sizeof want);
    take_msg(ch, want, buf, m->len);
}

/* Join call `gen` of collective `kind`; the slot it is in. */
static chan_coll *coll_join(cr_chan *ch, int kind, uint64_t gen, size_t bytes)
{
    chan_coll *c = &ch->sh->coll[kind][gen % 2];
    int p = ch->s->w->p;
    if (c->gen != gen || c->joined == 0) {
        free(c->data);
        free(c->sums);
        *c = (chan_coll){.gen = gen, .bytes = bytes};
        if (kind == OP_ALLTOALL - OP_BARRIER)
            c->data = cr_xcalloc((size_t)p * (size_t)p, bytes ? bytes : 1);
        if (kind == OP_REDSCAT - OP_BARRIER)
            c->sums = cr_xcalloc((size_t)p, sizeof *c->sums);
    }
    if (c->bytes != bytes)
        cr_fatal("mismatched channel collectives in the simulation (%zu against %zu bytes)",
                 bytes, c->bytes);
    c->joined++;
    ch->s->w->progress++;
    return c;
}

static chan_op *coll_start(cr_chan *ch, op_kind kind, cr_chan_req *r, void *out)
{
    chan_op *op = new_op(r, kind);
    op->gen = ++ch->gen[kind - OP_BARRIER];
    op->out = out;
    return op;
}

static void chan_ibarrier(cr_chan *ch, cr_chan_req *r)
{
    chan_op *op = coll_start(ch, OP_BARRIER, r, NULL);
    coll_join(ch, 0, op->gen, 0);
}

static void chan_ialltoall(cr_chan *ch, const void *send, void *recv, size_t bytes,
                           cr_chan_req *r)
{
    chan_op *op = coll_start(ch, OP_ALLTOALL, r, recv);
    op->len = bytes;
    chan_coll *c = coll_join(ch, 1, op->gen, bytes);
    int p = ch->s->w->p, me = ch->s->base.rank;
    for (int d = 0; d < p; d++)
        memcpy(c->data + ((size_t)d * (size_t)p + (size_t)me) * bytes,
               (const char *)send + (size_t)d * bytes, bytes);
}

static void chan_ireduce_scatter_sum(cr_chan *ch, const uint64_t *in, uint64_t *out,
                                     cr_chan_req *r)
{
    chan_op *op = coll_start(ch, OP_REDSCAT, r, out);
    chan_coll *c = coll_join(ch, 2, op->gen, 0);
    for (int d = 0; d < ch->s->w->p; d++)
        c->sums[d] += in[d];
}

/* A collective completes for this rank once every rank has joined: its result is
 * copied out, and the last rank to take it frees the slot's buffers. */
static bool coll_test(cr_chan *ch, chan_op *op)
{
    int kind = (int)(op->kind - OP_BARRIER), p = ch->s->w->p, me = ch->s->base.rank;
    chan_coll *c = &ch->sh->coll[kind][op->gen % 2];
    if (c->gen != op->gen || c->joined < p)
        return false;
    if (op->kind == OP_ALLTOALL)
        memcpy(op->out, c->data + (size_t)me * (size_t)p * op->len, (size_t)p * op->len);
    if (op->kind == OP_REDSCAT)
        *(uint64_t *)op->out = c->sums[me];
    if (++c->taken == p) {
        free(c->data);
        free(c->sums);
        c->data = NULL;
        c->sums = NULL;
    }
    return true;
}

static bool chan_test(cr_chan *ch, cr_chan_req *r)
{
    chan_op *op = op_of(r);
    if (!op)
        return true;
    if (op->kind == OP_RECV && !op->done)
        match_posted(ch);
    if (op->kind >= OP_BARRIER && !op->done)
        op->done = coll_test(ch, op);
    if (!op->done)
        return false;
    free(op->offs);
    free(op);
    memset(r->opaque, 0, sizeof r->opaque);
    return true;
}

/* ---------------------------------------------------------------- node segments */

/* The k-th segment call of a comm's ranks: per node, the members' parts (each member
 * allocates its own as it arrives; the caller waits for all before using them, as a
 * collective does), all freed by the last member to leave. */
typedef struct sim_mem_shared {
    char ***parts; /* [P] by node: [members] */
    int *members;  /* [P] by node */
    int *users;    /* [P] by node: members holding it */
} sim_mem_shared;

enum { MEM_ALIGN = 64 };

static sim_mem_shared *mem_shared(sim_transport *s, int index)
{
    shared_comm *sc = s->sc;
    if (index == sc->nmems) {
        cr_xgrow((void **)&sc->mems, &sc->mems_cap, sc->nmems + 1, sizeof *sc->mems);
        sim_mem_shared *sh = cr_xcalloc(1, sizeof *sh);
        sh->parts = cr_xcalloc((size_t)s->w->p, sizeof *sh->parts);
        sh->users = cr_xcalloc((size_t)s->w->p, sizeof *sh->users);
        sh->members = cr_xcalloc((size_t)s->w->p, sizeof *sh->members);
        sc->mems[sc->nmems++] = sh;
    }
    return sc->mems[index];
}

static bool node_mem_create(cr_transport *t, int node, int size, int rank, size_t bytes,
                            cr_node_mem *out)
{
    sim_transport *s = st(t);
    if (node < 0 || node >= s->w->p || rank < 0 || rank >= size)
        cr_fatal("internal error: node segment of node %d, member %d of %d", node, rank, size);
    sim_mem_shared *sh = mem_shared(s, s->mems_created++);
    if (!sh->parts[node]) {
        sh->parts[node] = cr_xcalloc((size_t)size, sizeof **sh->parts);
        sh->members[node] = size;
    } else if (sh->members[node] != size) {
        cr_fatal("internal error: node %d has %d members and %d", node, sh->members[node], size);
    }
    /* no room (more than half the machine's memory, as MPI's side refuses more than
     * half the free shared memory): the caller gives up on every rank; the members
     * that mapped theirs free the table, else the world's end does */
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0 && bytes / 2 > (size_t)pages / 4 * (size_t)page)
        return false;
    void *p = NULL;
    if (bytes > SIZE_MAX - MEM_ALIGN || posix_memalign(&p, MEM_ALIGN, bytes ? bytes : 1))
        return false;
    memset(p, 0, bytes);
    sh->parts[node][rank] = p;
    sh->users[node]++;
    /* the node's table itself: parts of members yet to arrive appear in it */
    *out = (cr_node_mem){.rank = rank, .size = size, .part = sh->parts[node], .impl = sh};
    return true;
}

static void node_mem_destroy(cr_transport *t, cr_node_mem *m)
{
    (void)t;
    sim_mem_shared *sh = m->impl;
    int p = st(t)->w->p;
    for (int node = 0; node < p; node++)
        if (sh->parts[node] == m->part && --sh->users[node] == 0) {
            /* the last to leave frees every part: the others may still be reading
             * the barrier's line in the first (MPI_Win_free waits for all) */
            for (int r = 0; r < sh->members[node]; r++)
                free(m->part[r]);
            free(sh->parts[node]);
            sh->parts[node] = NULL;
        }
    *m = (cr_node_mem){0};
}

static const cr_node_mem_ops sim_node_mem_ops = {
    .area = NULL,
    .create = node_mem_create,
    .destroy = node_mem_destroy,
};

static void nodes(cr_transport *t, int *node_of)
{
    for (int r = 0; r < t->size; r++)
        node_of[r] = 0;
}

static double now(cr_transport *t)
{
    return (double)st(t)->w->steps * 1e-6;
}

static void destroy(cr_transport *t)
{
    sim_transport *s = st(t);
    if (s->inflight)
        cr_fatal("internal error: a simulated comm destroyed with %d sends in flight",
                 s->inflight);
    for (int i = 0; i < s->nspare; i++)
        free(s->spare[i]);
    free(s->spare);
    free(s->spare_cap);
    free(s->slots);
    free(s);
}

static bool machine_costs(cr_transport *t, double out[3])
{
    const double *c = st(t)->w->costs;
    if (c[0] == 0 && c[1] == 0 && c[2] == 0)
        return false;
    memcpy(out, c, 3 * sizeof *c);
    return true;
}

void cr_sim_world_set_costs(cr_sim_world *w, double message, double byte, double record)
{
    w->costs[0] = message, w->costs[1] = byte, w->costs[2] = record;
}

static const cr_group_ops group_ops = {
    .wave_join = wave_join,
    .wave_test = wave_test,
    .allreduce_u64 = allreduce_u64,
    .allreduce_double = allreduce_double,
    .nodes = nodes,
};

static const cr_chan_ops chan_ops = {
    .open = chan_open,
    .close = chan_close,
    .isend = chan_isend,
    .irecv = chan_irecv,
    .isendv = chan_isendv,
    .irecvv = chan_irecvv,
    .probe = chan_probe,
    .recv_probed = chan_recv_probed,
    .test = chan_test,
    .ibarrier = chan_ibarrier,
    .ialltoall = chan_ialltoall,
    .ireduce_scatter_sum = chan_ireduce_scatter_sum,
};

/* No reports: the simulation has no clock for a watchdog to watch. */
static const cr_host_ops host_ops = {
    .now = now,
    .yield = sim_yield,
    .report_send = NULL,
    .report_take = NULL,
    .reports_sent = NULL,
    .machine_ranks = NULL,
    .machine_costs = machine_costs,
};

static const cr_transport_ops sim_ops = {
    .name = "simulation",
    .group = &group_ops,
    .chan = &chan_ops,
    .host = &host_ops,
    .node_mem = &sim_node_mem_ops,
    .destroy = destroy,
};

cr_transport *cr_sim_transport_create(cr_sim_world *w, int rank, unsigned max_inflight)
{
    int index = w->ranks[rank].ncomms++;
    if (index == w->ncomms) {
        cr_xgrow((void **)&w->comms, &w->comms_cap, w->ncomms + 1, sizeof *w->comms);
        shared_comm *sc = cr_xcalloc(1, sizeof *sc);
        sc->inbox_head = cr_xcalloc((size_t)w->p, sizeof *sc->inbox_head);
        sc->inbox_tail = cr_xcalloc((size_t)w->p, sizeof *sc->inbox_tail);
        sc->inbox_len = cr_xcalloc((size_t)w->p, sizeof *sc->inbox_len);
        w->comms[w->ncomms++] = sc;
    }
    sim_transport *s = cr_xcalloc(1, sizeof *s);
    s->base = (cr_transport){.ops = &sim_ops, .data = &s->plane, .rank = rank, .size = w->p};
    s->plane.ops = &sim_data_ops;
    s->w = w;
    s->sc = w->comms[index];
    s->nslots = (int)max_inflight;
    s->slots = cr_xcalloc((size_t)s->nslots, sizeof *s->slots);
    return &s->base;
}

/* ---------------------------------------------------------------- the world */

/* Stacks are kept for the next world: mapping and first touching a thousand of
 * them per run costs more than the run itself at P = 1024. */
static void **stack_pool;
static int stack_pool_n, stack_pool_cap;
static size_t stack_pool_bytes;

static void *get_stack(size_t bytes, int rank)
{
    if (stack_pool_n > 0 && stack_pool_bytes == bytes)
        return stack_pool[--stack_pool_n];
    void *st = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                    -1, 0);
    if (st == MAP_FAILED)
        cr_fatal("simulation: cannot map a %zu-byte stack for virtual rank %d", bytes, rank);
    return st;
}

static void put_stack(void *st, size_t bytes)
{
    if (stack_pool_n == 0)
        stack_pool_bytes = bytes;
    if (stack_pool_bytes != bytes || stack_pool_n == 65536) {
        munmap(st, bytes);
        return;
    }
    cr_xgrow((void **)&stack_pool, &stack_pool_cap, stack_pool_n + 1, sizeof *stack_pool);
    stack_pool[stack_pool_n++] = st;
}

cr_sim_world *cr_sim_world_create(int ranks, uint64_t seed, size_t stack_bytes)
{
    if (ranks < 1)
        cr_fatal("a simulated world needs at least one rank, not %d", ranks);
    cr_sim_world *w = cr_xcalloc(1, sizeof *w);
    w->p = ranks;
    w->rng = cr_rng_hash64(seed ^ 0x73696d756c617465ULL);
    w->stack_bytes = stack_bytes ? stack_bytes : DEFAULT_STACK;
    w->ranks = cr_xcalloc((size_t)ranks, sizeof *w->ranks);
    for (int r = 0; r < ranks; r++)
        w->ranks[r].run_chance = UINT64_C(1) << 32; /* every rank at full speed */
    w->alive = cr_xmalloc((size_t)ranks * sizeof *w->alive);
    w->stamp = cr_xcalloc((size_t)ranks, sizeof *w->stamp);
    return w;
}

static void free_chans(shared_comm *sc, int p)
{
    for (int k = 0; k < sc->nchans; k++) {
        sim_chan_shared *sh = sc->chans[k];
        for (int r = 0; r < p; r++)
            for (chan_msg *m = sh->head[r], *next; m; m = next) {
                next = m->next;
                free(m->data);
                free(m);
            }
        for (int kind = 0; kind < 3; kind++)
            for (int i = 0; i < 2; i++) {
                free(sh->coll[kind][i].data);
                free(sh->coll[kind][i].sums);
            }
        free(sh->head);
        free(sh->tail);
        free(sh);
    }
    free(sc->chans);
}

/* Segments of a run that ended before every member destroyed them. */
static void free_mems(shared_comm *sc, int p)
{
    for (int k = 0; k < sc->nmems; k++) {
        sim_mem_shared *sh = sc->mems[k];
        for (int node = 0; node < p; node++)
            if (sh->parts[node]) {
                for (int r = 0; r < sh->members[node]; r++)
                    free(sh->parts[node][r]);
                free(sh->parts[node]);
            }
        free(sh->parts);
        free(sh->members);
        free(sh->users);
        free(sh);
    }
    free(sc->mems);
}

static void free_comms(cr_sim_world *w)
{
    for (int k = 0; k < w->ncomms; k++) {
        shared_comm *sc = w->comms[k];
        for (int r = 0; r < w->p; r++)
            for (block *b = sc->inbox_head[r], *next; b; b = next) {
                next = b->next;
                free(b);
            }
        free_chans(sc, w->p);
        free_mems(sc, w->p);
        free(sc->inbox_head);
        free(sc->inbox_tail);
        free(sc->inbox_len);
        free(sc);
    }
    free(w->comms);
    w->comms = NULL;
    w->ncomms = w->comms_cap = 0;
}

void cr_sim_world_destroy(cr_sim_world *w)
{
    if (!w)
        return;
    for (int r = 0; r < w->p; r++)
        if (w->ranks[r].stack)
            put_stack(w->ranks[r].stack, w->stack_bytes);
    free_comms(w);
    free(w->ranks);
    free(w->alive);
    free(w->stamp);
    free(w);
}

uint64_t cr_sim_world_steps(const cr_sim_world *w)
{
    return w->steps;
}

static void start_rank(cr_sim_world *w, int r)
{
    vrank *v = &w->ranks[r];
    v->stack = get_stack(w->stack_bytes, r);
    getcontext(&v->ctx);
    v->ctx.uc_stack.ss_sp = v->stack;
    v->ctx.uc_stack.ss_size = w->stack_bytes;
    v->ctx.uc_link = NULL;
    makecontext(&v->ctx, rank_main, 0);
}

/* Unequal speeds: a picked rank runs with its own chance, and may then stall for a
 * while; both drawn from the world's generator, so a seed replays them. */
static bool runs_now(cr_sim_world *w, vrank *v)
{
    if (w->steps < v->stalled_until)
        return false;
    if (v->run_chance < (UINT64_C(1) << 32) &&
        (cr_rng_next(&w->rng) >> 32) >= v->run_chance)
        return false;
    if (w->stall_chance && (cr_rng_next(&w->rng) >> 32) < w->stall_chance)
        v->stalled_until = w->steps + 1 + cr_rng_bounded(cr_rng_next(&w->rng), 16 * (uint64_t)w->p);
    return true;
}

void cr_sim_world_set_speeds(cr_sim_world *w, double max_slowness, double stall_chance)
{
    for (int r = 0; r < w->p; r++) {
        double slowness = 1.0;
        if (max_slowness > 1.0) {
            double u = (double)(cr_rng_next(&w->rng) >> 11) * 0x1.0p-53;
            slowness = 1.0 + u * (max_slowness - 1.0);
        }
        w->ranks[r].run_chance = (uint64_t)(4294967296.0 / slowness);
    }
    w->stall_chance = (uint64_t)(stall_chance * 4294967296.0);
}

double cr_sim_world_slowness(const cr_sim_world *w, int rank)
{
    return 4294967296.0 / (double)w->ranks[rank].run_chance;
}

int cr_sim_world_run(cr_sim_world *w, void (*entry)(cr_sim_world *, int, void *), void *arg,
                     char *err, size_t errlen)
{
    if (running_world)
        cr_fatal("simulation: cr_sim_world_run does not nest");
    running_world = w;
    w->entry = entry;
    w->arg = arg;
    w->nalive = w->p;
    for (int r = 0; r < w->p; r++) {
        w->alive[r] = r;
        start_rank(w, r);
    }
    /* Stuck: this many switches in a row moved nothing (every rank polls once
     * per switch, so a live world moves something long before). */
    uint64_t idle = 0, last_progress = w->progress, limit = 64 * (uint64_t)w->p + 100000;
    int rc = 0;
    while (w->nalive > 0) {
        int k = (int)cr_rng_bounded(cr_rng_next(&w->rng), (uint64_t)w->nalive);
        int r = w->alive[k];
        w->current = r;
        w->steps++;
        vrank *v = &w->ranks[r];
        if (!runs_now(w, v))
            continue; /* slow or stalled: not a switch, so not idle either */
        if (v->blocked && !complete_for(w, v->blocked, v->blocked_gen)) {
            if (++idle > limit)
                goto stuck;
            continue;
        }
        void *save = NULL;
        FIBER_START(&save, v->stack, w->stack_bytes);
        if (_setjmp(w->sched) == 0) {
            if (!v->started) {
                v->started = true;
                setcontext(&v->ctx);
            }
            _longjmp(v->env, 1);
        }
        FIBER_FINISH(save, NULL, NULL);
        if (w->ranks[r].finished) {
            w->alive[k] = w->alive[--w->nalive];
            put_stack(w->ranks[r].stack, w->stack_bytes);
            w->ranks[r].stack = NULL;
            last_progress = ++w->progress;
        }
        if (w->progress != last_progress) {
            last_progress = w->progress;
            idle = 0;
        } else if (++idle > limit) {
            goto stuck;
        }
    }
    running_world = NULL;
    return rc;
stuck:
    cr_set_error(err, errlen, "simulation stuck: %d of %d ranks wait and nothing has moved for "
                 "%llu steps (a deadlock)", w->nalive, w->p, (unsigned long long)idle);
    rc = -1;
    running_world = NULL;
    return rc;
}
