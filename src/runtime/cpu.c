/* CPU features from CPUID and XGETBV on x86-64, from the kernel's
 * HWCAP on ARM64 (see lm/cpu.h). */
#include "lm/cpu.h"

#include <pthread.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
/* XCR0: which register states the OS saves on a context switch. */
static uint64_t read_xcr0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

static void detect_hardware(CpuFeatures *cpu) {
    memset(cpu, 0, sizeof *cpu);
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    unsigned max_leaf = __get_cpuid_max(0, NULL);
    if (max_leaf < 1) return;
    __cpuid(0, a, b, c, d);
    memcpy(cpu->vendor, &b, 4); /* the vendor string is spelled in EBX, EDX, ECX */
    memcpy(cpu->vendor + 4, &d, 4);
    memcpy(cpu->vendor + 8, &c, 4);
    cpu->vendor[12] = '\0';

    __cpuid(1, a, b, c, d);
    int osxsave = (c >> 27) & 1; /* the OS enabled XGETBV / XSAVE */
    uint64_t xcr0 = osxsave ? read_xcr0() : 0;
    int ymm_saved = (xcr0 & 0x6) == 0x6;                          /* XMM (bit 1) and YMM upper halves (bit 2) */
    int zmm_saved = ymm_saved && (xcr0 & 0xe0) == 0xe0;           /* opmask, ZMM upper halves, ZMM16-31 */
    cpu->avx = ymm_saved && ((c >> 28) & 1);
    cpu->fma = cpu->avx && ((c >> 12) & 1);
    if (max_leaf < 7) return;

    __cpuid_count(7, 0, a, b, c, d);
    cpu->avx2 = cpu->avx && ((b >> 5) & 1);
    cpu->avx512f = zmm_saved && ((b >> 16) & 1);
    cpu->avx512dq = zmm_saved && ((b >> 17) & 1);
    cpu->avx512cd = zmm_saved && ((b >> 28) & 1);
    cpu->avx512bw = zmm_saved && ((b >> 30) & 1);
    cpu->avx512vl = zmm_saved && ((b >> 31) & 1);
    if (a >= 1) { /* leaf 7 has a sub-leaf 1 */
        unsigned a1, b1, c1, d1;
        __cpuid_count(7, 1, a1, b1, c1, d1);
        cpu->avx512bf16 = zmm_saved && ((a1 >> 5) & 1);
    }
#elif defined(__aarch64__)
    cpu->neon = (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
#endif
}

/* ---- LM_TEST_CPU_HIDE ------------------------------------------------------------- */

static const struct {
    const char *name;
    size_t offset;
} flag_names[] = {
    {"avx", offsetof(CpuFeatures, avx)},           {"avx2", offsetof(CpuFeatures, avx2)},
    {"fma", offsetof(CpuFeatures, fma)},           {"avx512f", offsetof(CpuFeatures, avx512f)},
    {"avx512bw", offsetof(CpuFeatures, avx512bw)}, {"avx512vl", offsetof(CpuFeatures, avx512vl)},
    {"avx512dq", offsetof(CpuFeatures, avx512dq)}, {"avx512cd", offsetof(CpuFeatures, avx512cd)},
    {"avx512bf16", offsetof(CpuFeatures, avx512bf16)}, {"neon", offsetof(CpuFeatures, neon)},
};
#define N_FLAGS (sizeof flag_names / sizeof flag_names[0])

static bool *flag(CpuFeatures *cpu, size_t i) { return (bool *)((char *)cpu + flag_names[i].offset); }

static CpuFeatures hidden; /* true: reported absent */
static pthread_once_t hidden_once = PTHREAD_ONCE_INIT;

static const char *const isa_names[CPU_ISA_COUNT] = {"portable", "avx2", "avx512", "neon"};
#define N_ISA ((size_t)CPU_ISA_COUNT)

/* The levels of this build's architecture (in CpuIsa's order, lowest first). */
static bool on_this_arch(int isa) {
#if defined(__x86_64__)
    return isa == CPU_ISA_PORTABLE || isa == CPU_ISA_AVX2 || isa == CPU_ISA_AVX512;
#elif defined(__aarch64__)
    return isa == CPU_ISA_PORTABLE || isa == CPU_ISA_NEON;
#else
    return isa == CPU_ISA_PORTABLE;
#endif
}

/* A cap's value as a level's index: -1 for none (NULL or empty), N_ISA for
 * a name that is no level. */
static int parse_cap(const char *cap) {
    if (!cap || !*cap) return -1;
    for (size_t i = 0; i < N_ISA; i++)
        if (strcmp(cap, isa_names[i]) == 0) return (int)i;
    return (int)N_ISA;
}

/* LM_MAX_ISA, parsed. */
static int isa_cap = -1;

static void read_hidden(void) {
    isa_cap = parse_cap(getenv("LM_MAX_ISA"));
    const char *list = getenv("LM_TEST_CPU_HIDE");
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        for (size_t i = 0; i < N_FLAGS; i++)
            if (strlen(flag_names[i].name) == len && strncmp(p, flag_names[i].name, len) == 0) *flag(&hidden, i) = true;
        p += len + (p[len] == ',');
    }
}

