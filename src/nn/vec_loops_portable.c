/* The element-wise hot loops in portable C (nn/vec_loops_kernel.h): the
 * Makefile compiles this file without AVX, so GCC vectorises them in SSE2
 * on any x86-64, in NEON on ARM64 (without fused multiply-adds there: the
 * neon level's file has them). */
#define VEC_LOOPS vec_loops_portable
#define VEC_ISA "portable"
#include "nn/vec_loops_kernel.h"
