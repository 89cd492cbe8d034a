/* The path between the ranks of one node (mpi_shm.h, docs/shared_memory.md).
 *
 * Each rank allocates, in one MPI_Win_allocate_shared segment, a ring for every other
 * rank of its node to send to it, and attaches as the sender to its place in each
 * peer's segment. Copying a whole block into a slot, rather than appending records
 * straight into shared memory, keeps the append buffers private to the sender's core
 * (the lines it writes records into are never read by another core), and hands the
 * block back at once: the next buffer the sender fills is the one still in its cache.
 *
 * The order of one pair's blocks is kept: a block waits in the queue while an earlier
 * block of its pair waits there. A block larger than a slot (a record above the buffer
 * size, or a buffer that grew while its flush was deferred) travels in pieces, one
 * slot each, and the receiver assembles it before it hands it over; every slot of it
 * is released as soon as it is copied, so a large block never waits for its ring to
 * empty (a rank whose handlers wait holds one slot of a ring at most, and a block that
 * waited for that slot would wait for ever). */
#include "transport/mpi_shm.h"

#include "common/fatal.h"
#include "transport/ring.h"

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { ALIGN = 64 };

/* A slot's tag: the sender's phase parity, and whether more pieces of its block follow. */
enum { TAG_PARITY = 1, TAG_MORE = 2 };

typedef struct queued {
    char *data;
    size_t len, cap;
    size_t put; /* bytes of it already in the ring (the pieces of a large block) */
    int peer;
    unsigned tag;
} queued;

/* A large block being assembled from its pieces. */
typedef struct assembly {
    char *data;
    size_t len, cap;
} assembly;

struct shm_node {
    cr_data_plane plane; /* first: the plane's functions find the node from it */
    unsigned parity;     /* the phase this rank sends and receives in */
    MPI_Comm node;
    MPI_Win win;
    int npeers;         /* the other ranks of the node */
    int *peer_of;       /* comm rank -> peer index, or -1 */
    int *rank_of;       /* peer index -> comm rank */
    cr_ring *out, *in;  /* per peer: its ring for this rank's blocks, and this rank's for its */
    assembly *asm_of;   /* per peer: its large block being assembled */
    int *nqueued;       /* per peer: blocks of it in the queue */
    unsigned *blocked;  /* per peer: the stamp of the queue walk that found it blocked */
    unsigned stamp;
    queued *queue;      /* blocks waiting for a slot, in send order */
    int nqueue, queue_cap;
    int next_peer;      /* where the next poll starts */
    int depth;          /* deliveries in progress, one inside the other */
    char **copies;      /* per level of nesting below the first: a copy of its block */
    int ncopies;
    unsigned nslots;
    size_t slot_bytes;
    uint64_t sends;
    cr_node_area area;  /* after the rings in every rank's segment */
    char **area_base;
};

static const cr_data_ops shm_ops;

static size_t ring_stride(unsigned nslots, size_t slot_bytes)
{
    size_t b = cr_ring_bytes(nslots, slot_bytes);
    return (b + ALIGN - 1) / ALIGN * ALIGN;
}

/* The rank's node: MPI's shared-memory node, cut into virtual nodes of node_size of
 * its ranks when asked (the same cut as cr_layout_create_cut), so a one-machine job
 * has ranks on both paths and a virtual node never spans two real ones. */
static MPI_Comm split_node(MPI_Comm comm, unsigned node_size)
{
    int rank, local;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm shared, node;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared);
    if (node_size == 0)
        return shared;
    MPI_Comm_rank(shared, &local); /* ordered by rank: the key above */
    MPI_Comm_split(shared, local / (int)node_size, rank, &node);
    MPI_Comm_free(&shared);
    return node;
}

/* Slots per pair the budget allows: every one of the npeers senders gets as many. */
static unsigned slots_for(const shm_opts *o, int npeers)
{
    size_t per_pair = o->budget_bytes / (size_t)npeers;
    unsigned n = 0;
    while (n < o->max_slots && n < CR_RING_MAX_SLOTS &&
           ring_stride(n + 1, o->slot_bytes) + ALIGN <= per_pair)
        n++;
    return n;
}

static char *aligned(void *p)
{
    uintptr_t a = (uintptr_t)p;
    return (char *)p + ((ALIGN - a % ALIGN) % ALIGN);
}

