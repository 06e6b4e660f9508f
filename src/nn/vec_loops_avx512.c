/* The element-wise hot loops for x86-64 AVX-512F (nn/vec_loops_kernel.h;
 * the Makefile compiles this file with -mavx512f). Run only where cpu_isa()
 * says AVX-512. */
#if defined(__x86_64__)
#define VEC_LOOPS vec_loops_avx512
#define VEC_ISA "avx512"
#include "nn/vec_loops_kernel.h"
#else
typedef int vec_loops_avx512_unused; /* x86 only: an empty file is not C */
#endif
