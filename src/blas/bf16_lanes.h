/* fp32 -> bf16 rounding in vectors, the vector forms of bf16_from_float
 * (lm/bf16.h), shared by the conversion (bf16.c) and the attention tiles'
 * packing (tile_gemm_bf16.c). Internal to src/blas/; AVX-512, so included
 * only inside their x86-64 blocks. */
#ifndef LM_BF16_LANES_H
#define LM_BF16_LANES_H

#if !defined(__x86_64__)
#error "blas/bf16_lanes.h is x86-64 only: include it inside an #if defined(__x86_64__) block"
#endif

#include <immintrin.h>

/* Each lane's bf16 in its top 16 bits (the low half is garbage): round to
 * nearest even by adding 0x7fff plus the kept part's lowest bit; a NaN keeps
 * its sign and payload and is made quiet, so no NaN rounds to infinity. */
__attribute__((target("avx512f"))) static inline __m512i bf16_round_top(__m512i u) {
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
__attribute__((target("avx512bf16,avx512f,avx512bw"))) static inline __m512i bf16_round_32(__m512 lo, __m512 hi) {
    const __m512i exponent = _mm512_set1_epi32(0x7f800000), mantissa = _mm512_set1_epi32(0x007fffff);
    __m512i ul = _mm512_castps_si512(lo), uh = _mm512_castps_si512(hi);
    __mmask16 denormal = _mm512_mask_test_epi32_mask(_mm512_testn_epi32_mask(ul, exponent), ul, mantissa) |
                         _mm512_mask_test_epi32_mask(_mm512_testn_epi32_mask(uh, exponent), uh, mantissa);
    if (__builtin_expect(!denormal, 1)) return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
    __m256i l16 = _mm512_cvtepi32_epi16(_mm512_srli_epi32(bf16_round_top(ul), 16));
    __m256i h16 = _mm512_cvtepi32_epi16(_mm512_srli_epi32(bf16_round_top(uh), 16));
    return _mm512_inserti64x4(_mm512_castsi256_si512(l16), h16, 1);
}

#endif
