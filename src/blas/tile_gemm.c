/* Small matrix products for the attention tiles, without packing (see src/blas/tile_gemm.h). */
#include "blas/tile_gemm.h"

#include <string.h>

/* 16 floats: one AVX-512 register, two AVX2 ones, four SSE ones; GCC
 * lowers the vector type to whatever -march allows. */
typedef float v16 __attribute__((vector_size(64)));
#define LANES 16
/* The register block: MAX_ROWS rows x MAX_VECS vectors of C. With AVX-512's
 * 32 registers, 6 x 4 accumulators plus 4 of B and a broadcast (6 x 4 ran
 * 10-30% faster here than 4 x 4 or 8 x 2 at 64-128 wide tiles); AVX2's 16
 * registers hold a v16 in two, so 2 x 2. */
#ifdef __AVX512F__
#define MAX_ROWS 6
#define MAX_VECS 4
#else
#define MAX_ROWS 2
#define MAX_VECS 2
#endif

/* Unaligned (tiles start anywhere in a row) loads and stores; macros, since
 * a function taking or returning a v16 has an ABI that depends on -march. */
#define LOAD(v, p) memcpy(&(v), (p), sizeof(v16))
#define STORE(p, v) memcpy((p), &(v), sizeof(v16))

/* C[0:rows, 0:vecs*LANES]: the accumulators stay in registers over all of
 * k; each step loads `vecs` vectors of a row of B and broadcasts `rows`
 * entries of A. rows and vecs are constants at every call, so the loops
 * over them unroll away. */
static inline __attribute__((always_inline)) void register_block(const int rows, const int vecs, size_t k,
                                                                 float alpha, const float *a, size_t rsa, size_t csa,
                                                                 const float *b, size_t ldb, float beta, float *c,
                                                                 size_t ldc) {
    v16 acc[MAX_ROWS][MAX_VECS];
#pragma GCC unroll 8
    for (int r = 0; r < rows; r++)
#pragma GCC unroll 4
        for (int v = 0; v < vecs; v++) acc[r][v] = (v16){0};
    for (size_t p = 0; p < k; p++) {
        v16 bv[MAX_VECS];
#pragma GCC unroll 4
        for (int v = 0; v < vecs; v++) LOAD(bv[v], b + p * ldb + (size_t)v * LANES);
#pragma GCC unroll 8
        for (int r = 0; r < rows; r++) {
            v16 ar = (v16){0} + a[(size_t)r * rsa + p * csa];
#pragma GCC unroll 4
            for (int v = 0; v < vecs; v++) acc[r][v] += ar * bv[v];
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < rows; r++)
#pragma GCC unroll 4
        for (int v = 0; v < vecs; v++) {
            float *cp = c + (size_t)r * ldc + (size_t)v * LANES;
            v16 out = alpha * acc[r][v], old;
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

void tile_gemm(size_t m, size_t n, size_t k, float alpha, const float *a, size_t rsa, size_t csa, const float *b,
               size_t ldb, float beta, float *c, size_t ldc) {
    size_t i = 0;
    for (; i + MAX_ROWS <= m; i += MAX_ROWS)
        row_block(MAX_ROWS, n, k, alpha, a + i * rsa, rsa, csa, b, ldb, beta, c + i * ldc, ldc);
    const float *ai = a + i * rsa;
    float *ci = c + i * ldc;
    switch (m - i) { /* the last rows, in one block of a constant height */
    case 0: break;
#if MAX_ROWS > 2
    case 5: row_block(5, n, k, alpha, ai, rsa, csa, b, ldb, beta, ci, ldc); break;
    case 4: row_block(4, n, k, alpha, ai, rsa, csa, b, ldb, beta, ci, ldc); break;
    case 3: row_block(3, n, k, alpha, ai, rsa, csa, b, ldb, beta, ci, ldc); break;
    case 2: row_block(2, n, k, alpha, ai, rsa, csa, b, ldb, beta, ci, ldc); break;
#endif
    default: row_block(1, n, k, alpha, ai, rsa, csa, b, ldb, beta, ci, ldc); break;
    }
}

/* In 16 x 16 blocks: a block's rows are read and its columns written while
 * both stay in cache (row by row, every write would touch another line). */
void tile_transpose(size_t rows, size_t cols, const float *src, size_t lds, float *dst, size_t ldd) {
    for (size_t i0 = 0; i0 < rows; i0 += 16)
        for (size_t j0 = 0; j0 < cols; j0 += 16) {
            size_t i1 = i0 + 16 < rows ? i0 + 16 : rows, j1 = j0 + 16 < cols ? j0 + 16 : cols;
            for (size_t j = j0; j < j1; j++)
                for (size_t i = i0; i < i1; i++) dst[j * ldd + i] = src[i * lds + j];
        }
}
