/* The distributed sparse matrix (include/courier/spmat.h, docs/bale.md). */
#include "courier/spmat.h"

#include "courier/coll.h"
#include "courier/rng.h"
#include "courier/sort.h"
#include "mailbox/module.h"

#include "common/block.h"
#include "common/fatal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rows above this are refused: 2^40 rows of 10 entries are 80 TiB of columns. */
#define MAX_ROWS (UINT64_C(1) << 40)

struct cr_spmat {
    cr_comm *comm;
    uint64_t rows, cols, nnz; /* of the whole matrix */
    uint64_t first, count;    /* this rank's rows */
    uint64_t *offsets;        /* count + 1 */
    uint64_t *col;            /* offsets[count] */
    double *val;              /* the same, or NULL */
};

/* ---------------------------------------------------------------- the module */

/* Entries appended as they come: columns, and values when weighted. */
typedef struct growing_arena {
    uint64_t *col;
    double *val;
    uint64_t n, cap;
} growing_arena;

#define ROW_MISSING UINT64_MAX

static void push(growing_arena *g, uint64_t col, double val, bool weighted)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 1024;
        g->col = realloc(g->col, g->cap * sizeof *g->col);
        if (weighted)
            g->val = realloc(g->val, g->cap * sizeof *g->val);
        if (!g->col || (weighted && !g->val))
            cr_fatal("spmat: out of memory for %llu entries", (unsigned long long)g->cap);
    }
    g->col[g->n] = col;
    if (weighted)
        g->val[g->n] = val;
    g->n++;
}

/* A transpose being built on this rank: its rows [first, first + count) of the
 * result, the entries counted per row, then placed. */
typedef struct transpose_job {
    uint64_t first, count;
    uint64_t *offsets; /* counts, then the offsets (count + 1) */
    uint64_t *next;    /* per row: the place of its next entry */
    uint64_t entries, overflow; /* places in col; entries that found none */
    uint64_t *col;
    double *val;
} transpose_job;

/* A permutation being applied on this rank: its rows of the result as they arrive
 * (phase 1), then its entries' new columns as they come back (phase 2). */
typedef struct permute_job {
    uint64_t first, count;   /* this rank's rows of the result */
    uint64_t *len;           /* per row: its entries, or ROW_MISSING */
    uint64_t *at;            /* per row: where it starts in the arena */
    growing_arena *arena;    /* the rows' entries, in arrival order */
    bool weighted;
    uint64_t bad_row;        /* a row that arrived twice or out of range (or UINT64_MAX) */
    const uint64_t *cperm;   /* this rank's block of the column permutation */
    uint64_t cfirst, ccount;
    uint64_t bad_col;        /* a new column out of range (or UINT64_MAX) */
    uint64_t cols;           /* of the matrix */
    uint64_t *col;           /* the result's columns, relabelled in phase 2 */
} permute_job;

/* A block of a distributed array filled by (index, value) records. */
typedef struct scatter_job {
    uint64_t first, count;
    uint64_t *block;
    uint64_t bad;            /* an index out of the block, or one filled twice */
} scatter_job;

/* A topological sort in progress on this rank (cr_spmat_toposort): its rows' counts
 * and column sums, its columns' rows (the transpose's), and the pivots of the next
 * level as they appear. */
typedef struct topo_job {
    uint64_t first;          /* this rank's first row (and first column) */
    uint64_t *count, *sum;   /* per row: entries left, and the sum of their columns */
    uint64_t *rperm;         /* per row: its place, once pivoted */
    uint64_t *cperm;         /* per column of this rank: its place, once pivoted */
    const cr_spmat *mt;      /* the transpose: row c holds the rows with an entry in c */
    uint64_t *next;          /* rows that have one entry left, for the next level */
    uint64_t nnext, cap;
    uint64_t conflicts;      /* columns two pivots claimed (no triangular matrix) */
    int h_delete;
} topo_job;

/* Triangles being counted on this rank: the lower triangle's rows it holds. */
/* Wedges wait in a ring of WEDGES_AHEAD, each copied (up to WEDGE_WORDS words;
 * longer ones are merged at once): a wedge's row offsets are asked for when it
 * arrives and its row's entries half way round, so that when it is merged neither
 * misses. A handler sees one record at a time, so it looks ahead by waiting. */
enum { WEDGES_AHEAD = 8, WEDGE_WORDS = 30 };

typedef struct wedge {
    uint64_t a, k;                /* the row, and how many entries b of the other */
    uint64_t b[WEDGE_WORDS];
} wedge;

typedef struct triangle_job {
    const cr_spmat *l;
    uint64_t found;
    wedge ring[WEDGES_AHEAD];
    unsigned head, held;          /* the oldest wedge's slot, and how many wait */
} triangle_job;

typedef struct spmat_state {
    int h_count, h_entry, h_row, h_ask, h_answer, h_scatter, h_pivot, h_delete, h_wedge;
    triangle_job *tri;
    transpose_job *job;
    permute_job *perm;
    scatter_job *scatter;
    topo_job *topo;
} spmat_state;

static int spmat_poll(cr_comm *comm, void *state)
{
    (void)comm, (void)state;
    return -1; /* no work of its own: everything it does runs in its handlers */
}

static const cr_module_type spmat_module = {.name = "spmat", .poll = spmat_poll,
                                            .destroy = cr_module_state_free};

/* An entry of the transpose: its row (a column of the input), its column and value. */
typedef struct entry {
    uint64_t row, col;
    double val;
} entry;

/* Records ahead of the one handled whose memory is asked for now: each pivot and
 * each delete reads a place in arrays far larger than the caches, at random, and
 * the loads of several records in flight at once overlap their misses. */
#define PREFETCH_AHEAD 8

/* The first word (a row, column or index) of record k, if the batch has one: what a
 * handler asks the memory for PREFETCH_AHEAD records before it handles it. */
static inline bool word_at(const cr_batch *b, size_t k, uint64_t *word)
{
    if (k >= b->count)
        return false;
    memcpy(word, cr_batch_payload(b, k), sizeof *word);
    return true;
}

/* Phase 1: one record per entry of the input, naming its row of the transpose. */
static void on_counts(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    transpose_job *j = ((spmat_state *)user)->job;
    for (size_t k = 0; k < b->count; k++) {
        uint64_t ahead;
        if (word_at(b, k + PREFETCH_AHEAD, &ahead))
            __builtin_prefetch(&j->offsets[ahead - j->first]);
        uint64_t row;
        memcpy(&row, cr_batch_payload(b, k), sizeof row);
        j->offsets[row - j->first]++;
    }
}

