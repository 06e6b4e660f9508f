/* Feed-forward: C -> 4C, GELU (tanh form), 4C -> C.
 *   in (N, C); fc_w (4C, C), fc_b (4C); proj_w (C, 4C), proj_b (C)
 *   kept for backward: fc (N, 4C) pre-activation, act (N, 4C) after GELU. */
#ifndef LM_MLP_H
#define LM_MLP_H

#include <stddef.h>

#include "lm/matmul.h"

typedef struct MlpParams {
    const float *fc_w, *fc_b, *proj_w, *proj_b;
} MlpParams;

typedef struct MlpGrads {
    float *fc_w, *fc_b, *proj_w, *proj_b;
} MlpGrads;

/* bf: how the products run (NULL: fp32; lm/matmul.h). */
void mlp_forward(const MatmulBf16 *bf, float *out, float *fc, float *act, const float *in, MlpParams p, size_t N, size_t C);
/* din is written, the parameter gradients accumulate; dfc (N, 4C) is scratch. */
void mlp_backward(const MatmulBf16 *bf, float *din, MlpGrads g, float *dfc, const float *dout, const float *in, const float *fc,
                  const float *act, MlpParams p, size_t N, size_t C);

#endif
