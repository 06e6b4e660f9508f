/* The Grassmann mixer's hot loops (mixers/grassmann_loops.h) as a template,
 * compiled by the Makefile once per instruction-set level with that level's
 * flags (runtime/level.h) into the table grassmann_loops_LEVEL: without AVX
 * on x86-64 (SSE2) and without fused multiply-adds on ARM64 at the portable
 * level, AVX2 and FMA, AVX-512F, or ARM64's NEON with its fused
 * multiply-adds. The loops are plain C with `omp simd`, which the compiler
 * vectorises at the level. The reductions (the dot products in double, u
 * and v of the backward) add in vector-width order, so levels differ in the
 * last bits; each is the same run to run. */
#include <math.h>
#include <string.h>

#include "lm/ops.h"
#include "mixers/grassmann.h"
#include "mixers/grassmann_loops.h"
#include "runtime/level.h"

/* ---- the mixing: normalised Plücker coordinates, averaged over offsets ----
 *
 * For a = z_t and the valid past vectors b_d = z_{t-d} (cnt of them):
 *   qbar_t = (1/cnt) sum_d (a ^ b_d) / max(|a ^ b_d|, eps)
 * where (a ^ b)_ij = a_i b_j - a_j b_i, i < j, are the Plücker coordinates.
 * Two identities make this cheap:
 * - a ^ b is linear in b, so the sum over offsets is a single wedge:
 *     qbar_t = a ^ c,  c = sum_d s_d b_d,  s_d = 1 / (cnt max(|a ^ b_d|, eps));
 * - |a ^ b|^2 = |a|^2 |b|^2 - (a.b)^2 (Lagrange's identity): O(r), not O(r^2).
 * Dot products are taken in double, so the difference keeps float accuracy
 * down to angles far smaller than a float computation of the coordinates
 * themselves would resolve. Per position: one wedge (r^2 work) instead of
 * one per offset. */

static double dot_d(const float *x, const float *y, size_t r) {
    double s = 0.0;
#pragma omp simd reduction(+ : s)
    for (size_t i = 0; i < r; i++) s += (double)x[i] * y[i];
    return s;
}

/* |a ^ b| from |a|^2, |b|^2 and a.b (never negative: round-off can make the
 * difference a hair below zero for parallel vectors). */
static double wedge_norm(double aa, double bb, double ab) {
    double n2 = aa * bb - ab * ab;
    return n2 > 0.0 ? sqrt(n2) : 0.0;
}

/* The offset of coordinate (i, i+1) in the packed i < j order; the
 * coordinates (i, j), j > i, follow it contiguously. */
static size_t pair_row(size_t i, size_t r) { return i * (2 * r - i - 1) / 2; }

static void wedge_loop(float *p, const float *a, const float *b, size_t r) {
    for (size_t i = 0; i < r; i++) {
        const float ai = a[i], bi = b[i];
        float *pi = p + pair_row(i, r) - (i + 1);
#pragma omp simd
        for (size_t j = i + 1; j < r; j++) pi[j] = ai * b[j] - a[j] * bi;
    }
}

/* At the clamp (|a ^ b| <= eps) b is nearly a multiple of a, and the
 * weight s = w / eps is large: s b would hold a large multiple of a whose
 * wedge with a cancels in float to noise far above the true a ^ b. There b is
 * replaced by its component orthogonal to a, b' = b - (a.b / |a|^2) a,
 * computed in double: a ^ a = 0, so a ^ b' = a ^ b exactly and the maths is
 * unchanged (the backward adds back the gradient of the part taken out).
 * A parallel pair, |a ^ b| <= GRASSMANN_PARALLEL |a| |b| (a repeated token's
 * equal z, or equal but for rounding: a zero a or b too), has no direction:
 * it adds nothing and, by convention, passes no gradient (as if b moved with
 * a, which a repeated token's z does), where s (a ^ b) would pass opposite
 * gradients of size 1/|a ^ b| to a and b whose sum upstream is zero but
 * cancels in float to noise. */
