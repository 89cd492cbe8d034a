/* The MPI transport: what moves a rank's buffers in a real run.
 *
 * Sends: a fixed number of slots, each an MPI_Issend and the block it owns; when
 * every slot is busy the mailbox must wait, which bounds the memory a rank commits
 * to sends. Receives (docs/receive.md): probe mode matches one message at a time
 * with MPI_Improbe and receives it with MPI_Mrecv into a reusable buffer; prepost
 * mode keeps a ring of MPI_Irecv of small_max bytes posted and probes only for
 * large blocks. The tag carries the sender's barrier phase parity, and a rank
 * receives only its own phase's tags, so a block sent after a barrier is never
 * handled by a rank still inside it (at most two adjacent phases coexist). Between
 * the ranks of one node, this data plane is composed with the node's rings in shared
 * memory (mpi_shm.c, near_far.c); this file holds only what MPI does. */
#include "transport/mpi_transport.h"

#include "common/fatal.h"
#include "transport/mpi_node_mem.h"
#include "transport/mpi_shm.h"
#include "transport/near_far.h"
#include "transport/node_check.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { TAG_SMALL = 2, TAG_LARGE = 4, TAG_REPORT = 7 };
/* Receives kept posted in prepost mode. */
#define PREPOST_DEPTH 8
/* Largest pre-posted receive; bigger blocks use TAG_LARGE and a probe. */
#define PREPOST_MAX ((size_t)1 << 20)
/* Smallest slot of a shared-memory ring. */
#define SHM_MIN_SLOT ((size_t)4096)

typedef struct mpi_transport {
    cr_transport base;
    cr_data_plane plane;  /* MPI's own data plane */
    cr_data_plane *joined; /* it composed with the node's rings; NULL without them */
    MPI_Comm data;  /* blocks */
    MPI_Comm term;  /* termination waves */
    MPI_Comm ctrl;  /* blocking reductions, watchdog reports; modules duplicate it */
    unsigned parity;
    size_t small_max; /* largest block sent with TAG_SMALL (the same on all ranks) */
    bool prepost;

    /* send slots */
    int nslots, nfree, hiwater; /* slots [hiwater, nslots) have never been used */
    int *free_slots;            /* stack of free slot indices */
    MPI_Request *sreqs;         /* MPI_REQUEST_NULL when free */
    char **sdata;
    size_t *scap;
    int *completed;

    int machine_ranks; /* ranks of the comm on this machine (machine_ranks) */
    /* the rings to and from the other ranks of the node; NULL when off */
    shm_node *shm;

    /* probe mode: one buffer, grown to the largest message seen */
    char *rbuf;
    size_t rcap;
    /* prepost mode: a ring of receives of small_max bytes */
    int npost;
    MPI_Request *rreqs;
    char **rbufs;
    char **spares; /* receive buffers not posted: one per delivery in progress */
    int nspare, spare_cap;

    /* termination waves */
    MPI_Request wave;
    uint64_t wave_in[CR_WAVE_WORDS], wave_out[CR_WAVE_WORDS];

    /* watchdog reports */
    MPI_Request report;
    char report_buf[256];
    uint64_t reports;

    /* MPI_Finalize with this transport open (cr_transport_mpi_watch_finalize) */
    int finalize_key; /* MPI_KEYVAL_INVALID when not watching */
    bool watching;
    int world_rank;
    void (*describe)(void *arg, char *buf, size_t len);
    void *describe_arg;
} mpi_transport;

static mpi_transport *mt(cr_transport *t)
{
    return (mpi_transport *)t;
}

static mpi_transport *of_plane(const cr_data_plane *d)
{
    return (mpi_transport *)((char *)d - offsetof(mpi_transport, plane));
}

static int tag(const mpi_transport *m, int base)
{
    return base | (int)(m->parity & 1);
}

/* ---------------------------------------------------------------- sends */

static int slots_free(cr_data_plane *d)
{
    return of_plane(d)->nfree;
}

