/* bf16 products for the attention tiles (see src/blas/tile_gemm.h).
 *
 * vdpbf16ps (_mm512_dpbf16_ps) adds to each of 16 fp32 lanes the products of
 * a PAIR of bf16 numbers from each source: lane j of C gets
 * a[i][2q] b[2q][j] + a[i][2q+1] b[2q+1][j]. So the operands are packed by
 * k-pairs first (rounding fp32 to bf16 on the way, round to nearest even as
 * bf16_from_float, denormals kept):
 *   B as pair rows: bp[q][j] = (b[2q][j], b[2q+1][j]) in one 32-bit word
 *     (low half the even k), columns padded with zeros to a multiple of 16;
 *   A so that the pair (A(i,2q), A(i,2q+1)) is one 32-bit word, broadcast to
 *     all lanes: for A = X (row-major) that is simply X's row in bf16, for
 *     A = X^T it is X packed as pair rows, like B.
 * An odd k gets a zero partner for its last entry (adding 0 * 0 is exact).
 * The register block is 6 rows x 4 vectors (64 columns) of fp32
 * accumulators, as in the fp32 kernel; the last vector of a row is stored
 * with a mask, so any n works without a scalar tail.
 *
 * Error: the products of two bf16 numbers are exact in fp32 and vdpbf16ps
 * rounds after each of its two additions, so C's entries carry the k
 * additions, alpha's multiplication and beta C's addition: the bound of
 * bf16_accumulation_bound (blas/bf16.h) against the exact product of the
 * rounded inputs. The instruction treats denormal inputs as zero and flushes
 * denormal results, which that bound's k * 2^-126 covers. */
#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>

#include "blas/bf16.h"
#include "blas/bf16_lanes.h"
#include "blas/tile_gemm.h"

#define BF16_TARGET __attribute__((target("avx512bf16,avx512f,avx512bw,avx512vl")))
#define ROWS 6
#define VECS 4
#define LANES 16

static inline __mmask16 lanes_mask(size_t left) { return left >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1); }

/* dst[q * ldd + j] = (src[2q][j], src[2q+1][j]) for q < ceil(k/2), j < ldd
 * (ldd a multiple of 16 >= n; zeros past n and for the missing partner of an
 * odd k). src: k x n, row stride lds. */
BF16_TARGET static void pack_pairs(size_t k, size_t n, const float *src, size_t lds, uint32_t *dst, size_t ldd) {
    const __m512i top = _mm512_set1_epi32((int)0xffff0000u);
    for (size_t q = 0; 2 * q < k; q++) {
        const float *r0 = src + 2 * q * lds, *r1 = r0 + lds;
        int has_hi = 2 * q + 1 < k;
        for (size_t j = 0; j < ldd; j += LANES) {
            __mmask16 m = j < n ? lanes_mask(n - j) : 0;
            __m512i lo = bf16_round_top(_mm512_maskz_loadu_epi32(m, r0 + j));
            __m512i hi = has_hi ? bf16_round_top(_mm512_maskz_loadu_epi32(m, r1 + j)) : _mm512_setzero_si512();
            __m512i w = _mm512_or_si512(_mm512_srli_epi32(lo, 16), _mm512_and_si512(hi, top));
            _mm512_storeu_si512(dst + q * ldd + j, w);
        }
    }
}

/* dst (rows x ldd words, ldd >= ceil(k/2)): each row of src (k entries, row
 * stride lds) in bf16, in order, with a zero after an odd k. */
BF16_TARGET static void pack_rows(size_t rows, size_t k, const float *src, size_t lds, uint32_t *dst, size_t ldd) {
    for (size_t i = 0; i < rows; i++) {
        const float *s = src + i * lds;
        uint16_t *d = (uint16_t *)(dst + i * ldd);
        for (size_t p = 0; p < k; p += 2 * LANES) {
            size_t left = k - p;
            __mmask16 m0 = lanes_mask(left), m1 = left > LANES ? lanes_mask(left - LANES) : 0;
            __m512i a0 = _mm512_srli_epi32(bf16_round_top(_mm512_maskz_loadu_epi32(m0, s + p)), 16);
            __m512i a1 = _mm512_srli_epi32(bf16_round_top(_mm512_maskz_loadu_epi32(m1, s + p + LANES)), 16);
            __m256i h0 = _mm512_cvtepi32_epi16(a0), h1 = _mm512_cvtepi32_epi16(a1);
            __m512i w = _mm512_inserti64x4(_mm512_castsi256_si512(h0), h1, 1);
            /* whole words: up to the pair holding entry k - 1 (its partner a masked zero) */
            size_t words = (left + 1) / 2 < LANES ? (left + 1) / 2 : LANES;
            _mm512_mask_storeu_epi32(d + p, lanes_mask(words), w);
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

BF16_TARGET static void product(size_t m, size_t n, size_t kp, float alpha, const uint32_t *ap, size_t ars,
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

/* Without the packing buffer (memory ran out) or for an A that has neither
 * stride 1: the same arithmetic one entry at a time (rounded inputs, exact
 * products, fp32 sums), so the same bound. */
static void product_scalar(size_t m, size_t n, size_t k, float alpha, const float *a, size_t rsa, size_t csa,
                           const float *b, size_t ldb, float beta, float *c, size_t ldc) {
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            float sum = 0.0f;
            for (size_t p = 0; p < k; p++)
                sum += bf16_to_float(bf16_from_float(a[i * rsa + p * csa])) *
                       bf16_to_float(bf16_from_float(b[p * ldb + j]));
            float *cp = c + i * ldc + j;
            *cp = alpha * sum + (beta != 0.0f ? beta * *cp : 0.0f);
        }
}

/* Each thread's packing buffer, grown as needed and kept (the attention
 * core calls this thousands of times per step at the same few shapes). */
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

void tile_gemm_bf16(size_t m, size_t n, size_t k, float alpha, const float *a, size_t rsa, size_t csa,
                    const float *b, size_t ldb, float beta, float *c, size_t ldc) {
    if (m == 0 || n == 0) return;
    size_t kp = (k + 1) / 2, ldbp = (n + LANES - 1) / LANES * LANES, mp = (m + LANES - 1) / LANES * LANES;
    int a_rows = csa == 1; /* A = X: rows of X; else A = X^T (rsa == 1): X as pair rows */
    size_t a_words = a_rows ? m * kp : kp * mp;
    uint32_t *buf = (a_rows || rsa == 1) ? scratch_get(a_words + kp * ldbp) : NULL;
    if (!buf) {
        product_scalar(m, n, k, alpha, a, rsa, csa, b, ldb, beta, c, ldc);
        return;
    }
    uint32_t *ap = buf, *bp = buf + a_words;
    pack_pairs(k, n, b, ldb, bp, ldbp);
    if (a_rows) {
        pack_rows(m, k, a, rsa, ap, kp);
        product(m, n, kp, alpha, ap, kp, 1, bp, ldbp, beta, c, ldc);
    } else {
        pack_pairs(k, m, a, csa, ap, mp);
        product(m, n, kp, alpha, ap, 1, mp, bp, ldbp, beta, c, ldc);
    }
}