/* Phase 2: the entries, each placed after those of its row already there. Two
 * misses an entry, its row's next place and that place: the first is asked for two
 * strides ahead, the second (where the row's next place is by then) one stride. */
static void on_entries(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    transpose_job *j = ((spmat_state *)user)->job;
    for (size_t k = 0; k < b->count; k++) {
        uint64_t ahead;
        if (word_at(b, k + 2 * PREFETCH_AHEAD, &ahead))
            __builtin_prefetch(&j->next[ahead - j->first]);
        if (word_at(b, k + PREFETCH_AHEAD, &ahead) && ahead - j->first < j->count) {
            __builtin_prefetch(&j->col[j->next[ahead - j->first]], 1);
            if (j->val)
                __builtin_prefetch(&j->val[j->next[ahead - j->first]], 1);
        }
        entry e;
        memcpy(&e, cr_batch_payload(b, k), 2 * sizeof(uint64_t)); /* a constant size */
        uint64_t at = j->next[e.row - j->first]++;
        if (at >= j->entries) { /* more than were counted: never written */
            j->overflow++;
            continue;
        }
        j->col[at] = e.col;
        if (j->val) {
            memcpy(&e.val, (const char *)cr_batch_payload(b, k) + 2 * sizeof(uint64_t),
                   sizeof e.val);
            j->val[at] = e.val;
        }
    }
}

/* Permute, phase 1: a row of the result, [new row][columns][values]. */
static void on_row(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm, (void)src;
    permute_job *j = ((spmat_state *)user)->perm;
    uint64_t row;
    memcpy(&row, payload, sizeof row);
    size_t width = j->weighted ? 16 : 8;
    uint64_t n = (len - 8) / width, r = row - j->first;
    if (row < j->first || r >= j->count || j->len[r] != ROW_MISSING) {
        if (j->bad_row == UINT64_MAX)
            j->bad_row = row;
        return;
    }
    j->len[r] = n;
    j->at[r] = j->arena->n;
    const char *cols = (const char *)payload + 8, *vals = cols + n * 8;
    for (uint64_t k = 0; k < n; k++) {
        uint64_t c;
        double v = 0;
        memcpy(&c, cols + k * 8, 8);
        if (j->weighted)
            memcpy(&v, vals + k * 8, 8);
        push(j->arena, c, v, j->weighted);
    }
}

/* Permute, phase 2: {column, entry}: the column's new label, sent back. */
static void on_ask(cr_comm *comm, const cr_batch *b, void *user)
{
    spmat_state *st = user;
    permute_job *j = st->perm;
    for (size_t k = 0; k < b->count; k++) {
        uint64_t ahead;
        if (word_at(b, k + PREFETCH_AHEAD, &ahead))
            __builtin_prefetch(&j->cperm[ahead - j->cfirst]);
        uint64_t q[2];
        memcpy(q, cr_batch_payload(b, k), sizeof q);
        uint64_t answer[2] = {q[1], j->cperm[q[0] - j->cfirst]};
        cr_async(comm, cr_batch_src(b, k), st->h_answer, answer, sizeof answer);
    }
}

static void on_answer(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    permute_job *j = ((spmat_state *)user)->perm;
    for (size_t k = 0; k < b->count; k++) {
        uint64_t a[2];
        memcpy(a, cr_batch_payload(b, k), sizeof a);
        if (a[1] >= j->cols && j->bad_col == UINT64_MAX)
            j->bad_col = a[1];
        j->col[a[0]] = a[1];
    }
}

/* {index, value}: the value at its place in this rank's block. */
static void on_scatter(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    scatter_job *j = ((spmat_state *)user)->scatter;
    for (size_t k = 0; k < b->count; k++) {
        uint64_t ahead;
        if (word_at(b, k + PREFETCH_AHEAD, &ahead))
            __builtin_prefetch(&j->block[ahead - j->first]);
        uint64_t e[2];
        memcpy(e, cr_batch_payload(b, k), sizeof e);
        uint64_t at = e[0] - j->first;
        if (e[0] < j->first || at >= j->count || j->block[at] != ROW_MISSING) {
            if (j->bad == UINT64_MAX)
                j->bad = e[0];
            continue;
        }
        j->block[at] = e[1];
    }
}


static void prefetch_pivot(const topo_job *j, const cr_batch *b, size_t k)
{
    uint64_t col;
    if (!word_at(b, k, &col))
        return;
    __builtin_prefetch(&j->cperm[col - j->first]);
    __builtin_prefetch(&j->mt->offsets[col - j->first]);
}

/* Half as far ahead, the offset asked for above has arrived: ask for the column's
 * list of rows. */
static void prefetch_column(const topo_job *j, const cr_batch *b, size_t k)
{
    uint64_t col;
    if (!word_at(b, k, &col))
        return;
    __builtin_prefetch(&j->mt->col[j->mt->offsets[col - j->first]]);
}

static void prefetch_delete(const topo_job *j, const cr_batch *b, size_t k)
{
    uint64_t row;
    if (!word_at(b, k, &row))
        return;
    __builtin_prefetch(&j->count[row - j->first]);
    __builtin_prefetch(&j->sum[row - j->first]);
}

/* Toposort: {column, place, pivot row}: the column takes the place, and every other
 * row with an entry in it loses that entry. */
static void on_pivot(cr_comm *comm, const cr_batch *b, void *user)
{
    topo_job *j = ((spmat_state *)user)->topo;
    cr_block_layout l = cr_block_layout_of(j->mt->cols, cr_comm_size(comm));
    for (size_t k = 0; k < b->count; k++) {
        prefetch_pivot(j, b, k + PREFETCH_AHEAD);
        prefetch_column(j, b, k + PREFETCH_AHEAD / 2);
        uint64_t q[3];
        memcpy(q, cr_batch_payload(b, k), sizeof q);
        uint64_t c = q[0] - j->first;
        if (j->cperm[c] != UINT64_MAX) { /* a second pivot on one column */
            j->conflicts++;
            continue;
        }
        j->cperm[c] = q[1];
        for (uint64_t e = j->mt->offsets[c]; e < j->mt->offsets[c + 1]; e++) {
            uint64_t del[2] = {j->mt->col[e], q[0]};
            if (del[0] != q[2])
                cr_async(comm, cr_block_layout_owner(&l, del[0]), j->h_delete, del, sizeof del);
        }
    }
}

