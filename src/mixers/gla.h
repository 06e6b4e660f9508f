/* Gated linear attention with a per-head scalar decay: a linear-time
 * recurrent mixer with a global state (the form RetNet, Mamba-2's SSD and
 * GLA share), one implementation of the Mixer interface.
 *   in, out (B, T, C); H heads of size hs = C / H. For each head, with
 *   q_t, k_t, v_t its hs columns of the qkv projection of x_t:
 *     gamma_t = sigmoid(w_h . x_t + b_h + offset_h)      the head's decay, in (0, 1)
 *     S_t     = gamma_t S_{t-1} + k_t v_t^T                (hs x hs), S_{-1} = 0
 *     o_t     = S_t^T q_t
 *   then each head's o_t scaled to unit root mean square (no gain), the heads
 *   concatenated and projected: out = proj(o). The state a sequence carries
 *   is H hs^2 = C hs floats, whatever its length.
 *   offset_h = logit(1 - 2^-(3 + 5 h / (H - 1))) (mixers/head_decay.h): at
 *   the start the heads forget at rates from 1/8 to 1/256 per token
 *   (RetNet's spread of decays); the projection learns to move them per token.
 *   params, in order: qkv.weight (3C, C) rows q then k then v, head h the
 *   h-th block of hs rows in each; qkv.bias (3C); decay.weight (H, C);
 *   decay.bias (H); proj.weight (C, C); proj.bias (C).
 *   acts: qkv (B,T,3C), gamma (B,T,H), y (B,T,C) the normalised o, rstd
 *   (B,T,H), the state at the start of every chunk of GLA_CHUNK positions
 *   (B,H,ceil(T/GLA_CHUNK),hs,hs); backward scratch dqkv (B,T,3C), dy
 *   (B,T,C), dz (B,T,H), and per (b, h) a chunk's products (ChunkRoom).
 * Forward and backward take a chunk of GLA_CHUNK positions at a time in
 * its chunk-parallel form (small products on tile_product; gla.c), the
 * chunks in order per (b, h) and the (b, h) in parallel: O(T (L + hs) hs)
 * per head. Sampling steps the recurrence itself. bin/eval --ablate's parts
 * are its heads ("head0" ...). */
#ifndef LM_GLA_H
#define LM_GLA_H

#include "lm/mixer.h"

/* Positions per chunk (L), whose starting state forward keeps for backward:
 * 16 and 32 measured alike, 64 slower (its intra-chunk products grow with L). */
#define GLA_CHUNK 32

extern const Mixer gla_mixer;

/* ---- what gla.c shares with its inspection (gla_inspect.c) ---- */

/* The layer's parameters (params, in the order above) as pointers, from
 * its layout's one declaration (gla.c's gla_tensors). */
typedef struct GlaParams {
    const float *qkv_w, *qkv_b, *decay_w, *decay_b, *proj_w, *proj_b;
} GlaParams;
GlaParams gla_params(const float *params, const MixerSpec *spec);
/* gamma (N, H): each head's decay at each of the N rows of in (N, C). */
void gla_decays(float *gamma, const GlaParams *p, const float *in, size_t N, size_t C, size_t H);
/* One position of one head's recurrence: S = g S + k v^T, then o = S^T q
 * (S: hs x hs, row i the key dimension). */
void gla_state_step(float *S, const float *q, const float *k, const float *v, float g, float *o, size_t hs);

/* The Mixer's inspect hook: its exhibits "decay", each head's gamma_t
 * along the prompt, and "state_norm", each head's |S_t|_F after position
 * t (series, a row per head); as parts, each head's share of the output
 * at T - 1 ("H<h>") and the output bias ("gla bias"). No maps. */
int gla_inspect(const MixerSpec *spec, const MixerRuntime *rt, const float *params, const float *x, size_t T,
                MixerInspectWhat what, LayerInspection *out, Error *err);

#endif
