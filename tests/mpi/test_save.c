/* Save and load (include/courier/io.h, container.h, darray.h) under mpirun.
 *
 *   test_save save DIR   fill every container and a darray, save each under DIR
 *   test_save overwrite DIR   the same, saved over the saves under DIR
 *   test_save load DIR   load each into an empty one and check the exact contents
 *   test_save bad DIR    damaged saves (missing, truncated, corrupted, moved records,
 *                        another kind, version, byte order or type, a save in the
 *                        way, an overwrite that fails half-way, planted links): each
 *                        refused on every rank with the same one-line message, the
 *                        container unchanged and the old save whole
 *
 * The contents are a function of the element's index, dealt out by index, so the
 * same containers come out at any rank count: tests/save_round_trip.sh saves at P
 * ranks and loads at Q. */
#include "harness.h"

#include <courier.h>

#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define ELEMENTS 5003u /* divides evenly into no rank count of the tests */
#define SET_KEY 24

static const char *mode, *dir;

static uint64_t mixed(uint64_t i)
{
    return cr_rng_hash64(i * 0x9e3779b97f4a7c15ull + 17);
}

typedef struct pair_value {
    uint64_t a, b;
} pair_value;

static pair_value map_value(uint64_t i)
{
    return (pair_value){mixed(i), i * 3};
}

static void set_key(uint64_t i, char key[SET_KEY])
{
    memset(key, 0, SET_KEY);
    snprintf(key, SET_KEY, "key-%llu-%llu", (unsigned long long)i,
             (unsigned long long)(mixed(i) % 1000));
}

static uint64_t times_of(uint64_t i)
{
    return 1 + i % 7;
}

typedef struct item {
    uint64_t i;
    uint32_t check;
} __attribute__((packed)) item;

static uint64_t representative(uint64_t i)
{
    return i - i % 10;
}

