/* The split-phase executor: runs any schedule (src/coll/schedule.h) one round at a time.
 * A round posts all its sends and receives, and when they have all completed runs
 * its local operations. Requests advance from cr_request_test, cr_request_wait and the comm's
 * event loop (cr_coll_progress, called after every poll). */
#include "coll/coll_internal.h"
#include "coll/schedule.h"
#include "coll/shared.h"

#include "common/fatal.h"
#include "common/op.h"
#include "mailbox/module.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tags cycle through this many values: collectives in flight at once on one comm
 * must stay below it. */
#define TAG_SPACE 16384
/* Direct tests in cr_request_wait before it runs the event loop. */
#define WAIT_SPINS 256

/* The collectives' state on one comm (a module, src/mailbox/module.h). */
typedef struct coll_state {
    cr_chan *ch;             /* the collectives' channel, opened on first use */
    uint64_t seq;            /* collectives started (their tags) */
    struct cr_request *active; /* started and not complete */
    struct cr_coll_cache *cache; /* schedules built so far */
    struct cr_request *spare;  /* the last finished request, its buffers kept for the
                                  next: a short collective allocates nothing */
    uint64_t shared_seq;     /* shared-memory collectives started (src/coll/shared.h) */
    uint64_t shared_seen;    /* the fewest of them any rank was seen to have finished */
} coll_state;

struct cr_request {
    cr_comm *c;
    coll_state *st;
    cr_request *prev, *next; /* the comm's active list */
    int tag;
    bool is_reduce, done, posted, in_fixup;
    bool result_in_recv; /* the main schedule's last round wrote the result to recv */
    const cr_node_area *area; /* set: a shared-memory collective, number shared_seq */
    uint64_t shared_seq;
    char name[32];
    size_t slots_cap, stage_cap; /* bytes allocated at slots and stage */
    int round;
    cr_chan_req *mreqs; /* the round's transfers */
    int nmreqs, cap_mreqs;

    /* allreduce; schedules are shared, owned by the comm's cache */
    const cr_red_schedule *schedule, *fixup;
    bool needs_fixup;
    char *slots, *stage;
    size_t vec_bytes, count;
    cr_dtype type;
    cr_op op;
    cr_combine_fn fn;
    void *user;
    char *recv;
    const void *input; /* the caller's send, read as slot 0 (slot()), or NULL */

    /* allgather(v) */
    const cr_ag_schedule *ag;
    const char *own;  /* my block in the caller's buffer, until copied into recv */
    size_t *sizes, *offsets;
    char *pack;
    size_t pack_cap;
};

/* ---------------------------------------------------------------- names */

static const char *const ar_names[] = {"auto", "binomial", "butterfly", "dissemination", "bruck",
                                       "shared"};
static const char *const ag_names[] = {"auto", "ring", "neighbor", "recdoubling", "bruck", "sparbit",
                                       "shared"};

const char *cr_allreduce_name(cr_allreduce_algorithm a)
{
    return (unsigned)a <= CR_ALLREDUCE_SHARED ? ar_names[a] : "invalid";
}

const char *cr_allgather_name(cr_allgather_algorithm a)
{
    return (unsigned)a <= CR_ALLGATHER_SHARED ? ag_names[a] : "invalid";
}

/* The index of text in names[0, n), or -1 with err saying what was expected. */
static int parse_name(const char *what, const char *text, const char *const *names, int n,
                      char *err, size_t errlen)
{
    for (int i = 0; text && i < n; i++)
        if (!strcmp(text, names[i]))
            return i;
    char list[160] = "";
    for (int i = 0; i < n; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                 i == 0 ? "" : i == n - 1 ? " or " : ", ", names[i]);
    cr_set_error(err, errlen, "unknown %s '%s': expected %s", what, text ? text : "(null)", list);
    return -1;
}

int cr_allreduce_parse(const char *name, cr_allreduce_algorithm *out, char *err, size_t errlen)
{
    int i = parse_name("allreduce algorithm", name, ar_names, CR_ALLREDUCE_SHARED + 1, err,
                       errlen);
    if (i >= 0)
        *out = (cr_allreduce_algorithm)i;
    return i >= 0 ? 0 : -1;
}

int cr_allgather_parse(const char *name, cr_allgather_algorithm *out, char *err, size_t errlen)
{
    int i = parse_name("allgather algorithm", name, ag_names, CR_ALLGATHER_SHARED + 1, err,
                       errlen);
    if (i >= 0)
        *out = (cr_allgather_algorithm)i;
    return i >= 0 ? 0 : -1;
}

const char *cr_request_algorithm(const cr_request *q)
{
    return q->name;
}

/* memcpy that accepts empty copies from or to NULL (zero-length collectives). */
static void copy_bytes(void *dst, const void *src, size_t n)
{
    if (n)
        memcpy(dst, src, n);
}

/* ---------------------------------------------------------------- element operations */

static size_t dtype_size(cr_dtype t)
{
    return t == CR_INT32 || t == CR_FLOAT ? 4 : 8;
}

/* Element by element with the operator's arithmetic (common/op.h): one loop per
 * operator, so that each sees a constant operator and vectorises. */
#define OP_LOOP(T, OP, K)                                                                \
    for (size_t i = 0; i < n; i++)                                                       \
        d[i] = OP(K, x[i], y[i])
