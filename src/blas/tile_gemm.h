/* Small matrix products on one thread, for the tiles of the attention core.
 *
 * The fp32 kernel, tile_gemm, is declared in lm/gemm.h (bin/gemm-rate --tile
 * times it); its register blocks per instruction-set level are in
 * blas/tile_gemm_kernel.h. */
#ifndef LM_TILE_GEMM_H
#define LM_TILE_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "lm/gemm.h"

/* ---- bf16 (--precision bf16) ----------------------------------------
 *
 * AVX512_BF16's vdpbf16ps multiplies PAIRS of bf16 numbers adjacent along a
 * product's inner dimension k, so the bf16 kernel reads its operands as
 * 32-bit words, each such a pair (the even k in the low half), rounded from
 * fp32 to nearest even as bf16_from_float (lm/bf16.h), an odd k's last
 * entry with a zero partner. An operand packed so once serves every product
 * that reads it: the attention core packs each head's Q, K, V and dY once
 * and its tiles' products read them, rather than rounding and packing both
 * operands at every call (which took a third of the bf16 tiles' time). */

/* An operand of tile_product, in one of two forms:
 *   fp32 (f):       A(i, p) = f[i * rs + p * cs];  B(p, j) = f[p * rs + j] (cs unused)
 *   bf16 pairs (w): A's pair (A(i, 2q), A(i, 2q+1)) at w[i * rs + q * cs];
 *                   B's pair (B(2q, j), B(2q+1, j)) at w[q * rs + j] (cs unused)
 * (exactly one of f and w set). Moving a packed operand's origin along k
 * moves it by pairs, so only by an even number of entries. */
typedef struct TileOperand {
    const float *f;
    const uint32_t *w;
    size_t rs, cs;
} TileOperand;

/* The operand from A(i, p) or B(p, j) on (p even for a packed one). */
static inline TileOperand tile_a_at(TileOperand a, size_t i, size_t p) {
    if (a.w) a.w += i * a.rs + p / 2 * a.cs;
    else a.f += i * a.rs + p * a.cs;
    return a;
}
static inline TileOperand tile_b_at(TileOperand b, size_t p, size_t j) {
    if (b.w) b.w += p / 2 * b.rs + j;
    else b.f += p * b.rs + j;
    return b;
}

/* C = alpha A B + beta C, as tile_gemm (C m x n, row stride ldc; beta 0 or
 * 1), in the precision of B:
 *   B fp32: tile_gemm's fp32 product (A must be fp32 too);
 *   B packed: bf16, on the level's kernel (blas/bf16_loops.h: vdpbf16ps
 *     where cpu_bf16(), else C, which only the tests ask for), with A packed
 *     or fp32 (then rounded and packed at this call, and to run on the
 *     kernel A needs rs == 1 or cs == 1, else a scalar loop does the same
 *     arithmetic). Each entry is within bf16_accumulation_bound of the
 *     exact product of the rounded inputs. B's
 *     pair rows are read in whole vectors of 16 words, ignoring the words
 *     past n: each row's words up to n rounded up to 16 must be readable
 *     (the packings below pad their rows so; a column offset into a packed
 *     B that is a multiple of 16 keeps it so). For an odd k, A's last pair
 *     has its zero partner and B's partner there must be finite (0 x inf
 *     would be NaN): the packings write zeros there.
 * Serial: results never depend on the threads. */
void tile_product(size_t m, size_t n, size_t k, float alpha, TileOperand a, TileOperand b, float beta, float *c,
                  size_t ldc);

/* n rounded up to a whole vector of 16 words: the row length of the packings
 * whose rows run along n. */
size_t tile_bf16_padded(size_t n);

/* Packings of X (rows x cols, row stride ldx) into dst in bf16 pairs, for
 * tile_product. On every CPU, as tile_product.
 *   rows:            pairs along each row, word (i, q) = (X(i, 2q), X(i, 2q+1))
 *                    at dst[i * ldd + q], ldd >= ceil(cols / 2) (rows x ldd words):
 *                    A = X is {.w = dst, .rs = ldd, .cs = 1}.
 *   columns:         pairs down each column, word (q, j) = (X(2q, j), X(2q+1, j))
 *                    at dst[q * ldd + j], ldd >= tile_bf16_padded(cols), zeros
 *                    past cols (ceil(rows / 2) x ldd words):
 *                    B = X is {.w = dst, .rs = ldd}; A = X^T is {.w = dst, .rs = 1, .cs = ldd}.
 *   rows_transposed: the words of `rows`, stored transposed: word (i, q) at
 *                    dst[q * ldd + i], ldd >= tile_bf16_padded(rows), zeros
 *                    past rows (ceil(cols / 2) x ldd words):
 *                    B = X^T is {.w = dst, .rs = ldd}; A = X is {.w = dst, .rs = 1, .cs = ldd}. */
void tile_pack_bf16_rows(size_t rows, size_t cols, const float *x, size_t ldx, uint32_t *dst, size_t ldd);
void tile_pack_bf16_columns(size_t rows, size_t cols, const float *x, size_t ldx, uint32_t *dst, size_t ldd);
void tile_pack_bf16_rows_transposed(size_t rows, size_t cols, const float *x, size_t ldx, uint32_t *dst, size_t ldd);

/* dst (cols x rows, row stride ldd) = src^T (src rows x cols, row stride lds). */
void tile_transpose(size_t rows, size_t cols, const float *src, size_t lds, float *dst, size_t ldd);

#endif