static int inflight(cr_data_plane *d)
{
    return of_plane(d)->nslots - of_plane(d)->nfree;
}

static bool send_block(cr_data_plane *d, int dest, char *data, size_t len, size_t cap)
{
    mpi_transport *m = of_plane(d);
    if (m->nfree == 0)
        cr_fatal("internal error: a send without a free slot");
    if (len > INT_MAX)
        cr_fatal("a send buffer to rank %d grew to %zu bytes, above the MPI limit of %d; "
                 "raise COURIER_MAX_INFLIGHT or lower COURIER_BUFFER_SIZE",
                 dest, len, INT_MAX);
    int s = m->free_slots[--m->nfree];
    if (s >= m->hiwater)
        m->hiwater = s + 1;
    m->sdata[s] = data;
    m->scap[s] = cap;
    bool large = m->prepost && len > m->small_max;
    MPI_Issend(data, (int)len, MPI_BYTE, dest, tag(m, large ? TAG_LARGE : TAG_SMALL), m->data,
               &m->sreqs[s]);
    return false;
}

static int complete(cr_data_plane *d, cr_give_back_fn give_back, void *arg)
{
    mpi_transport *m = of_plane(d);
    if (m->nfree == m->nslots)
        return 0;
    int ndone = 0;
    MPI_Testsome(m->hiwater, m->sreqs, &ndone, m->completed, MPI_STATUSES_IGNORE);
    if (ndone == MPI_UNDEFINED)
        return 0;
    for (int i = 0; i < ndone; i++) {
        int s = m->completed[i];
        give_back(arg, m->sdata[s], m->scap[s]);
        m->sdata[s] = NULL;
        m->free_slots[m->nfree++] = s;
    }
    while (m->hiwater > 0 && m->sreqs[m->hiwater - 1] == MPI_REQUEST_NULL)
        m->hiwater--;
    return ndone;
}

/* ---------------------------------------------------------------- receives */

static void post(mpi_transport *m, int k)
{
    MPI_Irecv(m->rbufs[k], (int)m->small_max, MPI_BYTE, MPI_ANY_SOURCE, tag(m, TAG_SMALL),
              m->data, &m->rreqs[k]);
}

/* Cancel the pre-posted receives. Only called when no message of their phase can
 * still arrive (a barrier just ended, or the comm is being destroyed). */
static void cancel_posted(mpi_transport *m)
{
    for (int k = 0; k < m->npost; k++) {
        MPI_Status st;
        int cancelled = 0;
        MPI_Cancel(&m->rreqs[k]);
        MPI_Wait(&m->rreqs[k], &st);
        MPI_Test_cancelled(&st, &cancelled);
        if (!cancelled)
            cr_fatal("internal error: a pre-posted receive matched a message of a finished phase");
    }
}

static void next_phase(cr_data_plane *d)
{
    mpi_transport *m = of_plane(d);
    if (m->npost)
        cancel_posted(m);
    m->parity ^= 1u;
    for (int k = 0; k < m->npost; k++)
        post(m, k);
}

/* Receive and deliver one matched message of any size. The delivery may poll again
 * (a reentrant handler waiting over the cap, src/mailbox/flow_waits.c), so the
 * receive buffer is detached while it is delivered: a nested receive takes another. */
static void receive_matched(mpi_transport *m, MPI_Message *msg, MPI_Status *status,
                            cr_deliver_fn deliver, void *arg)
{
    int count;
    MPI_Get_count(status, MPI_BYTE, &count);
    char *buf = m->rbuf;
    size_t cap = m->rcap;
    if ((size_t)count > cap) {
        free(buf);
        cap = (size_t)count;
        buf = cr_xmalloc(cap);
    }
    m->rbuf = NULL;
    m->rcap = 0;
    MPI_Mrecv(buf, count, MPI_BYTE, msg, MPI_STATUS_IGNORE);
    deliver(arg, status->MPI_SOURCE, buf, (size_t)count);
    /* Keep one buffer (the larger, if a nested receive left one), but not a huge one
     * after a one-off large message. */
    if (m->rbuf && m->rcap >= cap) {
        free(buf);
        return;
    }
    free(m->rbuf);
    bool shrink = cap > 4 * m->small_max && cap > ((size_t)1 << 20);
    m->rbuf = shrink ? NULL : buf;
    m->rcap = shrink ? 0 : cap;
    if (shrink)
        free(buf);
}