/* Toposort: {row, column}: the row loses its entry in the column; with one left, it
 * is a pivot of the next level. */
static void on_delete(cr_comm *comm, const cr_batch *b, void *user)
{
    (void)comm;
    topo_job *j = ((spmat_state *)user)->topo;
    for (size_t k = 0; k < b->count; k++) {
        prefetch_delete(j, b, k + PREFETCH_AHEAD);
        uint64_t d[2];
        memcpy(d, cr_batch_payload(b, k), sizeof d);
        uint64_t r = d[0] - j->first;
        if (j->count[r] == 0)
            continue; /* pivoted already: only a matrix that is not triangular gets here */
        j->sum[r] -= d[1];
        if (--j->count[r] != 1)
            continue;
        if (j->nnext == j->cap) {
            j->cap = j->cap ? 2 * j->cap : 1024;
            j->next = realloc(j->next, j->cap * sizeof *j->next);
            if (!j->next)
                cr_fatal("spmat: out of memory for %llu pivots", (unsigned long long)j->cap);
        }
        j->next[j->nnext++] = r;
    }
}

/* Triangles: [b_1 < b_2 < ... < b_k][a], the b all below a, all neighbours of a
 * third vertex with a: each b_i that row a of the lower triangle holds closes a
 * triangle. Both lists are sorted, so one merge of the two counts them. */
static void merge_wedge(triangle_job *j, uint64_t a, const char *bs, size_t k)
{
    uint64_t r = a - j->l->first, e = j->l->offsets[r], end = j->l->offsets[r + 1];
    size_t i = 0;
    while (i < k && e < end) {
        uint64_t b;
        memcpy(&b, bs + i * 8, 8);
        uint64_t c = j->l->col[e];
        j->found += b == c;
        i += b <= c;
        e += c <= b;
    }
}

/* Merge the oldest waiting wedge. */
static void merge_oldest(triangle_job *j)
{
    const wedge *w = &j->ring[j->head];
    merge_wedge(j, w->a, (const char *)w->b, (size_t)w->k);
    j->head = (j->head + 1) % WEDGES_AHEAD;
    j->held--;
}

static void on_wedges(cr_comm *comm, int src, const void *payload, size_t len, void *user)
{
    (void)comm, (void)src;
    triangle_job *j = ((spmat_state *)user)->tri;
    size_t k = len / 8 - 1;
    uint64_t a;
    memcpy(&a, (const char *)payload + k * 8, sizeof a);
    if (a - j->l->first >= j->l->count)
        cr_fatal("cr_spmat_triangles: a wedge for row %llu reached the rank of rows %llu..%llu",
                 (unsigned long long)a, (unsigned long long)j->l->first,
                 (unsigned long long)(j->l->first + j->l->count));
    if (k > WEDGE_WORDS) {
        merge_wedge(j, a, payload, k);
        return;
    }
    if (j->held == WEDGES_AHEAD)
        merge_oldest(j);
    wedge *w = &j->ring[(j->head + j->held++) % WEDGES_AHEAD];
    w->a = a;
    w->k = k;
    memcpy(w->b, payload, k * 8);
    __builtin_prefetch(&j->l->offsets[a - j->l->first]);
    if (j->held > WEDGES_AHEAD / 2) { /* the one half way round: its entries */
        const wedge *mid = &j->ring[(j->head + j->held - 1 - WEDGES_AHEAD / 2) % WEDGES_AHEAD];
        __builtin_prefetch(&j->l->col[j->l->offsets[mid->a - j->l->first]]);
    }
}

static spmat_state *state_of(cr_comm *comm)
{
    bool fresh;
    spmat_state *s = cr_module_state_or_new(comm, &spmat_module, sizeof *s, &fresh);
    if (!fresh)
        return s;
    s->h_count = cr_register_type(comm, &(cr_handler_type){.batch = on_counts,
                                                           .name = "spmat count"}, s);
    s->h_entry = cr_register_type(comm, &(cr_handler_type){.batch = on_entries,
                                                           .name = "spmat entry"}, s);
    s->h_row = cr_register_type(comm, &(cr_handler_type){.fn = on_row, .name = "spmat row"}, s);
    s->h_ask = cr_register_type(comm, &(cr_handler_type){.batch = on_ask,
                                                         .name = "spmat column ask"}, s);
    s->h_answer = cr_register_type(comm, &(cr_handler_type){.batch = on_answer,
                                                            .name = "spmat column answer"}, s);
    s->h_scatter = cr_register_type(comm, &(cr_handler_type){.batch = on_scatter,
                                                             .name = "spmat scatter"}, s);
    s->h_pivot = cr_register_type(comm, &(cr_handler_type){.batch = on_pivot,
                                                           .name = "spmat pivot"}, s);
    s->h_delete = cr_register_type(comm, &(cr_handler_type){.batch = on_delete,
                                                            .name = "spmat delete"}, s);
    s->h_wedge = cr_register_type(comm, &(cr_handler_type){.fn = on_wedges,
                                                           .name = "spmat wedges"}, s);
    return s;
}

static void not_from_handler(cr_comm *comm, const char *what)
{
    if (cr_module_in_handler(comm))
        cr_fatal("%s called from a handler: it is collective, call it from user code", what);
}

/* ---------------------------------------------------------------- making one */

static uint64_t *alloc_u64(uint64_t n, const char *what)
{
    if (n > SIZE_MAX / 8 / 2)
        cr_fatal("spmat: %s of %llu entries does not fit in memory", what, (unsigned long long)n);
    uint64_t *p = malloc((size_t)(n ? n : 1) * sizeof *p);
    if (!p)
        cr_fatal("spmat: out of memory for %s (%llu entries)", what, (unsigned long long)n);
    return p;
}

/* An empty matrix of this shape with this rank's block of rows, its nnz still 0. */
static cr_spmat *shell(cr_comm *comm, uint64_t rows, uint64_t cols)
{
    cr_spmat *a = cr_xcalloc(1, sizeof *a);
    a->comm = comm;
    a->rows = rows;
    a->cols = cols;
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    a->first = cr_block_first(rows, p, me);
    a->count = cr_block_count(rows, p, me);
    a->offsets = alloc_u64(a->count + 1, "a matrix's offsets");
    a->offsets[0] = 0;
    return a;
}

