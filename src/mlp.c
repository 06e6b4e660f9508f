#include "mlp.h"

#include "ops.h"

/* The element-wise steps ride on the products' tiles (see TileEpilogue):
 * GELU on each tile of fc as it is computed, and GELU's backward on each
 * tile of dL/d(act) before it is overwritten by dL/d(fc). */
typedef struct GeluTiles {
    const float *fc; /* (N, 4C) pre-activation */
    float *out;      /* (N, 4C): act in forward, dfc in backward */
    size_t ld;       /* 4C */
} GeluTiles;

static void gelu_tile_forward(void *ctx, size_t i0, size_t j0, size_t rows, size_t cols) {
    const GeluTiles *g = ctx;
    for (size_t i = i0; i < i0 + rows; i++) {
        const float *x = g->fc + i * g->ld + j0;
        float *y = g->out + i * g->ld + j0;
#pragma omp simd
        for (size_t j = 0; j < cols; j++) y[j] = gelu(x[j]);
    }
}

static void gelu_tile_backward(void *ctx, size_t i0, size_t j0, size_t rows, size_t cols) {
    const GeluTiles *g = ctx;
    for (size_t i = i0; i < i0 + rows; i++) {
        const float *x = g->fc + i * g->ld + j0;
        float *d = g->out + i * g->ld + j0;
#pragma omp simd
        for (size_t j = 0; j < cols; j++) d[j] *= gelu_grad(x[j]);
    }
}

void mlp_forward(float *out, float *fc, float *act, const float *in, MlpParams p, size_t N, size_t C) {
    GeluTiles g = {fc, act, 4 * C};
    matmul_forward_then(fc, in, p.fc_w, p.fc_b, N, C, 4 * C, gelu_tile_forward, &g);
    matmul_forward(out, act, p.proj_w, p.proj_b, N, 4 * C, C);
}

void mlp_backward(float *din, MlpGrads g, float *dfc, const float *dout, const float *in, const float *fc,
                  const float *act, MlpParams p, size_t N, size_t C) {
    GeluTiles gt = {fc, dfc, 4 * C};
    /* dfc = (dout . proj_w) * gelu'(fc), written tile by tile */
    gemm_then(0, 0, N, 4 * C, C, 1.0f, dout, C, p.proj_w, 4 * C, 0.0f, dfc, 4 * C, gelu_tile_backward, &gt);
    matmul_backward(NULL, 0.0f, g.proj_w, g.proj_b, dout, act, p.proj_w, N, 4 * C, C);
    matmul_backward(din, 0.0f, g.fc_w, g.fc_b, dfc, in, p.fc_w, N, C, 4 * C);
}
