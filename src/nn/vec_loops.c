/* The element-wise hot loops of this run's instruction-set level (nn/vec_loops.h). */
#include "nn/vec_loops.h"

#include "lm/cpu.h"

const VecLoops *vec_loops(void) {
    static const VecLoops *const by_level[CPU_ISA_COUNT] = CPU_ISA_BY_LEVEL(vec_loops);
    return by_level[cpu_isa()];
}
