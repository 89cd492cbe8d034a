/* One verdict for every rank of a collective input or output call. */
#include "io/io_internal.h"

#include "courier/coll.h"
#include "courier/mailbox.h"

#include "common/fatal.h"

#include <string.h>

/* Make every rank return the same result: -1 with the lowest failing rank's message
 * if any rank failed. The message travels as words combined by maximum, where every
 * other rank gives zeros. */
#define AGREE_WORDS 32
int io_agree(cr_comm *comm, int rc, char *err, size_t errlen)
{
    uint64_t rank = (uint64_t)cr_comm_rank(comm), size = (uint64_t)cr_comm_size(comm);
    uint64_t mine = rc ? rank : size, first;
    cr_allreduce(comm, &mine, &first, 1, CR_UINT64, CR_OP_MIN, NULL);
    if (first == size)
        return 0;
    uint64_t words[AGREE_WORDS] = {0};
    if (first == rank && err)
        memcpy(words, err, strnlen(err, errlen < sizeof words ? errlen : sizeof words - 1));
    cr_allreduce(comm, words, words, AGREE_WORDS, CR_UINT64, CR_OP_MAX, NULL);
    ((char *)words)[sizeof words - 1] = '\0';
    cr_set_error(err, errlen, "%s", (const char *)words);
    return -1;
}

