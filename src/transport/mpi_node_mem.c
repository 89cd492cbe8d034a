/* Segments shared by the ranks of one node under MPI (transport.h, cr_node_mem_ops):
 * the members split off the comm by node and allocate one MPI_Win_allocate_shared
 * window, each member's part in its own pages (alloc_shared_noncontig), so a part is
 * placed near the core that writes it first. */
#include "transport/mpi_node_mem.h"

#include "common/fatal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

enum { ALIGN = 64 };

typedef struct mpi_node_mem {
    MPI_Comm members;
    MPI_Win win;     /* MPI_WIN_NULL for a node of one rank */
    void *alone;     /* a node of one rank: its private memory */
} mpi_node_mem;

static char *aligned(void *p)
{
    return (char *)(((uintptr_t)p + ALIGN - 1) / ALIGN * ALIGN);
}

/* Whether every member of `members` shares memory with the others: one MPI
 * shared-memory node holds them all (the layout's nodes are cut from MPI's, but a
 * caller may name others). The same answer on every member. */
static bool one_machine(MPI_Comm members, int size)
{
    MPI_Comm shared;
    int rank, shared_size;
    MPI_Comm_rank(members, &rank);
    MPI_Comm_split_type(members, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared);
    MPI_Comm_size(shared, &shared_size);
    MPI_Comm_free(&shared);
    int ok = shared_size == size, all;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, members);
    return all;
}

/* Whether the node's shared-memory filesystem (where MPI implementations on Linux
 * back their shared windows) has room for the members' parts, half its free space
 * at most; the same answer on every member. Where it cannot be asked, assumed. A
 * window that does not fit would end the job inside MPI, not with Courier's line. */
static int size_of(MPI_Comm members)
{
    int n;
    MPI_Comm_size(members, &n);
    return n;
}

static bool room_for(MPI_Comm members, size_t bytes)
{
    unsigned long long mine = bytes, total;
    MPI_Allreduce(&mine, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, members);
    struct statvfs v;
    unsigned long long limit = statvfs("/dev/shm", &v) != 0
                                   ? (unsigned long long)INT64_MAX / 2
                                   : (unsigned long long)v.f_bavail * v.f_frsize / 2;
    /* each part within the limit first: then the sum of a node's parts cannot wrap */
    int ok = mine <= limit / (unsigned long long)size_of(members) && total <= limit, all;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, members);
    return all;
}

/* A node of one rank shares with nobody: its segment is private memory, on huge
 * pages where the system grants them. Shared memory gets none where the system's
 * shmem huge pages are off, and a fresh small page costs 40 times a huge one's share
 * on a virtual machine (docs/design-notes.md, "Page faults"). Refused (false) beyond
 * half the machine's memory, or when the allocation fails. */
enum { HUGE_PAGE = 2 << 20 };

static bool alone(MPI_Comm members, int rank, size_t bytes, cr_node_mem *out)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t limit = pages > 0 && page > 0 ? (size_t)pages / 2 * (size_t)page : SIZE_MAX / 2;
    if (bytes > limit)
        return false;
    size_t whole = (bytes + ALIGN + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    void *p;
    if (posix_memalign(&p, HUGE_PAGE, whole))
        return false;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, whole, MADV_HUGEPAGE);
#endif
    memset(p, 0, bytes + ALIGN);
    mpi_node_mem *m = cr_xcalloc(1, sizeof *m);
    m->members = members;
    m->win = MPI_WIN_NULL;
    m->alone = p;
    char **part = cr_xcalloc(1, sizeof *part);
    part[0] = aligned(p);
    *out = (cr_node_mem){.rank = rank, .size = 1, .part = part, .impl = m};
    return true;
}

/* Zero member `rank`'s slice of `size` of a part (whole pages apart from the ends),
 * so the members fault a fresh segment's pages in side by side rather than one
 * member alone: a page fault is most of the cost of a fresh segment on a virtual
 * machine, and shared memory gets no huge pages. Where the kernel can populate a
 * range in one call (MADV_POPULATE_WRITE, Linux 5.14), it does, which costs about
 * half the faults one by one; memset then writes the zeros (MPI does not promise
 * them). */
static void zero_my_slice(char *part, size_t bytes, int rank, int size)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t pg = page > 0 ? (size_t)page : 4096, pages = (bytes + pg - 1) / pg;
    size_t from = pages * (size_t)rank / (size_t)size * pg;
    size_t to = pages * (size_t)(rank + 1) / (size_t)size * pg;
    to = to < bytes ? to : bytes;
    if (from >= to)
        return;
#ifdef MADV_POPULATE_WRITE
    uintptr_t lo = ((uintptr_t)(part + from) + pg - 1) / pg * pg;
    uintptr_t hi = (uintptr_t)(part + to) / pg * pg;
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE); /* a hint: memset follows */
#endif
    memset(part + from, 0, to - from);
}

bool cr_mpi_node_mem_create(MPI_Comm comm, int node, int size, int rank, size_t bytes,
                            cr_node_mem *out)
{
    MPI_Comm members;
    MPI_Comm_split(comm, node, rank, &members);
    int got_size, got_rank;
    MPI_Comm_size(members, &got_size);
    MPI_Comm_rank(members, &got_rank);
    if (got_size != size || got_rank != rank)
        cr_fatal("internal error: node %d has %d ranks here, %d by the layout", node, got_size,
                 size);
    if (size == 1) { /* shared with nobody */
        if (alone(members, rank, bytes, out))
            return true;
        MPI_Comm_free(&members);
        return false;
    }
    if (!one_machine(members, size) || !room_for(members, bytes)) {
        MPI_Comm_free(&members);
        return false;
    }
    mpi_node_mem *m = cr_xcalloc(1, sizeof *m);
    m->members = members;
    m->win = MPI_WIN_NULL;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    void *base;
    int rc = MPI_Win_allocate_shared((MPI_Aint)(bytes + ALIGN), 1, info, members, &base,
                                     &m->win);
    MPI_Info_free(&info);
    if (rc != MPI_SUCCESS)
        cr_fatal("out of shared memory: a node segment of %zu bytes per rank", bytes);
    char **part = cr_xcalloc((size_t)size, sizeof *part);
    for (int q = 0; q < size; q++) {
        MPI_Aint qbytes;
        int unit;
        void *qbase;
        MPI_Win_shared_query(m->win, q, &qbytes, &unit, &qbase);
        part[q] = aligned(qbase);
        size_t usable = (size_t)qbytes - (size_t)(part[q] - (char *)qbase);
        zero_my_slice(part[q], usable, rank, size);
    }
    /* every part zeroed before any member writes its own */
    MPI_Barrier(members);
    *out = (cr_node_mem){.rank = rank, .size = size, .part = part, .impl = m};
    return true;
}

void cr_mpi_node_mem_destroy(cr_node_mem *nm)
{
    mpi_node_mem *m = nm->impl;
    if (m->win != MPI_WIN_NULL)
        MPI_Win_free(&m->win);
    free(m->alone);
    MPI_Comm_free(&m->members);
    free(m);
    free(nm->part);
    *nm = (cr_node_mem){0};
}
