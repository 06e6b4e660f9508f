/* Masked multi-head self-attention, one implementation of the Mixer interface.
 *   in, out (B, T, C); H heads of size hs = C / H.
 *   params, in order: qkv.weight (3C, C) rows q then k then v, head h the h-th
 *   block of hs rows in each; qkv.bias (3C); proj.weight (C, C); proj.bias (C).
 * Tiled causal attention with an online softmax (flash attention): no T x T
 * matrix is kept, tiles above the diagonal are skipped, and backward
 * recomputes the probabilities from the rows' log-sum-exp.
 * With rope positions q and k are rotated by position right after the qkv
 * projection (src/nn/rope.h), and dq, dk rotated back before its backward.
 *   acts: qkv (B,T,3C), y (B,T,C) heads concatenated, lse (B,H,T); backward
 *   scratch dqkv, dy, delta of the same sizes, and score tiles of up to 128 x 128. */
#ifndef LM_ATTENTION_H
#define LM_ATTENTION_H

#include <stddef.h>

#include "mixers/mixer.h"

extern const Mixer attention_mixer;

/* The layer's parameters (params, in the order above) as pointers. */
typedef struct AttnParams {
    const float *qkv_w, *qkv_b, *proj_w, *proj_b;
} AttnParams;

AttnParams attn_params(const float *params, size_t C);

#endif
