/* Courier spmat: a distributed sparse matrix, the data of bale's applications
 * (docs/bale.md): transpose, permute, topological sort, triangles, shortest paths.
 *
 * The rows are block-distributed over the comm's ranks (cr_darray_block: rank r holds
 * rows [first, first + count), the first rows % P ranks one row more); each rank keeps
 * its rows in compressed form: offsets[count + 1] into cols[] (and vals[] when the
 * matrix is weighted), every row's column indices increasing and distinct.
 *
 * A matrix belongs to the comm it was made on and must be destroyed before it. The
 * collective calls must be made by every rank of the comm in the same order, from
 * user code (not from a handler); they run handlers (every rank takes part in the
 * exchanges). Errors (docs/architecture.md): a bad argument gives NULL or -1 with one
 * line in err on every rank alike; a rank out of memory ends the job with one line.
 */
#ifndef COURIER_SPMAT_H
#define COURIER_SPMAT_H

#include "courier/mailbox.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cr_spmat cr_spmat;

/* An Erdős–Rényi matrix as bale's flat model defines it (its -F, the default): each
 * possible off-diagonal entry present with probability edge_prob, drawn by the gaps
 * between entries (Batagelj and Brandes, ALG1, docs/references.md). Undirected: the
 * graph's lower triangle only (column < row), bale's form for triangles and
 * toposort. Directed: every off-diagonal entry. loops: a diagonal entry in every row.
 * weighted: values uniform in (0, 1]. Each row is drawn from its own stream of the
 * seed, so the matrix is the same at every rank count. */
typedef struct cr_spmat_er {
    uint64_t rows;      /* n: rows and columns (bale's -N, or -n per rank) */
    double nz_per_row;  /* average entries per row (bale's -z, default 10), used when
                           edge_prob is 0: edge_prob = nz_per_row / (n - 1) (less the
                           diagonal with loops), doubled when undirected, at most 1 */
    double edge_prob;   /* bale's -e; 0: from nz_per_row */
    bool directed;      /* bale's -d */
    bool loops;         /* bale's -l */
    bool weighted;      /* bale's -w */
    uint64_t seed;      /* bale's -s */
} cr_spmat_er;

/* Local: the defaults (10 entries per row, undirected, no loops, unweighted, seed 1);
 * rows must still be set. */
void cr_spmat_er_init(cr_spmat_er *g);

/* Collective: the matrix of g, NULL with a line in err if g is out of range (rows 0
 * or above 2^40, a probability outside [0, 1], a negative or NaN density). */
cr_spmat *cr_spmat_erdos_renyi(cr_comm *comm, const cr_spmat_er *g, char *err, size_t errlen);

/* Collective: a matrix of `rows` x `cols` from this rank's block of rows (count =
 * cr_darray_block's): offsets[count + 1] from 0, cols[offsets[count]], and vals of
 * the same length or NULL (unweighted; NULL on every rank alike). The arrays are
 * copied. NULL with a line in err if a column is out of range or a row's columns are
 * not increasing. */
cr_spmat *cr_spmat_create(cr_comm *comm, uint64_t rows, uint64_t cols, const uint64_t *offsets,
                          const uint64_t *col_index, const double *vals, char *err,
                          size_t errlen);

/* Local: free the matrix (not collective: a rank may destroy its part when done). */
void cr_spmat_destroy(cr_spmat *a);

/* Local: the dimensions and the number of entries of the whole matrix. */
uint64_t cr_spmat_rows(const cr_spmat *a);
uint64_t cr_spmat_cols(const cr_spmat *a);
uint64_t cr_spmat_nnz(const cr_spmat *a);
bool cr_spmat_weighted(const cr_spmat *a);
cr_comm *cr_spmat_comm(const cr_spmat *a);

/* Local: this rank's rows, valid until the matrix is destroyed: the first row it
 * holds, how many, and their offsets (count + 1), columns and values (NULL when
 * unweighted). */
