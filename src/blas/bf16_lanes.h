/* fp32 -> bf16 rounding of 16 lanes at once, the one vector form of
 * bf16_from_float (blas/bf16.h), shared by the conversion (bf16.c) and the
 * attention tiles' packing (tile_gemm_bf16.c). Internal to src/blas/. */
#ifndef LM_BF16_LANES_H
#define LM_BF16_LANES_H

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

#endif