#define COMBINE_LOOP(T, OP)                                                              \
    do {                                                                                 \
        T *d = dst;                                                                      \
        const T *x = a, *y = b;                                                          \
        switch (op) {                                                                    \
        case CR_OP_SUM: OP_LOOP(T, OP, CR_OP_SUM); break;                                \
        case CR_OP_MIN: OP_LOOP(T, OP, CR_OP_MIN); break;                                \
        case CR_OP_MAX: OP_LOOP(T, OP, CR_OP_MAX); break;                                \
        case CR_OP_BOR: OP_LOOP(T, OP, CR_OP_BOR); break;                                \
        case CR_OP_BAND: OP_LOOP(T, OP, CR_OP_BAND); break;                              \
        default: break;                                                                  \
        }                                                                                \
    } while (0)

/* dst = a combined with b (dst may be a or b). */
static void combine(cr_request *q, void *dst, const void *a, const void *b)
{
    size_t n = q->count;
    cr_op op = q->op;
    if (op == CR_OP_USER) {
        if (dst == a) {
            q->fn(dst, b, n, q->user);
        } else if (dst == b) {
            q->fn(dst, a, n, q->user); /* the operation commutes */
        } else {
            copy_bytes(dst, a, q->vec_bytes);
            q->fn(dst, b, n, q->user);
        }
        return;
    }
    switch (q->type) {
    case CR_INT32: COMBINE_LOOP(int32_t, cr_op_i32); break;
    case CR_INT64: COMBINE_LOOP(int64_t, cr_op_i64); break;
    case CR_UINT64: COMBINE_LOOP(uint64_t, cr_op_u64); break;
    case CR_FLOAT: COMBINE_LOOP(float, cr_op_f32); break;
    case CR_DOUBLE: COMBINE_LOOP(double, cr_op_f64); break;
    }
}

/* ---------------------------------------------------------------- transfers */

static void grow_bytes(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return;
    *buf = cr_xrealloc(*buf, need);
    *cap = need;
}

static cr_chan_req *next_mreq(cr_request *q)
{
    cr_xgrow((void **)&q->mreqs, &q->cap_mreqs, q->nmreqs + 1, sizeof *q->mreqs);
    memset(&q->mreqs[q->nmreqs], 0, sizeof *q->mreqs);
    return &q->mreqs[q->nmreqs++];
}

static void post_send(cr_request *q, int peer, const void *buf, size_t len)
{
    cr_module_chan_isend(q->c, q->st->ch, peer, q->tag, buf, len, false, next_mreq(q));
}

static void post_recv(cr_request *q, int peer, void *buf, size_t len)
{
    cr_module_chan_irecv(q->c, q->st->ch, peer, q->tag, buf, len, next_mreq(q));
}

/* ---------------------------------------------------------------- allreduce rounds */

/* Slot s of the schedule running. Slot 0 is the broadcast's vector in the fixup, and the
 * caller's input itself where the schedule never writes it (cr_red_schedule.keeps_input):
 * read only then, hence the cast. */
static char *slot(cr_request *q, int s)
{
    if (s == 0 && (q->in_fixup || q->input))
        return q->in_fixup ? q->recv : (char *)q->input;
    return q->slots + (size_t)s * q->vec_bytes;
}

/* Receives are posted before sends, so that a large message finds its receive
 * waiting instead of taking the unexpected-message path. */
static void post_reduce_round(cr_request *q, const cr_red_schedule *p)
{
    int lo = p->round_start[q->round], hi = p->round_start[q->round + 1];
    int staged = 0;
    for (int i = lo; i < hi; i++)
        if (p->ops[i].code == CR_RED_RECV)
            post_recv(q, p->ops[i].peer, slot(q, p->ops[i].dst), q->vec_bytes);
    for (int i = lo; i < hi; i++) {
        const cr_red_op *op = &p->ops[i];
        if (op->code == CR_RED_SEND) {
            const char *src = slot(q, op->a);
            /* a send reads its slot as it was when the round began */
            for (int j = lo; j < hi; j++)
                if (p->ops[j].code == CR_RED_RECV && p->ops[j].dst == op->a) {
                    grow_bytes(&q->stage, &q->stage_cap, (size_t)(staged + 1) * q->vec_bytes + 1);
                    copy_bytes(q->stage + (size_t)staged * q->vec_bytes, src, q->vec_bytes);
                    src = q->stage + (size_t)staged++ * q->vec_bytes;
                    break;
                }
            post_send(q, op->peer, src, q->vec_bytes);
        }
    }
}

/* The main schedule's last op, when it combines into the result slot: it may write the
 * caller's buffer instead, which saves copying the result there (a 64 KiB
 * allreduce's butterfly at 2 ranks took 10% less). -1 otherwise, and for an empty
 * vector (no buffer to write). */
static int result_op(const cr_request *q, const cr_red_schedule *p)
{
    int last = p->round_start[q->round + 1] - 1;
    if (q->in_fixup || !q->vec_bytes || q->round != p->nrounds - 1 ||
        last < p->round_start[q->round])
        return -1;
    const cr_red_op *op = &p->ops[last];
    return op->code == CR_RED_COMBINE && op->dst == p->result ? last : -1;
}

