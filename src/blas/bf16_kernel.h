/* The bf16 kernels (blas/bf16_loops.h) as a template, compiled by the
 * Makefile once per instruction-set level with that level's flags
 * (runtime/level.h) into bf16_loops_LEVEL; at avx512 also into
 * bf16_loops_avx512bf16, whose functions add AVX512_BF16 (with AVX512BW
 * and VL) by a target attribute and run only where cpu_bf16() says so.
 *
 * The tiles' products: vdpbf16ps (_mm512_dpbf16_ps) adds to each of 16
 * fp32 lanes the products of a PAIR of bf16 numbers from each source: lane
 * j of C gets a[i][2q] b[2q][j] + a[i][2q+1] b[2q+1][j]. So the operands
 * are packed by k-pairs (rounding fp32 to bf16 on the way, round to nearest
 * even as bf16_from_float, denormals kept): B as pair rows, bp[q][j] =
 * (b[2q][j], b[2q+1][j]) in one 32-bit word (low half the even k), rows
 * padded with zeros to a multiple of 16; A so that its pair (A(i,2q),
 * A(i,2q+1)) is one 32-bit word, broadcast to all lanes. An odd k gets a
 * zero partner for its last entry (adding 0 * 0 is exact). The register
 * block is 6 rows x 4 vectors (64 columns) of fp32 accumulators, as in the
 * fp32 kernel; the last vector of a row is stored with a mask, so any n
 * works without a scalar tail. The other levels run the same words and
 * each pair's two exact products added to an fp32 sum one at a time, as
 * vdpbf16ps rounds after each addition.
 *
 * Error: the products of two bf16 numbers are exact in fp32 and vdpbf16ps
 * rounds after each of its two additions, so C's entries carry the k
 * additions, alpha's multiplication and beta C's addition: the bound of
 * bf16_accumulation_bound (lm/bf16.h) against the exact product of the
 * rounded inputs. The instruction treats denormal inputs as zero and flushes
 * denormal results, which that bound's k * 2^-126 covers. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "blas/bf16_loops.h"
#include "runtime/level.h"

/* ---- in C: the packings and the product at every level but avx512bf16 ---------- */

static uint32_t pair_word(float even, float odd) {
    return (uint32_t)bf16_from_float(even) | (uint32_t)bf16_from_float(odd) << 16;
}

static void pack_rows_c(size_t rows, size_t cols, const float *x, size_t ldx, uint32_t *dst, size_t ldd) {
    for (size_t i = 0; i < rows; i++)
        for (size_t q = 0; 2 * q < cols; q++)
            dst[i * ldd + q] = pair_word(x[i * ldx + 2 * q], 2 * q + 1 < cols ? x[i * ldx + 2 * q + 1] : 0.0f);
}

static void pack_columns_c(size_t rows, size_t cols, const float *x, size_t ldx, uint32_t *dst, size_t ldd) {
    for (size_t q = 0; 2 * q < rows; q++)
        for (size_t j = 0; j < ldd; j++)
            dst[q * ldd + j] =
                j < cols ? pair_word(x[2 * q * ldx + j], 2 * q + 1 < rows ? x[(2 * q + 1) * ldx + j] : 0.0f) : 0;
}

static void pack_rows_transposed_c(size_t rows, size_t cols, const float *x, size_t ldx, uint32_t *dst,
                                   size_t ldd) {
    for (size_t q = 0; 2 * q < cols; q++)
        for (size_t i = 0; i < ldd; i++)
            dst[q * ldd + i] =
                i < rows ? pair_word(x[i * ldx + 2 * q], 2 * q + 1 < cols ? x[i * ldx + 2 * q + 1] : 0.0f) : 0;
}