/* The entries of all ranks. Collective. */
static void count_all(cr_spmat *a)
{
    uint64_t mine = a->offsets[a->count];
    cr_allreduce(a->comm, &mine, &a->nnz, 1, CR_UINT64, CR_OP_SUM, NULL);
}

/* Every rank's error, or none: the first one found, on every rank. Collective. */
static int agree(cr_comm *comm, const char *mine, char *err, size_t errlen)
{
    int bad = mine != NULL, any = 0;
    cr_allreduce(comm, &bad, &any, 1, CR_INT32, CR_OP_MAX, NULL);
    if (!any)
        return 0;
    int me = bad ? cr_comm_rank(comm) : cr_comm_size(comm), first = 0;
    cr_allreduce(comm, &me, &first, 1, CR_INT32, CR_OP_MIN, NULL);
    uint64_t line[32] = {0}, all[32]; /* the first erring rank's line, as words */
    if (me == first)
        snprintf((char *)line, sizeof line, "%.255s", mine);
    cr_allreduce(comm, line, all, 32, CR_UINT64, CR_OP_BOR, NULL);
    cr_set_error(err, errlen, "%s", (const char *)all);
    return -1;
}

void cr_spmat_er_init(cr_spmat_er *g)
{
    *g = (cr_spmat_er){.nz_per_row = 10, .seed = 1};
}

/* bale's resolution of the density: the probability of each off-diagonal entry. */
static double edge_probability(const cr_spmat_er *g)
{
    if (g->edge_prob > 0)
        return g->edge_prob;
    if (g->rows < 2)
        return 0;
    double p = (g->loops ? g->nz_per_row - 1 : g->nz_per_row) / (double)(g->rows - 1);
    if (!g->directed)
        p *= 2;
    return p < 0 ? 0 : p > 1 ? 1 : p;
}

static const char *bad_er(const cr_spmat_er *g)
{
    if (g->rows == 0 || g->rows > MAX_ROWS)
        return "rows must be from 1 to 2^40";
    if (!(g->edge_prob >= 0 && g->edge_prob <= 1))
        return "the edge probability must be from 0 to 1";
    if (!(g->nz_per_row >= 0) || !isfinite(g->nz_per_row))
        return "the entries per row must be a number of at least 0";
    return NULL;
}

/* A uniform double in (0, 1]. */
static double unit(uint64_t *rng)
{
    return (double)((cr_rng_next(rng) >> 11) + 1) * 0x1p-53;
}

/* The gap to the next entry: 1 + a geometric variable (Batagelj and Brandes, ALG1):
 * the number of candidates skipped before the next one present. */
static uint64_t gap(uint64_t *rng, double log_q)
{
    if (log_q == 0)
        return UINT64_MAX; /* p = 0: none */
    double skip = floor(log(unit(rng)) / log_q);
    return skip >= 1e18 ? UINT64_MAX : 1 + (uint64_t)skip;
}

/* Row i: its candidates are the columns below i (undirected) or every column but i
 * (directed), in order; the diagonal is added in its place with loops. */
static void draw_row(const cr_spmat_er *g, double log_q, uint64_t i, growing_arena *out)
{
    uint64_t rng = cr_rng_hash64(g->seed ^ cr_rng_hash64(i + 0x5b1e));
    uint64_t candidates = g->directed ? g->rows - 1 : i;
    bool diag_done = !g->loops;
    for (uint64_t c = gap(&rng, log_q) - 1; c < candidates; ) {
        uint64_t col = g->directed && c >= i ? c + 1 : c;
        if (!diag_done && col > i) {
            push(out, i, unit(&rng), g->weighted);
            diag_done = true;
        }
        push(out, col, g->weighted ? unit(&rng) : 0, g->weighted);
        uint64_t step = gap(&rng, log_q);
        c = step > candidates - c ? candidates : c + step;
    }
    if (!diag_done)
        push(out, i, unit(&rng), g->weighted);
}

cr_spmat *cr_spmat_erdos_renyi(cr_comm *comm, const cr_spmat_er *g, char *err, size_t errlen)
{
    not_from_handler(comm, "cr_spmat_erdos_renyi");
    const char *bad = bad_er(g);
    if (bad) { /* the same arguments on every rank: the same answer */
        cr_set_error(err, errlen, "cr_spmat_erdos_renyi: %s", bad);
        return NULL;
    }
    double p = edge_probability(g);
    double log_q = p >= 1 ? -INFINITY : log1p(-p);
    cr_spmat *a = shell(comm, g->rows, g->rows);
    growing_arena out = {0};
    for (uint64_t r = 0; r < a->count; r++) {
        draw_row(g, log_q, a->first + r, &out);
        a->offsets[r + 1] = out.n;
    }
    /* the arrays grew by doubling: give back what the last doubling did not use */
    a->col = out.n ? realloc(out.col, out.n * sizeof *out.col) : NULL;
    a->col = a->col ? a->col : out.col ? out.col : alloc_u64(0, "a matrix's columns");
    if (g->weighted) {
        a->val = out.n ? realloc(out.val, out.n * sizeof *out.val) : NULL;
        a->val = a->val ? a->val : out.val ? out.val : malloc(sizeof(double));
        if (!a->val)
            cr_fatal("spmat: out of memory for a value");
    }
    count_all(a);
    return a;
}

/* This rank's rows checked: offsets from 0, increasing; columns in range, each row's
 * increasing. NULL if they are, else what is wrong. */
static const char *bad_rows(uint64_t count, uint64_t cols, const uint64_t *offsets,
                            const uint64_t *col, char *line, size_t len)
{
    if (offsets[0] != 0)
        return "offsets[0] is not 0";
    for (uint64_t r = 0; r < count; r++) {
        if (offsets[r + 1] < offsets[r]) {
            snprintf(line, len, "offsets decrease at local row %llu", (unsigned long long)r);
            return line;
        }
        for (uint64_t k = offsets[r]; k < offsets[r + 1]; k++)
            if (col[k] >= cols || (k > offsets[r] && col[k] <= col[k - 1])) {
                snprintf(line, len, "local row %llu: column %llu is %s", (unsigned long long)r,
                         (unsigned long long)col[k], col[k] >= cols ? "out of range"
                                                                    : "not above the one before");
                return line;
            }
    }
    return NULL;
}

