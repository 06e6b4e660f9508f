/* The decode step's matrix-vector kernels in portable C (blas/gemv_kernel.h):
 * vectors of 4 floats, SSE2 on any x86-64 and NEON without fused
 * multiply-adds on ARM64 (the Makefile's portable flags). */
#define GEMV_LOOPS gemv_loops_portable
#define GEMV_ISA "portable"
#define LANES 4
#define VECS 2
#include "blas/gemv_kernel.h"
