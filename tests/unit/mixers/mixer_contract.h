/* The contract suite's parts (tests/unit/mixers/test_mixers.c): its report, guarded
 * buffers, the test layer, a sequence of steps, bf16 training products for
 * a layer alone, and the broken mixers the suite must catch. Nothing here
 * names a mixer. */
#ifndef LM_TEST_MIXER_CONTRACT_H
#define LM_TEST_MIXER_CONTRACT_H

#include <omp.h>

#include "testutil.h"

#include "lm/bf16.h"
#include "lm/config.h"
#include "lm/inspection.h"
#include "lm/matmul.h"
#include "lm/mixer.h"
#include "lm/model.h"
#include "lm/optim.h"
#include "lm/threads.h"
#include "nn/rope.h"

/* The test layer's sizes (test_mixers.c's head comment). */
enum { C_EMBD = 16, N_HEAD = 2, BLOCK = 40, B = 2, T = 37 };

/* How far a step may be from forward, relative to 1 + |out|: the step's
 * products take one row where forward's take all, summing in other orders
 * (over 37 positions of a recurrence: 3e-6 measured, 2e-5 on ARM64 under
 * qemu); a wrong step is off by far more. */
#define STEP_TOL 1e-4

/* ---- the report ----------------------------------------------------------------- */

typedef struct Report {
    const char *mixer;
    const char *variant;      /* the layer's spec, when not the plain one: "rope, qk-norm" */
    size_t passed, failed;
    int quiet;                /* failures expected (the self-check): collected, not printed */
    char failed_checks[256];  /* the failed checks' names, each once */
} Report;

/* Whether check `name` failed in r. */
static inline int report_failed(const Report *r, const char *name) {
    size_t len = strlen(name);
    for (const char *p = r->failed_checks; (p = strstr(p, name)); p += len)
        if ((p == r->failed_checks || p[-1] == ',') && (p[len] == ',' || p[len] == '\0')) return 1;
    return 0;
}

/* One check: counted; when !ok, its line ("mixer NAME: CHECK: message"). */
static inline void check(Report *r, int ok, const char *name, const char *fmt, ...) CMOCKA_PRINTF_ATTRIBUTE(4, 5);
static inline void check(Report *r, int ok, const char *name, const char *fmt, ...) {
    if (ok) {
        r->passed++;
        return;
    }
    r->failed++;
    if (!report_failed(r, name)) {
        size_t at = strlen(r->failed_checks);
        snprintf(r->failed_checks + at, sizeof r->failed_checks - at, "%s%s", at ? "," : "", name);
    }
    if (r->quiet && !getenv("VERBOSE")) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("%smixer %s: %s%s%s%s: %s\n", r->quiet ? "  (expected) " : "", r->mixer, name, r->variant ? " (" : "",
           r->variant ? r->variant : "", r->variant ? ")" : "", msg);
}

/* ---- guarded buffers ---------------------------------------------------------------- */

/* GUARD floats on either side of a buffer, holding a NaN that no
 * computation makes: a write outside the buffer changes one. */
#define GUARD 16
#define CANARY 0x7fa5c3e1u

static inline float *buf_new(size_t n) {
    float *base = calloc(n + 2 * GUARD, sizeof(float));
    uint32_t c = CANARY;
    for (size_t i = 0; i < GUARD; i++) memcpy(base + i, &c, 4), memcpy(base + GUARD + n + i, &c, 4);
    return base + GUARD;
}

/* A buffer full of garbage (large finite values): what it held must not
 * matter to whoever writes it. */
static inline float *buf_garbage(size_t n, uint64_t seed) {
    float *p = buf_new(n);
    Rng r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) p[i] = 1e4f * (2.0f * rng_uniform(&r) - 1.0f);
    return p;
}

static inline void buf_free(float *p) { free(p - GUARD); }

static inline int buf_intact(const float *p, size_t n) {
    uint32_t c = CANARY;
    for (size_t i = 0; i < GUARD; i++)
        if (memcmp(p - GUARD + i, &c, 4) || memcmp(p + n + i, &c, 4)) return 0;
    return 1;
}

/* Buffer buf's guards (n floats), after the passes of `pass`. */
#define CHECK_GUARD(r, pass, buf, n) \
    check(r, buf_intact(buf, n), "guards", "%s wrote outside %s (%zu floats)", pass, #buf, (size_t)(n))

/* ---- small measures ------------------------------------------------------------------- */

static inline double l1(const float *x, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += fabs(x[i]);
    return s;
}

/* ||a - b||_2 / ||b||_2. */
static inline double rel_norm(const float *a, const float *b, size_t n) {
    double d = 0.0, s = 0.0;
    for (size_t i = 0; i < n; i++) d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]), s += (double)b[i] * b[i];
    return s > 0.0 ? sqrt(d / s) : sqrt(d);
}

