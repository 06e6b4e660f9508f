/* Unit tests of the BLAS kernel choice: the decision tables of both libraries
 * (whichever one this build links) and the probe's sgemm check. */
#include "testutil.h"

#include <omp.h>

#include "blas/backend.h"
#include "lm/gemm.h"
#include "lm/blas_setup.h"
#include "blas/kernel_check.h"
#include "lm/threads.h"

/* CPUs as CPUID describes them. */
static CpuFeatures cpu_sse_only(void) {
    CpuFeatures c = {.vendor = "GenuineIntel"};
    return c;
}

static CpuFeatures cpu_avx2(const char *vendor) {
    CpuFeatures c = {.avx = true, .avx2 = true, .fma = true};
    snprintf(c.vendor, sizeof c.vendor, "%s", vendor);
    return c;
}

static CpuFeatures cpu_avx512(const char *vendor) {
    CpuFeatures c = cpu_avx2(vendor);
    c.avx512f = c.avx512bw = c.avx512vl = c.avx512dq = c.avx512cd = true;
    return c;
}

static CpuFeatures cpu_avx512_bf16(const char *vendor) {
    CpuFeatures c = cpu_avx512(vendor);
    c.avx512bf16 = true;
    return c;
}

static void expect_switch_in(const BlasCores *lib, const char *library_core, CpuFeatures cpu, const char *want) {
    BlasDecision d = blas_decide(lib, library_core, &cpu);
    if (want) {
        assert_non_null(d.switch_to);
        assert_string_equal(d.switch_to, want);
    } else {
        if (d.switch_to) fail_msg("%s: switched to %s (%s)", library_core ? library_core : "(null)", d.switch_to, d.reason);
    }
    assert_true(strlen(d.reason) > 0);
}

static void expect_switch(const char *library_core, CpuFeatures cpu, const char *want) {
    expect_switch_in(&blas_cores_blis, library_core, cpu, want);
}

static void test_levels(void **state) {
    (void)state;
    assert_int_equal(blas_core_level(&blas_cores_blis, "generic"), BLAS_LEVEL_PORTABLE);
    assert_int_equal(blas_core_level(&blas_cores_blis, "penryn"), BLAS_LEVEL_SSE);
    assert_int_equal(blas_core_level(&blas_cores_blis, "Penryn"), BLAS_LEVEL_SSE); /* case-insensitive */
    assert_int_equal(blas_core_level(&blas_cores_blis, "sandybridge"), BLAS_LEVEL_AVX);
    assert_int_equal(blas_core_level(&blas_cores_blis, "excavator"), BLAS_LEVEL_AVX);
    assert_int_equal(blas_core_level(&blas_cores_blis, "zen3"), BLAS_LEVEL_AVX2);
    assert_int_equal(blas_core_level(&blas_cores_blis, "haswell"), BLAS_LEVEL_AVX2);
    assert_int_equal(blas_core_level(&blas_cores_blis, "skx"), BLAS_LEVEL_AVX512);
    assert_int_equal(blas_core_level(&blas_cores_blis, "knl"), BLAS_LEVEL_AVX512);
    assert_int_equal(blas_core_level(&blas_cores_blis, "Unknown"), BLAS_LEVEL_UNKNOWN);
    assert_int_equal(blas_core_level(&blas_cores_blis, "cortexa57"), BLAS_LEVEL_UNKNOWN);
    assert_int_equal(blas_core_level(&blas_cores_blis, NULL), BLAS_LEVEL_UNKNOWN);
}

static void test_best_core(void **state) {
    (void)state;
    CpuFeatures c = cpu_sse_only();
    assert_null(blas_best_core(&blas_cores_blis, &c));
    c.avx = true;
    assert_string_equal(blas_best_core(&blas_cores_blis, &c), "sandybridge");
    c = cpu_avx2("AuthenticAMD");
    assert_string_equal(blas_best_core(&blas_cores_blis, &c), "zen3");
    c = cpu_avx2("GenuineIntel");
    assert_string_equal(blas_best_core(&blas_cores_blis, &c), "haswell");
    c.fma = false; /* AVX2 without FMA is not enough for the haswell kernels */
    assert_string_equal(blas_best_core(&blas_cores_blis, &c), "sandybridge");
    c = cpu_avx512("GenuineIntel");
    assert_string_equal(blas_best_core(&blas_cores_blis, &c), "skx");
    c = cpu_avx512("AuthenticAMD"); /* Zen 4 and 5 */
    assert_string_equal(blas_best_core(&blas_cores_blis, &c), "skx");
    c.avx512cd = false; /* an incomplete AVX-512 set */
    assert_string_equal(blas_best_core(&blas_cores_blis, &c), "zen3");
}

