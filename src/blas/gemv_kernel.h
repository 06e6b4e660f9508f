/* The decode step's matrix-vector kernels (blas/gemv.h) as a template: each
 * file that includes it compiles it for one instruction-set level with that
 * level's compiler flags (the Makefile's), after defining
 *   GEMV_LOOPS  the name of the level's table (gemv_loops_portable, _avx2, _avx512, _neon);
 *   GEMV_ISA    the level's name;
 *   LANES       floats per vector: 4 (SSE, NEON), 8 (AVX2), 16 (AVX-512).
 * Four rows at a time: their two accumulators each (8 independent chains of
 * multiply-adds, enough to keep the loads going with one vector x), for
 * every vector of x in turn while the four rows sit in L1. Every row is the
 * same sequence of operations as any other (blas/gemv.h), whichever block
 * computes it: the per-row code is one inline function for blocks of 1 and 4. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "blas/gemv.h"

typedef float vec __attribute__((vector_size(LANES * sizeof(float))));
typedef uint16_t hvec __attribute__((vector_size(LANES * sizeof(uint16_t))));
typedef uint32_t uvec __attribute__((vector_size(LANES * sizeof(uint32_t))));
typedef int8_t bvec __attribute__((vector_size(LANES)));
typedef int32_t ivec __attribute__((vector_size(LANES * sizeof(int32_t))));

#define ROWS 4
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
#define LOAD_Q8(v, p)                                           \
    do {                                                        \
        bvec b_;                                                \
        memcpy(&b_, (p), sizeof b_);                            \
        (v) = __builtin_convertvector(__builtin_convertvector(b_, ivec), vec); \
    } while (0)

static inline float lanes_sum(vec s) {
    float t = s[0];
    for (int l = 1; l < LANES; l++) t += s[l];
    return t;
}

static inline float bf16_value(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* out[r] = sum_k x[k] W(row + r, k) for r < R, fp32 or bf16 entries (w of
 * type T, LOADER its vector load, VALUE its scalar). */
#define DOT_ROWS(NAME, T, LOADER, VALUE)                                                                          \
    static inline __attribute__((always_inline)) void NAME(const int R, const T *w, size_t ld, const float *x,  \
                                                            size_t K, float *out) {                             \
        vec acc[ROWS][2];                                                                                       \
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = (vec){0};                   \
        size_t k = 0;                                                                                           \
        for (; k + 2 * LANES <= K; k += 2 * LANES) {                                                            \
            vec x0, x1;                                                                                         \
            LOAD(x0, x + k);                                                                                    \
            LOAD(x1, x + k + LANES);                                                                            \
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                                               \
                vec w0, w1;                                                                                     \
                LOADER(w0, w + (size_t)r * ld + k);                                                             \
                LOADER(w1, w + (size_t)r * ld + k + LANES);                                                     \
                acc[r][0] += w0 * x0;                                                                           \
                acc[r][1] += w1 * x1;                                                                           \
            }                                                                                                   \
        }                                                                                                       \
        if (k + LANES <= K) {                                                                                   \
            vec x0;                                                                                             \
            LOAD(x0, x + k);                                                                                    \
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                                               \
                vec w0;                                                                                         \
                LOADER(w0, w + (size_t)r * ld + k);                                                             \
                acc[r][0] += w0 * x0;                                                                           \
            }                                                                                                   \
            k += LANES;                                                                                         \
        }                                                                                                       \
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                                                   \
            float t = lanes_sum(acc[r][0] + acc[r][1]);                                                         \
            for (size_t j = k; j < K; j++) t += VALUE(w[(size_t)r * ld + j]) * x[j];                            \
            out[r] = t;                                                                                         \
        }                                                                                                       \
    }

#define F32_VALUE(v) (v)
DOT_ROWS(dot_rows_f32, float, LOAD_F32, F32_VALUE)
DOT_ROWS(dot_rows_bf16, uint16_t, LOAD_BF16, bf16_value)

/* The same for q8: each whole group's sum (GEMV_GROUP / LANES vectors into
 * one accumulator) times its scale into the accumulator of the group's
 * parity; a last part group one entry at a time, times its scale. */
static inline __attribute__((always_inline)) void dot_rows_q8(const int R, const int8_t *q, size_t ld,
                                                              const float *scale, size_t lds, const float *x, size_t K,
                                                              float *out) {
    vec acc[ROWS][2];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = (vec){0};
    size_t g = 0;
    for (; (g + 1) * GEMV_GROUP <= K; g++) {
        vec xs[GEMV_GROUP / LANES];
#pragma GCC unroll 8
        for (int j = 0; j < GEMV_GROUP / LANES; j++) LOAD(xs[j], x + g * GEMV_GROUP + (size_t)j * LANES);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            vec s = (vec){0};
#pragma GCC unroll 8
            for (int j = 0; j < GEMV_GROUP / LANES; j++) {
                vec w0;
                LOAD_Q8(w0, q + (size_t)r * ld + g * GEMV_GROUP + (size_t)j * LANES);
                s += w0 * xs[j];
            }
            acc[r][g & 1] += scale[(size_t)r * lds + g] * s;
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        float t = lanes_sum(acc[r][0] + acc[r][1]);
        if (g * GEMV_GROUP < K) {
            float s = 0.0f;
            for (size_t j = g * GEMV_GROUP; j < K; j++) s += (float)q[(size_t)r * ld + j] * x[j];
            t += scale[(size_t)r * lds + g] * s;
        }
        out[r] = t;
    }
}

/* y's rows r .. r + R for every vector (R constant: the loops unroll, the format's branch folds). */
static inline __attribute__((always_inline)) void block(const int R, const GemvFormat f, const GemvArgs *a, size_t r) {
    float out[ROWS];
    for (size_t n = 0; n < a->N; n++) {
        const float *x = a->x + n * a->ldx;
        if (f == GEMV_F32) dot_rows_f32(R, a->w.f + r * a->w.ld, a->w.ld, x, a->K, out);
        else if (f == GEMV_BF16) dot_rows_bf16(R, a->w.h + r * a->w.ld, a->w.ld, x, a->K, out);
        else dot_rows_q8(R, a->w.q + r * a->w.ld, a->w.ld, a->w.scale + r * a->w.lds, a->w.lds, x, a->K, out);
        float *y = a->y + n * a->ldy + r;
        for (int i = 0; i < R; i++) y[i] = (a->accumulate ? y[i] : a->bias ? a->bias[r + (size_t)i] : 0.0f) + out[i];
    }
}

/* Rows r0 .. r1: four at a time, then one. */
static inline __attribute__((always_inline)) void rows_all(const GemvFormat f, const GemvArgs *a, size_t r0, size_t r1) {
    size_t r = r0;
    for (; r + ROWS <= r1; r += ROWS) block(ROWS, f, a, r);
    for (; r < r1; r++) block(1, f, a, r);
}

static void rows_f32(const GemvArgs *a, size_t r0, size_t r1) { rows_all(GEMV_F32, a, r0, r1); }
static void rows_bf16(const GemvArgs *a, size_t r0, size_t r1) { rows_all(GEMV_BF16, a, r0, r1); }
static void rows_q8(const GemvArgs *a, size_t r0, size_t r1) { rows_all(GEMV_Q8, a, r0, r1); }

const GemvLoops GEMV_LOOPS = {GEMV_ISA, {rows_f32, rows_bf16, rows_q8}};
