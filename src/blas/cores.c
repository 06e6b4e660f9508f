/* The libraries' kernel sets ranked by instruction set (see lm/cores.h). */
#include "lm/cores.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static int has_avx512_skx_set(const CpuFeatures *cpu) {
    return cpu->avx512f && cpu->avx512bw && cpu->avx512vl && cpu->avx512dq && cpu->avx512cd;
}

static int is_amd(const CpuFeatures *cpu) {
    return strcmp(cpu->vendor, "AuthenticAMD") == 0 || strcmp(cpu->vendor, "HygonGenuine") == 0;
}

/* ---- BLIS ----------------------------------------------------------------------- */

/* The x86_64 configurations of BLIS 0.9 (config_registry), by the
 * instruction set of their kernels. */
static const BlasCoreName blis_names[] = {
    {"generic", BLAS_LEVEL_PORTABLE},  {"penryn", BLAS_LEVEL_SSE},
    {"sandybridge", BLAS_LEVEL_AVX},   {"bulldozer", BLAS_LEVEL_AVX},   {"piledriver", BLAS_LEVEL_AVX},
    {"steamroller", BLAS_LEVEL_AVX},   {"excavator", BLAS_LEVEL_AVX},
    {"haswell", BLAS_LEVEL_AVX2},      {"zen", BLAS_LEVEL_AVX2},        {"zen2", BLAS_LEVEL_AVX2},
    {"zen3", BLAS_LEVEL_AVX2},
    {"skx", BLAS_LEVEL_AVX512},        {"knl", BLAS_LEVEL_AVX512},
};

static const char *blis_best_core(const CpuFeatures *cpu) {
    /* skx's kernels need AVX-512 F, DQ, BW and VL; knl (F, CD, ER, PF) is
     * never chosen: its blocking is for Xeon Phi. */
    if (has_avx512_skx_set(cpu)) return "skx";
    if (cpu->avx2 && cpu->fma) return is_amd(cpu) ? "zen3" : "haswell";
    if (cpu->avx) return "sandybridge";
    return NULL;
}

const BlasCores blas_cores_blis = {
    "BLIS", "configuration", "BLIS_ARCH_TYPE", blis_names, sizeof blis_names / sizeof blis_names[0], blis_best_core,
};

/* ---- OpenBLAS ------------------------------------------------------------------- */

/* The x86_64 core names of OpenBLAS 0.3.21 (driver/others/dynamic.c), by the
 * instruction set of the kernels that run under each. Katmai, Coppermine,
 * Northwood, Banias and Athlon are accepted by OPENBLAS_CORETYPE but run
 * Prescott's kernels. SapphireRapids is newer than 0.3.21 (which ignores it,
 * as any name it does not know): ranked for the releases that have it. */
static const BlasCoreName openblas_names[] = {
    {"Katmai", BLAS_LEVEL_SSE},         {"Coppermine", BLAS_LEVEL_SSE},   {"Northwood", BLAS_LEVEL_SSE},
    {"Prescott", BLAS_LEVEL_SSE},       {"Banias", BLAS_LEVEL_SSE},       {"Atom", BLAS_LEVEL_SSE},
    {"Core2", BLAS_LEVEL_SSE},          {"Penryn", BLAS_LEVEL_SSE},       {"Dunnington", BLAS_LEVEL_SSE},
    {"Nehalem", BLAS_LEVEL_SSE},        {"Athlon", BLAS_LEVEL_SSE},       {"Opteron", BLAS_LEVEL_SSE},
    {"Opteron_SSE3", BLAS_LEVEL_SSE},   {"Barcelona", BLAS_LEVEL_SSE},    {"Nano", BLAS_LEVEL_SSE},
    {"Bobcat", BLAS_LEVEL_SSE},
    {"Sandybridge", BLAS_LEVEL_AVX},    {"Bulldozer", BLAS_LEVEL_AVX},    {"Piledriver", BLAS_LEVEL_AVX},
    {"Steamroller", BLAS_LEVEL_AVX},    {"Excavator", BLAS_LEVEL_AVX},
    {"Haswell", BLAS_LEVEL_AVX2},       {"Zen", BLAS_LEVEL_AVX2},
    {"SkylakeX", BLAS_LEVEL_AVX512},    {"Cooperlake", BLAS_LEVEL_AVX512}, {"SapphireRapids", BLAS_LEVEL_AVX512},
};

static const char *openblas_best_core(const CpuFeatures *cpu) {
    /* SkylakeX's kernels need AVX-512 F, CD, BW, DQ and VL; Cooperlake runs
     * the same sgemm kernels and adds bfloat16 ones, and OpenBLAS itself
     * checks for AVX512-BF16 before running it. Zen and Haswell share the
     * AVX2 kernels with different blocking; Zen is what OpenBLAS picks for
     * AMD's AVX2 CPUs. */
    if (has_avx512_skx_set(cpu)) return cpu->avx512bf16 ? "Cooperlake" : "SkylakeX";
    if (cpu->avx2 && cpu->fma) return is_amd(cpu) ? "Zen" : "Haswell";
    if (cpu->avx) return "Sandybridge";
    return NULL;
}

const BlasCores blas_cores_openblas = {
    "OpenBLAS", "core", "OPENBLAS_CORETYPE", openblas_names, sizeof openblas_names / sizeof openblas_names[0],
    openblas_best_core,
};

/* ---- ranking and the decision --------------------------------------------------- */

static const BlasCoreName *find(const BlasCores *lib, const char *core) {
    if (!core) return NULL;
    for (size_t i = 0; i < lib->n_names; i++)
        if (strcasecmp(core, lib->names[i].name) == 0) return &lib->names[i];
    return NULL;
}

BlasLevel blas_core_level(const BlasCores *lib, const char *core) {
    const BlasCoreName *n = find(lib, core);
    return n ? n->level : BLAS_LEVEL_UNKNOWN;
}

const char *blas_core_name(const BlasCores *lib, const char *core) {
    const BlasCoreName *n = find(lib, core);
    return n ? n->name : NULL;
}

const char *blas_level_name(BlasLevel level) {
    static const char *names[] = {"unknown", "portable C", "SSE", "AVX", "AVX2", "AVX-512"};
    return level <= BLAS_LEVEL_AVX512 ? names[level] : names[0];
}

const char *blas_best_core(const BlasCores *lib, const CpuFeatures *cpu) { return lib->best_core(cpu); }

BlasDecision blas_decide(const BlasCores *lib, const char *library_core, const CpuFeatures *cpu) {
    BlasDecision d = {NULL, ""};
    const char *name = library_core ? library_core : "(none)";
    BlasLevel have = blas_core_level(lib, library_core);
    const char *best = blas_best_core(lib, cpu);
    if (have == BLAS_LEVEL_UNKNOWN)
        snprintf(d.reason, sizeof d.reason, "%s chose %s, a %s this program does not rank: left alone", lib->library,
                 name, lib->kind);
    else if (!best)
        snprintf(d.reason, sizeof d.reason, "this CPU has no AVX: nothing faster than %s to offer", name);
    else if (have >= blas_core_level(lib, best))
        snprintf(d.reason, sizeof d.reason, "%s (%s) is as fast as this CPU supports", name, blas_level_name(have));
    else {
        d.switch_to = best;
        snprintf(d.reason, sizeof d.reason, "%s chose %s (%s) but this CPU supports %s: %s", lib->library, name,
                 blas_level_name(have), blas_level_name(blas_core_level(lib, best)), best);
    }
    return d;
}
