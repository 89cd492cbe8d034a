/* The distributed array: creation, the block distribution, local access and the
 * asynchronous mode on the mailbox (include/courier/darray.h, docs/darray.md).
 *
 * Asynchronous writes are records of a combining handler whose key is the index
 * (include/courier/dedup.h): two writes to one element that meet in a send buffer,
 * at their source or at a forwarding rank, become one by the array's merge rule,
 * and the owner merges what arrives into the element by the same rule. Reads are
 * requests keyed by the index: merged wherever they meet, coalesced in flight if
 * the array allows, answered by the owner with the element. Visits are plain
 * records {index, args} to a handler per registered visitor.
 *
 * Within a node (docs/darray.md, "Within a node") the blocks live in the node's
 * shared memory (mailbox/module.h, node segments), and a write or read of an element
 * whose owner shares the node is no record at all: the write merges into the owner's
 * block by one atomic operation, the read loads it and hands the value to this rank's
 * own queue, so that the reader's function still runs as a handler. Every merge into
 * such a block, the owner's included, is then atomic. */
#include "darray/darray_internal.h"

#include "common/fatal.h"
#include "mailbox/module.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct darray_visit {
    cr_darray *a;
    cr_darray_visit_fn fn;
    void *user;
    int handler_id; /* its mailbox handler */
};

/* ---- asynchronous mode ---------------------------------------------------------- */

static char *local_elem(cr_darray *a, uint64_t i, const char *what, int src)
{
    if (i < a->first || i - a->first >= a->count)
        cr_fatal("darray: %s for index %llu reached rank %d (from rank %d), which holds "
                 "[%llu, %llu)",
                 what, (unsigned long long)i, a->rank, src, (unsigned long long)a->first,
                 (unsigned long long)(a->first + a->count));
    return a->data + (i - a->first) * a->elem;
}

static void on_writes(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    cr_darray *a = user;
    cr_darray_apply_fn apply = cr_darray_owned_apply(a);
    for (size_t k = 0; k < b->count; k++) {
        const char *rec = cr_batch_payload(b, k);
        uint64_t i;
        memcpy(&i, rec, sizeof i);
        apply(a, local_elem(a, i, "a write", cr_batch_src(b, k)), rec + 8);
    }
    a->stats.reached_owner += b->count;
}

/* The combining rule of a user merge: the value follows the 8-byte index. */
static void combine_user_writes(void *dst, const void *src, size_t len, void *user)
{
    (void)len;
    cr_darray *a = user;
    a->opts.combine((char *)dst + 8, (const char *)src + 8, a->elem, a->opts.combine_user);
}

static cr_dedup_rule write_rule(const cr_darray *a)
{
    cr_dedup_rule r = {.key_len = 8, .type = a->opts.type};
    switch (a->opts.merge) {
    case CR_OP_SUM: r.op = CR_OP_SUM; break;
    case CR_OP_MIN: r.op = CR_OP_MIN; break;
    case CR_OP_MAX: r.op = CR_OP_MAX; break;
    case CR_OP_USER:
        r.op = CR_OP_USER;
        r.combine = combine_user_writes;
        r.combine_user = (void *)a;
        break;
    default: r.op = CR_OP_LAST; break;
    }
    return r;
}

static void serve_read(cr_comm *comm, cr_dedup_req *req, const void *payload, size_t len,
                       void *user)
{
    (void)len;
    cr_darray *a = user;
    uint64_t i;
    memcpy(&i, payload, sizeof i);
    a->stats.reached_owner++;
    cr_dedup_reply(comm, req, local_elem(a, i, "a read", cr_dedup_from(req)), a->elem);
}

static void on_visits(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm;
    darray_visit *v = user;
    uint64_t i;
    memcpy(&i, payload, sizeof i);
    v->fn(v->a, i, local_elem(v->a, i, "a visit", src), (const char *)payload + 8, len - 8,
          v->user);
}

static char *async_record(cr_darray *a, uint64_t i, const void *data, size_t len)
{
    if (a->scratch_cap < 8 + len) {
        a->scratch_cap = 8 + len;
        a->scratch = cr_xrealloc(a->scratch, a->scratch_cap);
    }
    memcpy(a->scratch, &i, 8);
    if (len)
        memcpy(a->scratch + 8, data, len);
    return a->scratch;
}

static void check_index(const cr_darray *a, const char *fn, uint64_t i)
{
    if (i >= a->n)
        cr_fatal("%s: index %llu is out of range [0, %llu)", fn, (unsigned long long)i,
                 (unsigned long long)a->n);
}