static void product_c(size_t m, size_t n, size_t kp, float alpha, const uint32_t *ap, size_t ars, size_t aqs,
                      const uint32_t *bp, size_t ldb, float beta, float *c, size_t ldc) {
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            float sum = 0.0f;
            for (size_t q = 0; q < kp; q++) {
                uint32_t a = ap[i * ars + q * aqs], b = bp[q * ldb + j];
                sum += bf16_pair_half(a, 0) * bf16_pair_half(b, 0);
                sum += bf16_pair_half(a, 1) * bf16_pair_half(b, 1);
            }
            float *cp = c + i * ldc + j;
            *cp = alpha * sum + (beta != 0.0f ? beta * *cp : 0.0f);
        }
}

#if LEVEL_IS(avx512)
/* ---- AVX-512F, and AVX512_BF16 where cpu_bf16() ----------------------------------- */
#include <immintrin.h>

#define BF16_TARGET __attribute__((target("avx512bf16,avx512f,avx512bw,avx512vl")))
#define LANES 16
#define ROWS 6
#define VECS 4

static inline __mmask16 lanes_mask(size_t left) {
    return left >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

/* Each lane's bf16 in its top 16 bits (the low half is garbage): round to
 * nearest even by adding 0x7fff plus the kept part's lowest bit; a NaN keeps
 * its sign and payload and is made quiet, so no NaN rounds to infinity. */
static inline __m512i bf16_round_top(__m512i u) {
    const __m512i one = _mm512_set1_epi32(1), half = _mm512_set1_epi32(0x7fff);
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(half, _mm512_and_si512(_mm512_srli_epi32(u, 16), one)));
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                            _mm512_set1_epi32(0x7f800000));
    return _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(u, _mm512_set1_epi32(0x00400000)));
}

/* 32 floats (lo the first 16, hi the next) rounded to bf16, in order (lo's
 * in the low 256 bits), bit for bit as bf16_from_float. AVX512_BF16's
 * vcvtne2ps2bf16 rounds 32 at once and agrees with bf16_from_float on every
 * input but the denormals, which it reads as zero (checked over all 2^32
 * floats); a vector holding a denormal (exponent field 0, mantissa not)
 * takes bf16_round_top instead. Requires AVX512_BF16. */
BF16_TARGET static inline __m512i bf16_round_32(__m512 lo, __m512 hi) {
    const __m512i exponent = _mm512_set1_epi32(0x7f800000), mantissa = _mm512_set1_epi32(0x007fffff);
    __m512i ul = _mm512_castps_si512(lo), uh = _mm512_castps_si512(hi);
    __mmask16 denormal = _mm512_mask_test_epi32_mask(_mm512_testn_epi32_mask(ul, exponent), ul, mantissa) |
                         _mm512_mask_test_epi32_mask(_mm512_testn_epi32_mask(uh, exponent), uh, mantissa);
    if (__builtin_expect(!denormal, 1)) return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
    __m256i l16 = _mm512_cvtepi32_epi16(_mm512_srli_epi32(bf16_round_top(ul), 16));
    __m256i h16 = _mm512_cvtepi32_epi16(_mm512_srli_epi32(bf16_round_top(uh), 16));
    return _mm512_inserti64x4(_mm512_castsi256_si512(l16), h16, 1);
}

/* The conversion does bf16_from_float's integer arithmetic 16 lanes at a
 * time (AVX-512F), or on CPUs with AVX512_BF16 converts 32 at a time with
 * vcvtne2ps2bf16 where that gives the same bits (bf16_round_32: all but
 * denormal inputs, which that instruction flushes to zero); both bit for
 * bit the scalar definition. */
static void from_floats_avx512(size_t n, const float *x, uint16_t *out) {
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 lanes = lanes_mask(n - i);
        __m512i rounded = _mm512_srli_epi32(bf16_round_top(_mm512_maskz_loadu_epi32(lanes, x + i)), 16);
        _mm512_mask_cvtepi32_storeu_epi16(out + i, lanes, rounded); /* the low 16 bits of each lane */
    }
}