static size_t poll_probe(mpi_transport *m, int base, int budget, cr_deliver_fn deliver, void *arg)
{
    size_t got = 0;
    while (budget-- > 0) {
        int flag = 0;
        MPI_Message msg;
        MPI_Status status;
        MPI_Improbe(MPI_ANY_SOURCE, tag(m, base), m->data, &flag, &msg, &status);
        if (!flag)
            break;
        receive_matched(m, &msg, &status, deliver, arg);
        got++;
    }
    return got;
}

/* A receive buffer for the ring: a spare one, or a new one. */
static char *take_spare(mpi_transport *m)
{
    if (m->nspare > 0)
        return m->spares[--m->nspare];
    return cr_xmalloc(m->small_max);
}

static void keep_spare(mpi_transport *m, char *buf)
{
    if (m->nspare == m->spare_cap) {
        m->spare_cap = m->spare_cap ? 2 * m->spare_cap : 4;
        m->spares = cr_xrealloc(m->spares, (size_t)m->spare_cap * sizeof *m->spares);
    }
    m->spares[m->nspare++] = buf;
}

/* Completed receives are delivered from arrays on the stack, and each one's place in
 * the ring is posted again with a spare buffer before its delivery: a delivery that
 * polls again (a waiting reentrant handler) then finds the ring full and its own
 * arrays untouched. Spares: one per delivery in progress, allocated once. */
static size_t poll_prepost(mpi_transport *m, int budget, cr_deliver_fn deliver, void *arg)
{
    int ndone = 0;
    int done[PREPOST_DEPTH];
    MPI_Status status[PREPOST_DEPTH];
    MPI_Testsome(m->npost, m->rreqs, &ndone, done, status);
    size_t got = 0;
    for (int i = 0; i < ndone && ndone != MPI_UNDEFINED; i++) {
        int k = done[i];
        int count;
        MPI_Get_count(&status[i], MPI_BYTE, &count);
        char *buf = m->rbufs[k];
        m->rbufs[k] = take_spare(m);
        post(m, k);
        deliver(arg, status[i].MPI_SOURCE, buf, (size_t)count);
        keep_spare(m, buf);
        got++;
    }
    int left = budget - (int)got;
    return got + poll_probe(m, TAG_LARGE, left > 1 ? left : 1, deliver, arg);
}

static size_t poll(cr_data_plane *d, int budget, cr_deliver_fn deliver, void *arg)
{
    mpi_transport *m = of_plane(d);
    if (budget <= 0)
        return 0;
    if (m->prepost)
        return poll_prepost(m, budget, deliver, arg);
    return poll_probe(m, TAG_SMALL, budget, deliver, arg);
}

