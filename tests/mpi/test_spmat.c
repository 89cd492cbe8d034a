/* cr_spmat (include/courier/spmat.h) under mpirun. The reference is the same matrix
 * made on a comm of this rank alone (MPI_COMM_SELF): it holds every row, so each rank
 * checks its block of the distributed matrix against it (the generator gives the same
 * matrix at every rank count), and the distributed transpose against a transpose the
 * test computes itself from the whole matrix. */
#include "harness.h"

#include <courier.h>

#include <stdlib.h>
#include <string.h>

static cr_comm *world(const char *route)
{
    cr_config cfg;
    config_on_route(&cfg, route, 256); /* small buffers: entries in many buffers */
    return cr_comm_create(MPI_COMM_WORLD, &cfg);
}

static cr_comm *alone(void)
{
    cr_config cfg;
    cr_config_init(&cfg);
    return cr_comm_create(MPI_COMM_SELF, &cfg);
}

/* Rows [first, first + count) of `whole` (a matrix of one rank) equal `part`'s rows. */
static void check_rows_equal(const cr_spmat_local *part, const cr_spmat_local *whole,
                             const char *what)
{
    for (uint64_t r = 0; r < part->rows; r++) {
        uint64_t i = part->first_row + r;
        uint64_t n = part->offsets[r + 1] - part->offsets[r];
        uint64_t m = whole->offsets[i + 1] - whole->offsets[i];
        CHECK(n == m, "%s: row %llu has %llu entries, the reference %llu", what,
              (unsigned long long)i, (unsigned long long)n, (unsigned long long)m);
        if (n != m)
            return;
        const uint64_t *c = part->cols + part->offsets[r], *w = whole->cols + whole->offsets[i];
        CHECK(!memcmp(c, w, n * sizeof *c), "%s: row %llu's columns differ", what,
              (unsigned long long)i);
        if (part->vals && whole->vals)
            CHECK(!memcmp(part->vals + part->offsets[r], whole->vals + whole->offsets[i],
                          n * sizeof(double)),
                  "%s: row %llu's values differ", what, (unsigned long long)i);
    }
}

/* The rules of the generator on this rank's rows. */
static void check_er_rows(const cr_spmat_local *l, const cr_spmat_er *g)
{
    for (uint64_t r = 0; r < l->rows; r++) {
        uint64_t i = l->first_row + r;
        bool diag = false;
        for (uint64_t k = l->offsets[r]; k < l->offsets[r + 1]; k++) {
            uint64_t c = l->cols[k];
            CHECK(c < g->rows, "row %llu: column %llu", (unsigned long long)i,
                  (unsigned long long)c);
            CHECK(k == l->offsets[r] || c > l->cols[k - 1], "row %llu: columns not increasing",
                  (unsigned long long)i);
            CHECK(g->directed || c <= i, "row %llu: column %llu above the diagonal",
                  (unsigned long long)i, (unsigned long long)c);
            diag |= c == i;
            if (l->vals)
                CHECK(l->vals[k] > 0 && l->vals[k] <= 1, "row %llu: value %g",
                      (unsigned long long)i, l->vals[k]);
        }
        CHECK(diag == g->loops, "row %llu: diagonal %s", (unsigned long long)i,
              diag ? "present without loops" : "missing with loops");
    }
}

/* The transpose of a whole matrix, computed here. */
typedef struct plain {
    uint64_t *offsets, *cols;
    double *vals;
} plain;

static plain transpose_whole(const cr_spmat_local *w, uint64_t cols)
{
    plain t = {calloc(cols + 1, 8), NULL, NULL};
    uint64_t n = w->offsets[w->rows];
    t.cols = malloc((n ? n : 1) * 8);
    t.vals = w->vals ? malloc((n ? n : 1) * 8) : NULL;
    for (uint64_t k = 0; k < n; k++)
        t.offsets[w->cols[k] + 1]++;
    for (uint64_t c = 0; c < cols; c++)
        t.offsets[c + 1] += t.offsets[c];
    uint64_t *fill = calloc(cols + 1, 8);
    for (uint64_t i = 0; i < w->rows; i++) /* rows in order: each column's rows increase */
        for (uint64_t k = w->offsets[i]; k < w->offsets[i + 1]; k++) {
            uint64_t c = w->cols[k], at = t.offsets[c] + fill[c]++;
            t.cols[at] = i;
            if (t.vals)
                t.vals[at] = w->vals[k];
        }
    free(fill);
    return t;
}

