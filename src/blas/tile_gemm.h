/* Small matrix products on one thread, for the tiles of the attention core.
 *
 * A BLAS call pays for its packing and bookkeeping: BLIS 0.9 spends ~7 us
 * on a 64 x 64 x 32 product that takes ~2 us of arithmetic, and the attention
 * core of a small model makes thousands of them per step. These products are
 * at most a tile (128) on each side, so they run straight from the operands
 * (no packing), with a register block of 4 rows x 64 columns of C.
 *
 * tile_gemm: C = alpha A B + beta C, C m x n (row stride ldc), B k x n
 * (row stride ldb, rows contiguous), A m x k given by strides: A(i, p) =
 * a[i * rsa + p * csa], so A = X is (rsa, csa) = (ldx, 1) and A = X^T is
 * (1, ldx). beta is 0 (C is overwritten, never read) or 1. */
#ifndef LM_TILE_GEMM_H
#define LM_TILE_GEMM_H

#include <stddef.h>

void tile_gemm(size_t m, size_t n, size_t k, float alpha, const float *a, size_t rsa, size_t csa, const float *b,
               size_t ldb, float beta, float *c, size_t ldc);

/* tile_gemm with bf16 arithmetic, for --precision bf16 (issue 20): A and B
 * are rounded to bf16 (round to nearest even, as bf16_from_float in
 * blas/bf16.h), their products accumulated in fp32 with AVX512_BF16's
 * vdpbf16ps (src/blas/tile_gemm_bf16.c), so each entry is within
 * bf16_accumulation_bound of the exact product of the rounded inputs. A must
 * have rsa == 1 or csa == 1 to run on the vector kernel (else a scalar loop
 * does the same arithmetic). Requires bf16_supported(). Serial, like
 * tile_gemm: results never depend on the threads. */
void tile_gemm_bf16(size_t m, size_t n, size_t k, float alpha, const float *a, size_t rsa, size_t csa,
                    const float *b, size_t ldb, float beta, float *c, size_t ldc);

/* Either of the two, for callers that pick per run. */
typedef void (*TileGemmFn)(size_t m, size_t n, size_t k, float alpha, const float *a, size_t rsa, size_t csa,
                           const float *b, size_t ldb, float beta, float *c, size_t ldc);

/* dst (cols x rows, row stride ldd) = src^T (src rows x cols, row stride lds). */
void tile_transpose(size_t rows, size_t cols, const float *src, size_t lds, float *dst, size_t ldd);

#endif
