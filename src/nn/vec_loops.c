/* The element-wise hot loops of this run's instruction-set level (nn/vec_loops.h). */
#include "nn/vec_loops.h"

#include <pthread.h>

#include "lm/cpu.h"

static const VecLoops *chosen = &vec_loops_portable;
static pthread_once_t chosen_once = PTHREAD_ONCE_INIT;

static void choose(void) {
#if defined(__x86_64__)
    switch (cpu_isa()) {
    case CPU_ISA_AVX512: chosen = &vec_loops_avx512; break;
    case CPU_ISA_AVX2: chosen = &vec_loops_avx2; break;
    default: chosen = &vec_loops_portable; break;
    }
#elif defined(__aarch64__)
    chosen = cpu_isa() == CPU_ISA_NEON ? &vec_loops_neon : &vec_loops_portable;
#endif
}

const VecLoops *vec_loops(void) {
    pthread_once(&chosen_once, choose);
    return chosen;
}