static int parallel(double aa, double bb, double nrm) { return nrm <= GRASSMANN_PARALLEL * sqrt(aa * bb); }

static void orthogonal_part(float *bp, const float *a, const float *b, double lam, size_t r) {
    for (size_t i = 0; i < r; i++) bp[i] = (float)((double)b[i] - lam * a[i]);
}

static void pair_forward_loop(float *qbar, const float *zc, const float *zp, float scale, float eps, size_t r) {
    double aa = dot_d(zc, zc, r), bb = dot_d(zp, zp, r), ab = dot_d(zc, zp, r), nrm = wedge_norm(aa, bb, ab);
    if (parallel(aa, bb, nrm)) return; /* no direction */
    float s = (float)(scale / (nrm > eps ? nrm : eps)), bp[GRASSMANN_MAX_RANK];
    if (nrm <= eps) {
        orthogonal_part(bp, zc, zp, ab / aa, r);
        zp = bp;
    }
    for (size_t i = 0; i < r; i++) {
        const float ci = zc[i], pi = zp[i];
        float *qi = qbar + pair_row(i, r) - (i + 1);
#pragma omp simd
        for (size_t j = i + 1; j < r; j++) qi[j] += s * (ci * zp[j] - zc[j] * pi);
    }
}

static size_t n_valid(const size_t *windows, size_t n_windows, size_t t) {
    size_t n = 0;
    for (size_t w = 0; w < n_windows; w++) n += windows[w] <= t;
    return n;
}

/* c = sum over valid offsets of s_d b_d for the row at position t, whose past
 * vectors are past(w) (z rows); returns cnt. s_out[w] (may be NULL) gets s_d
 * (0 for a parallel pair), *clamped (may be NULL) the sum over pairs at the
 * clamp of s_d (a.b_d / |a|^2), the multiple of a that c leaves out there
 * (orthogonal_part). Muted offsets (bit k of muted) add nothing but still
 * count in cnt. */
static size_t combine_past(float *c, float *s_out, double *clamped, const float *a, const float *const *past,
                           const size_t *windows, size_t n_windows, uint32_t muted, size_t t, float eps, size_t r) {
    size_t cnt = n_valid(windows, n_windows, t);
    memset(c, 0, r * sizeof(float));
    if (clamped) *clamped = 0.0;
    if (cnt == 0) return 0;
    double aa = dot_d(a, a, r), w = 1.0 / (double)cnt;
    for (size_t k = 0; k < n_windows; k++) {
        if (windows[k] > t || (muted >> k & 1u)) continue;
        const float *b = past[k];
        double ab = dot_d(a, b, r), bb = dot_d(b, b, r), nrm = wedge_norm(aa, bb, ab);
        int none = parallel(aa, bb, nrm); /* no direction */
        float s = none ? 0.0f : (float)(w / (nrm > eps ? nrm : eps)), bp[GRASSMANN_MAX_RANK];
        if (s_out) s_out[k] = s;
        if (none) continue;
        if (nrm <= eps) {
            orthogonal_part(bp, a, b, ab / aa, r);
            if (clamped) *clamped += (double)s * (ab / aa);
            b = bp;
        }
#pragma omp simd
        for (size_t i = 0; i < r; i++) c[i] += s * b[i];
    }
    return cnt;
}

/* The past vectors of row n (position t) of z: z_{n-d} where d <= t. */
static void past_rows(const float **past, const float *z, size_t n, size_t t, const size_t *windows,
                      size_t n_windows, size_t r) {
    for (size_t k = 0; k < n_windows; k++) past[k] = windows[k] <= t ? z + (n - windows[k]) * r : NULL;
}

/* qbar (P) for one row a at position t whose past vectors are past (NULL
 * where an offset does not fit): a ^ c, or 0 where no offset fits. */
static void mix_row_loop(float *qbar, const float *a, const float *const *past, const size_t *windows,
                         size_t n_windows, uint32_t muted, size_t t, float eps, size_t r) {
    float c[GRASSMANN_MAX_RANK];
    if (combine_past(c, NULL, NULL, a, past, windows, n_windows, muted, t, eps, r) == 0)
        memset(qbar, 0, grassmann_n_pairs(r) * sizeof(float));
    else
        wedge_loop(qbar, a, c, r);
}

