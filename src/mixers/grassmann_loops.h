/* The Grassmann mixer's hot loops (mixers/grassmann.h: the Plücker
 * coordinates, their normalised mean over the offsets, its backward and the
 * gate), one set per instruction-set level (lm/cpu.h). Each level's set is the
 * same template (mixers/grassmann_kernel.h) compiled with that level's flags
 * (mixers/grassmann_{portable,avx2,avx512,neon}.c), so a build for any
 * x86-64 (-march=x86-64) still runs them in AVX2 or AVX-512 where the CPU
 * has them, and LM_MAX_ISA caps them with the other kernels. */
#ifndef MIXERS_GRASSMANN_LOOPS_H
#define MIXERS_GRASSMANN_LOOPS_H

#include <stddef.h>
#include <stdint.h>

#include "mixers/grassmann.h"

/* Per (position, offset) the backward keeps s, kappa and a.b in its coef
 * scratch (see mix_backward_loop in mixers/grassmann_kernel.h), and per
 * position |a|^2. */
#define GRASSMANN_COEF_PER_OFFSET 3

/* P = r(r-1)/2, the Plücker coordinates of rank r. */
static inline size_t grassmann_n_pairs(size_t r) { return r * (r - 1) / 2; }

/* One pair map's loops (GrassmannPair): F features per position
 * (grassmann_n_features), so qbar and dqbar are (B, T, F). */
typedef struct GrassmannMapLoops {
    /* One row of mix_forward: qbar (F) for a (r) at position t, whose past
     * vectors z_{t-d} are past[k] (NULL where windows[k] > t), offsets k with
     * bit k of muted adding nothing (the sampling step's ring of past z). */
    void (*mix_row)(float *qbar, const float *a, const float *const *past, const size_t *windows, size_t n_windows,
                    uint32_t muted, size_t t, float eps, size_t r);
    void (*mix_forward)(float *qbar, const float *z, const size_t *windows, size_t n_windows, uint32_t muted,
                        size_t B, size_t T, size_t r, float eps);
    void (*mix_backward)(float *dz, float *u, float *coef, const float *dqbar, const float *z, const size_t *windows,
                         size_t n_windows, size_t B, size_t T, size_t r, float eps);
} GrassmannMapLoops;

/* Each entry is the function of mixers/grassmann.h of the same name (without
 * grassmann_), with its shapes and meaning. */
typedef struct GrassmannLoops {
    const char *isa; /* the level's name, as cpu_isa_name says it */
    void (*wedge)(float *p, const float *a, const float *b, size_t r);
    void (*pair_forward)(float *qbar, const float *zc, const float *zp, float scale, float eps, size_t r);
    GrassmannMapLoops map[GRASSMANN_PAIR_COUNT]; /* mix_row, mix_forward, mix_backward of each map */
    void (*gate_forward)(float *m, float *a, const float *x, const float *g, size_t n);
    void (*gate_backward)(float *dx, float *dg, float *dapre, const float *dm, const float *a, const float *x,
                          const float *g, size_t n);
} GrassmannLoops;

/* The set for this run's level (cpu_isa()). */
const GrassmannLoops *grassmann_loops(void);

/* Each level's set (above portable: x86-64's or ARM64's), for the tests that compare them. */
extern const GrassmannLoops grassmann_loops_portable;
#if defined(__x86_64__)
extern const GrassmannLoops grassmann_loops_avx2, grassmann_loops_avx512;
#elif defined(__aarch64__)
extern const GrassmannLoops grassmann_loops_neon;
#endif

#endif