static const cr_data_ops mpi_data_ops = {
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

static void wave_join(cr_transport *t, const uint64_t in[CR_WAVE_WORDS])
{
    mpi_transport *m = mt(t);
    memcpy(m->wave_in, in, sizeof m->wave_in);
    MPI_Iallreduce(m->wave_in, m->wave_out, CR_WAVE_WORDS, MPI_UINT64_T, MPI_SUM, m->term,
                   &m->wave);
}

static bool wave_test(cr_transport *t, uint64_t out[CR_WAVE_WORDS])
{
    mpi_transport *m = mt(t);
    int done = 0;
    MPI_Test(&m->wave, &done, MPI_STATUS_IGNORE);
    if (done)
        memcpy(out, m->wave_out, sizeof m->wave_out);
    return done;
}

static int machine_ranks(cr_transport *t)
{
    return mt(t)->machine_ranks;
}

static MPI_Op mpi_op(cr_op op)
{
    return op == CR_OP_MIN ? MPI_MIN : op == CR_OP_MAX ? MPI_MAX : MPI_SUM;
}

/* Minimum and maximum of unsigned 64-bit values as signed ones with the sign bit
 * flipped, which orders them the same: some MPI libraries compare unsigned types as
 * signed in MPI_MIN and MPI_MAX (MPICH 4.0.2, Open MPI 4.1.2-4.1.4 for
 * MPI_UNSIGNED_LONG), and the agreement checks depend on these. */
#define SIGN_BIT (UINT64_C(1) << 63)
enum { FLIP_BATCH = 16 };

static void allreduce_u64(cr_transport *t, const uint64_t *in, uint64_t *out, int n,
                          cr_op op)
{
    if (op == CR_OP_SUM) {
        MPI_Allreduce(in, out, n, MPI_UINT64_T, MPI_SUM, mt(t)->ctrl);
        return;
    }
    for (int done = 0; done < n; done += FLIP_BATCH) {
        int k = n - done < FLIP_BATCH ? n - done : FLIP_BATCH;
        int64_t flipped[FLIP_BATCH], result[FLIP_BATCH];
        for (int i = 0; i < k; i++)
            flipped[i] = (int64_t)(in[done + i] ^ SIGN_BIT);
        MPI_Allreduce(flipped, result, k, MPI_INT64_T, mpi_op(op), mt(t)->ctrl);
        for (int i = 0; i < k; i++)
            out[done + i] = (uint64_t)result[i] ^ SIGN_BIT;
    }
}

static void allreduce_double(cr_transport *t, const double *in, double *out, int n,
                             cr_op op)
{
    MPI_Allreduce(in, out, n, MPI_DOUBLE, mpi_op(op), mt(t)->ctrl);
}

/* The processor names against MPI's split (node_check.h): where they differ, rank 0
 * says so once per process. MPI's split stays the answer: only it can give the
 * shared memory the node's path needs. */
static void check_node_names(cr_transport *t, const int *node_of)
{
    static bool said;
    char name[MPI_MAX_PROCESSOR_NAME] = {0};
    int len = 0;
    MPI_Get_processor_name(name, &len);
    uint64_t mine = cr_node_name_hash(name, (size_t)len);
    uint64_t *hashes = cr_xmalloc(2 * (size_t)t->size * sizeof *hashes);
    MPI_Allgather(&mine, 1, MPI_UINT64_T, hashes, 1, MPI_UINT64_T, mt(t)->ctrl);
    cr_node_check k;
    if (!cr_node_check_run(node_of, hashes, t->size, hashes + t->size, &k) && t->rank == 0 &&
        !said) {
        fprintf(stderr,
                "courier: MPI's shared-memory split finds %d node(s) but the processor names "
                "%d (rank %d differs); Courier follows MPI's split, so ranks it puts apart "
                "use neither the shared-memory path nor node-aware routes between them\n",
                k.mpi_nodes, k.name_nodes, k.first_rank);
        said = true;
    }
    free(hashes);
}

static void nodes(cr_transport *t, int *node_of)
{
    MPI_Comm comm = mt(t)->ctrl, shared;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, t->rank, MPI_INFO_NULL, &shared);
    int leader = t->rank; /* a node is named by its lowest rank */
    MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, shared);
    MPI_Comm_free(&shared);
    MPI_Allgather(&leader, 1, MPI_INT, node_of, 1, MPI_INT, comm);
    check_node_names(t, node_of);
}

static double now(cr_transport *t)
{
    (void)t;
    return MPI_Wtime();
}

/* ---------------------------------------------------------------- watchdog reports */

