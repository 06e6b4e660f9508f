/* Masked multi-head self-attention, one implementation of the Mixer interface.
 *   in, out (B, T, C); H heads of size hs = C / H.
 *   params, in order: qkv.weight (3C, C) rows q then k then v, head h the h-th
 *   block of hs rows in each; qkv.bias (3C); proj.weight (C, C); proj.bias (C).
 * Tiled causal attention with an online softmax (flash attention): no T x T
 * matrix is kept, tiles above the diagonal are skipped, and backward
 * recomputes the probabilities from the rows' log-sum-exp.
 * With rope positions q and k are rotated by position right after the qkv
 * projection (src/nn/rope.h), and dq, dk rotated back before its backward.
 * With qk-norm each head of q and k is then scaled to unit root mean square
 * (src/nn/rmsnorm.h; no gain, as modded-nanogpt and nanochat do), and qkv
 * keeps the normalised q, k; (B,T,2H) of their 1/rms are kept too.
 *   acts: qkv (B,T,3C), y (B,T,C) heads concatenated, lse (B,H,T); backward
 *   scratch dqkv, dy, delta of the same sizes, and score tiles of up to 128 x 128. */
#ifndef LM_ATTENTION_H
#define LM_ATTENTION_H

#include <stddef.h>

#include "lm/mixer.h"

extern const Mixer attention_mixer;

/* Its settings (bin/train's --attn-window, the config's "attn_window",
 * written only when not 0): a sliding window of the last `window`
 * positions for every attention layer; 0: the whole causal past. A layer's
 * own part of its MixerSpec holds the same. */
typedef struct AttentionSettings {
    size_t window;
} AttentionSettings;
/* A layer's sliding window (mixers/attention_tiles.h); 0: the whole causal past. */
size_t attention_window(const MixerSpec *spec);

/* The layer's parameters (params, in the order above) as pointers. */
typedef struct AttnParams {
    const float *qkv_w, *qkv_b, *proj_w, *proj_b;
} AttnParams;

AttnParams attn_params(const float *params, size_t C);

/* The forward's qkv (B, T, 3C) in its activations acts (rotated and
 * normalised q and k, as the step's caches keep them). */
const float *attn_forward_qkv(const float *acts, const MixerSpec *spec, size_t B, size_t T);

/* The sampling step (mixers/attention_step.c): Mixer's state_size, step,
 * step_batch and fill_state. */
size_t attention_state_size(const MixerSpec *spec);
/* Mixer.memory_size: the keys and values of the positions the cache keeps. */
size_t attention_memory_size(const MixerSpec *spec);
void attention_step(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *state,
                    const float *in_t, float *out_t, size_t t);
void attention_step_batch(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *state,
                          size_t stride, const float *in, float *out, size_t t, size_t n);
void attention_fill_state(const MixerSpec *spec, const float *acts, size_t T, float *state);

/* qk-norm (nothing without it): q and k of N qkv rows (3C each) per head
 * normalised in place; rstd (N, 2H) kept for backward, or NULL. */
void attn_qk_norm(const MixerSpec *spec, float *qkv, float *rstd, size_t N);

/* Whether backward, at the current parallel width (lm/threads.h), cuts each
 * of the B x H heads (T tokens, head size hs, a sliding window or 0, which
 * sets the tile side: attention_tiles.h) into a task per key tile and
 * one per query tile rather than one task per head: where there are too few
 * heads for the threads and the tasks' room fits in the forward pass's
 * tiles. Either way the gradients are bit for bit the same. */
int attention_backward_by_tiles(size_t B, size_t T, size_t H, size_t hs, size_t window);

/* ---- inspection (src/mixers/attention_inspect.c) ---- */

/* The Mixer's inspect hook. Its exhibits: "attn", the (H, T, T) maps
 * recomputed from q and k; "qk_form", each head's form statistics (a
 * table of FormStats and its r(cos, logit)); "singular_values" and
 * "qk_angles", each head's spectrum and principal angles (tables of
 * d_head columns). As parts, each head's share of the output at T - 1
 * ("H<h>") and the output bias ("attn bias"). */
int attention_inspect(const MixerSpec *spec, const MixerRuntime *rt, const float *params, const float *x, size_t T,
                      MixerInspectWhat what, LayerInspection *out, Error *err);
/* probs (T, T) of head h from qkv (T, 3C) rows as attention.c lays them out. */
void attention_probs(float *probs, const float *qkv, size_t T, size_t C, size_t H, size_t h, size_t window);
/* cos (T, T): the cosine of rows i and j of x (T, C), the LN1 output (0 for
 * a zero row); the same for every head of a layer. */
int input_cosines(float *cos, const float *x, size_t T, size_t C, Error *err);
/* Pearson's r of cos and a head's scaled logits (T, T, before the softmax)
 * over the causal pairs j <= i (NaN if undefined). */
double similarity_logit_corr(const float *cos, const float *scores, size_t T);

/* A head's bilinear form M = W_q^T W_k (C x C, rank <= d_head). */
typedef struct FormStats {
    double sv_max, sv_min;   /* largest and d_head-th largest singular value */
    double effective_rank;   /* exp(entropy of the normalised singular values) */
    double antisym_share;    /* |A|_F^2 / |M|_F^2, A the antisymmetric part of M */
    double identity_dist;    /* |M - (tr M / C) I|_F / |M|_F */
} FormStats;
/* FormStats of head h from qkv.weight (3C, C); sv (d_head, or NULL): every
 * singular value of W_q^T W_k, decreasing; qk_cos (d_head, or NULL): the
 * cosines of the principal angles between the query and key spaces,
 * decreasing. */
void bilinear_spectrum(FormStats *s, double *sv, double *qk_cos, const float *qkv_w, size_t C, size_t H, size_t h);

#endif
