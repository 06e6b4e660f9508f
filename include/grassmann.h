/* Causal Grassmann mixing (arXiv 2512.19428), one implementation of the
 * Mixer interface. x (B, T, C) is the LN1-normalised stream; r the reduced
 * rank; D the window offsets; P = r(r-1)/2; eps = 1e-8.
 *   z_t = W_red x_t + b_red                                   (C -> r)
 *   p_t^d[ij] = z_t[i] z_{t-d}[j] - z_t[j] z_{t-d}[i], i < j, for d in D, d <= t
 *   q_t^d = p_t^d / max(|p_t^d|, eps)
 *   g_t = W_plu mean_d(q_t^d) + b_plu, or 0 when no offset fits  (P -> C)
 *   a_t = sigmoid(W_gate [x_t ; g_t] + b_gate)                (2C -> C)
 *   out_t = LayerNorm(a_t * x_t + (1 - a_t) * g_t)
 * params, in order: red.weight (r, C), red.bias (r), plu.weight (C, P),
 * plu.bias (C), gate.weight (C, 2C), gate.bias (C), ln.weight (C), ln.bias (C).
 * Time and memory per token: O(|D| r^2 + C P + C^2), independent of T. */
#ifndef LM_GRASSMANN_H
#define LM_GRASSMANN_H

#include <stddef.h>

#include "mixer.h"

#define GRASSMANN_EPS 1e-8f

extern const Mixer grassmann_mixer;

/* The parts, exposed so tests can check each one alone. */

/* qbar (P) += scale * normalised Plücker coordinates of (zc, zp). */
void grassmann_pair_forward(float *qbar, const float *zc, const float *zp, float scale,
                            float eps, size_t r);
/* Backward of the above given dqbar: dzc and dzp (either may be NULL) accumulate. */
void grassmann_pair_backward(float *dzc, float *dzp, const float *zc, const float *zp,
                             const float *dqbar, float scale, float eps, size_t r);

/* qbar (B,T,P) = mean over valid offsets of the normalised coordinates of z (B,T,r);
 * zero rows where no offset fits. Backward: dz (B,T,r) accumulates. */
void grassmann_mean_forward(float *qbar, const float *z, const size_t *windows, size_t n_windows,
                            size_t B, size_t T, size_t r, float eps);
/* coef: scratch of B*T*n_windows*2 floats. */
void grassmann_mean_backward(float *dz, float *coef, const float *dqbar, const float *z, const size_t *windows,
                             size_t n_windows, size_t B, size_t T, size_t r, float eps);

/* m = a * x + (1 - a) * g with a = sigmoid(apre), all (N, C); a overwrites apre.
 * Backward: dx and dg accumulate, dapre is written. */
void grassmann_gate_forward(float *m, float *a, const float *x, const float *g, size_t n);
void grassmann_gate_backward(float *dx, float *dg, float *dapre, const float *dm, const float *a,
                             const float *x, const float *g, size_t n);

#endif
