/* Where a function lives, as a number that is the same in every process running the
 * same executable, whatever the address randomisation: a hash of the file that holds
 * the code and the function's offset in it. Used to check that ranks registered the
 * same handlers in the same order (src/mailbox/comm.c). */
#ifndef COURIER_COMMON_CODE_ID_H
#define COURIER_COMMON_CODE_ID_H

#include <stdint.h>

/* `fn` is a function pointer stored in a uintptr_t (cr_code_of below); 0 gives 0. */
uint64_t cr_code_id(uintptr_t fn);

/* A function pointer as a number, without the cast ISO C leaves undefined. */
#define cr_code_of(fnptr)                                                                   \
    __extension__({                                                                         \
        uintptr_t cr_code_of_v_ = 0;                                                        \
        _Static_assert(sizeof(fnptr) == sizeof cr_code_of_v_, "function pointer size");   \
        __typeof__(fnptr) cr_code_of_f_ = (fnptr);                                          \
        memcpy(&cr_code_of_v_, &cr_code_of_f_, sizeof cr_code_of_v_);                       \
        cr_code_of_v_;                                                                      \
    })

#endif
