/* Unit tests of the OpenBLAS kernel choice: the decision table and the probe's sgemm check. */
#include "testutil.h"

#include <cblas.h>

#include "blas_setup.h"

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

static CpuFeatures cpu_avx512(const char *vendor, bool bf16, bool amx) {
    CpuFeatures c = cpu_avx2(vendor);
    c.avx512f = c.avx512bw = c.avx512vl = c.avx512dq = c.avx512cd = true;
    c.avx512_bf16 = bf16;
    c.amx = amx;
    return c;
}

static void expect_switch(const char *library_core, CpuFeatures cpu, const char *want) {
    BlasDecision d = blas_decide(library_core, &cpu);
    if (want) {
        assert_non_null(d.switch_to);
        assert_string_equal(d.switch_to, want);
    } else {
        if (d.switch_to) fail_msg("%s: switched to %s (%s)", library_core ? library_core : "(null)", d.switch_to, d.reason);
    }
    assert_true(strlen(d.reason) > 0);
}

static void test_levels(void **state) {
    (void)state;
    assert_int_equal(blas_core_level("Prescott"), BLAS_LEVEL_SSE);
    assert_int_equal(blas_core_level("prescott"), BLAS_LEVEL_SSE); /* OpenBLAS ignores case */
    assert_int_equal(blas_core_level("Opteron_SSE3"), BLAS_LEVEL_SSE);
    assert_int_equal(blas_core_level("Sandybridge"), BLAS_LEVEL_AVX);
    assert_int_equal(blas_core_level("Zen"), BLAS_LEVEL_AVX2);
    assert_int_equal(blas_core_level("Haswell"), BLAS_LEVEL_AVX2);
    assert_int_equal(blas_core_level("SkylakeX"), BLAS_LEVEL_AVX512);
    assert_int_equal(blas_core_level("Cooperlake"), BLAS_LEVEL_AVX512_BF16);
    assert_int_equal(blas_core_level("Sapphirerapids"), BLAS_LEVEL_AMX);
    assert_int_equal(blas_core_level("Unknown"), BLAS_LEVEL_UNKNOWN);
    assert_int_equal(blas_core_level("Neoverse_N1"), BLAS_LEVEL_UNKNOWN);
    assert_int_equal(blas_core_level(NULL), BLAS_LEVEL_UNKNOWN);
}

static void test_best_core(void **state) {
    (void)state;
    CpuFeatures c = cpu_sse_only();
    assert_null(blas_best_core(&c));
    c.avx = true;
    assert_string_equal(blas_best_core(&c), "Sandybridge");
    c = cpu_avx2("AuthenticAMD");
    assert_string_equal(blas_best_core(&c), "Zen");
    c = cpu_avx2("GenuineIntel");
    assert_string_equal(blas_best_core(&c), "Haswell");
    c.fma = false; /* AVX2 without FMA is not enough for the Haswell kernels */
    assert_string_equal(blas_best_core(&c), "Sandybridge");
    c = cpu_avx512("GenuineIntel", false, false);
    assert_string_equal(blas_best_core(&c), "SkylakeX");
    c.avx512cd = false; /* an incomplete AVX-512 set (as on Knights Landing without BW/VL) */
    assert_string_equal(blas_best_core(&c), "Haswell");
    c = cpu_avx512("GenuineIntel", true, true); /* Sapphire Rapids and later: no AMX core in 0.3.21 */
    assert_string_equal(blas_best_core(&c), "Cooperlake");
}

static void test_decisions(void **state) {
    (void)state;
    /* The issue: an AVX-512 + AMX Xeon the library does not recognise. */
    expect_switch("Prescott", cpu_avx512("GenuineIntel", true, true), "Cooperlake");
    /* Zen 4 (AVX-512 with BF16) where the library picks its AVX2 Zen kernels. */
    expect_switch("Zen", cpu_avx512("AuthenticAMD", true, false), "Cooperlake");
    expect_switch("SkylakeX", cpu_avx512("AuthenticAMD", true, false), "Cooperlake");
    expect_switch("Prescott", cpu_avx512("GenuineIntel", false, false), "SkylakeX");
    expect_switch("Sandybridge", cpu_avx2("AuthenticAMD"), "Zen");
    expect_switch("Nehalem", cpu_avx2("GenuineIntel"), "Haswell");
    /* Already as fast as the CPU allows: same level is not worth a restart. */
    expect_switch("Haswell", cpu_avx2("AuthenticAMD"), NULL);
    expect_switch("Zen", cpu_avx2("GenuineIntel"), NULL);
    expect_switch("Cooperlake", cpu_avx512("GenuineIntel", true, false), NULL);
    expect_switch("cooperlake", cpu_avx512("AuthenticAMD", true, false), NULL);
    expect_switch("Sapphirerapids", cpu_avx512("GenuineIntel", true, true), NULL);
    /* Never downgrade, even if the library's choice looks too high for the CPU. */
    expect_switch("SkylakeX", cpu_avx2("GenuineIntel"), NULL);
    /* Names this program does not rank are left alone. */
    expect_switch("Unknown", cpu_avx512("GenuineIntel", true, true), NULL);
    expect_switch("Neoverse_N1", cpu_avx512("GenuineIntel", true, true), NULL);
    expect_switch(NULL, cpu_avx512("GenuineIntel", true, true), NULL);
    /* Nothing better to offer an SSE-only CPU. */
    expect_switch("Prescott", cpu_sse_only(), NULL);
    expect_switch("Core2", cpu_sse_only(), NULL);
}

/* The detected features are self-consistent (whatever this machine is). */
static void test_detect(void **state) {
    (void)state;
    CpuFeatures c;
    cpu_features_detect(&c);
    if (c.avx2) assert_true(c.avx);
    if (c.avx512f) assert_true(c.avx);
    if (c.avx512_bf16) assert_true(c.avx512f);
    if (getenv("VERBOSE"))
        printf("  cpu %s: avx %d avx2 %d fma %d avx512 f%d bw%d vl%d dq%d cd%d bf16 %d amx %d -> best %s\n", c.vendor,
               c.avx, c.avx2, c.fma, c.avx512f, c.avx512bw, c.avx512vl, c.avx512dq, c.avx512cd, c.avx512_bf16, c.amx,
               blas_best_core(&c) ? blas_best_core(&c) : "none");
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
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, a, (int)k, b, (int)n, 0.0f, c,
                (int)n);
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

static void test_describe(void **state) {
    (void)state;
    const char *d = blas_describe(); /* without blas_setup: the kernel in use */
    assert_non_null(strstr(d, "OpenBLAS"));
    assert_non_null(strstr(d, "kernel "));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_levels),           cmocka_unit_test(test_best_core),
        cmocka_unit_test(test_decisions),        cmocka_unit_test(test_detect),
        cmocka_unit_test(test_gemm_error_by_hand), cmocka_unit_test(test_gemm_error_sgemm),
        cmocka_unit_test(test_probe),            cmocka_unit_test(test_describe),
    };
    return cmocka_run_group_tests_name("blas", tests, NULL, NULL);
}
