/* The decode step's products over int8 weights (blas/gemv.h's q8 format), in
 * integers: a template compiled by the Makefile once per instruction-set
 * level (runtime/level.h) into gemv_rows_q8_LEVEL, the q8 entry of that
 * level's gemv_loops (blas/gemv_kernel.h).
 *
 * A step's vectors are quantised as the weights are (gemv_to_q8: per group
 * of GEMV_GROUP entries, scale = max |x| / 127, x = scale round(x / scale)),
 * so each group of an entry is one integer dot product of int8 pairs,
 * exact in int32 whatever the order of its adds, and the entry is
 *   acc = start;  acc += (sw(r, g) sx(v, g)) isum(r, v, g)  for each group g in order
 * (start: y, the bias or 0), a float sequence of its own that no other row
 * or vector takes part in. So a vector decoded in a batch gets the bits it
 * gets alone, whichever rows and threads come with it, and a call may cut k
 * into segments anywhere between groups (acc passes through y unchanged).
 *
 * The integer dot products, per level (four rows' sums gathered into the
 * four lanes of one vector, so the float part is the same code everywhere):
 *   avx2, avx512  vpsignb, vpmaddubsw, vpmaddwd: |w| (unsigned) times x with
 *                 w's sign in pairs into int16, each pair at most
 *                 2 x 127 x 127 = 32,258 (no saturation: both sides are
 *                 within +-127), then by pairs into int32 (AVX2 at both:
 *                 the avx512 level's AVX-512F adds nothing here);
 *   neon          smull, smlal, saddlp, sadalp: int8 products into int16
 *                 (two a lane, within 2 x 127^2), then into int32;
 *   portable      C, which the compiler vectorises with what the level has. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "blas/gemv.h"
#include "runtime/level.h"

#if LEVEL_IS(avx2) || LEVEL_IS(avx512)
#include <immintrin.h>
#elif LEVEL_IS(neon)
#include <arm_neon.h>
#endif

typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));

/* Rows a register block takes, and vectors of x. */
#define Q8_ROWS 4
#define Q8_VECS 4
/* The quantised vectors a call keeps at once, on the stack: up to
 * Q8_CHUNK_VECS vectors (a batch of more reads the weights once per chunk)
 * by as many groups of k as Q8_X_BYTES holds (a longer k is cut into
 * segments, which does not change the bits). */
#define Q8_X_BYTES 32768
#define Q8_CHUNK_VECS 32

/* isum[v] lane r = sum over the group's GEMV_GROUP entries of w(r, k) x_v(k),
 * for the R rows at w (stride ld) and the NV vectors at x (stride ldx);
 * lanes past R are 0. */
static inline __attribute__((always_inline)) void group_sums(const int R, const int NV, const int8_t *w, size_t ld,
                                                             const int8_t *x, size_t ldx, v4i isum[Q8_VECS]) {
#if LEVEL_IS(avx2) || LEVEL_IS(avx512)
    __m256i wv[Q8_ROWS], aw[Q8_ROWS];
    const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        wv[r] = _mm256_loadu_si256((const __m256i *)(w + (size_t)r * ld));
        aw[r] = _mm256_sign_epi8(wv[r], wv[r]);
    }
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
        __m256i xv = _mm256_loadu_si256((const __m256i *)(x + (size_t)v * ldx)), d[Q8_ROWS];
#pragma GCC unroll 4
        for (int r = 0; r < Q8_ROWS; r++)
            d[r] = r < R ? _mm256_madd_epi16(_mm256_maddubs_epi16(aw[r], _mm256_sign_epi8(xv, wv[r])), ones)
                         : _mm256_setzero_si256();
        /* The rows' eight lanes into one each: pairs within 128-bit halves, then the halves. */
        __m256i s = _mm256_hadd_epi32(_mm256_hadd_epi32(d[0], d[1]), _mm256_hadd_epi32(d[2], d[3]));
        __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        memcpy(&isum[v], &t, sizeof t);
    }
#elif LEVEL_IS(neon)
    int8x16_t wv[Q8_ROWS][2];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) wv[r][0] = vld1q_s8(w + (size_t)r * ld), wv[r][1] = vld1q_s8(w + (size_t)r * ld + 16);
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
        int8x16_t x0 = vld1q_s8(x + (size_t)v * ldx), x1 = vld1q_s8(x + (size_t)v * ldx + 16);
        int32x4_t d[Q8_ROWS];
#pragma GCC unroll 4
        for (int r = 0; r < Q8_ROWS; r++) {
            if (r >= R) {
                d[r] = vdupq_n_s32(0);
                continue;
            }
            int16x8_t p = vmlal_s8(vmull_s8(vget_low_s8(wv[r][0]), vget_low_s8(x0)), vget_high_s8(wv[r][0]), vget_high_s8(x0));
            int16x8_t q = vmlal_s8(vmull_s8(vget_low_s8(wv[r][1]), vget_low_s8(x1)), vget_high_s8(wv[r][1]), vget_high_s8(x1));
            d[r] = vpadalq_s16(vpaddlq_s16(p), q);
        }
        int32x4_t t = vpaddq_s32(vpaddq_s32(d[0], d[1]), vpaddq_s32(d[2], d[3]));
        memcpy(&isum[v], &t, sizeof t);
    }
#else
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
        int32_t s[Q8_ROWS] = {0};
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            for (int k = 0; k < GEMV_GROUP; k++) s[r] += (int32_t)w[(size_t)r * ld + k] * x[(size_t)v * ldx + k];
        isum[v] = (v4i){s[0], s[1], s[2], s[3]};
    }