static void run_er(const char *route, cr_spmat_er g)
{
    cr_comm *comm = world(route), *self = alone();
    char err[300];
    cr_spmat *a = cr_spmat_erdos_renyi(comm, &g, err, sizeof err);
    cr_spmat *whole = cr_spmat_erdos_renyi(self, &g, err, sizeof err);
    CHECK(a && whole, "cr_spmat_erdos_renyi: %s", err);
    if (!a || !whole)
        return;
    cr_spmat_local l = cr_spmat_local_rows(a), w = cr_spmat_local_rows(whole);
    CHECK(cr_spmat_nnz(a) == cr_spmat_nnz(whole), "%llu entries, the reference %llu",
          (unsigned long long)cr_spmat_nnz(a), (unsigned long long)cr_spmat_nnz(whole));
    check_er_rows(&l, &g);
    check_rows_equal(&l, &w, "the generator");

    cr_spmat *t = cr_spmat_transpose(a);
    plain ref = transpose_whole(&w, g.rows);
    cr_spmat_local tl = cr_spmat_local_rows(t);
    cr_spmat_local rl = {.first_row = 0, .rows = g.rows, .offsets = ref.offsets,
                         .cols = ref.cols, .vals = ref.vals};
    CHECK(cr_spmat_nnz(t) == cr_spmat_nnz(a), "the transpose has %llu entries of %llu",
          (unsigned long long)cr_spmat_nnz(t), (unsigned long long)cr_spmat_nnz(a));
    CHECK(cr_spmat_rows(t) == g.rows && cr_spmat_weighted(t) == g.weighted, "its shape");
    check_rows_equal(&tl, &rl, "the transpose");
    cr_spmat *back = cr_spmat_transpose(t);
    CHECK(cr_spmat_equal(back, a), "the transpose of the transpose is not the input");
    CHECK(!cr_spmat_equal(t, a) || cr_spmat_nnz(a) == 0 || g.directed == false,
          "a directed matrix equal to its transpose");
    free(ref.offsets), free(ref.cols), free(ref.vals);
    cr_spmat_destroy(back);
    cr_spmat_destroy(t);
    cr_spmat_destroy(whole);
    cr_spmat_destroy(a);
    cr_comm_destroy(self);
    cr_comm_destroy(comm);
}

static void test_er_and_transpose(void **state)
{
    (void)state;
    static const char *const routes[] = {"direct", "nlnr"};
    for (int r = 0; r < 2; r++) {
        cr_spmat_er g;
        cr_spmat_er_init(&g);
        g.rows = 301;
        run_er(routes[r], g); /* lower triangular */
        g.directed = true, g.weighted = true, g.seed = 7;
        run_er(routes[r], g);
        g.loops = true, g.nz_per_row = 3;
        run_er(routes[r], g);
        g.directed = false, g.rows = 5, g.edge_prob = 1; /* fewer rows than ranks */
        run_er(routes[r], g);
        g.directed = true, g.loops = false, g.edge_prob = 0, g.nz_per_row = 0; /* empty */
        run_er(routes[r], g);
    }
    verdict();
}

/* The permuted whole matrix, computed here: row i to rp[i], column j to cp[j]. */
static plain permute_whole(const cr_spmat_local *w, const uint64_t *rp, const uint64_t *cp)
{
    uint64_t n = w->rows, nnz = w->offsets[n];
    plain t = {calloc(n + 1, 8), malloc((nnz ? nnz : 1) * 8),
               w->vals ? malloc((nnz ? nnz : 1) * 8) : NULL};
    uint64_t *from = malloc((n ? n : 1) * 8); /* the row that lands at each place */
    for (uint64_t i = 0; i < n; i++)
        from[rp[i]] = i;
    for (uint64_t r = 0; r < n; r++)
        t.offsets[r + 1] = t.offsets[r] + w->offsets[from[r] + 1] - w->offsets[from[r]];
    for (uint64_t r = 0; r < n; r++) {
        uint64_t at = t.offsets[r], len = t.offsets[r + 1] - at;
        for (uint64_t k = 0; k < len; k++) { /* insertion by new column: rows are short */
            uint64_t src = w->offsets[from[r]] + k, c = cp[w->cols[src]], q = k;
            double v = w->vals ? w->vals[src] : 0;
            for (; q > 0 && t.cols[at + q - 1] > c; q--) {
                t.cols[at + q] = t.cols[at + q - 1];
                if (t.vals)
                    t.vals[at + q] = t.vals[at + q - 1];
            }
            t.cols[at + q] = c;
            if (t.vals)
                t.vals[at + q] = v;
        }
    }
    free(from);
    return t;
}

