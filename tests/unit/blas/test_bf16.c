/* Unit tests of the bf16 products (lm/bf16.h): the fp32 -> bf16
 * rounding bit by bit, and the tiled oneDNN products against the bounds
 * derived in bf16.h (the exact product of the rounded inputs; the fp32 gemm
 * of the unrounded ones), in every form, with padded rows, beta 0 and 1, and
 * bit-identical for any thread count. The oneDNN products need
 * AVX512_BF16: on a CPU without it their tests are skipped, saying so; the
 * conversion and the attention tiles' packings and product run at every
 * level (blas/bf16_loops.h), so their tests run everywhere, on the kernels
 * of the level in use (make test runs this once per level, LM_MAX_ISA). */
#include "testutil.h"

#include <float.h>
#include <omp.h>

#include "lm/bf16.h"
#include "lm/gemm.h"
#include "blas/bf16_loops.h"
#include "blas/tile_gemm.h"
#include "lm/cpu.h"
#include "lm/threads.h"

static uint32_t bits_of(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float float_of(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static int have_bf16;

static void skip_without_bf16(void) {
    if (!have_bf16) {
        printf("  skipped: %s, which the bf16 products require\n", bf16_unavailable());
        skip();
    }
}

/* ---- conversion ---------------------------------------------------------------- */

/* fp32 bits in, bf16 bits out: ties to even, NaN, infinity, overflow, denormals, signs. */
static void test_convert_cases(void **state) {
    (void)state;
    static const struct {
        uint32_t in;
        uint16_t out;
    } cases[] = {
        {0x3f800000, 0x3f80}, /* 1: exact */
        {0x3f807fff, 0x3f80}, /* just below half an ulp: down */
        {0x3f808000, 0x3f80}, /* the tie, 0x3f80 even: down */
        {0x3f808001, 0x3f81}, /* just above: up */
        {0x3f818000, 0x3f82}, /* the tie, 0x3f81 odd: up to the even one */
        {0xbf808000, 0xbf80}, /* negative tie: magnitude to even */
        {0xbf818000, 0xbf82},
        {0x3fffffff, 0x4000}, /* the carry into the exponent */
        {0x7f7f7fff, 0x7f7f}, /* just below the tie above bf16's largest finite number */
        {0x7f7f8000, 0x7f80}, /* that tie (0x7f7f odd) and FLT_MAX: infinity */
        {0x7f7fffff, 0x7f80},
        {0xff7fffff, 0xff80},
        {0x7f800000, 0x7f80}, /* infinities */
        {0xff800000, 0xff80},
        {0x7fc00000, 0x7fc0}, /* quiet NaN */
        {0xffc00001, 0xffc0},
        {0x7f800001, 0x7fc0}, /* signalling NaN with a low payload: truncation alone would give infinity */
        {0x7fffffff, 0x7fff}, /* the largest payload: must not carry into the sign */
        {0xff800001, 0xffc0},
        {0x00000000, 0x0000}, /* zeros keep their sign */
        {0x80000000, 0x8000},
        {0x00000001, 0x0000}, /* the smallest denormal: down to zero */
        {0x00008000, 0x0000}, /* a denormal tie, 0 even */
        {0x00018000, 0x0002}, /* a denormal tie, 0x0001 odd */
        {0x00010000, 0x0001}, /* a bf16 denormal, exact (not flushed) */
        {0x807fffff, 0x8080}, /* the largest denormal rounds up to -FLT_MIN */
        {0x00800000, 0x0080}, /* FLT_MIN */
    };
    size_t n = sizeof cases / sizeof cases[0];
    float in[64];
    uint16_t vec[64], scalar[64];
    for (size_t i = 0; i < n; i++) {
        in[i] = float_of(cases[i].in);
        uint16_t got = bf16_from_float(in[i]);
        if (got != cases[i].out) fail_msg("0x%08x -> 0x%04x, want 0x%04x", cases[i].in, got, cases[i].out);
    }
    bf16_from_floats(n, in, vec);
    bf16_from_floats_scalar(n, in, scalar);
    assert_memory_equal(vec, scalar, n * sizeof *vec);
    for (size_t i = 0; i < n; i++) /* NaN in, NaN out; everything else keeps its sign */
        if (isnan(in[i])) assert_true(isnan(bf16_to_float(vec[i])));
        else assert_true(signbit(in[i]) == signbit(bf16_to_float(vec[i])));
}

/* Every bf16 number survives bf16 -> fp32 -> bf16; NaNs come back as NaNs of the same sign. */
static void test_round_trip(void **state) {
    (void)state;
    uint16_t all[65536], back[65536];
    float wide[65536];
    for (uint32_t h = 0; h < 65536; h++) all[h] = (uint16_t)h;
    bf16_to_floats(65536, all, wide);
    bf16_from_floats(65536, wide, back);
    for (uint32_t h = 0; h < 65536; h++) {
        assert_true(bits_of(wide[h]) == h << 16);
        if (isnan(wide[h])) {
            assert_true(isnan(bf16_to_float(back[h])));
            assert_true((back[h] & 0x8000) == (h & 0x8000));
        } else if (back[h] != h) fail_msg("0x%04x came back as 0x%04x", h, back[h]);
    }
}

/* On random fp32 bit patterns: the vector path equals the scalar one at
 * every length (the masked tail), and the scalar one is the nearest bf16,
 * ties to even. */
static void test_rounding_is_nearest_even(void **state) {
    (void)state;
    size_t n = 1 << 16;
    float *x = malloc(n * sizeof *x);
    uint16_t *vec = malloc(n * sizeof *vec), *scalar = malloc(n * sizeof *scalar);
    Rng r;
    rng_seed(&r, 5);
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)(rng_u64(&r) >> 32);
        if (i % 4 == 0) u = (u & 0xffff0000u) | 0x8000u; /* plenty of exact ties */
        x[i] = float_of(u);
    }
    for (size_t len = 0; len <= 40; len++) {
        bf16_from_floats(len, x + 3, vec);
        bf16_from_floats_scalar(len, x + 3, scalar);
        assert_memory_equal(vec, scalar, len * sizeof *vec);
    }
    bf16_from_floats(n, x, vec);
    bf16_from_floats_scalar(n, x, scalar);
    assert_memory_equal(vec, scalar, n * sizeof *vec);
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) continue;
        uint16_t h = scalar[i];
        double got = bf16_to_float(h), xi = x[i];
        if (isinf(got)) { /* overflow: only past the tie above the largest finite bf16 */
            assert_true(fabs(xi) >= 0x1.ff8p127);
            continue;
        }
        /* The neighbours of h on each side: h is at least as close as both, and even on a tie. */
        uint16_t mag = h & 0x7fff;
        for (int side = -1; side <= 1; side += 2) {
            if ((side < 0 && mag == 0) || (side > 0 && mag >= 0x7f7f)) continue;
            double other = bf16_to_float((uint16_t)((h & 0x8000) | (uint16_t)(mag + side)));
            double d_got = fabs(xi - got), d_other = fabs(xi - other);
            if (d_got > d_other || (d_got == d_other && (h & 1)))
                fail_msg("0x%08x -> 0x%04x, but 0x%04x is nearer or even", bits_of(x[i]), h, (unsigned)(mag + side));
        }
    }
    free(x), free(vec), free(scalar);
}

