#include "nn/dropout.h"

#include "lm/rng.h"

void dropout_mask(float *mask, size_t n, float p, uint64_t key) {
    float keep = 1.0f / (1.0f - p);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) mask[i] = rng_hash_uniform(key, i) < p ? 0.0f : keep;
}

void dropout_forward(float *x, const float *mask, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) x[i] *= mask[i];
}

void dropout_backward(float *din, const float *dout, const float *mask, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) din[i] += dout[i] * mask[i];
}