cr_spmat *cr_spmat_create(cr_comm *comm, uint64_t rows, uint64_t cols, const uint64_t *offsets,
                          const uint64_t *col_index, const double *vals, char *err, size_t errlen)
{
    not_from_handler(comm, "cr_spmat_create");
    char line[200];
    const char *bad = rows > MAX_ROWS || cols > MAX_ROWS ? "rows and columns must be at most 2^40"
                                                         : NULL;
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    uint64_t count = cr_block_count(rows, p, me);
    if (!bad && !offsets)
        bad = "offsets is NULL";
    if (!bad && !col_index && offsets[count] > 0)
        bad = "the columns are NULL";
    if (!bad)
        bad = bad_rows(count, cols, offsets, col_index, line, sizeof line);
    char why[300];
    if (agree(comm, bad ? (snprintf(why, sizeof why, "cr_spmat_create: %s", bad), why) : NULL,
              err, errlen))
        return NULL;
    cr_spmat *a = shell(comm, rows, cols);
    uint64_t n = offsets[count];
    memcpy(a->offsets, offsets, (count + 1) * sizeof *offsets);
    a->col = alloc_u64(n, "a matrix's columns");
    memcpy(a->col, col_index, n * sizeof *col_index);
    if (vals) {
        a->val = malloc((size_t)(n ? n : 1) * sizeof *a->val);
        if (!a->val)
            cr_fatal("spmat: out of memory for %llu values", (unsigned long long)n);
        memcpy(a->val, vals, n * sizeof *vals);
    }
    count_all(a);
    return a;
}

void cr_spmat_destroy(cr_spmat *a)
{
    if (!a)
        return;
    free(a->offsets);
    free(a->col);
    free(a->val);
    free(a);
}

uint64_t cr_spmat_rows(const cr_spmat *a) { return a->rows; }
uint64_t cr_spmat_cols(const cr_spmat *a) { return a->cols; }
uint64_t cr_spmat_nnz(const cr_spmat *a) { return a->nnz; }
bool cr_spmat_weighted(const cr_spmat *a) { return a->val != NULL; }
cr_comm *cr_spmat_comm(const cr_spmat *a) { return a->comm; }

cr_spmat_local cr_spmat_local_rows(const cr_spmat *a)
{
    return (cr_spmat_local){.first_row = a->first, .rows = a->count, .offsets = a->offsets,
                            .cols = a->col, .vals = a->val};
}

/* ---------------------------------------------------------------- transpose */

/* Sort one row's entries by column (insertion sort: rows are short; a long one
 * falls back to a merge through scratch). */
static int by_col(const void *x, const void *y)
{
    const entry *a = x, *b = y;
    return (a->col > b->col) - (a->col < b->col);
}

static void sort_row(uint64_t *col, double *val, uint64_t n)
{
    if (n < 2)
        return;
    if (n <= 32) {
        for (uint64_t i = 1; i < n; i++) {
            uint64_t c = col[i];
            double v = val ? val[i] : 0;
            uint64_t k = i;
            for (; k > 0 && col[k - 1] > c; k--) {
                col[k] = col[k - 1];
                if (val)
                    val[k] = val[k - 1];
            }
            col[k] = c;
            if (val)
                val[k] = v;
        }
        return;
    }
    entry *e = malloc(n * sizeof *e);
    if (!e)
        cr_fatal("spmat: out of memory sorting a row of %llu entries", (unsigned long long)n);
    for (uint64_t k = 0; k < n; k++)
        e[k] = (entry){.col = col[k], .val = val ? val[k] : 0};
    qsort(e, n, sizeof *e, by_col);
    for (uint64_t k = 0; k < n; k++) {
        col[k] = e[k].col;
        if (val)
            val[k] = e[k].val;
    }
    free(e);
}

/* Phase 1: the entries of each row of the transpose, counted at its owner; then the
 * offsets. Collective. */
static void count_phase(const cr_spmat *a, spmat_state *st, transpose_job *j)
{
    cr_block_layout l = cr_block_layout_of(a->cols, cr_comm_size(a->comm));
    uint64_t n = a->offsets[a->count];
    for (uint64_t k = 0; k < n; k++)
        cr_async(a->comm, cr_block_layout_owner(&l, a->col[k]), st->h_count, &a->col[k],
                 sizeof a->col[k]);
    cr_barrier(a->comm);
    uint64_t sum = 0;
    for (uint64_t r = 0; r < j->count; r++) {
        uint64_t c = j->offsets[r];
        j->offsets[r] = sum;
        sum += c;
    }
    j->offsets[j->count] = sum;
}

/* Phase 2: each entry (i, c) to the owner of row c of the transpose. Collective. */
static void place_phase(const cr_spmat *a, spmat_state *st)
{
    cr_block_layout l = cr_block_layout_of(a->cols, cr_comm_size(a->comm));
    size_t len = a->val ? sizeof(entry) : 2 * sizeof(uint64_t);
    for (uint64_t r = 0; r < a->count; r++)
        for (uint64_t k = a->offsets[r]; k < a->offsets[r + 1]; k++) {
            entry e = {.row = a->col[k], .col = a->first + r, .val = a->val ? a->val[k] : 0};
            cr_async(a->comm, cr_block_layout_owner(&l, e.row), st->h_entry, &e, len);
        }
    cr_barrier(a->comm);
}

cr_spmat *cr_spmat_transpose(const cr_spmat *a)
{
    not_from_handler(a->comm, "cr_spmat_transpose");
    spmat_state *st = state_of(a->comm);
    cr_spmat *t = shell(a->comm, a->cols, a->rows);
    transpose_job j = {.first = t->first, .count = t->count, .offsets = t->offsets};
    memset(j.offsets, 0, (j.count + 1) * sizeof *j.offsets);
    j.next = alloc_u64(j.count, "the transpose's row cursors");
    st->job = &j;
    cr_barrier(a->comm); /* every rank's job is set before the first count arrives */
    count_phase(a, st, &j);
    uint64_t n = j.offsets[j.count];
    memcpy(j.next, j.offsets, j.count * sizeof *j.next);
    j.entries = n;
    j.col = t->col = alloc_u64(n, "the transpose's columns");
    if (a->val) {
        j.val = t->val = malloc((size_t)(n ? n : 1) * sizeof *t->val);
        if (!t->val)
            cr_fatal("spmat: out of memory for %llu values", (unsigned long long)n);
    }
    place_phase(a, st);
    st->job = NULL;
    if (j.overflow)
        cr_fatal("internal error: %llu entries of the transpose more than were counted",
                 (unsigned long long)j.overflow);
    for (uint64_t r = 0; r < j.count; r++)
        if (j.next[r] != j.offsets[r + 1])
            cr_fatal("internal error: row %llu of the transpose got %llu entries of %llu",
                     (unsigned long long)(j.first + r),
                     (unsigned long long)(j.next[r] - j.offsets[r]),
                     (unsigned long long)(j.offsets[r + 1] - j.offsets[r]));
    free(j.next);
    for (uint64_t r = 0; r < t->count; r++)
        sort_row(t->col + t->offsets[r], t->val ? t->val + t->offsets[r] : NULL,
                 t->offsets[r + 1] - t->offsets[r]);
    count_all(t);
    return t;
}

