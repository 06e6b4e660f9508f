/* LayerNorm over the last dimension, eps 1e-5.
 *   in, out (N, C); weight, bias (C); mean, rstd (N) kept for backward. */
#ifndef LM_LAYERNORM_H
#define LM_LAYERNORM_H

#include <stddef.h>

#define LAYERNORM_EPS 1e-5f

void layernorm_forward(float *out, float *mean, float *rstd, const float *in,
                       const float *weight, const float *bias, size_t N, size_t C);
/* sum = a + b, then out = LayerNorm(sum): a residual connection and the
 * next LayerNorm in one pass (all (N, C)). */
void residual_layernorm_forward(float *sum, float *out, float *mean, float *rstd, const float *a, const float *b,
                                const float *weight, const float *bias, size_t N, size_t C);
/* din, dweight, dbias accumulate. */
void layernorm_backward(float *din, float *dweight, float *dbias, const float *dout,
                        const float *in, const float *weight, const float *mean,
                        const float *rstd, size_t N, size_t C);

#endif
