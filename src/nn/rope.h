/* Rotary position embedding (RoFormer, arXiv 2104.09864) of the queries and
 * keys inside an attention layer's qkv buffer.
 *   table (T_max, hs/2, 2): for position t and pair i, cos and sin of
 *     angle(t, i) = t * 10000^(-2i / hs); hs even.
 *   qkv (B, T, 3C) rows [q | k | v], H heads of hs = C / H in q and in k;
 *     row t of a sequence is at position t0 + t.
 * rope_forward rotates the pair (2i, 2i+1) of every head of q and k at
 * position t by angle(t, i), so that q_t . k_s depends on t - s only;
 * rope_backward applies the transpose (the rotation by -angle) to dq and dk
 * of dqkv, turning gradients of the rotated q, k into those of the raw ones.
 * v is left alone. */
#ifndef LM_ROPE_H
#define LM_ROPE_H

#include <stddef.h>

void rope_table(float *table, size_t T_max, size_t hs);
void rope_forward(float *qkv, const float *table, size_t B, size_t T, size_t t0, size_t C, size_t hs);
void rope_backward(float *dqkv, const float *table, size_t B, size_t T, size_t t0, size_t C, size_t hs);

#endif
