/* Saving and loading a darray: its blocks end to end are the array in index order,
 * so a loading rank reads exactly its own block's records (no messages), whatever
 * rank count wrote them. */
#include "courier/darray.h"
#include "darray/darray_internal.h"

#include "courier/io.h"

#include <string.h>

/* The element type of an array of 8-byte elements (cr_darray_opts.type, CR_INT64
 * unless declared), as a save records it: a darray of doubles is not loaded into
 * one of int64. Other element sizes are the caller's bytes. */
static const char *type_name(cr_dtype t)
{
    switch (t) {
    case CR_INT32: return "int32";
    case CR_INT64: return "int64";
    case CR_UINT64: return "uint64";
    case CR_FLOAT: return "float";
    case CR_DOUBLE: return "double";
    default: return NULL; /* not declared */
    }
}

static cr_save_kind darray_kind(const cr_darray *a)
{
    return (cr_save_kind){.kind = "darray", .record_bytes = cr_darray_elem_size(a),
                          .meta = cr_darray_length(a), .meta_name = "length",
                          .type = cr_darray_elem_size(a) == 8 ? type_name(a->opts.type)
                                                                : NULL};
}

static void fill_block(cr_save_writer *w, void *user)
{
    uint64_t first, count;
    void *block = cr_darray_local(user, &first, &count);
    cr_save_write(w, block, (size_t)count);
}

int cr_darray_save(cr_darray *a, const char *dir, unsigned flags, char *err, size_t errlen)
{
    cr_comm *comm = cr_darray_comm(a);
    cr_barrier(comm);
    cr_save_kind k = darray_kind(a);
    return cr_io_save(comm, dir, &k, flags, fill_block, a, err, errlen);
}

static void take_block(const void *records, size_t count, uint64_t first, void *user)
{
    cr_darray *a = user;
    uint64_t mine, n;
    char *block = cr_darray_local(a, &mine, &n);
    size_t elem = cr_darray_elem_size(a);
    memcpy(block + (first - mine) * elem, records, count * elem);
}

int cr_darray_load(cr_darray *a, const char *dir, char *err, size_t errlen)
{
    cr_comm *comm = cr_darray_comm(a);
    cr_barrier(comm);
    uint64_t range[2];
    cr_darray_local(a, &range[0], &range[1]);
    cr_save_kind k = darray_kind(a);
    return cr_io_load(comm, dir, &k, range, take_block, a, err, errlen);
}
