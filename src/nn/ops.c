#include "nn/ops.h"

#include "blas/blas_setup.h"

#include <blis.h>
#include <math.h>
#include <omp.h>
#include <string.h>

/* ---- matrix products ------------------------------------------------------
 *
 * Every product is cut into a grid of output tiles that depends only on its
 * shape (m, n, k) and on the run's parallel width (below), and each tile is one
 * sgemm call made from inside our own parallel region, where BLIS runs
 * single-threaded. So every element of a result is computed by the same call,
 * in the same summation order, whether 1 thread or `width` threads share the
 * tiles: the thread count can change during a run (under load, see
 * src/runtime/threads.c) without changing a single bit of the results. One tile per
 * thread of the width costs nothing against the library's own threading (each
 * tile packs its own panels, which its threads would share; measured
 * equal at the model's shapes), while smaller tiles would (8 tiles on 2 cores:
 * 7% slower). */

static size_t parallel_width = 0; /* 0: the current OpenMP thread count */

void ops_set_parallel_width(size_t width) { parallel_width = width; }

size_t ops_parallel_width(void) { return parallel_width ? parallel_width : (size_t)omp_get_max_threads(); }

typedef struct TileGrid {
    size_t mt, nt;           /* tile rows and columns (the last ones may be short) */
    size_t tiles_m, tiles_n; /* tiles down and across */
} TileGrid;

static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

/* Splits the longer side of the tiles until there are `width` of them, as
 * long as a tile keeps at least 16 rows and columns and 2^17 multiply-adds
 * (a few microseconds: enough to pay for the call and its packing). */
static TileGrid tile_grid(size_t m, size_t n, size_t k) {
    size_t width = ops_parallel_width();
    TileGrid g = {.mt = m, .nt = n, .tiles_m = 1, .tiles_n = 1};
    while (g.tiles_m * g.tiles_n < width) {
        int split_m = g.mt >= g.nt;
        size_t mt = split_m ? ceil_div(m, g.tiles_m + 1) : g.mt, nt = split_m ? g.nt : ceil_div(n, g.tiles_n + 1);
        if (mt < 16 || nt < 16 || mt * nt * k < ((size_t)1 << 17)) break;
        if (split_m) g.tiles_m++;
        else g.tiles_n++;
        g.mt = mt;
        g.nt = nt;
    }
    return g;
}

void gemm_serial(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const float *a,
                       size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc) {
    blas_library_init();
    /* One thread per call whatever BLIS_NUM_THREADS or OMP_NUM_THREADS say:
     * the parallelism is ours (the tiles above). Row-major: a row stride of
     * ld and a column stride of 1, for the matrix as stored. */
    rntm_t one_thread = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(1, &one_thread);
    if (m == 1) {
        /* One row (sampling, a token at a time): as a matrix-vector product,
         * c^T = alpha op(B)^T a^T + beta c^T. sgemm would pack all of B into
         * its panels for every token; gemv reads it once, in place. */
        inc_t rs_bt = trans_b ? (inc_t)ldb : 1, cs_bt = trans_b ? 1 : (inc_t)ldb;
        bli_sgemv_ex(BLIS_NO_TRANSPOSE, BLIS_NO_CONJUGATE, (dim_t)n, (dim_t)k, &alpha, (float *)b, rs_bt, cs_bt,
                     (float *)a, trans_a ? (inc_t)lda : 1, &beta, c, 1, NULL, &one_thread);
        return;
    }
    bli_sgemm_ex(trans_a ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, trans_b ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, (dim_t)m,
                 (dim_t)n, (dim_t)k, &alpha, (float *)a, (inc_t)lda, 1, (float *)b, (inc_t)ldb, 1, &beta, c, (inc_t)ldc,
                 1, NULL, &one_thread);
}

/* The tiled product; `seed_rows`, when given, is copied into every row of a
 * tile before it is accumulated onto (a bias; beta must then be 1). */
