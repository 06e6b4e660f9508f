/* Unit tests of the attention tiles' small products (src/blas/tile_gemm.c)
 * and the decode step's matrix-vector and attention kernels (src/blas/gemv.c) against a
 * double-precision reference, at the level LM_MAX_ISA leaves. */
#include "testutil.h"

#include "blas/gemv.h"
#include "blas/kernel_check.h"
#include "blas/tile_gemm.h"
#include "lm/threads.h"

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

/* ---- the decode step's matrix-vector kernels -------------------------------- */

/* W (rows x K, row stride ld = K + 3) in format f: its fp32 entries, converted. */
typedef struct GemvCase {
    float *w;
    uint16_t *h;
    int8_t *q;
    float *scale;
    GemvWeights gw;
} GemvCase;

static GemvCase gemv_case(GemvFormat f, size_t rows, size_t K, uint64_t seed) {
    GemvCase c = {0};
    size_t ld = K + 3, groups = (K + GEMV_GROUP - 1) / GEMV_GROUP;
    c.w = rand_tensor(rows * ld, 1.0f, seed);
    c.gw = (GemvWeights){.format = f, .f = c.w, .ld = ld};
    if (f == GEMV_BF16) {
        c.h = malloc(rows * K * sizeof *c.h);
        gemv_to_bf16(c.h, c.w, ld, rows, K);
        c.gw = (GemvWeights){.format = f, .h = c.h, .ld = K};
    } else if (f == GEMV_Q8) {
        c.q = malloc(rows * K), c.scale = malloc(rows * groups * sizeof(float));
        gemv_to_q8(c.q, c.scale, c.w, ld, rows, K);
        c.gw = (GemvWeights){.format = f, .q = c.q, .scale = c.scale, .ld = K, .lds = groups};
    }
    return c;
}

static void gemv_case_free(GemvCase *c) { free(c->w), free(c->h), free(c->q), free(c->scale); }

/* N vectors times W in format f, with and without a bias and added to y:
 * each entry within 2e-6 of the double product of the entries the kernel
 * reads (gemv_weight; q8 also x as it quantises it, gemv_to_q8, the sum
 * of its exact group sums), relative to sum |x W|; bf16 and q8 against
 * fp32 within the conversions' own bound (sum |x| |W - W'| with |W - W'|
 * at most 2^-8 |W| for bf16, scale / 2 for q8; q8 adds sum |W'| |x - x'|,
 * |x - x'| at most x's scale / 2); every vector the bits it gets alone; the
 * rows split anywhere the same bits; the whole on the threads too. */
static void check_gemv(GemvFormat f, size_t N, size_t rows, size_t K, uint64_t seed) {
    GemvCase c = gemv_case(f, rows, K, seed);
    size_t ldx = K + 1, ldy = rows + 2, groups = (K + GEMV_GROUP - 1) / GEMV_GROUP;
    float *x = rand_tensor(N * ldx, 1.0f, seed + 1), *bias = rand_tensor(rows, 1.0f, seed + 2);
    float *y = malloc(N * ldy * sizeof *y), *one = malloc(ldy * sizeof *one), *split = malloc(N * ldy * sizeof *split);
    int8_t *xq = malloc(N * K);
    float *xs = malloc(N * groups * sizeof *xs);
    gemv_to_q8(xq, xs, x, ldx, N, K);
    for (int acc = 0; acc < 3; acc++) { /* 0: no bias, 1: bias, 2: accumulate onto y = bias */
        for (size_t i = 0; i < N * ldy; i++) y[i] = acc == 2 ? bias[i % ldy < rows ? i % ldy : 0] : NAN;
        GemvArgs a = {N, K, x, ldx, c.gw, acc == 1 ? bias : NULL, y, ldy, acc == 2};
        memcpy(split, y, N * ldy * sizeof *y);
        gemv_loops()->rows[f](&a, 0, rows);
        for (size_t n = 0; n < N; n++)
            for (size_t r = 0; r < rows; r++) {
                double want = acc ? bias[r] : 0.0, mag = acc ? fabs(bias[r]) : 0.0, full = want, conv = 0.0;
                for (size_t k = 0; k < K; k++) {
                    double xv = x[n * ldx + k], wv = gemv_weight(&c.gw, r, k), w32 = c.w[r * (K + 3) + k];
                    full += xv * w32;
                    if (f == GEMV_Q8) {
                        double xs_k = xs[n * groups + k / GEMV_GROUP];
                        xv = xs_k * xq[n * K + k];
                        conv += fabs(x[n * ldx + k]) * c.scale[r * c.gw.lds + k / GEMV_GROUP] / 2 + fabs(wv) * xs_k / 2;
                    } else conv += fabs(xv) * fabs(w32) / 256;
                    want += xv * wv, mag += fabs(xv * wv);
                }
                double got = y[n * ldy + r];
                if (!(fabs(got - want) <= 2e-6 * mag + 1e-30))
                    fail_msg("gemv %s format %d %zux%zux%zu row %zu: %.8g, want %.8g", gemv_loops()->isa, (int)f, N, rows, K,
                             r, got, want);
                if (f != GEMV_F32 && !(fabs(got - full) <= 1.001 * conv + 2e-6 * mag))
                    fail_msg("gemv format %d row %zu: %.8g is %.3g from fp32's %.8g (bound %.3g)", (int)f, r, got,
                             fabs(got - full), full, conv);
            }
        for (size_t n = 0; n < N; n++) { /* alone: the same bits */
            for (size_t i = 0; i < ldy; i++) one[i] = acc == 2 ? bias[i < rows ? i : 0] : NAN;
            GemvArgs a1 = a;
            a1.N = 1, a1.x = x + n * ldx, a1.y = one;
            gemv_loops()->rows[f](&a1, 0, rows);
            assert_memory_equal(one, y + n * ldy, rows * sizeof(float));
        }
        GemvArgs as = a; /* the rows in runs of 1, 2, 3, ... */
        as.y = split;
        for (size_t r0 = 0, len = 1; r0 < rows; r0 += len, len++)
            gemv_loops()->rows[f](&as, r0, r0 + len < rows ? r0 + len : rows);
        for (size_t n = 0; n < N; n++) assert_memory_equal(split + n * ldy, y + n * ldy, rows * sizeof(float));
        if (acc == 2) continue;
        memset(split, 0, N * ldy * sizeof *split);
        gemv(&as, rows); /* the dispatch, threads and all */
        for (size_t n = 0; n < N; n++) assert_memory_equal(split + n * ldy, y + n * ldy, rows * sizeof(float));
    }
    gemv_case_free(&c);
    free(x), free(bias), free(y), free(one), free(split), free(xq), free(xs);
}

