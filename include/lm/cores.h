/* The kernel sets of the BLAS libraries this project can link, ranked by
 * the instruction set they use: the pure part of the start-up choice
 * (lm/blas_setup.h). Both libraries' tables are here in every build, so
 * the unit tests check both whichever one a build links. */
#ifndef LM_BLAS_CORES_H
#define LM_BLAS_CORES_H

#include <stddef.h>

#include "lm/cpu.h"

typedef enum BlasLevel {
    BLAS_LEVEL_UNKNOWN = 0, /* a name not in the table: never compared */
    BLAS_LEVEL_PORTABLE,    /* plain C (BLIS generic) */
    BLAS_LEVEL_SSE,         /* BLIS penryn; OpenBLAS Prescott, Core2, Nehalem, Barcelona, ... */
    BLAS_LEVEL_AVX,         /* sandybridge and the AMD Bulldozer family */
    BLAS_LEVEL_AVX2,        /* haswell, zen*; OpenBLAS Haswell, Zen */
    BLAS_LEVEL_AVX512,      /* skx, knl; OpenBLAS SkylakeX, Cooperlake, SapphireRapids */
} BlasLevel;

typedef struct BlasCoreName {
    const char *name; /* as the library spells it */
    BlasLevel level;
} BlasCoreName;

/* One library's kernel sets: what it calls them, how they are selected, and their ranking. */
typedef struct BlasCores {
    const char *library; /* "BLIS", "OpenBLAS": for messages */
    const char *kind;    /* what the library calls a kernel set: "configuration", "core" */
    const char *env_var; /* the variable the library reads once, at initialisation, to override its choice */
    const BlasCoreName *names;
    size_t n_names;
    /* The fastest kernel set for a CPU, or NULL for none worth choosing (no AVX). */
    const char *(*best_core)(const CpuFeatures *cpu);
} BlasCores;

extern const BlasCores blas_cores_blis;     /* BLIS 0.9's x86_64 configurations */
extern const BlasCores blas_cores_openblas; /* OpenBLAS 0.3.21's x86_64 cores (DYNAMIC_ARCH) */

BlasLevel blas_core_level(const BlasCores *lib, const char *core); /* case-insensitive */
/* The library's spelling of a name in its table (case-insensitive), or NULL. */
const char *blas_core_name(const BlasCores *lib, const char *core);
const char *blas_level_name(BlasLevel level); /* "AVX2", ... */

/* The fastest kernel set this CPU supports, or NULL for none worth choosing. */
const char *blas_best_core(const BlasCores *lib, const CpuFeatures *cpu);

typedef struct BlasDecision {
    const char *switch_to; /* kernel set to try instead of the library's; NULL: keep the library's */
    char reason[160];      /* why, for messages */
} BlasDecision;

/* The pure decision: the library's kernel set and the CPU's features in,
 * whether to try another one out. Only a known, strictly slower one is replaced. */
BlasDecision blas_decide(const BlasCores *lib, const char *library_core, const CpuFeatures *cpu);

#endif
