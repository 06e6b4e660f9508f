/* Unit tests of the Grassmann mixer's hot loops (src/mixers/grassmann_*.c)
 * at the level this run uses (make test runs it once per level, LM_MAX_ISA),
 * each against a double-precision reference: the wedge and one normalised
 * pair at ranks that take every vector body and tail, the mean over offsets
 * (muted offsets included) and its backward (against central differences of
 * the double forward) for each pair map (wedge, outer, sum), and the gate at
 * lengths 1 .. 67 and a long one. */
#include "testutil.h"

#include <math.h>

#include "lm/cpu.h"
#include "mixers/grassmann.h"
#include "mixers/grassmann_loops.h"

static const size_t RANKS[] = {2, 3, 4, 5, 7, 8, 9, 16, 17, 33};
#define N_RANKS (sizeof RANKS / sizeof RANKS[0])
static const size_t LENGTHS[] = {1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 67, 1000};
#define N_LENGTHS (sizeof LENGTHS / sizeof LENGTHS[0])

/* |got - want| within rel |want| + abs. */
static void near(double got, double want, double rel, double abs, const char *what, size_t n, size_t i) {
    double tol = rel * fabs(want) + abs;
    if (!(fabs(got - want) <= tol)) fail_msg("%s (n %zu, [%zu]): %.9g, want %.9g", what, n, i, got, want);
}

/* p += scale (a ^ b) / max(|a ^ b|, eps) in double (scale 0: the plain wedge, not normalised). */
static void pair_ref(double *p, const double *a, const double *b, double scale, double eps, size_t r) {
    double n2 = 0.0;
    for (size_t i = 0, k = 0; i < r; i++)
        for (size_t j = i + 1; j < r; j++, k++) n2 += (a[i] * b[j] - a[j] * b[i]) * (a[i] * b[j] - a[j] * b[i]);
    double s = scale == 0.0 ? 1.0 : scale / fmax(sqrt(n2), eps);
    for (size_t i = 0, k = 0; i < r; i++)
        for (size_t j = i + 1; j < r; j++, k++) p[k] += s * (a[i] * b[j] - a[j] * b[i]);
}