/* ---------------------------------------------------------------- comparing */

static bool same_local(const cr_spmat *a, const cr_spmat *b)
{
    if (a->rows != b->rows || a->cols != b->cols || a->count != b->count ||
        (a->val == NULL) != (b->val == NULL))
        return false;
    uint64_t n = a->offsets[a->count];
    if (memcmp(a->offsets, b->offsets, (a->count + 1) * sizeof *a->offsets) ||
        memcmp(a->col, b->col, n * sizeof *a->col))
        return false;
    return !a->val || !memcmp(a->val, b->val, n * sizeof *a->val);
}

bool cr_spmat_equal(const cr_spmat *a, const cr_spmat *b)
{
    not_from_handler(a->comm, "cr_spmat_equal");
    int same = same_local(a, b), all = 0;
    cr_allreduce(a->comm, &same, &all, 1, CR_INT32, CR_OP_MIN, NULL);
    return all != 0;
}

/* ---------------------------------------------------------------- permutations */

/* The first of the errors the ranks found, as one line on every rank (or 0).
 * Collective. */
static int agree_index(cr_comm *comm, uint64_t bad, const char *what, char *err, size_t errlen)
{
    uint64_t first = 0;
    cr_allreduce(comm, &bad, &first, 1, CR_UINT64, CR_OP_MIN, NULL);
    if (first == UINT64_MAX)
        return 0;
    cr_set_error(err, errlen, "%s %llu", what, (unsigned long long)first);
    return -1;
}

/* Collective: this rank's block of an array of n filled by the (index[k], value[k])
 * of every rank: NULL, with err, if an index is out of range, filled twice or not at
 * all. */
static uint64_t *scatter_block(cr_comm *comm, uint64_t n, const uint64_t *index,
                               const uint64_t *value, uint64_t m, const char *what, char *err,
                               size_t errlen)
{
    spmat_state *st = state_of(comm);
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    scatter_job j = {.first = cr_block_first(n, p, me), .count = cr_block_count(n, p, me),
                     .bad = UINT64_MAX};
    j.block = alloc_u64(j.count, "a permutation's block");
    for (uint64_t k = 0; k < j.count; k++)
        j.block[k] = ROW_MISSING;
    st->scatter = &j;
    cr_barrier(comm); /* every rank's block is ready before the first record */
    cr_block_layout l = cr_block_layout_of(n, p);
    for (uint64_t k = 0; k < m; k++) {
        if (index[k] >= n) {
            j.bad = j.bad < index[k] ? j.bad : index[k];
            continue;
        }
        uint64_t e[2] = {index[k], value[k]};
        cr_async(comm, cr_block_layout_owner(&l, index[k]), st->h_scatter, e, sizeof e);
    }
    cr_barrier(comm);
    st->scatter = NULL;
    for (uint64_t k = 0; k < j.count && j.bad == UINT64_MAX; k++)
        if (j.block[k] == ROW_MISSING)
            j.bad = j.first + k;
    if (agree_index(comm, j.bad, what, err, errlen)) {
        free(j.block);
        return NULL;
    }
    return j.block;
}

uint64_t *cr_spmat_inverse(cr_comm *comm, uint64_t n, const uint64_t *perm, char *err,
                           size_t errlen)
{
    not_from_handler(comm, "cr_spmat_inverse");
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    uint64_t first = cr_block_first(n, p, me), count = cr_block_count(n, p, me);
    uint64_t *mine = alloc_u64(count, "a permutation's indices");
    for (uint64_t k = 0; k < count; k++)
        mine[k] = first + k;
    uint64_t *inv = scatter_block(comm, n, perm, mine, count,
                                  "cr_spmat_inverse: not a permutation: the value", err, errlen);
    free(mine);
    return inv;
}

/* A random permutation's record: a key (distinct: the mix is a bijection) and the
 * index it belongs to. */
typedef struct keyed {
    uint64_t key, index;
} keyed;

uint64_t *cr_spmat_random_permutation(cr_comm *comm, uint64_t n, uint64_t seed)
{
    not_from_handler(comm, "cr_spmat_random_permutation");
    int p = cr_comm_size(comm), me = cr_comm_rank(comm);
    uint64_t first = cr_block_first(n, p, me), count = cr_block_count(n, p, me);
    keyed *rec = count ? malloc(count * sizeof *rec) : NULL;
    if (count && !rec)
        cr_fatal("spmat: out of memory for %llu keys", (unsigned long long)count);
    uint64_t salt = cr_rng_hash64(seed + 0x7e3a);
    for (uint64_t k = 0; k < count; k++)
        rec[k] = (keyed){cr_rng_hash64(salt + first + k), first + k};
    cr_sort_opts o;
    cr_sort_opts_init(&o);
    o.record_bytes = sizeof(keyed);
    o.key_type = CR_UINT64;
    o.key_offset = 0;
    o.seed = seed;
    size_t got = (size_t)count;
    void *records = rec;
    cr_sort(comm, &records, &got, &o, NULL);
    /* exact blocks: the records at positions [first, first + count) in key order */
    uint64_t *index = alloc_u64(got, "a permutation's indices");
    uint64_t *place = alloc_u64(got, "a permutation's places");
    for (size_t k = 0; k < got; k++) {
        index[k] = ((keyed *)records)[k].index;
        place[k] = first + k;
    }
    free(records);
    char err[200];
    uint64_t *perm = scatter_block(comm, n, index, place, got, "internal error: index", err,
                                   sizeof err);
    if (!perm)
        cr_fatal("cr_spmat_random_permutation: %s", err);
    free(index), free(place);
    return perm;
}