static void mix_forward_loop(float *qbar, const float *z, const size_t *windows, size_t n_windows, uint32_t muted,
                             size_t B, size_t T, size_t r, float eps) {
    size_t P = grassmann_n_pairs(r);
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < B * T; n++) {
        const float *past[GRASSMANN_MAX_WINDOWS];
        size_t t = n % T;
        past_rows(past, z, n, t, windows, n_windows, r);
        mix_row_loop(qbar + n * P, z + n * r, past, windows, n_windows, muted, t, eps, r);
    }
}

/* With dQ the antisymmetric matrix of dq (dQ_ij = dq_ij for i < j), the
 * products u = -dQ a and v = dQ c in one pass over the packed triangle. */
static void antisym_matvecs(float *u, float *v, const float *dq, const float *a, const float *c, size_t r) {
    memset(u, 0, r * sizeof(float));
    memset(v, 0, r * sizeof(float));
    for (size_t i = 0; i < r; i++) {
        const float *row = dq + pair_row(i, r) - (i + 1), ai = a[i], ci = c[i];
        float ui = 0.0f, vi = 0.0f;
#pragma omp simd reduction(+ : ui, vi)
        for (size_t j = i + 1; j < r; j++) {
            vi += row[j] * c[j];
            v[j] -= row[j] * ci;
            ui -= row[j] * a[j];
            u[j] += row[j] * ai;
        }
        u[i] += ui;
        v[i] += vi;
    }
}

/* Backward, for the loss L = sum_t dqbar_t . qbar_t = sum_t a^T dQ_t c:
 *   dL/da = dQ c + sum_d kappa_d (|b_d|^2 a - (a.b_d) b_d)        (a as itself)
 *   dL/db_d = s_d u + kappa_d (|a|^2 b_d - (a.b_d) a)             (b_d in c and in s_d)
 * with u = dQ^T a = -dQ a, e_d = u.b_d = dL/ds_d and, above the clamp,
 * kappa_d = -e_d s_d / |a ^ b_d|^2 (ds/d|a^b| = -s/|a^b|); at the clamp s_d
 * is constant and kappa_d = 0 (c there holds s_d b_d' in place of s_d b_d,
 * orthogonal_part: dQ c gets back dQ (s_d b_d - s_d b_d') = -s_d (a.b_d/|a|^2) u;
 * a parallel pair has s_d = 0). Phase 1 does each position's own part and keeps
 * u, s, kappa and a.b; phase 2 adds what z_n receives as the past vector of
 * positions n + d, so each dz row has one writer and a fixed order. */
