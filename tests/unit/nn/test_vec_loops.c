/* Unit tests of the element-wise hot loops (src/nn/vec_loops*.c) at the
 * level this run uses (make test runs it once per level, LM_MAX_ISA), each
 * against a double-precision reference, at lengths that take every vector
 * body and tail (1 .. 67 and a long one). */
#include "testutil.h"

#include <math.h>

#include "lm/cpu.h"
#include "lm/ops.h"
#include "nn/layernorm.h"
#include "nn/vec_loops.h"

static const size_t LENGTHS[] = {1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 67, 1000};
#define N_LENGTHS (sizeof LENGTHS / sizeof LENGTHS[0])

static double gelu_ref(double x) { return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }
static double gelu_grad_ref(double x) {
    double u = sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x), th = tanh(u);
    return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * sqrt(2.0 / M_PI) * (1.0 + 3.0 * 0.044715 * x * x);
}

/* |got - want| within rel |want| + abs (abs: for results near 0 after cancellation). */
static void near(double got, double want, double rel, double abs, const char *what, size_t n, size_t i) {
    double tol = rel * fabs(want) + abs;
    if (!(fabs(got - want) <= tol)) fail_msg("%s (n %zu, [%zu]): %.9g, want %.9g", what, n, i, got, want);
}

static float *copy_of(const float *x, size_t n) {
    float *c = malloc(n * sizeof *c);
    memcpy(c, x, n * sizeof *c);
    return c;
}

/* The table in use is the level cpu_isa() names (LM_MAX_ISA caps it). */
static void test_level(void **state) {
    (void)state;
    assert_string_equal(vec_loops()->isa, cpu_isa_name(cpu_isa()));
}

/* fast_expf's floor at x86-64's baseline (lm/ops.h) equals floorf as a
 * value on its range (|t| < 128; -0 gives +0): at every integer and the
 * floats either side of it, at every 61st float bit pattern between, and at
 * -0 (truncation gives +0 there, so a sign test on t - trunc(t) would not). */
static void check_floor(float t) {
    if (floor_by_truncation(t) != floorf(t))
        fail_msg("floor_by_truncation(%.9g) = %g, want %g", t, floor_by_truncation(t), floorf(t));
}

static void test_floor_by_truncation(void **state) {
    (void)state;
    for (int i = -130; i <= 130; i++) {
        float k = (float)i;
        check_floor(nextafterf(k, -INFINITY)), check_floor(k), check_floor(nextafterf(k, INFINITY));
    }
    assert_true(floor_by_truncation(-0.0f) == 0.0f);
    for (uint32_t bits = 0; bits < 0x43000000u; bits += 61) { /* 0 .. 128, both signs */
        union { uint32_t u; float f; } pos = {.u = bits}, neg = {.u = bits | 1u << 31};
        check_floor(pos.f), check_floor(neg.f);
    }
}

static void test_gelu(void **state) {
    (void)state;
    const VecLoops *L = vec_loops();
    for (size_t t = 0; t < N_LENGTHS; t++) {
        size_t n = LENGTHS[t];
        float *x = rand_tensor(n, 4.0f, 10 + t), *out = zeros(n), *d = rand_tensor(n, 1.0f, 50 + t);
        float *d0 = copy_of(d, n), *acc = rand_tensor(n, 1.0f, 90 + t), *acc0 = copy_of(acc, n);
        L->gelu(out, x, n);
        L->gelu_grad_mul(d, x, n);
        L->gelu_grad_add(acc, x, d0, n);
        for (size_t i = 0; i < n; i++) {
            near(out[i], gelu_ref(x[i]), 1e-5, 1e-6, "gelu", n, i);
            near(d[i], d0[i] * gelu_grad_ref(x[i]), 1e-5, 1e-5, "gelu_grad_mul", n, i);
            near(acc[i], acc0[i] + d0[i] * gelu_grad_ref(x[i]), 1e-5, 1e-5, "gelu_grad_add", n, i);
        }
        free(x), free(out), free(d), free(d0), free(acc), free(acc0);
    }
}

