/* The decode step's matrix-vector kernels (blas/gemv.h) as a template,
 * compiled by the Makefile once per instruction-set level with that level's
 * flags (runtime/level.h) into the table gemv_loops_LEVEL. Per level:
 *   LANES       floats per vector: 4 (SSE, NEON), 8 (AVX2), 16 (AVX-512);
 *   VECS        the vectors of x a register block takes (with ROWS = 4 rows:
 *               4 x VECS accumulators; AVX-512 and NEON 4, AVX2 and SSE 2).
 * The q8 format's rows are products in integers, blas/gemv_q8_kernel.h.
 * A register block is up to 4 rows by up to VECS vectors of x, one vector
 * accumulator each, along all of k: each weight vector loaded once serves
 * the block's vectors, each vector of x its rows (a batch of sequences reads
 * the weights once). Every (row, vector) entry is the same sequence of
 * operations whatever the block's shape (blas/gemv.h): the block's code is
 * one inline function whose loops over rows and vectors unroll for each
 * shape, with nothing shared between entries but the loads. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "blas/gemv.h"
#include "runtime/level.h"

#if LEVEL_IS(avx512)
/* AVX-512F: vectors of 16 floats. */
#define LANES 16
#define VECS 4
#elif LEVEL_IS(avx2)
/* AVX2 and FMA: vectors of 8 floats. */
#define LANES 8
#define VECS 2
#elif LEVEL_IS(neon)
/* ARM64 Advanced SIMD (NEON), which every ARM64 CPU has: vectors of 4
 * floats with fused multiply-adds. */
#define LANES 4
#define VECS 4
#else
/* Portable C: vectors of 4 floats, SSE2 on any x86-64 and NEON without
 * fused multiply-adds on ARM64 (the Makefile's portable flags). */
#define LANES 4
#define VECS 2
#endif

typedef float vec __attribute__((vector_size(LANES * sizeof(float))));
typedef uint16_t hvec __attribute__((vector_size(LANES * sizeof(uint16_t))));
typedef uint32_t uvec __attribute__((vector_size(LANES * sizeof(uint32_t))));

#define ROWS 4
#define MAXV VECS
#define LOAD(v, p) memcpy(&(v), (p), sizeof(vec))

/* LANES entries of a row from p as fp32 vectors, in each format. */
#define LOAD_F32(v, p) LOAD(v, p)
#define LOAD_BF16(v, p)                                   \
    do {                                                  \
        hvec h_;                                          \
        memcpy(&h_, (p), sizeof h_);                      \
        uvec u_ = __builtin_convertvector(h_, uvec) << 16; \
        memcpy(&(v), &u_, sizeof(vec));                   \
    } while (0)

/* The sum of a vector's lanes by halves (a fixed tree: 16 -> 8 -> 4 -> 2 -> 1),
 * the same for every entry; four dependent adds rather than fifteen. */
static inline float lanes_sum(vec s) {
    float a[LANES];
    memcpy(a, &s, sizeof a);
    for (int w = LANES / 2; w >= 1; w /= 2)
        for (int l = 0; l < w; l++) a[l] += a[l + w];
    return a[0];
}

/* The same sums for up to LANES accumulators at once (a[LANES], the unused
 * ones zero): at each level of the tree two vectors fold into one, the
 * halves of each accumulator's part added across them (two shuffles and an
 * add), so LANES sums take LANES - 1 folds instead of LANES reductions.
 * Each sum is lanes_sum's, bit for bit: the same pairs added in the same
 * order, whatever the other accumulators are. The sums come out in
 * bit-reversed order of the accumulators (FOLD_LANE). */
