/* The decode step's matrix-vector kernels for AVX-512F (blas/gemv_kernel.h;
 * the Makefile compiles this file with -mavx512f): vectors of 16 floats.
 * Run only where cpu_isa() says AVX-512. */
#if defined(__x86_64__)
#define GEMV_LOOPS gemv_loops_avx512
#define GEMV_ISA "avx512"
#define LANES 16
#include "blas/gemv_kernel.h"
#else
typedef int gemv_avx512_unused; /* x86 only: an empty file is not C */
#endif
