#include "nn/mlp.h"

#include "lm/matmul.h"
#include "lm/ops.h"
#include "nn/vec_loops.h"

/* Both passes run in row blocks, one parallel region each way: a block's
 * rows go through fc, the activation and proj (forward), or proj^T, its derivative and fc^T
 * (backward), by one thread, while they are in its cache, with no barrier in
 * between. Only the weight gradients, which sum over all rows, are separate
 * products. */

/* a = the MLP's activation of f, n entries. */
static void activation(const VecLoops *loops, MlpAct act, float *a, const float *f, size_t n) {
    if (act == MLP_RELU2) { /* ReLU² is one compare and a product: plain C the compiler vectorises */
#pragma omp simd
        for (size_t i = 0; i < n; i++) a[i] = f[i] > 0.0f ? f[i] * f[i] : 0.0f;
    } else {
        loops->gelu(a, f, n);
    }
}

void mlp_forward(const MatmulBf16 *bf, float *out, float *fc, float *act, const float *in, MlpParams p, size_t N,
                 size_t C) {
    size_t rows_per, blocks = gemm_row_blocks(N, &rows_per), H = 4 * C;
    const VecLoops *loops = vec_loops();
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t b = 0; b < blocks; b++) {
        size_t r0 = b * rows_per, rows = N - r0 < rows_per ? N - r0 : rows_per;
        float *f = fc + r0 * H, *a = act + r0 * H;
        /* with bf16 each block rounds its rows into its share of the scratch slots */
        matmul_rows(bf, 0, r0 * C, f, in + r0 * C, p.fc_w, p.fc_b, rows, C, H);
        activation(loops, p.act, a, f, rows * H);
        matmul_rows(bf, 1, r0 * H, out + r0 * C, a, p.proj_w, p.proj_b, rows, H, C);
    }
}

void mlp_step(const MatmulBf16 *bf, const DecodeWeights *dec, float *out, float *fc, float *act, const float *in,
              MlpParams p, size_t N, size_t C) {
    size_t H = 4 * C;
    matmul_step(bf, dec, fc, in, p.fc_w, C, p.fc_b, N, C, H, 0);
    activation(vec_loops(), p.act, act, fc, N * H);
    matmul_step(bf, dec, out, act, p.proj_w, H, p.proj_b, N, H, C, 0);
}

void mlp_backward(const MatmulBf16 *bf, float *din, MlpGrads g, float *dfc, const float *dout, const float *in, const float *fc,
                  const float *act, MlpParams p, size_t N, size_t C) {
    size_t rows_per, blocks = gemm_row_blocks(N, &rows_per), H = 4 * C;
    const VecLoops *loops = vec_loops();
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t b = 0; b < blocks; b++) {
        size_t r0 = b * rows_per, rows = N - r0 < rows_per ? N - r0 : rows_per;
        float *d = dfc + r0 * H;
        const float *f = fc + r0 * H;
        matmul_rows_backward(bf, 0, r0 * C, d, dout + r0 * C, p.proj_w, rows, H, C); /* dL/d(act) */
        if (p.act == MLP_RELU2) { /* dL/d(fc) */
#pragma omp simd
            for (size_t i = 0; i < rows * H; i++) d[i] *= f[i] > 0.0f ? 2.0f * f[i] : 0.0f;
        } else {
            loops->gelu_grad_mul(d, f, rows * H); /* dL/d(fc) */
        }
        matmul_rows_backward(bf, 1, r0 * H, din + r0 * C, d, p.fc_w, rows, C, H);
    }
    matmul_backward(bf, NULL, 0.0f, g.proj_w, g.proj_b, dout, act, p.proj_w, N, H, C);
    matmul_backward(bf, NULL, 0.0f, g.fc_w, g.fc_b, dfc, in, p.fc_w, N, C, H);
}
