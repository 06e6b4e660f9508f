/* Helpers for the cmocka tests: random tensors and a finite-difference
 * gradient check against a scalar objective. */
#ifndef LM_TESTUTIL_H
#define LM_TESTUTIL_H

#include <fnmatch.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lm/rng.h"

static inline float *rand_tensor(size_t n, float scale, uint64_t seed) {
    float *x = malloc(n * sizeof(float));
    Rng r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) x[i] = scale * rng_normal(&r);
    return x;
}

static inline float *zeros(size_t n) { return calloc(n, sizeof(float)); }

/* Part of a test program, for running its parts side by side (the ARM64
 * build under qemu-user does so with its longest, one emulator per core):
 * LM_TEST_ONLY=P1,P2,... keeps only the tests whose names match one of the
 * patterns (fnmatch: '*', '?', [...]), and LM_TEST_SKIP=... all but those,
 * so that ONLY=X and SKIP=X run every test between them. Compacts tests[]
 * in place and returns how many are left, for _cmocka_run_group_tests. */
static inline int test_name_in(const char *name, const char *patterns) {
    char buf[256];
    for (const char *p = patterns; *p;) {
        size_t len = strcspn(p, ",");
        if (len < sizeof buf) {
            memcpy(buf, p, len);
            buf[len] = '\0';
            if (fnmatch(buf, name, 0) == 0) return 1;
        }
        p += len + (p[len] == ',');
    }
    return 0;
}
static inline size_t test_select(struct CMUnitTest *tests, size_t n) {
    const char *only = getenv("LM_TEST_ONLY"), *skip = getenv("LM_TEST_SKIP");
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (only && only[0] && !test_name_in(tests[i].name, only)) continue;
        if (skip && skip[0] && test_name_in(tests[i].name, skip)) continue;
        tests[kept++] = tests[i];
    }
    return kept;
}

/* Makes an empty file from a mkstemp template ("/tmp/name_XXXXXX", changed
 * in place) for a test to write and read back. */
static inline void temp_file(char *path) {
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
}

/* sum(out * w) in double: the scalar whose gradient with respect to out is w. */
static inline double dot_objective(const float *out, const float *w, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)out[i] * w[i];
    return s;
}

static inline size_t gcd_size(size_t a, size_t b) {
    while (b) {
        size_t r = a % b;
        a = b, b = r;
    }
    return a;
}

/* The stride between sampled entries when `samples` of n are checked: at
 * least n / samples and prime to n, so that entry k * stride mod n, for
 * k < samples, are distinct and meet every column of a matrix of n entries
 * (a stride of n / samples that is a multiple of the row length would see
 * one column alone: 24 samples of a 24 x 8 matrix, column 0 only). */
static inline size_t fd_stride(size_t n, size_t samples) {
    if (samples >= n) return 1;
    size_t stride = n / samples;
    while (gcd_size(stride, n) != 1) stride++;
    return stride;
}

/* Compares an analytic gradient `grad` of `x` (n entries) with central
 * differences of objective(ctx) at up to `samples` entries (all if fewer),
 * spread over rows and columns alike (fd_stride). Returns the relative
 * error |fd - grad| / max(|fd|, |grad|) over the sampled entries, as
 * vectors. */
typedef double (*Objective)(void *ctx);
static inline double fd_rel_error(Objective f, void *ctx, float *x, const float *grad, size_t n, size_t samples,
                                  float h, const char *what) {
    double num = 0.0, den_fd = 0.0, den_an = 0.0;
    size_t stride = fd_stride(n, samples), count = samples < n ? samples : n;
    for (size_t k = 0; k < count; k++) {
        size_t i = k * stride % n;
        float orig = x[i];
        x[i] = orig + h;
        double up = f(ctx);
        x[i] = orig - h;
        double down = f(ctx);
        x[i] = orig;
        double fd = (up - down) / (2.0 * (double)h);
        num += (fd - grad[i]) * (fd - grad[i]);
        den_fd += fd * fd;
        den_an += (double)grad[i] * grad[i];
    }
    double den = sqrt(den_fd > den_an ? den_fd : den_an);
    double rel = den > 0 ? sqrt(num) / den : sqrt(num);
    if (getenv("VERBOSE")) printf("  %-28s rel err %.2e (|grad| %.3e)\n", what, rel, sqrt(den_an));
    return rel;
}

/* Fails the test (with the name) when the relative error exceeds tol, or when
 * the gradient is identically zero (a check that cannot fail proves nothing). */
#define CHECK_GRAD(f, ctx, x, grad, n, samples, h, tol, what)                                      \
    do {                                                                                           \
        double _e = fd_rel_error(f, ctx, x, grad, n, samples, h, what);                            \
        double _g = 0.0;                                                                           \
        for (size_t _i = 0; _i < (n); _i++) _g += fabs((grad)[_i]);                                \
        if (!(_e <= (tol)) || _g == 0.0) fail_msg("%s: relative error %.3e (tol %.1e), |grad|_1 %.3e", what, _e, (double)(tol), _g); \
    } while (0)

#endif