static void test_decisions(void **state) {
    (void)state;
    /* The case: BLIS 0.9 does not know Zen 5 (family 26) and runs its portable kernels. */
    expect_switch("generic", cpu_avx512("AuthenticAMD"), "skx");
    /* Zen 4 (AVX-512) where the library picks its AVX2 zen3 kernels. */
    expect_switch("zen3", cpu_avx512("AuthenticAMD"), "skx");
    expect_switch("penryn", cpu_avx512("GenuineIntel"), "skx");
    expect_switch("sandybridge", cpu_avx2("AuthenticAMD"), "zen3");
    expect_switch("generic", cpu_avx2("GenuineIntel"), "haswell");
    /* Already as fast as the CPU allows: same level is not worth a restart. */
    expect_switch("haswell", cpu_avx2("AuthenticAMD"), NULL);
    expect_switch("zen2", cpu_avx2("GenuineIntel"), NULL);
    expect_switch("skx", cpu_avx512("GenuineIntel"), NULL);
    expect_switch("SKX", cpu_avx512("AuthenticAMD"), NULL);
    expect_switch("knl", cpu_avx512("GenuineIntel"), NULL);
    /* Never downgrade, even if the library's choice looks too high for the CPU. */
    expect_switch("skx", cpu_avx2("GenuineIntel"), NULL);
    /* Names this program does not rank are left alone. */
    expect_switch("Unknown", cpu_avx512("GenuineIntel"), NULL);
    expect_switch("cortexa57", cpu_avx512("GenuineIntel"), NULL);
    expect_switch(NULL, cpu_avx512("GenuineIntel"), NULL);
    /* Nothing better to offer an SSE-only CPU. */
    expect_switch("generic", cpu_sse_only(), NULL);
    expect_switch("penryn", cpu_sse_only(), NULL);
}

