/* RMSNorm over the last dimension (Zhang & Sennrich, arXiv 1910.07467), eps 1e-6:
 *   out = in * rstd * weight,  rstd = 1 / sqrt(mean(in^2) + eps)
 *   in, out (N, C); weight (C), a gain (no bias); rstd (N) kept for backward.
 * And the per-head form attention's qk-norm uses: each head's hs values of
 * q and k scaled to unit root mean square, in place, with no gain. */
#ifndef LM_RMSNORM_H
#define LM_RMSNORM_H

#include <stddef.h>

#define RMSNORM_EPS 1e-6f

void rmsnorm_forward(float *out, float *rstd, const float *in, const float *weight, size_t N, size_t C);
/* sum = a + b, then out = RMSNorm(sum): a residual connection and the next
 * norm in one pass (all (N, C)). */
void residual_rmsnorm_forward(float *sum, float *out, float *rstd, const float *a, const float *b, const float *weight,
                              size_t N, size_t C);
/* din and dweight accumulate. */
void rmsnorm_backward(float *din, float *dweight, const float *dout, const float *in, const float *weight,
                      const float *rstd, size_t N, size_t C);

/* Per head, in place: x has N rows of row stride ld, each holding `heads`
 * runs of hs values side by side from its start; each run becomes
 * x * rstd. rstd (N, heads) is kept for backward, or NULL (sampling). */
void rmsnorm_heads_forward(float *x, float *rstd, size_t N, size_t ld, size_t heads, size_t hs);
/* In place: dx (laid out as x) holds d(loss)/d(the normalised runs) y and
 * becomes d(loss)/d(the runs before), rstd * (dy - y mean(dy y)); y is what
 * forward left in x. */
void rmsnorm_heads_backward(float *dx, const float *y, const float *rstd, size_t N, size_t ld, size_t heads,
                            size_t hs);

#endif
