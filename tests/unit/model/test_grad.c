/* Finite-difference checks of every backward pass: each layer alone, the
 * Grassmann layer's parts, and whole models. An objective is sum(out * w)
 * for a fixed random w, so backward is run with dout = w. */
#include <omp.h>

#include "testutil.h"
#include "test_model_util.h"

#include "mixers/attention.h"
#include "mixers/attention_tiles.h"
#include "mixers/gla.h"
#include "mixers/grassmann.h"
#include "lm/model.h"
#include "nn/dropout.h"
#include "nn/embedding.h"
#include "nn/layernorm.h"
#include "nn/loss.h"
#include "nn/mlp.h"
#include "nn/rmsnorm.h"
#include "lm/ops.h"
#include "lm/threads.h"
#include "nn/rope.h"

#define TOL 1e-2

/* ---- the sampling of the checks ------------------------------------------------ */

/* sum(w * x): its gradient is w. */
typedef struct {
    const float *w, *x;
    size_t n;
} LinCtx;

static double lin_obj(void *p) {
    LinCtx *c = p;
    return dot_objective(c->x, c->w, c->n);
}

/* 24 samples of a 24 x 8 matrix (a tiny model's qkv.weight) meet every
 * column and rows across the matrix: a gradient wrong in one column alone,
 * or in the last rows alone, is caught. */
static void test_fd_sampling(void **s) {
    (void)s;
    enum { R = 24, C = 8, N = R * C };
    float *x = rand_tensor(N, 1.0f, 1), *w = rand_tensor(N, 1.0f, 2), grad[N];
    LinCtx c = {w, x, N};
    memcpy(grad, w, sizeof grad);
    assert_true(fd_rel_error(lin_obj, &c, x, grad, N, 24, 1e-2f, "right") < 1e-3);
    for (size_t col = 0; col < C; col++) {
        for (size_t r = 0; r < R; r++) grad[r * C + col] = -w[r * C + col];
        double e = fd_rel_error(lin_obj, &c, x, grad, N, 24, 1e-2f, "one column wrong");
        if (!(e > 0.1)) fail_msg("a gradient wrong in column %zu alone passes (relative error %.2e)", col, e);
        memcpy(grad, w, sizeof grad);
    }
    for (size_t i = N - 2 * C; i < N; i++) grad[i] = 0.0f; /* the last two rows */
    assert_true(fd_rel_error(lin_obj, &c, x, grad, N, 24, 1e-2f, "last rows wrong") > 0.1);
    free(x), free(w);
}

/* ---- embedding ----------------------------------------------------------- */

typedef struct {
    size_t B, T, C, V;
    int32_t *tok;
    float *wte, *pos, *out, *w;
} EmbCtx;

static double emb_obj(void *p) {
    EmbCtx *c = p;
    embedding_forward(c->out, c->tok, c->wte, c->pos, c->B, c->T, c->C);
    return dot_objective(c->out, c->w, c->B * c->T * c->C);
}

static void run_embedding(int learned) {
    EmbCtx c = {2, 5, 6, 7, NULL, NULL, NULL, NULL, NULL};
    size_t N = c.B * c.T;
    int32_t tok[10] = {1, 3, 3, 0, 6, 2, 1, 1, 5, 3}; /* repeats: scatter-add must sum */
    c.tok = tok;
    c.wte = rand_tensor(c.V * c.C, 1.0f, 1);
    c.pos = learned ? rand_tensor(c.T * c.C, 1.0f, 2) : zeros(c.T * c.C);
    if (!learned) sinusoidal_table(c.pos, c.T, c.C);
    c.out = zeros(N * c.C);
    c.w = rand_tensor(N * c.C, 1.0f, 3);
    float *dwte = zeros(c.V * c.C), *dwpe = zeros(c.T * c.C);
    embedding_backward(dwte, learned ? dwpe : NULL, c.w, c.tok, c.B, c.T, c.C);
    CHECK_GRAD(emb_obj, &c, c.wte, dwte, c.V * c.C, 1000, 1e-2f, TOL, "embedding wte");
    if (learned) CHECK_GRAD(emb_obj, &c, c.pos, dwpe, c.T * c.C, 1000, 1e-2f, TOL, "embedding wpe");
    free(c.wte), free(c.pos), free(c.out), free(c.w), free(dwte), free(dwpe);
}

static void test_embedding_learned(void **s) { (void)s; run_embedding(1); }
static void test_embedding_sinusoidal(void **s) {
    (void)s;
    run_embedding(0);
    float pe[8 * 6];
    sinusoidal_table(pe, 8, 6);
    for (size_t t = 0; t < 8; t++)
        for (size_t i = 0; i < 3; i++) {
            double angle = (double)t / pow(10000.0, 2.0 * (double)i / 6.0);
            assert_true(fabs(pe[t * 6 + 2 * i] - sin(angle)) < 1e-6);
            assert_true(fabs(pe[t * 6 + 2 * i + 1] - cos(angle)) < 1e-6);
        }
}

/* ---- LayerNorm --------------------------------------------------------------- */

typedef struct {
    size_t N, C;
    float *in, *wt, *bs, *out, *mean, *rstd, *w;
} LnCtx;

static double ln_obj(void *p) {
    LnCtx *c = p;
    layernorm_forward(c->out, c->mean, c->rstd, c->in, c->wt, c->bs, c->N, c->C);
    return dot_objective(c->out, c->w, c->N * c->C);
}

