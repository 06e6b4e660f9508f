/* bf16 products for the attention tiles (see src/blas/tile_gemm.h): the
 * packings and the product of this run's level (blas/bf16_loops.h: on
 * AVX512_BF16's vdpbf16ps where the CPU has it, in C elsewhere), and
 * tile_product around them, which packs an fp32 A itself, per call (the
 * attention core's probability and score-gradient tiles, made fresh for
 * each product). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lm/bf16.h"
#include "blas/bf16_loops.h"
#include "blas/tile_gemm.h"

#define LANES 16 /* words per vector: the packings' row padding at every level */

size_t tile_bf16_padded(size_t n) { return (n + LANES - 1) / LANES * LANES; }

void tile_pack_bf16_rows(size_t rows, size_t cols, const float *x, size_t ldx, uint32_t *dst, size_t ldd) {
    bf16_loops()->pack_rows(rows, cols, x, ldx, dst, ldd);
}

void tile_pack_bf16_columns(size_t rows, size_t cols, const float *x, size_t ldx, uint32_t *dst, size_t ldd) {
    bf16_loops()->pack_columns(rows, cols, x, ldx, dst, ldd);
}

void tile_pack_bf16_rows_transposed(size_t rows, size_t cols, const float *x, size_t ldx, uint32_t *dst,
                                    size_t ldd) {
    bf16_loops()->pack_rows_transposed(rows, cols, x, ldx, dst, ldd);
}

/* Without the packing buffer (memory ran out) or for an fp32 A that has
 * neither stride 1: the same arithmetic one entry at a time (rounded inputs,
 * exact products, fp32 sums), so the same bound. */
static void product_scalar(size_t m, size_t n, size_t k, float alpha, const float *a, size_t rsa, size_t csa,
                           const uint32_t *bp, size_t ldb, float beta, float *c, size_t ldc) {
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            float sum = 0.0f;
            for (size_t p = 0; p < k; p++)
                sum += bf16_to_float(bf16_from_float(a[i * rsa + p * csa])) *
                       bf16_pair_half(bp[p / 2 * ldb + j], p & 1);
            float *cp = c + i * ldc + j;
            *cp = alpha * sum + (beta != 0.0f ? beta * *cp : 0.0f);
        }
}

/* Each thread's buffer for an fp32 A packed per call, grown as needed and
 * kept (the attention core calls this thousands of times per step at the
 * same few shapes). */
static _Thread_local uint32_t *scratch;
static _Thread_local size_t scratch_words;

static uint32_t *scratch_get(size_t words) {
    if (words <= scratch_words) return scratch;
    uint32_t *p = realloc(scratch, words * sizeof *p);
    if (!p) return NULL;
    scratch = p;
    scratch_words = words;
    return p;
}

void tile_product(size_t m, size_t n, size_t k, float alpha, TileOperand a, TileOperand b, float beta, float *c,
                  size_t ldc) {
    if (!b.w) {
        tile_gemm(m, n, k, alpha, a.f, a.rs, a.cs, b.f, b.rs, beta, c, ldc);
        return;
    }
    if (m == 0 || n == 0) return;
    size_t kp = (k + 1) / 2;
    const Bf16Loops *loops = bf16_loops();
    if (a.w) {
        loops->product(m, n, kp, alpha, a.w, a.rs, a.cs, b.w, b.rs, beta, c, ldc);
        return;
    }
    /* A = X: X's rows; A = X^T (rs == 1): X by columns */
    size_t mp = tile_bf16_padded(m);
    uint32_t *ap = a.cs == 1 ? scratch_get(m * kp) : a.rs == 1 ? scratch_get(kp * mp) : NULL;
    if (!ap) product_scalar(m, n, k, alpha, a.f, a.rs, a.cs, b.w, b.rs, beta, c, ldc);
    else if (a.cs == 1) {
        loops->pack_rows(m, k, a.f, a.rs, ap, kp);
        loops->product(m, n, kp, alpha, ap, kp, 1, b.w, b.rs, beta, c, ldc);
    } else {
        loops->pack_columns(k, m, a.f, a.cs, ap, mp);
        loops->product(m, n, kp, alpha, ap, 1, mp, b.w, b.rs, beta, c, ldc);
    }
}