static void finish_reduce_round(cr_request *q, const cr_red_schedule *p)
{
    int direct = result_op(q, p);
    for (int i = p->round_start[q->round]; i < p->round_start[q->round + 1]; i++) {
        const cr_red_op *op = &p->ops[i];
        char *dst = i == direct ? q->recv : slot(q, op->dst);
        if (op->code == CR_RED_COPY)
            copy_bytes(dst, slot(q, op->a), q->vec_bytes);
        else if (op->code == CR_RED_COMBINE)
            combine(q, dst, slot(q, op->a), slot(q, op->b));
    }
    q->result_in_recv = direct >= 0;
}

/* The main schedule is done: deliver its result, and start the broadcast that makes
 * rounding identical everywhere if the algorithm needs one. */
static void reduce_schedule_done(cr_request *q)
{
    if (q->in_fixup) { /* the broadcast wrote recv itself */
        q->done = true;
        return;
    }
    const char *result = slot(q, q->schedule->result);
    if (!q->result_in_recv && result != q->recv) /* the input in place, at one rank */
        copy_bytes(q->recv, result, q->vec_bytes);
    if (q->needs_fixup) {
        q->in_fixup = true;
        q->round = 0;
        return;
    }
    q->done = true;
}

/* ---------------------------------------------------------------- allgather rounds */

/* The transfer's blocks as one span of the receive buffer, if they are adjacent. */
static bool contiguous(const cr_request *q, const cr_ag_xfer *x, size_t *offset, size_t *len)
{
    const int32_t *b = q->ag->blocks + x->first;
    bool adjacent = true;
    *offset = q->offsets[b[0]];
    *len = q->sizes[b[0]];
    for (int k = 1; k < x->count; k++) {
        adjacent &= q->offsets[b[k]] == q->offsets[b[k - 1]] + q->sizes[b[k - 1]];
        *len += q->sizes[b[k]];
    }
    return adjacent;
}


/* Blocks that are not adjacent travel through the pack buffer when they are small
 * (received ones first, in transfer order, then the packed sends), and as pieces of
 * the receive buffer when they are large (a vector send or receive: under MPI an
 * indexed datatype, which saves two copies of the data). */
#define DATATYPE_MIN_BYTES 65536

/* Neither adjacent nor large: the transfer goes through the pack buffer. */
static bool packed(const cr_request *q, const cr_ag_xfer *x, size_t *len)
{
    size_t off;
    return !contiguous(q, x, &off, len) && *len < DATATYPE_MIN_BYTES;
}

static size_t pack_bytes(const cr_request *q, bool sends)
{
    size_t total = 0, len;
    for (int i = q->ag->round_start[q->round]; i < q->ag->round_start[q->round + 1]; i++) {
        const cr_ag_xfer *x = &q->ag->xfers[i];
        if (x->send == sends && packed(q, x, &len))
            total += len;
    }
    return total;
}

/* The blocks of x as pieces of the receive buffer, posted as one transfer. */
static void post_pieces(cr_request *q, const cr_ag_xfer *x, bool sends)
{
    size_t *offs = cr_xmalloc(2 * (size_t)x->count * sizeof *offs), *lens = offs + x->count;
    for (int k = 0; k < x->count; k++) {
        int b = q->ag->blocks[x->first + k];
        offs[k] = q->offsets[b];
        lens[k] = q->sizes[b];
    }
    if (sends)
        cr_module_chan_isendv(q->c, q->st->ch, x->peer, q->tag, q->recv, offs, lens, x->count,
                              next_mreq(q));
    else
        cr_module_chan_irecvv(q->c, q->st->ch, x->peer, q->tag, q->recv, offs, lens, x->count,
                              next_mreq(q));
    free(offs);
}

/* Post the transfers of one direction; packed ones start at `at` in the pack buffer. */
static void post_xfers(cr_request *q, bool sends, size_t at)
{
    for (int i = q->ag->round_start[q->round]; i < q->ag->round_start[q->round + 1]; i++) {
        const cr_ag_xfer *x = &q->ag->xfers[i];
        if (x->send != sends)
            continue;
        size_t off, len;
        char *buf;
        if (sends && q->own && x->count == 1 && q->ag->blocks[x->first] == cr_comm_rank(q->c)) {
            buf = (char *)q->own; /* not copied yet: send it from where it is */
            len = q->sizes[cr_comm_rank(q->c)];
        } else if (contiguous(q, x, &off, &len)) {
            buf = q->recv + off;
        } else if (len >= DATATYPE_MIN_BYTES) {
            post_pieces(q, x, sends);
            continue;
        } else {
            buf = q->pack + at;
            for (int k = 0; sends && k < x->count; k++) {
                int b = q->ag->blocks[x->first + k];
                copy_bytes(q->pack + at, q->recv + q->offsets[b], q->sizes[b]);
                at += q->sizes[b];
            }
            if (!sends)
                at += len;
        }
        if (sends)
            post_send(q, x->peer, buf, len);
        else
            post_recv(q, x->peer, buf, len);
    }
}

/* Copy my block into the receive buffer. Done once the first round is posted, so
 * the copy overlaps its transfers: in that round a rank can only send its own
 * block, which goes from the caller's buffer. */
static void copy_own_block(cr_request *q)
{
    if (!q->own)
        return;
    memmove(q->recv + q->offsets[cr_comm_rank(q->c)], q->own, q->sizes[cr_comm_rank(q->c)]);
    q->own = NULL;
}