static double *to_double(const float *x, size_t n) {
    double *d = malloc(n * sizeof *d);
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

/* The table in use is the level cpu_isa() names (LM_MAX_ISA caps it). */
static void test_level(void **state) {
    (void)state;
    assert_string_equal(grassmann_loops()->isa, cpu_isa_name(cpu_isa()));
}

static void test_wedge_and_pair(void **state) {
    (void)state;
    const GrassmannLoops *L = grassmann_loops();
    for (size_t t = 0; t < N_RANKS; t++) {
        size_t r = RANKS[t], P = grassmann_n_pairs(r);
        float *a = rand_tensor(r, 1.0f, 10 + t), *b = rand_tensor(r, 1.0f, 20 + t), *p = zeros(P),
              *q = rand_tensor(P, 1.0f, 30 + t);
        double *ad = to_double(a, r), *bd = to_double(b, r), *pw = calloc(P, sizeof(double)), *qw = to_double(q, P);
        L->wedge(p, a, b, r);
        L->pair_forward(q, a, b, 0.25f, GRASSMANN_EPS, r);
        pair_ref(pw, ad, bd, 0.0, 0.0, r);
        pair_ref(qw, ad, bd, 0.25, GRASSMANN_EPS, r);
        for (size_t k = 0; k < P; k++) {
            near(p[k], pw[k], 1e-6, 1e-7, "wedge", r, k);
            near(q[k], qw[k], 1e-5, 1e-6, "pair_forward", r, k);
        }
        free(a), free(b), free(p), free(q), free(ad), free(bd), free(pw), free(qw);
    }
}

/* q (F) += scale * the map of one pair, in double: the normalised wedge
 * (pair_ref), the normalised outer product or the sum. */
static void map_ref(GrassmannPair pair, double *q, const double *a, const double *b, double scale, size_t r) {
    if (pair == GRASSMANN_PAIR_WEDGE) {
        pair_ref(q, a, b, scale, GRASSMANN_EPS, r);
    } else if (pair == GRASSMANN_PAIR_OUTER) {
        double aa = 0.0, bb = 0.0;
        for (size_t i = 0; i < r; i++) aa += a[i] * a[i], bb += b[i] * b[i];
        double s = scale / fmax(sqrt(aa) * sqrt(bb), GRASSMANN_EPS);
        for (size_t i = 0; i < r; i++)
            for (size_t j = 0; j < r; j++) q[i * r + j] += s * a[i] * b[j];
    } else {
        for (size_t i = 0; i < r; i++) q[i] += scale * (a[i] + b[i]);
    }
}

/* qbar (B, T, F) of z (B, T, r) in double, as grassmann_mix_forward defines it. */
static void mix_ref(GrassmannPair pair, double *qbar, const double *z, const size_t *windows, size_t nw,
                    uint32_t muted, size_t B, size_t T, size_t r) {
    size_t P = grassmann_n_features(pair, r);
    for (size_t n = 0; n < B * T; n++) {
        size_t t = n % T, cnt = 0;
        for (size_t k = 0; k < nw; k++) cnt += windows[k] <= t;
        for (size_t k = 0; k < P; k++) qbar[n * P + k] = 0.0;
        for (size_t k = 0; k < nw; k++)
            if (windows[k] <= t && !(muted >> k & 1u))
                map_ref(pair, qbar + n * P, z + n * r, z + (n - windows[k]) * r, 1.0 / (double)cnt, r);
    }
}

static const size_t WINDOWS[] = {1, 2, 4};
#define NW (sizeof WINDOWS / sizeof WINDOWS[0])

static void test_mix_forward(void **state) {
    (void)state;
    const GrassmannLoops *L = grassmann_loops();
    size_t B = 2, T = 9;
    for (GrassmannPair pair = 0; pair < GRASSMANN_PAIR_COUNT; pair++)
    for (size_t t = 0; t < N_RANKS; t++) {
        size_t r = RANKS[t], P = grassmann_n_features(pair, r);
        const GrassmannMapLoops *M = &L->map[pair];
        for (uint32_t muted = 0; muted < 4; muted += 2) { /* none, then offset 2 muted */
            float *z = rand_tensor(B * T * r, 1.0f, 40 + t), *q = zeros(B * T * P);
            double *zd = to_double(z, B * T * r), *qw = malloc(B * T * P * sizeof(double));
            M->mix_forward(q, z, WINDOWS, NW, muted, B, T, r, GRASSMANN_EPS);
            mix_ref(pair, qw, zd, WINDOWS, NW, muted, B, T, r);
            for (size_t k = 0; k < B * T * P; k++) near(q[k], qw[k], 1e-4, 1e-5, "mix_forward", r, k);
            /* One row alone, as the sampling step takes it: the same numbers. */
            size_t n = B * T - 1;
            const float *past[NW];
            float *row = zeros(P);
            for (size_t k = 0; k < NW; k++) past[k] = z + (n - WINDOWS[k]) * r;
            M->mix_row(row, z + n * r, past, WINDOWS, NW, muted, T - 1, GRASSMANN_EPS, r);
            assert_memory_equal(row, q + n * P, P * sizeof(float));
            free(z), free(q), free(zd), free(qw), free(row);
        }
    }
}

/* dz of L = sum dq . qbar(z) against central differences of the double forward. */
static void test_mix_backward(void **state) {
    (void)state;
    const GrassmannLoops *L = grassmann_loops();
    size_t B = 1, T = 7;
    for (GrassmannPair pair = 0; pair < GRASSMANN_PAIR_COUNT; pair++)
    for (size_t t = 0; t < N_RANKS; t++) {
        size_t r = RANKS[t], P = grassmann_n_features(pair, r), N = B * T;
        float *z = rand_tensor(N * r, 1.0f, 60 + t), *dq = rand_tensor(N * P, 1.0f, 70 + t), *dz = zeros(N * r),
              *u = zeros(N * r), *coef = zeros(N * (3 * NW + 1));
        double *zd = to_double(z, N * r), *q = malloc(N * P * sizeof(double));
        L->map[pair].mix_backward(dz, u, coef, dq, z, WINDOWS, NW, B, T, r, GRASSMANN_EPS);
        for (size_t i = 0; i < N * r; i++) {
            double h = 1e-6, lp = 0.0, lm = 0.0, z0 = zd[i];
            zd[i] = z0 + h;
            mix_ref(pair, q, zd, WINDOWS, NW, 0, B, T, r);
            for (size_t k = 0; k < N * P; k++) lp += dq[k] * q[k];
            zd[i] = z0 - h;
            mix_ref(pair, q, zd, WINDOWS, NW, 0, B, T, r);
            for (size_t k = 0; k < N * P; k++) lm += dq[k] * q[k];
            zd[i] = z0;
            near(dz[i], (lp - lm) / (2 * h), 1e-4, 1e-4, "mix_backward", r, i);
        }
        free(z), free(dq), free(dz), free(u), free(coef), free(zd), free(q);
    }
}

static void test_gate(void **state) {
    (void)state;
    const GrassmannLoops *L = grassmann_loops();
    for (size_t t = 0; t < N_LENGTHS; t++) {
        size_t n = LENGTHS[t];
        float *a = rand_tensor(n, 4.0f, 80 + t), *x = rand_tensor(n, 1.0f, 90 + t), *g = rand_tensor(n, 1.0f, 100 + t),
              *dm = rand_tensor(n, 1.0f, 110 + t), *m = zeros(n), *dx = zeros(n), *dg = zeros(n), *dap = zeros(n);
        double *pre = to_double(a, n);
        L->gate_forward(m, a, x, g, n);
        L->gate_backward(dx, dg, dap, dm, a, x, g, n);
        for (size_t i = 0; i < n; i++) {
            double s = 1.0 / (1.0 + exp(-pre[i]));
            near(a[i], s, 1e-5, 1e-7, "gate sigmoid", n, i);
            near(m[i], s * x[i] + (1.0 - s) * g[i], 1e-5, 1e-6, "gate_forward", n, i);
            near(dx[i], dm[i] * s, 1e-5, 1e-6, "gate dx", n, i);
            near(dg[i], dm[i] * (1.0 - s), 1e-5, 1e-6, "gate dg", n, i);
            near(dap[i], dm[i] * (x[i] - g[i]) * s * (1.0 - s), 1e-4, 1e-6, "gate dapre", n, i);
        }
        free(a), free(x), free(g), free(dm), free(m), free(dx), free(dg), free(dap), free(pre);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_level),        cmocka_unit_test(test_wedge_and_pair), cmocka_unit_test(test_mix_forward),
        cmocka_unit_test(test_mix_backward), cmocka_unit_test(test_gate),
    };
    return cmocka_run_group_tests_name("grassmann_loops", tests, NULL, NULL);
}