static void run_permute(const char *route, cr_spmat_er g, uint64_t seed)
{
    cr_comm *comm = world(route), *self = alone();
    char err[300];
    cr_spmat *a = cr_spmat_erdos_renyi(comm, &g, err, sizeof err);
    cr_spmat *whole = cr_spmat_erdos_renyi(self, &g, err, sizeof err);
    uint64_t n = g.rows;
    uint64_t *rp = cr_spmat_random_permutation(comm, n, seed);
    uint64_t *cp = cr_spmat_random_permutation(comm, n, seed + 1);
    uint64_t *rp_all = cr_spmat_random_permutation(self, n, seed);
    uint64_t *cp_all = cr_spmat_random_permutation(self, n, seed + 1);
    uint64_t first, count;
    cr_darray_block(n, test_size, test_rank, &first, &count);
    CHECK(!memcmp(rp, rp_all + first, count * 8), "the permutation differs from one rank's");
    unsigned char *seen = calloc(n + 1, 1);
    for (uint64_t i = 0; i < n; i++) {
        CHECK(rp_all[i] < n && !seen[rp_all[i]], "not a permutation at %llu",
              (unsigned long long)i);
        if (rp_all[i] < n)
            seen[rp_all[i]] = 1;
    }
    free(seen);
    cr_spmat *p = cr_spmat_permute(a, rp, cp, err, sizeof err);
    CHECK(p != NULL, "cr_spmat_permute: %s", err);
    if (p) {
        cr_spmat_local w = cr_spmat_local_rows(whole), pl = cr_spmat_local_rows(p);
        plain ref = permute_whole(&w, rp_all, cp_all);
        cr_spmat_local rl = {.first_row = 0, .rows = n, .offsets = ref.offsets, .cols = ref.cols,
                             .vals = ref.vals};
        check_rows_equal(&pl, &rl, "the permuted matrix");
        CHECK(cr_spmat_nnz(p) == cr_spmat_nnz(a), "entries lost or made");
        uint64_t *ri = cr_spmat_inverse(comm, n, rp, err, sizeof err);
        uint64_t *ci = cr_spmat_inverse(comm, n, cp, err, sizeof err);
        CHECK(ri && ci, "cr_spmat_inverse: %s", err);
        cr_spmat *back = ri && ci ? cr_spmat_permute(p, ri, ci, err, sizeof err) : NULL;
        CHECK(back && cr_spmat_equal(back, a), "the inverse permutations do not give it back");
        free(ref.offsets), free(ref.cols), free(ref.vals);
        free(ri), free(ci);
        cr_spmat_destroy(back);
        cr_spmat_destroy(p);
    }
    /* a row permutation that is not one: two rows to place 0 (when there are two) */
    if (n >= 2) {
        for (uint64_t k = 0; k < count; k++)
            if (first + k < 2)
                rp[k] = 0;
        cr_spmat *bad = cr_spmat_permute(a, rp, cp, err, sizeof err);
        CHECK(bad == NULL && strstr(err, "not one"), "a repeated place accepted: '%s'", err);
        cr_spmat_destroy(bad);
        CHECK(cr_spmat_inverse(comm, n, rp, err, sizeof err) == NULL &&
                  strstr(err, "not a permutation"),
              "the inverse of no permutation: '%s'", err);
    }
    free(rp), free(cp), free(rp_all), free(cp_all);
    cr_spmat_destroy(whole);
    cr_spmat_destroy(a);
    cr_comm_destroy(self);
    cr_comm_destroy(comm);
}

static void test_permute(void **state)
{
    (void)state;
    cr_spmat_er g;
    cr_spmat_er_init(&g);
    g.rows = 257;
    run_permute("direct", g, 3);
    g.directed = true, g.weighted = true, g.loops = true;
    run_permute("nlnr", g, 5);
    g.rows = 3, g.edge_prob = 1; /* fewer rows than ranks */
    run_permute("direct", g, 9);
    verdict();
}

/* bale's toposort input (a lower triangle with its diagonal, transposed, rows and
 * columns permuted) sorted back: both results permutations, and the matrix they
 * permute unit upper triangular. A matrix that is not such (a directed one without
 * its diagonal) is refused on every rank. */