#if LANES == 4
static const int FOLD_LANE[4] = {0, 2, 1, 3};
static inline __attribute__((always_inline)) vec fold(const int w, vec x, vec y) {
    if (w == 2) return __builtin_shufflevector(x, y, 0, 1, 4, 5) + __builtin_shufflevector(x, y, 2, 3, 6, 7);
    return __builtin_shufflevector(x, y, 0, 4, 2, 6) + __builtin_shufflevector(x, y, 1, 5, 3, 7);
}
#elif LANES == 8
static const int FOLD_LANE[8] = {0, 4, 2, 6, 1, 5, 3, 7};
static inline __attribute__((always_inline)) vec fold(const int w, vec x, vec y) {
    if (w == 4)
        return __builtin_shufflevector(x, y, 0, 1, 2, 3, 8, 9, 10, 11) +
               __builtin_shufflevector(x, y, 4, 5, 6, 7, 12, 13, 14, 15);
    if (w == 2)
        return __builtin_shufflevector(x, y, 0, 1, 8, 9, 4, 5, 12, 13) +
               __builtin_shufflevector(x, y, 2, 3, 10, 11, 6, 7, 14, 15);
    return __builtin_shufflevector(x, y, 0, 8, 2, 10, 4, 12, 6, 14) +
           __builtin_shufflevector(x, y, 1, 9, 3, 11, 5, 13, 7, 15);
}
#elif LANES == 16
static const int FOLD_LANE[16] = {0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15};
static inline __attribute__((always_inline)) vec fold(const int w, vec x, vec y) {
    if (w == 8)
        return __builtin_shufflevector(x, y, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
               __builtin_shufflevector(x, y, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
    if (w == 4)
        return __builtin_shufflevector(x, y, 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27) +
               __builtin_shufflevector(x, y, 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
    if (w == 2)
        return __builtin_shufflevector(x, y, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29) +
               __builtin_shufflevector(x, y, 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31);
    return __builtin_shufflevector(x, y, 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30) +
           __builtin_shufflevector(x, y, 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
}
#else
#error "LANES must be 4, 8 or 16"
#endif

static inline __attribute__((always_inline)) void lanes_sums(vec a[LANES], float sums[LANES]) {
    int n = LANES;
#pragma GCC unroll 4
    for (int w = LANES / 2; w >= 1; w /= 2, n /= 2)
#pragma GCC unroll 8
        for (int k = 0; k < n / 2; k++) a[k] = fold(w, a[2 * k], a[2 * k + 1]);
    float f[LANES];
    memcpy(f, &a[0], sizeof f);
#pragma GCC unroll 16
    for (int j = 0; j < LANES; j++) sums[FOLD_LANE[j]] = f[j];
}

/* The lanes' sums of the block's R x NV accumulators (acc[r][v] into
 * sums[r * NV + v]): LANES at a time through lanes_sums, a lone one by lanes_sum. */
static inline __attribute__((always_inline)) void block_sums(const int R, const int NV, vec acc[][VECS], float *sums) {
    if (R * NV == 1) {
        sums[0] = lanes_sum(acc[0][0]);
        return;
    }
#pragma GCC unroll 4
    for (int g = 0; g * LANES < R * NV; g++) {
        vec part[LANES];
        float f[LANES];
#pragma GCC unroll 16
        for (int s = 0; s < LANES; s++) {
            int e = g * LANES + s;
            part[s] = e < R * NV ? acc[e / NV][e % NV] : (vec){0};
        }
        lanes_sums(part, f);
#pragma GCC unroll 16
        for (int s = 0; s < LANES; s++)
            if (g * LANES + s < R * NV) sums[g * LANES + s] = f[s];
    }
}

/* The next register block's rows, at the column being read: a block reads
 * its rows side by side, short streams (768 bytes a row of int8 weights at
 * C = 768) that the hardware prefetcher does not keep ahead of, and int8
 * and bf16 decoding waited on memory at half the machine's read rate. The
 * next block's rows are contiguous with these; past the matrix's end the
 * hint is harmless (a prefetch never faults). */
#define PREFETCH_NEXT(p) __builtin_prefetch((p), 0, 3)

/* One step along k of a register block: LANES entries of each row (w, row
 * stride ld, of type T, LOADER its vector load) times those of each vector
 * (x, stride ldx) into acc. */
#define DOT_STEP(T, LOADER)                                                                                       \
    static inline __attribute__((always_inline)) void dot_step_##T(const int R, const int NV, vec acc[][VECS],    \
                                                                    const T *w, size_t ld, const float *x,        \
                                                                    size_t ldx) {                                 \
        vec xv[MAXV];                                                                                            \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) LOAD(xv[v], x + (size_t)v * ldx);                   \
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                                                    \
            vec wv;                                                                                              \
            LOADER(wv, w + (size_t)r * ld);                                                                      \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] += wv * xv[v];                        \
        }                                                                                                        \
    }