/* Receives are posted before sends (see post_reduce_round). */
static void post_gather_round(cr_request *q)
{
    size_t in = pack_bytes(q, false), need = in + pack_bytes(q, true);
    grow_bytes(&q->pack, &q->pack_cap, need + 1); /* never NULL, even when nothing is packed */
    post_xfers(q, false, 0);
    post_xfers(q, true, in);
    copy_own_block(q);
}

static void unpack_gather_round(cr_request *q)
{
    size_t at = 0, len;
    for (int i = q->ag->round_start[q->round]; i < q->ag->round_start[q->round + 1]; i++) {
        const cr_ag_xfer *x = &q->ag->xfers[i];
        if (x->send || !packed(q, x, &len))
            continue;
        for (int k = 0; k < x->count; k++) {
            int b = q->ag->blocks[x->first + k];
            copy_bytes(q->recv + q->offsets[b], q->pack + at, q->sizes[b]);
            at += q->sizes[b];
        }
    }
}

/* ---------------------------------------------------------------- stepping */

static int nrounds(const cr_request *q)
{
    if (!q->is_reduce)
        return q->ag->nrounds;
    return q->in_fixup ? q->fixup->nrounds : q->schedule->nrounds;
}

static void unlink_active(cr_request *q)
{
    if (q->prev)
        q->prev->next = q->next;
    else if (q->st->active == q)
        q->st->active = q->next;
    if (q->next)
        q->next->prev = q->prev;
    q->prev = q->next = NULL;
}

/* ---------------------------------------------------------------- shared memory */

/* This rank's block of a shared-memory collective: its reduce vector (copied at the
 * start), or its allgather block. */
static const void *own_block(const cr_request *q, size_t *len)
{
    if (q->is_reduce) {
        *len = q->vec_bytes;
        return q->slots;
    }
    int me = cr_comm_rank(q->c);
    *len = q->sizes[me];
    return q->own ? q->own : q->recv + q->offsets[me];
}

/* Every rank's block where it lies: reduced in rank order (the same result, to the
 * bit, on every rank) or copied to its place. */
static void use_blocks(cr_request *q)
{
    const cr_node_area *a = q->area;
    if (q->is_reduce) {
        copy_bytes(q->recv, cr_shared_block(a, q->shared_seq, 0), q->vec_bytes);
        for (int r = 1; r < a->size; r++)
            combine(q, q->recv, q->recv, cr_shared_block(a, q->shared_seq, r));
        return;
    }
    for (int r = 0; r < a->size; r++)
        if (r != a->rank || q->own)
            copy_bytes(q->recv + q->offsets[r], cr_shared_block(a, q->shared_seq, r), q->sizes[r]);
}

/* Returns true if anything moved (the block posted, or the collective done). */
static bool shared_step(cr_request *q)
{
    bool moved = false;
    if (!q->posted) {
        size_t len;
        const void *mine = own_block(q, &len);
        if (!cr_shared_post(q->area, &q->st->shared_seen, q->shared_seq, mine, len))
            return false;
        q->posted = moved = true;
    }
    if (!cr_shared_ready(q->area, q->shared_seq))
        return moved;
    use_blocks(q);
    cr_shared_finish(q->area, q->shared_seq);
    q->done = true;
    unlink_active(q);
    return true;
}

/* A collective on a comm that is one node, of blocks that fit, goes through shared
 * memory when asked for or chosen; every rank decides alike (same size, same area). */
static bool start_shared(cr_request *q, bool asked, size_t largest)
{
    const cr_node_area *a = cr_module_node_area(q->c);
    if (!asked || !cr_shared_fits(a, cr_comm_size(q->c), largest))
        return false;
    q->area = a;
    q->shared_seq = ++q->st->shared_seq;
    memcpy(q->name, "shared", sizeof "shared"); /* no snprintf on a sub-microsecond path */
    return true;
}

/* Advance as far as completed messages allow. Returns true if anything moved. */
static bool step(cr_request *q)
{
    if (q->area)
        return !q->done && shared_step(q);
    bool moved = false;
    while (!q->done) {
        if (q->round >= nrounds(q)) {
            if (q->is_reduce) {
                reduce_schedule_done(q);
            } else {
                copy_own_block(q); /* one rank: no round posted it */
                q->done = true;
            }
            moved = true;
            continue;
        }
        const cr_red_schedule *rp = q->in_fixup ? q->fixup : q->schedule;
        if (!q->posted) {
            q->nmreqs = 0;
            if (q->is_reduce)
                post_reduce_round(q, rp);
            else
                post_gather_round(q);
            q->posted = true;
        }
        if (!cr_module_chan_testall(q->c, q->st->ch, q->mreqs, (size_t)q->nmreqs))
            break;
        if (q->is_reduce)
            finish_reduce_round(q, rp);
        else
            unpack_gather_round(q);
        q->posted = false;
        q->round++;
        moved = true;
    }
    if (q->done)
        unlink_active(q);
    return moved;
}

/* The event loop's poll: advance every active collective of the comm. */
static int coll_poll(cr_comm *c, void *state)
{
    (void)c;
    coll_state *st = state;
    if (!st->active)
        return -1;
    int moved = 0;
    cr_request *q = st->active;
    while (q) {
        cr_request *next = q->next; /* step may unlink q */
        moved += step(q);
        q = next;
    }
    return moved;
}