/* OpenBLAS 0.3.21's cores, ranked the same way. */
static void test_openblas_levels(void **state) {
    (void)state;
    const BlasCores *ob = &blas_cores_openblas;
    const char *sse[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Opteron", "Barcelona", "Katmai"};
    for (size_t i = 0; i < sizeof sse / sizeof sse[0]; i++) assert_int_equal(blas_core_level(ob, sse[i]), BLAS_LEVEL_SSE);
    const char *avx[] = {"Sandybridge", "Bulldozer", "Piledriver", "Steamroller", "Excavator"};
    for (size_t i = 0; i < sizeof avx / sizeof avx[0]; i++) assert_int_equal(blas_core_level(ob, avx[i]), BLAS_LEVEL_AVX);
    assert_int_equal(blas_core_level(ob, "Haswell"), BLAS_LEVEL_AVX2);
    assert_int_equal(blas_core_level(ob, "ZEN"), BLAS_LEVEL_AVX2); /* case-insensitive, as OPENBLAS_CORETYPE is read */
    assert_int_equal(blas_core_level(ob, "SkylakeX"), BLAS_LEVEL_AVX512);
    assert_int_equal(blas_core_level(ob, "cooperlake"), BLAS_LEVEL_AVX512);
    assert_int_equal(blas_core_level(ob, "SapphireRapids"), BLAS_LEVEL_AVX512);
    /* The other library's names, and names no library has, are not ranked. */
    assert_int_equal(blas_core_level(ob, "skx"), BLAS_LEVEL_UNKNOWN);
    assert_int_equal(blas_core_level(ob, "generic"), BLAS_LEVEL_UNKNOWN);
    assert_int_equal(blas_core_level(ob, "Unknown"), BLAS_LEVEL_UNKNOWN);
    assert_int_equal(blas_core_level(ob, NULL), BLAS_LEVEL_UNKNOWN);
    assert_int_equal(blas_core_level(&blas_cores_blis, "Cooperlake"), BLAS_LEVEL_UNKNOWN);
    /* The library's own spelling, for OPENBLAS_CORETYPE. */
    assert_string_equal(blas_core_name(ob, "skylakex"), "SkylakeX");
    assert_null(blas_core_name(ob, "nosuchcpu"));
    assert_string_equal(ob->env_var, "OPENBLAS_CORETYPE");
    assert_string_equal(blas_cores_blis.env_var, "BLIS_ARCH_TYPE");
}

static void test_openblas_best_core(void **state) {
    (void)state;
    const BlasCores *ob = &blas_cores_openblas;
    CpuFeatures c = cpu_sse_only();
    assert_null(blas_best_core(ob, &c));
    c.avx = true;
    assert_string_equal(blas_best_core(ob, &c), "Sandybridge");
    c = cpu_avx2("GenuineIntel");
    assert_string_equal(blas_best_core(ob, &c), "Haswell");
    c = cpu_avx2("AuthenticAMD"); /* Zen 2 and 3 */
    assert_string_equal(blas_best_core(ob, &c), "Zen");
    c.fma = false;
    assert_string_equal(blas_best_core(ob, &c), "Sandybridge");
    c = cpu_avx512("GenuineIntel"); /* Skylake-SP */
    assert_string_equal(blas_best_core(ob, &c), "SkylakeX");
    c = cpu_avx512_bf16("AuthenticAMD"); /* Zen 4 and 5 */
    assert_string_equal(blas_best_core(ob, &c), "Cooperlake");
    c.avx512dq = false; /* an incomplete AVX-512 set */
    assert_string_equal(blas_best_core(ob, &c), "Zen");
}

static void test_openblas_decisions(void **state) {
    (void)state;
    const BlasCores *ob = &blas_cores_openblas;
    /* The fallback of a release older than the CPU. */
    expect_switch_in(ob, "Prescott", cpu_avx512_bf16("AuthenticAMD"), "Cooperlake");
    expect_switch_in(ob, "Prescott", cpu_avx512("GenuineIntel"), "SkylakeX");
    expect_switch_in(ob, "Haswell", cpu_avx512("GenuineIntel"), "SkylakeX");
    expect_switch_in(ob, "Zen", cpu_avx512_bf16("AuthenticAMD"), "Cooperlake");
    expect_switch_in(ob, "Sandybridge", cpu_avx2("AuthenticAMD"), "Zen");
    expect_switch_in(ob, "Nehalem", cpu_avx2("GenuineIntel"), "Haswell");
    /* The same level is not worth a restart: SkylakeX and Cooperlake share their sgemm kernels. */
    expect_switch_in(ob, "SkylakeX", cpu_avx512_bf16("AuthenticAMD"), NULL);
    expect_switch_in(ob, "Cooperlake", cpu_avx512("GenuineIntel"), NULL);
    expect_switch_in(ob, "Haswell", cpu_avx2("AuthenticAMD"), NULL);
    expect_switch_in(ob, "Zen", cpu_avx2("AuthenticAMD"), NULL);
    /* Never downgrade; unranked names (BLIS's among them) are left alone; nothing for SSE-only CPUs. */
    expect_switch_in(ob, "SkylakeX", cpu_avx2("GenuineIntel"), NULL);
    expect_switch_in(ob, "skx", cpu_avx512("GenuineIntel"), NULL);
    expect_switch_in(ob, "ARMV8", cpu_avx512("GenuineIntel"), NULL);
    expect_switch_in(ob, NULL, cpu_avx512("GenuineIntel"), NULL);
    expect_switch_in(ob, "Prescott", cpu_sse_only(), NULL);
}

/* The linked library's table is one of the two, and knows the kernels in use. */
static void test_backend(void **state) {
    (void)state;
    const BlasCores *lib = blas_backend_cores();
    assert_true(lib == &blas_cores_blis || lib == &blas_cores_openblas);
    assert_non_null(strstr(blas_backend_version(), lib->library));
    char value[64];
#if defined(__x86_64__)
    assert_non_null(blas_core_name(lib, blas_backend_core()));
    assert_int_equal(blas_backend_select_value(blas_backend_core(), value, sizeof value), 0);
    assert_true(value[0] != '\0');
#else /* other architectures' kernels are not ranked: the library's choice is left alone */
    CpuFeatures cpu;
    cpu_features_detect(&cpu);
    assert_null(blas_decide(lib, blas_backend_core(), &cpu).switch_to);
#endif
    assert_int_equal(blas_backend_select_value("nosuchcpu", value, sizeof value), -1);
}

/* The detected features are self-consistent (whatever this machine is). */
static void test_detect(void **state) {
    (void)state;
    CpuFeatures c;
    cpu_features_detect(&c);
    if (c.avx2) assert_true(c.avx);
    if (c.avx512f) assert_true(c.avx);
    if (c.avx512bf16) assert_true(c.avx512f);
    if (getenv("VERBOSE"))
        printf("  cpu %s: avx %d avx2 %d fma %d avx512 f%d bw%d vl%d dq%d cd%d -> best %s\n", c.vendor, c.avx, c.avx2,
               c.fma, c.avx512f, c.avx512bw, c.avx512vl, c.avx512dq, c.avx512cd,
               blas_best_core(blas_backend_cores(), &c) ? blas_best_core(blas_backend_cores(), &c) : "none");
}

static void expect_choice(const CpuFeatures *cpu, const char *max_isa, CpuIsa isa, bool bf16) {
    CpuChoice c = cpu_choose(cpu, max_isa);
    if (c.isa != isa || c.bf16 != bf16)
        fail_msg("LM_MAX_ISA=%s: %s%s, want %s%s", max_isa ? max_isa : "(unset)", cpu_isa_name(c.isa),
                 c.bf16 ? " with bf16" : "", cpu_isa_name(isa), bf16 ? " with bf16" : "");
}

/* The level and the bf16 capability chosen for a CPU under a cap
 * (cpu_choose): AVX512_BF16 only within the avx512 level, so that a cap
 * below it turns bf16 off; a cap the CPU lacks, or one that is no level of
 * the architecture, counts as none (the programs refuse it at start-up).
 * Then this run's choice is the chooser's for this CPU and LM_MAX_ISA. */
static void test_level_choice(void **state) {
    (void)state;
#if defined(__x86_64__)
    CpuFeatures bf16 = cpu_avx512_bf16("GenuineIntel"), avx512 = cpu_avx512("AuthenticAMD");
    CpuFeatures avx2 = cpu_avx2("AuthenticAMD"), sse = cpu_sse_only(), no_vl = bf16;
    no_vl.avx512vl = false;
    expect_choice(&bf16, NULL, CPU_ISA_AVX512, true);
    expect_choice(&bf16, "", CPU_ISA_AVX512, true);
    expect_choice(&bf16, "avx512", CPU_ISA_AVX512, true);
    expect_choice(&bf16, "avx2", CPU_ISA_AVX2, false);
    expect_choice(&bf16, "portable", CPU_ISA_PORTABLE, false);
    expect_choice(&bf16, "neon", CPU_ISA_AVX512, true);
    expect_choice(&bf16, "avx1024", CPU_ISA_AVX512, true);
    expect_choice(&no_vl, NULL, CPU_ISA_AVX512, false);
    expect_choice(&avx512, NULL, CPU_ISA_AVX512, false);
    expect_choice(&avx512, "avx2", CPU_ISA_AVX2, false);
    expect_choice(&avx2, NULL, CPU_ISA_AVX2, false);
    expect_choice(&avx2, "avx512", CPU_ISA_AVX2, false);
    expect_choice(&avx2, "portable", CPU_ISA_PORTABLE, false);
    expect_choice(&sse, NULL, CPU_ISA_PORTABLE, false);
#elif defined(__aarch64__)
    CpuFeatures neon = {.neon = true}, x86 = cpu_avx512_bf16("GenuineIntel");
    expect_choice(&neon, NULL, CPU_ISA_NEON, false);
    expect_choice(&neon, "portable", CPU_ISA_PORTABLE, false);
    expect_choice(&neon, "avx2", CPU_ISA_NEON, false);
    expect_choice(&x86, NULL, CPU_ISA_PORTABLE, false);
#endif
    CpuFeatures here;
    cpu_features_detect(&here);
    CpuChoice c = cpu_choose(&here, getenv("LM_MAX_ISA"));
    assert_int_equal(c.isa, cpu_isa());
    assert_int_equal(c.bf16, cpu_bf16());
}

static void test_gemm_error_by_hand(void **state) {
    (void)state;
    /* [1 2; 3 4] [5 6; 7 8] = [19 22; 43 50] */
    float a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8}, c0[] = {1, -1, 0.5f, 0};
    double want[4];
    blas_reference_gemm(2, 2, 2, a, b, want);
    assert_true(want[0] == 19 && want[1] == 22 && want[2] == 43 && want[3] == 50);
    float got[] = {19, 22, 43, 50};
    assert_true(blas_gemm_error(4, got, want, 1.0f, 0.0f, NULL) == 0.0);
    float got_beta[] = {20, 21, 43.5f, 50};
    assert_true(blas_gemm_error(4, got_beta, want, 1.0f, 1.0f, c0) == 0.0);
    got[1] = 22.5f; /* off by 0.5 against a largest entry of 50 */
    assert_true(fabs(blas_gemm_error(4, got, want, 1.0f, 0.0f, NULL) - 0.01) < 1e-12);
    got[1] = NAN;
    assert_true(isinf(blas_gemm_error(4, got, want, 1.0f, 0.0f, NULL)));
}

