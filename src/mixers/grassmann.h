/* Causal Grassmann mixing (arXiv 2512.19428), one implementation of the
 * Mixer interface. x (B, T, C) is the LN1-normalised stream; r the reduced
 * rank; D the window offsets; P = r(r-1)/2; eps = 1e-8.
 *   z_t = W_red x_t + b_red                                   (C -> r)
 *   p_t^d[ij] = z_t[i] z_{t-d}[j] - z_t[j] z_{t-d}[i], i < j, for d in D, d <= t
 *   q_t^d = p_t^d / max(|p_t^d|, eps), or 0 (no gradient) where z_t, z_{t-d} are parallel
 *   g_t = W_plu mean_d(q_t^d) + b_plu, or 0 when no offset fits  (P -> C)
 *   a_t = sigmoid(W_gate [x_t ; g_t] + b_gate)                (2C -> C)
 *   out_t = LayerNorm(a_t * x_t + (1 - a_t) * g_t)
 * params, in order: red.weight (r, C), red.bias (r), plu.weight (C, P),
 * plu.bias (C), gate.weight (C, 2C), gate.bias (C), ln.weight (C), ln.bias (C).
 * Time and memory per token: O(|D| r^2 + C P + C^2), independent of T.
 *
 * The controls (GrassmannPair, --grassmann-pair) put other maps of the same
 * pairs in place of the normalised wedge, F features instead of P:
 *   outer: z_t z_{t-d}^T / max(|z_t| |z_{t-d}|, eps)   F = r^2 (the wedge and its symmetric part)
 *   sum:   z_t + z_{t-d}                              F = r   (no product: a gated causal convolution)
 * and plu.weight is (C, F). */
#ifndef LM_GRASSMANN_H
#define LM_GRASSMANN_H

#include <stddef.h>
#include <stdint.h>

#include "lm/mixer.h"

#define GRASSMANN_EPS 1e-8f
/* A pair (a, b) with |a ^ b| <= GRASSMANN_PARALLEL |a| |b| (the sine of their
 * angle; below float's resolution of the z that produced them) is parallel:
 * no direction, so it adds nothing to the mean (it still counts) and passes
 * no gradient. */
#define GRASSMANN_PARALLEL 1e-5
#define GRASSMANN_MAX_RANK 1024
#define GRASSMANN_MAX_WINDOWS 32

extern const Mixer grassmann_mixer;

/* The map of each pair (z_t, z_{t-d}), and its number of features. */
typedef enum { GRASSMANN_PAIR_WEDGE, GRASSMANN_PAIR_OUTER, GRASSMANN_PAIR_SUM, GRASSMANN_PAIR_COUNT } GrassmannPair;

static inline size_t grassmann_n_features(GrassmannPair pair, size_t r) {
    return pair == GRASSMANN_PAIR_OUTER ? r * r : pair == GRASSMANN_PAIR_SUM ? r : r * (r - 1) / 2;
}

/* The mixer's settings (its block of the config: bin/train's
 * --grassmann-rank and --grassmann-windows, the config JSON's
 * "grassmann_rank" and "grassmann_windows"). The window offsets are every
 * offset any layer uses, in order of first use; layer_windows[l] selects
 * layer l's (bit k: windows[k]), 0 meaning all of them, so one list for
 * every layer is all zeros (grassmann_layer_windows gives a layer its own). */
typedef struct GrassmannSettings {
    size_t rank; /* r */
    GrassmannPair pair;
    size_t n_windows;
    size_t windows[GRASSMANN_MAX_WINDOWS];
    uint32_t layer_windows[MIXER_MAX_LAYERS];
} GrassmannSettings;

/* A layer's own settings (MixerSpec.own): r and its window offsets. */
typedef struct GrassmannLayer {
    size_t rank;
    GrassmannPair pair;
    size_t n_windows;
    size_t windows[GRASSMANN_MAX_WINDOWS];
} GrassmannLayer;

static inline const GrassmannLayer *grassmann_layer(const MixerSpec *spec) {
    return (const GrassmannLayer *)(const void *)spec->own.bytes;
}

