/* The tiled parallel gemm every matrix product goes through (see blas/gemm.h). */
#include "blas/gemm.h"

#include <stdlib.h>
#include <string.h>

#include "blas/backend.h"
#include "runtime/threads.h"

/* ---- matrix products ------------------------------------------------------
 *
 * Every product is cut into a grid of output tiles that depends only on its
 * shape (m, n, k) and on the run's parallel width (runtime/threads.h), and each tile is one
 * single-threaded sgemm call of the library (blas/backend.h). So every element
 * of a result is computed by the same call, in the same summation order, whether 1 thread or `width` threads share the
 * tiles: the thread count can change during a run (under load, see
 * src/runtime/threads.c) without changing a single bit of the results. One tile per
 * thread of the width costs nothing against the library's own threading (each
 * tile packs its own panels, which its threads would share; measured
 * equal at the model's shapes), while smaller tiles would (8 tiles on 2 cores:
 * 7% slower). */

static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

/* Splits the longer side of the tiles until there are `width` of them, as
 * long as a tile keeps at least 16 rows and columns and 2^17 multiply-adds
 * (a few microseconds: enough to pay for the call and its packing). */
TileGrid gemm_tile_grid(size_t m, size_t n, size_t k) {
    size_t width = threads_width();
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
    if (m == 1) { /* one row (sampling, a token at a time) */
        blas_backend_sgemv_row(trans_b, n, k, alpha, b, ldb, a, trans_a ? lda : 1, beta, c);
        return;
    }
    blas_backend_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm_tiled(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const float *a,
                       size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc,
                       const float *bias_rows, TileEpilogue epilogue, void *ctx) {
    if (m == 0 || n == 0) return;
    TileGrid g = gemm_tile_grid(m, n, k);
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t t = 0; t < g.tiles_m * g.tiles_n; t++) {
        size_t i0 = (t / g.tiles_n) * g.mt, j0 = (t % g.tiles_n) * g.nt;
        size_t rows = m - i0 < g.mt ? m - i0 : g.mt, cols = n - j0 < g.nt ? n - j0 : g.nt;
        float *ct = c + i0 * ldc + j0;
        if (bias_rows)
            for (size_t i = 0; i < rows; i++) memcpy(ct + i * ldc, bias_rows + j0, cols * sizeof(float));
        const float *at = a + (trans_a ? i0 : i0 * lda), *bt = b + (trans_b ? j0 * ldb : j0);
        if (k > 0) gemm_serial(trans_a, trans_b, rows, cols, k, alpha, at, lda, bt, ldb, beta, ct, ldc);
        else if (!bias_rows)
            for (size_t i = 0; i < rows; i++)
                for (size_t j = 0; j < cols; j++) ct[i * ldc + j] *= beta;
        if (epilogue) epilogue(ctx, i0, j0, rows, cols);
    }
}

size_t gemm_row_blocks(size_t n, size_t *rows_per) {
    size_t blocks = threads_width(), most = ceil_div(n, 16);
    if (blocks > most) blocks = most;
    if (blocks == 0) blocks = 1;
    *rows_per = ceil_div(n, blocks);
    return ceil_div(n, *rows_per);
}

void gemm(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha,
          const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc) {
    gemm_tiled(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, NULL, NULL, NULL);
}

void gemm_then(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
               const float *b, size_t ldb, float beta, float *c, size_t ldc, TileEpilogue epilogue, void *ctx) {
    gemm_tiled(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, NULL, epilogue, ctx);
}

