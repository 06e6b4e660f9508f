/* Gated DeltaNet (Yang, Kautz and Hatamizadeh, "Gated Delta Networks",
 * ICLR 2025; the delta rule of DeltaNet, Yang et al. 2024): a linear-time
 * recurrent mixer whose state per head is an associative memory that each
 * token first decays, then corrects towards v at k (the delta rule), one
 * implementation of the Mixer interface. Laid out as gla (mixers/gla.h) so
 * that the two compare fairly: the same projections plus a write strength.
 *   in, out (B, T, C); H heads of size hs = C / H. For each head, with
 *   q_t, k_t, v_t its hs columns of the qkv projection of x_t:
 *     k^_t    = k_t / |k_t|  (RMSNorm over the head's hs values, eps 1e-6,
 *               then over sqrt(hs)); q^_t = RMSNorm(q_t), the paper's
 *               L2-normalised q up to the factor sqrt(hs)
 *     alpha_t = sigmoid(wa_h . x_t + ba_h + offset_h)   the decay, in (0, 1)
 *     beta_t  = sigmoid(wb_h . x_t + bb_h)              the write strength, in (0, 1)
 *     S_t     = alpha_t (I - beta_t k^_t k^_t^T) S_{t-1} + beta_t k^_t v_t^T
 *                                                     (hs x hs), S_{-1} = 0
 *     o_t     = S_t^T q^_t
 *   then each head's o_t scaled to unit root mean square (no gain, so that
 *   factor is immaterial), the heads concatenated and projected:
 *   out = proj(o). With |k^| = 1, I - beta k^ k^^T has eigenvalues 1 - beta
 *   and 1: S never grows. The state a sequence carries is H hs^2 = C hs
 *   floats, gla's.
 *   offset_h is gla's, logit(1 - 2^-(3 + 5 h / (H - 1))) (mixers/head_decay.h):
 *   the heads start forgetting at rates from 1/8 to 1/256 per token. The
 *   paper writes alpha as Mamba-2's exp(-A softplus(.)); a sigmoid with
 *   these offsets is gla's decay, so the two mixers differ only by the
 *   delta rule and beta.
 *   The paper's short convolutions and SiLU on q, k and v, and its output
 *   gate, are left out for the same reason.
 *   params, in order: qkv.weight (3C, C) rows q then k then v, head h the
 *   h-th block of hs rows in each; qkv.bias (3C); decay.weight (H, C);
 *   decay.bias (H); beta.weight (H, C); beta.bias (H); proj.weight (C, C);
 *   proj.bias (C): gla's, plus beta's H (C + 1).
 * Forward steps the recurrence and keeps the state at the start of every
 * chunk of DELTANET_CHUNK positions; backward recomputes a chunk's states
 * from its start and runs the state's gradient back through it (deltanet.c
 * has the formulas). O(T hs^2) per head, forward and backward. Sampling
 * steps the recurrence. bin/eval --ablate's parts are its heads ("head0"
 * ...). */
#ifndef LM_DELTANET_H
#define LM_DELTANET_H

#include "lm/mixer.h"

/* Positions per chunk (L): forward keeps B H (T / L) states of hs^2 for
 * backward, which recomputes L + 1 states of a chunk at a time per (b, h);
 * L near sqrt(T) keeps the sum least (16 for blocks of 256). */
#define DELTANET_CHUNK 16

extern const Mixer deltanet_mixer;

/* ---- what deltanet.c shares with its inspection (deltanet_inspect.c) ---- */

/* The layer's parameters (params, in the order above) as pointers. */
typedef struct DeltaParams {
    const float *qkv_w, *qkv_b, *decay_w, *decay_b, *beta_w, *beta_b, *proj_w, *proj_b;
} DeltaParams;
/* The layer's tensors in params (or its gradients), as its layout declares them. */
DeltaParams deltanet_params(const float *params, const MixerSpec *spec);
/* alpha, beta (N, H): each head's decay and write strength at each of the
 * N rows of in (N, C). */
void deltanet_gates(float *alpha, float *beta, const DeltaParams *p, const float *in, size_t N, size_t C, size_t H);
/* One position of one head's recurrence, as the sampling step takes it:
 * q and k RMS-normalised (RMSNorm without gain: k^ = k / sqrt(hs)), S
 * (hs x hs, row i the key dimension) advanced in place, o = S^T q. v is
 * overwritten (with v - alpha S^T k^: the step keeps no scratch beyond
 * gla's). */
void deltanet_state_step(float *S, const float *q, const float *k, float *v, float alpha, float beta, float *o,
                         size_t hs);

/* The Mixer's inspect hook: its exhibits "decay" and "write_strength",
 * each head's alpha_t and beta_t along the prompt, and "state_norm", each
 * head's |S_t|_F after position t (series, a row per head); as parts, each
 * head's share of the output at T - 1 ("H<h>") and the output bias
 * ("deltanet bias"). No maps. */
int deltanet_inspect(const MixerSpec *spec, const MixerRuntime *rt, const float *params, const float *x, size_t T,
                     MixerInspectWhat what, LayerInspection *out, Error *err);

#endif