/* A read served in place, on its way to the reader's function: {fn, ctx, value}. */
typedef struct near_read {
    cr_dedup_reply_fn fn;
    void *ctx;
    uint64_t value;
} near_read;

static void on_near_reads(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)user;
    for (size_t k = 0; k < b->count; k++) {
        near_read r;
        memcpy(&r, cr_batch_payload(b, k), sizeof r);
        r.fn(comm, &r.value, sizeof r.value, r.ctx);
    }
}

void cr_darray_async_write(cr_darray *a, uint64_t i, const void *value)
{
    check_index(a, "cr_darray_async_write", i);
    int owner = cr_block_layout_owner(&a->layout, i);
    _Atomic uint64_t *e = a->near ? cr_darray_near_elem(a, owner, i) : NULL;
    if (e) {
        cr_darray_apply_shared(a, (void *)e, value);
        a->stats.in_place++;
        return;
    }
    if (owner == a->rank && a->opts.node == CR_DARRAY_NODE_IN_PLACE) {
        /* no other rank merges into this block in place: a plain merge, as the
         * handler would make it */
        cr_darray_apply(a, local_elem(a, i, "a write", a->rank), value);
        a->stats.in_place++;
        return;
    }
    char *rec = async_record(a, i, value, a->elem);
    cr_async(a->comm, owner, a->h_write, rec, 8 + a->elem);
}

void cr_darray_async_read(cr_darray *a, uint64_t i, cr_dedup_reply_fn fn, void *ctx)
{
    check_index(a, "cr_darray_async_read", i);
    int owner = cr_block_layout_owner(&a->layout, i);
    _Atomic uint64_t *e = a->near ? cr_darray_near_elem(a, owner, i) : NULL;
    bool mine = owner == a->rank && a->opts.node == CR_DARRAY_NODE_IN_PLACE && a->elem == 8;
    if (e || mine) {
        if (!fn)
            cr_fatal("cr_darray_async_read: the reply function is NULL");
        near_read r = {fn, ctx, 0};
        if (e)
            r.value = atomic_load_explicit(e, memory_order_relaxed);
        else
            memcpy(&r.value, local_elem(a, i, "a read", a->rank), 8);
        cr_async(a->comm, a->rank, a->h_near_read, &r, sizeof r);
        a->stats.in_place++;
        return;
    }
    cr_dedup_request(a->comm, owner, a->h_read, &i, sizeof i, fn, ctx);
}

int cr_darray_register_visit(cr_darray *a, cr_darray_visit_fn fn, void *user)
{
    if (!fn)
        cr_fatal("cr_darray_register_visit: the visit function is NULL");
    if (a->near) {
        /* a visit changes its element on the owner, unseen by in-place merges: from
         * here on the node's elements are reached through records, once no rank of
         * the node merges in place any more */
        cr_module_node_segment_barrier(a->seg);
        free(a->near);
        a->near = NULL;
    }
    darray_visit *v = cr_xmalloc(sizeof *v);
    *v = (darray_visit){.a = a, .fn = fn, .user = user};
    a->visits = cr_xrealloc(a->visits, (size_t)(a->nvisits + 1) * sizeof *a->visits);
    a->visits[a->nvisits] = v;
    int id = a->nvisits++;
    /* the array numbers its visitors itself; each is a mailbox handler */
    v->handler_id = cr_register(a->comm, on_visits, v);
    return id;
}

void cr_darray_async_visit(cr_darray *a, uint64_t i, int visit, const void *args, size_t len)
{
    check_index(a, "cr_darray_async_visit", i);
    if (visit < 0 || visit >= a->nvisits)
        cr_fatal("cr_darray_async_visit: visitor %d is not registered (%d registered)", visit,
                 a->nvisits);
    if (len && !args)
        cr_fatal("cr_darray_async_visit: args is NULL but its length is %zu", len);
    char *rec = async_record(a, i, args, len);
    cr_async(a->comm, cr_block_layout_owner(&a->layout, i), a->visits[visit]->handler_id, rec,
             8 + len);
}

/* ---- creation ----------------------------------------------------------------- */

void cr_darray_opts_init(cr_darray_opts *o)
{
    *o = (cr_darray_opts){.merge = CR_OP_LAST, .type = CR_INT64,
                          .route = {.kind = CR_ROUTE_DIRECT},
                          .aggregation = CR_DARRAY_AGG_HASH, .coalesce_reads = 1};
}