static void test_layernorm(void **s) {
    (void)s;
    LnCtx c = {6, 10, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    c.in = rand_tensor(60, 1.0f, 4);
    c.wt = rand_tensor(10, 1.0f, 5);
    c.bs = rand_tensor(10, 1.0f, 6);
    c.out = zeros(60), c.mean = zeros(6), c.rstd = zeros(6);
    c.w = rand_tensor(60, 1.0f, 7);
    float *din = zeros(60), *dw = zeros(10), *db = zeros(10);
    ln_obj(&c);
    layernorm_backward(din, dw, db, c.w, c.in, c.wt, c.mean, c.rstd, c.N, c.C);
    CHECK_GRAD(ln_obj, &c, c.in, din, 60, 60, 1e-2f, TOL, "layernorm in");
    CHECK_GRAD(ln_obj, &c, c.wt, dw, 10, 10, 1e-2f, TOL, "layernorm weight");
    CHECK_GRAD(ln_obj, &c, c.bs, db, 10, 10, 1e-2f, TOL, "layernorm bias");
    free(c.in), free(c.wt), free(c.bs), free(c.out), free(c.mean), free(c.rstd), free(c.w), free(din), free(dw), free(db);
}

/* ---- RMSNorm ----------------------------------------------------------------- */

static double rms_obj(void *p) {
    LnCtx *c = p;
    rmsnorm_forward(c->out, c->rstd, c->in, c->wt, c->N, c->C);
    return dot_objective(c->out, c->w, c->N * c->C);
}

static void test_rmsnorm(void **s) {
    (void)s;
    LnCtx c = {6, 10, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    c.in = rand_tensor(60, 1.0f, 4);
    c.wt = rand_tensor(10, 1.0f, 5);
    c.out = zeros(60), c.rstd = zeros(6);
    c.w = rand_tensor(60, 1.0f, 7);
    float *din = zeros(60), *dw = zeros(10);
    rms_obj(&c);
    rmsnorm_backward(din, dw, c.w, c.in, c.wt, c.rstd, c.N, c.C);
    CHECK_GRAD(rms_obj, &c, c.in, din, 60, 60, 1e-2f, TOL, "rmsnorm in");
    CHECK_GRAD(rms_obj, &c, c.wt, dw, 10, 10, 1e-2f, TOL, "rmsnorm weight");
    /* The fused residual form: the sum, then the same bits as rmsnorm_forward of it. */
    float *a = rand_tensor(60, 1.0f, 8), *b = rand_tensor(60, 1.0f, 9), *sum = zeros(60), *out = zeros(60), *rstd = zeros(6);
    residual_rmsnorm_forward(sum, out, rstd, a, b, c.wt, c.N, c.C);
    for (size_t i = 0; i < 60; i++) assert_true(sum[i] == a[i] + b[i]);
    rmsnorm_forward(c.out, c.rstd, sum, c.wt, c.N, c.C);
    assert_memory_equal(out, c.out, 60 * sizeof(float));
    assert_memory_equal(rstd, c.rstd, 6 * sizeof(float));
    free(c.in), free(c.wt), free(c.out), free(c.rstd), free(c.w), free(din), free(dw);
    free(a), free(b), free(sum), free(out), free(rstd);
}

/* The per-head form, in place over rows of stride ld with a gap after the
 * heads (as q and k sit in qkv before v). */
typedef struct {
    size_t N, ld, heads, hs;
    float *in, *x, *rstd, *w;
} HeadsCtx;

static double heads_obj(void *p) {
    HeadsCtx *c = p;
    memcpy(c->x, c->in, c->N * c->ld * sizeof(float));
    rmsnorm_heads_forward(c->x, c->rstd, c->N, c->ld, c->heads, c->hs);
    return dot_objective(c->x, c->w, c->N * c->ld);
}

static void test_rmsnorm_heads(void **s) {
    (void)s;
    HeadsCtx c = {5, 15, 3, 4, rand_tensor(75, 1.0f, 11), zeros(75), zeros(15), rand_tensor(75, 1.0f, 12)};
    heads_obj(&c);
    for (size_t n = 0; n < c.N; n++) { /* each head unit rms; the gap untouched */
        for (size_t h = 0; h < c.heads; h++) {
            double ss = 0.0;
            for (size_t d = 0; d < c.hs; d++) ss += (double)c.x[n * c.ld + h * c.hs + d] * c.x[n * c.ld + h * c.hs + d];
            assert_true(fabs(ss / (double)c.hs - 1.0) < 1e-4);
        }
        for (size_t i = c.heads * c.hs; i < c.ld; i++) assert_true(c.x[n * c.ld + i] == c.in[n * c.ld + i]);
    }
    float *grad = zeros(75);
    memcpy(grad, c.w, 75 * sizeof(float));
    rmsnorm_heads_backward(grad, c.x, c.rstd, c.N, c.ld, c.heads, c.hs);
    /* the gap passes its gradient through unchanged (the identity there) */
    CHECK_GRAD(heads_obj, &c, c.in, grad, 75, 75, 1e-2f, TOL, "rmsnorm per head");
    free(c.in), free(c.x), free(c.rstd), free(c.w), free(grad);
}

/* ---- mixers, through the interface ----------------------------------------- */

typedef struct {
    const Mixer *mx;
    MixerSpec spec;
    MixerRuntime rt;
    size_t B, T, np;
    float *params, *acts, *in, *out, *w;
} MixCtx;

static double mix_obj(void *p) {
    MixCtx *c = p;
    c->mx->forward(&c->spec, &c->rt, c->params, c->acts, c->out, c->in, c->B, c->T);
    return dot_objective(c->out, c->w, c->B * c->T * c->spec.n_embd);
}

/* rope: the cos/sin table with rope positions, else NULL. */
static void run_mixer(const Mixer *mx, ModelConfig cfg, const float *rope, size_t B, size_t T, float pscale) {
    MixerSpec spec = model_mixer_spec(&cfg, 0);
    MixCtx c = {mx, spec, {rope, NULL, NULL}, B, T, mixer_param_count(mx, &spec), NULL, NULL, NULL, NULL, NULL};
    size_t C = cfg.n_embd, N = B * T;
    c.params = rand_tensor(c.np, pscale, 8);
    c.acts = zeros(mx->act_size(&spec, B, T));
    c.in = rand_tensor(N * C, 1.0f, 9);
    c.out = zeros(N * C);
    c.w = rand_tensor(N * C, 1.0f, 10);
    float *dp = zeros(c.np), *din = rand_tensor(N * C, 1e3f, 27); /* backward writes din: stale values must go */
    mix_obj(&c);
    mx->backward(&spec, &c.rt, c.params, dp, c.acts, c.in, c.w, din, B, T);
    char what[64];
    snprintf(what, sizeof what, "%s input", mx->name);
    CHECK_GRAD(mix_obj, &c, c.in, din, N * C, 400, 1e-2f, TOL, what);
    /* Each tensor separately, so a dropped term in any one of them shows. */
    TensorSpec specs[MIXER_MAX_TENSORS];
    size_t ns = mixer_tensors(mx, &spec, specs), off = 0;
    for (size_t i = 0; i < ns; i++) {
        size_t n = specs[i].rows * (specs[i].cols ? specs[i].cols : 1);
        snprintf(what, sizeof what, "%s %s", mx->name, specs[i].name);
        CHECK_GRAD(mix_obj, &c, c.params + off, dp + off, n, 300, 1e-2f, TOL, what);
        off += n;
    }
    free(c.params), free(c.acts), free(c.in), free(c.out), free(c.w), free(dp), free(din);
}

/* run_mixer on attention shaped as by_tiles_config (batch 1, BY_TILES_T
 * positions) with backward cut into a task per key tile and per query tile
 * (width 2 on 2 OpenMP threads, asserted taken); the width and the thread
 * count restored after. */
static void run_attention_by_tiles(ModelConfig cfg) {
    int saved = omp_get_max_threads();
    omp_set_num_threads(2), threads_set_width(2);
    MixerSpec spec = model_mixer_spec(&cfg, 0);
    assert_int_equal(attention_backward_by_tiles(1, BY_TILES_T, 1, cfg.n_embd, attention_window(&spec)), 1);
    run_mixer(&attention_mixer, cfg, NULL, 1, BY_TILES_T, 0.5f);
    threads_set_width(0), omp_set_num_threads(saved);
}

static void test_attention(void **s) {
    (void)s;
    ModelConfig cfg;
    config_defaults(&cfg);
    cfg.n_embd = 12, cfg.n_head = 3, cfg.block_size = 8, cfg.vocab_size = 5;
    run_mixer(&attention_mixer, cfg, NULL, 2, 7, 0.3f);
}

/* A sliding window: within one tile (window 3 of 7 positions), and over
 * five tiles (600 positions, window 150: every later query tile meets a key
 * tile partly outside its band and skips those before it; window 40, with
 * tiles of 64), as one task per head and as a task per key tile and per
 * query tile. */
static void test_attention_window(void **s) {
    (void)s;
    ModelConfig cfg;
    config_defaults(&cfg);
    cfg.n_embd = 12, cfg.n_head = 3, cfg.block_size = 300, cfg.vocab_size = 5;
    Error err;
    assert_int_equal(config_set_option(&cfg, "attn-window", "3", &err), 0);
    run_mixer(&attention_mixer, cfg, NULL, 2, 7, 0.3f);
    cfg = by_tiles_config();
    assert_int_equal(config_set_option(&cfg, "attn-window", "150", &err), 0);
    run_mixer(&attention_mixer, cfg, NULL, 1, BY_TILES_T, 0.5f);
    run_attention_by_tiles(cfg);
    /* A window shorter than the tile: tiles of 64 (attn_tile). */
    assert_int_equal(attn_tile(40), 64);
    assert_int_equal(config_set_option(&cfg, "attn-window", "40", &err), 0);
    run_mixer(&attention_mixer, cfg, NULL, 1, BY_TILES_T, 0.5f);
    run_attention_by_tiles(cfg);
}

/* Gated linear attention: one chunk of the recurrence, then three (32, 32
 * and 11 positions), so backward's recomputation from each chunk's kept
 * state and the gradient carried across chunks are both checked. */
static void test_gla(void **s) {
    (void)s;
    ModelConfig cfg;
    config_defaults(&cfg);
    cfg.n_embd = 12, cfg.n_head = 3, cfg.block_size = 80, cfg.vocab_size = 5;
    run_mixer(&gla_mixer, cfg, NULL, 2, 7, 0.3f);
    run_mixer(&gla_mixer, cfg, NULL, 1, 75, 0.3f);
}

/* Its recurrent step, one position at a time, gives forward's output. */
static void test_gla_step(void **s) {
    (void)s;
    ModelConfig cfg;
    config_defaults(&cfg);
    cfg.n_embd = 8, cfg.n_head = 2, cfg.block_size = 40, cfg.vocab_size = 5;
    MixerSpec spec = model_mixer_spec(&cfg, 0);
    MixerRuntime rt = {NULL, NULL, NULL};
    size_t T = 37, C = cfg.n_embd;
    float *params = rand_tensor(mixer_param_count(&gla_mixer, &spec), 0.3f, 5), *in = rand_tensor(T * C, 1.0f, 6);
    float *acts = zeros(gla_mixer.act_size(&spec, 1, T)), *out = zeros(T * C), *state = rand_tensor(gla_mixer.state_size(&spec), 1.0f, 7);
    float *out_t = zeros(C);
    gla_mixer.forward(&spec, &rt, params, acts, out, in, 1, T);
    double worst = 0.0;
    for (size_t t = 0; t < T; t++) {
        gla_mixer.step(&spec, &rt, params, state, in + t * C, out_t, t);
        for (size_t c = 0; c < C; c++) { /* not fmax: aarch64 GCC 12's vectoriser fails on that reduction */
            double d = fabs((double)out_t[c] - out[t * C + c]) / (1.0 + fabs(out[t * C + c]));
            worst = d > worst ? d : worst;
        }
    }
    /* The step's products take one row and forward's all T, summing in
     * other orders; over 37 positions of the recurrence that reaches 2e-5
     * (ARM64 under qemu; under 1e-5 on x86-64). A wrong step is off by O(1). */
    if (worst > 1e-4) fail_msg("gla step differs from forward by %g (relative)", worst);
    free(params), free(in), free(acts), free(out), free(state), free(out_t);
}

/* Flash attention over three query and key tiles, the last one short: the
 * online softmax across tiles, the skipped tiles above the diagonal and the
 * masked diagonal tiles. */
static void test_attention_tiles(void **s) {
    (void)s;
    ModelConfig cfg;
    config_defaults(&cfg);
    cfg.n_embd = 8, cfg.n_head = 2, cfg.block_size = 320, cfg.vocab_size = 5;
    run_mixer(&attention_mixer, cfg, NULL, 1, 300, 0.5f); /* tiles of 128, 128 and 44 */
}

/* Fewer heads than threads: backward as a task per key tile and one per
 * query tile (attention_backward_by_tiles), bit for bit the one task per
 * head it replaces, and against finite differences. */
static void test_attention_backward_by_tiles(void **s) {
    (void)s;
    ModelConfig cfg = by_tiles_config();
    MixerSpec spec = model_mixer_spec(&cfg, 0);
    float *params = rand_tensor(mixer_param_count(&attention_mixer, &spec), 0.5f, 8);
    check_by_tiles_bitwise(params, (MixerRuntime){NULL, NULL, NULL});
    run_attention_by_tiles(cfg);
    free(params);
}

static void test_grassmann_layer(void **s) {
    (void)s;
    ModelConfig cfg;
    config_defaults(&cfg);
    cfg.n_embd = 8, cfg.block_size = 12, cfg.vocab_size = 5;
    Error err;
    assert_int_equal(config_set_option(&cfg, "grassmann-rank", "5", &err), 0);
    assert_int_equal(config_set_option(&cfg, "grassmann-windows", "1,2,4", &err), 0);
    assert_int_equal(config_set_mixers(&cfg, "grassmann", &err), 0); /* the spec of a Grassmann layer */
    run_mixer(&grassmann_mixer, cfg, NULL, 2, 9, 0.3f);
    static const char *const maps[] = {"outer", "sum"};
    for (size_t k = 0; k < 2; k++) {
        assert_int_equal(config_set_option(&cfg, "grassmann-pair", maps[k], &err), 0);
        run_mixer(&grassmann_mixer, cfg, NULL, 2, 9, 0.3f);
    }
}

/* Attention with rope positions: the rotation between the qkv projection and
 * flash attention, and its transpose in backward (head size 4). */
static void test_attention_rope(void **s) {
    (void)s;
    ModelConfig cfg;
    config_defaults(&cfg);
    cfg.n_embd = 12, cfg.n_head = 3, cfg.block_size = 8, cfg.vocab_size = 5, cfg.pos = POS_ROPE;
    float table[8 * 4];
    rope_table(table, 8, 4);
    run_mixer(&attention_mixer, cfg, table, 2, 7, 0.3f);
}

/* Attention with qk-norm, with learned positions and with rope (the norm after the rotation). */
static void test_attention_qk_norm(void **s) {
    (void)s;
    ModelConfig cfg;
    config_defaults(&cfg);
    cfg.n_embd = 12, cfg.n_head = 3, cfg.block_size = 8, cfg.vocab_size = 5, cfg.qk_norm = 1;
    run_mixer(&attention_mixer, cfg, NULL, 2, 7, 0.3f);
    cfg.pos = POS_ROPE;
    float table[8 * 4];
    rope_table(table, 8, 4);
    run_mixer(&attention_mixer, cfg, table, 2, 7, 0.3f);
}

/* ---- rope alone ------------------------------------------------------------------ */

typedef struct {
    size_t B, T, t0, C, hs;
    const float *table;
    float *in, *x, *w;
} RopeCtx;

static double rope_obj(void *p) {
    RopeCtx *c = p;
    size_t n = c->B * c->T * 3 * c->C;
    memcpy(c->x, c->in, n * sizeof(float));
    rope_forward(c->x, c->table, c->B, c->T, c->t0, c->C, c->hs);
    return dot_objective(c->x, c->w, n);
}

static void test_rope(void **s) {
    (void)s;
    size_t B = 2, T = 5, C = 12, hs = 6, Tm = 9, n = B * T * 3 * C;
    float table[9 * 6];
    rope_table(table, Tm, hs);
    for (size_t t = 0; t < Tm; t++) /* angle(t, i) = t * 10000^(-2i/hs) */
        for (size_t i = 0; i < hs / 2; i++) {
            double angle = (double)t * pow(10000.0, -2.0 * (double)i / (double)hs);
            assert_true(fabs(table[t * hs + 2 * i] - cos(angle)) < 1e-6);
            assert_true(fabs(table[t * hs + 2 * i + 1] - sin(angle)) < 1e-6);
        }
    /* Rows at positions 3..7 (t0 = 3), as a decoding step at a later position uses. */
    RopeCtx c = {B, T, 3, C, hs, table, rand_tensor(n, 1.0f, 40), zeros(n), rand_tensor(n, 1.0f, 41)};
    float *grad = malloc(n * sizeof(float));
    memcpy(grad, c.w, n * sizeof(float));
    rope_backward(grad, table, B, T, c.t0, C, hs);
    CHECK_GRAD(rope_obj, &c, c.in, grad, n, n, 1e-2f, TOL, "rope");
    /* v is untouched, and position 0 is the identity. */
    rope_obj(&c);
    for (size_t r = 0; r < B * T; r++) assert_memory_equal(c.x + r * 3 * C + 2 * C, c.in + r * 3 * C + 2 * C, C * sizeof(float));
    c.t0 = 0;
    rope_obj(&c);
    assert_memory_equal(c.x, c.in, 3 * C * sizeof(float));
    /* Relative: q at t and k at u give the same score as at t + d and u + d. */
    float q[3 * 12], k[3 * 12], a[3 * 12], b[3 * 12];
    for (size_t i = 0; i < 3 * C; i++) q[i] = c.in[i], k[i] = c.in[3 * C + i];
    double first = 0.0;
    for (size_t d = 0; d < 4; d++) {
        memcpy(a, q, sizeof q), memcpy(b, k, sizeof k);
        rope_forward(a, table, 1, 1, 4 + d, C, hs);
        rope_forward(b, table, 1, 1, 1 + d, C, hs);
        double score = 0.0;
        for (size_t i = 0; i < hs; i++) score += (double)a[i] * b[C + i]; /* head 0: q of a, k of b */
        if (d == 0) first = score;
        assert_true(fabs(score - first) < 1e-5 * (1.0 + fabs(first)));
    }
    free(c.in), free(c.x), free(c.w), free(grad);
}

/* ---- Grassmann parts ---------------------------------------------------------- */

typedef struct {
    size_t B, T, r, nw;
    const size_t *win;
    float eps;
    float *z, *qbar, *w;
    GrassmannPair pair; /* the wedge unless set */
} PluckerCtx;

static double plucker_obj(void *p) {
    PluckerCtx *c = p;
    grassmann_mix_forward(c->pair, c->qbar, c->z, c->win, c->nw, 0, c->B, c->T, c->r, c->eps);
    return dot_objective(c->qbar, c->w, c->B * c->T * grassmann_n_features(c->pair, c->r));
}

/* The mixing of z (B, T, r) over offsets `win` by a pair map, against finite differences. */
static void run_map_mix(GrassmannPair pair, const size_t *win, size_t nw, size_t r, float zscale, float eps,
                        const char *what) {
    PluckerCtx c = {2, 6, r, nw, win, eps, NULL, NULL, NULL, pair};
    size_t N = c.B * c.T, P = grassmann_n_features(pair, r);
    c.z = rand_tensor(N * r, zscale, 14);
    c.qbar = zeros(N * P);
    c.w = rand_tensor(N * P, 1.0f, 15);
    float *dz = rand_tensor(N * r, 1e3f, 16), *u = zeros(N * r), *coef = zeros(N * (3 * nw + 1)); /* dz is written */
    plucker_obj(&c);
    for (size_t b = 0; b < c.B; b++)
        for (size_t k = 0; k < P; k++) assert_true(c.qbar[b * c.T * P + k] == 0.0f); /* position 0: nothing */
    grassmann_mix_backward(pair, dz, u, coef, c.w, c.z, win, nw, c.B, c.T, r, eps);
    CHECK_GRAD(plucker_obj, &c, c.z, dz, N * r, N * r, zscale * 1e-2f, TOL, what);
    free(c.z), free(c.qbar), free(c.w), free(dz), free(u), free(coef);
}

static void run_mix(const size_t *win, size_t nw, size_t r, float zscale, float eps, const char *what) {
    run_map_mix(GRASSMANN_PAIR_WEDGE, win, nw, r, zscale, eps, what);
}

/* The controls' maps of the same pairs: the normalised outer product (also
 * at the clamp, and some pairs clamped) and the sum, over an uneven mean. */
static void test_grassmann_pair_maps(void **s) {
    (void)s;
    static const size_t win[] = {1, 3, 5};
    run_map_mix(GRASSMANN_PAIR_OUTER, win, 3, 4, 1.0f, GRASSMANN_EPS, "outer map, offset mean");
    run_map_mix(GRASSMANN_PAIR_OUTER, win, 3, 5, 0.1f, 1.0f, "outer map at the eps clamp");
    run_map_mix(GRASSMANN_PAIR_OUTER, win, 3, 5, 1.0f, 2.0f, "outer map, some pairs clamped");
    run_map_mix(GRASSMANN_PAIR_SUM, win, 3, 4, 1.0f, GRASSMANN_EPS, "sum map, offset mean");
}

static void test_grassmann_plucker_normalised(void **s) {
    (void)s;
    static const size_t one[] = {1};
    run_mix(one, 1, 6, 1.0f, GRASSMANN_EPS, "plucker + normalisation, one offset");
}

static void test_grassmann_clamp(void **s) {
    (void)s;
    static const size_t one[] = {1, 2};
    /* |p| ~ 1e-2 here, so eps = 1 puts every pair at the clamp: q = p / eps. */
    run_mix(one, 2, 6, 0.1f, 1.0f, "plucker at the eps clamp");
    /* |p| ~ 1: eps = 1 clamps some pairs and not others. */
    run_mix(one, 2, 6, 1.0f, 1.0f, "plucker, some pairs clamped");
    float zc[6], zp[6], q[15] = {0};
    for (size_t i = 0; i < 6; i++) zc[i] = 0.1f * (float)i - 0.2f, zp[i] = 0.05f * (float)(i * i) - 0.3f;
    grassmann_pair_forward(q, zc, zp, 1.0f, 1.0f, 6);
    size_t k = 0;
    for (size_t i = 0; i < 6; i++)
        for (size_t j = i + 1; j < 6; j++, k++) assert_float_equal(q[k], zc[i] * zp[j] - zc[j] * zp[i], 1e-7);
}

/* Repeated tokens with no positions (rope) give equal z rows: the pair
 * (z_t, z_{t-d}) is parallel, adds nothing and passes no gradient. The loss
 * as a function of the shared vector y (every row of one token set to y, as
 * the layer below would) is smooth, and its gradient is the sum of dz over
 * those rows; with the clamp's s (a ^ b) that sum would be opposite 1/eps
 * terms cancelling in float. Tokens 0 1 0 0 2 0 1 0 (rows of 0 at offsets
 * 1, 2, 3, 5, 7 from each other) and one near-repeat row: y plus rounding. */
typedef struct {
    PluckerCtx m;
    float *y0, *y1; /* token 0's and token 1's vectors */
} TiedCtx;

static const int TIED_TOKENS[8] = {0, 1, 0, 0, 2, 0, 1, 0};

static void tied_rows(TiedCtx *c) {
    for (size_t t = 0; t < c->m.T; t++) {
        const float *src = TIED_TOKENS[t] == 0 ? c->y0 : TIED_TOKENS[t] == 1 ? c->y1 : NULL;
        if (src) memcpy(c->m.z + t * c->m.r, src, c->m.r * sizeof(float));
    }
}

static double tied_obj(void *p) {
    TiedCtx *c = p;
    tied_rows(c);
    return plucker_obj(&c->m);
}

static void test_grassmann_repeated_tokens(void **s) {
    (void)s;
    static const size_t win[] = {1, 2, 3};
    size_t r = 6, T = 8, P = r * (r - 1) / 2;
    TiedCtx c = {{1, T, r, 3, win, GRASSMANN_EPS, NULL, NULL, NULL, GRASSMANN_PAIR_WEDGE}, NULL, NULL};
    c.m.z = rand_tensor(T * r, 1.0f, 21); /* token 2's row stays as drawn */
    c.m.qbar = zeros(T * P);
    c.m.w = rand_tensor(T * P, 1.0f, 22);
    c.y0 = rand_tensor(r, 1.0f, 23), c.y1 = rand_tensor(r, 1.0f, 24);
    float *dz = zeros(T * r), *u = zeros(T * r), *coef = zeros(T * (3 * 3 + 1)), dy0[6] = {0}, dy1[6] = {0};
    tied_obj(&c);
    /* Position 3 (token 0) has pairs with positions 2 and 0 (token 0: parallel) and 1: only (z_3, z_1) counts, of 3. */
    float want[15] = {0};
    grassmann_pair_forward(want, c.m.z + 3 * r, c.m.z + 1 * r, 1.0f / 3.0f, GRASSMANN_EPS, r);
    for (size_t k = 0; k < P; k++) assert_float_equal(c.m.qbar[3 * P + k], want[k], 1e-6);
    grassmann_mix_backward(GRASSMANN_PAIR_WEDGE, dz, u, coef, c.m.w, c.m.z, win, 3, 1, T, r, GRASSMANN_EPS);
    for (size_t t = 0; t < T; t++)
        for (size_t i = 0; i < r; i++) {
            if (TIED_TOKENS[t] == 0) dy0[i] += dz[t * r + i];
            if (TIED_TOKENS[t] == 1) dy1[i] += dz[t * r + i];
        }
    CHECK_GRAD(tied_obj, &c, c.y0, dy0, r, r, 1e-2f, TOL, "grassmann, repeated token 0");
    CHECK_GRAD(tied_obj, &c, c.y1, dy1, r, r, 1e-2f, TOL, "grassmann, repeated token 1");
    /* Equal but for rounding (one ulp in each coordinate) is parallel too: nothing added. */
    float a[6], b[6], q[15] = {0};
    for (size_t i = 0; i < r; i++) a[i] = c.y0[i], b[i] = nextafterf(a[i], 2.0f);
    grassmann_pair_forward(q, a, b, 1.0f, GRASSMANN_EPS, r);
    for (size_t k = 0; k < P; k++) assert_true(q[k] == 0.0f);
    free(c.m.z), free(c.m.qbar), free(c.m.w), free(c.y0), free(c.y1), free(dz), free(u), free(coef);
}

static void test_grassmann_offset_mean(void **s) {
    (void)s;
    /* T = 6 with offsets 1, 3, 5: positions 0..5 have 0,1,1,2,2,3 valid offsets. */
    static const size_t win[] = {1, 3, 5};
    run_mix(win, 3, 4, 1.0f, GRASSMANN_EPS, "grassmann offset mean");
}

typedef struct {
    size_t n;
    float *apre, *a, *x, *g, *m, *w;
} GateCtx;

static double gate_obj(void *p) {
    GateCtx *c = p;
    memcpy(c->a, c->apre, c->n * sizeof(float));
    grassmann_gate_forward(c->m, c->a, c->x, c->g, c->n);
    return dot_objective(c->m, c->w, c->n);
}

static void test_grassmann_gate(void **s) {
    (void)s;
    GateCtx c = {20, rand_tensor(20, 1.0f, 16), zeros(20), rand_tensor(20, 1.0f, 17), rand_tensor(20, 1.0f, 18),
                 zeros(20), rand_tensor(20, 1.0f, 19)};
    float *dx = rand_tensor(20, 1e3f, 28), *dg = rand_tensor(20, 1e3f, 29), *dapre = zeros(20); /* written */
    gate_obj(&c);
    grassmann_gate_backward(dx, dg, dapre, c.w, c.a, c.x, c.g, c.n);
    CHECK_GRAD(gate_obj, &c, c.apre, dapre, 20, 20, 1e-2f, TOL, "gate pre-activation");
    CHECK_GRAD(gate_obj, &c, c.x, dx, 20, 20, 1e-2f, TOL, "gate x");
    CHECK_GRAD(gate_obj, &c, c.g, dg, 20, 20, 1e-2f, TOL, "gate g");
    free(c.apre), free(c.a), free(c.x), free(c.g), free(c.m), free(c.w), free(dx), free(dg), free(dapre);
}

/* ---- MLP, GELU, dropout, cross-entropy ---------------------------------------- */

typedef struct {
    size_t N, C;
    float *in, *params, *fc, *act, *out, *w;
    MlpAct fn;
} MlpCtx;

static MlpParams mlp_p(const MlpCtx *c) {
    size_t C = c->C;
    return (MlpParams){c->params, c->params + 4 * C * C, c->params + 4 * C * C + 4 * C,
                       c->params + 8 * C * C + 4 * C, c->fn};
}

static double mlp_obj(void *p) {
    MlpCtx *c = p;
    mlp_forward(NULL, c->out, c->fc, c->act, c->in, mlp_p(c), c->N, c->C);
    return dot_objective(c->out, c->w, c->N * c->C);
}

static void run_mlp(MlpAct fn) {
    size_t N = 5, C = 6, np = 8 * C * C + 5 * C;
    MlpCtx c = {N, C, rand_tensor(N * C, 1.0f, 20), rand_tensor(np, 0.4f, 21), zeros(N * 4 * C), zeros(N * 4 * C),
                zeros(N * C), rand_tensor(N * C, 1.0f, 22), fn};
    float *dp = zeros(np), *din = rand_tensor(N * C, 1e3f, 25), *dfc = rand_tensor(N * 4 * C, 1e3f, 26); /* written, not added to */
    mlp_obj(&c);
    MlpGrads g = {dp, dp + 4 * C * C, dp + 4 * C * C + 4 * C, dp + 8 * C * C + 4 * C};
    mlp_backward(NULL, din, g, dfc, c.w, c.in, c.fc, c.act, mlp_p(&c), N, C);
    CHECK_GRAD(mlp_obj, &c, c.in, din, N * C, 100, 1e-2f, TOL, "mlp input");
    CHECK_GRAD(mlp_obj, &c, c.params, dp, 4 * C * C, 100, 1e-2f, TOL, "mlp fc.weight");
    CHECK_GRAD(mlp_obj, &c, c.params + 4 * C * C, dp + 4 * C * C, 4 * C, 100, 1e-2f, TOL, "mlp fc.bias");
    CHECK_GRAD(mlp_obj, &c, c.params + 4 * C * C + 4 * C, dp + 4 * C * C + 4 * C, 4 * C * C, 100, 1e-2f, TOL, "mlp proj.weight");
    CHECK_GRAD(mlp_obj, &c, c.params + 8 * C * C + 4 * C, dp + 8 * C * C + 4 * C, C, 100, 1e-2f, TOL, "mlp proj.bias");
    free(c.in), free(c.params), free(c.fc), free(c.act), free(c.out), free(c.w), free(dp), free(din), free(dfc);
}

static void test_mlp(void **s) { (void)s; run_mlp(MLP_GELU); }

/* ReLU^2: max(x, 0)^2 after fc, and its derivative 2 max(x, 0). No
 * pre-activation lies within the differencing step of the kink at 0 (the
 * smallest is far larger than 1e-2 for these draws: asserted). */
static void test_mlp_relu2(void **s) {
    (void)s;
    run_mlp(MLP_RELU2);
    size_t N = 5, C = 6;
    MlpCtx c = {N, C, rand_tensor(N * C, 1.0f, 20), rand_tensor(8 * C * C + 5 * C, 0.4f, 21), zeros(N * 4 * C),
                zeros(N * 4 * C), zeros(N * C), rand_tensor(N * C, 1.0f, 22), MLP_RELU2};
    mlp_obj(&c);
    for (size_t i = 0; i < N * 4 * C; i++) assert_true(c.act[i] == (c.fc[i] > 0.0f ? c.fc[i] * c.fc[i] : 0.0f));
    free(c.in), free(c.params), free(c.fc), free(c.act), free(c.out), free(c.w);
}

typedef struct {
    size_t n;
    float *in, *out, *w;
} GeluCtx;

static double gelu_obj(void *p) {
    GeluCtx *c = p;
    gelu_forward(c->out, c->in, c->n);
    return dot_objective(c->out, c->w, c->n);
}

static void test_gelu(void **s) {
    (void)s;
    GeluCtx c = {50, rand_tensor(50, 2.0f, 23), zeros(50), rand_tensor(50, 1.0f, 24)};
    float *din = zeros(50);
    gelu_backward(din, c.in, c.w, 50);
    CHECK_GRAD(gelu_obj, &c, c.in, din, 50, 50, 1e-2f, TOL, "gelu");
    /* GELU(x) = x * Phi(x) in its tanh form: known values. */
    float x[3] = {-1.0f, 0.0f, 2.0f}, y[3];
    gelu_forward(y, x, 3);
    assert_float_equal(y[0], -0.158808f, 1e-5);
    assert_float_equal(y[1], 0.0f, 1e-7);
    assert_float_equal(y[2], 1.954598f, 1e-5);
    free(c.in), free(c.out), free(c.w), free(din);
}

typedef struct {
    size_t n;
    float *in, *x, *mask, *w;
} DropCtx;

static double drop_obj(void *p) {
    DropCtx *c = p;
    memcpy(c->x, c->in, c->n * sizeof(float));
    dropout_forward(c->x, c->mask, c->n);
    return dot_objective(c->x, c->w, c->n);
}

static void test_dropout(void **s) {
    (void)s;
    size_t n = 4000;
    DropCtx c = {n, rand_tensor(n, 1.0f, 25), zeros(n), zeros(n), rand_tensor(n, 1.0f, 26)};
    dropout_mask(c.mask, n, 0.25f, 99);
    size_t dropped = 0;
    for (size_t i = 0; i < n; i++) {
        assert_true(c.mask[i] == 0.0f || fabsf(c.mask[i] - 1.0f / 0.75f) < 1e-6f);
        dropped += c.mask[i] == 0.0f;
    }
    assert_true(dropped > 850 && dropped < 1150); /* ~1000 expected */
    float *again = zeros(n);
    dropout_mask(again, n, 0.25f, 99); /* the same key gives the same mask */
    assert_memory_equal(again, c.mask, n * sizeof(float));
    float *din = zeros(n);
    dropout_backward(din, c.w, c.mask, n);
    CHECK_GRAD(drop_obj, &c, c.in, din, n, 200, 1e-2f, TOL, "dropout (fixed mask)");
    free(c.in), free(c.x), free(c.mask), free(c.w), free(din), free(again);
}

typedef struct {
    size_t N, V;
    float *logits, *losses;
    int32_t *tg;
} CeCtx;

static double ce_obj(void *p) {
    CeCtx *c = p;
    crossentropy_forward(c->losses, c->logits, c->tg, c->N, c->V);
    double s = 0.0;
    for (size_t i = 0; i < c->N; i++) s += c->losses[i];
    return s / (double)c->N;
}

static void test_crossentropy(void **s) {
    (void)s;
    int32_t tg[4] = {0, 3, 6, 3};
    CeCtx c = {4, 7, rand_tensor(28, 2.0f, 27), zeros(4), tg};
    ce_obj(&c);
    float *dl = zeros(28);
    crossentropy_backward(dl, c.logits, tg, 1.0f / 4.0f, 4, 7);
    CHECK_GRAD(ce_obj, &c, c.logits, dl, 28, 28, 1e-2f, TOL, "cross-entropy");
    /* In place over the logits (as the model's head does): the same bits. */
    float *inplace = zeros(28);
    memcpy(inplace, c.logits, 28 * sizeof(float));
    crossentropy_backward(inplace, inplace, tg, 1.0f / 4.0f, 4, 7);
    assert_memory_equal(inplace, dl, 28 * sizeof(float));
    free(c.logits), free(c.losses), free(dl), free(inplace);
}

/* The logit soft cap, c tanh(z / c), and the loss over it against finite
 * differences: the gradient through both at once, from the capped logits
 * (in place, as the model's head takes it), with logits of size 2 against a
 * cap of 1.5 (well into the curve). */
typedef struct {
    size_t N, V;
    float cap;
    float *in, *x, *losses;
    int32_t *tg;
} CapCtx;

static double cap_obj(void *p) {
    CapCtx *c = p;
    memcpy(c->x, c->in, c->N * c->V * sizeof(float));
    softcap_forward(c->x, c->N * c->V, c->cap);
    crossentropy_forward(c->losses, c->x, c->tg, c->N, c->V);
    double s = 0.0;
    for (size_t i = 0; i < c->N; i++) s += c->losses[i];
    return s / (double)c->N;
}

static void test_softcap(void **s) {
    (void)s;
    int32_t tg[5] = {0, 7, -1, 3, 7}; /* one ignored */
    CapCtx c = {5, 8, 1.5f, rand_tensor(40, 2.0f, 33), zeros(40), zeros(5), tg};
    cap_obj(&c);
    for (size_t i = 0; i < 40; i++) {
        assert_true(fabsf(c.x[i]) < c.cap);
        assert_true(fabs(c.x[i] - 1.5 * tanh(c.in[i] / 1.5)) < 1e-6);
    }
    float *grad = zeros(40);
    memcpy(grad, c.x, 40 * sizeof(float));
    crossentropy_softcap_backward(grad, grad, tg, 1.0f / 5.0f, 5, 8, c.cap);
    for (size_t v = 0; v < 8; v++) assert_true(grad[2 * 8 + v] == 0.0f);
    CHECK_GRAD(cap_obj, &c, c.in, grad, 40, 40, 1e-2f, TOL, "logit soft cap and loss");
    free(c.in), free(c.x), free(c.losses), free(grad);
}

/* At GPT-2's vocabulary the loss (one pass, fast_expf summed in double) is
 * the double-precision log-sum-exp's to 1e-6, and a target far below the
 * maximum keeps a finite, exact loss. */
static void test_crossentropy_large_vocab(void **s) {
    (void)s;
    enum { N = 3, V = 50257 };
    float *logits = rand_tensor(N * V, 4.0f, 31), losses[N];
    int32_t tg[N] = {0, 12345, V - 1};
    logits[2 * V + V - 1] = -120.0f; /* exp(-120 - max) underflows a float: the loss must not */
    crossentropy_forward(losses, logits, tg, N, V);
    for (size_t n = 0; n < N; n++) {
        const float *z = logits + n * V;
        double mx = z[0], sum = 0.0;
        for (size_t v = 1; v < V; v++) mx = z[v] > mx ? z[v] : mx;
        for (size_t v = 0; v < V; v++) sum += exp((double)z[v] - mx);
        double want = log(sum) + mx - z[tg[n]];
        assert_true(isfinite(losses[n]));
        assert_true(fabs(losses[n] - want) <= 1e-6 * want);
    }
    assert_true(losses[2] > 120.0f);
    free(logits);
}

/* ---- whole models ---------------------------------------------------------------- */

typedef struct {
    Model *m;
    int32_t *in, *tg;
    size_t B, T;
    uint64_t key;
} ModelCtx;

static double model_obj(void *p) {
    ModelCtx *c = p;
    model_forward(c->m, c->in, c->tg, c->B, c->T, &(PassOptions){.dropout_key = &c->key});
    return c->m->run.loss;
}

static void run_model_ex(const char *mixers, PosKind pos, float dropout, NormKind norm, const char *windows) {
    Model m;
    tiny_test_model_ex(&m, mixers, pos, dropout, norm, windows);
    int32_t in[16], tg[16];
    for (size_t i = 0; i < 16; i++) in[i] = (int32_t)((i * 7 + 3) % 11), tg[i] = (int32_t)((i * 5 + 1) % 11);
    ModelCtx c = {&m, in, tg, 2, 8, 1234};
    char label[96];
    snprintf(label, sizeof label, "model[%s, %s positions, %s-norm, windows %s]", mixers, pos_name(pos), norm_name(norm),
             windows ? windows : "1,2,3");
    check_model_grads(&m, model_obj, &c, label);
    model_free(&m);
}

static void run_model(const char *mixers, PosKind pos, float dropout) { run_model_ex(mixers, pos, dropout, NORM_PRE, NULL); }

static void test_model_attention(void **s) { (void)s; run_model("attention", POS_LEARNED, 0.0f); }
static void test_model_sinusoidal_dropout(void **s) { (void)s; run_model("attention", POS_SINUSOIDAL, 0.2f); }
static void test_model_grassmann(void **s) { (void)s; run_model("grassmann", POS_LEARNED, 0.0f); }
static void test_model_hybrid(void **s) { (void)s; run_model("grassmann,attention", POS_LEARNED, 0.1f); }
static void test_model_rope(void **s) { (void)s; run_model("attention", POS_ROPE, 0.0f); }
static void test_model_rope_hybrid(void **s) { (void)s; run_model("attention,grassmann", POS_ROPE, 0.1f); }
static void test_model_post_attention(void **s) { (void)s; run_model_ex("attention", POS_LEARNED, 0.0f, NORM_POST, NULL); }
static void test_model_post_grassmann_schedule(void **s) {
    (void)s;
    run_model_ex("grassmann", POS_LEARNED, 0.0f, NORM_POST, "1;2,3");
}
static void test_model_post_hybrid_dropout(void **s) {
    (void)s;
    run_model_ex("grassmann,attention", POS_ROPE, 0.1f, NORM_POST, "3,1;2");
}
static void test_model_pre_schedule(void **s) { (void)s; run_model_ex("grassmann", POS_LEARNED, 0.1f, NORM_PRE, "2;1,3"); }

/* Whole models with the recipe's switches, each also alone: every weight
 * drawn (zero_init's zeros and the norms' gains too). */
static void run_recipe_model(const char *mixers, PosKind pos, NormKind norm, NormType nt, MlpActKind act, size_t qk,
                             size_t untied, float cap) {
    ModelConfig cfg = tiny_test_config(mixers, pos, 0.0f, norm, NULL);
    cfg.norm_type = nt, cfg.mlp_act = act, cfg.qk_norm = qk, cfg.untied_head = untied, cfg.zero_init = 1;
    cfg.logit_softcap = cap;
    Model m;
    tiny_test_model_of(&m, &cfg, 1);
    int32_t in[16], tg[16];
    for (size_t i = 0; i < 16; i++) in[i] = (int32_t)((i * 7 + 3) % 11), tg[i] = (int32_t)((i * 5 + 1) % 11);
    ModelCtx c = {&m, in, tg, 2, 8, 1234};
    char label[160], sw[120];
    snprintf(label, sizeof label, "model[%s, %s positions, %s-norm, %s]", mixers, pos_name(pos), norm_name(norm),
             config_recipe_list(&cfg, sw, sizeof sw));
    check_model_grads(&m, model_obj, &c, label);
    model_free(&m);
}

static void test_model_recipe_switches(void **s) {
    (void)s;
    run_recipe_model("attention", POS_LEARNED, NORM_PRE, NORM_TYPE_RMSNORM, MLP_ACT_GELU, 0, 0, 0.0f);
    run_recipe_model("attention", POS_LEARNED, NORM_PRE, NORM_TYPE_LAYERNORM, MLP_ACT_RELU2, 0, 0, 0.0f);
    run_recipe_model("attention", POS_LEARNED, NORM_PRE, NORM_TYPE_LAYERNORM, MLP_ACT_GELU, 1, 0, 0.0f);
    run_recipe_model("attention", POS_LEARNED, NORM_PRE, NORM_TYPE_LAYERNORM, MLP_ACT_GELU, 0, 1, 0.0f);
    run_recipe_model("attention", POS_LEARNED, NORM_PRE, NORM_TYPE_LAYERNORM, MLP_ACT_GELU, 0, 0, 1.0f);
}

/* Whole models whose Grassmann layers map the pairs by the controls' maps. */
static void test_model_pair_maps(void **s) {
    (void)s;
    static const char *const maps[] = {"outer", "sum"};
    for (size_t k = 0; k < 2; k++) {
        ModelConfig cfg = tiny_test_config("grassmann,attention", POS_LEARNED, 0.0f, NORM_PRE, NULL);
        Error err;
        assert_int_equal(config_set_option(&cfg, "grassmann-pair", maps[k], &err), 0);
        Model m;
        tiny_test_model_of(&m, &cfg, 1);
        int32_t in[16], tg[16];
        for (size_t i = 0; i < 16; i++) in[i] = (int32_t)((i * 7 + 3) % 11), tg[i] = (int32_t)((i * 5 + 1) % 11);
        ModelCtx c = {&m, in, tg, 2, 8, 1234};
        char label[96];
        snprintf(label, sizeof label, "model[grassmann,attention, pair map %s]", maps[k]);
        check_model_grads(&m, model_obj, &c, label);
        model_free(&m);
    }
}

static void test_model_recipe_all(void **s) {
    (void)s;
    run_recipe_model("attention", POS_ROPE, NORM_PRE, NORM_TYPE_RMSNORM, MLP_ACT_RELU2, 1, 1, 1.0f);
    run_recipe_model("attention", POS_ROPE, NORM_POST, NORM_TYPE_RMSNORM, MLP_ACT_RELU2, 1, 1, 1.0f);
    run_recipe_model("grassmann", POS_LEARNED, NORM_PRE, NORM_TYPE_RMSNORM, MLP_ACT_RELU2, 0, 1, 1.0f);
    run_recipe_model("attention,grassmann", POS_LEARNED, NORM_POST, NORM_TYPE_RMSNORM, MLP_ACT_RELU2, 1, 1, 1.0f);
}

int main(void) {
    struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fd_sampling),
        cmocka_unit_test(test_embedding_learned),
        cmocka_unit_test(test_embedding_sinusoidal),
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_rmsnorm_heads),
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_attention_window),
        cmocka_unit_test(test_gla),
        cmocka_unit_test(test_gla_step),
        cmocka_unit_test(test_attention_tiles), cmocka_unit_test(test_attention_backward_by_tiles),
        cmocka_unit_test(test_attention_rope),
        cmocka_unit_test(test_attention_qk_norm),
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_mlp),
        cmocka_unit_test(test_mlp_relu2),
        cmocka_unit_test(test_softcap),
        cmocka_unit_test(test_gelu),
        cmocka_unit_test(test_dropout),
        cmocka_unit_test(test_crossentropy), cmocka_unit_test(test_crossentropy_large_vocab),
        cmocka_unit_test(test_grassmann_plucker_normalised),
        cmocka_unit_test(test_grassmann_clamp),
        cmocka_unit_test(test_grassmann_repeated_tokens),
        cmocka_unit_test(test_grassmann_offset_mean),
        cmocka_unit_test(test_grassmann_pair_maps),
        cmocka_unit_test(test_grassmann_gate),
        cmocka_unit_test(test_grassmann_layer),
        cmocka_unit_test(test_model_attention),
        cmocka_unit_test(test_model_sinusoidal_dropout),
        cmocka_unit_test(test_model_grassmann),
        cmocka_unit_test(test_model_pair_maps),
        cmocka_unit_test(test_model_hybrid),
        cmocka_unit_test(test_model_rope),
        cmocka_unit_test(test_model_rope_hybrid),
        cmocka_unit_test(test_model_post_attention),
        cmocka_unit_test(test_model_post_grassmann_schedule),
        cmocka_unit_test(test_model_post_hybrid_dropout),
        cmocka_unit_test(test_model_pre_schedule),
        cmocka_unit_test(test_model_recipe_switches),
        cmocka_unit_test(test_model_recipe_all),
    };
    size_t n = test_select(tests, sizeof tests / sizeof tests[0]); /* LM_TEST_ONLY, LM_TEST_SKIP */
    return _cmocka_run_group_tests("gradient checks", tests, n, NULL, NULL);
}
