#include "nn/layernorm.h"

#include <math.h>


/* One row: out = (x - mean) * rstd * weight + bias. The reductions are
 * `omp simd` (vectorised in a fixed order: the same on every thread). */
static void layernorm_row(float *out, float *mean, float *rstd, const float *x, const float *weight,
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

void layernorm_forward(float *out, float *mean, float *rstd, const float *in,
                       const float *weight, const float *bias, size_t N, size_t C) {
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++)
        layernorm_row(out + n * C, mean + n, rstd + n, in + n * C, weight, bias, C);
}

void residual_layernorm_forward(float *sum, float *out, float *mean, float *rstd, const float *a, const float *b,
                                const float *weight, const float *bias, size_t N, size_t C) {
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        float *s = sum + n * C;
        const float *x = a + n * C, *y = b + n * C;
#pragma omp simd
        for (size_t c = 0; c < C; c++) s[c] = x[c] + y[c];
        layernorm_row(out + n * C, mean + n, rstd + n, s, weight, bias, C);
    }
}

void layernorm_backward(float *din, float *dweight, float *dbias, const float *dout,
                        const float *in, const float *weight, const float *mean,
                        const float *rstd, size_t N, size_t C) {
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        const float *x = in + n * C, *dy = dout + n * C;
        float m = mean[n], s = rstd[n];
        /* dx = s * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) */
        float sum_d = 0.0f, sum_dx = 0.0f;
#pragma omp simd reduction(+ : sum_d, sum_dx)
        for (size_t c = 0; c < C; c++) {
            float dxhat = dy[c] * weight[c];
            sum_d += dxhat;
            sum_dx += dxhat * (x[c] - m) * s;
        }
        sum_d /= (float)C;
        sum_dx /= (float)C;
        float *dx = din + n * C;
#pragma omp simd
        for (size_t c = 0; c < C; c++) {
            float xhat = (x[c] - m) * s;
            dx[c] += s * (dy[c] * weight[c] - sum_d - xhat * sum_dx);
        }
    }
    /* dweight and dbias: blocks of columns in parallel, rows in order inside
     * (the same sums for any thread count, contiguous reads). */
    enum { CB = 64 };
#pragma omp parallel for schedule(static)
    for (size_t c0 = 0; c0 < C; c0 += CB) {
        size_t nc = C - c0 < CB ? C - c0 : CB;
        float dw[CB] = {0}, db[CB] = {0};
        for (size_t n = 0; n < N; n++) {
            const float *dy = dout + n * C + c0, *x = in + n * C + c0;
            float m = mean[n], s = rstd[n];
#pragma omp simd
            for (size_t c = 0; c < nc; c++) {
                dw[c] += dy[c] * (x[c] - m) * s;
                db[c] += dy[c];
            }
        }
        for (size_t c = 0; c < nc; c++) {
            dweight[c0 + c] += dw[c];
            dbias[c0 + c] += db[c];
        }
    }
}
