/* The element-wise kernels (see lm/ops.h). */
#include "lm/ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/vec_loops.h"

void softmax(float *out, const float *in, size_t len) { vec_loops()->softmax(out, in, len); }

void gelu_forward(float *out, const float *in, size_t n) {
    const VecLoops *loops = vec_loops();
#pragma omp parallel for schedule(static)
    for (size_t lo = 0; lo < n; lo += VEC_CHUNK) loops->gelu(out + lo, in + lo, vec_chunk_end(lo, n) - lo);
}

void gelu_backward(float *din, const float *in, const float *dout, size_t n) {
    const VecLoops *loops = vec_loops();
#pragma omp parallel for schedule(static)
    for (size_t lo = 0; lo < n; lo += VEC_CHUNK)
        loops->gelu_grad_add(din + lo, in + lo, dout + lo, vec_chunk_end(lo, n) - lo);
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
            if (squares) {
#pragma omp simd reduction(+ : s)
                for (size_t i = lo; i < hi; i++) s += (double)x[i] * x[i];
            } else {
#pragma omp simd reduction(+ : s)
                for (size_t i = lo; i < hi; i++) s += x[i];
            }
            part[c] = s;
        }
        for (size_t c = 0; c < cnt; c++) total += part[c];
    }
    return total;
}

double sum_squares(const float *x, size_t n) { return chunked_sum(x, n, 1); }
double sum_floats(const float *x, size_t n) { return chunked_sum(x, n, 0); }
