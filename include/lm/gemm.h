/* Matrix products: every product of the model is one gemm call here, cut
 * into output tiles that run in parallel, each tile a single-threaded sgemm
 * of the BLAS library the build links (blas/backend.h: BLIS or OpenBLAS). The
 * tiles depend only on the product's shape and the run's parallel width
 * (lm/threads.h), never on how many threads run them, so results do not
 * change with the thread count (src/runtime/threads.c varies it during training).
 *
 * Row-major throughout; trans_a / trans_b select op(A) = A^T / op(B) = B^T.
 * The library's kernels are chosen at start-up (lm/blas_setup.h). */
#ifndef LM_GEMM_H
#define LM_GEMM_H

#include <stddef.h>

#include "lm/error.h"

/* Called on each finished output tile (rows i0.., columns j0.. of the
 * product) by the thread that computed it, while the tile is in cache: an
 * element-wise pass fused into the product (bias + GELU, GELU backward). */
typedef void (*TileEpilogue)(void *ctx, size_t i0, size_t j0, size_t rows, size_t cols);

/* Row-major C (m,n) = alpha * op(A) op(B) + beta * C with explicit leading
 * dimensions, cut into tiles run in parallel (lm/threads.h: threads_width). */
void gemm(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha,
          const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc);

/* gemm, then epilogue on each tile of C. */
void gemm_then(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
               const float *b, size_t ldb, float beta, float *c, size_t ldc, TileEpilogue epilogue, void *ctx);

/* Row blocks for a pass that runs a chain of per-row products inside one
 * parallel region (block b: rows b * rows_per .. ): as many as the parallel
 * width, fixed by it and by n alone, each at least 16 rows. */
size_t gemm_row_blocks(size_t n, size_t *rows_per);
/* The same product computed by the calling thread alone, for small products
 * inside a parallel region of our own (no tiling, no nested region). */
void gemm_serial(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha,
                 const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc);

/* Small products on one thread, for the tiles of the attention core
 * (src/blas/tile_gemm.c; the bf16 twin and packings: src/blas/tile_gemm.h).
 * A BLAS call pays for its packing and bookkeeping: BLIS 0.9 spends ~7 us
 * on a 64 x 64 x 32 product that takes ~2 us of arithmetic, and the attention
 * core of a small model makes thousands of them per step. These products are
 * at most a tile (128) on each side, so they run straight from the operands
 * (no packing), with a register block per instruction-set level (lm/cpu.h:
 * cpu_isa; src/blas/tile_gemm_kernel.h): AVX-512 6 rows x 64 columns of C,
 * AVX2 6 x 16, portable 4 x 8.
 *
 * tile_gemm: C = alpha A B + beta C, C m x n (row stride ldc), B k x n
 * (row stride ldb, rows contiguous), A m x k given by strides: A(i, p) =
 * a[i * rsa + p * csa], so A = X is (rsa, csa) = (ldx, 1) and A = X^T is
 * (1, ldx). beta is 0 (C is overwritten, never read) or 1. */
void tile_gemm(size_t m, size_t n, size_t k, float alpha, const float *a, size_t rsa, size_t csa, const float *b,
               size_t ldb, float beta, float *c, size_t ldc);

/* The grid of output tiles a product of C (m,n) with inner size k is cut
 * into: tiles of mt x nt (the last ones may be short), tiles_m down and
 * tiles_n across, fixed by the shape and the parallel width alone. The bf16
 * products (lm/bf16.h) cut theirs the same way. */
typedef struct TileGrid {
    size_t mt, nt;
    size_t tiles_m, tiles_n;
} TileGrid;
TileGrid gemm_tile_grid(size_t m, size_t n, size_t k);
/* Tile t of that grid over an m x n product: its first row and column, and
 * its size (the last row and column of tiles may be smaller). */
typedef struct TileRect {
    size_t i0, j0, rows, cols;
} TileRect;
TileRect gemm_tile_rect(TileGrid g, size_t t, size_t m, size_t n);
/* What a tile of C (rows x cols, row stride ldc) starts from before its
 * product: every row set to bias (cols floats) where there is one; and
 * where k = 0 leaves no product, C scaled by beta (beta 0: zeros, C unread). */
void gemm_tile_set_bias(float *c, size_t ldc, const float *bias, size_t rows, size_t cols);
void gemm_tile_scale(float *c, size_t ldc, float beta, size_t rows, size_t cols);

/* A tiled product's operands as each tile sees them: fp32 or bf16 elements
 * (a, b), leading dimensions in elements. */
typedef struct TileOperands {
    int trans_a, trans_b;
    size_t k, lda, ldb, ldc;
    float alpha, beta;
    const void *a, *b;
} TileOperands;
/* Where tile r's rows of op(A) and its columns of op(B) start, in elements. */
static inline size_t tile_a_offset(const TileOperands *o, TileRect r) { return o->trans_a ? r.i0 : r.i0 * o->lda; }
static inline size_t tile_b_offset(const TileOperands *o, TileRect r) { return o->trans_b ? r.j0 * o->ldb : r.j0; }
/* One tile's product: the tile of C at ct (rows r.rows, columns r.cols of
 * the product, row stride o->ldc) = alpha op(A) op(B) + beta C, by the
 * calling thread. Returns 0, or -1 with err set. */
typedef int (*TileProduct)(const TileOperands *o, TileRect r, float *ct, Error *err);
/* The tile loop every tiled product shares (fp32 here, bf16 in lm/bf16.h):
 * the tiles of gemm_tile_grid in parallel, each first set to bias_rows
 * where given (else, with k = 0, scaled by beta), then its product, then
 * the epilogue. Returns 0, or -1 with the first failing tile's err (that
 * tile's epilogue is skipped). */
int gemm_tile_loop(size_t m, size_t n, const TileOperands *o, float *c, const float *bias_rows, TileProduct product,
                   TileEpilogue epilogue, void *ctx, Error *err);

/* The general form the others call: gemm with an epilogue, and with every
 * row of each tile of C first set to bias_rows[j0 ..] (a bias, NULL for none;
 * beta must then be 1). */
void gemm_tiled(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                const float *b, size_t ldb, float beta, float *c, size_t ldc, const float *bias_rows,
                TileEpilogue epilogue, void *ctx);

#endif