/* The largest |a - b| / (1 + |b|) over n entries. */
static inline double rel_gap(const float *a, const float *b, size_t n) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]) / (1.0 + fabs(b[i]));
        worst = d > worst || d != d ? d : worst;
    }
    return worst;
}

/* The first entry where a and b differ in their bits, or n. */
static inline size_t first_difference(const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (memcmp(a + i, b + i, sizeof(float))) return i;
    return n;
}

/* ---- the test layer ----------------------------------------------------------------------- */

/* The config of a one-layer model of mx (a registered mixer); with recipe,
 * the modern recipe's switches that a mixer's spec carries (rotary
 * positions, qk-norm: MixerSpec.rope, qk_norm). */
static inline ModelConfig layer_config(const Mixer *mx, int recipe) {
    ModelConfig cfg;
    config_defaults(&cfg);
    cfg.n_layer = 1, cfg.n_embd = C_EMBD, cfg.n_head = N_HEAD, cfg.block_size = BLOCK, cfg.vocab_size = 5;
    cfg.mixers[0] = mx;
    if (recipe) cfg.pos = POS_ROPE, cfg.qk_norm = 1;
    return cfg;
}

static inline MixerSpec layer_spec_of(const Mixer *mx, int recipe) {
    ModelConfig cfg = layer_config(mx, recipe);
    return model_mixer_spec(&cfg, 0);
}

/* Weights drawn per tensor by its shape: a matrix N(0, 1 / cols), a gain
 * (INIT_ONE) 1 + N(0, 0.3^2), any other vector N(0, 0.3^2). */
static inline float *layer_weights(const Mixer *mx, const MixerSpec *spec, uint64_t seed) {
    TensorSpec specs[MIXER_MAX_TENSORS];
    size_t n = mixer_tensors(mx, spec, specs), np = mixer_param_count(mx, spec), off = 0;
    float *p = malloc((np ? np : 1) * sizeof(float));
    Rng r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        size_t len = specs[i].rows * (specs[i].cols ? specs[i].cols : 1);
        float scale = specs[i].cols ? 1.0f / sqrtf((float)specs[i].cols) : 0.3f;
        float base = !specs[i].cols && specs[i].init == INIT_ONE ? 1.0f : 0.0f;
        for (size_t j = 0; j < len; j++) p[off + j] = base + scale * rng_normal(&r);
        off += len;
    }
    return p;
}

typedef struct Layer {
    const Mixer *mx, *registered_as; /* the mixer, and the registry entry whose settings it reads */
    MixerSpec spec;
    MixerRuntime rt;
    float *rope;
    size_t C, np, na, ns;            /* width, parameters, act floats for (B, T), state floats */
    float *params, *x, *w;           /* weights; input (B, T, C); the objective's weights (B, T, C) */
} Layer;

static inline void layer_make(Layer *L, const Mixer *mx, const Mixer *registered_as, int recipe) {
    memset(L, 0, sizeof *L);
    L->mx = mx, L->registered_as = registered_as;
    L->spec = layer_spec_of(registered_as, recipe);
    L->C = L->spec.n_embd;
    if (L->spec.rope) {
        size_t hs = L->C / L->spec.n_head;
        L->rope = malloc(L->spec.block_size * hs * sizeof(float));
        rope_table(L->rope, L->spec.block_size, hs);
    }
    L->rt = (MixerRuntime){L->rope, NULL, NULL};
    L->np = mixer_param_count(mx, &L->spec);
    L->na = mx->act_size(&L->spec, B, T);
    L->ns = mx->state_size(&L->spec);
    L->params = layer_weights(mx, &L->spec, 1);
    L->x = rand_tensor(B * T * L->C, 1.0f, 2);
    L->w = rand_tensor(B * T * L->C, 1.0f, 3);
}

static inline void layer_free(Layer *L) { free(L->rope), free(L->params), free(L->x), free(L->w); }

/* One sequence x (T, C) stepped from position t0 (a new sequence at 0) to
 * t1 - 1 with state, out at t into out + t * C. */
static inline void step_sequence(const Layer *L, const MixerRuntime *rt, const float *params, float *state,
                                 const float *x, float *out, size_t t0, size_t t1) {
    for (size_t t = t0; t < t1; t++) L->mx->step(&L->spec, rt, params, state, x + t * L->C, out + t * L->C, t);
}

/* ---- bf16 training products for a layer alone ------------------------------------------------ */

