/* Courier's small deterministic random streams: the ones its graph generators, its
 * simulated transport and its apps use, public so that a program can draw the same
 * keys on every run and every rank count. Every function is local, pure (or touches
 * only the state it is given) and never runs handlers. */
#ifndef COURIER_RNG_H
#define COURIER_RNG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The next word of a SplitMix64 stream (Steele, Lea and Flood, "Fast splittable
 * pseudorandom number generators", OOPSLA 2014): one word of state, any seed. */
static inline uint64_t cr_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A stateless 64-bit mix of x (the SplitMix64 finalizer): a hash for integer keys. */
static inline uint64_t cr_rng_hash64(uint64_t x)
{
    uint64_t s = x;
    return cr_rng_next(&s);
}

/* A value in [0, n) from a random 64-bit word r, uniform when r is (Lemire's
 * multiply-shift, without the rejection step: the bias is below n / 2^64). */
static inline uint64_t cr_rng_bounded(uint64_t r, uint64_t n)
{
    __extension__ typedef unsigned __int128 wide; /* GCC and Clang; clean under -Wpedantic */
    return (uint64_t)(((wide)r * n) >> 64);
}

#ifdef __cplusplus
}
#endif

#endif