/* Permute, phase 1: every row to the owner of its new row, in one record. */
static void send_rows(const cr_spmat *a, spmat_state *st, const uint64_t *rperm, uint64_t *bad)
{
    cr_block_layout l = cr_block_layout_of(a->rows, cr_comm_size(a->comm));
    size_t width = a->val ? 16 : 8, cap = 0;
    char *rec = NULL;
    for (uint64_t r = 0; r < a->count; r++) {
        if (rperm[r] >= a->rows) {
            *bad = *bad < rperm[r] ? *bad : rperm[r];
            continue;
        }
        uint64_t n = a->offsets[r + 1] - a->offsets[r];
        size_t len = 8 + (size_t)n * width;
        if (len > cap) {
            cap = len * 2;
            rec = realloc(rec, cap);
            if (!rec)
                cr_fatal("spmat: out of memory for a row of %llu entries", (unsigned long long)n);
        }
        memcpy(rec, &rperm[r], 8);
        memcpy(rec + 8, a->col + a->offsets[r], n * 8);
        if (a->val)
            memcpy(rec + 8 + n * 8, a->val + a->offsets[r], n * 8);
        cr_async(a->comm, cr_block_layout_owner(&l, rperm[r]), st->h_row, rec, len);
    }
    free(rec);
    cr_barrier(a->comm);
}

/* The arrived rows in order of their new index, into t. */
static void gather_rows(cr_spmat *t, permute_job *j)
{
    for (uint64_t r = 0; r < j->count; r++)
        t->offsets[r + 1] = t->offsets[r] + j->len[r];
    uint64_t n = t->offsets[j->count];
    t->col = alloc_u64(n, "the permuted matrix's columns");
    if (j->weighted) {
        t->val = malloc((size_t)(n ? n : 1) * sizeof *t->val);
        if (!t->val)
            cr_fatal("spmat: out of memory for %llu values", (unsigned long long)n);
    }
    for (uint64_t r = 0; r < j->count; r++) {
        memcpy(t->col + t->offsets[r], j->arena->col + j->at[r], j->len[r] * 8);
        if (j->weighted)
            memcpy(t->val + t->offsets[r], j->arena->val + j->at[r], j->len[r] * 8);
    }
}

/* Permute, phase 2: each entry's column to its new label, asked of the column's
 * owner (an index gather). */
static void relabel_columns(cr_spmat *t, spmat_state *st)
{
    cr_block_layout l = cr_block_layout_of(t->cols, cr_comm_size(t->comm));
    uint64_t n = t->offsets[t->count];
    for (uint64_t k = 0; k < n; k++) {
        uint64_t q[2] = {t->col[k], k};
        cr_async(t->comm, cr_block_layout_owner(&l, q[0]), st->h_ask, q, sizeof q);
    }
    cr_barrier(t->comm);
}

cr_spmat *cr_spmat_permute(const cr_spmat *a, const uint64_t *rperm, const uint64_t *cperm,
                           char *err, size_t errlen)
{
    not_from_handler(a->comm, "cr_spmat_permute");
    spmat_state *st = state_of(a->comm);
    int p = cr_comm_size(a->comm), me = cr_comm_rank(a->comm);
    cr_spmat *t = shell(a->comm, a->rows, a->cols);
    growing_arena arena = {0};
    permute_job j = {.first = t->first, .count = t->count, .arena = &arena,
                     .weighted = a->val != NULL, .bad_row = UINT64_MAX, .cperm = cperm,
                     .cfirst = cr_block_first(a->cols, p, me),
                     .ccount = cr_block_count(a->cols, p, me), .bad_col = UINT64_MAX,
                     .cols = a->cols};
    j.len = alloc_u64(j.count, "the permuted rows' lengths");
    j.at = alloc_u64(j.count, "the permuted rows' places");
    for (uint64_t r = 0; r < j.count; r++)
        j.len[r] = ROW_MISSING;
    st->perm = &j;
    cr_barrier(a->comm);
    uint64_t bad = UINT64_MAX;
    send_rows(a, st, rperm, &bad);
    bad = bad < j.bad_row ? bad : j.bad_row;
    for (uint64_t r = 0; r < j.count && bad == UINT64_MAX; r++)
        if (j.len[r] == ROW_MISSING)
            bad = j.first + r;
    int failed = agree_index(a->comm, bad, "cr_spmat_permute: the row permutation is not one: "
                             "row", err, errlen);
    if (!failed) {
        gather_rows(t, &j);
        free(arena.col), free(arena.val);
        arena = (growing_arena){0};
        j.col = t->col;
        relabel_columns(t, st);
        failed = agree_index(a->comm, j.bad_col, "cr_spmat_permute: the column permutation "
                             "gives column", err, errlen);
    }
    st->perm = NULL;
    free(arena.col), free(arena.val), free(j.len), free(j.at);
    if (failed) {
        cr_spmat_destroy(t);
        return NULL;
    }
    for (uint64_t r = 0; r < t->count; r++)
        sort_row(t->col + t->offsets[r], t->val ? t->val + t->offsets[r] : NULL,
                 t->offsets[r + 1] - t->offsets[r]);
    count_all(t);
    return t;
}

/* ---------------------------------------------------------------- toposort */

/* This level's pivots take the next places from the top down: rank q's pivots the
 * run below ranks 0 .. q-1's. Each pivot row takes its place, and its column's owner
 * is told. Returns the pivots of all ranks. Collective. */
static uint64_t pivot_level(const cr_spmat *m, spmat_state *st, topo_job *j, uint64_t *rows,
                            uint64_t n, uint64_t *top)
{
    int p = cr_comm_size(m->comm), me = cr_comm_rank(m->comm);
    uint64_t kept = 0; /* a row that lost its last entry (no triangular matrix) is none */
    for (uint64_t k = 0; k < n; k++)
        if (j->count[rows[k]] == 1)
            rows[kept++] = rows[k];
    n = kept;
    uint64_t *counts = alloc_u64((uint64_t)p, "the level's counts");
    cr_allgather(m->comm, &n, sizeof n, counts, NULL);
    uint64_t below = 0, all = 0;
    for (int q = 0; q < p; q++) {
        below += q < me ? counts[q] : 0;
        all += counts[q];
    }
    free(counts);
    cr_block_layout l = cr_block_layout_of(m->cols, p);
    for (uint64_t k = 0; k < n; k++) {
        uint64_t r = rows[k], place = *top - 1 - below - k;
        j->rperm[r] = place;
        j->count[r] = 0;
        uint64_t q[3] = {j->sum[r], place, j->first + r};
        if (q[0] >= m->cols) { /* a sum gone wrong: no triangular matrix */
            j->conflicts++;
            continue;
        }
        cr_async(m->comm, cr_block_layout_owner(&l, q[0]), st->h_pivot, q, sizeof q);
    }
    *top -= all;
    cr_barrier(m->comm); /* the columns placed, their entries deleted, the next pivots found */
    return all;
}