/* What the model's bf16 precision hands a layer (lm/matmul.h's MatmulBf16):
 * the weights' bf16 rounding, scratch for a product's operands (B x T rows
 * of the widest: 4C, the model's MLP, or a wider matrix of the mixer's) and
 * the mixer's packed operands (bf16_words). */
typedef struct Bf16Run {
    MatmulBf16 mm;
    MatmulBf16Failure failure;
    uint16_t *h, *scratch;
    uint32_t *packed;
} Bf16Run;

static inline void bf16_run_make(Bf16Run *b, const Layer *L) {
    TensorSpec specs[MIXER_MAX_TENSORS];
    size_t n = mixer_tensors(L->mx, &L->spec, specs), wide = 4 * L->C;
    for (size_t i = 0; i < n; i++)
        if (specs[i].cols) wide = specs[i].rows > wide ? specs[i].rows : specs[i].cols > wide ? specs[i].cols : wide;
    size_t slot = B * T * wide, packed = L->mx->bf16_words ? L->mx->bf16_words(&L->spec, B, T) : 0;
    b->h = malloc(L->np * sizeof *b->h);
    b->scratch = malloc(2 * slot * sizeof *b->scratch);
    b->packed = packed ? malloc(packed * sizeof *b->packed) : NULL;
    memset(&b->failure, 0, sizeof b->failure);
    bf16_from_floats(L->np, L->params, b->h);
    b->mm = (MatmulBf16){.params = L->params, .params_h = b->h, .n_params = L->np,
                         .scratch = {b->scratch, b->scratch + slot}, .scratch_len = slot,
                         .packed = b->packed, .packed_len = packed, .failure = &b->failure};
}

static inline void bf16_run_free(Bf16Run *b) { free(b->h), free(b->scratch), free(b->packed); }

/* ---- broken mixers, which the suite must catch --------------------------------------------------- */

/* BROKEN_PEEKS: forward reads x at t + 1 (mixes x_t + x_{t+1} / 2, with the
 * backward that goes with it, so only causality and the step can tell);
 * BROKEN_DRIFTS: step's out is forward's times 1 + 1e-3. Each wraps
 * broken_base (set by broken_mixer); test-only. */
enum { BROKEN_PEEKS, BROKEN_DRIFTS, BROKEN_KINDS };
static const Mixer *broken_base;

static inline size_t peek_act_size(const MixerSpec *spec, size_t b, size_t t) {
    return broken_base->act_size(spec, b, t) + b * t * spec->n_embd;
}

static inline void peek_forward(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *acts,
                                float *out, const float *in, size_t b, size_t t) {
    size_t C = spec->n_embd;
    float *xs = acts + broken_base->act_size(spec, b, t);
    for (size_t s = 0; s < b; s++)
        for (size_t p = 0; p < t; p++)
            for (size_t c = 0; c < C; c++) {
                size_t i = (s * t + p) * C + c;
                xs[i] = in[i] + (p + 1 < t ? 0.5f * in[i + C] : 0.0f);
            }
    broken_base->forward(spec, rt, params, acts, out, xs, b, t);
}

static inline void peek_backward(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *dparams,
                                 float *acts, const float *in, const float *dout, float *din, size_t b, size_t t) {
    (void)in;
    size_t C = spec->n_embd;
    broken_base->backward(spec, rt, params, dparams, acts, acts + broken_base->act_size(spec, b, t), dout, din, b, t);
    for (size_t s = 0; s < b; s++) /* din_p += din'_{p-1} / 2, from the last position down */
        for (size_t p = t; p-- > 1;)
            for (size_t c = 0; c < C; c++) din[(s * t + p) * C + c] += 0.5f * din[(s * t + p - 1) * C + c];
}

static inline void drift_step(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *state,
                              const float *in_t, float *out_t, size_t t) {
    broken_base->step(spec, rt, params, state, in_t, out_t, t);
    for (size_t c = 0; c < spec->n_embd; c++) out_t[c] *= 1.001f;
}

static inline Mixer broken_mixer(const Mixer *base, int kind) {
    static char names[BROKEN_KINDS][64];
    broken_base = base;
    Mixer m = *base;
    snprintf(names[kind], sizeof names[kind], "%s (broken: %s)", base->name,
             kind == BROKEN_PEEKS ? "reads x at t + 1" : "step differs from forward");
    m.name = names[kind];
    if (kind == BROKEN_PEEKS) {
        m.act_size = peek_act_size, m.forward = peek_forward, m.backward = peek_backward;
        m.inspect = NULL;
    } else {
        m.step = drift_step, m.step_batch = NULL;
    }
    return m;
}

#endif
