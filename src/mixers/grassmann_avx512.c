/* The Grassmann mixer's hot loops for x86-64 AVX-512F
 * (mixers/grassmann_kernel.h; the Makefile compiles this file with
 * -mavx512f). Run only where cpu_isa() says AVX-512. */
#if defined(__x86_64__)
#define GRASSMANN_LOOPS grassmann_loops_avx512
#define GRASSMANN_ISA "avx512"
#include "mixers/grassmann_kernel.h"
#else
typedef int grassmann_loops_avx512_unused; /* x86 only: an empty file is not C */
#endif