int cr_darray_aggregation_parse(const char *text, cr_darray_aggregation *out, char *err,
                                size_t errlen)
{
    static const char *const names[] = {"none", "hash", "sort", "auto"};
    for (int k = 0; k < 4; k++)
        if (text && !strcmp(text, names[k])) {
            *out = (cr_darray_aggregation)k;
            return 0;
        }
    cr_set_error(err, errlen, "unknown darray aggregation '%s': expected none, hash, sort or auto",
                 text ? text : "(null)");
    return -1;
}

static void check_opts(const cr_darray_opts *o, size_t elem_size)
{
    if (elem_size < 1 || elem_size > 4096)
        cr_fatal("cr_darray_create: element size %zu is out of range: expected 1 to 4096",
                 elem_size);
    switch (o->merge) {
    case CR_OP_LAST: break;
    case CR_OP_SUM:
    case CR_OP_MIN:
    case CR_OP_MAX:
        if (elem_size != 8)
            cr_fatal("cr_darray_create: merge add, min and max need 8-byte elements, not %zu "
                     "bytes (use CR_OP_USER)",
                     elem_size);
        if (o->type != CR_INT64 && o->type != CR_UINT64 && o->type != CR_DOUBLE)
            cr_fatal("cr_darray_create: element type %d is not one of CR_INT64, CR_UINT64 "
                     "and CR_DOUBLE",
                     (int)o->type);
        break;
    case CR_OP_USER:
        if (!o->combine)
            cr_fatal("cr_darray_create: merge user needs a combine function");
        break;
    default: cr_fatal("cr_darray_create: unknown merge rule %d", (int)o->merge);
    }
    if (o->aggregation > CR_DARRAY_AGG_AUTO)
        cr_fatal("cr_darray_create: unknown aggregation %d", (int)o->aggregation);
    if (o->node > CR_DARRAY_NODE_IN_PLACE)
        cr_fatal("cr_darray_create: unknown node access %d", (int)o->node);
    if (o->exchange > CR_DARRAY_EXCHANGE_MAILBOX)
        cr_fatal("cr_darray_create: unknown exchange %d", (int)o->exchange);
    if (o->route.kind != CR_ROUTE_DIRECT && o->route.kind != CR_ROUTE_GRID &&
        o->route.kind != CR_ROUTE_HYPERCUBE && o->route.kind != CR_ROUTE_AUTO)
        cr_fatal("cr_darray_create: the lock-step route must be direct, grid, hypercube or "
                 "auto");
}

/* In-place access needs a rule that one atomic operation applies. */
static bool rule_is_atomic(const cr_darray *a)
{
    return a->elem == 8 && a->opts.merge != CR_OP_USER;
}

/* Where the blocks live (collective): with in-place access on a comm whose nodes
 * share memory and some node holds two ranks, in a node segment, each rank's block
 * its part, and the table of the node's blocks; else in this rank's own memory. */
static void place_blocks(cr_darray *a)
{
    const cr_layout *l = cr_module_layout(a->comm);
    bool shared_nodes = cr_layout_nodes(l) < a->size;
    if (a->opts.node == CR_DARRAY_NODE_IN_PLACE && rule_is_atomic(a) && shared_nodes) {
        if (a->count > SIZE_MAX / a->elem)
            cr_fatal("cr_darray_create: rank %d's block of %llu elements cannot be mapped",
                     a->rank, (unsigned long long)a->count);
        a->seg = cr_module_node_segment_create(a->comm, (size_t)a->count * a->elem);
    }
    if (!a->seg) {
        a->data = cr_xcalloc(a->count ? a->count : 1, a->elem);
        return;
    }
    int k = cr_module_node_segment_rank(a->seg);
    a->data = cr_module_node_segment_part(a->seg, k);
    a->near = cr_xcalloc((size_t)a->size, sizeof *a->near);
    for (int j = 0; j < cr_module_node_segment_size(a->seg); j++) {
        int r = cr_module_node_segment_member(a->seg, j);
        a->near[r] = (darray_near){cr_module_node_segment_part(a->seg, j),
                                   cr_block_first(a->n, a->size, r)};
    }
}