static void run_toposort(const char *route, uint64_t rows, double nz, uint64_t seed)
{
    cr_comm *comm = world(route);
    char err[300];
    cr_spmat_er g;
    cr_spmat_er_init(&g);
    g.rows = rows, g.nz_per_row = nz, g.loops = true, g.seed = seed;
    cr_spmat *lower = cr_spmat_erdos_renyi(comm, &g, err, sizeof err);
    cr_spmat *upper = cr_spmat_transpose(lower);
    CHECK(cr_spmat_is_unit_upper(upper), "the transposed lower triangle is not unit upper");
    CHECK(rows < 2 || !cr_spmat_is_unit_upper(lower) || cr_spmat_nnz(lower) == rows,
          "a lower triangle with entries below the diagonal taken for upper");
    uint64_t *rp = cr_spmat_random_permutation(comm, rows, seed + 1);
    uint64_t *cp = cr_spmat_random_permutation(comm, rows, seed + 2);
    cr_spmat *m = cr_spmat_permute(upper, rp, cp, err, sizeof err);
    cr_spmat *mt = cr_spmat_transpose(m);
    uint64_t *tr = NULL, *tc = NULL;
    int rc = cr_spmat_toposort(m, mt, &tr, &tc, err, sizeof err);
    CHECK(rc == 0, "cr_spmat_toposort: %s", err);
    if (rc == 0) {
        uint64_t *ci = cr_spmat_inverse(comm, rows, tc, err, sizeof err);
        CHECK(ci != NULL, "the column result is not a permutation: %s", err);
        cr_spmat *t = cr_spmat_permute(m, tr, tc, err, sizeof err);
        CHECK(t && cr_spmat_is_unit_upper(t), "the sorted matrix is not unit upper triangular");
        CHECK(t && cr_spmat_nnz(t) == cr_spmat_nnz(upper), "entries lost");
        cr_spmat_destroy(t);
        free(ci), free(tr), free(tc);
    }
    /* a directed matrix without its diagonal: every rank refuses it alike */
    cr_spmat_er d = g;
    d.directed = true, d.loops = false, d.nz_per_row = 3;
    cr_spmat *bad = cr_spmat_erdos_renyi(comm, &d, err, sizeof err);
    cr_spmat *badt = cr_spmat_transpose(bad);
    tr = tc = NULL;
    rc = cr_spmat_toposort(bad, badt, &tr, &tc, err, sizeof err);
    CHECK(rows < 4 || (rc == -1 && strstr(err, "not a permuted unit upper triangular")),
          "a directed matrix sorted: rc %d, '%s'", rc, err);
    free(tr), free(tc);
    cr_spmat_destroy(badt), cr_spmat_destroy(bad);
    free(rp), free(cp);
    cr_spmat_destroy(mt), cr_spmat_destroy(m), cr_spmat_destroy(upper), cr_spmat_destroy(lower);
    cr_comm_destroy(comm);
}

static void test_toposort(void **state)
{
    (void)state;
    run_toposort("direct", 400, 6, 11);
    run_toposort("nlnr", 211, 3, 12);
    run_toposort("direct", 3, 2, 13); /* fewer rows than ranks */
    verdict();
}

/* Triangles in both of bale's push forms against a count of the whole graph made
 * here (every triple of vertices that are pairwise neighbours, by search); a matrix
 * with an entry on or above the diagonal is refused. */
static uint64_t triangles_whole(const cr_spmat_local *w)
{
    uint64_t found = 0;
    for (uint64_t c = 0; c < w->rows; c++)                       /* the largest vertex */
        for (uint64_t x = w->offsets[c]; x < w->offsets[c + 1]; x++) /* the middle one */
            for (uint64_t y = w->offsets[c]; y < w->offsets[c + 1]; y++) { /* the smallest */
                uint64_t b = w->cols[x], a = w->cols[y];
                if (a >= b)
                    continue;
                for (uint64_t k = w->offsets[b]; k < w->offsets[b + 1]; k++)
                    found += w->cols[k] == a;
            }
    return found;
}

static void test_triangles(void **state)
{
    (void)state;
    static const double dens[] = {12, 4, 30};
    static const uint64_t rows[] = {500, 301, 60};
    for (int c = 0; c < 3; c++) {
        cr_comm *comm = world(c == 1 ? "nlnr" : "direct"), *self = alone();
        cr_spmat_er g;
        cr_spmat_er_init(&g);
        g.rows = rows[c], g.nz_per_row = dens[c], g.seed = 40 + (uint64_t)c;
        char err[300];
        cr_spmat *l = cr_spmat_erdos_renyi(comm, &g, err, sizeof err);
        cr_spmat *whole = cr_spmat_erdos_renyi(self, &g, err, sizeof err);
        cr_spmat_local w = cr_spmat_local_rows(whole);
        uint64_t want = triangles_whole(&w), got0 = 0, got1 = 0;
        cr_spmat *u = cr_spmat_transpose(l);
        CHECK(cr_spmat_triangles(l, NULL, &got0, err, sizeof err) == 0, "%s", err);
        CHECK(cr_spmat_triangles(l, u, &got1, err, sizeof err) == 0, "%s", err);
        CHECK(got0 == want && got1 == want, "%llu and %llu triangles, the whole graph has %llu",
              (unsigned long long)got0, (unsigned long long)got1, (unsigned long long)want);
        CHECK(want > 0 || c == 1, "no triangle to count: the case checks nothing");
        /* with loops, the diagonal is in: refused */
        g.loops = true;
        cr_spmat *d = cr_spmat_erdos_renyi(comm, &g, err, sizeof err);
        CHECK(cr_spmat_triangles(d, NULL, &got0, err, sizeof err) == -1 &&
                  strstr(err, "not strictly lower"),
              "a diagonal accepted: '%s'", err);
        cr_spmat_destroy(d), cr_spmat_destroy(u), cr_spmat_destroy(whole), cr_spmat_destroy(l);
        cr_comm_destroy(self);
        cr_comm_destroy(comm);
    }
    verdict();
}