/* ---- products -------------------------------------------------------------------- */

/* A product case: op(A) m x k and op(B) k x n stored with padded rows (the
 * leading dimensions exceed the rows' width), fp32 originals and their bf16 roundings. */
typedef struct Case {
    int trans_a, trans_b;
    size_t m, n, k, lda, ldb, ldc;
    float *a, *b;           /* fp32, as stored */
    uint16_t *ah, *bh;      /* rounded, as stored */
    float *ar, *br;         /* the rounded values as fp32, as stored */
    float *c0;              /* C before the product, ldc per row */
} Case;

static size_t stored_rows(int trans, size_t rows, size_t cols) { return trans ? cols : rows; }

static void case_make(Case *c, int trans_a, int trans_b, size_t m, size_t n, size_t k, uint64_t seed) {
    *c = (Case){.trans_a = trans_a, .trans_b = trans_b, .m = m, .n = n, .k = k};
    c->lda = (trans_a ? m : k) + 5, c->ldb = (trans_b ? k : n) + 3, c->ldc = n + 7;
    size_t na = stored_rows(trans_a, m, k) * c->lda, nb = stored_rows(trans_b, k, n) * c->ldb;
    c->a = rand_tensor(na, 1.0f, seed), c->b = rand_tensor(nb, 1.0f, seed + 1);
    c->c0 = rand_tensor(m * c->ldc, 1.0f, seed + 2);
    c->ah = malloc(na * sizeof *c->ah), c->bh = malloc(nb * sizeof *c->bh);
    c->ar = malloc(na * sizeof *c->ar), c->br = malloc(nb * sizeof *c->br);
    bf16_from_floats(na, c->a, c->ah);
    bf16_from_floats(nb, c->b, c->bh);
    bf16_to_floats(na, c->ah, c->ar);
    bf16_to_floats(nb, c->bh, c->br);
}

static void case_free(Case *c) {
    free(c->a), free(c->b), free(c->ah), free(c->bh), free(c->ar), free(c->br), free(c->c0);
}

/* The case's C after the bf16 product (C starts as c0, or NaN for beta 0: it must not be read). */
static float *run_bf16(const Case *c, float alpha, float beta) {
    float *out = malloc(c->m * c->ldc * sizeof *out);
    for (size_t i = 0; i < c->m * c->ldc; i++) out[i] = beta == 0.0f ? NAN : c->c0[i];
    for (size_t i = 0; i < c->m; i++) out[i * c->ldc + c->n] = 12345.0f; /* padding: must stay */
    Error err;
    if (bf16_gemm(c->trans_a, c->trans_b, c->m, c->n, c->k, alpha, c->ah, c->lda, c->bh, c->ldb, beta, out, c->ldc, &err))
        fail_msg("bf16_gemm: %s", err.msg);
    for (size_t i = 0; i < c->m; i++) assert_true(out[i * c->ldc + c->n] == 12345.0f);
    return out;
}

/* The same with the fp32 gemm, on the given stored operands. */
static float *run_fp32(const Case *c, const float *a, const float *b, float alpha, float beta) {
    float *out = malloc(c->m * c->ldc * sizeof *out);
    memcpy(out, c->c0, c->m * c->ldc * sizeof *out);
    gemm(c->trans_a, c->trans_b, c->m, c->n, c->k, alpha, a, c->lda, b, c->ldb, beta, out, c->ldc);
    return out;
}