DOT_STEP(float, LOAD_F32)
DOT_STEP(uint16_t, LOAD_BF16)

/* out[r * MAXV + v] = sum_k x_v[k] W(row r, k) for r < R, v < NV, the
 * weights fp32 or bf16 (w of type T); x_v = x + v * ldx. The entries past
 * the last whole vector are one more step over copies padded with zeros,
 * so every entry is vector operations only (then its lanes' sum), the same
 * whichever block it is in: scalar code after the sum would let the
 * compiler fuse a product into an add for one block shape and not another. */
#define DOT_BLOCK(NAME, T)                                                                                       \
    static inline __attribute__((always_inline)) void NAME(const int R, const int NV, const T *w, size_t ld,     \
                                                            const float *x, size_t ldx, size_t K, float *out) { \
        vec acc[ROWS][MAXV];                                                                                    \
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)                                                     \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] = (vec){0};                          \
        size_t k = 0;                                                                                           \
        for (; k + LANES <= K; k += LANES) {                                                                    \
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) PREFETCH_NEXT(w + (size_t)(r + R) * ld + k);     \
            dot_step_##T(R, NV, acc, w + k, ld, x + k, ldx);                                                    \
        }                                                                                                       \
        if (k < K) {                                                                                            \
            T wp[ROWS][LANES];                                                                                  \
            float xp[MAXV][LANES];                                                                              \
            memset(wp, 0, sizeof wp), memset(xp, 0, sizeof xp);                                                 \
            for (int r = 0; r < R; r++) memcpy(wp[r], w + (size_t)r * ld + k, (K - k) * sizeof(T));             \
            for (int v = 0; v < NV; v++) memcpy(xp[v], x + (size_t)v * ldx + k, (K - k) * sizeof(float));       \
            dot_step_##T(R, NV, acc, &wp[0][0], LANES, &xp[0][0], LANES);                                       \
        }                                                                                                       \
        float sums[ROWS * MAXV];                                                                                \
        block_sums(R, NV, acc, sums);                                                                           \
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)                                                     \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) out[r * MAXV + v] = sums[r * NV + v];         \
    }

DOT_BLOCK(dot_block_f32, float)
DOT_BLOCK(dot_block_bf16, uint16_t)

/* The block of rows r .. r + R and vectors n .. n + NV (R, NV constant: the
 * loops unroll, the format's branch folds), into y. */
static inline __attribute__((always_inline)) void block(const int R, const int NV, const GemvFormat f, const GemvArgs *a,
                                                        size_t r, size_t n) {
    float out[ROWS * MAXV];
    const float *x = a->x + n * a->ldx;
    if (f == GEMV_F32) dot_block_f32(R, NV, a->w.f + r * a->w.ld, a->w.ld, x, a->ldx, a->K, out);
    else dot_block_bf16(R, NV, a->w.h + r * a->w.ld, a->w.ld, x, a->ldx, a->K, out);
    for (int v = 0; v < NV; v++) {
        float *y = a->y + (n + (size_t)v) * a->ldy + r;
        for (int i = 0; i < R; i++)
            y[i] = (a->accumulate ? y[i] : a->bias ? a->bias[r + (size_t)i] : 0.0f) + out[i * MAXV + v];
    }
}

/* Rows r .. r + R for every vector: VECS at a time, then the rest one by one. */
static inline __attribute__((always_inline)) void rows_block(const int R, const GemvFormat f, const GemvArgs *a, size_t r) {
    size_t n = 0;
    for (; n + VECS <= a->N; n += VECS) block(R, VECS, f, a, r, n);
    for (; n < a->N; n++) block(R, 1, f, a, r, n);
}

/* Rows r0 .. r1: four at a time, then one. */
static inline __attribute__((always_inline)) void rows_all(const GemvFormat f, const GemvArgs *a, size_t r0, size_t r1) {
    size_t r = r0;
    for (; r + ROWS <= r1; r += ROWS) rows_block(ROWS, f, a, r);
    for (; r < r1; r++) rows_block(1, f, a, r);
}

/* ---- the attention step (blas/gemv.h's key_scores and value_sum) ---- */

