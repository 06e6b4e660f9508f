/* The attention tiles' fp32 kernel for AVX-512F (the Makefile compiles this
 * file with -mavx512f): vectors of 16 floats, a register block of 6 rows x
 * 4 vectors (64 columns), 24 accumulators, 4 of B and a broadcast: 29 of
 * the 32 zmm registers (6 x 4 ran 10-30% faster on Zen 4 than 4 x 4 or
 * 8 x 2 at 64-128 wide tiles). Run only where cpu_isa() says AVX-512
 * (lm/cpu.h). See blas/tile_gemm_kernel.h. */
#if defined(__x86_64__)
#define TILE_KERNEL tile_gemm_avx512
#define LANES 16
#define MAX_ROWS 6
#define MAX_VECS 4
#include "blas/tile_gemm_kernel.h"
#else
typedef int tile_gemm_avx512_unused; /* x86 only: an empty file is not C */
#endif