static bool report_send(cr_transport *t, const void *data, size_t len)
{
    mpi_transport *m = mt(t);
    if (m->report != MPI_REQUEST_NULL) {
        int done = 0;
        MPI_Test(&m->report, &done, MPI_STATUS_IGNORE);
        if (!done)
            return false;
    }
    if (len > sizeof m->report_buf)
        len = sizeof m->report_buf;
    memcpy(m->report_buf, data, len);
    MPI_Issend(m->report_buf, (int)len, MPI_BYTE, 0, TAG_REPORT, m->ctrl, &m->report);
    m->reports++;
    return true;
}

static bool report_take(cr_transport *t, void *buf, size_t len)
{
    mpi_transport *m = mt(t);
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, TAG_REPORT, m->ctrl, &flag, &st);
    if (!flag)
        return false;
    MPI_Recv(buf, (int)len, MPI_BYTE, st.MPI_SOURCE, TAG_REPORT, m->ctrl, MPI_STATUS_IGNORE);
    return true;
}

static uint64_t reports_sent(cr_transport *t)
{
    return mt(t)->reports;
}

static const cr_node_area *node_area(cr_transport *t)
{
    return shm_area(mt(t)->shm);
}

static bool node_mem_create(cr_transport *t, int node, int size, int rank, size_t bytes,
                            cr_node_mem *out)
{
    return cr_mpi_node_mem_create(mt(t)->ctrl, node, size, rank, bytes, out);
}

static void node_mem_destroy(cr_transport *t, cr_node_mem *m)
{
    (void)t;
    cr_mpi_node_mem_destroy(m);
}

static const cr_node_mem_ops node_mem_ops = {
    .area = node_area,
    .create = node_mem_create,
    .destroy = node_mem_destroy,
};

/* ---------------------------------------------------------------- module channels */

/* A channel is a communicator of its own, duplicated from ctrl: its tags and
 * wildcard receives never meet the blocks', the waves' or another channel's. */
struct cr_chan {
    MPI_Comm comm;
};

_Static_assert(sizeof(MPI_Request) <= sizeof(((cr_chan_req *)0)->opaque),
               "an MPI request fits in cr_chan_req");
_Static_assert(sizeof(MPI_Message) <= sizeof(((cr_chan_msg *)0)->opaque),
               "an MPI message handle fits in cr_chan_msg");

/* Requests travel in the opaque bytes (copied, so that no type is read through
 * another's name); a zeroed cr_chan_req is MPI_REQUEST_NULL. */
static MPI_Request req_get(const cr_chan_req *r)
{
    static const unsigned char zero[sizeof r->opaque];
    if (!memcmp(r->opaque, zero, sizeof zero))
        return MPI_REQUEST_NULL;
    MPI_Request q;
    memcpy(&q, r->opaque, sizeof q);
    return q;
}

static void req_put(cr_chan_req *r, MPI_Request q)
{
    memset(r->opaque, 0, sizeof r->opaque);
    if (q != MPI_REQUEST_NULL)
        memcpy(r->opaque, &q, sizeof q);
}

static int as_count(size_t len, const char *what)
{
    if (len > (size_t)INT_MAX)
        cr_fatal("%s of %zu bytes: MPI counts are int (at most %d)", what, len, INT_MAX);
    return (int)len;
}

static cr_chan *chan_open(cr_transport *t)
{
    cr_chan *ch = cr_xmalloc(sizeof *ch);
    MPI_Comm_dup(mt(t)->ctrl, &ch->comm);
    return ch;
}

static void chan_close(cr_chan *ch)
{
    MPI_Comm_free(&ch->comm);
    free(ch);
}

static void chan_isend(cr_chan *ch, int dest, int tag, const void *buf, size_t len,
                       bool synchronous, cr_chan_req *r)
{
    MPI_Request q;
    int n = as_count(len, "a channel message");
    if (synchronous)
        MPI_Issend(buf, n, MPI_BYTE, dest, tag, ch->comm, &q);
    else
        MPI_Isend(buf, n, MPI_BYTE, dest, tag, ch->comm, &q);
    req_put(r, q);
}

