/* Unit tests of the attention tiles' small products (src/blas/tile_gemm.c) against a double-precision reference. */
#include "testutil.h"

#include "blas/kernel_check.h"
#include "blas/tile_gemm.h"

/* One product C = alpha op(A) B + beta C at the given shape, with A as given
 * (transposed = A stored k x m) and rows padded (ld > width), against
 * blas_reference_gemm; beta 0 must overwrite a C full of NaN. */
static void check_product(size_t m, size_t n, size_t k, int transposed, float alpha, float beta, uint64_t seed) {
    size_t lda = (transposed ? m : k) + 3, ldb = n + 5, ldc = n + 2;
    float *a = rand_tensor((transposed ? k : m) * lda, 1.0f, seed);
    float *b = rand_tensor(k * ldb, 1.0f, seed + 1), *c = rand_tensor(m * ldc, 1.0f, seed + 2);
    float *a_plain = malloc(m * k * sizeof *a_plain), *b_plain = malloc(k * n * sizeof *b_plain);
    float *c0 = malloc(m * n * sizeof *c0), *got = malloc(m * n * sizeof *got);
    double *want = malloc(m * n * sizeof *want);
    for (size_t i = 0; i < m; i++)
        for (size_t p = 0; p < k; p++) a_plain[i * k + p] = transposed ? a[p * lda + i] : a[i * lda + p];
    for (size_t p = 0; p < k; p++) memcpy(b_plain + p * n, b + p * ldb, n * sizeof(float));
    for (size_t i = 0; i < m; i++) {
        memcpy(c0 + i * n, c + i * ldc, n * sizeof(float));
        if (beta == 0.0f)
            for (size_t j = 0; j < n; j++) c[i * ldc + j] = NAN;
    }
    float pad = c[ldc - 1]; /* a padding entry: must stay as it is */
    blas_reference_gemm(m, n, k, a_plain, b_plain, want);
    tile_gemm(m, n, k, alpha, a, transposed ? 1 : lda, transposed ? lda : 1, b, ldb, beta, c, ldc);
    for (size_t i = 0; i < m; i++) memcpy(got + i * n, c + i * ldc, n * sizeof(float));
    double e = blas_gemm_error(m * n, got, want, alpha, beta, c0);
    if (!(e < 2e-6)) fail_msg("%zux%zux%zu %s alpha %g beta %g: relative error %.2e", m, n, k, transposed ? "TN" : "NN",
                              alpha, beta, e);
    assert_true(memcmp(&pad, &c[ldc - 1], sizeof pad) == 0);
    free(a), free(b), free(c), free(a_plain), free(b_plain), free(c0), free(got), free(want);
}

/* Every path of the kernel: 4-row blocks and single rows, 64-column
 * blocks, 32- and 16-column blocks and the column tail, k = 1 and long k. */
static void test_shapes(void **state) {
    (void)state;
    static const size_t ms[] = {1, 2, 3, 4, 5, 6, 7, 11, 64, 67}, ns[] = {1, 15, 16, 17, 32, 44, 48, 64, 80, 112, 128, 131}, ks[] = {1, 32, 61, 128};
    uint64_t seed = 1;
    for (size_t im = 0; im < sizeof ms / sizeof ms[0]; im++)
        for (size_t in = 0; in < sizeof ns / sizeof ns[0]; in++)
            for (size_t ik = 0; ik < sizeof ks / sizeof ks[0]; ik++)
                for (int transposed = 0; transposed <= 1; transposed++) {
                    check_product(ms[im], ns[in], ks[ik], transposed, 1.0f, 0.0f, seed++);
                    check_product(ms[im], ns[in], ks[ik], transposed, 0.125f, 1.0f, seed++);
                }
}

static void test_transpose(void **state) {
    (void)state;
    float src[2 * 4] = {1, 2, 3, 0, 4, 5, 6, 0}, dst[3 * 3]; /* 2 x 3 in rows of 4 */
    for (size_t i = 0; i < 9; i++) dst[i] = -1.0f;
    tile_transpose(2, 3, src, 4, dst, 3); /* 3 x 2 in rows of 3 */
    const float want[9] = {1, 4, -1, 2, 5, -1, 3, 6, -1};
    assert_memory_equal(dst, want, sizeof want);
    /* Whole squares (4 x 4 and 8 x 8, the levels') and partial ones on both
     * sides, padded rows on both sides: every entry copied, the padding of dst
     * untouched. */
    static const size_t sizes[] = {1, 3, 4, 5, 7, 8, 9, 12, 16, 21, 37, 64};
    uint64_t seed = 7;
    for (size_t a = 0; a < sizeof sizes / sizeof sizes[0]; a++)
        for (size_t b = 0; b < sizeof sizes / sizeof sizes[0]; b++) {
            size_t rows = sizes[a], cols = sizes[b], lds = cols + 3, ldd = rows + 5;
            float *big = rand_tensor(rows * lds, 1.0f, seed++), *t = zeros(cols * ldd);
            tile_transpose(rows, cols, big, lds, t, ldd);
            for (size_t i = 0; i < rows; i++)
                for (size_t j = 0; j < cols; j++) assert_true(t[j * ldd + i] == big[i * lds + j]);
            for (size_t j = 0; j < cols; j++)
                for (size_t i = rows; i < ldd; i++) assert_true(t[j * ldd + i] == 0.0f);
            free(big), free(t);
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_shapes), cmocka_unit_test(test_transpose)};
    return cmocka_run_group_tests_name("tile_gemm", tests, NULL, NULL);
}
