/* Skewed keys shared by the apps (histogram, dedup_model): a few keys, scattered
 * over the range, get most of the draws. */
#ifndef COURIER_APPS_SKEW_H
#define COURIER_APPS_SKEW_H

#include <courier/rng.h>

#include <math.h>
#include <stdint.h>

/* The next key in [0, range) of the stream `state`: uniform when skew == 1, else
 * the key of rank floor(range * u^skew) for a uniform u, hashed over the range
 * (skew 4: about 18% of the draws go to the top 0.1% of the keys). */
static inline uint64_t app_skewed_key(uint64_t range, double skew, uint64_t *state)
{
    uint64_t r = cr_rng_next(state);
    if (skew == 1.0)
        return cr_rng_bounded(r, range);
    double u = (double)(r >> 11) * 0x1.0p-53;
    uint64_t rank = (uint64_t)((double)range * pow(u, skew));
    return cr_rng_bounded(cr_rng_hash64(rank), range);
}

#endif