BF16_TARGET static void from_floats_bf16(size_t n, const float *x, uint16_t *out) {
    for (size_t i = 0; i < n; i += 32) {
        size_t left = n - i;
        __mmask32 halves = left >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << left) - 1u);
        __m512i h = bf16_round_32(_mm512_maskz_loadu_ps(lanes_mask(left), x + i),
                                  _mm512_maskz_loadu_ps(left > 16 ? lanes_mask(left - 16) : 0, x + i + 16));
        _mm512_mask_storeu_epi16(out + i, halves, h);
    }
}

/* The 16-bit positions that interleave two rows' bf16 (lo at 0..15, hi at
 * 16..31, as bf16_round_32 leaves them) into pair words: lo_j, hi_j. */
static const uint16_t pair_order[2 * LANES] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                               8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};

BF16_TARGET static void pack_columns_bf16(size_t rows, size_t cols, const float *x, size_t ldx, uint32_t *dst,
                                          size_t ldd) {
    const __m512i order = _mm512_loadu_si512(pair_order);
    for (size_t q = 0; 2 * q < rows; q++) {
        const float *r0 = x + 2 * q * ldx, *r1 = r0 + ldx;
        int has_hi = 2 * q + 1 < rows;
        for (size_t j = 0; j < ldd; j += LANES) {
            __mmask16 m = j < cols ? lanes_mask(cols - j) : 0;
            __m512 lo = _mm512_maskz_loadu_ps(m, r0 + j), hi = _mm512_maskz_loadu_ps(has_hi ? m : 0, r1 + j);
            _mm512_mask_storeu_epi32(dst + q * ldd + j, lanes_mask(ldd - j),
                                     _mm512_permutexvar_epi16(order, bf16_round_32(lo, hi)));
        }
    }
}

BF16_TARGET static void pack_rows_bf16(size_t rows, size_t cols, const float *x, size_t ldx, uint32_t *dst,
                                       size_t ldd) {
    for (size_t i = 0; i < rows; i++) {
        const float *s = x + i * ldx;
        uint32_t *d = dst + i * ldd;
        for (size_t p = 0; p < cols; p += 2 * LANES) {
            size_t left = cols - p;
            __mmask16 m0 = lanes_mask(left), m1 = left > LANES ? lanes_mask(left - LANES) : 0;
            __m512i w = bf16_round_32(_mm512_maskz_loadu_ps(m0, s + p), _mm512_maskz_loadu_ps(m1, s + p + LANES));
            /* whole words: up to the pair holding entry cols - 1 (its partner a masked zero) */
            size_t words = (left + 1) / 2 < LANES ? (left + 1) / 2 : LANES;
            _mm512_mask_storeu_epi32(d + p / 2, lanes_mask(words), w);
        }
    }
}

/* r[j] = column j of the 16 x 16 words r[0..15]: 32-bit interleaves of
 * row pairs, 64-bit interleaves of those (then lane L of v[4k + c] holds
 * rows 4k..4k+3 of column 4L + c), and a 4 x 4 transpose of the 128-bit
 * lanes of v[c], v[4 + c], v[8 + c], v[12 + c] for each c. */
BF16_TARGET static inline void transpose_16x16(__m512i r[LANES]) {
    __m512i u[LANES], v[LANES];
    for (int k = 0; k < 8; k++) {
        u[2 * k] = _mm512_unpacklo_epi32(r[2 * k], r[2 * k + 1]);
        u[2 * k + 1] = _mm512_unpackhi_epi32(r[2 * k], r[2 * k + 1]);
    }
    for (int k = 0; k < 4; k++) {
        v[4 * k] = _mm512_unpacklo_epi64(u[4 * k], u[4 * k + 2]);
        v[4 * k + 1] = _mm512_unpackhi_epi64(u[4 * k], u[4 * k + 2]);
        v[4 * k + 2] = _mm512_unpacklo_epi64(u[4 * k + 1], u[4 * k + 3]);
        v[4 * k + 3] = _mm512_unpackhi_epi64(u[4 * k + 1], u[4 * k + 3]);
    }
    for (int c = 0; c < 4; c++) {
        __m512i low01 = _mm512_shuffle_i32x4(v[c], v[4 + c], 0x44), high01 = _mm512_shuffle_i32x4(v[c], v[4 + c], 0xee);
        __m512i low23 = _mm512_shuffle_i32x4(v[8 + c], v[12 + c], 0x44);
        __m512i high23 = _mm512_shuffle_i32x4(v[8 + c], v[12 + c], 0xee);
        r[c] = _mm512_shuffle_i32x4(low01, low23, 0x88);
        r[4 + c] = _mm512_shuffle_i32x4(low01, low23, 0xdd);
        r[8 + c] = _mm512_shuffle_i32x4(high01, high23, 0x88);
        r[12 + c] = _mm512_shuffle_i32x4(high01, high23, 0xdd);
    }
}

