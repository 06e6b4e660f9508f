/* The tiled parallel gemm every matrix product goes through (see lm/gemm.h). */
#include "lm/gemm.h"

#include <stdlib.h>
#include <string.h>

#include "blas/backend.h"
#include "lm/threads.h"

/* ---- matrix products ------------------------------------------------------
 *
 * Every product is cut into a grid of output tiles that depends only on its
 * shape (m, n, k) and on the run's parallel width (lm/threads.h), and each tile is one
 * single-threaded sgemm call of the library (src/blas/backend.h). So every element
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
 * (a few microseconds: enough to pay for the call and its packing). A single
 * row (decoding a token at a time) is split by columns alone: each tile a
 * matrix-vector product over its own rows of the weights, which is what
 * bounds decoding (GPT-2 small reads 500 MB of weights a token). */
TileGrid gemm_tile_grid(size_t m, size_t n, size_t k) {
    size_t width = threads_width();
    TileGrid g = {.mt = m, .nt = n, .tiles_m = 1, .tiles_n = 1};
    while (g.tiles_m * g.tiles_n < width) {
        int split_m = g.mt >= g.nt && m > 1;
        size_t mt = split_m ? ceil_div(m, g.tiles_m + 1) : g.mt, nt = split_m ? g.nt : ceil_div(n, g.tiles_n + 1);
        if ((mt < 16 && m > 1) || nt < 16 || mt * nt * k < ((size_t)1 << 17)) break;
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

TileRect gemm_tile_rect(TileGrid g, size_t t, size_t m, size_t n) {
    TileRect r = {(t / g.tiles_n) * g.mt, (t % g.tiles_n) * g.nt, 0, 0};
    r.rows = m - r.i0 < g.mt ? m - r.i0 : g.mt;
    r.cols = n - r.j0 < g.nt ? n - r.j0 : g.nt;
    return r;
}

void gemm_tile_set_bias(float *c, size_t ldc, const float *bias, size_t rows, size_t cols) {
    for (size_t i = 0; i < rows; i++) memcpy(c + i * ldc, bias, cols * sizeof(float));
}

void gemm_tile_scale(float *c, size_t ldc, float beta, size_t rows, size_t cols) {
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) c[i * ldc + j] = beta == 0.0f ? 0.0f : c[i * ldc + j] * beta;
}

int gemm_tile_loop(size_t m, size_t n, const TileOperands *o, float *c, const float *bias_rows, TileProduct product,
                   TileEpilogue epilogue, void *ctx, Error *err) {
    if (m == 0 || n == 0) return 0;
    size_t k = o->k, ldc = o->ldc;
    TileGrid g = gemm_tile_grid(m, n, k);
    int failed = 0;
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t t = 0; t < g.tiles_m * g.tiles_n; t++) {
        TileRect r = gemm_tile_rect(g, t, m, n);
        float *ct = c + r.i0 * ldc + r.j0;
        if (bias_rows) gemm_tile_set_bias(ct, ldc, bias_rows + r.j0, r.rows, r.cols);
        if (k > 0) {
            Error tile_err;
            if (product(o, r, ct, &tile_err)) {
#pragma omp critical(gemm_tile_error)
                if (!failed++ && err) *err = tile_err;
                continue;
            }
        } else if (!bias_rows)
            gemm_tile_scale(ct, ldc, o->beta, r.rows, r.cols);
        if (epilogue) epilogue(ctx, r.i0, r.j0, r.rows, r.cols);
    }
    return failed ? -1 : 0;
}

static int fp32_tile(const TileOperands *o, TileRect r, float *ct, Error *err) {
    (void)err;
    const float *at = (const float *)o->a + tile_a_offset(o, r), *bt = (const float *)o->b + tile_b_offset(o, r);
    gemm_serial(o->trans_a, o->trans_b, r.rows, r.cols, o->k, o->alpha, at, o->lda, bt, o->ldb, o->beta, ct, o->ldc);
    return 0;
}

void gemm_tiled(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const float *a,
                       size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc,
                       const float *bias_rows, TileEpilogue epilogue, void *ctx) {
    TileOperands o = {trans_a, trans_b, k, lda, ldb, ldc, alpha, beta, a, b};
    gemm_tile_loop(m, n, &o, c, bias_rows, fp32_tile, epilogue, ctx, NULL);
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