static void path_in(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

/* ---------------------------------------------------------------- the containers */

typedef struct all {
    cr_comm *comm;
    cr_map *map;
    cr_set *set;
    cr_counting_set *cs;
    cr_bag *bag;
    cr_disjoint_set *ds;
    cr_darray *da;
} all;

/* Maps whose owner rule names the rank each key must live on after a load (every map
 * of one key size on one comm shares it): 8-byte keys (the map, the counting set)
 * and the set's 24-byte ones. */
static cr_map *owner_of_8, *owner_of_24;

static void owners_create(cr_comm *comm)
{
    char err[200];
    owner_of_8 = cr_map_create(comm, &(cr_map_opts){.key_len = 8}, err, sizeof err);
    owner_of_24 = cr_map_create(comm, &(cr_map_opts){.key_len = SET_KEY}, err, sizeof err);
}

static void owners_destroy(void)
{
    cr_map_destroy(owner_of_8);
    cr_map_destroy(owner_of_24);
}

static void create_all(all *c)
{
    char err[200];
    c->comm = cr_comm_create(MPI_COMM_WORLD, NULL);
    c->map = cr_map_create(c->comm, &(cr_map_opts){.key_len = 8, .value_len = 16}, err,
                           sizeof err);
    c->set = cr_set_create(c->comm, SET_KEY, err, sizeof err);
    c->cs = cr_counting_set_create(c->comm, 8, err, sizeof err);
    c->bag = cr_bag_create(c->comm, sizeof(item), err, sizeof err);
    c->ds = cr_disjoint_set_create(c->comm, NULL, NULL);
    c->da = cr_darray_create(c->comm, ELEMENTS, 8, NULL);
    owners_create(c->comm);
}

static void destroy_all(all *c)
{
    cr_map_destroy(c->map);
    cr_set_destroy(c->set);
    cr_counting_set_destroy(c->cs);
    cr_bag_destroy(c->bag);
    cr_disjoint_set_destroy(c->ds);
    cr_darray_destroy(c->da);
    owners_destroy();
    cr_comm_destroy(c->comm);
}

static void fill_all(all *c)
{
    for (uint64_t i = (uint64_t)test_rank; i < ELEMENTS; i += (uint64_t)test_size) {
        pair_value v = map_value(i);
        cr_map_insert(c->map, &i, &v);
        char key[SET_KEY];
        set_key(i, key);
        cr_set_insert(c->set, key);
        /* the count in two parts, so that the save holds the sum */
        cr_counting_set_add(c->cs, &i, times_of(i) - 1);
        cr_counting_set_insert(c->cs, &i);
        item it = {i, (uint32_t)mixed(i)};
        cr_bag_insert(c->bag, &it);
        cr_disjoint_set_union(c->ds, i, representative(i));
    }
    cr_barrier(c->comm);
    uint64_t first, count;
    uint64_t *block = cr_darray_local(c->da, &first, &count);
    for (uint64_t k = 0; k < count; k++)
        block[k] = mixed(first + k) ^ 5;
    cr_disjoint_set_compress(c->ds);
}

/* ---------------------------------------------------------------- checks */

static void check_owner(const cr_map *rule, const void *key, const char *what)
{
    int owner = cr_map_owner(rule, key);
    CHECK(owner == test_rank, "%s: a key lives on rank %d, its owner is rank %d", what,
          test_rank, owner);
}

static void check_map_entry(const void *key, void *value, void *user)
{
    uint64_t i;
    memcpy(&i, key, 8);
    pair_value want = map_value(i), got;
    memcpy(&got, value, sizeof got);
    check_owner(owner_of_8, key, "map");
    CHECK(i < ELEMENTS && got.a == want.a && got.b == want.b, "map: key %llu",
          (unsigned long long)i);
    (*(uint64_t *)user)++;
}

static void check_set_key(const void *key, void *user)
{
    char want[SET_KEY];
    uint64_t i = strtoull((const char *)key + 4, NULL, 10);
    set_key(i, want);
    CHECK(i < ELEMENTS && !memcmp(want, key, SET_KEY), "set: key '%.24s'", (const char *)key);
    check_owner(owner_of_24, key, "set");
    (*(uint64_t *)user)++;
}

static void check_count(const void *key, uint64_t count, void *user)
{
    uint64_t i;
    memcpy(&i, key, 8);
    uint64_t *k = user;
    check_owner(owner_of_8, key, "counting set");
    CHECK(i < ELEMENTS && count == k[1] * times_of(i), "counting set: key %llu counted %llu",
          (unsigned long long)i, (unsigned long long)count);
    k[0]++;
}

static void sum_items(void *it, void *user)
{
    item x;
    memcpy(&x, it, sizeof x);
    uint64_t *s = user;
    CHECK(x.check == (uint32_t)mixed(x.i), "bag: item %llu damaged", (unsigned long long)x.i);
    s[0]++;
    s[1] += mixed(x.i);
}

static void check_link(uint64_t i, uint64_t parent, void *user)
{
    CHECK(parent == representative(i), "disjoint set: %llu's representative is %llu",
          (unsigned long long)i, (unsigned long long)parent);
    (*(uint64_t *)user)++;
}

/* The exact contents; `times` is how many saves were loaded into the counting set
 * (a load adds counts). */
static void check_all(all *c, uint64_t times)
{
    uint64_t n = 0;
    cr_map_for_all(c->map, check_map_entry, &n);
    CHECK(sum_all(n) == ELEMENTS, "map: %llu keys", (unsigned long long)sum_all(n));
    n = 0;
    cr_set_for_all(c->set, check_set_key, &n);
    CHECK(sum_all(n) == ELEMENTS, "set: %llu keys", (unsigned long long)sum_all(n));
    uint64_t k[2] = {0, times};
    cr_counting_set_for_all(c->cs, check_count, k);
    CHECK(sum_all(k[0]) == ELEMENTS, "counting set: %llu keys", (unsigned long long)sum_all(k[0]));
    uint64_t s[2] = {0, 0}, want = 0;
    cr_bag_for_all(c->bag, sum_items, s);
    for (uint64_t i = 0; i < ELEMENTS; i++)
        want += mixed(i);
    CHECK(sum_all(s[0]) == times * ELEMENTS && sum_all(s[1]) == times * want,
          "bag: %llu items, or not the saved ones", (unsigned long long)sum_all(s[0]));
    cr_disjoint_set_compress(c->ds);
    n = 0;
    cr_disjoint_set_for_all(c->ds, check_link, &n);
    CHECK(sum_all(n) == ELEMENTS, "disjoint set: %llu items", (unsigned long long)sum_all(n));
    CHECK(cr_disjoint_set_num_sets(c->ds) == (ELEMENTS + 9) / 10, "disjoint set: sets");
    uint64_t first, count;
    uint64_t *block = cr_darray_local(c->da, &first, &count);
    for (uint64_t i = 0; i < count; i++)
        CHECK(block[i] == (mixed(first + i) ^ 5), "darray: element %llu",
              (unsigned long long)(first + i));
}

static void check_ok(int rc, const char *err, const char *what)
{
    CHECK(rc == 0, "%s: %s", what, err);
}

static void save_all(all *c, unsigned flags)
{
    char err[256], p[512];
    path_in(p, sizeof p, "map");
    check_ok(cr_map_save(c->map, p, flags, err, sizeof err), err, "map save");
    path_in(p, sizeof p, "set");
    check_ok(cr_set_save(c->set, p, flags, err, sizeof err), err, "set save");
    path_in(p, sizeof p, "counting_set");
    check_ok(cr_counting_set_save(c->cs, p, flags, err, sizeof err), err, "counting set save");
    path_in(p, sizeof p, "bag");
    check_ok(cr_bag_save(c->bag, p, flags, err, sizeof err), err, "bag save");
    path_in(p, sizeof p, "disjoint_set");
    check_ok(cr_disjoint_set_save(c->ds, p, flags, err, sizeof err), err, "disjoint set save");
    path_in(p, sizeof p, "darray");
    check_ok(cr_darray_save(c->da, p, flags, err, sizeof err), err, "darray save");
}

static void load_all(all *c)
{
    char err[256], p[512];
    path_in(p, sizeof p, "map");
    check_ok(cr_map_load(c->map, p, err, sizeof err), err, "map load");
    path_in(p, sizeof p, "set");
    check_ok(cr_set_load(c->set, p, err, sizeof err), err, "set load");
    path_in(p, sizeof p, "counting_set");
    check_ok(cr_counting_set_load(c->cs, p, err, sizeof err), err, "counting set load");
    path_in(p, sizeof p, "bag");
    check_ok(cr_bag_load(c->bag, p, err, sizeof err), err, "bag load");
    path_in(p, sizeof p, "disjoint_set");
    check_ok(cr_disjoint_set_load(c->ds, p, err, sizeof err), err, "disjoint set load");
    path_in(p, sizeof p, "darray");
    check_ok(cr_darray_load(c->da, p, err, sizeof err), err, "darray load");
}

static void test_save(void **state)
{
    (void)state;
    all c;
    create_all(&c);
    fill_all(&c);
    check_all(&c, 1);
    save_all(&c, 0);
    destroy_all(&c);
    verdict();
}

/* The same contents saved over an existing save (at another rank count). */
static void test_overwrite(void **state)
{
    (void)state;
    all c;
    create_all(&c);
    fill_all(&c);
    save_all(&c, CR_SAVE_OVERWRITE);
    destroy_all(&c);
    verdict();
}

static void test_load(void **state)
{
    (void)state;
    all c;
    create_all(&c);
    load_all(&c);
    check_all(&c, 1);
    destroy_all(&c);
    verdict();
}

/* A map that holds other values for the saved keys, inserted just before the load
 * (still in flight): the load applies them first and the saved values last, so the
 * saved ones stay (the map's rule is to replace). A load that put its records into
 * the owners' tables while the earlier inserts were still travelling fails this. */
static void test_load_into_filled(void **state)
{
    (void)state;
    char err[256], p[512];
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, NULL);
    cr_map *map = cr_map_create(comm, &(cr_map_opts){.key_len = 8, .value_len = 16}, err,
                                sizeof err);
    owners_create(comm);
    for (uint64_t i = (uint64_t)test_rank; i < ELEMENTS; i += (uint64_t)test_size) {
        pair_value stale = {~mixed(i), 7};
        cr_map_insert(map, &i, &stale);
    }
    path_in(p, sizeof p, "map");
    check_ok(cr_map_load(map, p, err, sizeof err), err, "map load over inserts in flight");
    uint64_t n = 0;
    cr_map_for_all(map, check_map_entry, &n);
    CHECK(sum_all(n) == ELEMENTS, "map: %llu keys", (unsigned long long)sum_all(n));
    cr_map_destroy(map);
    owners_destroy();
    cr_comm_destroy(comm);
    verdict();
}

