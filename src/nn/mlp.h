/* Feed-forward: C -> 4C, an activation, 4C -> C.
 *   in (N, C); fc_w (4C, C), fc_b (4C); proj_w (C, 4C), proj_b (C)
 *   kept for backward: fc (N, 4C) pre-activation, act (N, 4C) after the activation.
 * The activation: GELU (tanh form, GPT-2's) or ReLU^2, max(x, 0)^2 (the
 * modern recipe's: Primer, arXiv 2109.08668). */
#ifndef LM_MLP_H
#define LM_MLP_H

#include <stddef.h>

#include "lm/matmul.h"

typedef enum { MLP_GELU = 0, MLP_RELU2 = 1 } MlpAct;

typedef struct MlpParams {
    const float *fc_w, *fc_b, *proj_w, *proj_b;
    MlpAct act;
} MlpParams;

typedef struct MlpGrads {
    float *fc_w, *fc_b, *proj_w, *proj_b;
} MlpGrads;

/* bf: how the products run (NULL: fp32; lm/matmul.h). */
void mlp_forward(const MatmulBf16 *bf, float *out, float *fc, float *act, const float *in, MlpParams p, size_t N, size_t C);
/* mlp_forward for the few rows of a decode step (the sequences decoded at
 * once), on matmul_step's products: the weights read in dec's format. */
void mlp_step(const MatmulBf16 *bf, const DecodeWeights *dec, float *out, float *fc, float *act, const float *in,
              MlpParams p, size_t N, size_t C);
/* din is written, the parameter gradients accumulate; dfc (N, 4C) is scratch. */
void mlp_backward(const MatmulBf16 *bf, float *din, MlpGrads g, float *dfc, const float *dout, const float *in, const float *fc,
                  const float *act, MlpParams p, size_t N, size_t C);

#endif
