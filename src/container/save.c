/* Saving and loading the containers (include/courier/io.h underneath): a record per
 * element, written where it lives; loaded on any number of ranks by inserting each
 * record again, so it reaches its owner under the loading job's layout (a map's
 * records that the reading rank owns go straight into its table). */
#include "container/container_internal.h"

#include "courier/io.h"
#include "courier/mailbox.h"

#include "common/fatal.h"

#include <stdlib.h>
#include <string.h>

/* A block of records goes to the file in one write: 256 KiB measured faster than
 * 64 KiB (four times the writes) and than 1 MiB (the block leaves the core's cache
 * before it is written) on a 10M-key counting set at 2 ranks. */
#define STAGE_BYTES ((size_t)256 << 10)

/* A save in progress: the container's walk puts its records into a block that goes to
 * the writer when full. */
typedef struct stage {
    cr_save_writer *w;
    void *container;
    void (*walk)(struct stage *s); /* the container's for_all, with a put_* below */
    size_t record_bytes, held, cap;
    char buf[STAGE_BYTES + CR_MAX_KEY + CR_CONTAINER_MAX_VALUE + 16];
} stage;

static void stage_flush(stage *s)
{
    cr_save_write(s->w, s->buf, s->held);
    s->held = 0;
}

static char *stage_next(stage *s)
{
    if (s->held == s->cap)
        stage_flush(s);
    return s->buf + s->held++ * s->record_bytes;
}

static void fill_stage(cr_save_writer *w, void *user)
{
    stage *s = user;
    s->w = w;
    s->walk(s);
    stage_flush(s);
}

/* Every container's save: a barrier (every insert sent before is in it), then each
 * rank walks what it holds. */
static int save_container(cr_comm *comm, void *container, void (*walk)(stage *),
                          const cr_save_kind *k, const char *dir, unsigned flags, char *err,
                          size_t errlen)
{
    cr_barrier(comm);
    stage *s = cr_xmalloc(sizeof *s);
    *s = (stage){.container = container, .walk = walk, .record_bytes = k->record_bytes,
                 .cap = STAGE_BYTES / k->record_bytes};
    if (s->cap == 0)
        s->cap = 1;
    int rc = cr_io_save(comm, dir, k, flags, fill_stage, s, err, errlen);
    free(s);
    return rc;
}

typedef struct load_job {
    cr_map *map; /* a map's, set's or counting set's table (ct_map_load), or NULL */
    void *container; /* else: what put inserts a record into */
    void (*put)(void *container, const char *record);
    size_t record_bytes;
    uint64_t loaded; /* records this rank has been given so far */
} load_job;

static void load_each(const void *records, size_t count, uint64_t first, void *user)
{
    (void)first;
    load_job *j = user;
    /* Sized first, the table does not grow while the records arrive: every rank
     * reads about as many records as it will own (its share may come in a run per
     * part it lies in). */
    j->loaded += count;
    if (j->map) {
        cr_map_reserve(j->map, j->loaded * (uint64_t)cr_comm_size(cr_map_comm(j->map)));
        ct_map_load(j->map, records, count);
        return;
    }
    const char *rec = records;
    for (size_t i = 0; i < count; i++, rec += j->record_bytes)
        j->put(j->container, rec);
}

/* Every container's load: a barrier (every insert made before is applied, so none
 * lands after the saved records that the owners put straight into their tables),
 * the records inserted again, then a barrier (every one applied on its owner). */
static int load_container(cr_comm *comm, const char *dir, const cr_save_kind *k, load_job *j,
                          char *err, size_t errlen)
{
    cr_barrier(comm);
    int rc = cr_io_load(comm, dir, k, NULL, load_each, j, err, errlen);
    cr_barrier(comm);
    return rc;
}

/* ---------------------------------------------------------------- maps and sets */

/* A block of records at a time, copied straight from the table. */
static void walk_map(stage *s)
{
    size_t cursor = 0;
    while ((s->held = ct_map_copy_records(s->container, &cursor, s->buf, s->cap)) > 0)
        stage_flush(s);
}

static cr_save_kind map_kind(cr_map *map, const char *kind)
{
    return (cr_save_kind){.kind = kind, .meta = ct_map_key_len(map), .meta_name = "key bytes",
                          .record_bytes = ct_map_key_len(map) + ct_map_value_len(map)};
}