static void chan_irecv(cr_chan *ch, int src, int tag, void *buf, size_t len, cr_chan_req *r)
{
    MPI_Request q;
    MPI_Irecv(buf, as_count(len, "a channel receive"), MPI_BYTE, src, tag, ch->comm, &q);
    req_put(r, q);
}

/* Pieces of one buffer as one MPI datatype: no copy on either side. */
static MPI_Datatype pieces_type(const size_t *offs, const size_t *lens, int n)
{
    int *blen = cr_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *blen);
    MPI_Aint *displs = cr_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *displs);
    for (int k = 0; k < n; k++) {
        blen[k] = as_count(lens[k], "a channel message's piece");
        displs[k] = (MPI_Aint)offs[k];
    }
    MPI_Datatype t;
    MPI_Type_create_hindexed(n, blen, displs, MPI_BYTE, &t);
    MPI_Type_commit(&t);
    free(blen);
    free(displs);
    return t;
}

/* Freeing the type right away is allowed: the operation keeps its own reference. */
static void chan_isendv(cr_chan *ch, int dest, int tag, const char *base, const size_t *offs,
                        const size_t *lens, int n, cr_chan_req *r)
{
    MPI_Request q;
    MPI_Datatype t = pieces_type(offs, lens, n);
    MPI_Isend(base, 1, t, dest, tag, ch->comm, &q);
    MPI_Type_free(&t);
    req_put(r, q);
}

static void chan_irecvv(cr_chan *ch, int src, int tag, char *base, const size_t *offs,
                        const size_t *lens, int n, cr_chan_req *r)
{
    MPI_Request q;
    MPI_Datatype t = pieces_type(offs, lens, n);
    MPI_Irecv(base, 1, t, src, tag, ch->comm, &q);
    MPI_Type_free(&t);
    req_put(r, q);
}

static bool chan_probe(cr_chan *ch, int src, int tag, cr_chan_msg *m)
{
    int flag = 0, count = 0;
    MPI_Message msg;
    MPI_Status st;
    MPI_Improbe(src == CR_CHAN_ANY_SOURCE ? MPI_ANY_SOURCE : src, tag, ch->comm, &flag, &msg,
                &st);
    if (!flag)
        return false;
    MPI_Get_count(&st, MPI_BYTE, &count);
    m->source = st.MPI_SOURCE;
    m->len = (size_t)count;
    memcpy(m->opaque, &msg, sizeof msg);
    return true;
}