/* The rows of one entry, this level's pivots. */
static uint64_t first_pivots(const cr_spmat *m, topo_job *j)
{
    uint64_t n = 0;
    for (uint64_t r = 0; r < m->count; r++) {
        j->count[r] = m->offsets[r + 1] - m->offsets[r];
        j->sum[r] = 0;
        for (uint64_t k = m->offsets[r]; k < m->offsets[r + 1]; k++)
            j->sum[r] += m->col[k];
        if (j->count[r] == 1)
            j->next[n++] = r;
    }
    return n;
}

int cr_spmat_toposort(const cr_spmat *m, const cr_spmat *mt, uint64_t **rperm, uint64_t **cperm,
                      char *err, size_t errlen)
{
    not_from_handler(m->comm, "cr_spmat_toposort");
    spmat_state *st = state_of(m->comm);
    const char *bad = m->rows != m->cols ? "the matrix is not square"
                      : mt->rows != m->cols || mt->cols != m->rows || mt->comm != m->comm
                          ? "the second matrix is not the first's transpose"
                          : NULL;
    if (bad) {
        cr_set_error(err, errlen, "cr_spmat_toposort: %s", bad);
        return -1;
    }
    topo_job j = {.first = m->first, .mt = mt, .h_delete = st->h_delete};
    j.count = alloc_u64(m->count, "the rows' counts");
    j.sum = alloc_u64(m->count, "the rows' column sums");
    j.rperm = alloc_u64(m->count, "the row permutation");
    j.cperm = alloc_u64(mt->count, "the column permutation");
    for (uint64_t c = 0; c < mt->count; c++)
        j.cperm[c] = UINT64_MAX;
    j.cap = m->count ? m->count : 1;
    j.next = alloc_u64(j.cap, "the pivots");
    uint64_t *level = NULL, top = m->rows;
    st->topo = &j;
    j.nnext = first_pivots(m, &j);
    cr_barrier(m->comm); /* every rank's job is set before the first pivot arrives */
    for (;;) {
        /* this level's pivots: the rows that reached one entry, each once */
        free(level);
        level = j.next;
        uint64_t n = j.nnext;
        j.next = NULL, j.nnext = j.cap = 0;
        if (pivot_level(m, st, &j, level, n, &top) == 0)
            break;
    }
    st->topo = NULL;
    free(level), free(j.next), free(j.count), free(j.sum);
    uint64_t left[2] = {top, j.conflicts}, all_left[2] = {0, 0};
    cr_allreduce(m->comm, left, all_left, 2, CR_UINT64, CR_OP_MAX, NULL);
    if (all_left[0] > 0 || all_left[1] > 0) {
        free(j.rperm), free(j.cperm);
        cr_set_error(err, errlen, "cr_spmat_toposort: the matrix is not a permuted unit upper "
                     "triangular one: %llu rows never had a single entry left%s",
                     (unsigned long long)all_left[0],
                     all_left[1] ? ", and pivots met on one column" : "");
        return -1;
    }
    *rperm = j.rperm;
    *cperm = j.cperm;
    return 0;
}

bool cr_spmat_is_unit_upper(const cr_spmat *a)
{
    not_from_handler(a->comm, "cr_spmat_is_unit_upper");
    int ok = a->rows == a->cols;
    for (uint64_t r = 0; ok && r < a->count; r++)
        ok = a->offsets[r + 1] > a->offsets[r] && a->col[a->offsets[r]] == a->first + r;
    int all = 0;
    cr_allreduce(a->comm, &ok, &all, 1, CR_INT32, CR_OP_MIN, NULL);
    return all != 0;
}

/* ---------------------------------------------------------------- triangles */

/* Whether a holds only entries below its diagonal on this rank. */
static bool strictly_lower_here(const cr_spmat *a)
{
    for (uint64_t r = 0; r < a->count; r++)
        for (uint64_t k = a->offsets[r]; k < a->offsets[r + 1]; k++)
            if (a->col[k] >= a->first + r)
                return false;
    return true;
}

int cr_spmat_triangles(const cr_spmat *l, const cr_spmat *u, uint64_t *count, char *err,
                       size_t errlen)
{
    not_from_handler(l->comm, "cr_spmat_triangles");
    int ok = l->rows == l->cols && strictly_lower_here(l), all = 0;
    cr_allreduce(l->comm, &ok, &all, 1, CR_INT32, CR_OP_MIN, NULL);
    if (!all || (u && (u->rows != l->cols || u->cols != l->rows || u->comm != l->comm))) {
        cr_set_error(err, errlen, "cr_spmat_triangles: %s",
                     !all ? "the matrix is not strictly lower triangular"
                          : "the second matrix is not the first's transpose");
        return -1;
    }
    spmat_state *st = state_of(l->comm);
    triangle_job j = {.l = l};
    st->tri = &j;
    cr_barrier(l->comm); /* every rank's job is set before the first wedge arrives */
    /* each row's pairs of entries: of L's rows (L & L*U) or of U's (L & U*L); the
     * pair goes to the row of the larger, which holds the smaller or not */
    const cr_spmat *rows = u ? u : l;
    cr_block_layout lay = cr_block_layout_of(l->rows, cr_comm_size(l->comm));
    /* one record per entry x of a row: the row's entries up to x, as they lie; x's
     * row, where the record goes, may hold those before x */
    for (uint64_t r = 0; r < rows->count; r++) {
        const uint64_t *row = rows->col + rows->offsets[r];
        uint64_t n = rows->offsets[r + 1] - rows->offsets[r];
        for (uint64_t x = 1; x < n; x++)
            cr_async(l->comm, cr_block_layout_owner(&lay, row[x]), st->h_wedge, row,
                     (x + 1) * sizeof *row);
    }
    cr_barrier(l->comm);
    while (j.held) /* the wedges still waiting */
        merge_oldest(&j);
    st->tri = NULL;
    cr_allreduce(l->comm, &j.found, count, 1, CR_UINT64, CR_OP_SUM, NULL);
    return 0;
}