/* ---------------------------------------------------------------- schedule cache */

/* A schedule depends only on the algorithm, its ports and the comm's size and rank, so
 * each is built once per comm, on first use. */
#define CACHE_PORTS 65
typedef struct cr_coll_cache {
    cr_red_schedule red[4][CACHE_PORTS];
    signed char red_state[4][CACHE_PORTS]; /* 0 not built, 1 built, -1 does not exist */
    cr_red_schedule bcast;
    bool bcast_built;
    cr_ag_schedule ag[5];
    signed char ag_state[5];
} cr_coll_cache;

static coll_state *state_of(cr_comm *c);
static void free_buffers(cr_request *q);

static cr_coll_cache *cache_of(cr_comm *c)
{
    coll_state *st = state_of(c);
    if (!st->cache)
        st->cache = cr_xcalloc(1, sizeof *st->cache);
    return st->cache;
}

/* The schedule, or NULL where the algorithm does not exist for this P (dissemination). */
static const cr_red_schedule *cached_reduce_schedule(cr_comm *c, cr_allreduce_algo algo, int n)
{
    cr_coll_cache *k = cache_of(c);
    int port = n >= 0 && n < CACHE_PORTS ? n : 0;
    if (k->red_state[algo][port] == 0)
        k->red_state[algo][port] =
            cr_schedule_allreduce(&k->red[algo][port], algo, cr_comm_size(c), cr_comm_rank(c), n) ? 1 : -1;
    return k->red_state[algo][port] > 0 ? &k->red[algo][port] : NULL;
}

static const cr_red_schedule *cached_bcast_schedule(cr_comm *c)
{
    cr_coll_cache *k = cache_of(c);
    if (!k->bcast_built) {
        cr_schedule_bcast(&k->bcast, cr_comm_size(c), cr_comm_rank(c));
        k->bcast_built = true;
    }
    return &k->bcast;
}

/* The schedule, or NULL where the algorithm does not apply to this P. */
static const cr_ag_schedule *cached_gather_schedule(cr_comm *c, cr_allgather_algo algo)
{
    cr_coll_cache *k = cache_of(c);
    if (k->ag_state[algo] == 0)
        k->ag_state[algo] = cr_schedule_allgather(&k->ag[algo], algo, cr_comm_size(c), cr_comm_rank(c)) ? 1 : -1;
    return k->ag_state[algo] > 0 ? &k->ag[algo] : NULL;
}

static void free_cache(coll_state *st)
{
    cr_coll_cache *k = st->cache;
    if (!k)
        return;
    for (int a = 0; a < 4; a++)
        for (int n = 0; n < CACHE_PORTS; n++)
            if (k->red_state[a][n] > 0)
                cr_red_schedule_free(&k->red[a][n]);
    if (k->bcast_built)
        cr_red_schedule_free(&k->bcast);
    for (int a = 0; a < 5; a++)
        if (k->ag_state[a] > 0)
            cr_ag_schedule_free(&k->ag[a]);
    free(k);
    st->cache = NULL;
}

static void coll_destroy(cr_comm *c, void *state)
{
    coll_state *st = state;
    int active = 0;
    for (cr_request *q = st->active; q; q = q->next)
        active++;
    if (active)
        cr_fatal("cr_comm_destroy: %d collective(s) started on this comm never completed; finish "
                 "them with cr_request_wait or cr_request_test first", active);
    cr_module_chan_close(c, st->ch);
    free_cache(st);
    if (st->spare)
        free_buffers(st->spare);
    free(st);
}

static const cr_module_type coll_module = {
    .name = "collectives",
    .poll = coll_poll,
    .destroy = coll_destroy,
};

/* Attach on first use: every rank starts its first collective in the same order. */
static coll_state *state_of(cr_comm *c)
{
    bool fresh;
    coll_state *st = cr_module_state_or_new(c, &coll_module, sizeof *st, &fresh);
    if (fresh)
        st->ch = cr_module_chan_open(c);
    return st;
}

/* ---------------------------------------------------------------- requests */

static void free_buffers(cr_request *q)
{
    free(q->mreqs);
    free(q->slots);
    free(q->stage);
    free(q->sizes);
    free(q->offsets);
    free(q->pack);
    free(q);
}

/* A finished request is kept, buffers and all, for the next one to start. */
static void free_request(cr_request *q)
{
    coll_state *st = q->st;
    if (st->spare)
        free_buffers(st->spare);
    st->spare = q;
}

static void check_caller(cr_comm *c, const char *what)
{
    if (cr_module_in_handler(c))
        cr_fatal("%s was called from inside a handler; call it from the main program", what);
}

static cr_request *new_request(cr_comm *c, bool is_reduce)
{
    coll_state *st = state_of(c);
    cr_request *q = st->spare;
    if (q) {
        st->spare = NULL;
        cr_request kept = *q;
        *q = (cr_request){.mreqs = kept.mreqs, .cap_mreqs = kept.cap_mreqs,
                          .slots = kept.slots, .slots_cap = kept.slots_cap,
                          .stage = kept.stage, .stage_cap = kept.stage_cap,
                          .sizes = kept.sizes, .offsets = kept.offsets,
                          .pack = kept.pack, .pack_cap = kept.pack_cap};
    } else {
        q = cr_xcalloc(1, sizeof *q);
    }
    q->c = c;
    q->st = st;
    q->is_reduce = is_reduce;
    q->tag = (int)(st->seq++ % TAG_SPACE);
    q->next = st->active;
    if (q->next)
        q->next->prev = q;
    st->active = q;
    return q;
}