/* Blocks of 16 rows x 32 columns: each row's 16 words in a register (zeros
 * past the rows and columns), transposed in registers, stored as 16 rows
 * of 16 words. */
BF16_TARGET static void pack_rows_transposed_bf16(size_t rows, size_t cols, const float *x, size_t ldx,
                                                  uint32_t *dst, size_t ldd) {
    size_t words = (cols + 1) / 2;
    for (size_t i0 = 0; i0 < ldd; i0 += LANES) {
        __mmask16 out = lanes_mask(ldd - i0);
        for (size_t q0 = 0; q0 < words; q0 += LANES) {
            size_t left = cols - 2 * q0;
            __mmask16 m0 = lanes_mask(left), m1 = left > LANES ? lanes_mask(left - LANES) : 0;
            __m512i r[LANES];
            for (size_t k = 0; k < LANES; k++) {
                const float *s = x + (i0 + k) * ldx + 2 * q0;
                r[k] = i0 + k < rows ? bf16_round_32(_mm512_maskz_loadu_ps(m0, s), _mm512_maskz_loadu_ps(m1, s + LANES))
                                     : _mm512_setzero_si512();
            }
            transpose_16x16(r);
            for (size_t q = 0; q < LANES && q0 + q < words; q++) _mm512_mask_storeu_epi32(dst + (q0 + q) * ldd + i0, out, r[q]);
        }
    }
}

/* C[0:rows, 0:vecs*16] (the last vector's lanes limited by `last`) =
 * alpha A B + beta C over kp pairs: A's pair (r, q) at ap[r * ars + q * aqs],
 * B's at bp[q * ldb + column]. rows and vecs are constants at every call. */
BF16_TARGET static inline __attribute__((always_inline)) void register_block(const int rows, const int vecs, size_t kp,
                                                                             float alpha, const uint32_t *ap,
                                                                             size_t ars, size_t aqs,
                                                                             const uint32_t *bp, size_t ldb,
                                                                             float beta, float *c, size_t ldc,
                                                                             __mmask16 last) {
    __m512 acc[ROWS][VECS];
#pragma GCC unroll 8
    for (int r = 0; r < rows; r++)
#pragma GCC unroll 4
        for (int v = 0; v < vecs; v++) acc[r][v] = _mm512_setzero_ps();
    for (size_t q = 0; q < kp; q++) {
        __m512bh bv[VECS];
#pragma GCC unroll 4
        for (int v = 0; v < vecs; v++) bv[v] = (__m512bh)_mm512_loadu_si512(bp + q * ldb + (size_t)v * LANES);
#pragma GCC unroll 8
        for (int r = 0; r < rows; r++) {
            __m512bh ar = (__m512bh)_mm512_set1_epi32((int)ap[(size_t)r * ars + q * aqs]);
#pragma GCC unroll 4
            for (int v = 0; v < vecs; v++) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], ar, bv[v]);
        }
    }
    const __m512 va = _mm512_set1_ps(alpha);
#pragma GCC unroll 8
    for (int r = 0; r < rows; r++)