/* want (m x n) = op(A) op(B) and abs_sum = |op(A)| |op(B)| in double, from fp32 operands as stored. */
static void reference(const Case *c, const float *a, const float *b, double *want, double *abs_sum) {
    for (size_t i = 0; i < c->m; i++)
        for (size_t j = 0; j < c->n; j++) {
            double s = 0.0, s_abs = 0.0;
            for (size_t p = 0; p < c->k; p++) {
                double x = c->trans_a ? a[p * c->lda + i] : a[i * c->lda + p];
                double y = c->trans_b ? b[j * c->ldb + p] : b[p * c->ldb + j];
                s += x * y, s_abs += fabs(x * y);
            }
            want[i * c->n + j] = s, abs_sum[i * c->n + j] = s_abs;
        }
}

typedef double (*Bound)(size_t k, float alpha, double abs_sum, float beta, float c0);

/* The largest |got - (alpha want + beta c0)| / bound over C. */
static double worst_ratio(const Case *c, const float *got, const double *want, const double *abs_sum, float alpha,
                          float beta, Bound bound) {
    double worst = 0.0;
    for (size_t i = 0; i < c->m; i++)
        for (size_t j = 0; j < c->n; j++) {
            float c0 = c->c0[i * c->ldc + j];
            double ref = alpha * want[i * c->n + j] + (beta != 0.0f ? beta * (double)c0 : 0.0);
            double ratio = fabs((double)got[i * c->ldc + j] - ref) / bound(c->k, alpha, abs_sum[i * c->n + j], beta, c0);
            if (isnan(ratio)) return INFINITY;
            if (ratio > worst) worst = ratio;
        }
    return worst;
}

/* Shapes: ragged ones (partial tiles, odd k), a tile-sized one, and
 * model-like ones (k = 384: the medium config's d; k = 1152 its QKV width). */
static const Bf16Shape shapes[] = {{1, 7, 3}, {37, 29, 61}, {97, 83, 130}, {160, 96, 384}, {64, 48, 1152}};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

/* Against the exact product of the rounded inputs, within
 * bf16_accumulation_bound (gamma(k + 2) |alpha| sum |a b| + ..., the fp32
 * accumulation alone): every trans combination, padded rows, alpha 1 and
 * -0.5, beta 0 (over NaN) and 1. The fp32 gemm of the UNROUNDED inputs must
 * break that bound somewhere: the bound is tight enough to tell whether the
 * inputs were rounded to bf16 and nothing else. */
static void test_against_rounded_reference(void **state) {
    (void)state;
    skip_without_bf16();
    uint64_t seed = 100;
    double worst = 0.0;
    for (size_t s = 0; s < N_SHAPES; s++)
        for (int ta = 0; ta <= 1; ta++)
            for (int tb = 0; tb <= 1; tb++) {
                Case c;
                case_make(&c, ta, tb, shapes[s].m, shapes[s].n, shapes[s].k, seed += 3);
                double *want = malloc(c.m * c.n * sizeof *want), *abs_sum = malloc(c.m * c.n * sizeof *abs_sum);
                reference(&c, c.ar, c.br, want, abs_sum);
                static const float alphas[] = {1.0f, -0.5f}, betas[] = {0.0f, 1.0f};
                for (int ia = 0; ia < 2; ia++)
                    for (int ib = 0; ib < 2; ib++) {
                        float *got = run_bf16(&c, alphas[ia], betas[ib]);
                        double r = worst_ratio(&c, got, want, abs_sum, alphas[ia], betas[ib], bf16_accumulation_bound);
                        if (!(r <= 1.0))
                            fail_msg("%zux%zux%zu trans %d%d alpha %g beta %g: %.3g x the accumulation bound", c.m, c.n,
                                     c.k, ta, tb, (double)alphas[ia], (double)betas[ib], r);
                        if (r > worst) worst = r;
                        free(got);
                    }
                if (c.k >= 61) { /* enough terms that some input's rounding shows */
                    float *fp32 = run_fp32(&c, c.a, c.b, 1.0f, 0.0f);
                    double r = worst_ratio(&c, fp32, want, abs_sum, 1.0f, 0.0f, bf16_accumulation_bound);
                    if (!(r > 1.0))
                        fail_msg("%zux%zux%zu trans %d%d: the unrounded fp32 product is within the bound (%.3g): it "
                                 "cannot tell rounded inputs from unrounded ones", c.m, c.n, c.k, ta, tb, r);
                    free(fp32);
                }
                free(want), free(abs_sum);
                case_free(&c);
            }
    if (getenv("VERBOSE")) printf("  worst error against the rounded reference: %.3f of its bound\n", worst);
}

/* Against the fp32 gemm of the unrounded inputs, within bf16_rounding_bound
 * ((2^-7 + 2^-16) |alpha| sum |a b| + both accumulations): the price of bf16
 * inputs. And the two differ: the bf16 product really rounds. */