bool cr_request_test(cr_request **req)
{
    cr_request *q = *req;
    check_caller(q->c, "cr_request_test");
    if (!q->done) {
        step(q);
        if (!q->done)
            cr_progress(q->c);
    }
    if (!q->done)
        return false;
    free_request(q);
    *req = NULL;
    return true;
}

static bool request_done(cr_comm *c, void *arg)
{
    cr_request *q = arg;
    if (step(q))
        cr_module_note_work(c);
    return q->done;
}

void cr_request_wait(cr_request **req)
{
    cr_request *q = *req;
    check_caller(q->c, "cr_request_wait");
    /* A short collective finishes within microseconds: test it directly before
     * paying for event-loop iterations. */
    for (int spin = 0; spin < WAIT_SPINS && !q->done; spin++)
        step(q);
    if (!q->done) {
        if (cr_module_busy(q->c))
            cr_fatal("cr_request_wait was called while the runtime is already waiting");
        char why[64];
        snprintf(why, sizeof why, "cr_request_wait (%s)", q->name);
        cr_module_wait(q->c, request_done, q, why);
    }
    free_request(q);
    *req = NULL;
}

/* ---------------------------------------------------------------- allreduce */

static bool is_float(cr_dtype t)
{
    return t == CR_FLOAT || t == CR_DOUBLE;
}

static void schedule_reduce(cr_request *q, cr_allreduce_algorithm algo, int ports)
{
    cr_comm *c = q->c;
    if (algo == CR_ALLREDUCE_DISSEMINATION) {
        int n = ports > 0 ? ports : cr_dissem_smallest_n(cr_comm_size(c), 8);
        if (n > 0 && (q->schedule = cached_reduce_schedule(c, CR_SCHEDULE_AR_DISSEM, n))) {
            snprintf(q->name, sizeof q->name, "dissemination(%d)", n);
            return;
        }
        algo = CR_ALLREDUCE_BUTTERFLY; /* no adaption for this (p, n) */
    }
    if (algo == CR_ALLREDUCE_BRUCK) {
        int n = ports > 0 ? ports : 1;
        q->schedule = cached_reduce_schedule(c, CR_SCHEDULE_AR_BRUCK, n);
        snprintf(q->name, sizeof q->name, "bruck(%d)", n);
        return;
    }
    q->schedule = cached_reduce_schedule(c, algo == CR_ALLREDUCE_BINOMIAL ? CR_SCHEDULE_AR_TREE : CR_SCHEDULE_AR_PAIRWISE, 0);
    snprintf(q->name, sizeof q->name, "%s", cr_allreduce_name(algo));
}

cr_request *cr_iallreduce(cr_comm *c, const void *send, void *recv, size_t count, cr_dtype type,
                          cr_op op, const cr_coll_opts *opts)
{
    check_caller(c, "cr_iallreduce");
    if (type < CR_INT32 || type > CR_DOUBLE)
        cr_fatal("cr_iallreduce: datatype %d is not valid", (int)type);
    if (op < CR_OP_SUM || op > CR_OP_USER || op == CR_OP_FIRST || op == CR_OP_LAST)
        cr_fatal("cr_iallreduce: operation %d is not valid (sum, min, max, band, bor or user)",
                 (int)op);
    if ((op == CR_OP_BAND || op == CR_OP_BOR) && is_float(type))
        cr_fatal("cr_iallreduce: %s is not defined for floating-point data",
                 op == CR_OP_BAND ? "band" : "bor");
    if (op == CR_OP_USER && (!opts || !opts->combine))
        cr_fatal("cr_iallreduce: CR_OP_USER needs cr_coll_opts.combine");
    if (count > 0 && (!send || !recv))
        cr_fatal("cr_iallreduce: %zu elements but a NULL buffer", count);
    cr_request *q = new_request(c, true);
    q->count = count;
    q->type = type;
    q->op = op;
    q->fn = opts ? opts->combine : NULL;
    q->user = opts ? opts->user : NULL;
    q->recv = recv;
    q->vec_bytes = count * dtype_size(type);

    int algo = opts && opts->algorithm ? opts->algorithm : (int)cr_comm_config(c)->allreduce;
    int ports = opts && opts->ports ? opts->ports : (int)cr_comm_config(c)->allreduce_ports;
    if (algo < CR_ALLREDUCE_AUTO || algo > CR_ALLREDUCE_SHARED)
        cr_fatal("cr_iallreduce: algorithm %d is not valid", algo);
    bool exact = op != CR_OP_USER && !(is_float(type) && op == CR_OP_SUM);
    bool shared_asked = algo == CR_ALLREDUCE_SHARED || algo == CR_ALLREDUCE_AUTO;
    if (algo == CR_ALLREDUCE_SHARED)
        algo = CR_ALLREDUCE_AUTO;
    if (start_shared(q, shared_asked, q->vec_bytes)) {
        grow_bytes(&q->slots, &q->slots_cap, q->vec_bytes + 1);
        copy_bytes(q->slots, send, q->vec_bytes);
        step(q);
        return q;
    }
    if (algo == CR_ALLREDUCE_AUTO)
        algo = cr_allreduce_auto(cr_comm_size(c), q->vec_bytes, exact, &ports);
    schedule_reduce(q, (cr_allreduce_algorithm)algo, ports);
    /* Dissemination and Bruck combine in a different order on every rank: where that
     * can change the rounding, rank 0's result is broadcast. */
    bool rotated = !strncmp(q->name, "dissemination", 13) || !strncmp(q->name, "bruck", 5);
    q->needs_fixup = rotated && cr_comm_size(c) > 1 && !exact;
    if (q->needs_fixup) {
        q->fixup = cached_bcast_schedule(c);
        strncat(q->name, "+bcast", sizeof q->name - strlen(q->name) - 1);
    }
    grow_bytes(&q->slots, &q->slots_cap, (size_t)q->schedule->nslots * q->vec_bytes + 1);
    /* the caller keeps send valid until the request completes: a schedule that only
     * reads its input reads it there, without a copy */
    q->input = q->schedule->keeps_input && q->vec_bytes ? send : NULL;
    if (!q->input)
        copy_bytes(q->slots, send, q->vec_bytes);
    if (cr_comm_config(c)->verbosity >= 2 && cr_comm_rank(c) == 0)
        fprintf(stderr, "courier: allreduce of %zu bytes on %d ranks: %s\n", q->vec_bytes,
                cr_comm_size(c), q->name);
    step(q);
    return q;
}

