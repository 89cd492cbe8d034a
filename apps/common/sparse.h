/* Sparse matrices for the exchange planner's apps (plan, spmv): Matrix Market files,
 * the project's graph generators as adjacency matrices, 2D/3D stencils, row-block or
 * file partitions, and the communication of a column-parallel SpMV
 * (Duymuş 2021, docs/references.md, section 2.1). Sequential and local: every
 * rank that calls these gets the same result. */
#ifndef COURIER_APPS_SPARSE_H
#define COURIER_APPS_SPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A square n x n matrix in compressed columns; rows ascending within a column, no
 * repeated entries (repeats in the input are summed). */
typedef struct sparse_matrix {
    uint64_t n, nnz;
    uint64_t *col_ptr; /* n + 1 */
    uint64_t *row;     /* nnz */
    double *val;       /* nnz */
} sparse_matrix;

void sparse_free(sparse_matrix *m);

/* Load an input: a generator spec or a Matrix Market file.
 *   rmat:S[:E]      R-MAT (Graph500 parameters), 2^S vertices, E * 2^S edges (E = 16),
 *                   vertex ids as generated (not permuted), symmetrized
 *   rmatp:S[:E]     the same with vertices permuted by the seed
 *   gnm:S[:E]       uniform random edges, symmetrized
 *   rgg:S[:D]       random geometric graph in the unit square, average degree D (16)
 *   stencil2d:K     5-point Laplacian on a K x K grid
 *   stencil3d:K     7-point Laplacian on a K x K x K grid
 *   like:NAME[/D]   shaped like matrix NAME of the message-sharing thesis's Table 6.1
 *                   (its rows, nonzeros and degree variation; a 3D mesh with a share
 *                   of couplings anywhere), rows and nonzeros divided by D
 *   A+B             the sum of two inputs with the same number of rows (B gets seed + 1)
 *   anything else   a Matrix Market file (coordinate; real, integer or pattern;
 *                   general, symmetric or skew-symmetric; square)
 * Returns 0, or -1 with one line in err (for a file: the line number). */
int sparse_load(const char *spec, uint64_t seed, sparse_matrix *m, char *err, size_t errlen);
/* Check a spec as sparse_load would, without building the matrix (a file must open
 * and begin with a Matrix Market header). Returns 0, or -1 with one line in err. */
int sparse_check(const char *spec, char *err, size_t errlen);

/* The matrices like:NAME knows, in the order of the thesis's Table 6.1. */
size_t sparse_like_count(void);
const char *sparse_like_name(size_t i);

/* A short name for tables: the spec without a directory and ".mtx". */
void sparse_name(const char *spec, char *out, size_t len);

/* Row-block partition: index i to part floor(i * parts / n). */
void sparse_block_partition(uint64_t n, int parts, int *part);

/* Whether this build has METIS (Debian's libmetis-dev, found by Meson). */
bool sparse_have_metis(void);
/* METIS's k-way partition of the graph of A + A^T (the diagonal left out) into
 * `parts`, minimizing the edge cut, seeded. Returns 0, or -1 with
 * one line in err (no METIS in this build, a matrix too large for its indices). */
int sparse_metis_partition(const sparse_matrix *m, int parts, uint64_t seed, int *part,
                           char *err, size_t errlen);
/* How an app partitions rows: --partition FILE, --partitioner block|metis. */
extern const char *const sparse_partitioners[]; /* "block", "metis", NULL */
enum { SPARSE_BLOCK, SPARSE_METIS };
/* The usage error of these flags together, or NULL: a file and a partitioner at
 * once, or metis in a build without it. */
const char *sparse_partition_misuse(const char *file, int partitioner);
/* part[] by the file if one is named, else by the partitioner. Returns 0, or -1 with
 * one line in err. */
int sparse_partition(const sparse_matrix *m, int parts, const char *file, int partitioner,
                     uint64_t seed, int *part, char *err, size_t errlen);
/* Read a partition vector: n lines, one part in [0, parts) each ('%' or '#' lines are
 * comments). Returns 0, or -1 with one line in err naming the line. */
int sparse_read_partition(const char *path, uint64_t n, int parts, int *part, char *err,
                          size_t errlen);

/* The communication of y = Ax computed column-parallel (x_j and y_j on part[j]): the
 * part owning column j sends the partial sum for row i to part[i] when they differ,
 * one message per pair of parts. rows lists, per message, the rows it carries
 * (ascending); volume is their count. */
typedef struct spmv_comm {
    int nranks;
    uint64_t *ptr;      /* nranks + 1 */
    int *dest;          /* per message, ascending per rank */
    uint64_t *volume;
    uint64_t *rows_ptr; /* per message + 1 */
    uint64_t *rows;
} spmv_comm;

/* At most 4096 parts and 2^40 rows (checked: abort). */
void spmv_comm_build(const sparse_matrix *m, const int *part, int nranks, spmv_comm *c);
void spmv_comm_free(spmv_comm *c);

#endif