static void test_against_fp32_gemm(void **state) {
    (void)state;
    skip_without_bf16();
    uint64_t seed = 500;
    double worst = 0.0;
    for (size_t s = 0; s < N_SHAPES; s++)
        for (int ta = 0; ta <= 1; ta++)
            for (int tb = 0; tb <= 1; tb++)
                for (int with_beta = 0; with_beta <= 1; with_beta++) {
                    Case c;
                    float beta = (float)with_beta;
                    case_make(&c, ta, tb, shapes[s].m, shapes[s].n, shapes[s].k, seed += 3);
                    double *want = malloc(c.m * c.n * sizeof *want), *abs_sum = malloc(c.m * c.n * sizeof *abs_sum);
                    reference(&c, c.a, c.b, want, abs_sum); /* abs_sum of the unrounded inputs */
                    float *got = run_bf16(&c, 1.0f, beta), *fp32 = run_fp32(&c, c.a, c.b, 1.0f, beta);
                    /* Measure the bf16 result against the fp32 one: as "want" the fp32 C minus beta c0. */
                    double max_diff = 0.0;
                    for (size_t i = 0; i < c.m; i++)
                        for (size_t j = 0; j < c.n; j++) {
                            size_t at = i * c.ldc + j;
                            want[i * c.n + j] = (double)fp32[at] - (with_beta ? (double)c.c0[at] : 0.0);
                            max_diff = fmax(max_diff, fabs((double)got[at] - fp32[at]));
                        }
                    double r = worst_ratio(&c, got, want, abs_sum, 1.0f, beta, bf16_rounding_bound);
                    if (!(r <= 1.0))
                        fail_msg("%zux%zux%zu trans %d%d beta %g: %.3g x the rounding bound", c.m, c.n, c.k, ta, tb,
                                 (double)beta, r);
                    if (c.k >= 61 && !(max_diff > 0.0))
                        fail_msg("%zux%zux%zu: the bf16 product equals the fp32 one: its inputs were not rounded", c.m,
                                 c.n, c.k);
                    if (r > worst) worst = r;
                    free(got), free(fp32), free(want), free(abs_sum);
                    case_free(&c);
                }
    if (getenv("VERBOSE")) printf("  worst difference from the fp32 gemm: %.3f of its bound\n", worst);
}

/* The same bits whatever the thread count: widths 2 and 3 (set directly, and
 * through LM_PARALLEL_WIDTH) on 1 and 2 threads, a product cut into several
 * tiles in each form. */
static void product_at(int ta, int tb, size_t threads, float *out, const Case *c) {
    omp_set_num_threads((int)threads);
    memcpy(out, c->c0, c->m * c->ldc * sizeof *out);
    Error err;
    if (bf16_gemm(ta, tb, c->m, c->n, c->k, 1.0f, c->ah, c->lda, c->bh, c->ldb, 1.0f, out, c->ldc, &err))
        fail_msg("bf16_gemm: %s", err.msg);
    omp_set_num_threads(2);
}

static void test_thread_invariance(void **state) {
    (void)state;
    skip_without_bf16();
    for (int ta = 0; ta <= 1; ta++)
        for (int tb = 0; tb <= 1; tb++) {
            Case c;
            case_make(&c, ta, tb, 256, 192, 384, 900 + (uint64_t)(2 * ta + tb));
            size_t bytes = c.m * c.ldc * sizeof(float);
            float *one = malloc(bytes), *two = malloc(bytes), *width3 = malloc(bytes);
            for (size_t width = 2; width <= 3; width++) {
                threads_set_width(width);
                TileGrid g = gemm_tile_grid(c.m, c.n, c.k);
                assert_true(g.tiles_m * g.tiles_n >= width); /* really cut */
                product_at(ta, tb, 1, one, &c);
                product_at(ta, tb, 2, two, &c);
                assert_memory_equal(one, two, bytes);
                if (width == 3) memcpy(width3, one, bytes);
            }
            setenv("LM_PARALLEL_WIDTH", "3", 1);
            threads_use(1);
            product_at(ta, tb, 1, one, &c);
            threads_use(2);
            product_at(ta, tb, 2, two, &c);
            unsetenv("LM_PARALLEL_WIDTH");
            threads_set_width(0);
            assert_memory_equal(one, width3, bytes);
            assert_memory_equal(two, width3, bytes);
            free(one), free(two), free(width3);
            case_free(&c);
        }
}

/* The same bits whatever the width, so whatever --threads sets it to: the
 * whole product (dense operands, leading dimensions their widths, where
 * oneDNN would take brgemm, AMX's where the CPU has it) against its tiles at
 * widths 2 and 3 (strided views, where it would take its jit gemm) and the
 * serial product, in every form, beta 0 and 1, at a Grassmann layer's
 * product (64x16x496, the CLI test's, once 1 and 2 threads differed on an
 * AMX Xeon) and a larger one cut both ways. */