/* A real sgemm result passes; one entry off by a little more than round-off fails. */
static void test_gemm_error_sgemm(void **state) {
    (void)state;
    size_t m = 97, n = 83, k = 61;
    float *a = rand_tensor(m * k, 1.0f, 1), *b = rand_tensor(k * n, 1.0f, 2), *c = zeros(m * n);
    double *want = malloc(m * n * sizeof *want);
    blas_reference_gemm(m, n, k, a, b, want);
    gemm(0, 0, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
    double e = blas_gemm_error(m * n, c, want, 1.0f, 0.0f, NULL);
    assert_true(e < BLAS_PROBE_TOLERANCE);
    double scale = 0.0;
    for (size_t i = 0; i < m * n; i++) scale = fmax(scale, fabs(want[i]));
    c[m * n / 2] += (float)(1e-4 * scale);
    e = blas_gemm_error(m * n, c, want, 1.0f, 0.0f, NULL);
    assert_true(e > BLAS_PROBE_TOLERANCE);
    free(a), free(b), free(c), free(want);
}

/* The whole probe passes with the library's own kernels, and fails when perturbed. */
static void test_probe(void **state) {
    (void)state;
    double worst = -1.0;
    assert_int_equal(blas_probe_gemm(false, &worst), 0);
    assert_true(worst >= 0.0 && worst <= BLAS_PROBE_TOLERANCE);
    if (getenv("VERBOSE")) printf("  probe max relative error %.2e\n", worst);
    assert_int_equal(blas_probe_gemm(true, &worst), -1);
    assert_true(worst > 1e-3);
}

/* One row (sampling) goes through gemv: every form, beta 0 over NaN and beta 1, padded rows. */
static void test_gemm_one_row(void **state) {
    (void)state;
    size_t n = 37, k = 29, lda = 3, ldb_n = n + 4, ldb_t = k + 2;
    float *a = rand_tensor(k * lda, 1.0f, 11), *b = rand_tensor(k * ldb_n, 1.0f, 12), *bt = rand_tensor(n * ldb_t, 1.0f, 13);
    float a_row[29], b_plain[29 * 37], c0[37], c[37];
    double want[37];
    for (int trans_a = 0; trans_a <= 1; trans_a++)
        for (int trans_b = 0; trans_b <= 1; trans_b++)
            for (int with_beta = 0; with_beta <= 1; with_beta++) {
                for (size_t p = 0; p < k; p++) a_row[p] = trans_a ? a[p * lda] : a[p];
                for (size_t p = 0; p < k; p++)
                    for (size_t j = 0; j < n; j++) b_plain[p * n + j] = trans_b ? bt[j * ldb_t + p] : b[p * ldb_n + j];
                blas_reference_gemm(1, n, k, a_row, b_plain, want);
                for (size_t j = 0; j < n; j++) c0[j] = c[j] = with_beta ? 0.5f * (float)j : NAN;
                gemm_serial(trans_a, trans_b, 1, n, k, 0.5f, a, trans_a ? lda : k, trans_b ? bt : b,
                            trans_b ? ldb_t : ldb_n, (float)with_beta, c, n);
                double e = blas_gemm_error(n, c, want, 0.5f, (float)with_beta, c0);
                if (!(e < 1e-6)) fail_msg("trans_a %d trans_b %d beta %d: relative error %.2e", trans_a, trans_b, with_beta, e);
            }
    free(a), free(b), free(bt);
}

/* One row (decoding a token) is cut by columns across the width: each tile
 * a gemv over its own rows of the weights; the same bits on 1 and 2 threads,
 * the single call's values; a row too small to share stays whole. */
static void test_gemm_one_row_tiles(void **state) {
    (void)state;
    size_t n = 4099, k = 96;
    float *a = rand_tensor(k, 1.0f, 31), *w = rand_tensor(n * k, 1.0f, 32);
    float *one = zeros(n), *two = zeros(n), *whole = zeros(n);
    threads_set_width(2);
    TileGrid g = gemm_tile_grid(1, n, k);
    assert_int_equal(g.tiles_m, 1);
    assert_int_equal(g.tiles_n, 2);
    TileGrid tiny = gemm_tile_grid(1, 64, 64);
    assert_int_equal(tiny.tiles_m * tiny.tiles_n, 1);
    omp_set_num_threads(1);
    gemm(0, 1, 1, n, k, 1.0f, a, k, w, k, 0.0f, one, n);
    omp_set_num_threads(2);
    gemm(0, 1, 1, n, k, 1.0f, a, k, w, k, 0.0f, two, n);
    assert_memory_equal(one, two, n * sizeof *one);
    gemm_serial(0, 1, 1, n, k, 1.0f, a, k, w, k, 0.0f, whole, n);
    for (size_t j = 0; j < n; j++) assert_float_equal(one[j], whole[j], 1e-5f * (1.0f + fabsf(whole[j])));
    threads_set_width(0);
    free(a), free(w), free(one), free(two), free(whole);
}

/* A product called outside any parallel region (the sampler's) runs on the
 * calling thread alone and leaves the program's thread setting as it was:
 * the same bits as the call a tile makes inside our region. */
static void test_serial_outside_region(void **state) {
    (void)state;
    size_t m = 300, n = 260, k = 320; /* big enough for a library to thread it */
    float *a = rand_tensor(m * k, 1.0f, 21), *b = rand_tensor(k * n, 1.0f, 22);
    float *outside = zeros(m * n), *inside = zeros(m * n);
    int threads = omp_get_max_threads();
    gemm_serial(0, 0, m, n, k, 1.0f, a, k, b, n, 0.0f, outside, n);
    assert_int_equal(omp_get_max_threads(), threads);
    gemm_serial(0, 1, 1, n, k, 1.0f, a, k, b, k, 0.0f, outside, n); /* one row: gemv */
    assert_int_equal(omp_get_max_threads(), threads);
#pragma omp parallel num_threads(2)
#pragma omp single
    {
        gemm_serial(0, 0, m, n, k, 1.0f, a, k, b, n, 0.0f, inside, n);
        gemm_serial(0, 1, 1, n, k, 1.0f, a, k, b, k, 0.0f, inside, n);
    }
    assert_memory_equal(outside, inside, m * n * sizeof *outside);
    free(a), free(b), free(outside), free(inside);
}

static void test_describe(void **state) {
    (void)state;
    const char *d = blas_describe(); /* without blas_setup: the kernel in use */
    assert_non_null(strstr(d, blas_backend_version()));
    assert_non_null(strstr(d, "kernel "));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_levels),           cmocka_unit_test(test_best_core),
        cmocka_unit_test(test_decisions),        cmocka_unit_test(test_openblas_levels),
        cmocka_unit_test(test_openblas_best_core), cmocka_unit_test(test_openblas_decisions),
        cmocka_unit_test(test_backend),          cmocka_unit_test(test_detect),
        cmocka_unit_test(test_level_choice),
        cmocka_unit_test(test_gemm_error_by_hand), cmocka_unit_test(test_gemm_error_sgemm),
        cmocka_unit_test(test_probe),            cmocka_unit_test(test_gemm_one_row),
        cmocka_unit_test(test_gemm_one_row_tiles),
        cmocka_unit_test(test_serial_outside_region), cmocka_unit_test(test_describe),
    };
    return cmocka_run_group_tests_name("blas", tests, NULL, NULL);
}