/* Keys and values whose lengths are not whole words (a record is then padded in the
 * table, not in the save): a 12-byte-key counting set and a map of 5-byte keys and
 * 3-byte values, saved and loaded at this rank count, exact contents. */
#define ODD_KEY 12

static void odd_key(uint64_t i, unsigned char key[ODD_KEY])
{
    uint64_t m = mixed(i);
    memcpy(key, &i, 4);
    memcpy(key + 4, &m, 8);
}

static void check_odd_count(const void *key, uint64_t count, void *user)
{
    uint32_t i;
    memcpy(&i, key, 4);
    unsigned char want[ODD_KEY];
    odd_key(i, want);
    CHECK(i < ELEMENTS && !memcmp(want, key, ODD_KEY) && count == times_of(i),
          "12-byte counting set: key %u counted %llu", i, (unsigned long long)count);
    (*(uint64_t *)user)++;
}

static void check_small_pair(const void *key, void *value, void *user)
{
    uint64_t i = 0, v = 0;
    memcpy(&i, key, 5);
    memcpy(&v, value, 3);
    CHECK(i < ELEMENTS && v == (mixed(i) & 0xffffff), "5-byte map: key %llu",
          (unsigned long long)i);
    (*(uint64_t *)user)++;
}

static void test_odd_lengths(void **state)
{
    (void)state;
    char err[256], pc[512], pm[512];
    cr_comm *comm = cr_comm_create(MPI_COMM_WORLD, NULL);
    cr_map_opts small = {.key_len = 5, .value_len = 3};
    cr_counting_set *cs[2];
    cr_map *map[2];
    for (int k = 0; k < 2; k++) {
        cs[k] = cr_counting_set_create(comm, ODD_KEY, err, sizeof err);
        map[k] = cr_map_create(comm, &small, err, sizeof err);
    }
    for (uint64_t i = (uint64_t)test_rank; i < ELEMENTS; i += (uint64_t)test_size) {
        unsigned char key[ODD_KEY];
        odd_key(i, key);
        cr_counting_set_add(cs[0], key, times_of(i));
        uint64_t v = mixed(i);
        cr_map_insert(map[0], &i, &v);
    }
    path_in(pc, sizeof pc, "odd-counting-set");
    path_in(pm, sizeof pm, "odd-map");
    unsigned durable = CR_SAVE_OVERWRITE | CR_SAVE_SYNC;
    check_ok(cr_counting_set_save(cs[0], pc, durable, err, sizeof err), err,
             "12-byte counting set save");
    check_ok(cr_map_save(map[0], pm, CR_SAVE_OVERWRITE, err, sizeof err), err, "5-byte map save");
    check_ok(cr_counting_set_load(cs[1], pc, err, sizeof err), err, "12-byte counting set load");
    check_ok(cr_map_load(map[1], pm, err, sizeof err), err, "5-byte map load");
    uint64_t n = 0;
    cr_counting_set_for_all(cs[1], check_odd_count, &n);
    CHECK(sum_all(n) == ELEMENTS, "12-byte counting set: %llu keys",
          (unsigned long long)sum_all(n));
    n = 0;
    cr_map_for_all(map[1], check_small_pair, &n);
    CHECK(sum_all(n) == ELEMENTS, "5-byte map: %llu keys", (unsigned long long)sum_all(n));
    for (int k = 0; k < 2; k++) {
        cr_counting_set_destroy(cs[k]);
        cr_map_destroy(map[k]);
    }
    cr_comm_destroy(comm);
    verdict();
}

