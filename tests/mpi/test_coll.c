/* Collectives under mpirun: every algorithm against the MPI library's own call,
 * results bit-identical on all ranks, and split-phase progress next to mailbox
 * traffic. */
#include "harness.h"

#include "courier/rng.h"

#include <courier.h>

#include <stdlib.h>
#include <string.h>

typedef struct variant {
    int algorithm, ports;
} variant;

static const variant reduce_variants[] = {
    {CR_ALLREDUCE_AUTO, 0},          {CR_ALLREDUCE_BINOMIAL, 0},      {CR_ALLREDUCE_BUTTERFLY, 0},
    {CR_ALLREDUCE_DISSEMINATION, 0}, {CR_ALLREDUCE_DISSEMINATION, 1}, {CR_ALLREDUCE_DISSEMINATION, 2},
    {CR_ALLREDUCE_DISSEMINATION, 3}, {CR_ALLREDUCE_BRUCK, 1},         {CR_ALLREDUCE_BRUCK, 2},
    {CR_ALLREDUCE_BRUCK, 3},         {CR_ALLREDUCE_SHARED, 0},
};
#define NRV (sizeof reduce_variants / sizeof reduce_variants[0])

static const size_t counts[] = {0, 1, 7, 255, 1000};
#define NCOUNTS (sizeof counts / sizeof counts[0])

static cr_comm *open_comm(void)
{
    return cr_comm_create(MPI_COMM_WORLD, NULL);
}

static MPI_Datatype mpi_type(cr_dtype t)
{
    switch (t) {
    case CR_INT32: return MPI_INT32_T;
    case CR_INT64: return MPI_INT64_T;
    case CR_UINT64: return MPI_UINT64_T;
    case CR_FLOAT: return MPI_FLOAT;
    default: return MPI_DOUBLE;
    }
}

static MPI_Op mpi_op(cr_op op)
{
    switch (op) {
    case CR_OP_MIN: return MPI_MIN;
    case CR_OP_MAX: return MPI_MAX;
    case CR_OP_BAND: return MPI_BAND;
    case CR_OP_BOR: return MPI_BOR;
    default: return MPI_SUM;
    }
}

static size_t type_size(cr_dtype t)
{
    return t == CR_INT32 || t == CR_FLOAT ? 4 : 8;
}

/* Inputs that expose double counting: distinct per rank and element, with
 * fractional parts for floating point. */
static void fill_input(void *buf, size_t count, cr_dtype t, uint64_t seed)
{
    uint64_t s = cr_rng_hash64(seed * 7919 + (uint64_t)test_rank);
    for (size_t i = 0; i < count; i++) {
        uint64_t r = cr_rng_next(&s);
        switch (t) {
        case CR_INT32: ((int32_t *)buf)[i] = (int32_t)(r % 2000003) - 1000000; break;
        case CR_INT64: ((int64_t *)buf)[i] = (int64_t)(r >> 4) - (int64_t)(1LL << 58); break;
        case CR_UINT64: ((uint64_t *)buf)[i] = r; break;
        case CR_FLOAT: ((float *)buf)[i] = (float)(r % 100000) / 7.0f - 5000.0f; break;
        case CR_DOUBLE: ((double *)buf)[i] = (double)(r % 10000000) / 3.0 - 1e6; break;
        }
    }
}