void cr_allreduce(cr_comm *c, const void *send, void *recv, size_t count, cr_dtype type, cr_op op,
                  const cr_coll_opts *opts)
{
    cr_request *q = cr_iallreduce(c, send, recv, count, type, op, opts);
    cr_request_wait(&q);
}

/* ---------------------------------------------------------------- allgather(v) */

static const cr_allgather_algo schedule_of[] = {
    [CR_ALLGATHER_RING] = CR_SCHEDULE_AG_RING,
    [CR_ALLGATHER_NEIGHBOR] = CR_SCHEDULE_AG_NEIGHBOR,
    [CR_ALLGATHER_RECDOUBLING] = CR_SCHEDULE_AG_RECDOUBLE,
    [CR_ALLGATHER_BRUCK] = CR_SCHEDULE_AG_BRUCK,
    [CR_ALLGATHER_SPARBIT] = CR_SCHEDULE_AG_SPARBIT,
};

/* A gather request with room for every rank's block size and offset, which the
 * caller fills in before start_gather. */
static cr_request *new_gather(cr_comm *c, void *recv, bool layout_given, const char *what)
{
    check_caller(c, what);
    if (!recv || !layout_given)
        cr_fatal("%s: NULL receive buffer, sizes or offsets", what);
    cr_request *q = new_request(c, false);
    q->recv = recv;
    if (!q->sizes) { /* kept with a recycled request: P does not change */
        q->sizes = cr_xmalloc((size_t)cr_comm_size(c) * sizeof *q->sizes);
        q->offsets = cr_xmalloc((size_t)cr_comm_size(c) * sizeof *q->offsets);
    }
    return q;
}

static cr_request *start_gather(cr_request *q, const void *send, const cr_coll_opts *opts,
                                const char *what)
{
    cr_comm *c = q->c;
    int p = cr_comm_size(c);
    const size_t *sizes = q->sizes, *offsets = q->offsets;
    size_t largest = 0;
    for (int r = 0; r < p; r++)
        largest = sizes[r] > largest ? sizes[r] : largest;

    int algo = opts && opts->algorithm ? opts->algorithm : (int)cr_comm_config(c)->allgather;
    if (algo < CR_ALLGATHER_AUTO || algo > CR_ALLGATHER_SHARED)
        cr_fatal("%s: algorithm %d is not valid", what, algo);
    bool shared_asked = algo == CR_ALLGATHER_SHARED || algo == CR_ALLGATHER_AUTO;
    if (algo == CR_ALLGATHER_SHARED)
        algo = CR_ALLGATHER_AUTO;
    char *mine_at = q->recv + offsets[cr_comm_rank(c)];
    if (start_shared(q, shared_asked, largest)) {
        if (sizes[cr_comm_rank(c)] && send != mine_at)
            q->own = send;
        step(q);
        return q;
    }
    if (algo == CR_ALLGATHER_AUTO)
        algo = cr_allgather_auto(p, largest);
    if (!(q->ag = cached_gather_schedule(c, schedule_of[algo]))) {
        algo = CR_ALLGATHER_BRUCK; /* neighbor needs even p, recursive doubling 2^k */
        q->ag = cached_gather_schedule(c, CR_SCHEDULE_AG_BRUCK);
    }
    snprintf(q->name, sizeof q->name, "%s", cr_allgather_name((cr_allgather_algorithm)algo));
    char *mine = q->recv + offsets[cr_comm_rank(c)];
    if (sizes[cr_comm_rank(c)] && send != mine)
        q->own = send;
    if (cr_comm_config(c)->verbosity >= 2 && cr_comm_rank(c) == 0)
        fprintf(stderr, "courier: %s of up to %zu bytes per rank on %d ranks: %s\n", what,
                largest, p, q->name);
    step(q);
    return q;
}