/* ---------------------------------------------------------------- damaged saves */

static uint64_t text_hash(const char *s)
{
    uint64_t h = 7;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static void check_refused(int rc, const char *err, const char *needle, const char *what)
{
    CHECK(rc == -1, "%s: accepted", what);
    uint64_t h = text_hash(err), lo, hi;
    MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo == hi, "%s: the ranks' messages differ (mine: %s)", what, err);
    CHECK(strstr(err, needle) && !strchr(err, '\n'), "%s: '%s' is not one line naming '%s'",
          what, err, needle);
}

/* A counting set holding one key counted 5 times: a refused load must leave it so. */
static void count_all(const void *key, uint64_t count, void *user)
{
    (void)key;
    uint64_t *s = user;
    s[0]++;
    s[1] += count;
}

static void check_untouched(cr_counting_set *cs, const char *what)
{
    uint64_t s[2] = {0, 0};
    cr_counting_set_for_all(cs, count_all, s);
    CHECK(sum_all(s[0]) == 1 && sum_all(s[1]) == 5, "%s: the counting set changed (%llu keys)",
          what, (unsigned long long)sum_all(s[0]));
}

static void rank0_shell(const char *fmt, const char *arg)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank == 0) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, fmt, arg, arg, arg, arg, arg, arg, arg, arg);
        if (system(cmd) != 0)
            fprintf(stderr, "failed: %s\n", cmd);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Parts of several 256 KiB stages each (300,000 keys of 16-byte records: over 600
 * KiB per rank at 8 ranks): a record lost or doubled at a stage's edge changes the
 * keys, the counts or their weighted sum. */
