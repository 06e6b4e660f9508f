#include "layernorm.h"

#include <math.h>

#include "ops.h"

void layernorm_forward(float *out, float *mean, float *rstd, const float *in,
                       const float *weight, const float *bias, size_t N, size_t C) {
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        const float *x = in + n * C;
        float m = 0.0f;
        for (size_t c = 0; c < C; c++) m += x[c];
        m /= (float)C;
        float var = 0.0f;
        for (size_t c = 0; c < C; c++) var += (x[c] - m) * (x[c] - m);
        float s = 1.0f / sqrtf(var / (float)C + LAYERNORM_EPS);
        float *o = out + n * C;
        for (size_t c = 0; c < C; c++) o[c] = (x[c] - m) * s * weight[c] + bias[c];
        mean[n] = m;
        rstd[n] = s;
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
        for (size_t c = 0; c < C; c++) {
            float dxhat = dy[c] * weight[c];
            sum_d += dxhat;
            sum_dx += dxhat * (x[c] - m) * s;
        }
        sum_d /= (float)C;
        sum_dx /= (float)C;
        float *dx = din + n * C;
        for (size_t c = 0; c < C; c++) {
            float xhat = (x[c] - m) * s;
            dx[c] += s * (dy[c] * weight[c] - sum_d - xhat * sum_dx);
        }
    }
    /* dweight: blocks of columns in parallel, rows in order inside
     * (deterministic for any thread count, contiguous reads); dbias is the
     * plain column sum of dout. */
    enum { CB = 64 };
#pragma omp parallel for schedule(static)
    for (size_t c0 = 0; c0 < C; c0 += CB) {
        size_t nc = C - c0 < CB ? C - c0 : CB;
        float dw[CB] = {0};
        for (size_t n = 0; n < N; n++) {
            const float *dy = dout + n * C + c0, *x = in + n * C + c0;
            float m = mean[n], s = rstd[n];
            for (size_t c = 0; c < nc; c++) dw[c] += dy[c] * (x[c] - m) * s;
        }
        for (size_t c = 0; c < nc; c++) dweight[c0 + c] += dw[c];
    }
    column_sum_add(dbias, dout, N, C);
}
