/* The Grassmann mixer's hot loops for x86-64 AVX2 and FMA
 * (mixers/grassmann_kernel.h; the Makefile compiles this file with -mavx2
 * -mfma, without AVX-512). Run only where cpu_isa() says AVX2 or above. */
#if defined(__x86_64__)
#define GRASSMANN_LOOPS grassmann_loops_avx2
#define GRASSMANN_ISA "avx2"
#include "mixers/grassmann_kernel.h"
#else
typedef int grassmann_loops_avx2_unused; /* x86 only: an empty file is not C */
#endif
