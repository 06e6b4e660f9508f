#include "nn/rmsnorm.h"

#include <math.h>

/* 1 / sqrt(mean(x^2) + eps) of C values; the reduction is `omp simd`
 * (vectorised in a fixed order: the same on every thread). */
static float rms_scale(const float *x, size_t C) {
    float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
    for (size_t c = 0; c < C; c++) ss += x[c] * x[c];
    return 1.0f / sqrtf(ss / (float)C + RMSNORM_EPS);
}

static void rmsnorm_row(float *out, float *rstd, const float *x, const float *weight, size_t C) {
    float s = rms_scale(x, C);
#pragma omp simd
    for (size_t c = 0; c < C; c++) out[c] = x[c] * s * weight[c];
    *rstd = s;
}

void rmsnorm_forward(float *out, float *rstd, const float *in, const float *weight, size_t N, size_t C) {
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) rmsnorm_row(out + n * C, rstd + n, in + n * C, weight, C);
}

void residual_rmsnorm_forward(float *sum, float *out, float *rstd, const float *a, const float *b, const float *weight,
                              size_t N, size_t C) {
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        float *s = sum + n * C, ss = 0.0f;
        const float *x = a + n * C, *y = b + n * C;
        /* the sum and its squares in one pass, in rms_scale's order */
#pragma omp simd reduction(+ : ss)
        for (size_t c = 0; c < C; c++) {
            s[c] = x[c] + y[c];
            ss += s[c] * s[c];
        }
        float scale = 1.0f / sqrtf(ss / (float)C + RMSNORM_EPS), *o = out + n * C;
#pragma omp simd
        for (size_t c = 0; c < C; c++) o[c] = s[c] * scale * weight[c];
        rstd[n] = scale;
    }
}

void rmsnorm_backward(float *din, float *dweight, const float *dout, const float *in, const float *weight,
                      const float *rstd, size_t N, size_t C) {
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        const float *x = in + n * C, *dy = dout + n * C;
        float s = rstd[n], dot = 0.0f;
        /* d(xhat) = dy * weight; dx = s (dxhat - xhat mean(dxhat xhat)) */
#pragma omp simd reduction(+ : dot)
        for (size_t c = 0; c < C; c++) dot += dy[c] * weight[c] * x[c] * s;
        dot /= (float)C;
        float *dx = din + n * C;
#pragma omp simd
        for (size_t c = 0; c < C; c++) dx[c] += s * (dy[c] * weight[c] - x[c] * s * dot);
    }
    /* dweight: blocks of columns in parallel, rows in order inside (the same
     * sums for any thread count, contiguous reads). */
    enum { CB = 64 };
#pragma omp parallel for schedule(static)
    for (size_t c0 = 0; c0 < C; c0 += CB) {
        size_t nc = C - c0 < CB ? C - c0 : CB;
        float dw[CB] = {0};
        for (size_t n = 0; n < N; n++) {
            const float *dy = dout + n * C + c0, *x = in + n * C + c0;
            float s = rstd[n];
#pragma omp simd
            for (size_t c = 0; c < nc; c++) dw[c] += dy[c] * x[c] * s;
        }
        for (size_t c = 0; c < nc; c++) dweight[c0 + c] += dw[c];
    }
}

void rmsnorm_heads_forward(float *x, float *rstd, size_t N, size_t ld, size_t heads, size_t hs) {
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++)
        for (size_t h = 0; h < heads; h++) {
            float *v = x + n * ld + h * hs, s = rms_scale(v, hs);
#pragma omp simd
            for (size_t d = 0; d < hs; d++) v[d] *= s;
            if (rstd) rstd[n * heads + h] = s;
        }
}

void rmsnorm_heads_backward(float *dx, const float *y, const float *rstd, size_t N, size_t ld, size_t heads,
                            size_t hs) {
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++)
        for (size_t h = 0; h < heads; h++) {
            float *g = dx + n * ld + h * hs, s = rstd[n * heads + h], dot = 0.0f;
            const float *v = y + n * ld + h * hs;
#pragma omp simd reduction(+ : dot)
            for (size_t d = 0; d < hs; d++) dot += g[d] * v[d];
            dot /= (float)hs;
#pragma omp simd
            for (size_t d = 0; d < hs; d++) g[d] = s * (g[d] - v[d] * dot);
        }
}