static void test_width_invariance(void **state) {
    (void)state;
    skip_without_bf16();
    static const size_t shapes[][3] = {{64, 16, 496}, {16, 496, 64}, {192, 160, 384}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int form = 0; form < 4; form++)
            for (int with_beta = 0; with_beta <= 1; with_beta++) {
                int ta = form >> 1, tb = form & 1;
                size_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2], lda = ta ? m : k, ldb = tb ? k : n;
                float beta = with_beta ? 1.0f : 0.0f, *a = rand_tensor(m * k, 1.0f, 70 + s);
                float *b = rand_tensor(k * n, 1.0f, 80 + s), *c0 = rand_tensor(m * n, 1.0f, 90 + s);
                uint16_t *ah = malloc(m * k * sizeof *ah), *bh = malloc(k * n * sizeof *bh);
                bf16_from_floats(m * k, a, ah), bf16_from_floats(k * n, b, bh);
                size_t bytes = m * n * sizeof(float);
                float *whole = malloc(bytes), *got = malloc(bytes);
                Error err;
                memcpy(whole, c0, bytes);
                threads_set_width(1);
                assert_int_equal(bf16_gemm(ta, tb, m, n, k, 1.0f, ah, lda, bh, ldb, beta, whole, n, &err), 0);
                for (size_t width = 2; width <= 4; width++) { /* 4: the serial product */
                    memcpy(got, c0, bytes);
                    threads_set_width(width);
                    TileGrid g = gemm_tile_grid(m, n, k);
                    if (width < 4) assert_true(g.tiles_m * g.tiles_n > 1); /* really cut */
                    int rc = width < 4 ? bf16_gemm(ta, tb, m, n, k, 1.0f, ah, lda, bh, ldb, beta, got, n, &err)
                                       : bf16_gemm_serial(ta, tb, m, n, k, 1.0f, ah, lda, bh, ldb, beta, got, n, &err);
                    assert_int_equal(rc, 0);
                    if (memcmp(whole, got, bytes))
                        fail_msg("%zux%zux%zu trans %d%d beta %g: %s differs from the whole product", m, n, k, ta, tb,
                                 (double)beta, width < 4 ? (width == 2 ? "width 2" : "width 3") : "the serial product");
                }
                threads_set_width(0);
                free(a), free(b), free(c0), free(ah), free(bh), free(whole), free(got);
            }
}

/* The serial product is one tile: the bits of the tiled one at width 1, the
 * same on any thread, and inside a parallel region of the caller's own. */
static void test_serial(void **state) {
    (void)state;
    skip_without_bf16();
    Case c;
    case_make(&c, 0, 0, 96, 80, 130, 333);
    size_t bytes = c.m * c.ldc * sizeof(float);
    float *tiled = malloc(bytes), *serial = malloc(bytes), *inside = malloc(bytes);
    memcpy(tiled, c.c0, bytes), memcpy(serial, c.c0, bytes), memcpy(inside, c.c0, bytes);
    Error err;
    threads_set_width(1);
    assert_int_equal(bf16_gemm(0, 0, c.m, c.n, c.k, 1.0f, c.ah, c.lda, c.bh, c.ldb, 1.0f, tiled, c.ldc, &err), 0);
    threads_set_width(0);
    assert_int_equal(bf16_gemm_serial(0, 0, c.m, c.n, c.k, 1.0f, c.ah, c.lda, c.bh, c.ldb, 1.0f, serial, c.ldc, &err), 0);
    assert_memory_equal(tiled, serial, bytes);
    int rc = 0;
#pragma omp parallel num_threads(2) reduction(| : rc)
    { /* two row blocks, one per thread, each a serial product */
        size_t r0 = omp_get_thread_num() == 0 ? 0 : 48;
        Error e;
        rc |= bf16_gemm_serial(0, 0, 48, c.n, c.k, 1.0f, c.ah + r0 * c.lda, c.lda, c.bh, c.ldb, 1.0f,
                               inside + r0 * c.ldc, c.ldc, &e);
    }
    assert_int_equal(rc, 0);
    /* The bits of the 96-row product too (every tile on the same kernel, src/blas/bf16.c), and within its bound. */
    assert_memory_equal(tiled, inside, bytes);
    double *want = malloc(c.m * c.n * sizeof *want), *abs_sum = malloc(c.m * c.n * sizeof *abs_sum);
    reference(&c, c.ar, c.br, want, abs_sum);
    assert_true(worst_ratio(&c, inside, want, abs_sum, 1.0f, 1.0f, bf16_accumulation_bound) <= 1.0);
    free(tiled), free(serial), free(inside), free(want), free(abs_sum);
    case_free(&c);
}

/* The start-up check passes here, and fails on a spoiled result, saying where. */
static void test_check(void **state) {
    (void)state;
    skip_without_bf16();
    double worst = -1.0;
    Error err = {{0}};
    if (bf16_check(NULL, 0, false, &worst, &err)) fail_msg("%s", err.msg);
    assert_true(worst >= 0.0 && worst <= 1.0);
    Bf16Shape model[] = {{512, 1152, 384}}; /* the medium config's QKV product, on sampled rows */
    if (bf16_check(model, 1, false, &worst, &err)) fail_msg("%s", err.msg);
    if (getenv("VERBOSE")) printf("  check: worst %.3f of the bound\n", worst);
    assert_int_equal(bf16_check(NULL, 0, true, &worst, &err), -1);
    assert_true(worst > 1.0);
    assert_non_null(strstr(err.msg, "bf16 check"));
    assert_int_equal(threads_width(), omp_get_max_threads()); /* the width is back at its default */
}

/* A bias in every row and an epilogue on every tile, as gemm_tiled does; k = 0 scales C by beta. */
static size_t epilogue_entries;
static void count_tile(void *ctx, size_t i0, size_t j0, size_t rows, size_t cols) {
    (void)ctx, (void)i0, (void)j0;
#pragma omp atomic
    epilogue_entries += rows * cols;
}