cr_darray *cr_darray_create(cr_comm *comm, uint64_t n, size_t elem_size,
                            const cr_darray_opts *opts)
{
    if (cr_module_in_handler(comm))
        cr_fatal("cr_darray_create was called from inside a handler");
    cr_darray_opts o;
    if (opts)
        o = *opts;
    else
        cr_darray_opts_init(&o);
    if ((int)o.merge == 0)
        o.merge = CR_OP_LAST; /* zero asks for the default, an overwrite */
    check_opts(&o, elem_size);
    cr_darray *a = cr_xcalloc(1, sizeof *a);
    a->comm = comm;
    a->opts = o;
    a->n = n;
    a->elem = elem_size;
    a->rank = cr_comm_rank(comm);
    a->size = cr_comm_size(comm);
    cr_darray_block(n, a->size, a->rank, &a->first, &a->count);
    a->layout = cr_block_layout_of(n, a->size);
    place_blocks(a);
    cr_darray_grid_init(a);
    darray_bytes_grow(&a->writes, 0); /* never NULL: the steps copy from them */
    darray_bytes_grow(&a->reads, 0);

    a->by_mailbox = o.exchange == CR_DARRAY_EXCHANGE_MAILBOX;
    cr_darray_exchange_register(a);
    cr_dedup_rule rule = write_rule(a);
    a->h_write = cr_dedup_register(comm, &(cr_handler_type){.batch = on_writes}, &rule, a);
    a->h_read = cr_dedup_register_request(
        comm,
        &(cr_dedup_request_type){.serve = serve_read, .key_len = 8, .coalesce = o.coalesce_reads},
        a);
    a->h_near_read = cr_register_type(comm, &(cr_handler_type){.batch = on_near_reads}, a);
    return a;
}

void cr_darray_destroy(cr_darray *a)
{
    if (!a)
        return;
    cr_darray_exchange_free(a);
    for (int k = 0; k < a->nvisits; k++)
        free(a->visits[k]);
    free(a->visits);
    free(a->scratch);
    darray_bytes_free(&a->writes);
    darray_bytes_free(&a->reads);
    free(a->near);
    if (a->seg)
        cr_module_node_segment_destroy(a->seg);
    else
        free(a->data);
    free(a);
}

uint64_t cr_darray_length(const cr_darray *a)
{
    return a->n;
}

size_t cr_darray_elem_size(const cr_darray *a)
{
    return a->elem;
}

cr_comm *cr_darray_comm(const cr_darray *a)
{
    return a->comm;
}

void *cr_darray_local(cr_darray *a, uint64_t *first, uint64_t *count)
{
    if (first)
        *first = a->first;
    if (count)
        *count = a->count;
    return a->data;
}

void cr_darray_stats_get(const cr_darray *a, cr_darray_stats *out)
{
    *out = a->stats;
}

void cr_darray_stats_reset(cr_darray *a)
{
    a->stats = (cr_darray_stats){0};
}

static void check_sorted_count(const cr_darray *a, size_t n)
{
    if (n != a->count)
        cr_fatal("cr_darray_sort: rank %d got %zu elements back for its block of %llu", a->rank,
                 n, (unsigned long long)a->count);
}

/* A block in the node's memory stays where it is: cr_sort sorts a copy. */
static void sort_shared_block(cr_darray *a, const cr_sort_opts *opts, cr_sort_stats *stats)
{
    size_t n = (size_t)a->count;
    void *elems = NULL;
    if (n) {
        elems = cr_xmalloc(n * a->elem);
        memcpy(elems, a->data, n * a->elem);
    }
    cr_sort(a->comm, &elems, &n, opts, stats);
    check_sorted_count(a, n);
    if (n)
        memcpy(a->data, elems, n * a->elem);
    free(elems);
    cr_module_node_segment_barrier(a->seg); /* every block of the node in its new order */
}

void cr_darray_sort(cr_darray *a, const cr_sort_opts *opts, cr_sort_stats *stats)
{
    if (!opts || opts->record_bytes != a->elem)
        cr_fatal("cr_darray_sort: the options' record_bytes is %zu, the array's elements have "
                 "%zu bytes", opts ? opts->record_bytes : 0, a->elem);
    if (opts->tolerance != 0)
        cr_fatal("cr_darray_sort: a tolerance of %g: an array keeps its exact blocks (0)",
                 opts->tolerance);
    /* asynchronous writes sent before are applied first */
    cr_barrier(a->comm);
    size_t n = (size_t)a->count;
    if (a->seg) {
        sort_shared_block(a, opts, stats);
        return;
    }
    void *elems = a->data; /* cr_sort owns and may replace it */
    if (!n) {
        free(elems);
        elems = NULL;
    }
    a->data = NULL;
    cr_sort(a->comm, &elems, &n, opts, stats);
    check_sorted_count(a, n);
    a->data = elems ? elems : cr_xcalloc(1, a->elem);
}