enum { TILE_VECS = GEMV_KEY_TILE / LANES };
/* Tiles at once: four vector accumulators' worth (AVX-512 4 tiles, AVX2 2, 4-wide 1). */
#define MAX_TILES (4 / TILE_VECS > 0 ? 4 / TILE_VECS : 1)

/* The scores of NT tiles from kt: one accumulator per vector of a tile's row. */
static inline __attribute__((always_inline)) void key_tiles(const int NT, float *s, const float *q, const float *kt,
                                                            size_t hs, float scale) {
    vec acc[MAX_TILES][TILE_VECS];
#pragma GCC unroll 4
    for (int i = 0; i < NT; i++)
#pragma GCC unroll 4
        for (int v = 0; v < TILE_VECS; v++) acc[i][v] = (vec){0};
    for (size_t d = 0; d < hs; d++) {
        vec qd = (vec){0} + q[d];
#pragma GCC unroll 4
        for (int i = 0; i < NT; i++)
#pragma GCC unroll 4
            for (int v = 0; v < TILE_VECS; v++) {
                vec k;
                LOAD(k, kt + ((size_t)i * hs + d) * GEMV_KEY_TILE + (size_t)v * LANES);
                acc[i][v] += qd * k;
            }
    }
#pragma GCC unroll 4
    for (int i = 0; i < NT; i++)
#pragma GCC unroll 4
        for (int v = 0; v < TILE_VECS; v++) {
            vec out = acc[i][v] * scale;
            memcpy(s + (size_t)i * GEMV_KEY_TILE + (size_t)v * LANES, &out, sizeof out);
        }
}

static void key_scores(float *s, const float *q, const float *kt, size_t hs, size_t n, float scale) {
    size_t tiles = (n + GEMV_KEY_TILE - 1) / GEMV_KEY_TILE, t = 0, tile = hs * GEMV_KEY_TILE;
    for (; t + MAX_TILES <= tiles; t += MAX_TILES)
        key_tiles(MAX_TILES, s + t * GEMV_KEY_TILE, q, kt + t * tile, hs, scale);
    for (; t < tiles; t++) key_tiles(1, s + t * GEMV_KEY_TILE, q, kt + t * tile, hs, scale);
}

/* y[0 .. NV vectors) = sum_j p[j] v[j * ldv ..]: one accumulator per vector, the rows in order. */
static inline __attribute__((always_inline)) void value_cols(const int NV, float *y, const float *p, const float *v,
                                                             size_t ldv, size_t n) {
    vec acc[4];
#pragma GCC unroll 4
    for (int i = 0; i < NV; i++) acc[i] = (vec){0};
    for (size_t j = 0; j < n; j++) {
        vec pj = (vec){0} + p[j];
#pragma GCC unroll 4
        for (int i = 0; i < NV; i++) {
            vec x;
            LOAD(x, v + j * ldv + (size_t)i * LANES);
            acc[i] += pj * x;
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < NV; i++) memcpy(y + (size_t)i * LANES, &acc[i], sizeof(vec));
}

static void value_sum(float *y, const float *p, const float *v, size_t ldv, size_t n, size_t hs) {
    size_t d = 0;
    for (; d + 4 * LANES <= hs; d += 4 * LANES) value_cols(4, y + d, p, v + d, ldv, n);
    for (; d + LANES <= hs; d += LANES) value_cols(1, y + d, p, v + d, ldv, n);
    for (; d < hs; d++) {
        float t = 0.0f;
        for (size_t j = 0; j < n; j++) t += p[j] * v[j * ldv + d];
        y[d] = t;
    }
}

static void rows_f32(const GemvArgs *a, size_t r0, size_t r1) { rows_all(GEMV_F32, a, r0, r1); }
static void rows_bf16(const GemvArgs *a, size_t r0, size_t r1) { rows_all(GEMV_BF16, a, r0, r1); }
void LEVEL_NAME(gemv_rows_q8)(const GemvArgs *a, size_t r0, size_t r1); /* blas/gemv_q8_kernel.h */

const GemvLoops LEVEL_NAME(gemv_loops) = {LEVEL_STRING, {rows_f32, rows_bf16, LEVEL_NAME(gemv_rows_q8)}, key_scores, value_sum};