/* Every path: blocks of 4 rows and single rows, K across whole vectors
 * (pairs and one), the scalar tail, whole and part q8 groups; one vector
 * and a batch; a matrix large enough for the threads to share. */
static void test_gemv(void **state) {
    (void)state;
    static const size_t Ns[] = {1, 3}, rowss[] = {1, 5, 67}, Ks[] = {1, 7, 32, 45, 100, 256};
    uint64_t seed = 11;
    for (int f = GEMV_F32; f <= GEMV_Q8; f++)
        for (size_t a = 0; a < 2; a++)
            for (size_t b = 0; b < 3; b++)
                for (size_t c = 0; c < 6; c++) check_gemv((GemvFormat)f, Ns[a], rowss[b], Ks[c], seed += 3);
    /* q8 cuts k into segments where a chunk of vectors' quantised k would
     * not fit its buffer (32 KiB): a batch of 33 (two chunks, the first's
     * segments 1,024 long) at k = 2,100 (the last group part), and one
     * vector at k = 33,000; each vector's bits are still its own alone. */
    check_gemv(GEMV_Q8, 33, 6, 2100, seed += 3);
    check_gemv(GEMV_Q8, 1, 5, 33000, seed += 3);
    threads_use(2);
    for (int f = GEMV_F32; f <= GEMV_Q8; f++) check_gemv((GemvFormat)f, 2, 600, 256, seed += 3);
}

/* The attention step's kernels against double sums: key_scores over n keys
 * (whole tiles, several at once and one, the last tile part empty) with
 * hs channels, relative to scale sum |q k|; value_sum over n rows with hs
 * columns (blocks of 4 vectors, single vectors, the scalar tail), relative
 * to sum |p v|. Each entry's sum is in a fixed order, so a score does not
 * depend on how many keys come with it (the first n0 of n are checked
 * bitwise against a run over n0). */
static void check_attention_step(size_t n, size_t hs, uint64_t seed) {
    const GemvLoops *L = gemv_loops();
    size_t tiles = (n + GEMV_KEY_TILE - 1) / GEMV_KEY_TILE, ldv = hs + 5;
    float *q = rand_tensor(hs, 1.0f, seed), *kt = rand_tensor(tiles * hs * GEMV_KEY_TILE, 1.0f, seed + 1);
    float *p = rand_tensor(n, 1.0f, seed + 2), *v = rand_tensor(n * ldv, 1.0f, seed + 3);
    float *s = calloc(tiles * GEMV_KEY_TILE, sizeof *s), *s0 = calloc(tiles * GEMV_KEY_TILE, sizeof *s0);
    float *y = calloc(hs, sizeof *y), scale = 0.125f;
    L->key_scores(s, q, kt, hs, n, scale);
    for (size_t j = 0; j < n; j++) {
        double want = 0.0, mag = 0.0;
        for (size_t d = 0; d < hs; d++) {
            double k = kt[j / GEMV_KEY_TILE * hs * GEMV_KEY_TILE + d * GEMV_KEY_TILE + j % GEMV_KEY_TILE];
            want += (double)q[d] * k, mag += fabs((double)q[d] * k);
        }
        if (!(fabs(s[j] - scale * want) <= 2e-6 * scale * mag + 1e-30))
            fail_msg("key_scores %s n %zu hs %zu key %zu: %.8g, want %.8g", L->isa, n, hs, j, s[j], scale * want);
    }
    size_t n0 = n / 2 ? n / 2 : 1;
    L->key_scores(s0, q, kt, hs, n0, scale);
    assert_memory_equal(s0, s, n0 * sizeof(float));
    L->value_sum(y, p, v, ldv, n, hs);
    for (size_t d = 0; d < hs; d++) {
        double want = 0.0, mag = 0.0;
        for (size_t j = 0; j < n; j++) want += (double)p[j] * v[j * ldv + d], mag += fabs((double)p[j] * v[j * ldv + d]);
        if (!(fabs(y[d] - want) <= 2e-6 * mag + 1e-30))
            fail_msg("value_sum %s n %zu hs %zu column %zu: %.8g, want %.8g", L->isa, n, hs, d, y[d], want);
    }
    free(q), free(kt), free(p), free(v), free(s), free(s0), free(y);
}

static void test_attention_step(void **state) {
    (void)state;
    static const size_t ns[] = {1, 15, 16, 17, 64, 100, 1000}, hss[] = {1, 5, 16, 64, 75, 128};
    uint64_t seed = 101;
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t b = 0; b < sizeof hss / sizeof hss[0]; b++) check_attention_step(ns[a], hss[b], seed += 4);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_shapes), cmocka_unit_test(test_transpose),
                                       cmocka_unit_test(test_gemv), cmocka_unit_test(test_attention_step)};
    return cmocka_run_group_tests_name("tile_gemm", tests, NULL, NULL);
}
