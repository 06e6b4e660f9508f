/* The element-wise hot loops for ARM64 Advanced SIMD (nn/vec_loops_kernel.h):
 * vectors of 4 floats with fused multiply-adds, as every ARM64 CPU has. The
 * portable file is the same loops without contraction (the Makefile's
 * -ffp-contract=off there), so that LM_MAX_ISA=portable runs on ARM64 the
 * arithmetic every other machine's portable level runs. Run only where
 * cpu_isa() says neon (lm/cpu.h). */
#if defined(__aarch64__)
#define VEC_LOOPS vec_loops_neon
#define VEC_ISA "neon"
#include "nn/vec_loops_kernel.h"
#else
typedef int vec_loops_neon_unused; /* ARM64 only: an empty file is not C */
#endif
