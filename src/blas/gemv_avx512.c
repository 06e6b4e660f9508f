/* The decode step's matrix-vector kernels for AVX-512F (blas/gemv_kernel.h;
 * the Makefile compiles this file with -mavx512f): vectors of 16 floats.
 * Run only where cpu_isa() says AVX-512. */
#if defined(__x86_64__)
#define GEMV_LOOPS gemv_loops_avx512
#define GEMV_ISA "avx512"
#define LANES 16
#define VECS 4
#include <immintrin.h>
/* 16 int8 as floats: sign-extended to 32 bits, converted (vpmovsxbd, vcvtdq2ps). */
#define LOAD_Q8(v, p)                                                                          \
    do {                                                                                       \
        __m512 f_ = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p)))); \
        memcpy(&(v), &f_, sizeof f_);                                                          \
    } while (0)
#include "blas/gemv_kernel.h"
#else
typedef int gemv_avx512_unused; /* x86 only: an empty file is not C */
#endif