static void mix_backward_loop(float *dz, float *u, float *coef, const float *dqbar, const float *z,
                              const size_t *windows, size_t n_windows, size_t B, size_t T, size_t r, float eps) {
    size_t N = B * T, P = grassmann_n_pairs(r), stride = n_windows * GRASSMANN_COEF_PER_OFFSET + 1;
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        const float *past[GRASSMANN_MAX_WINDOWS], *a = z + n * r;
        float c[GRASSMANN_MAX_RANK], v[GRASSMANN_MAX_RANK], s[GRASSMANN_MAX_WINDOWS];
        float *un = u + n * r, *cf = coef + n * stride, *dzn = dz + n * r;
        size_t t = n % T;
        past_rows(past, z, n, t, windows, n_windows, r);
        double clamped;
        size_t cnt = combine_past(c, s, &clamped, a, past, windows, n_windows, 0, t, eps, r);
        if (cnt == 0) {
            memset(un, 0, r * sizeof(float));
            memset(dzn, 0, r * sizeof(float));
            continue;
        }
        antisym_matvecs(un, v, dqbar + n * P, a, c, r);
        if (clamped != 0.0) { /* dQ of the multiple of a that c leaves out at the clamp: -clamped u */
            float k = (float)clamped;
#pragma omp simd
            for (size_t i = 0; i < r; i++) v[i] -= k * un[i];
        }
        double aa = dot_d(a, a, r);
        cf[n_windows * GRASSMANN_COEF_PER_OFFSET] = (float)aa;
        for (size_t k = 0; k < n_windows; k++) {
            if (!past[k]) continue;
            const float *b = past[k];
            double bb = dot_d(b, b, r), ab = dot_d(a, b, r), nrm = wedge_norm(aa, bb, ab);
            double kappa = nrm > eps ? -dot_d(un, b, r) * s[k] / (nrm * nrm) : 0.0;
            float ka = (float)(kappa * bb), kb = (float)(kappa * ab);
#pragma omp simd
            for (size_t i = 0; i < r; i++) v[i] += ka * a[i] - kb * b[i];
            cf[k * GRASSMANN_COEF_PER_OFFSET + 0] = s[k];
            cf[k * GRASSMANN_COEF_PER_OFFSET + 1] = (float)kappa;
            cf[k * GRASSMANN_COEF_PER_OFFSET + 2] = (float)ab;
        }
        memcpy(dzn, v, r * sizeof(float));
    }
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        size_t t = n % T;
        const float *b = z + n * r;
        float *dzn = dz + n * r;
        for (size_t k = 0; k < n_windows; k++) {
            size_t d = windows[k];
            if (t + d >= T) continue; /* no position n + d in this sequence */
            size_t m = n + d;
            const float *am = z + m * r, *um = u + m * r, *cf = coef + m * stride + k * GRASSMANN_COEF_PER_OFFSET;
            float s = cf[0], ka = cf[1] * coef[m * stride + n_windows * GRASSMANN_COEF_PER_OFFSET], kb = cf[1] * cf[2];
#pragma omp simd
            for (size_t i = 0; i < r; i++) dzn[i] += s * um[i] + ka * b[i] - kb * am[i];
        }
    }
}

/* ---- the controls: the same pairs through other maps (GrassmannPair) ----
 *
 * outer: the normalised outer product, qbar_t = (1/cnt) sum_d a b_d^T / max(|a| |b_d|, eps),
 *   r^2 features [i*r + j] = a_i c_j (the wedge is its antisymmetric part). It
 *   is linear in b too, so again one product: qbar_t = a c^T, c = sum_d s_d b_d,
 *   s_d = 1 / (cnt max(|a| |b_d|, eps)). No pair is degenerate: a zero a or b
 *   gives zero features, and the product needs no subtraction.
 * sum: no product, f_t = (1/cnt) sum_d (a + b_d), r features: a causal
 *   convolution of rank r with equal taps, through the same projection.
 * Muted offsets add nothing and still count in cnt, as for the wedge. */

/* c = sum over valid, unmuted offsets of s_d b_d (outer's s_d; s_out as
 * combine_past's); returns cnt. */
static size_t combine_outer(float *c, float *s_out, const float *a, const float *const *past, const size_t *windows,
                            size_t n_windows, uint32_t muted, size_t t, float eps, size_t r) {
    size_t cnt = n_valid(windows, n_windows, t);
    memset(c, 0, r * sizeof(float));
    if (cnt == 0) return 0;
    double na = sqrt(dot_d(a, a, r)), w = 1.0 / (double)cnt;
    for (size_t k = 0; k < n_windows; k++) {
        if (windows[k] > t || (muted >> k & 1u)) continue;
        const float *b = past[k];
        double nrm = na * sqrt(dot_d(b, b, r));
        float s = (float)(w / (nrm > eps ? nrm : eps));
        if (s_out) s_out[k] = s;
#pragma omp simd
        for (size_t i = 0; i < r; i++) c[i] += s * b[i];
    }
    return cnt;
}

static void outer_row_loop(float *qbar, const float *a, const float *const *past, const size_t *windows,
                           size_t n_windows, uint32_t muted, size_t t, float eps, size_t r) {
    float c[GRASSMANN_MAX_RANK];
    combine_outer(c, NULL, a, past, windows, n_windows, muted, t, eps, r);
    for (size_t i = 0; i < r; i++) {
        const float ai = a[i];
        float *qi = qbar + i * r;
#pragma omp simd
        for (size_t j = 0; j < r; j++) qi[j] = ai * c[j];
    }
}