static void chan_recv_probed(cr_chan *ch, cr_chan_msg *m, void *buf)
{
    (void)ch;
    MPI_Message msg;
    memcpy(&msg, m->opaque, sizeof msg);
    MPI_Mrecv(buf, (int)m->len, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
}

static bool chan_test(cr_chan *ch, cr_chan_req *r)
{
    (void)ch;
    MPI_Request q = req_get(r);
    int flag = 1;
    if (q != MPI_REQUEST_NULL)
        MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
    req_put(r, q);
    return flag;
}

static void chan_ibarrier(cr_chan *ch, cr_chan_req *r)
{
    MPI_Request q;
    MPI_Ibarrier(ch->comm, &q);
    req_put(r, q);
}

static void chan_ialltoall(cr_chan *ch, const void *send, void *recv, size_t bytes,
                           cr_chan_req *r)
{
    MPI_Request q;
    int n = as_count(bytes, "an all-to-all block");
    MPI_Ialltoall(send, n, MPI_BYTE, recv, n, MPI_BYTE, ch->comm, &q);
    req_put(r, q);
}

static void chan_ireduce_scatter_sum(cr_chan *ch, const uint64_t *in, uint64_t *out,
                                     cr_chan_req *r)
{
    MPI_Request q;
    MPI_Ireduce_scatter_block(in, out, 1, MPI_UINT64_T, MPI_SUM, ch->comm, &q);
    req_put(r, q);
}

/* ---------------------------------------------------------------- life cycle */

static void unwatch_finalize(mpi_transport *m);

static void destroy(cr_transport *t)
{
    mpi_transport *m = mt(t);
    unwatch_finalize(m);
    cr_near_far_destroy(m->joined);
    shm_node_destroy(m->shm);
    if (m->report != MPI_REQUEST_NULL)
        MPI_Wait(&m->report, MPI_STATUS_IGNORE);
    if (m->npost)
        cancel_posted(m);
    for (int k = 0; k < m->npost; k++)
        free(m->rbufs[k]);
    for (int k = 0; k < m->nspare; k++)
        free(m->spares[k]);
    free(m->spares);
    free(m->rreqs);
    free(m->rbufs);
    free(m->rbuf);
    free(m->free_slots);
    free(m->sreqs);
    free(m->sdata);
    free(m->scap);
    free(m->completed);
    MPI_Comm_free(&m->data);
    MPI_Comm_free(&m->term);
    MPI_Comm_free(&m->ctrl);
    free(m);
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

static const cr_host_ops host_ops = {
    .now = now,
    .yield = NULL,
    .report_send = report_send,
    .report_take = report_take,
    .reports_sent = reports_sent,
    .machine_ranks = machine_ranks,
    .machine_costs = NULL,
};

static const cr_transport_ops mpi_ops = {
    .name = "mpi",
    .group = &group_ops,
    .chan = &chan_ops,
    .host = &host_ops,
    .node_mem = &node_mem_ops,
    .destroy = destroy,
};

static void init_slots(mpi_transport *m, int nslots)
{
    m->nslots = m->nfree = nslots;
    m->free_slots = cr_xmalloc((size_t)nslots * sizeof *m->free_slots);
    m->sreqs = cr_xmalloc((size_t)nslots * sizeof *m->sreqs);
    m->sdata = cr_xcalloc((size_t)nslots, sizeof *m->sdata);
    m->scap = cr_xcalloc((size_t)nslots, sizeof *m->scap);
    m->completed = cr_xmalloc((size_t)nslots * sizeof *m->completed);
    /* Lowest indices on top, so busy slots stay packed below hiwater. */
    for (int i = 0; i < nslots; i++) {
        m->free_slots[i] = nslots - 1 - i;
        m->sreqs[i] = MPI_REQUEST_NULL;
    }
}

static void init_prepost(mpi_transport *m)
{
    m->npost = PREPOST_DEPTH;
    m->rreqs = cr_xmalloc((size_t)m->npost * sizeof *m->rreqs);
    m->rbufs = cr_xmalloc((size_t)m->npost * sizeof *m->rbufs);
    for (int k = 0; k < m->npost; k++) {
        m->rbufs[k] = cr_xmalloc(m->small_max);
        post(m, k);
    }
}

/* ---------------------------------------------------------------- ending the job */

static bool mpi_running(void)
{
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    return initialized && !finalized;
}

static int world_rank(void)
{
    int rank = -1;
    if (mpi_running())
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

/* MPI_Finalize runs the delete callbacks of MPI_COMM_SELF's attributes first: one
 * still set means a comm was never destroyed, and its records never handled. */
static int finalized_while_open(MPI_Comm self, int key, void *value, void *extra)
{
    (void)self, (void)key, (void)extra;
    mpi_transport *m = value;
    if (!m->watching) /* destroy removing the attribute */
        return MPI_SUCCESS;
    char what[200] = "";
    if (m->describe)
        m->describe(m->describe_arg, what, sizeof what);
    fprintf(stderr,
            "courier: rank %d: MPI_Finalize was called while a cr_comm of %d ranks was still "
            "open%s%s; call cr_barrier and cr_comm_destroy before MPI_Finalize\n",
            m->world_rank, m->base.size, what[0] ? ": " : "", what);
    fflush(stderr);
    _exit(1);
}

void cr_transport_mpi_watch_finalize(cr_transport *t,
                                     void (*describe)(void *arg, char *buf, size_t len),
                                     void *arg)
{
    mpi_transport *m = mt(t);
    m->describe = describe;
    m->describe_arg = arg;
    if (m->finalize_key != MPI_KEYVAL_INVALID)
        return;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalized_while_open, &m->finalize_key, NULL);
    MPI_Comm_set_attr(MPI_COMM_SELF, m->finalize_key, m);
    m->watching = true;
}

static void unwatch_finalize(mpi_transport *m)
{
    if (m->finalize_key == MPI_KEYVAL_INVALID)
        return;
    int key = m->finalize_key;
    m->finalize_key = MPI_KEYVAL_INVALID;
    m->watching = false; /* the delete below runs the callback: it does nothing now */
    MPI_Comm_delete_attr(MPI_COMM_SELF, key);
    MPI_Comm_free_keyval(&key);
}

/* cr_fatal's end under MPI: every rank of the job stops, not only this one. */
static void abort_job(void)
{
    if (!mpi_running())
        return;
    /* Give the launcher a moment to forward the line: MPICH's Hydra may end the job
     * before it has read what the aborting rank wrote last. */
    nanosleep(&(struct timespec){.tv_nsec = 100 * 1000 * 1000}, NULL);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

cr_transport *cr_transport_mpi_create(MPI_Comm comm, const cr_transport_mpi_opts *opts)
{
    cr_fatal_set_job(world_rank, abort_job);
    mpi_transport *m = cr_xcalloc(1, sizeof *m);
    m->base.ops = &mpi_ops;
    m->plane.ops = &mpi_data_ops;
    MPI_Comm_rank(comm, &m->base.rank);
    MPI_Comm_size(comm, &m->base.size);
    MPI_Comm_dup(comm, &m->data);
    MPI_Comm_dup(comm, &m->term);
    MPI_Comm_dup(comm, &m->ctrl);
    m->wave = m->report = MPI_REQUEST_NULL;
    m->finalize_key = MPI_KEYVAL_INVALID;
    m->world_rank = world_rank();
    /* Senders choose the tag by size and by the receivers' mode, so both must be
     * the same everywhere: the smallest buffer size, and one receive mode. */
    long long mine = (long long)(opts->buffer_bytes < PREPOST_MAX ? opts->buffer_bytes : PREPOST_MAX);
    long long local[3] = {(mine + 7) & ~7LL, opts->prepost, -(long long)opts->prepost}, agreed[3];
    MPI_Allreduce(local, agreed, 3, MPI_LONG_LONG, MPI_MIN, m->ctrl);
    if (agreed[1] != -agreed[2])
        cr_fatal("ranks disagree on the receive mode (COURIER_RECV or cr_config.recv_mode); "
                 "set it the same on every rank");
    m->small_max = (size_t)agreed[0];
    m->prepost = opts->prepost;
    init_slots(m, (int)opts->max_inflight);
    if (m->prepost)
        init_prepost(m);
    /* A slot holds one buffer; with tiny buffers, a few records (a record larger than
     * the buffer travels alone). */
    shm_opts so = {.slot_bytes = m->small_max > SHM_MIN_SLOT ? m->small_max : SHM_MIN_SLOT,
                   .budget_bytes = opts->shm_bytes,
                   .node_size = opts->node_size,
                   .max_slots = 16};
    m->shm = shm_node_create(m->ctrl, &so);
    m->joined = m->shm ? cr_near_far_create(shm_plane(m->shm), &m->plane) : NULL;
    m->base.data = m->joined ? m->joined : &m->plane;
    MPI_Comm machine;
    MPI_Comm_split_type(m->ctrl, MPI_COMM_TYPE_SHARED, m->base.rank, MPI_INFO_NULL, &machine);
    MPI_Comm_size(machine, &m->machine_ranks);
    MPI_Comm_free(&machine);
    return &m->base;
}