#endif
}

/* The register block of R rows from row r and NV vectors from vector n of
 * the chunk (its first vector the call's n0), over groups g0 .. g0 + G of
 * k, whose quantised x is xq (ldq entries a vector, from group g0) and xs
 * (lds_x scales a vector). `first`: the segment that starts the entries. */
static inline __attribute__((always_inline)) void block(const int R, const int NV, const GemvArgs *a, size_t r,
                                                        size_t n0, size_t n, const int8_t *xq, size_t ldq,
                                                        const float *xs, size_t lds_x, size_t g0, size_t G,
                                                        int first) {
    const GemvWeights *gw = &a->w;
    v4f acc[Q8_VECS];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
        const float *y = a->y + (n0 + n + (size_t)v) * a->ldy + r;
        float s[Q8_ROWS] = {0};
        for (int i = 0; i < R; i++)
            s[i] = first && !a->accumulate ? (a->bias ? a->bias[r + (size_t)i] : 0.0f) : y[i];
        acc[v] = (v4f){s[0], s[1], s[2], s[3]};
    }
    const int8_t *w = gw->q + r * gw->ld;
    const float *sw = gw->scale + r * gw->lds;
    size_t K = a->K, whole = (K - g0 * GEMV_GROUP) / GEMV_GROUP; /* groups of the segment with all their entries */
    for (size_t g = 0; g < G; g++) {
        size_t at = (g0 + g) * GEMV_GROUP;
        v4i isum[Q8_VECS];
        if (g < whole) {
#pragma GCC unroll 4
            for (int i = 0; i < R; i++) __builtin_prefetch(w + (size_t)(i + R) * gw->ld + at, 0, 3);
            group_sums(R, NV, w + at, gw->ld, xq + g * GEMV_GROUP, ldq, isum);
        } else { /* k's last, part group: the rows' entries copied, padded with zeros (x's are) */
            int8_t wp[Q8_ROWS][GEMV_GROUP];
            memset(wp, 0, sizeof wp);
            for (int i = 0; i < R; i++) memcpy(wp[i], w + (size_t)i * gw->ld + at, K - at);
            group_sums(R, NV, &wp[0][0], GEMV_GROUP, xq + g * GEMV_GROUP, ldq, isum);
        }
        float s[Q8_ROWS] = {0};
        for (int i = 0; i < R; i++) s[i] = sw[(size_t)i * gw->lds + g0 + g];
        v4f swv = {s[0], s[1], s[2], s[3]};
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            acc[v] += swv * xs[(size_t)v * lds_x + g] * __builtin_convertvector(isum[v], v4f);
    }
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
        float *y = a->y + (n0 + n + (size_t)v) * a->ldy + r, out[Q8_ROWS];
        memcpy(out, &acc[v], sizeof out);
        for (int i = 0; i < R; i++) y[i] = out[i];
    }
}

/* Rows r .. r + R for the chunk's nc vectors: Q8_VECS at a time, then one by one. */
static inline __attribute__((always_inline)) void rows_block(const int R, const GemvArgs *a, size_t r, size_t n0,
                                                             size_t nc, const int8_t *xq, size_t ldq,
                                                             const float *xs, size_t lds_x, size_t g0, size_t G,
                                                             int first) {
    size_t n = 0;
    for (; n + Q8_VECS <= nc; n += Q8_VECS)
        block(R, Q8_VECS, a, r, n0, n, xq + n * ldq, ldq, xs + n * lds_x, lds_x, g0, G, first);
    for (; n < nc; n++) block(R, 1, a, r, n0, n, xq + n * ldq, ldq, xs + n * lds_x, lds_x, g0, G, first);
}

void LEVEL_NAME(gemv_rows_q8)(const GemvArgs *a, size_t r0, size_t r1) {
    int8_t xq[Q8_X_BYTES] __attribute__((aligned(32)));
    float xs[Q8_X_BYTES / GEMV_GROUP];
    size_t K = a->K, groups = (K + GEMV_GROUP - 1) / GEMV_GROUP;
    for (size_t n0 = 0; n0 < a->N; n0 += Q8_CHUNK_VECS) {
        size_t nc = a->N - n0 < Q8_CHUNK_VECS ? a->N - n0 : Q8_CHUNK_VECS;
        size_t per = Q8_X_BYTES / GEMV_GROUP / nc; /* groups a segment holds (at least 32) */
        for (size_t g0 = 0; g0 < groups; g0 += per) {
            size_t G = groups - g0 < per ? groups - g0 : per, k0 = g0 * GEMV_GROUP;
            size_t kn = K - k0 < G * GEMV_GROUP ? K - k0 : G * GEMV_GROUP, ldq = G * GEMV_GROUP;
            for (size_t v = 0; v < nc; v++) {
                gemv_to_q8(xq + v * ldq, xs + v * G, a->x + (n0 + v) * a->ldx + k0, a->ldx, 1, kn);
                memset(xq + v * ldq + kn, 0, ldq - kn);
            }
            size_t r = r0;
            for (; r + Q8_ROWS <= r1; r += Q8_ROWS) rows_block(Q8_ROWS, a, r, n0, nc, xq, ldq, xs, G, g0, G, g0 == 0);
            for (; r < r1; r++) rows_block(1, a, r, n0, nc, xq, ldq, xs, G, g0, G, g0 == 0);
        }
    }
}
