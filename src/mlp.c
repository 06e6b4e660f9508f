#include "mlp.h"

#include <string.h>

#include "ops.h"

void mlp_forward(float *out, float *fc, float *act, const float *in, MlpParams p, size_t N, size_t C) {
    matmul_forward(fc, in, p.fc_w, p.fc_b, N, C, 4 * C);
    gelu_forward(act, fc, N * 4 * C);
    matmul_forward(out, act, p.proj_w, p.proj_b, N, 4 * C, C);
}

void mlp_backward(float *din, MlpGrads g, float *dact, float *dfc, const float *dout,
                  const float *in, const float *fc, const float *act, MlpParams p, size_t N, size_t C) {
    memset(dact, 0, N * 4 * C * sizeof(float));
    memset(dfc, 0, N * 4 * C * sizeof(float));
    matmul_backward(dact, g.proj_w, g.proj_b, dout, act, p.proj_w, N, 4 * C, C);
    gelu_backward(dfc, fc, dact, N * 4 * C);
    matmul_backward(din, g.fc_w, g.fc_b, dfc, in, p.fc_w, N, C, 4 * C);
}