#pragma GCC unroll 4
        for (int v = 0; v < vecs; v++) {
            float *cp = c + (size_t)r * ldc + (size_t)v * LANES;
            __mmask16 m = v == vecs - 1 ? last : (__mmask16)0xffff;
            __m512 out = _mm512_mul_ps(va, acc[r][v]);
            if (beta != 0.0f) out = _mm512_add_ps(out, _mm512_mul_ps(_mm512_set1_ps(beta), _mm512_maskz_loadu_ps(m, cp)));
            _mm512_mask_storeu_ps(cp, m, out);
        }
}

/* All n columns of `rows` rows: 64 at a time, then the rest in one block of
 * 1 to 4 vectors. */
BF16_TARGET static inline __attribute__((always_inline)) void row_block(const int rows, size_t n, size_t kp,
                                                                        float alpha, const uint32_t *ap, size_t ars,
                                                                        size_t aqs, const uint32_t *bp, size_t ldb,
                                                                        float beta, float *c, size_t ldc) {
    size_t j = 0;
    for (; j + VECS * LANES <= n; j += VECS * LANES)
        register_block(rows, VECS, kp, alpha, ap, ars, aqs, bp + j, ldb, beta, c + j, ldc, 0xffff);
    if (j == n) return;
    size_t left = n - j;
    __mmask16 last = lanes_mask(left - (left - 1) / LANES * LANES);
    switch ((left + LANES - 1) / LANES) {
    case 3: register_block(rows, 3, kp, alpha, ap, ars, aqs, bp + j, ldb, beta, c + j, ldc, last); break;
    case 2: register_block(rows, 2, kp, alpha, ap, ars, aqs, bp + j, ldb, beta, c + j, ldc, last); break;
    default: register_block(rows, 1, kp, alpha, ap, ars, aqs, bp + j, ldb, beta, c + j, ldc, last); break;
    }
}

BF16_TARGET static void product_bf16(size_t m, size_t n, size_t kp, float alpha, const uint32_t *ap, size_t ars,
                                     size_t aqs, const uint32_t *bp, size_t ldb, float beta, float *c, size_t ldc) {
    size_t i = 0;
    for (; i + ROWS <= m; i += ROWS)
        row_block(ROWS, n, kp, alpha, ap + i * ars, ars, aqs, bp, ldb, beta, c + i * ldc, ldc);
    const uint32_t *ai = ap + i * ars;
    float *ci = c + i * ldc;
    switch (m - i) {
    case 0: break;
    case 5: row_block(5, n, kp, alpha, ai, ars, aqs, bp, ldb, beta, ci, ldc); break;
    case 4: row_block(4, n, kp, alpha, ai, ars, aqs, bp, ldb, beta, ci, ldc); break;
    case 3: row_block(3, n, kp, alpha, ai, ars, aqs, bp, ldb, beta, ci, ldc); break;
    case 2: row_block(2, n, kp, alpha, ai, ars, aqs, bp, ldb, beta, ci, ldc); break;
    default: row_block(1, n, kp, alpha, ai, ars, aqs, bp, ldb, beta, ci, ldc); break;
    }
}

const Bf16Loops bf16_loops_avx512 = {"avx512", from_floats_avx512, pack_rows_c, pack_columns_c, pack_rows_transposed_c,
                                     product_c};
const Bf16Loops bf16_loops_avx512bf16 = {"avx512bf16", from_floats_bf16, pack_rows_bf16, pack_columns_bf16,
                                         pack_rows_transposed_bf16, product_bf16};
#else
/* ---- in C: the conversion at the other levels ----------------------------------- */

static void from_floats_c(size_t n, const float *x, uint16_t *out) {
    for (size_t i = 0; i < n; i++) out[i] = bf16_from_float(x[i]);
}

const Bf16Loops LEVEL_NAME(bf16_loops) = {LEVEL_STRING, from_floats_c, pack_rows_c, pack_columns_c,
                                          pack_rows_transposed_c, product_c};
#endif