static void test_bias_epilogue(void **state) {
    (void)state;
    skip_without_bf16();
    Case c;
    case_make(&c, 0, 1, 200, 96, 64, 77);
    float *bias = rand_tensor(c.n, 1.0f, 78), *got = malloc(c.m * c.ldc * sizeof *got);
    Error err;
    threads_set_width(2);
    epilogue_entries = 0;
    assert_int_equal(bf16_gemm_tiled(0, 1, c.m, c.n, c.k, 1.0f, c.ah, c.lda, c.bh, c.ldb, 1.0f, got, c.ldc, bias,
                                     count_tile, NULL, &err), 0);
    assert_int_equal(epilogue_entries, c.m * c.n);
    /* bias + the exact product of the rounded inputs, within the bound every
     * product keeps (beta 1 over C = the bias rows). Not against the same
     * product taken with beta 0: oneDNN may accumulate C += A B in another
     * order (on AMX, k in blocks added into C one by one). */
    for (size_t i = 0; i < c.m; i++) memcpy(c.c0 + i * c.ldc, bias, c.n * sizeof *bias);
    double *want = malloc(c.m * c.n * sizeof *want), *abs_sum = malloc(c.m * c.n * sizeof *abs_sum);
    reference(&c, c.ar, c.br, want, abs_sum);
    double r = worst_ratio(&c, got, want, abs_sum, 1.0f, 1.0f, bf16_accumulation_bound);
    if (!(r <= 1.0)) fail_msg("bias + product: %.3g x the accumulation bound", r);
    float small[4] = {1, 2, 3, 4};
    assert_int_equal(bf16_gemm(0, 0, 2, 2, 0, 1.0f, NULL, 1, NULL, 2, 0.5f, small, 2, &err), 0);
    assert_true(small[0] == 0.5f && small[3] == 2.0f);
    threads_set_width(0);
    free(bias), free(got), free(want), free(abs_sum);
    case_free(&c);
}

/* The model's forms at the medium config's shapes, whole and as the tiles of
 * width 2, run on oneDNN's optimised jit gemm (src/blas/bf16.c picks it for
 * every tile), not a reference fallback (two orders of magnitude slower). */
static void test_implementation(void **state) {
    (void)state;
    skip_without_bf16();
    static const struct {
        int ta, tb;
        size_t m, n, k, lda, ldb, ldc;
    } forms[] = {
        {0, 1, 1024, 1152, 384, 384, 384, 1152},  /* NT: out = in W^T */
        {0, 0, 1024, 384, 1152, 1152, 384, 384},  /* NN: dX = dY W */
        {1, 0, 384, 1152, 2048, 384, 1152, 1152}, /* TN: dW = dY^T X */
        {1, 0, 576, 384, 2048, 1152, 384, 384},   /* TN: a tile of dW (1152 x 384) at width 2 */
        {0, 1, 1024, 576, 384, 384, 384, 1152},   /* NT: a tile of the QKV product at width 2 */
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        char impl[128];
        Error err;
        if (bf16_gemm_impl(forms[i].ta, forms[i].tb, forms[i].m, forms[i].n, forms[i].k, forms[i].lda, forms[i].ldb,
                           forms[i].ldc, impl, sizeof impl, &err))
            fail_msg("%s", err.msg);
        if (getenv("VERBOSE")) printf("  trans %d%d: %s (%s)\n", forms[i].ta, forms[i].tb, impl, bf16_library());
        if (strstr(impl, "ref")) fail_msg("trans %d%d runs on '%s', a reference kernel", forms[i].ta, forms[i].tb, impl);
    }
}

/* ---- the attention tiles' kernel ---------------------------------------------------- */

/* The packings word for word against bf16_from_float (pairs, odd counts'
 * zero partners, zero padding), on values with denormals among them (the
 * conversion's slow path) and sizes off the 16-word vectors, each into a
 * buffer with guard words after its documented size, which must survive. */
static uint32_t pair_word(const float *x, size_t ldx, size_t rows, size_t cols, size_t i, size_t p, int down) {
    /* the pair starting at X(i, p): along the row, or down the column */
    size_t i2 = down ? i + 1 : i, p2 = down ? p : p + 1;
    uint32_t lo = i < rows && p < cols ? bf16_from_float(x[i * ldx + p]) : 0;
    uint32_t hi = i2 < rows && p2 < cols ? bf16_from_float(x[i2 * ldx + p2]) : 0;
    return lo | hi << 16;
}

/* The bf16 kernels in use are the level's that cpu_isa() names, or
 * AVX512_BF16's within avx512 where the CPU has it: so at LM_MAX_ISA=avx2
 * (or portable) a CPU with AVX512_BF16 runs the C kernels and offers no
 * bf16 products. */
static void test_kernels_level(void **state) {
    (void)state;
    const Bf16Loops *k = bf16_loops();
    if (cpu_bf16()) {
        assert_int_equal(cpu_isa(), CPU_ISA_AVX512);
        assert_string_equal(k->isa, "avx512bf16");
    } else {
        assert_string_equal(k->isa, cpu_isa_name(cpu_isa()));
        assert_false(bf16_supported());
    }
    if (getenv("VERBOSE")) printf("  bf16 kernels: %s\n", k->isa);
}