static void map_peers(shm_node *s, MPI_Comm comm, int me)
{
    int size;
    MPI_Comm_size(comm, &size);
    MPI_Group gnode, gcomm;
    MPI_Comm_group(s->node, &gnode);
    MPI_Comm_group(comm, &gcomm);
    int g = s->npeers + 1;
    int *local = cr_xmalloc((size_t)g * sizeof *local);
    int *global = cr_xmalloc((size_t)g * sizeof *global);
    for (int i = 0; i < g; i++)
        local[i] = i;
    MPI_Group_translate_ranks(gnode, g, local, gcomm, global);
    s->peer_of = cr_xmalloc((size_t)size * sizeof *s->peer_of);
    for (int r = 0; r < size; r++)
        s->peer_of[r] = -1;
    s->rank_of = cr_xmalloc((size_t)s->npeers * sizeof *s->rank_of);
    for (int i = 0; i < g; i++) {
        if (i == me)
            continue;
        int p = i < me ? i : i - 1;
        s->rank_of[p] = global[i];
        s->peer_of[global[i]] = p;
    }
    free(local);
    free(global);
    MPI_Group_free(&gnode);
    MPI_Group_free(&gcomm);
}

/* This rank's rings (one per sender) are set up before any sender attaches: the
 * barrier between them orders the two. */
static void attach_rings(shm_node *s, char *mine, int me)
{
    size_t stride = ring_stride(s->nslots, s->slot_bytes);
    for (int p = 0; p < s->npeers; p++)
        cr_ring_init(&s->in[p], mine + (size_t)p * stride, s->nslots, s->slot_bytes);
    MPI_Win_sync(s->win);
    MPI_Barrier(s->node);
    MPI_Win_sync(s->win);
    for (int q = 0; q < s->npeers + 1; q++) {
        if (q == me)
            continue;
        MPI_Aint bytes;
        int unit;
        void *base;
        MPI_Win_shared_query(s->win, q, &bytes, &unit, &base);
        int slot = me < q ? me : me - 1; /* this rank's place among q's senders */
        int p = q < me ? q : q - 1;
        cr_ring_attach(&s->out[p], aligned(base) + (size_t)slot * stride, s->nslots,
                       s->slot_bytes);
    }
}

shm_node *shm_node_create(MPI_Comm comm, const shm_opts *opts)
{
    MPI_Comm node = split_node(comm, opts->node_size);
    int g, me;
    MPI_Comm_size(node, &g);
    MPI_Comm_rank(node, &me);
    /* The budget and slot size agreed over the node, so every pair has the same rings. */
    unsigned long long mine[2] = {opts->budget_bytes, opts->slot_bytes}, agreed[2];
    MPI_Allreduce(mine, agreed, 2, MPI_UNSIGNED_LONG_LONG, MPI_MIN, node);
    shm_opts o = *opts;
    o.budget_bytes = (size_t)agreed[0];
    o.slot_bytes = (size_t)agreed[1];
    unsigned nslots = g > 1 && o.slot_bytes > 0 ? slots_for(&o, g - 1) : 0;
    if (nslots < 2) {
        MPI_Comm_free(&node);
        return NULL;
    }
    shm_node *s = cr_xcalloc(1, sizeof *s);
    s->plane.ops = &shm_ops;
    s->node = node;
    s->npeers = g - 1;
    s->nslots = nslots;
    s->slot_bytes = o.slot_bytes;
    size_t rings = (size_t)s->npeers * ring_stride(nslots, o.slot_bytes);
    size_t bytes = rings + CR_NODE_AREA_BYTES + ALIGN;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    void *base;
    MPI_Win_allocate_shared((MPI_Aint)bytes, 1, info, node, &base, &s->win);
    MPI_Info_free(&info);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, s->win);
    s->out = cr_xcalloc((size_t)s->npeers, sizeof *s->out);
    s->in = cr_xcalloc((size_t)s->npeers, sizeof *s->in);
    s->asm_of = cr_xcalloc((size_t)s->npeers, sizeof *s->asm_of);
    s->nqueued = cr_xcalloc((size_t)s->npeers, sizeof *s->nqueued);
    s->blocked = cr_xcalloc((size_t)s->npeers, sizeof *s->blocked);
    map_peers(s, comm, me);
    s->area_base = cr_xcalloc((size_t)g, sizeof *s->area_base);
    memset(aligned(base) + rings, 0, CR_NODE_AREA_BYTES);
    attach_rings(s, aligned(base), me);
    for (int q = 0; q < g; q++) {
        MPI_Aint qbytes;
        int unit;
        void *qbase;
        MPI_Win_shared_query(s->win, q, &qbytes, &unit, &qbase);
        s->area_base[q] = aligned(qbase) + rings;
    }
    s->area = (cr_node_area){.rank = me, .size = g, .base = s->area_base};
    return s;
}

