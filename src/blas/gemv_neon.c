/* The decode step's matrix-vector kernels for ARM64 Advanced SIMD (NEON),
 * which every ARM64 CPU has (blas/gemv_kernel.h): vectors of 4 floats with
 * fused multiply-adds. Run only where cpu_isa() says neon. */
#if defined(__aarch64__)
#define GEMV_LOOPS gemv_loops_neon
#define GEMV_ISA "neon"
#define LANES 4
#include "blas/gemv_kernel.h"
#else
typedef int gemv_neon_unused; /* ARM64 only: an empty file is not C */
#endif