static void test_tile_packing(void **state) {
    (void)state;
    static const size_t sizes[][2] = {{1, 1}, {1, 2}, {3, 5}, {16, 32}, {17, 33}, {40, 64}, {129, 10}, {7, 100}};
    enum { GUARD = 40 };
    uint64_t seed = 1200;
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t rows = sizes[s][0], cols = sizes[s][1], ldx = cols + 3;
        float *x = rand_tensor(rows * ldx, 1.0f, seed++);
        for (size_t i = 0; i < rows * ldx; i += 7) x[i] = float_of(0x00018000u + (uint32_t)i); /* denormals */
        for (int kind = 0; kind < 3; kind++) { /* rows, columns, rows_transposed */
            size_t ldd = kind == 0 ? (cols + 1) / 2 + 1 : tile_bf16_padded(kind == 1 ? cols : rows) + s % 3;
            size_t words = kind == 0 ? rows * ldd : (kind == 1 ? (rows + 1) / 2 : (cols + 1) / 2) * ldd;
            uint32_t *d = malloc((words + GUARD) * sizeof *d);
            for (size_t w = 0; w < words + GUARD; w++) d[w] = 0xdeadbeefu;
            if (kind == 0) tile_pack_bf16_rows(rows, cols, x, ldx, d, ldd);
            else if (kind == 1) tile_pack_bf16_columns(rows, cols, x, ldx, d, ldd);
            else tile_pack_bf16_rows_transposed(rows, cols, x, ldx, d, ldd);
            for (size_t w = words; w < words + GUARD; w++) assert_true(d[w] == 0xdeadbeefu);
            for (size_t w = 0; w < words; w++) {
                size_t r = w / ldd, c = w % ldd;
                uint32_t want;
                if (kind == 0) {
                    if (c >= (cols + 1) / 2) continue; /* past the row's words: not the packing's */
                    want = pair_word(x, ldx, rows, cols, r, 2 * c, 0);
                } else if (kind == 1) want = pair_word(x, ldx, rows, cols, 2 * r, c, 1);
                else want = pair_word(x, ldx, rows, cols, c, 2 * r, 0);
                if (d[w] != want)
                    fail_msg("packing %d of %zux%zu: word (%zu,%zu) is 0x%08x, want 0x%08x", kind, rows, cols, r, c,
                             d[w], want);
            }
            free(d);
        }
        free(x);
    }
}

/* The forms of tile_product's operands the attention core uses, A m x k
 * and B k x n: */
enum { A_ROWS, A_COLUMNS, A_PACKED_ROWS, A_PACKED_COLUMNS, A_PACKED_TRANSPOSED, A_FORMS };
enum { B_PACKED_COLUMNS, B_PACKED_TRANSPOSED, B_FORMS };
static const char *const a_names[] = {"fp32 X", "fp32 X^T", "rows", "columns (X^T)", "rows_transposed"};
static const char *const b_names[] = {"columns", "rows_transposed (X^T)"};
static int a_stored_transposed(int form) { return form == A_COLUMNS || form == A_PACKED_COLUMNS; }

/* A (m x k) in form `form` from its storage a (m x k, or k x m when stored
 * transposed; row stride lda), packing into room when packed. */
static TileOperand a_operand(int form, size_t m, size_t k, const float *a, size_t lda, uint32_t *room) {
    size_t kp = (k + 1) / 2;
    switch (form) {
    case A_ROWS: return (TileOperand){.f = a, .rs = lda, .cs = 1};
    case A_COLUMNS: return (TileOperand){.f = a, .rs = 1, .cs = lda};
    case A_PACKED_ROWS: tile_pack_bf16_rows(m, k, a, lda, room, kp); return (TileOperand){.w = room, .rs = kp, .cs = 1};
    case A_PACKED_COLUMNS:
        tile_pack_bf16_columns(k, m, a, lda, room, tile_bf16_padded(m));
        return (TileOperand){.w = room, .rs = 1, .cs = tile_bf16_padded(m)};
    default:
        tile_pack_bf16_rows_transposed(m, k, a, lda, room, tile_bf16_padded(m));
        return (TileOperand){.w = room, .rs = 1, .cs = tile_bf16_padded(m)};
    }
}

/* B (k x n) from its storage b (k x n, or n x k for X^T; row stride ldb). */
static TileOperand b_operand(int form, size_t k, size_t n, const float *b, size_t ldb, uint32_t *room) {
    if (form == B_PACKED_COLUMNS) {
        tile_pack_bf16_columns(k, n, b, ldb, room, tile_bf16_padded(n));
        return (TileOperand){.w = room, .rs = tile_bf16_padded(n)};
    }
    tile_pack_bf16_rows_transposed(n, k, b, ldb, room, tile_bf16_padded(n));
    return (TileOperand){.w = room, .rs = tile_bf16_padded(n)};
}

/* tile_product with a packed B (both packings) and A in every form, at
 * sizes off the 6 x 64 register block and with odd k (the last pair's zero
 * partner), alpha 1 and 1/8, beta 0 and 1, every leading dimension padded:
 * each entry against the double product of the rounded inputs within
 * bf16_accumulation_bound, the columns past n never written. Then the same
 * products from an origin moved by tile_a_at / tile_b_at (an even number of
 * entries along k, as the attention core's diagonal strips move them).
 * The C kernels (every level but avx512bf16) have no register blocks, whose
 * edges the larger sizes are for: they take the first six. */
