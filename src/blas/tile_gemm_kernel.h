/* The attention tiles' fp32 kernel (lm: blas/tile_gemm.h's tile_gemm) and
 * the transposition, as a template, compiled by the Makefile once per
 * instruction-set level with that level's flags (runtime/level.h) into
 * tile_gemm_LEVEL and tile_transpose_LEVEL. Per level (below):
 *   LANES          floats per vector: 4 (SSE, NEON), 8 (AVX2), 16 (AVX-512);
 *   MAX_ROWS, MAX_VECS  the register block: MAX_ROWS rows x MAX_VECS vectors of C;
 *   TILE_TRANSPOSE the level's tile_transpose (the end of this file), where it has
 *                  its own (avx512 runs avx2's).
 * The block is chosen so that its accumulators, a row of B and a broadcast
 * entry of A fit the level's vector registers with none left over for
 * spills: AVX2's 16 ymm hold 6 x 2 accumulators, 2 of B and a broadcast
 * (15); AVX-512's 32 zmm 6 x 4, 4 and one (29); NEON's 32 v 5 x 4, 4 and
 * one register per row of A (29).
 * Every entry of C is the same sequence of multiply-adds along k at every
 * level and block (p = 0, 1, ..., k-1 into one accumulator; fused where the
 * level has FMA), so levels with FMA agree bit for bit and the portable one
 * differs by its separate roundings only. */
#include <stddef.h>
#include <string.h>

#include "runtime/level.h"

#if LEVEL_IS(avx512)
/* AVX-512F: vectors of 16 floats, a register block of 6 rows x 4 vectors
 * (64 columns), 24 accumulators, 4 of B and a broadcast: 29 of the 32 zmm
 * registers (6 x 4 ran 10-30% faster on Zen 4 than 4 x 4 or 8 x 2 at
 * 64-128 wide tiles). Its transposition is AVX2's (tile_gemm.c): the same
 * 8-float shuffles, tested on any AVX2 CPU. */
#define LANES 16
#define MAX_ROWS 6
#define MAX_VECS 4
#elif LEVEL_IS(avx2)
/* AVX2 and FMA (x86-64-v3; compiled without AVX-512 on any build
 * machine): vectors of 8 floats, a register block of 6 rows x 2 vectors
 * (16 columns), 12 accumulators, 2 vectors of B and a broadcast: 15 of the
 * 16 ymm registers, no spills in the loop over k (objdump: no stores to the
 * stack between the loop's label and its branch). */
#define LANES 8
#define MAX_ROWS 6
#define MAX_VECS 2
#elif LEVEL_IS(neon)
/* ARM64 Advanced SIMD (NEON), which every ARM64 CPU has: vectors of 4
 * floats and fused multiply-adds, a register block of 5 rows x 4 vectors
 * (16 columns). GCC loads each row's entry of A into a register of its own
 * and multiplies by its lane (fmla by element), so a step holds 20
 * accumulators, 4 vectors of B and 5 of A: 29 of the 32 v registers, no
 * spills in the loop over k (aarch64-linux-gnu-objdump: 4 + 5 loads, 20
 * fmla, no stack access between the loop's label and its branch).
 * AVX-512's 6 x 4 needs 34 and spilled two accumulators there. Fused like
 * avx2 and avx512, and in the same order along k, so its tiles agree with
 * theirs bit for bit. */
#define LANES 4
#define MAX_ROWS 5
#define MAX_VECS 4
#else
/* Portable C: vectors of 4 floats, which GCC lowers to SSE2 on any x86-64
 * (the Makefile compiles this level without AVX), to NEON on ARM64, to
 * scalars elsewhere. Without FMA each step takes a product and a sum (on
 * ARM64, which has fused multiply-adds, the Makefile turns contraction off
 * for this level), so this level's tiles are the same bits on every
 * architecture: 4 x 2 accumulators, 2 of B, a broadcast and a product (12
 * of 16 xmm). */
#define LANES 4
#define MAX_ROWS 4
#define MAX_VECS 2
#endif
#define TILE_KERNEL LEVEL_NAME(tile_gemm)
#if !LEVEL_IS(avx512)
#define TILE_TRANSPOSE LEVEL_NAME(tile_transpose)
#endif

typedef float vec __attribute__((vector_size(LANES * sizeof(float))));

/* Unaligned (tiles start anywhere in a row) loads and stores; macros, since
 * a function taking or returning a vector has an ABI that depends on the flags. */
#define LOAD(v, p) memcpy(&(v), (p), sizeof(vec))
#define STORE(p, v) memcpy((p), &(v), sizeof(vec))

/* C[0:rows, 0:vecs*LANES]: the accumulators stay in registers over all of
 * k; each step loads `vecs` vectors of a row of B and broadcasts `rows`
 * entries of A. rows and vecs are constants at every call, so the loops
 * over them unroll away. */