/* Every rank's result must equal rank 0's, byte for byte. */
static bool same_everywhere(const void *buf, size_t bytes)
{
    char *root = malloc(bytes + 1);
    memcpy(root, buf, bytes);
    MPI_Bcast(root, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    int same = memcmp(root, buf, bytes) == 0, all;
    MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    free(root);
    return all;
}

static bool close_to(const void *got, const void *want, size_t count, cr_dtype t)
{
    for (size_t i = 0; i < count; i++) {
        double g = t == CR_FLOAT ? ((const float *)got)[i] : ((const double *)got)[i];
        double w = t == CR_FLOAT ? ((const float *)want)[i] : ((const double *)want)[i];
        double tol = (t == CR_FLOAT ? 1e-4 : 1e-10) * (1 + (w < 0 ? -w : w)) * test_size;
        if (g - w > tol || w - g > tol)
            return false;
    }
    return true;
}

/* MPI's own allreduce as the reference, except unsigned minimum and maximum, which
 * some MPI libraries compute as signed (MPICH 4.0.2): those as signed 64-bit values
 * with the sign bit flipped, which orders them the same. */
static void reference_allreduce(const void *in, void *want, size_t count, cr_dtype t, cr_op op)
{
    if (t != CR_UINT64 || (op != CR_OP_MIN && op != CR_OP_MAX)) {
        MPI_Allreduce(in, want, (int)count, mpi_type(t), mpi_op(op), MPI_COMM_WORLD);
        return;
    }
    uint64_t *flipped = malloc(count * sizeof *flipped + 1);
    memcpy(flipped, in, count * sizeof *flipped);
    for (size_t i = 0; i < count; i++)
        flipped[i] ^= UINT64_C(1) << 63;
    MPI_Allreduce(MPI_IN_PLACE, flipped, (int)count, MPI_INT64_T, mpi_op(op), MPI_COMM_WORLD);
    for (size_t i = 0; i < count; i++)
        flipped[i] ^= UINT64_C(1) << 63;
    memcpy(want, flipped, count * sizeof *flipped);
    free(flipped);
}

/* A shared-memory collective runs where the comm is one node with the path on, on
 * more than one rank, and each rank's block fits (docs/shared_memory.md). */
static bool shared_expected(cr_comm *comm, size_t bytes)
{
    const cr_config *cfg = cr_comm_config(comm);
    return cfg->shm && cfg->shm_bytes >= ((size_t)16 << 20) && test_size > 1 &&
           cr_layout_nodes(cr_comm_layout(comm)) == 1 && bytes <= 8192;
}

static void check_allreduce(cr_comm *comm, const variant *v, cr_dtype t, cr_op op, size_t count)
{
    size_t bytes = count * type_size(t);
    char *in = malloc(bytes + 1), *out = malloc(bytes + 1), *want = malloc(bytes + 1);
    fill_input(in, count, t, (uint64_t)count * 31 + (uint64_t)t);
    cr_coll_opts o = {.algorithm = v->algorithm, .ports = v->ports};
    cr_request *q = cr_iallreduce(comm, in, out, count, t, op, &o);
    char name[32];
    snprintf(name, sizeof name, "%s", cr_request_algorithm(q));
    /* shared memory asked for, or chosen by auto wherever it can run */
    if (v->algorithm == CR_ALLREDUCE_SHARED || v->algorithm == CR_ALLREDUCE_AUTO)
        CHECK(!strcmp(name, "shared") == shared_expected(comm, bytes),
              "algorithm %d, %zu bytes on %d ranks: ran %s", v->algorithm, bytes, test_size, name);
    cr_request_wait(&q);
    reference_allreduce(in, want, count, t, op);
    bool ok = t == CR_FLOAT || t == CR_DOUBLE ? close_to(out, want, count, t)
                                              : memcmp(out, want, bytes) == 0;
    CHECK(ok, "%s, type %d, op %d, %zu elements: differs from MPI_Allreduce", name, t, op, count);
    CHECK(same_everywhere(out, bytes), "%s, type %d, op %d, %zu elements: ranks disagree", name,
          t, op, count);
    free(in);
    free(out);
    free(want);
}

static void test_allreduce_every_algorithm(void **state)
{
    (void)state;
    cr_comm *comm = open_comm();
    for (size_t v = 0; v < NRV; v++)
        for (size_t c = 0; c < NCOUNTS; c++) {
            for (cr_dtype t = CR_INT32; t <= CR_DOUBLE; t++)
                for (cr_op op = CR_OP_SUM; op <= CR_OP_MAX; op++)
                    check_allreduce(comm, &reduce_variants[v], t, op, counts[c]);
            for (cr_dtype t = CR_INT32; t <= CR_UINT64; t++)
                for (cr_op op = CR_OP_BAND; op <= CR_OP_BOR; op++)
                    check_allreduce(comm, &reduce_variants[v], t, op, counts[c]);
        }
    cr_comm_destroy(comm);
    verdict();
}

/* A user operation: wrapping sum of uint64 (associative and commutative). */
static void add_u64(void *acc, const void *in, size_t count, void *user)
{
    uint64_t *a = acc;
    const uint64_t *b = in;
    for (size_t i = 0; i < count; i++)
        a[i] += b[i];
    ++*(int *)user;
}

static void test_allreduce_user_operation(void **state)
{
    (void)state;
    cr_comm *comm = open_comm();
    for (size_t v = 0; v < NRV; v++) {
        uint64_t in[33], out[33], want[33];
        fill_input(in, 33, CR_UINT64, 99);
        int calls = 0;
        cr_coll_opts o = {.algorithm = reduce_variants[v].algorithm,
                          .ports = reduce_variants[v].ports, .combine = add_u64, .user = &calls};
        cr_allreduce(comm, in, out, 33, CR_UINT64, CR_OP_USER, &o);
        MPI_Allreduce(in, want, 33, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        CHECK(memcmp(out, want, sizeof out) == 0, "user sum, variant %zu", v);
        CHECK(test_size == 1 || sum_all((uint64_t)calls) > 0, "the user function was not called");
    }
    cr_comm_destroy(comm);
    verdict();
}

/* In place, and several requests in flight at once, completed in reverse order,
 * while mailbox traffic runs: the barrier's event loop advances the collectives. */
static uint64_t received;
static void on_ping(cr_comm *comm, int src, const void *p, size_t len, void *user)
{
    (void)comm, (void)src, (void)p, (void)len, (void)user;
    received++;
}

static void test_split_phase_with_traffic(void **state)
{
    (void)state;
    cr_comm *comm = open_comm();
    received = 0; /* before cr_register, which may already handle pings (it runs the loop) */
    cr_stats_reset(comm);
    int h = cr_register(comm, on_ping, NULL);
    int64_t a[5], b[5], c[100];
    for (int i = 0; i < 5; i++)
        a[i] = test_rank + i, b[i] = test_rank * 2 - i;
    for (int i = 0; i < 100; i++)
        c[i] = test_rank;
    cr_coll_opts o1 = {.algorithm = CR_ALLREDUCE_DISSEMINATION};
    cr_coll_opts o2 = {.algorithm = CR_ALLREDUCE_BRUCK, .ports = 2};
    cr_request *q1 = cr_iallreduce(comm, a, a, 5, CR_INT64, CR_OP_SUM, &o1);
    cr_request *q2 = cr_iallreduce(comm, b, b, 5, CR_INT64, CR_OP_MAX, &o2);
    int64_t *gathered = malloc((size_t)test_size * sizeof c);
    cr_request *q3 = cr_iallgather(comm, c, sizeof c, gathered, NULL);
    for (int i = 0; i < 1000; i++)
        cr_async(comm, i % test_size, h, &i, sizeof i);
    cr_barrier(comm);
    CHECK(sum_all(received) == 1000ULL * (uint64_t)test_size, "pings lost");
    check_conserved(comm, 1000ULL * (uint64_t)test_size);
    int spins = 0;
    while (!cr_request_test(&q3))
        spins++;
    CHECK(q3 == NULL, "cr_request_test did not clear the request");
    cr_request_wait(&q2);
    cr_request_wait(&q1);
    int64_t p = test_size;
    for (int i = 0; i < 5; i++) {
        CHECK(a[i] == p * (p - 1) / 2 + p * i, "in-place sum [%d] = %lld", i, (long long)a[i]);
        CHECK(b[i] == (p - 1) * 2 - i, "in-place max [%d] = %lld", i, (long long)b[i]);
    }
    for (int r = 0; r < test_size; r++)
        CHECK(gathered[r * 100 + 99] == r, "block %d", r);
    free(gathered);
    cr_comm_destroy(comm);
    verdict();
}

/* In place (send == recv) under every algorithm, with vectors above the shared
 * path's limit: the plans read their input where the caller holds it and combine
 * their last step into recv, the same buffer (src/coll/coll.c, slot()); each sum
 * must be exact and the input's other elements untouched until the end. */
static void test_allreduce_in_place_every_algorithm(void **state)
{
    (void)state;
    cr_comm *comm = open_comm();
    enum { N = 9000 };
    int64_t *v = malloc(N * sizeof *v);
    int64_t p = test_size;
    for (size_t a = 0; a < NRV; a++) {
        for (int i = 0; i < N; i++)
            v[i] = (int64_t)test_rank * N + i;
        cr_coll_opts o = {.algorithm = reduce_variants[a].algorithm,
                          .ports = reduce_variants[a].ports};
        cr_request *q = cr_iallreduce(comm, v, v, N, CR_INT64, CR_OP_SUM, &o);
        cr_request_wait(&q);
        for (int i = 0; i < N; i++)
            if (v[i] != (int64_t)N * p * (p - 1) / 2 + p * i) {
                CHECK(false, "variant %zu, in place, [%d] = %lld", a, i, (long long)v[i]);
                break;
            }
    }
    free(v);
    cr_comm_destroy(comm);
    verdict();
}

/* Shared-memory collectives in flight at once, finished in the reverse order of
 * their start: a rank may not reuse a post before every rank has read it, so this
 * hangs or fails if a post is overwritten early (src/coll/shared.h). */
static void test_shared_in_flight(void **state)
{
    (void)state;
    cr_comm *comm = open_comm();
    enum { N = 7 };
    int64_t in[N][3], out[N][3];
    int64_t *gathered = malloc((size_t)test_size * 2 * sizeof(int64_t) * N);
    int64_t mine[N][2];
    cr_request *q[2 * N];
    cr_coll_opts ar = {.algorithm = CR_ALLREDUCE_SHARED}, ag = {.algorithm = CR_ALLGATHER_SHARED};
    for (int k = 0; k < N; k++) {
        for (int i = 0; i < 3; i++)
            in[k][i] = (int64_t)(test_rank + 1) * (k + 1) + i;
        mine[k][0] = test_rank * 1000 + k, mine[k][1] = -k;
        q[2 * k] = cr_iallreduce(comm, in[k], out[k], 3, CR_INT64, CR_OP_SUM, &ar);
        q[2 * k + 1] = cr_iallgather(comm, mine[k], sizeof mine[k],
                                     gathered + (size_t)k * 2 * (size_t)test_size, &ag);
    }
    for (int k = 2 * N - 1; k >= 0; k--)
        cr_request_wait(&q[k]);
    int64_t p = test_size;
    for (int k = 0; k < N; k++) {
        for (int i = 0; i < 3; i++)
            CHECK(out[k][i] == (k + 1) * p * (p + 1) / 2 + p * i, "reduce %d [%d] = %lld", k, i,
                  (long long)out[k][i]);
        for (int r = 0; r < test_size; r++) {
            const int64_t *g = gathered + (size_t)k * 2 * (size_t)test_size + 2 * r;
            CHECK(g[0] == r * 1000 + k && g[1] == -k, "gather %d, rank %d: %lld %lld", k, r,
                  (long long)g[0], (long long)g[1]);
        }
    }
    free(gathered);
    cr_comm_destroy(comm);
    verdict();
}

/* ---------------------------------------------------------------- allgather(v) */

static const int gather_algos[] = {CR_ALLGATHER_AUTO, CR_ALLGATHER_RING, CR_ALLGATHER_NEIGHBOR,
                                   CR_ALLGATHER_RECDOUBLING, CR_ALLGATHER_BRUCK,
                                   CR_ALLGATHER_SPARBIT, CR_ALLGATHER_SHARED};
#define NGA (sizeof gather_algos / sizeof gather_algos[0])

static void fill_bytes(char *buf, size_t len, uint64_t seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (char)cr_rng_hash64(seed * 1000003 + i);
}

static void test_allgather_every_algorithm(void **state)
{
    (void)state;
    cr_comm *comm = open_comm();
    const size_t sizes[] = {0, 1, 8, 1000, 70000};
    for (size_t a = 0; a < NGA; a++)
        for (size_t s = 0; s < 5; s++) {
            size_t n = sizes[s], total = n * (size_t)test_size;
            char *mine = malloc(n + 1), *got = malloc(total + 1), *want = malloc(total + 1);
            fill_bytes(mine, n, (uint64_t)test_rank);
            cr_coll_opts o = {.algorithm = gather_algos[a]};
            cr_request *q = cr_iallgather(comm, mine, n, got, &o);
            bool shared = strcmp(cr_request_algorithm(q), "shared") == 0;
            if (gather_algos[a] == CR_ALLGATHER_SHARED || gather_algos[a] == CR_ALLGATHER_AUTO)
                CHECK(shared == shared_expected(comm, n), "allgather algorithm %d, %zu bytes on "
                      "%d ranks: ran %s", gather_algos[a], n, test_size, shared ? "shared" : "other");
            cr_request_wait(&q);
            MPI_Allgather(mine, (int)n, MPI_BYTE, want, (int)n, MPI_BYTE, MPI_COMM_WORLD);
            CHECK(memcmp(got, want, total) == 0, "allgather algorithm %d, %zu bytes", gather_algos[a], n);
            free(mine);
            free(got);
            free(want);
        }
    cr_comm_destroy(comm);
    verdict();
}

/* Block-size distributions of the Sparbit thesis (allgatherv experiments). */
enum { BCAST_LIKE, SPIKE, HALF_FULL, LINEAR, GEOMETRIC, NDIST };

static size_t block_size(int dist, int r, int p, size_t s)
{
    switch (dist) {
    case BCAST_LIKE: return r == 0 ? s * (size_t)p : 0;
    case SPIKE: return r == p / 2 ? s * (size_t)p / 2 + 1 : 3;
    case HALF_FULL: return r < (p + 1) / 2 ? s : 0;
    case LINEAR: return s * (size_t)(p - r) / (size_t)p;
    default: return s >> (r < 20 ? r : 20);
    }
}

static void test_allgatherv_distributions(void **state)
{
    (void)state;
    cr_comm *comm = open_comm();
    int p = test_size;
    size_t *sizes = malloc((size_t)p * sizeof *sizes), *offsets = malloc((size_t)p * sizeof *offsets);
    int *isizes = malloc((size_t)p * sizeof(int)), *ioffsets = malloc((size_t)p * sizeof(int));
    for (size_t a = 0; a < NGA; a++)
        for (int dist = 0; dist < NDIST; dist++)
            for (int big = 0; big < 2; big++) {
                size_t s = big ? 20000 : 64, total = 0;
                for (int r = 0; r < p; r++) {
                    sizes[r] = block_size(dist, r, p, s);
                    /* reversed layout with gaps: offsets need not follow rank order */
                    offsets[p - 1 - r] = 0;
                }
                for (int r = p - 1; r >= 0; r--) {
                    offsets[r] = total;
                    total += sizes[r] + 5;
                }
                for (int r = 0; r < p; r++)
                    isizes[r] = (int)sizes[r], ioffsets[r] = (int)offsets[r];
                char *mine = malloc(sizes[test_rank] + 1);
                char *got = calloc(total + 1, 1), *want = calloc(total + 1, 1);
                fill_bytes(mine, sizes[test_rank], (uint64_t)test_rank + 77);
                cr_coll_opts o = {.algorithm = gather_algos[a]};
                cr_allgatherv(comm, mine, got, sizes, offsets, &o);
                MPI_Allgatherv(mine, isizes[test_rank], MPI_BYTE, want, isizes, ioffsets, MPI_BYTE,
                               MPI_COMM_WORLD);
                CHECK(memcmp(got, want, total) == 0, "allgatherv algorithm %d, distribution %d, %zu",
                      gather_algos[a], dist, s);
                free(mine);
                free(got);
                free(want);
            }
    free(sizes);
    free(offsets);
    free(isizes);
    free(ioffsets);
    cr_comm_destroy(comm);
    verdict();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduce_every_algorithm),
        cmocka_unit_test(test_shared_in_flight),
        cmocka_unit_test(test_allreduce_in_place_every_algorithm),
        cmocka_unit_test(test_allreduce_user_operation),
        cmocka_unit_test(test_split_phase_with_traffic),
        cmocka_unit_test(test_allgather_every_algorithm),
        cmocka_unit_test(test_allgatherv_distributions),
    };
    return RUN_MPI_TESTS(argc, argv, tests);
}