/* One key row of a score tile: the max and exp steps of the online softmax
 * (and an output row's rescaling),
 * with the first r0 queries masked (they must come out 0, the maxima and
 * sums there untouched). */
static void test_tile_row(void **state) {
    (void)state;
    const VecLoops *L = vec_loops();
    for (size_t t = 0; t < N_LENGTHS; t++) {
        size_t n = LENGTHS[t];
        for (size_t r0 = 0; r0 <= n; r0 += n / 3 + 1) {
            float *row = rand_tensor(n, 8.0f, 200 + t), *mx = rand_tensor(n, 8.0f, 300 + t),
                  *sum = rand_tensor(n, 1.0f, 400 + t);
            float *row0 = copy_of(row, n), *mx0 = copy_of(mx, n), *sum0 = copy_of(sum, n);
            L->tile_row_max(mx, row, r0, n);
            L->tile_row_exp(row, mx, sum, r0, n);
            for (size_t r = 0; r < n; r++) {
                if (r < r0) {
                    assert_true(mx[r] == mx0[r] && sum[r] == sum0[r] && row[r] == 0.0f);
                    continue;
                }
                assert_true(mx[r] == fmaxf(mx0[r], row0[r]));
                double p = exp((double)row0[r] - mx[r]);
                near(row[r], p, 1e-6, 0, "tile_row_exp", n, r);
                near(sum[r], sum0[r] + p, 1e-6, 1e-7, "tile_row_exp sum", n, r);
            }
            free(row), free(mx), free(sum), free(row0), free(mx0), free(sum0);
        }
        /* The running maxima after a tile: the factor that rescales each row's
         * sum (and output); from a max of -inf (the first tile, whose sums and
         * outputs are 0) fast_expf's smallest, exp(-87). */
        float *mx = rand_tensor(n, 8.0f, 600 + t), *mx_new = rand_tensor(n, 8.0f, 700 + t),
              *sum = rand_tensor(n, 1.0f, 800 + t), *corr = malloc(n * sizeof(float));
        for (size_t r = 0; r < n; r++) mx_new[r] = fmaxf(mx[r], mx_new[r]);
        if (n > 1) mx[1] = -INFINITY;
        float *mx0 = copy_of(mx, n), *sum0 = copy_of(sum, n);
        L->tile_running_max(corr, mx, sum, mx_new, n);
        for (size_t r = 0; r < n; r++) {
            double c = exp((double)(mx0[r] - mx_new[r])); /* the loop's argument, rounded to float */
            near(corr[r], c, 1e-6, 2e-38, "tile_running_max corr", n, r);
            assert_true(sum[r] == sum0[r] * corr[r] && mx[r] == mx_new[r]);
        }
        free(mx), free(mx_new), free(sum), free(corr), free(mx0), free(sum0);
        /* The rescaling of 3 output rows n + 5 apart: each entry's one product,
         * exactly, and the gaps between the rows untouched. */
        size_t ldo = n + 5, len = 3 * ldo;
        float *o = rand_tensor(len, 8.0f, 500 + t), *o0 = copy_of(o, len), s[3] = {0.37f, 1.0f, 3.1f};
        L->tile_rows_scale(o, ldo, s, 3, n);
        for (size_t i = 0; i < len; i++) assert_true(o[i] == (i % ldo < n ? o0[i] * s[i / ldo] : o0[i]));
        free(o), free(o0);
    }
}