static inline __attribute__((always_inline)) void register_block(const int rows, const int vecs, size_t k,
                                                                 float alpha, const float *a, size_t rsa, size_t csa,
                                                                 const float *b, size_t ldb, float beta, float *c,
                                                                 size_t ldc) {
    vec acc[MAX_ROWS][MAX_VECS];
#pragma GCC unroll 8
    for (int r = 0; r < rows; r++)
#pragma GCC unroll 4
        for (int v = 0; v < vecs; v++) acc[r][v] = (vec){0};
    for (size_t p = 0; p < k; p++) {
        vec bv[MAX_VECS];
#pragma GCC unroll 4
        for (int v = 0; v < vecs; v++) LOAD(bv[v], b + p * ldb + (size_t)v * LANES);
#pragma GCC unroll 8
        for (int r = 0; r < rows; r++) {
            vec ar = a[(size_t)r * rsa + p * csa] - (vec){0}; /* a broadcast (x - 0 is x, even -0: folded away) */
#pragma GCC unroll 4
            for (int v = 0; v < vecs; v++) acc[r][v] += ar * bv[v];
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < rows; r++)
#pragma GCC unroll 4
        for (int v = 0; v < vecs; v++) {
            float *cp = c + (size_t)r * ldc + (size_t)v * LANES;
            vec out = alpha * acc[r][v], old;
            if (beta != 0.0f) {
                LOAD(old, cp);
                out += beta * old;
            }
            STORE(cp, out);
        }
}

/* Columns j0 .. n-1 (fewer than LANES) of `rows` rows, one at a time. */
static void column_tail(int rows, size_t j0, size_t n, size_t k, float alpha, const float *a, size_t rsa, size_t csa,
                        const float *b, size_t ldb, float beta, float *c, size_t ldc) {
    for (int r = 0; r < rows; r++)
        for (size_t j = j0; j < n; j++) {
            float sum = 0.0f;
            for (size_t p = 0; p < k; p++) sum += a[(size_t)r * rsa + p * csa] * b[p * ldb + j];
            float *cp = c + (size_t)r * ldc + j;
            *cp = alpha * sum + (beta != 0.0f ? beta * *cp : 0.0f);
        }
}

/* All columns of `rows` rows of C: MAX_VECS vectors at a time, then 2, 1,
 * then single columns (wider blocks first: fewer accumulators leave the
 * FMA units waiting on each other's results). */
static inline __attribute__((always_inline)) void row_block(const int rows, size_t n, size_t k, float alpha,
                                                            const float *a, size_t rsa, size_t csa, const float *b,
                                                            size_t ldb, float beta, float *c, size_t ldc) {
    size_t j = 0;
    for (; j + MAX_VECS * LANES <= n; j += MAX_VECS * LANES)
        register_block(rows, MAX_VECS, k, alpha, a, rsa, csa, b + j, ldb, beta, c + j, ldc);
    if (MAX_VECS > 2)
        for (; j + 2 * LANES <= n; j += 2 * LANES)
            register_block(rows, 2, k, alpha, a, rsa, csa, b + j, ldb, beta, c + j, ldc);
    for (; j + LANES <= n; j += LANES) register_block(rows, 1, k, alpha, a, rsa, csa, b + j, ldb, beta, c + j, ldc);
    if (j < n) column_tail(rows, j, n, k, alpha, a, rsa, csa, b, ldb, beta, c, ldc);
}

void TILE_KERNEL(size_t m, size_t n, size_t k, float alpha, const float *a, size_t rsa, size_t csa, const float *b,
                 size_t ldb, float beta, float *c, size_t ldc);

void TILE_KERNEL(size_t m, size_t n, size_t k, float alpha, const float *a, size_t rsa, size_t csa, const float *b,
                 size_t ldb, float beta, float *c, size_t ldc) {
    size_t i = 0;
    for (; i + MAX_ROWS <= m; i += MAX_ROWS)
        row_block(MAX_ROWS, n, k, alpha, a + i * rsa, rsa, csa, b, ldb, beta, c + i * ldc, ldc);
    const float *ai = a + i * rsa;
    float *ci = c + i * ldc;
    switch (m - i) { /* the last rows, in one block of a constant height */
    case 0: break;
#if MAX_ROWS > 5
    case 5: row_block(5, n, k, alpha, ai, rsa, csa, b, ldb, beta, ci, ldc); break;
#endif
#if MAX_ROWS > 4
    case 4: row_block(4, n, k, alpha, ai, rsa, csa, b, ldb, beta, ci, ldc); break;
#endif
#if MAX_ROWS > 3
    case 3: row_block(3, n, k, alpha, ai, rsa, csa, b, ldb, beta, ci, ldc); break;
#endif
#if MAX_ROWS > 2
    case 2: row_block(2, n, k, alpha, ai, rsa, csa, b, ldb, beta, ci, ldc); break;
#endif
    default: row_block(1, n, k, alpha, ai, rsa, csa, b, ldb, beta, ci, ldc); break;
    }
}

/* ---- the transposition (blas/tile_gemm.h's tile_transpose) ----
 * In squares of SQ x SQ floats, SQ = 8 where the level's vectors hold 8
 * (AVX2, whose transposition AVX-512 runs too), else 4: SQ rows of
 * src loaded as vectors and transposed in registers by shuffles that GCC
 * turns into the level's own (vunpcklps, vshufps, vperm2f128; SSE's
 * unpcklps and movlhps; NEON's zip), then stored as SQ rows of dst; the
 * edges entry by entry. A copy, so the same bits at every level. */
#ifdef TILE_TRANSPOSE
#define SQ (LANES >= 8 ? 8 : 4)
typedef float sqvec __attribute__((vector_size(SQ * sizeof(float))));
typedef int sqidx __attribute__((vector_size(SQ * sizeof(int))));
#if defined(__clang__) /* the fuzzers' compiler: its own builtin, the same indices */
#define SHUFFLE(x, y, ...) __builtin_shufflevector((x), (y), __VA_ARGS__)
#else
#define SHUFFLE(x, y, ...) __builtin_shuffle((x), (y), (sqidx){__VA_ARGS__})
#endif

static inline __attribute__((always_inline)) void transpose_square(const float *src, size_t lds, float *dst,
                                                                   size_t ldd) {
    sqvec r[SQ], out[SQ];
#pragma GCC unroll 8
    for (int i = 0; i < SQ; i++) memcpy(&r[i], src + (size_t)i * lds, sizeof(sqvec));
#if SQ == 8
    /* Rows a..h: pairs (a0 b0 a1 b1 | a4 b4 a5 b5), then quads (a0 b0 c0 d0 |
     * a4 b4 c4 d4), then halves: out[j] = (a_j .. h_j). */
    sqvec t[8], u[8];
#pragma GCC unroll 4
    for (int i = 0; i < 8; i += 2) {
        t[i] = SHUFFLE(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[i + 1] = SHUFFLE(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
#pragma GCC unroll 2
    for (int i = 0; i < 8; i += 4) {
        u[i] = SHUFFLE(t[i], t[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
        u[i + 1] = SHUFFLE(t[i], t[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        u[i + 2] = SHUFFLE(t[i + 1], t[i + 3], 0, 1, 8, 9, 4, 5, 12, 13);
        u[i + 3] = SHUFFLE(t[i + 1], t[i + 3], 2, 3, 10, 11, 6, 7, 14, 15);
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        out[j] = SHUFFLE(u[j], u[j + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        out[j + 4] = SHUFFLE(u[j], u[j + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
#else
    /* Rows a..d: pairs (a0 b0 a1 b1), then out[j] = (a_j b_j c_j d_j). */
    sqvec t0 = SHUFFLE(r[0], r[1], 0, 4, 1, 5), t1 = SHUFFLE(r[0], r[1], 2, 6, 3, 7);
    sqvec t2 = SHUFFLE(r[2], r[3], 0, 4, 1, 5), t3 = SHUFFLE(r[2], r[3], 2, 6, 3, 7);
    out[0] = SHUFFLE(t0, t2, 0, 1, 4, 5);
    out[1] = SHUFFLE(t0, t2, 2, 3, 6, 7);
    out[2] = SHUFFLE(t1, t3, 0, 1, 4, 5);
    out[3] = SHUFFLE(t1, t3, 2, 3, 6, 7);
#endif
#pragma GCC unroll 8
    for (int j = 0; j < SQ; j++) memcpy(dst + (size_t)j * ldd, &out[j], sizeof(sqvec));
}

void TILE_TRANSPOSE(size_t rows, size_t cols, const float *src, size_t lds, float *dst, size_t ldd);

void TILE_TRANSPOSE(size_t rows, size_t cols, const float *src, size_t lds, float *dst, size_t ldd) {
    size_t i = 0;
    for (; i + SQ <= rows; i += SQ) {
        size_t j = 0;
        for (; j + SQ <= cols; j += SQ) transpose_square(src + i * lds + j, lds, dst + j * ldd + i, ldd);
        for (; j < cols; j++)
            for (size_t r = i; r < i + SQ; r++) dst[j * ldd + r] = src[r * lds + j];
    }
    for (; i < rows; i++)
        for (size_t j = 0; j < cols; j++) dst[j * ldd + i] = src[i * lds + j];
}
#endif
