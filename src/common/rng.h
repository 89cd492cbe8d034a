/* Small deterministic generators shared by apps, tests and (later) graph generators. */
#ifndef COURIER_COMMON_RNG_H
#define COURIER_COMMON_RNG_H

#include <stdint.h>

/* SplitMix64 (Steele, Lea, Flood 2014): a fast 64-bit stream from one word of state. */
static inline uint64_t cr_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A stateless 64-bit mix of x (the SplitMix64 finalizer). */
static inline uint64_t cr_hash64(uint64_t x)
{
    uint64_t s = x;
    return cr_splitmix64(&s);
}

/* Uniform value in [0, n) from a 64-bit random word (Lemire's multiply-shift). */
static inline uint64_t cr_bounded(uint64_t r, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)r * n) >> 64);
}

#endif