static void test_softmax_grad_row(void **state) {
    (void)state;
    const VecLoops *L = vec_loops();
    for (size_t t = 0; t < N_LENGTHS; t++) {
        size_t n = LENGTHS[t];
        float *p = rand_tensor(n, 3.0f, 500 + t), *d = rand_tensor(n, 1.0f, 600 + t);
        float *p0 = copy_of(p, n), *d0 = copy_of(d, n);
        float lse = 2.5f, delta = 0.25f;
        L->softmax_grad_row(p, d, lse, delta, n);
        for (size_t c = 0; c < n; c++) {
            double pe = exp((double)p0[c] - lse);
            near(p[c], pe, 1e-6, 0, "softmax_grad_row p", n, c);
            near(d[c], pe * ((double)d0[c] - delta), 1e-5, 1e-7, "softmax_grad_row d", n, c);
        }
        free(p), free(d), free(p0), free(d0);
    }
}

/* The loss's rows: the maximum exactly, the sum of exponentials, the
 * softmax and the gradient through softmax and soft cap against double
 * precision (logits up to 30 apart, as a trained model's are), in place too. */
static void test_loss_rows(void **state) {
    (void)state;
    const VecLoops *L = vec_loops();
    for (size_t t = 0; t < N_LENGTHS; t++) {
        size_t n = LENGTHS[t];
        float *z = rand_tensor(n, 15.0f, 1300 + t), *p = zeros(n), *q = copy_of(z, n);
        float mx = z[0];
        for (size_t v = 1; v < n; v++) mx = fmaxf(mx, z[v]);
        assert_true(L->row_max(z, n) == mx);
        double s = 0;
        for (size_t v = 0; v < n; v++) s += exp((double)z[v] - mx);
        near(L->row_sum_exp(z, mx, n), s, 1e-6, 0, "row_sum_exp", n, 0);
        L->softmax(p, z, n);
        L->softmax(q, q, n);
        for (size_t v = 0; v < n; v++) {
            near(p[v], exp((double)z[v] - mx) / s, 1e-5, 1e-12, "softmax", n, v);
            assert_true(q[v] == p[v]);
        }
        /* Through the softmax and a cap of 20 at once, and in place. */
        float scale = (float)(0.5 / s);
        memcpy(q, z, n * sizeof *q);
        L->softcap_softmax_grad(p, z, mx, scale, 1.0f / 20.0f, n);
        L->softcap_softmax_grad(q, q, mx, scale, 1.0f / 20.0f, n);
        for (size_t v = 0; v < n; v++) {
            double t = (double)z[v] / 20.0;
            near(p[v], exp((double)z[v] - mx) * scale * (1.0 - t * t), 1e-5, 1e-12, "softcap_softmax_grad", n, v);
            assert_true(q[v] == p[v]);
        }
        free(z), free(p), free(q);
    }
}

/* The logit soft cap: cap tanh(x / cap) within 2e-7 cap of double precision,
 * and at most cap in size however large the logit. */
static void test_softcap(void **state) {
    (void)state;
    const VecLoops *L = vec_loops();
    for (size_t t = 0; t < N_LENGTHS; t++) {
        size_t n = LENGTHS[t];
        float *x = rand_tensor(n, 40.0f, 1400 + t), *x0 = copy_of(x, n), cap = 15.0f;
        L->softcap(x, n, cap);
        for (size_t i = 0; i < n; i++) near(x[i], cap * tanh((double)x0[i] / cap), 0, 2e-7 * cap, "softcap", n, i);
        free(x), free(x0);
    }
    float big[4] = {1e4f, -1e4f, 3e38f, -3e38f};
    L->softcap(big, 4, 2.0f);
    assert_true(big[0] == 2.0f && big[1] == -2.0f && big[2] == 2.0f && big[3] == -2.0f);
}

