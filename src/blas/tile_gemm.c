/* Small matrix products for the attention tiles, without packing (see src/blas/tile_gemm.h), and
 * the transposition: the kernels of the run's instruction-set level. */
#include "blas/tile_gemm.h"

#include "lm/cpu.h"

/* One kernel per instruction-set level, each its own file compiled with its
 * level's flags (blas/tile_gemm_kernel.h), and the one this run uses:
 * cpu_isa()'s level. */
typedef void TileKernel(size_t m, size_t n, size_t k, float alpha, const float *a, size_t rsa, size_t csa,
                        const float *b, size_t ldb, float beta, float *c, size_t ldc);
typedef void TileTranspose(size_t rows, size_t cols, const float *src, size_t lds, float *dst, size_t ldd);
TileKernel tile_gemm_portable;
TileTranspose tile_transpose_portable;
#if defined(__x86_64__)
TileKernel tile_gemm_avx2, tile_gemm_avx512;
TileTranspose tile_transpose_avx2;
/* AVX-512's transposition is AVX2's: the same 8-float shuffles, tested on any AVX2 CPU. */
#define tile_transpose_avx512 tile_transpose_avx2
#elif defined(__aarch64__)
TileKernel tile_gemm_neon;
TileTranspose tile_transpose_neon;
#endif

static TileKernel *const kernels[CPU_ISA_COUNT] = CPU_ISA_BY_LEVEL(tile_gemm);
static TileTranspose *const transposes[CPU_ISA_COUNT] = CPU_ISA_BY_LEVEL(tile_transpose);

void tile_gemm(size_t m, size_t n, size_t k, float alpha, const float *a, size_t rsa, size_t csa, const float *b,
               size_t ldb, float beta, float *c, size_t ldc) {
    kernels[cpu_isa()](m, n, k, alpha, a, rsa, csa, b, ldb, beta, c, ldc);
}

void tile_transpose(size_t rows, size_t cols, const float *src, size_t lds, float *dst, size_t ldd) {
    transposes[cpu_isa()](rows, cols, src, lds, dst, ldd);
}
