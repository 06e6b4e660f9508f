/* Deterministic random numbers.
 *
 * Rng is a plain 64-bit state (splitmix64), so it can be saved in a checkpoint
 * as one integer and a resumed run draws exactly the numbers it would have.
 * rng_hash gives counter-based randomness (dropout masks): the value depends
 * only on its inputs, never on thread count or call order. */
#ifndef LM_RNG_H
#define LM_RNG_H

#include <stdint.h>

typedef struct Rng {
    uint64_t state;
} Rng;

void rng_seed(Rng *r, uint64_t seed);
uint64_t rng_u64(Rng *r);
float rng_uniform(Rng *r);            /* [0, 1) */
float rng_normal(Rng *r);             /* N(0, 1) */
uint64_t rng_below(Rng *r, uint64_t n); /* [0, n), n > 0 */

uint64_t rng_hash(uint64_t a, uint64_t b);
float rng_hash_uniform(uint64_t key, uint64_t i); /* [0, 1) */

#endif