static void gemm_tiled(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const float *a,
                       size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc,
                       const float *seed_rows, TileEpilogue epilogue, void *ctx) {
    if (m == 0 || n == 0) return;
    TileGrid g = tile_grid(m, n, k);
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t t = 0; t < g.tiles_m * g.tiles_n; t++) {
        size_t i0 = (t / g.tiles_n) * g.mt, j0 = (t % g.tiles_n) * g.nt;
        size_t rows = m - i0 < g.mt ? m - i0 : g.mt, cols = n - j0 < g.nt ? n - j0 : g.nt;
        float *ct = c + i0 * ldc + j0;
        if (seed_rows)
            for (size_t i = 0; i < rows; i++) memcpy(ct + i * ldc, seed_rows + j0, cols * sizeof(float));
        const float *at = a + (trans_a ? i0 : i0 * lda), *bt = b + (trans_b ? j0 * ldb : j0);
        if (k > 0) gemm_serial(trans_a, trans_b, rows, cols, k, alpha, at, lda, bt, ldb, beta, ct, ldc);
        else if (!seed_rows)
            for (size_t i = 0; i < rows; i++)
                for (size_t j = 0; j < cols; j++) ct[i * ldc + j] *= beta;
        if (epilogue) epilogue(ctx, i0, j0, rows, cols);
    }
}

size_t ops_row_blocks(size_t n, size_t *rows_per) {
    size_t blocks = ops_parallel_width(), most = ceil_div(n, 16);
    if (blocks > most) blocks = most;
    if (blocks == 0) blocks = 1;
    *rows_per = ceil_div(n, blocks);
    return ceil_div(n, *rows_per);
}

void matmul_rows(float *out, const float *in, const float *w, const float *bias, size_t rows, size_t in_dim,
                 size_t out_dim) {
    if (bias)
        for (size_t i = 0; i < rows; i++) memcpy(out + i * out_dim, bias, out_dim * sizeof(float));
    gemm_serial(0, 1, rows, out_dim, in_dim, 1.0f, in, in_dim, w, in_dim, bias ? 1.0f : 0.0f, out, out_dim);
}

void gemm(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha,
          const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc) {
    gemm_tiled(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, NULL, NULL, NULL);
}

void gemm_then(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
               const float *b, size_t ldb, float beta, float *c, size_t ldc, TileEpilogue epilogue, void *ctx) {
    gemm_tiled(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, NULL, epilogue, ctx);
}

void matmul_forward_strided(float *out, const float *in, const float *w, size_t ldw, const float *bias,
                            size_t n, size_t in_dim, size_t out_dim) {
    gemm_tiled(0, 1, n, out_dim, in_dim, 1.0f, in, in_dim, w, ldw, bias ? 1.0f : 0.0f, out, out_dim, bias, NULL,
               NULL);
}

void matmul_forward(float *out, const float *in, const float *w, const float *bias,
                    size_t n, size_t in_dim, size_t out_dim) {
    matmul_forward_strided(out, in, w, in_dim, bias, n, in_dim, out_dim);
}

void matmul_forward_then(float *out, const float *in, const float *w, const float *bias, size_t n, size_t in_dim,
                         size_t out_dim, TileEpilogue epilogue, void *ctx) {
    gemm_tiled(0, 1, n, out_dim, in_dim, 1.0f, in, in_dim, w, in_dim, bias ? 1.0f : 0.0f, out, out_dim, bias,
               epilogue, ctx);
}

void matmul_backward(float *din, float din_beta, float *dw, float *dbias, const float *dout,
                     const float *in, const float *w, size_t n, size_t in_dim, size_t out_dim) {
    if (din) gemm(0, 0, n, in_dim, out_dim, 1.0f, dout, out_dim, w, in_dim, din_beta, din, in_dim);
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

void gelu_forward(float *out, const float *in, size_t n) {
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = gelu(in[i]);
}

void gelu_backward(float *din, const float *in, const float *dout, size_t n) {
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) din[i] += gelu_grad(in[i]) * dout[i];
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