static int save_map(cr_map *map, const char *kind, const char *dir, unsigned flags, char *err,
                    size_t errlen)
{
    cr_save_kind k = map_kind(map, kind);
    return save_container(cr_map_comm(map), map, walk_map, &k, dir, flags, err, errlen);
}

/* A set's or counting set's records are its map's (a counting set's value is the
 * count, added as its map's rule adds). */
static int load_map(cr_map *map, const char *kind, const char *dir, char *err, size_t errlen)
{
    cr_save_kind k = map_kind(map, kind);
    load_job j = {.map = map, .record_bytes = k.record_bytes};
    return load_container(cr_map_comm(map), dir, &k, &j, err, errlen);
}

int cr_map_save(cr_map *map, const char *dir, unsigned flags, char *err, size_t errlen)
{
    return save_map(map, "map", dir, flags, err, errlen);
}

int cr_map_load(cr_map *map, const char *dir, char *err, size_t errlen)
{
    return load_map(map, "map", dir, err, errlen);
}

int cr_set_save(cr_set *set, const char *dir, unsigned flags, char *err, size_t errlen)
{
    return save_map(ct_set_map(set), "set", dir, flags, err, errlen);
}

int cr_set_load(cr_set *set, const char *dir, char *err, size_t errlen)
{
    return load_map(ct_set_map(set), "set", dir, err, errlen);
}

int cr_counting_set_save(cr_counting_set *cs, const char *dir, unsigned flags, char *err,
                         size_t errlen)
{
    return save_map(cr_counting_set_map(cs), "counting_set", dir, flags, err, errlen);
}

int cr_counting_set_load(cr_counting_set *cs, const char *dir, char *err, size_t errlen)
{
    return load_map(cr_counting_set_map(cs), "counting_set", dir, err, errlen);
}

/* ---------------------------------------------------------------- bag */

static void put_item(void *item, void *user)
{
    stage *s = user;
    memcpy(stage_next(s), item, s->record_bytes);
}

static void walk_bag(stage *s)
{
    cr_bag_for_all(s->container, put_item, s);
}

static cr_save_kind bag_kind(const cr_bag *bag)
{
    return (cr_save_kind){.kind = "bag", .record_bytes = ct_bag_item_len(bag),
                          .meta = ct_bag_item_len(bag), .meta_name = "item bytes"};
}

int cr_bag_save(cr_bag *bag, const char *dir, unsigned flags, char *err, size_t errlen)
{
    cr_save_kind k = bag_kind(bag);
    return save_container(ct_bag_comm(bag), bag, walk_bag, &k, dir, flags, err, errlen);
}

static void put_bag(void *bag, const char *rec)
{
    cr_bag_insert(bag, rec);
}

int cr_bag_load(cr_bag *bag, const char *dir, char *err, size_t errlen)
{
    cr_save_kind k = bag_kind(bag);
    load_job j = {.container = bag, .record_bytes = k.record_bytes, .put = put_bag};
    return load_container(ct_bag_comm(bag), dir, &k, &j, err, errlen);
}

/* ---------------------------------------------------------------- disjoint set */

static void put_link(uint64_t item, uint64_t parent, void *user)
{
    uint64_t rec[2] = {item, parent};
    memcpy(stage_next(user), rec, sizeof rec);
}

static void walk_dset(stage *s)
{
    cr_disjoint_set_for_all(s->container, put_link, s);
}

static const cr_save_kind dset_kind = {.kind = "disjoint_set", .record_bytes = 16};

int cr_disjoint_set_save(cr_disjoint_set *ds, const char *dir, unsigned flags, char *err,
                         size_t errlen)
{
    return save_container(ct_disjoint_set_comm(ds), ds, walk_dset, &dset_kind, dir, flags,
                          err, errlen);
}

/* An item and its parent: the same partition comes back from a union of the two
 * (an item that is its own parent is added alone). */
static void put_link_back(void *ds, const char *rec)
{
    uint64_t link[2];
    memcpy(link, rec, sizeof link);
    if (link[0] == link[1])
        cr_disjoint_set_add(ds, link[0]);
    else
        cr_disjoint_set_union(ds, link[0], link[1]);
}

int cr_disjoint_set_load(cr_disjoint_set *ds, const char *dir, char *err, size_t errlen)
{
    load_job j = {.container = ds, .record_bytes = 16, .put = put_link_back};
    return load_container(ct_disjoint_set_comm(ds), dir, &dset_kind, &j, err, errlen);
}