void shm_node_destroy(shm_node *s)
{
    if (!s)
        return;
    if (s->nqueue > 0)
        cr_fatal("internal error: %d blocks still wait for a shared-memory slot at the end",
                 s->nqueue);
    MPI_Win_unlock_all(s->win);
    MPI_Win_free(&s->win);
    MPI_Comm_free(&s->node);
    free(s->peer_of);
    free(s->rank_of);
    free(s->area_base);
    free(s->out);
    free(s->in);
    for (int p = 0; p < s->npeers; p++) {
        if (s->asm_of[p].len > 0)
            cr_fatal("internal error: a large block from rank %d was not complete at the end",
                     s->rank_of[p]);
        free(s->asm_of[p].data);
    }
    free(s->asm_of);
    free(s->nqueued);
    free(s->blocked);
    free(s->queue);
    for (int k = 0; k < s->ncopies; k++)
        free(s->copies[k]);
    free(s->copies);
    free(s);
}

static shm_node *node_of(const cr_data_plane *d)
{
    return (shm_node *)((char *)d - offsetof(shm_node, plane));
}

static bool reaches(const cr_data_plane *d, int dest)
{
    return node_of(d)->peer_of[dest] >= 0;
}

/* ---------------------------------------------------------------- sending */

/* Put what fits of block e into its pair's ring, piece by piece; true once all of it
 * is there. */
static bool put_pieces(shm_node *s, queued *e)
{
    do {
        size_t piece = e->len - e->put < s->slot_bytes ? e->len - e->put : s->slot_bytes;
        bool more = e->put + piece < e->len;
        if (!cr_ring_put(&s->out[e->peer], e->data + e->put, piece, e->tag | (more ? TAG_MORE : 0)))
            return false;
        e->put += piece;
    } while (e->put < e->len);
    s->sends++;
    return true;
}

static void enqueue(shm_node *s, const queued *e)
{
    if (s->nqueue == s->queue_cap) {
        s->queue_cap = s->queue_cap ? 2 * s->queue_cap : 8;
        s->queue = cr_xrealloc(s->queue, (size_t)s->queue_cap * sizeof *s->queue);
    }
    s->queue[s->nqueue++] = *e;
    s->nqueued[e->peer]++;
}

static bool send(cr_data_plane *d, int dest, char *data, size_t len, size_t cap)
{
    shm_node *s = node_of(d);
    queued e = {.data = data, .len = len, .cap = cap, .peer = s->peer_of[dest],
                .tag = s->parity & TAG_PARITY};
    if (s->nqueued[e.peer] == 0 && put_pieces(s, &e))
        return true;
    enqueue(s, &e);
    return false;
}

/* The node never refuses a block: what does not fit waits in the queue (and takes
 * one of the far plane's slots meanwhile, near_far.c). */
static int slots_free(cr_data_plane *d)
{
    (void)d;
    return INT_MAX;
}

static int held(cr_data_plane *d)
{
    return node_of(d)->nqueue;
}

/* Walk the queue in send order; a pair found blocked stays blocked for the rest of the
 * walk, so its later blocks cannot pass its earlier ones. */
static int complete(cr_data_plane *d, cr_give_back_fn give_back, void *arg)
{
    shm_node *s = node_of(d);
    if (s->nqueue == 0)
        return 0;
    unsigned stamp = ++s->stamp;
    int kept = 0, done = 0;
    for (int i = 0; i < s->nqueue; i++) {
        queued e = s->queue[i];
        if (s->blocked[e.peer] == stamp || !put_pieces(s, &e)) {
            s->blocked[e.peer] = stamp;
            s->queue[kept++] = e;
            continue;
        }
        s->nqueued[e.peer]--;
        done++;
        give_back(arg, e.data, e.cap);
    }
    s->nqueue = kept;
    return done;
}

/* ---------------------------------------------------------------- receiving */

