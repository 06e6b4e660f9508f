/* The element-wise hot loops (nn/vec_loops.h) as a template, compiled by the
 * Makefile once per instruction-set level with that level's flags
 * (runtime/level.h) into the table vec_loops_LEVEL. The loops are plain C
 * with `omp simd`, which the compiler vectorises at the level: 4 floats
 * (SSE2, NEON), 8 (AVX2) or 16 (AVX-512). The neon level is the portable
 * one's loops with ARM64's fused multiply-adds: the portable level is
 * compiled without contraction there (-ffp-contract=off), so that
 * LM_MAX_ISA=portable runs on ARM64 the arithmetic every other machine's
 * portable level runs. Element-wise results are the same at every level
 * with FMA (the same operations, fused alike); the reductions (LayerNorm's
 * sums) add in vector-width order, so they differ between levels in the
 * last bits, and are the same run to run. */
#include <math.h>

#include "lm/ops.h"
#include "nn/layernorm.h"
#include "nn/vec_loops.h"
#include "runtime/level.h"

static void gelu_loop(float *out, const float *in, size_t n) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) out[i] = gelu(in[i]);
}

static void gelu_grad_mul_loop(float *d, const float *x, size_t n) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) d[i] *= gelu_grad(x[i]);
}

static void gelu_grad_add_loop(float *din, const float *in, const float *dout, size_t n) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) din[i] += gelu_grad(in[i]) * dout[i];
}

static void tile_row_max_loop(float *mx, const float *row, size_t r0, size_t n) {
#pragma omp simd
    for (size_t r = r0; r < n; r++) mx[r] = row[r] > mx[r] ? row[r] : mx[r];
}

static void tile_row_exp_loop(float *row, const float *mx, float *sum, size_t r0, size_t n) {
    for (size_t r = 0; r < r0; r++) row[r] = 0.0f;
#pragma omp simd
    for (size_t r = r0; r < n; r++) {
        float p = fast_expf(row[r] - mx[r]);
        row[r] = p;
        sum[r] += p;
    }
}

static void tile_running_max_loop(float *corr, float *mx, float *sum, const float *mx_new, size_t n) {
#pragma omp simd
    for (size_t r = 0; r < n; r++) {
        corr[r] = fast_expf(mx[r] - mx_new[r]);
        sum[r] *= corr[r];
        mx[r] = mx_new[r];
    }
}

static void tile_rows_scale_loop(float *o, size_t ldo, const float *s, size_t rows, size_t n) {
    for (size_t r = 0; r < rows; r++) {
        float *row = o + r * ldo, f = s[r];
#pragma omp simd
        for (size_t d = 0; d < n; d++) row[d] *= f;
    }
}

static void softmax_grad_row_loop(float *p, float *d, float lse, float delta, size_t n) {
#pragma omp simd
    for (size_t c = 0; c < n; c++) {
        p[c] = fast_expf(p[c] - lse);
        d[c] = p[c] * (d[c] - delta);
    }
}

static void layernorm_row_loop(float *out, float *mean, float *rstd, const float *x, const float *weight,
                               const float *bias, size_t C) {
    float m = 0.0f;
#pragma omp simd reduction(+ : m)
    for (size_t c = 0; c < C; c++) m += x[c];
    m /= (float)C;
    float var = 0.0f;
#pragma omp simd reduction(+ : var)
    for (size_t c = 0; c < C; c++) var += (x[c] - m) * (x[c] - m);
    float s = 1.0f / sqrtf(var / (float)C + LAYERNORM_EPS);
#pragma omp simd
    for (size_t c = 0; c < C; c++) out[c] = (x[c] - m) * s * weight[c] + bias[c];
    *mean = m;
    *rstd = s;
}

static void layernorm_row_backward_loop(float *dx, const float *dy, const float *x, const float *weight, float m,
                                        float s, size_t C) {
    float sum_d = 0.0f, sum_dx = 0.0f;
#pragma omp simd reduction(+ : sum_d, sum_dx)
    for (size_t c = 0; c < C; c++) {
        float dxhat = dy[c] * weight[c];
        sum_d += dxhat;
        sum_dx += dxhat * (x[c] - m) * s;
    }
    sum_d /= (float)C;
    sum_dx /= (float)C;
#pragma omp simd
    for (size_t c = 0; c < C; c++) {
        float xhat = (x[c] - m) * s;
        dx[c] += s * (dy[c] * weight[c] - sum_d - xhat * sum_dx);
    }
}

static void adamw_loop(float *params, const float *grads, float *m, float *v, size_t n, const AdamWLoop *k) {
    float b1 = k->b1, b2 = k->b2, c1 = k->c1, c2 = k->c2, decay = k->decay, lr = k->lr, eps = k->eps;
    float grad_scale = k->grad_scale;
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        float g = grads[i] * grad_scale;
        m[i] = b1 * m[i] + (1.0f - b1) * g;
        v[i] = b2 * v[i] + (1.0f - b2) * g * g;
        params[i] = params[i] * decay - lr * (m[i] / c1) / (sqrtf(v[i] / c2) + eps);
    }
}

/* The loss's rows over the vocabulary (src/nn/loss.c). */
static float row_max_loop(const float *z, size_t n) {
    float maxv = z[0];
#pragma omp simd reduction(max : maxv)
    for (size_t v = 0; v < n; v++) maxv = z[v] > maxv ? z[v] : maxv;
    return maxv;
}

static double row_sum_exp_loop(const float *z, float shift, size_t n) {
    double s = 0.0;
#pragma omp simd reduction(+ : s)
    for (size_t v = 0; v < n; v++) s += (double)fast_expf(z[v] - shift);
    return s;
}

static void softmax_loop(float *out, const float *in, size_t n) {
    float maxv = row_max_loop(in, n); /* exact in any order: the same shift as a scalar loop's */
    float sum = 0.0f;
    for (size_t i = 0; i < n; i++) {
        out[i] = fast_expf(in[i] - maxv);
        sum += out[i];
    }
    float inv = 1.0f / sum;
    for (size_t i = 0; i < n; i++) out[i] *= inv;
}

static void softcap_loop(float *x, size_t n, float cap) {
    float inv = 1.0f / cap;
#pragma omp simd
    for (size_t i = 0; i < n; i++) x[i] = cap * fast_tanhf(x[i] * inv);
}

static void softcap_softmax_grad_loop(float *d, const float *y, float shift, float scale, float inv_cap, size_t n) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        float t = y[i] * inv_cap;
        d[i] = fast_expf(y[i] - shift) * scale * (1.0f - t * t);
    }
}

const VecLoops LEVEL_NAME(vec_loops) = {
    .isa = LEVEL_STRING,
    .gelu = gelu_loop,
    .gelu_grad_mul = gelu_grad_mul_loop,
    .gelu_grad_add = gelu_grad_add_loop,
    .tile_row_max = tile_row_max_loop,
    .tile_row_exp = tile_row_exp_loop,
    .tile_running_max = tile_running_max_loop,
    .tile_rows_scale = tile_rows_scale_loop,
    .softmax_grad_row = softmax_grad_row_loop,
    .layernorm_row = layernorm_row_loop,
    .layernorm_row_backward = layernorm_row_backward_loop,
    .adamw = adamw_loop,
    .row_max = row_max_loop,
    .row_sum_exp = row_sum_exp_loop,
    .softmax = softmax_loop,
    .softcap = softcap_loop,
    .softcap_softmax_grad = softcap_softmax_grad_loop,
};