/* f = (n_unmuted / cnt) a + (1/cnt) sum over unmuted offsets of b_d; 0 where no offset fits. */
static void sum_row_loop(float *f, const float *a, const float *const *past, const size_t *windows, size_t n_windows,
                         uint32_t muted, size_t t, float eps, size_t r) {
    (void)eps;
    size_t cnt = n_valid(windows, n_windows, t), used = 0;
    memset(f, 0, r * sizeof(float));
    if (cnt == 0) return;
    float w = 1.0f / (float)cnt;
    for (size_t k = 0; k < n_windows; k++) {
        if (windows[k] > t || (muted >> k & 1u)) continue;
        const float *b = past[k];
        used++;
#pragma omp simd
        for (size_t i = 0; i < r; i++) f[i] += w * b[i];
    }
    float ka = used == cnt ? 1.0f : (float)used * w;
#pragma omp simd
    for (size_t i = 0; i < r; i++) f[i] += ka * a[i];
}

/* mix_forward for a row function: each row from its past rows. */
#define MIX_FORWARD_OF(name, row, features)                                                                         \
    static void name(float *qbar, const float *z, const size_t *windows, size_t n_windows, uint32_t muted, size_t B, \
                     size_t T, size_t r, float eps) {                                                                \
        size_t F = features;                                                                                         \
        _Pragma("omp parallel for schedule(static)") for (size_t n = 0; n < B * T; n++) {                            \
            const float *past[GRASSMANN_MAX_WINDOWS];                                                                \
            size_t t = n % T;                                                                                        \
            past_rows(past, z, n, t, windows, n_windows, r);                                                         \
            row(qbar + n * F, z + n * r, past, windows, n_windows, muted, t, eps, r);                                \
        }                                                                                                            \
    }
MIX_FORWARD_OF(outer_forward_loop, outer_row_loop, r * r)
MIX_FORWARD_OF(sum_forward_loop, sum_row_loop, r)
#undef MIX_FORWARD_OF

/* Backward of the outer map, for L = sum_t a^T dQ_t c (dQ the (r, r) block of dqbar):
 *   dL/da   = dQ c - (sum_d e_d s_d) a / |a|^2
 *   dL/db_d = s_d u - e_d s_d b_d / |b_d|^2
 * with u = dQ^T a, e_d = u.b_d = dL/ds_d; at the clamp s_d is constant and
 * the second terms are 0. Phase 1 keeps u and, per offset, s_d and
 * -e_d s_d / |b_d|^2 (coef); phase 2 adds what z_n receives as a past vector,
 * in a fixed order, as mix_backward_loop does. */
