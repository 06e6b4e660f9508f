/* The attention tiles' fp32 kernel for ARM64 Advanced SIMD (NEON), which
 * every ARM64 CPU has: vectors of 4 floats and fused multiply-adds, a
 * register block of 5 rows x 4 vectors (16 columns). GCC loads each row's
 * entry of A into a register of its own and multiplies by its lane (fmla
 * by element), so a step holds 20 accumulators, 4 vectors of B and 5 of A:
 * 29 of the 32 v registers, no spills in the loop over k
 * (aarch64-linux-gnu-objdump: 4 + 5 loads, 20 fmla, no stack access
 * between the loop's label and its branch). AVX-512's 6 x 4 needs 34 and
 * spilled two accumulators there. Fused like avx2 and avx512, and in the
 * same order along k, so its tiles agree with theirs bit for bit. Run only
 * where cpu_isa() says neon (lm/cpu.h). See blas/tile_gemm_kernel.h. */
#if defined(__aarch64__)
#define TILE_KERNEL tile_gemm_neon
#define TILE_TRANSPOSE tile_transpose_neon
#define LANES 4
#define MAX_ROWS 5
#define MAX_VECS 4
#include "blas/tile_gemm_kernel.h"
#else
typedef int tile_gemm_neon_unused; /* ARM64 only: an empty file is not C */
#endif
