/* The element-wise hot loops for x86-64 AVX2 and FMA (nn/vec_loops_kernel.h;
 * the Makefile compiles this file with -mavx2 -mfma, without AVX-512). Run
 * only where cpu_isa() says AVX2 or above. */
#if defined(__x86_64__)
#define VEC_LOOPS vec_loops_avx2
#define VEC_ISA "avx2"
#include "nn/vec_loops_kernel.h"
#else
typedef int vec_loops_avx2_unused; /* x86 only: an empty file is not C */
#endif
