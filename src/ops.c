#include "ops.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

void gemm(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha,
          const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc) {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                (int)m, (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

void matmul_forward(float *out, const float *in, const float *w, const float *bias,
                    size_t n, size_t in_dim, size_t out_dim) {
    float beta = 0.0f;
    if (bias) {
        /* Seed every row with the bias and let sgemm add the product on top. */
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) memcpy(out + i * out_dim, bias, out_dim * sizeof(float));
        beta = 1.0f;
    }
    gemm(0, 1, n, out_dim, in_dim, 1.0f, in, in_dim, w, in_dim, beta, out, out_dim);
}

void matmul_backward(float *din, float *dw, float *dbias, const float *dout,
                     const float *in, const float *w, size_t n, size_t in_dim, size_t out_dim) {
    if (din) gemm(0, 0, n, in_dim, out_dim, 1.0f, dout, out_dim, w, in_dim, 1.0f, din, in_dim);
    if (dw) gemm(1, 0, out_dim, in_dim, n, 1.0f, dout, out_dim, in, in_dim, 1.0f, dw, in_dim);
    if (dbias) column_sum_add(dbias, dout, n, out_dim);
}

void softmax(float *out, const float *in, size_t len) {
    float maxv = -INFINITY;
    for (size_t i = 0; i < len; i++) maxv = in[i] > maxv ? in[i] : maxv;
    float sum = 0.0f;
    for (size_t i = 0; i < len; i++) {
        out[i] = fast_expf(in[i] - maxv);
        sum += out[i];
    }
    float inv = 1.0f / sum;
    for (size_t i = 0; i < len; i++) out[i] *= inv;
}

#define GELU_SCALE 0.7978845608028654f /* sqrt(2 / pi) */

void gelu_forward(float *out, const float *in, size_t n) {
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        float x = in[i];
        out[i] = 0.5f * x * (1.0f + fast_tanhf(GELU_SCALE * (x + 0.044715f * x * x * x)));
    }
}

void gelu_backward(float *din, const float *in, const float *dout, size_t n) {
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        float x = in[i];
        float u = GELU_SCALE * (x + 0.044715f * x * x * x);
        float th = fast_tanhf(u);
        float sech2 = 1.0f - th * th;
        float du = GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
        din[i] += (0.5f * (1.0f + th) + 0.5f * x * sech2 * du) * dout[i];
    }
}

void column_sum_add(float *dst, const float *src, size_t rows, size_t cols) {
    /* Blocks of columns in parallel, rows in order inside: each column's sum
     * runs over the rows in the same order for any thread count, and the
     * inner loop reads memory contiguously. */
    enum { CB = 64 };
#pragma omp parallel for schedule(static)
    for (size_t c0 = 0; c0 < cols; c0 += CB) {
        size_t nc = cols - c0 < CB ? cols - c0 : CB;
        float acc[CB] = {0};
        for (size_t r = 0; r < rows; r++) {
            const float *row = src + r * cols + c0;
            for (size_t c = 0; c < nc; c++) acc[c] += row[c];
        }
        for (size_t c = 0; c < nc; c++) dst[c0 + c] += acc[c];
    }
}

void add_forward(float *out, const float *a, const float *b, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void add_inplace(float *dst, const float *src, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) dst[i] += src[i];
}

#define SUM_CHUNK 4096

static double chunked_sum(const float *x, size_t n, int squares) {
    size_t nchunks = (n + SUM_CHUNK - 1) / SUM_CHUNK;
    double total = 0.0;
    /* Chunks in parallel, then combined strictly in order. */
    enum { MAXC = 1024 };
    double part[MAXC];
    for (size_t base = 0; base < nchunks; base += MAXC) {
        size_t cnt = nchunks - base < MAXC ? nchunks - base : MAXC;
#pragma omp parallel for schedule(static)
        for (size_t c = 0; c < cnt; c++) {
            size_t lo = (base + c) * SUM_CHUNK, hi = lo + SUM_CHUNK < n ? lo + SUM_CHUNK : n;
            double s = 0.0;
            for (size_t i = lo; i < hi; i++) s += squares ? (double)x[i] * x[i] : x[i];
            part[c] = s;
        }
        for (size_t c = 0; c < cnt; c++) total += part[c];
    }
    return total;
}

double sum_squares(const float *x, size_t n) { return chunked_sum(x, n, 1); }
double sum_floats(const float *x, size_t n) { return chunked_sum(x, n, 0); }