cr_request *cr_iallgatherv(cr_comm *c, const void *send, void *recv, const size_t *sizes,
                           const size_t *offsets, const cr_coll_opts *opts)
{
    cr_request *q = new_gather(c, recv, sizes && offsets, "cr_iallgatherv");
    memcpy(q->sizes, sizes, (size_t)cr_comm_size(c) * sizeof *sizes);
    memcpy(q->offsets, offsets, (size_t)cr_comm_size(c) * sizeof *offsets);
    return start_gather(q, send, opts, "cr_iallgatherv");
}

cr_request *cr_iallgather(cr_comm *c, const void *send, size_t bytes, void *recv,
                          const cr_coll_opts *opts)
{
    cr_request *q = new_gather(c, recv, true, "cr_iallgather");
    for (int r = 0; r < cr_comm_size(c); r++) {
        q->sizes[r] = bytes;
        q->offsets[r] = (size_t)r * bytes;
    }
    return start_gather(q, send, opts, "cr_iallgather");
}

void cr_allgather(cr_comm *c, const void *send, size_t bytes, void *recv, const cr_coll_opts *opts)
{
    cr_request *q = cr_iallgather(c, send, bytes, recv, opts);
    cr_request_wait(&q);
}

void cr_allgatherv(cr_comm *c, const void *send, void *recv, const size_t *sizes,
                   const size_t *offsets, const cr_coll_opts *opts)
{
    cr_request *q = cr_iallgatherv(c, send, recv, sizes, offsets, opts);
    cr_request_wait(&q);
}

/* ---------------------------------------------------------------- automatic choice */

/* Measured with scripts/coll_sweep.sh (apps/coll_bench at 2 to 8 ranks) on the
 * development machine; docs/collectives.md has the table behind these rules. */
cr_allreduce_algorithm cr_allreduce_auto(int p, size_t bytes, bool exact, int *ports)
{
    *ports = 0;
    /* Small integer (or min/max) vectors: one dissemination round per power of
     * (n+1) beats the butterfly's extra rounds for leftover ranks. Floating-point
     * sums would pay the closing broadcast, so they stay with the butterfly. */
    if (exact && bytes <= 64 && p >= 4 && cr_dissem_smallest_n(p, 8) > 0)
        return CR_ALLREDUCE_DISSEMINATION;
    return CR_ALLREDUCE_BUTTERFLY;
}

cr_allgather_algorithm cr_allgather_auto(int p, size_t bytes)
{
    bool power_of_two = (p & (p - 1)) == 0;
    if (bytes > 32768)
        return p >= 8 && p % 2 == 0 ? CR_ALLGATHER_NEIGHBOR : CR_ALLGATHER_RING;
    if (power_of_two)
        return CR_ALLGATHER_RECDOUBLING;
    return bytes <= 64 ? CR_ALLGATHER_SPARBIT : CR_ALLGATHER_BRUCK;
}

/* ---------------------------------------------------------------- configuration */

int cr_coll_config_from_env(cr_config *cfg, char *err, size_t errlen)
{
    cr_config c = *cfg;
    const char *allreduce = getenv("COURIER_ALLREDUCE");
    if (allreduce) {
        char name[32];
        unsigned ports = 0;
        size_t len = strcspn(allreduce, ":");
        snprintf(name, sizeof name, "%.*s", (int)(len < 31 ? len : 31), allreduce);
        bool ok = len < 31 && cr_allreduce_parse(name, &c.allreduce, NULL, 0) == 0;
        if (ok && allreduce[len] == ':') {
            char *end;
            unsigned long n = strtoul(allreduce + len + 1, &end, 10);
            ok = (c.allreduce == CR_ALLREDUCE_DISSEMINATION || c.allreduce == CR_ALLREDUCE_BRUCK) &&
                 isdigit((unsigned char)allreduce[len + 1]) && !*end && n >= 1 && n <= 64;
            ports = (unsigned)n;
        }
        if (!ok) {
            cr_set_error(err, errlen, "COURIER_ALLREDUCE='%s' is not valid: expected auto, binomial, "
                      "butterfly, dissemination[:n], bruck[:n] with n from 1 to 64, or shared",
                      allreduce);
            return -1;
        }
        c.allreduce_ports = ports;
    }
    const char *allgather = getenv("COURIER_ALLGATHER");
    if (allgather && cr_allgather_parse(allgather, &c.allgather, NULL, 0)) {
        cr_set_error(err, errlen, "COURIER_ALLGATHER='%s' is not valid: expected auto, ring, neighbor, "
                  "recdoubling, bruck, sparbit or shared", allgather);
        return -1;
    }
    *cfg = c;
    return 0;
}

int cr_coll_config_validate(const cr_config *cfg, char *err, size_t errlen)
{
    if (cfg->allreduce < CR_ALLREDUCE_AUTO || cfg->allreduce > CR_ALLREDUCE_SHARED ||
        cfg->allreduce_ports > 64) {
        cr_set_error(err, errlen, "allreduce=%d (ports %u) is not valid: expected a "
                  "cr_allreduce_algorithm and at most 64 ports", (int)cfg->allreduce, cfg->allreduce_ports);
        return -1;
    }
    if (cfg->allgather < CR_ALLGATHER_AUTO || cfg->allgather > CR_ALLGATHER_SHARED) {
        cr_set_error(err, errlen, "allgather=%d is not valid: expected a cr_allgather_algorithm",
                  (int)cfg->allgather);
        return -1;
    }
    return 0;
}