typedef struct cr_spmat_local {
    uint64_t first_row, rows;
    const uint64_t *offsets, *cols;
    const double *vals;
} cr_spmat_local;
cr_spmat_local cr_spmat_local_rows(const cr_spmat *a);

/* Collective: the transpose, as bale's transpose_matrix computes it (docs/bale.md):
 * the entries of each row of the transpose counted at its owner in one exchange, then
 * each entry (i, j) sent to the owner of row j of the transpose, and every row sorted
 * once all have arrived. Memory per rank beside both matrices: one count per row of
 * the transpose it holds. */
cr_spmat *cr_spmat_transpose(const cr_spmat *a);

/* Collective: the matrix with its rows and columns permuted as bale's permute_matrix
 * defines it: row i of a becomes row rperm[i] and column j becomes column cperm[j].
 * rperm is this rank's block of the row permutation (cr_darray_block of the rows:
 * rperm[k] is the new place of row first + k), cperm its block of the column
 * permutation (cr_darray_block of the columns). Rows travel whole to the owners of
 * their new places; each entry's new column is asked of its column's owner (an index
 * gather). NULL, with one line in err on every rank, if rperm is not a permutation
 * or cperm gives a column out of range (cperm is not otherwise checked to be one). */
cr_spmat *cr_spmat_permute(const cr_spmat *a, const uint64_t *rperm, const uint64_t *cperm,
                           char *err, size_t errlen);

/* Collective: a uniform random permutation of 0 .. n-1 (a seed's), this rank's block
 * of it (cr_darray_block), malloc'd: perm[k] is the place of first + k. Made by
 * sorting distinct random keys (cr_sort), the same at every rank count. */
uint64_t *cr_spmat_random_permutation(cr_comm *comm, uint64_t n, uint64_t seed);

/* Collective: this rank's block of the inverse of a permutation of 0 .. n-1 given by
 * its blocks, malloc'd; NULL, with one line in err on every rank, if it is not one. */
uint64_t *cr_spmat_inverse(cr_comm *comm, uint64_t n, const uint64_t *perm, char *err,
                           size_t errlen);

/* Collective: bale's toposort. m is a permuted unit upper triangular matrix (a
 * unit upper triangular one with its rows and columns permuted) and mt its
 * transpose (cr_spmat_transpose, which the caller makes once). Finds permutations
 * that make it unit upper triangular again: *rperm (this rank's block of the rows)
 * and *cperm (its block of the columns), malloc'd, with cr_spmat_permute's meaning.
 * By levels (docs/bale.md): the rows with a single entry left are pivots; each
 * level's pivots take the last free places (the places claimed per rank by one
 * allgather), tell their columns' owners, which delete the column from every other
 * row holding it, and the rows left with one entry are the next level's. -1, with a
 * line in err on every rank, if m is not square or not such a matrix (rows that
 * never get down to one entry). */
int cr_spmat_toposort(const cr_spmat *m, const cr_spmat *mt, uint64_t **rperm, uint64_t **cperm,
                      char *err, size_t errlen);

/* Collective: whether a is unit upper triangular in structure: square, and every
 * row's first entry on the diagonal (values are not looked at). */
bool cr_spmat_is_unit_upper(const cr_spmat *a);

/* Collective: the triangles of the graph whose strictly lower triangle l is (bale's
 * triangles, the push form): for each entry of a row, the row's entries before it go
 * in one record to that entry's row, which counts those it holds (a merge of two
 * sorted lists). With u NULL the rows of l are used (bale's
 * algorithm 0, L & L*U), with u the transpose of l its rows (algorithm 1, L & U*L:
 * other pairs, the same count). *count on every rank; -1 with a line in err if l is
 * not square and strictly lower triangular, or u is not its transpose. */
int cr_spmat_triangles(const cr_spmat *l, const cr_spmat *u, uint64_t *count, char *err,
                       size_t errlen);

/* Collective: whether a and b (on the same comm) have the same dimensions, the same
 * entries and the same values. */
bool cr_spmat_equal(const cr_spmat *a, const cr_spmat *b);

#endif