/* Parses "1,2,4" (one list for every layer) or a schedule with one list per
 * layer separated by ';' ("1;1;2;2" or "1,2;4,8") into g's windows; a
 * schedule needs one list for each of n_layer layers. */
int grassmann_set_windows(GrassmannSettings *g, size_t n_layer, const char *spec, Error *err);
/* The windows as grassmann_set_windows takes them ("1,2,4" or "1;1;2;2"), in buf. */
const char *grassmann_window_list(const GrassmannSettings *g, size_t n_layer, char *buf, size_t len);

/* The mixer's options and what a layer's spec and the start-up line take of
 * them (mixers/grassmann_settings.c; the Mixer itself is grassmann.c's). */
#define GRASSMANN_N_OPTIONS 3
extern const OptionRow grassmann_options[GRASSMANN_N_OPTIONS];
void grassmann_layer_spec(const void *settings, size_t l, MixerSpec *spec);
void grassmann_describe(const void *settings, size_t n_layer, char *buf, size_t len);
/* Layer l's own window offsets into out (room for GRASSMANN_MAX_WINDOWS); returns how many. */
size_t grassmann_layer_windows(const GrassmannSettings *g, size_t l, size_t *out);

/* The layer's parameters (params, in the order above) as pointers, from
 * its layout's one declaration (grassmann.c's grassmann_tensors). */
typedef struct GrParams {
    const float *red_w, *red_b, *plu_w, *plu_b, *gate_w, *gate_b, *ln_w, *ln_b;
} GrParams;

GrParams gr_params(const float *params, const MixerSpec *spec);

/* The parts, exposed so tests (and inspection) can use each one alone. */

/* p (P) = the Plücker coordinates of (a, b): p_ij = a_i b_j - a_j b_i, i < j,
 * packed row by row (ij = 01, 02, ..., 12, ...). */
void grassmann_wedge(float *p, const float *a, const float *b, size_t r);
/* qbar (P) += scale * (zc ^ zp) / max(|zc ^ zp|, eps): one pair, normalised. */
void grassmann_pair_forward(float *qbar, const float *zc, const float *zp, float scale,
                            float eps, size_t r);

/* qbar (B,T,F) = mean over valid offsets of the pair map (the normalised
 * coordinates for the wedge) of (z_t, z_{t-d}) for z (B,T,r); zero rows
 * where no offset fits. Offsets k with bit k of muted set add nothing but
 * still count in the mean (MixerSpec.muted). */
void grassmann_mix_forward(GrassmannPair pair, float *qbar, const float *z, const size_t *windows, size_t n_windows, uint32_t muted,
                           size_t B, size_t T, size_t r, float eps);
/* Backward: dz (B,T,r) is written. Scratch: u (B,T,r) and coef,
 * B*T*(3*n_windows + 1) floats. */
void grassmann_mix_backward(GrassmannPair pair, float *dz, float *u, float *coef, const float *dqbar, const float *z,
                            const size_t *windows, size_t n_windows, size_t B, size_t T, size_t r, float eps);

/* m = a * x + (1 - a) * g with a = sigmoid(apre), all (N, C); a overwrites apre.
 * Backward: dx, dg and dapre are written. */
void grassmann_gate_forward(float *m, float *a, const float *x, const float *g, size_t n);
void grassmann_gate_backward(float *dx, float *dg, float *dapre, const float *dm, const float *a,
                             const float *x, const float *g, size_t n);

/* ---- inspection (src/mixers/grassmann_inspect.c) ---- */

/* The Mixer's inspect hook: the gate along the prompt, each offset's
 * contribution to g and the largest Plücker-relation residual; no parts of
 * the output apart from the whole ("grassmann"). Nothing with
 * MIXER_INSPECT_MAPS: the layer has no maps. */
int grassmann_inspect(const MixerSpec *spec, const MixerRuntime *rt, const float *params, const float *x, size_t T,
                      MixerInspectWhat what, LayerInspection *out, Error *err);
/* Largest Plücker-relation residual of p (r(r-1)/2 coordinates), relative to |p|^2 (0 for p = 0). */
double plucker_residual(const float *p, size_t r);

#endif