static void test_tile_kernel(void **state) {
    (void)state;
    static const size_t sizes[][3] = {{1, 1, 1}, {1, 7, 3}, {5, 17, 1}, {7, 65, 2}, {37, 29, 61}, {13, 64, 33},
                                      {6, 128, 64}, {128, 128, 64}, {64, 64, 127}, {70, 100, 129}, {16, 112, 400}};
    size_t n_sizes = cpu_bf16() ? sizeof sizes / sizeof *sizes : 6;
    double worst = 0.0;
    uint64_t seed = 900;
    for (size_t s = 0; s < n_sizes; s++)
        for (int af = 0; af < A_FORMS; af++)
            for (int bf = 0; bf < B_FORMS; bf++)
                for (int form = 0; form < 4; form++) {
                    size_t m = sizes[s][0], n = sizes[s][1], k = sizes[s][2], ta = a_stored_transposed(af);
                    size_t moved = form == 3 && k > 2 ? 2 : 0; /* the origin moved along k */
                    float alpha = form & 1 ? 0.125f : 1.0f, beta = form & 2 ? 1.0f : 0.0f;
                    size_t K = k + moved, lda = (ta ? m : K) + 3, ldb = (bf ? K : n) + 5, ldc = n + 2;
                    float *a = rand_tensor((ta ? K : m) * lda, 1.0f, seed++);
                    float *b = rand_tensor((bf ? n : K) * ldb, 1.0f, seed++);
                    float *c0 = rand_tensor(m * ldc, 1.0f, seed++), *c = malloc(m * ldc * sizeof *c);
                    uint32_t *room_a = malloc(((K + 1) / 2 + 16) * (m + 16) * sizeof *room_a);
                    uint32_t *room_b = malloc(((K + 1) / 2 + 16) * (n + 16) * sizeof *room_b);
                    for (size_t i = 0; i < m * ldc; i++) c[i] = beta == 0.0f ? NAN : c0[i];
                    for (size_t i = 0; i < m; i++) c[i * ldc + n] = c[i * ldc + n + 1] = 12345.0f;
                    TileOperand ao = tile_a_at(a_operand(af, m, K, a, lda, room_a), 0, moved);
                    TileOperand bo = tile_b_at(b_operand(bf, K, n, b, ldb, room_b), moved, 0);
                    tile_product(m, n, k, alpha, ao, bo, beta, c, ldc);
                    for (size_t i = 0; i < m; i++) {
                        assert_true(c[i * ldc + n] == 12345.0f && c[i * ldc + n + 1] == 12345.0f);
                        for (size_t j = 0; j < n; j++) {
                            double want = 0.0, abs_sum = 0.0;
                            for (size_t p = moved; p < K; p++) {
                                double x = bf16_to_float(bf16_from_float(ta ? a[p * lda + i] : a[i * lda + p]));
                                double y = bf16_to_float(bf16_from_float(bf ? b[j * ldb + p] : b[p * ldb + j]));
                                want += x * y, abs_sum += fabs(x * y);
                            }
                            float old = c0[i * ldc + j];
                            want = alpha * want + beta * old;
                            double bound = bf16_accumulation_bound(k, alpha, abs_sum, beta, old);
                            double err = fabs((double)c[i * ldc + j] - want);
                            if (!(err <= bound))
                                fail_msg("tile_product %zux%zux%zu A %s B %s alpha %g beta %g moved %zu (%zu,%zu): "
                                         "%.9g, want %.9g, bound %.3g",
                                         m, n, k, a_names[af], b_names[bf], (double)alpha, (double)beta, moved, i, j,
                                         (double)c[i * ldc + j], want, bound);
                            if (bound > 0 && err / bound > worst) worst = err / bound;
                        }
                    }
                    free(a), free(b), free(c0), free(c), free(room_a), free(room_b);
                }
    if (getenv("VERBOSE")) printf("  tile_product: worst error %.3f of its bound\n", worst);
}

/* fp32 operands: tile_product is tile_gemm, bit for bit. */
static void test_tile_product_fp32(void **state) {
    (void)state;
    size_t m = 37, n = 70, k = 45, lda = 50, ldb = 80, ldc = 75;
    float *a = rand_tensor(k * lda, 1.0f, 31), *b = rand_tensor(k * ldb, 1.0f, 32);
    float *c = rand_tensor(m * ldc, 1.0f, 33), *want = malloc(m * ldc * sizeof *want);
    for (int t = 0; t < 2; t++) {
        memcpy(want, c, m * ldc * sizeof *c);
        tile_gemm(m, n, k, 0.5f, a, t ? 1 : lda, t ? lda : 1, b, ldb, 1.0f, want, ldc);
        tile_product(m, n, k, 0.5f, (TileOperand){.f = a, .rs = t ? 1 : lda, .cs = t ? lda : 1},
                     (TileOperand){.f = b, .rs = ldb}, 1.0f, c, ldc);
        assert_memory_equal(c, want, m * ldc * sizeof *c);
    }
    free(a), free(b), free(c), free(want);
}

int main(void) {
    have_bf16 = bf16_supported();
    if (!have_bf16)
        printf("test_bf16: %s: the oneDNN product tests are skipped, the conversion and tile tests run\n",
               bf16_unavailable());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_convert_cases),           cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_rounding_is_nearest_even), cmocka_unit_test(test_against_rounded_reference),
        cmocka_unit_test(test_against_fp32_gemm),       cmocka_unit_test(test_thread_invariance),
        cmocka_unit_test(test_width_invariance),        cmocka_unit_test(test_serial),
        cmocka_unit_test(test_check),                   cmocka_unit_test(test_bias_epilogue),
        cmocka_unit_test(test_implementation),          cmocka_unit_test(test_kernels_level),
        cmocka_unit_test(test_tile_packing),
        cmocka_unit_test(test_tile_kernel),             cmocka_unit_test(test_tile_product_fp32),
    };
    int rc = cmocka_run_group_tests_name("bf16", tests, NULL, NULL);
    bf16_release();
    return rc;
}