#define MANY_KEYS 300000u

static void sum_weighted(const void *key, uint64_t count, void *user)
{
    uint64_t k, *s = user;
    memcpy(&k, key, sizeof k);
    s[0]++;
    s[1] += count;
    s[2] += (k + 1) * count;
}

static void check_stages_round_trip(all *c)
{
    char err[256], p[512], errs[64];
    cr_counting_set *big = cr_counting_set_create(c->comm, 8, errs, sizeof errs);
    cr_counting_set *back = cr_counting_set_create(c->comm, 8, errs, sizeof errs);
    for (uint64_t k = (uint64_t)test_rank; k < MANY_KEYS; k += (uint64_t)test_size)
        cr_counting_set_add(big, &k, k % 7 + 1);
    cr_barrier(c->comm);
    path_in(p, sizeof p, "stages");
    check_ok(cr_counting_set_save(big, p, 0, err, sizeof err), err, "a save of many stages");
    check_ok(cr_counting_set_load(back, p, err, sizeof err), err, "its load");
    uint64_t s[3] = {0, 0, 0}, want[3] = {MANY_KEYS, 0, 0};
    for (uint64_t k = 0; k < MANY_KEYS; k++)
        want[1] += k % 7 + 1, want[2] += (k + 1) * (k % 7 + 1);
    cr_counting_set_for_all(back, sum_weighted, s);
    for (int i = 0; i < 3; i++)
        CHECK(sum_all(s[i]) == want[i], "many stages: sum %d is %llu, not %llu", i,
              (unsigned long long)sum_all(s[i]), (unsigned long long)want[i]);
    cr_counting_set_destroy(big);
    cr_counting_set_destroy(back);
}