static void test_layernorm_rows(void **state) {
    (void)state;
    const VecLoops *L = vec_loops();
    for (size_t t = 0; t < N_LENGTHS; t++) {
        size_t C = LENGTHS[t];
        if (C < 2) continue;
        float *x = rand_tensor(C, 2.0f, 700 + t), *w = rand_tensor(C, 1.0f, 800 + t), *b = rand_tensor(C, 1.0f, 900 + t);
        float *out = zeros(C), *dy = rand_tensor(C, 1.0f, 1000 + t), *dx = rand_tensor(C, 1.0f, 1100 + t);
        float *dx0 = copy_of(dx, C), mean, rstd;
        L->layernorm_row(out, &mean, &rstd, x, w, b, C);
        L->layernorm_row_backward(dx, dy, x, w, mean, rstd, C);
        double m = 0, var = 0, sd = 0, sdx = 0;
        for (size_t c = 0; c < C; c++) m += x[c];
        m /= (double)C;
        for (size_t c = 0; c < C; c++) var += (x[c] - m) * (x[c] - m);
        double s = 1.0 / sqrt(var / (double)C + LAYERNORM_EPS);
        near(mean, m, 1e-5, 1e-6, "layernorm mean", C, 0);
        near(rstd, s, 1e-5, 1e-6, "layernorm rstd", C, 0);
        for (size_t c = 0; c < C; c++) {
            near(out[c], (x[c] - m) * s * w[c] + b[c], 1e-5, 1e-6, "layernorm out", C, c);
            sd += (double)dy[c] * w[c];
            sdx += (double)dy[c] * w[c] * (x[c] - m) * s;
        }
        sd /= (double)C, sdx /= (double)C;
        for (size_t c = 0; c < C; c++) {
            double xhat = (x[c] - m) * s;
            near(dx[c], dx0[c] + s * ((double)dy[c] * w[c] - sd - xhat * sdx), 1e-4, 1e-5, "layernorm dx", C, c);
        }
        free(x), free(w), free(b), free(out), free(dy), free(dx), free(dx0);
    }
}

static void test_adamw(void **state) {
    (void)state;
    const VecLoops *L = vec_loops();
    AdamWLoop k = {.b1 = 0.9f, .b2 = 0.95f, .c1 = 1.0f - 0.9f * 0.9f, .c2 = 1.0f - 0.95f * 0.95f, .decay = 0.999f,
                   .lr = 1e-3f, .eps = 1e-8f, .grad_scale = 0.5f};
    for (size_t t = 0; t < N_LENGTHS; t++) {
        size_t n = LENGTHS[t];
        float *p = rand_tensor(n, 1.0f, 1200 + t), *g = rand_tensor(n, 1.0f, 1300 + t);
        float *m = rand_tensor(n, 0.1f, 1400 + t), *v = rand_tensor(n, 0.1f, 1500 + t);
        for (size_t i = 0; i < n; i++) v[i] = fabsf(v[i]);
        float *p0 = copy_of(p, n), *m0 = copy_of(m, n), *v0 = copy_of(v, n);
        L->adamw(p, g, m, v, n, &k);
        for (size_t i = 0; i < n; i++) {
            double gi = (double)g[i] * k.grad_scale, mi = k.b1 * (double)m0[i] + (1.0 - k.b1) * gi;
            double vi = k.b2 * (double)v0[i] + (1.0 - k.b2) * gi * gi;
            double pi = p0[i] * (double)k.decay - k.lr * (mi / k.c1) / (sqrt(vi / k.c2) + k.eps);
            near(m[i], mi, 1e-6, 1e-7, "adamw m", n, i);
            near(v[i], vi, 1e-6, 1e-9, "adamw v", n, i);
            near(p[i], pi, 1e-6, 1e-7, "adamw param", n, i);
        }
        free(p), free(g), free(m), free(v), free(p0), free(m0), free(v0);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_level),          cmocka_unit_test(test_floor_by_truncation),
        cmocka_unit_test(test_gelu),           cmocka_unit_test(test_tile_row),
        cmocka_unit_test(test_softmax_grad_row), cmocka_unit_test(test_loss_rows),
        cmocka_unit_test(test_softcap),        cmocka_unit_test(test_layernorm_rows),
        cmocka_unit_test(test_adamw),
    };
    return cmocka_run_group_tests_name("vec_loops", tests, NULL, NULL);
}