/* The hardware with LM_TEST_CPU_HIDE's flags hidden, and what needs them. */
static void detect_visible(CpuFeatures *cpu) {
    detect_hardware(cpu);
    pthread_once(&hidden_once, read_hidden);
    for (size_t i = 0; i < N_FLAGS; i++)
        if (*flag(&hidden, i)) *flag(cpu, i) = false;
    if (!cpu->avx) cpu->avx2 = cpu->fma = cpu->avx512f = false; /* what the hardware check does without them */
    if (!cpu->avx512f) cpu->avx512bw = cpu->avx512vl = cpu->avx512dq = cpu->avx512cd = cpu->avx512bf16 = false;
}

static CpuIsa level_of(const CpuFeatures *cpu) {
#if defined(__x86_64__)
    if (cpu->avx512f && cpu->avx2 && cpu->fma) return CPU_ISA_AVX512;
    if (cpu->avx2 && cpu->fma) return CPU_ISA_AVX2;
#elif defined(__aarch64__)
    if (cpu->neon) return CPU_ISA_NEON;
#else
    (void)cpu;
#endif
    return CPU_ISA_PORTABLE;
}

/* Hides the features above the cap, where the CPU has that level (else the
 * cap counts as none: cpu_isa_check refuses it). */
static void apply_cap(CpuFeatures *cpu, int cap) {
    if (!(cap >= 0 && cap < (int)N_ISA && on_this_arch(cap) && cap <= (int)level_of(cpu))) return;
    if (cap == CPU_ISA_PORTABLE) cpu->avx = cpu->neon = false;
    if (cap == CPU_ISA_PORTABLE || cap == CPU_ISA_AVX2) cpu->avx512f = false;
    if (!cpu->avx) cpu->avx2 = cpu->fma = cpu->avx512f = false;
    if (!cpu->avx512f) cpu->avx512bw = cpu->avx512vl = cpu->avx512dq = cpu->avx512cd = cpu->avx512bf16 = false;
}

void cpu_features_detect(CpuFeatures *cpu) {
    detect_visible(cpu);
    apply_cap(cpu, isa_cap);
}

/* The level and bf16 for these features under this cap (an index or -1). */
static CpuChoice choose(const CpuFeatures *cpu, int cap) {
    CpuFeatures capped = *cpu;
    apply_cap(&capped, cap);
    CpuIsa isa = level_of(&capped);
    return (CpuChoice){isa, isa == CPU_ISA_AVX512 && capped.avx512bf16 && capped.avx512bw && capped.avx512vl};
}

CpuChoice cpu_choose(const CpuFeatures *cpu, const char *max_isa) { return choose(cpu, parse_cap(max_isa)); }

CpuIsa cpu_isa_hardware(void) {
    CpuFeatures cpu;
    detect_visible(&cpu);
    return level_of(&cpu);
}

static CpuChoice in_use;
static pthread_once_t choice_once = PTHREAD_ONCE_INIT;

static void find_choice(void) {
    CpuFeatures cpu;
    detect_visible(&cpu); /* reads LM_MAX_ISA */
    in_use = choose(&cpu, isa_cap);
}

CpuIsa cpu_isa(void) {
    pthread_once(&choice_once, find_choice);
    return in_use.isa;
}

bool cpu_bf16(void) {
    pthread_once(&choice_once, find_choice);
    return in_use.bf16;
}

const char *cpu_isa_name(CpuIsa isa) { return (size_t)isa < N_ISA ? isa_names[isa] : "?"; }

bool cpu_isa_runs(CpuIsa isa) { return (size_t)isa < N_ISA && on_this_arch((int)isa) && isa <= cpu_isa_hardware(); }

int cpu_isa_check(Error *err) {
    CpuIsa hardware = cpu_isa_hardware(); /* reads LM_MAX_ISA */
    if (isa_cap == (int)N_ISA)
        return err_set(err, "LM_MAX_ISA=%s: not a level (portable, avx2, avx512 or neon)", getenv("LM_MAX_ISA"));
    if (isa_cap >= 0 && !cpu_isa_runs((CpuIsa)isa_cap))
        return err_set(err, "LM_MAX_ISA=%s: this CPU does not run it (its best level is %s)", isa_names[isa_cap],
                       isa_names[hardware]);
    return 0;
}

const char *cpu_isa_describe(void) {
    static char text[96];
    CpuIsa hardware = cpu_isa_hardware(), in_use = cpu_isa();
    if (in_use < hardware)
        snprintf(text, sizeof text, "%s (LM_MAX_ISA; this CPU has %s)", isa_names[in_use], isa_names[hardware]);
    else snprintf(text, sizeof text, "%s", isa_names[in_use]);
    return text;
}