/* A matrix not square, from arrays: row i holds the columns i, i + 3, ... below 11. */
static void test_create_and_refuse(void **state)
{
    (void)state;
    cr_comm *comm = world("direct");
    uint64_t rows = 13, cols = 11, first, count;
    cr_darray_block(rows, test_size, test_rank, &first, &count);
    uint64_t *off = calloc(count + 1, 8), *col = malloc(cols * count * 8 + 8);
    for (uint64_t r = 0; r < count; r++) {
        off[r + 1] = off[r];
        for (uint64_t c = (first + r) % cols; c < cols; c += 3)
            col[off[r + 1]++] = c;
    }
    char err[300] = "";
    cr_spmat *a = cr_spmat_create(comm, rows, cols, off, col, NULL, err, sizeof err);
    CHECK(a != NULL, "cr_spmat_create: %s", err);
    if (a) {
        uint64_t want = 0;
        for (uint64_t i = 0; i < rows; i++)
            want += (cols - i % cols + 2) / 3;
        CHECK(cr_spmat_nnz(a) == want, "%llu entries, expected %llu",
              (unsigned long long)cr_spmat_nnz(a), (unsigned long long)want);
        cr_spmat *t = cr_spmat_transpose(a);
        CHECK(cr_spmat_rows(t) == cols && cr_spmat_cols(t) == rows, "the transpose's shape");
        cr_spmat_local tl = cr_spmat_local_rows(t);
        for (uint64_t r = 0; r < tl.rows; r++) /* row c of the transpose: i with i%11 <= c, c-i%11 = 0 mod 3 */
            for (uint64_t k = tl.offsets[r]; k < tl.offsets[r + 1]; k++) {
                uint64_t c = tl.first_row + r, i = tl.cols[k];
                CHECK(i < rows && i % cols <= c && (c - i % cols) % 3 == 0,
                      "transpose row %llu holds %llu", (unsigned long long)c,
                      (unsigned long long)i);
            }
        cr_spmat *back = cr_spmat_transpose(t);
        CHECK(cr_spmat_equal(back, a), "the transpose of the transpose");
        cr_spmat_destroy(back);
        cr_spmat_destroy(t);
        cr_spmat_destroy(a);
    }
    /* the last rank's first row gets a column out of range: every rank refuses */
    if (test_rank == test_size - 1 && count > 0 && off[1] > off[0])
        col[0] = cols;
    bool bad_somewhere = sum_all(test_rank == test_size - 1 && count > 0 && off[1] > off[0]);
    err[0] = '\0';
    a = cr_spmat_create(comm, rows, cols, off, col, NULL, err, sizeof err);
    if (bad_somewhere)
        CHECK(a == NULL && strstr(err, "out of range"), "a column out of range accepted: '%s'", err);
    cr_spmat_destroy(a);
    cr_spmat_er g;
    cr_spmat_er_init(&g);
    g.rows = 10, g.edge_prob = 1.5;
    CHECK(!cr_spmat_erdos_renyi(comm, &g, err, sizeof err) && strstr(err, "probability"),
          "a probability of 1.5 accepted: '%s'", err);
    g.edge_prob = 0, g.rows = 0;
    CHECK(!cr_spmat_erdos_renyi(comm, &g, err, sizeof err) && strstr(err, "rows"),
          "0 rows accepted: '%s'", err);
    free(off), free(col);
    cr_comm_destroy(comm);
    verdict();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_er_and_transpose),
        cmocka_unit_test(test_create_and_refuse),
        cmocka_unit_test(test_permute),
        cmocka_unit_test(test_toposort),
        cmocka_unit_test(test_triangles),
    };
    return RUN_MPI_TESTS(argc, argv, tests);
}
