#include "lm/rng.h"

#include <math.h>

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void rng_seed(Rng *r, uint64_t seed) { r->state = mix64(seed ^ 0x5deece66dULL); }

uint64_t rng_u64(Rng *r) {
    r->state += 0x9e3779b97f4a7c15ULL;
    return mix64(r->state);
}

float rng_uniform(Rng *r) { return (float)(rng_u64(r) >> 40) * (1.0f / 16777216.0f); }

float rng_normal(Rng *r) {
    /* Box-Muller; u1 in (0, 1] so the log is finite. */
    double u1 = ((double)(rng_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    double u2 = (double)(rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
}

uint64_t rng_below(Rng *r, uint64_t n) { return rng_u64(r) % n; }

uint64_t rng_hash(uint64_t a, uint64_t b) { return mix64(mix64(a) ^ (b + 0x9e3779b97f4a7c15ULL)); }

float rng_hash_uniform(uint64_t key, uint64_t i) {
    return (float)(rng_hash(key, i) >> 40) * (1.0f / 16777216.0f);
}
