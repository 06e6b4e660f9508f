/* Shared element-wise kernels (a fast exp, softmax, GELU, sums); the layers' matrix
 * products are lm/matmul.h's. Every loop here is
 * OpenMP-parallel and computes each output the same way on any number of
 * threads. Backward functions ACCUMULATE (+=) into the gradients they
 * produce; callers zero what must start at zero. */
#ifndef LM_OPS_H
#define LM_OPS_H

#include <stddef.h>
#include <stdint.h>


/* floor(t) for |t| < 2^31 by truncation, less one where that rounded a
 * negative t up (-0 gives +0, equal as a value). It vectorises at x86-64's
 * baseline (SSE2), which has no floor instruction: floorf there is a call
 * per value. */
static inline float floor_by_truncation(float t) {
    int k = (int)t;
    return (float)(k - (t < (float)k));
}

/* exp(x) to about 2 ulp, written so that loops calling it vectorise (libm's
 * expf and tanhf are scalar calls and dominated the GELU and softmax loops).
 * Range reduction x = n ln2 + r, then the Cephes minimax polynomial for e^r.
 * Without SSE4.1 (a release build's baseline code) n comes from
 * floor_by_truncation, the same for every x: floorf's calls had been most of
 * that build's loss over an 8,192-token vocabulary. Elsewhere the compiler
 * vectorises floorf itself, and the truncation would not vectorise there (it
 * folds the clamps' constants through it into branches). */
static inline float fast_expf(float x) {
    x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
    float t = x * 1.44269504088896341f + 0.5f;
#if defined(__x86_64__) && !defined(__SSE4_1__)
    float n = floor_by_truncation(t);
#else
    float n = __builtin_floorf(t);
#endif
    float r = x - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    union { float f; int i; } scale = {.i = ((int)n + 127) << 23};
    return p * scale.f;
}

/* tanh through fast_expf: 1 - 2 / (e^{2u} + 1), exact at both saturations. */
static inline float fast_tanhf(float u) { return 1.0f - 2.0f / (fast_expf(2.0f * u) + 1.0f); }

/* out[i] = softmax(in)[i] over `len` entries, len >= 1 (out may equal in). */
void softmax(float *out, const float *in, size_t len);

#define GELU_SCALE 0.7978845608028654f /* sqrt(2 / pi) */

/* GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), and its derivative. */
static inline float gelu(float x) {
    return 0.5f * x * (1.0f + fast_tanhf(GELU_SCALE * (x + 0.044715f * x * x * x)));
}
static inline float gelu_grad(float x) {
    float th = fast_tanhf(GELU_SCALE * (x + 0.044715f * x * x * x));
    return 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
}

/* GELU over n values. Backward: din += gelu'(in) * dout. */
void gelu_forward(float *out, const float *in, size_t n);
void gelu_backward(float *din, const float *in, const float *dout, size_t n);

/* dst[c] += sum over rows r of src[r * cols + c]  (bias and gain gradients). */
void column_sum_add(float *dst, const float *src, size_t rows, size_t cols);

/* out = a + b elementwise (out may alias a or b). */
void add_forward(float *out, const float *a, const float *b, size_t n);
/* dst += src */
void add_inplace(float *dst, const float *src, size_t n);

/* Sum of squares / plain sum in double, in fixed-size chunks combined in a
 * fixed order: the result does not depend on the number of threads. */
double sum_squares(const float *x, size_t n);
double sum_floats(const float *x, size_t n);

#endif