static void outer_backward_loop(float *dz, float *u, float *coef, const float *dqbar, const float *z,
                                const size_t *windows, size_t n_windows, size_t B, size_t T, size_t r, float eps) {
    size_t N = B * T, stride = n_windows * GRASSMANN_COEF_PER_OFFSET + 1;
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        const float *past[GRASSMANN_MAX_WINDOWS], *a = z + n * r, *dq = dqbar + n * r * r;
        float c[GRASSMANN_MAX_RANK], s[GRASSMANN_MAX_WINDOWS];
        float *un = u + n * r, *cf = coef + n * stride, *dzn = dz + n * r;
        size_t t = n % T;
        past_rows(past, z, n, t, windows, n_windows, r);
        memset(un, 0, r * sizeof(float));
        memset(cf, 0, stride * sizeof(float));
        if (combine_outer(c, s, a, past, windows, n_windows, 0, t, eps, r) == 0) {
            memset(dzn, 0, r * sizeof(float));
            continue;
        }
        for (size_t i = 0; i < r; i++) { /* u = dQ^T a, dz = dQ c */
            const float *row = dq + i * r, ai = a[i];
            float vi = 0.0f;
#pragma omp simd reduction(+ : vi)
            for (size_t j = 0; j < r; j++) {
                vi += row[j] * c[j];
                un[j] += row[j] * ai;
            }
            dzn[i] = vi;
        }
        double aa = dot_d(a, a, r), ka = 0.0;
        for (size_t k = 0; k < n_windows; k++) {
            if (!past[k]) continue;
            const float *b = past[k];
            double bb = dot_d(b, b, r), e = dot_d(un, b, r);
            cf[k * GRASSMANN_COEF_PER_OFFSET + 0] = s[k];
            if (sqrt(aa) * sqrt(bb) <= eps) continue; /* at the clamp: as combine_outer's test */
            ka -= e * s[k] / aa;
            cf[k * GRASSMANN_COEF_PER_OFFSET + 1] = (float)(-e * s[k] / bb);
        }
        float kaf = (float)ka;
#pragma omp simd
        for (size_t i = 0; i < r; i++) dzn[i] += kaf * a[i];
    }
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        size_t t = n % T;
        const float *b = z + n * r;
        float *dzn = dz + n * r;
        for (size_t k = 0; k < n_windows; k++) {
            size_t d = windows[k];
            if (t + d >= T) continue;
            size_t m = n + d;
            const float *um = u + m * r, *cf = coef + m * stride + k * GRASSMANN_COEF_PER_OFFSET;
            float s = cf[0], kb = cf[1];
#pragma omp simd
            for (size_t i = 0; i < r; i++) dzn[i] += s * um[i] + kb * b[i];
        }
    }
}

/* Backward of the sum map: dL/da = df (where an offset fits), dL/db_d = df / cnt.
 * Phase 1 keeps u = df / cnt; phase 2 adds u_{n+d} to z_n's gradient. */
static void sum_backward_loop(float *dz, float *u, float *coef, const float *dqbar, const float *z,
                              const size_t *windows, size_t n_windows, size_t B, size_t T, size_t r, float eps) {
    (void)coef, (void)z, (void)eps;
    size_t N = B * T;
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        size_t cnt = n_valid(windows, n_windows, n % T);
        const float *df = dqbar + n * r;
        float w = cnt ? 1.0f / (float)cnt : 0.0f, keep = cnt ? 1.0f : 0.0f;
#pragma omp simd
        for (size_t i = 0; i < r; i++) {
            dz[n * r + i] = keep * df[i];
            u[n * r + i] = w * df[i];
        }
    }
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        size_t t = n % T;
        float *dzn = dz + n * r;
        for (size_t k = 0; k < n_windows; k++) {
            if (t + windows[k] >= T) continue;
            const float *um = u + (n + windows[k]) * r;
#pragma omp simd
            for (size_t i = 0; i < r; i++) dzn[i] += um[i];
        }
    }
}

static void gate_forward_loop(float *m, float *a, const float *x, const float *g, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        a[i] = 1.0f / (1.0f + fast_expf(-a[i]));
        m[i] = a[i] * x[i] + (1.0f - a[i]) * g[i];
    }
}

static void gate_backward_loop(float *dx, float *dg, float *dapre, const float *dm, const float *a,
                               const float *x, const float *g, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        dx[i] = dm[i] * a[i];
        dg[i] = dm[i] * (1.0f - a[i]);
        dapre[i] = dm[i] * (x[i] - g[i]) * a[i] * (1.0f - a[i]);
    }
}

const GrassmannLoops LEVEL_NAME(grassmann_loops) = {
    .isa = LEVEL_STRING,
    .wedge = wedge_loop,
    .pair_forward = pair_forward_loop,
    .map = {[GRASSMANN_PAIR_WEDGE] = {mix_row_loop, mix_forward_loop, mix_backward_loop},
            [GRASSMANN_PAIR_OUTER] = {outer_row_loop, outer_forward_loop, outer_backward_loop},
            [GRASSMANN_PAIR_SUM] = {sum_row_loop, sum_forward_loop, sum_backward_loop}},
    .gate_forward = gate_forward_loop,
    .gate_backward = gate_backward_loop,
};