/* An overwrite whose last rank cannot write (a file size limit, as a full disk
 * would): refused, and the save it was to replace still whole. */
static void check_interrupted_overwrite(all *c, const char *p)
{
    char err[256];
    struct rlimit old;
    getrlimit(RLIMIT_FSIZE, &old);
    if (test_rank == test_size - 1) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit tiny = {16, old.rlim_max};
        setrlimit(RLIMIT_FSIZE, &tiny);
    }
    int rc = cr_counting_set_save(c->cs, p, CR_SAVE_OVERWRITE, err, sizeof err);
    if (test_rank == test_size - 1)
        setrlimit(RLIMIT_FSIZE, &old);
    check_refused(rc, err, "write failed", "an overwrite a rank could not write");
}

/* A darray declared of doubles is not loaded into one of int64 (the default
 * type); one of doubles with another merge rule loads it. */
static void check_declared_types(all *c)
{
    char err[256], p[512];
    cr_darray *d = cr_darray_create(c->comm, 40, 8, &(cr_darray_opts){.type = CR_DOUBLE});
    cr_darray *i = cr_darray_create(c->comm, 40, 8, &(cr_darray_opts){.type = CR_INT64});
    cr_darray *u = cr_darray_create(c->comm, 40, 8,
                                    &(cr_darray_opts){.merge = CR_OP_MIN, .type = CR_DOUBLE});
    path_in(p, sizeof p, "doubles");
    check_ok(cr_darray_save(d, p, 0, err, sizeof err), err, "a darray of doubles");
    check_refused(cr_darray_load(i, p, err, sizeof err), err, "holds double records, not int64",
                  "doubles into int64");
    cr_darray *n = cr_darray_create(c->comm, 40, 8, NULL);
    check_refused(cr_darray_load(n, p, err, sizeof err), err, "holds double records, not int64",
                  "doubles into a darray of the default type");
    cr_darray_destroy(n);
    check_ok(cr_darray_load(u, p, err, sizeof err), err, "doubles into doubles");
    cr_darray_destroy(d);
    cr_darray_destroy(i);
    cr_darray_destroy(u);
}

/* Links planted where a save writes (its temporary manifest, a part's name) are
 * not followed: the file they point at keeps its bytes. The save's files are the
 * owner's alone (0700, 0600), and a save directory of another user is refused. */
