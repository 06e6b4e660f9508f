/* The decode step's matrix-vector kernels for AVX2 and FMA (blas/gemv_kernel.h;
 * the Makefile compiles this file with -mavx2 -mfma, without AVX-512):
 * vectors of 8 floats. Run only where cpu_isa() says AVX2 or above. */
#if defined(__x86_64__)
#define GEMV_LOOPS gemv_loops_avx2
#define GEMV_ISA "avx2"
#define LANES 8
#define VECS 2
#include <immintrin.h>
/* 8 int8 as floats: sign-extended to 32 bits, converted (vpmovsxbd, vcvtdq2ps). */
#define LOAD_Q8(v, p)                                                                          \
    do {                                                                                       \
        __m256 f_ = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p)))); \
        memcpy(&(v), &f_, sizeof f_);                                                          \
    } while (0)
#include "blas/gemv_kernel.h"
#else
typedef int gemv_avx2_unused; /* x86 only: an empty file is not C */
#endif
