#include "nn/layernorm.h"

#include "nn/vec_loops.h"

/* The rows run through the level's loops (nn/vec_loops.h): their
 * reductions are `omp simd`, vectorised in a fixed order, the same on every
 * thread. */

void layernorm_forward(float *out, float *mean, float *rstd, const float *in,
                       const float *weight, const float *bias, size_t N, size_t C) {
    const VecLoops *loops = vec_loops();
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++)
        loops->layernorm_row(out + n * C, mean + n, rstd + n, in + n * C, weight, bias, C);
}

void residual_layernorm_forward(float *sum, float *out, float *mean, float *rstd, const float *a, const float *b,
                                const float *weight, const float *bias, size_t N, size_t C) {
    const VecLoops *loops = vec_loops();
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        float *s = sum + n * C;
        const float *x = a + n * C, *y = b + n * C;
#pragma omp simd
        for (size_t c = 0; c < C; c++) s[c] = x[c] + y[c];
        loops->layernorm_row(out + n * C, mean + n, rstd + n, s, weight, bias, C);
    }
}

void layernorm_backward(float *din, float *dweight, float *dbias, const float *dout,
                        const float *in, const float *weight, const float *mean,
                        const float *rstd, size_t N, size_t C) {
    const VecLoops *loops = vec_loops();
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) /* dx = s * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) */
        loops->layernorm_row_backward(din + n * C, dout + n * C, in + n * C, weight, mean[n], rstd[n], C);
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