/* A delivery inside another (a handler that waits and polls again) gets a copy, and
 * its slot goes back at once: so a rank holds at most one slot of a ring however deep
 * its handlers wait, and a sender always finds a slot once the outermost delivery
 * returns. Copies: one buffer per level of nesting, kept. */
static const char *copy_for_level(shm_node *s, const char *data, size_t len)
{
    int level = s->depth - 1;
    if (level >= s->ncopies) {
        s->copies = cr_xrealloc(s->copies, (size_t)(level + 1) * sizeof *s->copies);
        while (s->ncopies <= level)
            s->copies[s->ncopies++] = cr_xmalloc(s->slot_bytes);
    }
    memcpy(s->copies[level], data, len);
    return s->copies[level];
}

/* A piece of peer p's large block, copied into its assembly (the slot is released
 * right after, before the block is handed over). */
static void add_piece(shm_node *s, int p, const char *piece, size_t len)
{
    assembly *a = &s->asm_of[p];
    if (a->len + len > a->cap) {
        a->cap = a->cap * 2 > a->len + len ? a->cap * 2 : a->len + len;
        a->data = cr_xrealloc(a->data, a->cap);
    }
    memcpy(a->data + a->len, piece, len);
    a->len += len;
}

/* Hand over peer p's assembled block. The assembly is detached meanwhile, so a
 * delivery that polls again assembles the next large block in a buffer of its own;
 * one buffer up to 1 MiB is kept for the next. */
static void deliver_assembled(shm_node *s, int p, cr_deliver_fn deliver, void *arg)
{
    assembly whole = s->asm_of[p];
    s->asm_of[p] = (assembly){0};
    deliver(arg, s->rank_of[p], whole.data, whole.len);
    if (!s->asm_of[p].data && whole.cap <= ((size_t)1 << 20))
        s->asm_of[p] = (assembly){.data = whole.data, .cap = whole.cap};
    else
        free(whole.data);
}

/* One peer's blocks of this phase, in order, each handed over where it lies (or
 * copied, when nested) and its slot released once its delivery returns; a large
 * block's pieces are assembled first. */
static size_t drain(shm_node *s, int p, size_t budget, unsigned parity, cr_deliver_fn deliver,
                    void *arg)
{
    size_t got = 0;
    while (got < budget) {
        size_t len;
        unsigned slot_tag;
        const char *data = cr_ring_peek(&s->in[p], &len, &slot_tag);
        if (!data || (slot_tag & TAG_PARITY) != parity)
            break; /* empty, or the sender is already in the next phase */
        unsigned slot = cr_ring_take(&s->in[p]);
        if ((slot_tag & TAG_MORE) || s->asm_of[p].len > 0) {
            add_piece(s, p, data, len);
            cr_ring_release(&s->in[p], slot);
            if (!(slot_tag & TAG_MORE)) {
                deliver_assembled(s, p, deliver, arg);
                got++;
            }
            continue;
        }
        bool nested = s->depth++ > 0;
        if (nested) {
            data = copy_for_level(s, data, len);
            cr_ring_release(&s->in[p], slot);
        }
        deliver(arg, s->rank_of[p], data, len);
        if (!nested)
            cr_ring_release(&s->in[p], slot);
        s->depth--;
        got++;
    }
    return got;
}

static size_t poll(cr_data_plane *d, int budget, cr_deliver_fn deliver, void *arg)
{
    shm_node *s = node_of(d);
    if (budget <= 0)
        return 0;
    size_t got = 0;
    int start = s->next_peer;
    s->next_peer = (start + 1) % s->npeers;
    for (int k = 0; k < s->npeers && got < (size_t)budget; k++) {
        int p = (start + k) % s->npeers;
        got += drain(s, p, (size_t)budget - got, s->parity & TAG_PARITY, deliver, arg);
    }
    return got;
}

const cr_node_area *shm_area(const shm_node *s)
{
    return s ? &s->area : NULL;
}

static void next_phase(cr_data_plane *d)
{
    node_of(d)->parity ^= 1u;
}

static uint64_t shared_sends(const cr_data_plane *d)
{
    return node_of(d)->sends;
}

static const cr_data_ops shm_ops = {
    .slots_free = slots_free,
    .inflight = held,
    .reaches = reaches,
    .send = send,
    .complete = complete,
    .poll = poll,
    .next_phase = next_phase,
    .shared_sends = shared_sends,
};

cr_data_plane *shm_plane(shm_node *s)
{
    return s ? &s->plane : NULL;
}
