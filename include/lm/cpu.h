/* What this CPU can run, from CPUID (x86-64) or the kernel's HWCAP (ARM64):
 * the vector instruction sets the kernels may use. */
#ifndef LM_CPU_H
#define LM_CPU_H

#include <stdbool.h>

#include "lm/error.h"

/* What the CPU can run. A flag is set only if the OS also saves the
 * registers it needs (XCR0), since otherwise the instructions fault. */
typedef struct CpuFeatures {
    char vendor[13]; /* "GenuineIntel", "AuthenticAMD", ... ("" if unknown) */
    bool avx, avx2, fma;
    bool avx512f, avx512bw, avx512vl, avx512dq, avx512cd;
    bool avx512bf16; /* bfloat16 dot products: OpenBLAS's Cooperlake kernels check for it */
    bool neon;       /* ARM64 Advanced SIMD (HWCAP_ASIMD; every ARM64 Linux has it) */
} CpuFeatures;

/* Fills cpu. Test hook: LM_TEST_CPU_HIDE, a comma-separated list of the
 * flags' names above (e.g. "avx512bf16"), makes detection report those
 * absent, as on a CPU without them, so that the paths taken there can be
 * tested here (tests/cli/cli_test.sh: bin/train --precision bf16's refusal).
 * Hiding avx or avx512f hides what needs it too; names not listed above are
 * ignored. Read once, at the first call. */
void cpu_features_detect(CpuFeatures *cpu);

/* ---- Instruction-set levels of our own kernels ------------------------------------
 *
 * The levels our kernels are built at (the attention tiles: one file per
 * level, each compiled with its level's flags) and run at:
 *   portable  C with 4-float vectors (SSE2 on x86-64, NEON on ARM64), each
 *             product and sum rounded separately (no FMA on either);
 *   avx2      x86-64 AVX2 and FMA (x86-64-v3's vector part);
 *   avx512    x86-64 AVX-512F;
 *   neon      ARM64 Advanced SIMD with its fused multiply-add, register
 *             blocks for its 32 vector registers.
 * An x86-64 CPU runs portable, avx2, avx512; an ARM64 one portable, neon
 * (other CPUs portable only). A run uses the highest level the CPU has, or
 * lower: LM_MAX_ISA=portable, avx2, avx512 or neon caps it (as oneDNN's
 * ONEDNN_MAX_CPU_ISA caps oneDNN's), so that any machine runs and tests the
 * levels below its own. The cap also hides the features above it from
 * cpu_features_detect (LM_MAX_ISA=avx2: no AVX-512, so no bf16 kernels
 * either; portable: no AVX or NEON at all), so that everything that asks
 * the CPU sees the capped one. Read once, at the first call; an empty
 * LM_MAX_ISA counts as unset.
 * AVX512_BF16 is no level of its own but a capability within avx512's
 * (cpu_bf16): the bf16 kernels (blas/bf16_loops.h) have a second avx512
 * table for it, and a cap below avx512 turns it off with the rest. */
typedef enum CpuIsa { CPU_ISA_PORTABLE, CPU_ISA_AVX2, CPU_ISA_AVX512, CPU_ISA_NEON, CPU_ISA_COUNT } CpuIsa;

/* The level our kernels run at: the CPU's best, capped by LM_MAX_ISA (a
 * cap cpu_isa_check refuses counts as absent here). Found at the first call
 * and kept: the kernels' choosers ask for it on every call, and CPUID is a
 * trap to the hypervisor in a virtual machine. */
CpuIsa cpu_isa(void);

/* A module's kernels for every level, as an array indexed by CpuIsa, for
 * cpu_isa() to pick from: NAME_portable, NAME_avx2 and NAME_avx512 on
 * x86-64, NAME_neon on ARM64, the portable one for the levels the
 * architecture lacks (cpu_isa() never names those). E.g.
 *   static const VecLoops *const by_level[CPU_ISA_COUNT] = CPU_ISA_BY_LEVEL(vec_loops);
 *   return by_level[cpu_isa()];
 * so that a module lists its levels once, by its kernels' names. */
#if defined(__x86_64__)
#define CPU_ISA_BY_LEVEL(name)                                                                      \
    {[CPU_ISA_PORTABLE] = &name##_portable, [CPU_ISA_AVX2] = &name##_avx2, [CPU_ISA_AVX512] = &name##_avx512, \
     [CPU_ISA_NEON] = &name##_portable}
#elif defined(__aarch64__)
#define CPU_ISA_BY_LEVEL(name)                                                                          \
    {[CPU_ISA_PORTABLE] = &name##_portable, [CPU_ISA_AVX2] = &name##_portable, [CPU_ISA_AVX512] = &name##_portable, \
     [CPU_ISA_NEON] = &name##_neon}
#else
#define CPU_ISA_BY_LEVEL(name)                                                                              \
    {[CPU_ISA_PORTABLE] = &name##_portable, [CPU_ISA_AVX2] = &name##_portable, [CPU_ISA_AVX512] = &name##_portable, \
     [CPU_ISA_NEON] = &name##_portable}
#endif

/* Whether the run's kernels use AVX512_BF16 (with AVX512BW and VL): the
 * level in use is avx512 and the CPU has them. Found with cpu_isa(). */
bool cpu_bf16(void);

/* What cpu_isa() and cpu_bf16() answer, as a function of what they are
 * found from: the CPU's features (as detected, before the cap) and
 * LM_MAX_ISA's value (NULL or "" for none; one that names no level, or a
 * level this CPU lacks, counts as none, as cpu_isa_check refuses it).
 * Pure: tests ask it about CPUs and caps other than the machine's. */
typedef struct CpuChoice {
    CpuIsa isa;
    bool bf16;
} CpuChoice;
CpuChoice cpu_choose(const CpuFeatures *cpu, const char *max_isa);

/* The CPU's best level, without the cap. */
CpuIsa cpu_isa_hardware(void);

const char *cpu_isa_name(CpuIsa isa);

/* Whether this CPU runs the level: one of its architecture's, at or below
 * its best (bin/gemm-rate --isa-levels lists them, lowest first). */
bool cpu_isa_runs(CpuIsa isa);

/* LM_MAX_ISA as the programs take it: 0 if unset, empty, or a level this
 * CPU has; -1 with one line in err if it names no level or one this CPU
 * lacks (the programs refuse to start rather than die of SIGILL). */
int cpu_isa_check(Error *err);

/* For the start-up line: the level in use, and the cap if one lowered it,
 * e.g. "avx2" or "portable (LM_MAX_ISA; this CPU has avx2)". */
const char *cpu_isa_describe(void);

#endif