static void check_planted_links(all *c)
{
    char err[256], p[512], victim[600];
    path_in(p, sizeof p, "set");
    snprintf(victim, sizeof victim, "%s.victim", p);
    rank0_shell("echo untouched > '%s.victim' && ln -s '%s.victim' '%s/.manifest.tmp' && "
                "ln -s '%s.victim' '%s/part-000001.7'", p);
    check_ok(cr_set_save(c->set, p, CR_SAVE_OVERWRITE, err, sizeof err), err,
             "a save over planted links");
    struct stat st;
    CHECK(stat(victim, &st) == 0 && st.st_size == 10, "the planted links' target changed "
          "(%lld bytes)", (long long)st.st_size);
    char part[700];
    snprintf(part, sizeof part, "%s/part-000000.8", p);
    CHECK(stat(part, &st) == 0 && (st.st_mode & 0777) == 0600,
          "a part is not the owner's alone, or not of generation 8 (mode %o)", st.st_mode & 0777);
    path_in(p, sizeof p, "fresh-dir");
    check_ok(cr_set_save(c->set, p, 0, err, sizeof err), err, "a save to a new directory");
    CHECK(stat(p, &st) == 0 && (st.st_mode & 0777) == 0700, "a new save directory has mode %o",
          st.st_mode & 0777);
    /* another user's directory: only a root shell can make one to test with */
    int made = 0;
    if (test_rank == 0 && geteuid() == 0)
        made = chown(p, 65534, 65534) == 0;
    MPI_Bcast(&made, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (made)
        check_refused(cr_set_save(c->set, p, CR_SAVE_OVERWRITE, err, sizeof err), err,
                      "belongs to another user (uid 65534)", "another user's save directory");
}

static void test_bad_saves(void **state)
{
    (void)state;
    all c;
    create_all(&c);
    fill_all(&c);
    save_all(&c, 0);
    char err[256], p[512];
    /* a save in the way, then replaced on purpose */
    path_in(p, sizeof p, "counting_set");
    check_refused(cr_counting_set_save(c.cs, p, 0, err, sizeof err), err, "holds a save already",
                  "saving over a save");
    check_ok(cr_counting_set_save(c.cs, p, CR_SAVE_OVERWRITE, err, sizeof err), err,
             "saving over a save with CR_SAVE_OVERWRITE");

    char errs[64];
    cr_counting_set *fresh = cr_counting_set_create(c.comm, 8, errs, sizeof errs);
    uint64_t one = ELEMENTS + 1;
    if (test_rank == 0)
        cr_counting_set_add(fresh, &one, 5);
    cr_barrier(c.comm);
    path_in(p, sizeof p, "nothing-here");
    check_refused(cr_counting_set_load(fresh, p, err, sizeof err), err, "nothing-here/manifest",
                  "a missing save");
    path_in(p, sizeof p, "map");
    check_refused(cr_counting_set_load(fresh, p, err, sizeof err), err, "holds a map, not a "
                  "counting_set", "a save of another kind");
    cr_counting_set *wide = cr_counting_set_create(c.comm, 16, errs, sizeof errs);
    path_in(p, sizeof p, "counting_set");
    check_refused(cr_counting_set_load(wide, p, err, sizeof err), err, "key bytes 8",
                  "another key size");
    cr_counting_set_destroy(wide);

    /* damaged copies of the counting set's save */
    path_in(p, sizeof p, "counting_set");
    /* the counting set was saved over once: its parts are of generation 1 */
    rank0_shell("cp -r '%s' '%s.cut' && truncate -s -1 '%s.cut/part-000000.1'", p);
    char damaged[600];
    snprintf(damaged, sizeof damaged, "%s.cut", p);
    check_refused(cr_counting_set_load(fresh, damaged, err, sizeof err), err,
                  "part-000000.1: ", "a truncated part");
    CHECK(strstr(err, "truncated") != NULL, "a truncated part: %s", err);
    rank0_shell("cp -r '%s' '%s.flip' && printf 'X' | dd of='%s.flip/part-000000.1' bs=1 seek=3 "
                "conv=notrunc status=none", p);
    snprintf(damaged, sizeof damaged, "%s.flip", p);
    check_refused(cr_counting_set_load(fresh, damaged, err, sizeof err), err,
                  "part-000000.1: checksum mismatch", "a corrupted part");
    rank0_shell("cp -r '%s' '%s.v2' && sed -i '1s/.*/courier-save 3/' '%s.v2/manifest'", p);
    snprintf(damaged, sizeof damaged, "%s.v2", p);
    check_refused(cr_counting_set_load(fresh, damaged, err, sizeof err), err,
                  "save format version 3; this Courier reads versions 1 to 2",
                  "another format version");
    rank0_shell("cp -r '%s' '%s.gone' && rm '%s.gone/part-000000.1'", p);
    snprintf(damaged, sizeof damaged, "%s.gone", p);
    check_refused(cr_counting_set_load(fresh, damaged, err, sizeof err), err,
                  "part-000000.1: missing", "a missing part");
    rank0_shell("cp -r '%s' '%s.rb0' && sed -i 's/^record_bytes .*/record_bytes 0/' "
                "'%s.rb0/manifest'", p);
    snprintf(damaged, sizeof damaged, "%s.rb0", p);
    check_refused(cr_counting_set_load(fresh, damaged, err, sizeof err), err,
                  "record_bytes 0 is not in 1 ..", "a manifest saying record_bytes 0");
    rank0_shell("cp -r '%s' '%s.noend' && sed -i '$d' '%s.noend/manifest'", p);
    snprintf(damaged, sizeof damaged, "%s.noend", p);
    check_refused(cr_counting_set_load(fresh, damaged, err, sizeof err), err,
                  "no 'end' line", "a manifest cut short");
    rank0_shell("cp -r '%s' '%s.swap' && sed -i '2{h;d};3{G}' '%s.swap/manifest'", p);
    snprintf(damaged, sizeof damaged, "%s.swap", p);
    check_refused(cr_counting_set_load(fresh, damaged, err, sizeof err), err,
                  "a damaged header", "a manifest with two lines swapped");
    /* the first two records of part 0 exchanged: the checksum counts each record's
     * place, so a record moved within its part is caught */
    rank0_shell("cp -r '%s' '%s.moved' && cd '%s.moved' && "
                "rb=$(sed -n 's/^record_bytes //p' manifest) && "
                "dd if=part-000000.1 of=first bs=$rb count=1 status=none && "
                "dd if=part-000000.1 of=part-000000.1 bs=$rb skip=1 count=1 conv=notrunc "
                "status=none && dd if=first of=part-000000.1 bs=$rb seek=1 conv=notrunc "
                "status=none && rm first", p);
    snprintf(damaged, sizeof damaged, "%s.moved", p);
    check_refused(cr_counting_set_load(fresh, damaged, err, sizeof err), err,
                  "part-000000.1: checksum mismatch", "a record moved within its part");
    rank0_shell("cp -r '%s' '%s.be' && sed -i 's/^byte_order .*/byte_order big/' "
                "'%s.be/manifest'", p);
    snprintf(damaged, sizeof damaged, "%s.be", p);
    check_refused(cr_counting_set_load(fresh, damaged, err, sizeof err), err,
                  "saved on a big-endian machine", "a save of the other byte order");
    check_untouched(fresh, "after the refused loads");
    check_interrupted_overwrite(&c, p);
    /* and a good load still adds to what is there: the old save outlived the failed
     * overwrite */
    path_in(p, sizeof p, "counting_set");
    check_ok(cr_counting_set_load(fresh, p, err, sizeof err), err, "a good load");
    CHECK(cr_counting_set_size(fresh) == ELEMENTS + 1, "the good load: keys");
    cr_counting_set_destroy(fresh);
    /* a darray of another length */
    cr_darray *shorter = cr_darray_create(c.comm, ELEMENTS - 1, 8, NULL);
    path_in(p, sizeof p, "darray");
    check_refused(cr_darray_load(shorter, p, err, sizeof err), err, "length 5003",
                  "a darray of another length");
    cr_darray_destroy(shorter);
    check_declared_types(&c);
    check_planted_links(&c);
    check_stages_round_trip(&c);
    destroy_all(&c);
    verdict();
}

int main(int argc, char **argv)
{
    mode = argc > 2 ? argv[1] : "";
    dir = argc > 2 ? argv[2] : "";
    const struct CMUnitTest save[] = {cmocka_unit_test(test_save)};
    const struct CMUnitTest load[] = {cmocka_unit_test(test_load),
                                       cmocka_unit_test(test_load_into_filled),
                                       cmocka_unit_test(test_odd_lengths)};
    const struct CMUnitTest bad[] = {cmocka_unit_test(test_bad_saves)};
    const struct CMUnitTest overwrite[] = {cmocka_unit_test(test_overwrite)};
    if (!strcmp(mode, "save"))
        return RUN_MPI_TESTS(argc, argv, save);
    if (!strcmp(mode, "overwrite"))
        return RUN_MPI_TESTS(argc, argv, overwrite);
    if (!strcmp(mode, "load"))
        return RUN_MPI_TESTS(argc, argv, load);
    if (!strcmp(mode, "bad"))
        return RUN_MPI_TESTS(argc, argv, bad);
    fprintf(stderr, "usage: test_save save|overwrite|load|bad DIR\n");
    return 2;
}
