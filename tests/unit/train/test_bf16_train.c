/* Mixed-precision training (issue 20, phase 2): the layers' bf16 products
 * against their fp32 ones, each layer and the whole model, and bf16's
 * independence of the thread count. Skipped, saying so, on CPUs without
 * AVX512_BF16, where bin/train refuses --precision bf16 (tests/cli/cli_test.sh).
 *
 * The bounds. u8 = 2^-8: rounding an operand to bf16 moves it by at most
 * u8 relatively, so a product term a*b moves by at most 2 u8 + u8^2; fp32
 * accumulation adds gamma(k+2) (lm/bf16.h). Hence, per entry of ONE
 * product (bf16_rounding_bound):
 *   |c_bf16 - c_fp32| <= (2^-7 + 2^-16) sum_p |a_ip b_pj| + accumulation,
 * which the product tests check exactly, entry by entry, with the magnitude
 * sums computed in double.
 *
 * A layer chains products through element-wise maps. First order, an error
 * e_in entering a map with derivative bounded by L leaves it as L e_in, and
 * a product passes an input error through |W|: for the MLP's forward,
 * out = proj(gelu(fc(x))) with |gelu'| <= 1.13,
 *   |d out_o| <= 2^-7 (S2_o + 1.13 sum_j |W2_oj| S1_j) (1 + 2^-6)
 * (S1, S2: the magnitude sums of fc and proj; the last factor covers the
 * second-order terms and fp32's own accumulation error, both below 2^-6 of
 * the first-order one at these sizes); checked entry by entry.
 *
 * Through softmax, LayerNorm and the Grassmann mixing the per-entry chain
 * has no such closed form, so the mixers, the MLP's backward and the whole
 * model are checked normwise: with P products on the longest path from an
 * input to an output, each contributing at most 2^-7 of its magnitude sum,
 *   ||d out||_2 <= P 2^-7 K ||out||_2,
 * where K = 4 allows for magnitude sums exceeding |results| (cancellation
 * in sums of random-sign terms: about 1 / sqrt(2/pi) for Gaussian data,
 * and 1.13 per GELU) - a bound each test states with its P. Gradients that
 * pass through no product (a last bias: a column sum of dout) must be
 * equal bit for bit. The tests can fail: the product tests are tight (the
 * exact per-entry bound), every normwise check also requires bf16 to differ
 * from fp32 by more than 2^-14 relatively (the bf16 path ran), and the
 * normwise bounds, 10-100x the errors measured, catch what goes wrong
 * grossly (a product on the wrong operand or weight, a stale shadow, an
 * unrounded or truncated operand at scale: errors of order 1). */
#include "testutil.h"
#include "test_model_util.h"

#include "lm/bf16.h"
#include "mixers/attention.h"
#include "mixers/grassmann.h"
#include "lm/model.h"
#include "train/trainer.h"
#include "nn/mlp.h"
#include "lm/matmul.h"
#include "lm/ops.h"

/* Every test here needs the bf16 products: on a CPU without them each is
 * skipped (main says why, once). */
static void skip_without_bf16(void) {
    if (!bf16_supported()) skip();
}

/* A MatmulBf16 over one parameter buffer, with scratch slots of `slot`
 * entries and `packed` words of packed operands. */
typedef struct {
    MatmulBf16 bf;
    uint16_t *h, *scratch;
    uint32_t *packed;
    MatmulBf16Failure failure;
} Bf;

static void bf_make(Bf *b, const float *params, size_t n, size_t slot, size_t packed) {
    b->h = malloc(n * sizeof *b->h);
    b->scratch = malloc(2 * slot * sizeof *b->scratch);
    b->packed = packed ? malloc(packed * sizeof *b->packed) : NULL;
    b->failure = (MatmulBf16Failure){0};
    bf16_from_floats(n, params, b->h);
    b->bf = (MatmulBf16){.params = params, .params_h = b->h, .n_params = n,
                         .scratch = {b->scratch, b->scratch + slot}, .scratch_len = slot,
                         .packed = b->packed, .packed_len = packed, .failure = &b->failure};
}
/* Frees b, after checking that none of its products failed. */
static void bf_free(Bf *b) {
    assert_false(b->failure.failed);
    free(b->h), free(b->scratch), free(b->packed);
}

static double norm2(const float *x, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    return sqrt(s);
}
static double diff2(const float *x, const float *y, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
    return sqrt(s);
}

/* The normwise check: bf16 differs from fp32, by at most P 2^-7 K relatively. */
#define K_ALLOW 4.0
static void check_normwise(const float *got, const float *want, size_t n, int P, const char *what) {
    double rel = diff2(got, want, n) / norm2(want, n), bound = P * 0x1p-7 * K_ALLOW;
    if (getenv("VERBOSE")) printf("  %-28s relative %.2e, bound %.2e (P %d)\n", what, rel, bound, P);
    if (!(rel > 0x1p-14)) fail_msg("%s: bf16 equals fp32 to %.2e: the bf16 path did not run", what, rel);
    if (!(rel <= bound)) fail_msg("%s: bf16 is %.3e from fp32, relatively; bound %.3e", what, rel, bound);
}

/* ---- single products, entry by entry ------------------------------------------------ */

/* sum_p |a(i,p)| |b(p,j)| with a (m, k) and b given by element functions: rows
 * of in (n, k) against rows of w (stride ldw), i.e. the forward form. */
static double abs_nt(const float *in, size_t ldi, const float *w, size_t ldw, size_t i, size_t j, size_t k) {
    double s = 0.0;
    for (size_t p = 0; p < k; p++) s += fabs((double)in[i * ldi + p] * w[j * ldw + p]);
    return s;
}

static void check_entry(float got, float want, double bound, const char *what, size_t i, size_t j) {
    if (!(fabs((double)got - want) <= bound))
        fail_msg("%s (%zu,%zu): bf16 %.9g, fp32 %.9g, bound %.3g", what, i, j, (double)got, (double)want, bound);
}

/* matmul_forward (with bias) and matmul_add_strided, matmul_backward_strided
 * (din beta 1, dw accumulating into a strided block, dbias), and the MLP's
 * per-row products, against fp32 within bf16_rounding_bound per entry. */
static void test_products(void **state) {
    (void)state;
    skip_without_bf16();
    size_t n = 37, in_dim = 48, out_dim = 40, ldw = 2 * in_dim;
    float *params = rand_tensor(out_dim * ldw + out_dim, 0.5f, 1), *w = params, *bias = params + out_dim * ldw;
    float *in = rand_tensor(n * in_dim, 1.0f, 2), *dout = rand_tensor(n * out_dim, 1.0f, 3);
    float *c0 = rand_tensor(n * out_dim, 1.0f, 4), *d0 = rand_tensor(n * in_dim, 1.0f, 5);
    float *g0 = rand_tensor(out_dim * ldw, 1.0f, 6);
    Bf b;
    bf_make(&b, params, out_dim * ldw + out_dim, n * ldw, 0);
    float *f32 = malloc(n * out_dim * sizeof(float)), *h16 = malloc(n * out_dim * sizeof(float));
    /* forward with bias: out = in W^T + bias, W a strided block */
    matmul_forward_strided(NULL, f32, in, w, ldw, bias, n, in_dim, out_dim);
    matmul_forward_strided(&b.bf, h16, in, w, ldw, bias, n, in_dim, out_dim);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < out_dim; j++)
            check_entry(h16[i * out_dim + j], f32[i * out_dim + j],
                        bf16_rounding_bound(in_dim, 1.0f, abs_nt(in, in_dim, w, ldw, i, j, in_dim), 1.0f, bias[j]),
                        "forward", i, j);
    /* out += in W^T */
    memcpy(f32, c0, n * out_dim * sizeof(float));
    memcpy(h16, c0, n * out_dim * sizeof(float));
    matmul_add_strided(NULL, f32, in, w, ldw, n, in_dim, out_dim);
    matmul_add_strided(&b.bf, h16, in, w, ldw, n, in_dim, out_dim);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < out_dim; j++)
            check_entry(h16[i * out_dim + j], f32[i * out_dim + j],
                        bf16_rounding_bound(in_dim, 1.0f, abs_nt(in, in_dim, w, ldw, i, j, in_dim), 1.0f,
                                            c0[i * out_dim + j]),
                        "add", i, j);
    /* backward: din = dout W + d0, dW += dout^T in (strided), dbias += colsum */
    float *din32 = malloc(n * in_dim * sizeof(float)), *din16 = malloc(n * in_dim * sizeof(float));
    float *dw32 = malloc(out_dim * ldw * sizeof(float)), *dw16 = malloc(out_dim * ldw * sizeof(float));
    float db32[40] = {0}, db16[40] = {0};
    memcpy(din32, d0, n * in_dim * sizeof(float)), memcpy(din16, d0, n * in_dim * sizeof(float));
    memcpy(dw32, g0, out_dim * ldw * sizeof(float)), memcpy(dw16, g0, out_dim * ldw * sizeof(float));
    matmul_backward_strided(NULL, din32, 1.0f, dw32, ldw, db32, dout, in, w, n, in_dim, out_dim);
    matmul_backward_strided(&b.bf, din16, 1.0f, dw16, ldw, db16, dout, in, w, n, in_dim, out_dim);
    for (size_t i = 0; i < n; i++)
        for (size_t q = 0; q < in_dim; q++) {
            double s = 0.0;
            for (size_t o = 0; o < out_dim; o++) s += fabs((double)dout[i * out_dim + o] * w[o * ldw + q]);
            check_entry(din16[i * in_dim + q], din32[i * in_dim + q],
                        bf16_rounding_bound(out_dim, 1.0f, s, 1.0f, d0[i * in_dim + q]), "din", i, q);
        }
    for (size_t o = 0; o < out_dim; o++) {
        for (size_t q = 0; q < in_dim; q++) {
            double s = 0.0;
            for (size_t i = 0; i < n; i++) s += fabs((double)dout[i * out_dim + o] * in[i * in_dim + q]);
            check_entry(dw16[o * ldw + q], dw32[o * ldw + q],
                        bf16_rounding_bound(n, 1.0f, s, 1.0f, g0[o * ldw + q]), "dw", o, q);
        }
        for (size_t q = in_dim; q < ldw; q++) /* the block beside it is not touched */
            assert_true(dw16[o * ldw + q] == g0[o * ldw + q]);
        assert_true(db16[o] == db32[o]); /* the bias gradient is an fp32 column sum either way */
    }
    /* the MLP's per-row products on the calling thread */
    float *r32 = malloc(5 * out_dim * sizeof(float)), *r16 = malloc(5 * out_dim * sizeof(float));
    matmul_rows(NULL, 0, 0, r32, in, w, bias, 5, in_dim, out_dim);
    /* (rows of a strided W are not what matmul_rows takes: W contiguous here) */
    Bf c;
    bf_make(&c, params, out_dim * ldw + out_dim, n * ldw, 0);
    matmul_rows(NULL, 0, 0, r32, in, w, NULL, 5, in_dim, out_dim);
    matmul_rows(&c.bf, 0, 0, r16, in, w, NULL, 5, in_dim, out_dim);
    for (size_t i = 0; i < 5; i++)
        for (size_t j = 0; j < out_dim; j++)
            check_entry(r16[i * out_dim + j], r32[i * out_dim + j],
                        bf16_rounding_bound(in_dim, 1.0f, abs_nt(in, in_dim, w, in_dim, i, j, in_dim), 0.0f, 0.0f),
                        "rows", i, j);
    bf_free(&b), bf_free(&c);
    free(params), free(in), free(dout), free(c0), free(d0), free(g0), free(f32), free(h16);
    free(din32), free(din16), free(dw32), free(dw16), free(r32), free(r16);
}

/* ---- the MLP --------------------------------------------------------------------------- */

static void test_mlp(void **state) {
    (void)state;
    skip_without_bf16();
    size_t N = 70, C = 24, H = 4 * C; /* N > a row block, so several blocks run */
    size_t np = H * C + H + C * H + C;
    float *params = rand_tensor(np, 0.2f, 11);
    MlpParams p = {params, params + H * C, params + H * C + H, params + H * C + H + C * H, MLP_GELU};
    float *in = rand_tensor(N * C, 1.0f, 12), *dout = rand_tensor(N * C, 1.0f, 13);
    float *out32 = zeros(N * C), *out16 = zeros(N * C), *fc32 = zeros(N * H), *fc16 = zeros(N * H);
    float *act32 = zeros(N * H), *act16 = zeros(N * H), *dfc = zeros(N * H);
    float *din32 = zeros(N * C), *din16 = zeros(N * C), *g32 = zeros(np), *g16 = zeros(np);
    Bf b;
    bf_make(&b, params, np, N * H, 0);
    mlp_forward(NULL, out32, fc32, act32, in, p, N, C);
    mlp_forward(&b.bf, out16, fc16, act16, in, p, N, C);
    /* per entry, first order (see the top): S1 of fc, S2 of proj, |W2| S1 */
    double *s1 = malloc(N * H * sizeof(double));
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < H; j++) s1[i * H + j] = abs_nt(in, C, p.fc_w, C, i, j, C);
    for (size_t i = 0; i < N; i++)
        for (size_t o = 0; o < C; o++) {
            double s2 = abs_nt(act32, H, p.proj_w, H, i, o, H), prop = 0.0;
            for (size_t j = 0; j < H; j++) prop += fabs((double)p.proj_w[o * H + j]) * s1[i * H + j];
            check_entry(out16[i * C + o], out32[i * C + o], 0x1p-7 * (s2 + 1.13 * prop) * (1.0 + 0x1p-6), "mlp out",
                        i, o);
        }
    check_normwise(out16, out32, N * C, 2, "mlp forward");
    MlpGrads g = {g32, g32 + H * C, g32 + H * C + H, g32 + H * C + H + C * H};
    mlp_backward(NULL, din32, g, dfc, dout, in, fc32, act32, p, N, C);
    MlpGrads h = {g16, g16 + H * C, g16 + H * C + H, g16 + H * C + H + C * H};
    mlp_backward(&b.bf, din16, h, dfc, dout, in, fc16, act16, p, N, C);
    /* din: proj^T, GELU', fc^T (and fc's forward in GELU'): P = 3; dW: up to 3 too */
    check_normwise(din16, din32, N * C, 3, "mlp din");
    check_normwise(g16, g32, H * C, 3, "mlp d fc.weight");
    check_normwise(g16 + H * C + H, g32 + H * C + H, C * H, 3, "mlp d proj.weight");
    bf_free(&b);
    free(params), free(in), free(dout), free(out32), free(out16), free(fc32), free(fc16), free(act32), free(act16);
    free(dfc), free(din32), free(din16), free(g32), free(g16), free(s1);
}

/* ---- the mixers ------------------------------------------------------------------------- */

/* Forward and backward in both precisions; P: products on the longest path. */
static void run_mixer(const Mixer *mx, ModelConfig cfg, size_t B, size_t T, int P_fwd, int P_bwd, const char *exact) {
    MixerSpec spec = model_mixer_spec(&cfg, 0);
    size_t C = cfg.n_embd, N = B * T, np = mixer_param_count(mx, &spec), na = mx->act_size(&spec, B, T);
    float *params = rand_tensor(np, 0.2f, 21), *in = rand_tensor(N * C, 1.0f, 22), *dout = rand_tensor(N * C, 1.0f, 23);
    float *acts = zeros(na), *acts16 = zeros(na), *out32 = zeros(N * C), *out16 = zeros(N * C);
    float *din32 = zeros(N * C), *din16 = zeros(N * C), *g32 = zeros(np), *g16 = zeros(np);
    Bf b;
    bf_make(&b, params, np, N * 4 * C, mx->bf16_words ? mx->bf16_words(&spec, B, T) : 0);
    MixerRuntime fp32 = {NULL, NULL, NULL}, bf16 = {NULL, &b.bf, NULL};
    mx->forward(&spec, &fp32, params, acts, out32, in, B, T);
    mx->forward(&spec, &bf16, params, acts16, out16, in, B, T);
    mx->backward(&spec, &fp32, params, g32, acts, in, dout, din32, B, T);
    mx->backward(&spec, &bf16, params, g16, acts16, in, dout, din16, B, T);
    char what[96];
    snprintf(what, sizeof what, "%s forward", mx->name);
    check_normwise(out16, out32, N * C, P_fwd, what);
    snprintf(what, sizeof what, "%s din", mx->name);
    check_normwise(din16, din32, N * C, P_bwd, what);
    TensorSpec specs[MIXER_MAX_TENSORS];
    size_t ns = mixer_tensors(mx, &spec, specs), off = 0;
    for (size_t i = 0; i < ns; i++) {
        size_t n = specs[i].rows * (specs[i].cols ? specs[i].cols : 1);
        snprintf(what, sizeof what, "%s d %s", mx->name, specs[i].name);
        if (strcmp(specs[i].name, exact) == 0) assert_memory_equal(g16 + off, g32 + off, n * sizeof(float));
        else check_normwise(g16 + off, g32 + off, n, P_bwd, what);
        off += n;
    }
    bf_free(&b);
    free(params), free(in), free(dout), free(acts), free(acts16), free(out32), free(out16), free(din32), free(din16);
    free(g32), free(g16);
}

static void test_attention(void **state) {
    (void)state;
    skip_without_bf16();
    ModelConfig cfg;
    config_defaults(&cfg);
    cfg.n_embd = 32, cfg.n_head = 4, cfg.block_size = 40, cfg.vocab_size = 5;
    /* forward: qkv, the tiles' S = Q K^T and P V (bf16 too, tile_product on packed heads),
     * then proj: P = 4; backward: proj^T, the tiles' dP = dY V^T and
     * dQ/dK/dV (after S, recomputed from the products qkv and Q K^T), then
     * qkv^T, whose dW reads a product's output: P = 6 */
    run_mixer(&attention_mixer, cfg, 2, 40, 4, 6, "attn.proj.bias");
    /* two query/key tiles (128 + 22: off-diagonal tiles and a short last
     * one) at a head size of 10 (no whole vector of 16) */
    cfg.n_embd = 30, cfg.n_head = 3, cfg.block_size = 150;
    run_mixer(&attention_mixer, cfg, 1, 150, 4, 6, "attn.proj.bias");
}

/* bf16 backward cut into tile tasks (attention_backward_by_tiles) gives bit
 * for bit the gradients of one task per head, as fp32 does (test_grad). */
static void test_attention_by_tiles(void **state) {
    (void)state;
    skip_without_bf16();
    ModelConfig cfg = by_tiles_config();
    MixerSpec spec = model_mixer_spec(&cfg, 0);
    size_t np = mixer_param_count(&attention_mixer, &spec);
    float *params = rand_tensor(np, 0.2f, 21);
    Bf b;
    bf_make(&b, params, np, BY_TILES_T * 4 * cfg.n_embd, attention_mixer.bf16_words(&spec, 1, BY_TILES_T));
    check_by_tiles_bitwise(params, (MixerRuntime){NULL, &b.bf, NULL});
    bf_free(&b);
    free(params);
}

static void test_grassmann(void **state) {
    (void)state;
    skip_without_bf16();
    ModelConfig cfg;
    config_defaults(&cfg);
    cfg.n_embd = 32, cfg.block_size = 40, cfg.vocab_size = 5;
    Error err;
    assert_int_equal(config_set_option(&cfg, "grassmann-rank", "6", &err), 0);
    assert_int_equal(config_set_option(&cfg, "grassmann-windows", "1,2,4", &err), 0);
    assert_int_equal(config_set_mixers(&cfg, "grassmann", &err), 0); /* the spec of a Grassmann layer */
    /* forward: reduce, Plücker projection, gate (x and g): P = 3; backward
     * retraces them: P = 6 */
    run_mixer(&grassmann_mixer, cfg, 2, 40, 3, 6, "grassmann.ln.bias");
}

/* ---- the whole model --------------------------------------------------------------------- */

static void forward_backward(Model *m, const int32_t *tok, const int32_t *tgt) {
    model_zero_grads(m);
    model_forward(m, tok, tgt, 2, 8, NULL);
    model_backward(m, 1.0f, NULL);
}

static void run_model(const char *mixers, NormKind norm) {
    Model m32, m16;
    tiny_test_model_ex(&m32, mixers, POS_LEARNED, 0.0f, norm, NULL);
    tiny_test_model_ex(&m16, mixers, POS_LEARNED, 0.0f, norm, NULL);
    Error err;
    assert_int_equal(model_set_precision(&m16, PRECISION_BF16, &err), 0);
    int32_t tok[16], tgt[16];
    for (int i = 0; i < 16; i++) tok[i] = (i * 7 + 3) % 11, tgt[i] = (i * 5 + 1) % 11;
    forward_backward(&m32, tok, tgt);
    forward_backward(&m16, tok, tgt);
    /* Loss: the logits carry at most P = 2 layers x (4 in attention: qkv,
     * the tiles' Q K^T and P V, proj; 2 in the MLP) + the head = 13 products of
     * error, about 13 2^-7 K of their size (~1 here: weights 0.3, LayerNorm
     * before the head), and the loss moves by at most max|d logit| (its
     * gradient in the logits has l1 norm <= 2 per position). */
    double dl = fabs((double)m16.run.loss - m32.run.loss);
    if (getenv("VERBOSE")) printf("  %s loss fp32 %.6f bf16 %.6f\n", mixers, m32.run.loss, m16.run.loss);
    assert_true(dl > 0.0);
    assert_true(dl <= 13 * 0x1p-7 * K_ALLOW * 2.0);
    /* Gradients: forward and backward paths, P = 2 x 13 per tensor (loose:
     * what it guards against is a product run on the wrong operand or an
     * unrounded shadow, errors of order 1). */
    for (size_t i = 0; i < m32.weights.n_tensors; i++) {
        const ParamTensor *t = &m32.weights.tensors[i];
        char what[160];
        snprintf(what, sizeof what, "%s %s", mixers, t->name);
        check_normwise(m16.weights.grads + t->offset, m32.weights.grads + t->offset, t->rows * (t->cols ? t->cols : 1), 26, what);
    }
    model_free(&m32), model_free(&m16);
}

static void test_model_attention(void **state) {
    (void)state;
    skip_without_bf16();
    run_model("attention", NORM_PRE);
}
static void test_model_hybrid_post(void **state) {
    (void)state;
    skip_without_bf16();
    run_model("attention,grassmann", NORM_POST);
}

/* The shadow follows the weights: model_round_weights after a change, and a
 * model set to fp32 again computes exactly as one never set to bf16. */
static void test_shadow(void **state) {
    (void)state;
    skip_without_bf16();
    Model m, ref;
    tiny_test_model(&m, "grassmann", POS_LEARNED, 0.0f);
    tiny_test_model(&ref, "grassmann", POS_LEARNED, 0.0f);
    Error err;
    assert_int_equal(model_set_precision(&m, PRECISION_BF16, &err), 0);
    for (size_t i = 0; i < m.weights.n_params; i++) assert_true(m.weights.bf16->params_h[i] == bf16_from_float(m.weights.params[i]));
    for (size_t i = 0; i < m.weights.n_params; i++) m.weights.params[i] *= 2.0f; /* exact, and so is the way back */
    model_round_weights(&m);
    for (size_t i = 0; i < m.weights.n_params; i++) assert_true(m.weights.bf16->params_h[i] == bf16_from_float(m.weights.params[i]));
    for (size_t i = 0; i < m.weights.n_params; i++) m.weights.params[i] *= 0.5f;
    assert_int_equal(model_set_precision(&m, PRECISION_FP32, &err), 0);
    assert_null(m.weights.bf16);
    int32_t tok[16], tgt[16];
    for (int i = 0; i < 16; i++) tok[i] = (i * 3 + 1) % 11, tgt[i] = (i * 2 + 5) % 11;
    forward_backward(&m, tok, tgt);
    forward_backward(&ref, tok, tgt);
    assert_memory_equal(m.weights.grads, ref.weights.grads, m.weights.n_params * sizeof(float));
    model_free(&m), model_free(&ref);
}

/* bin/train's memory check counts what model_set_precision allocates: the
 * shadow (2 bytes per weight), two operand slots (2 bytes per entry) and the
 * mixers' packed operands (4 bytes per word: attention's only), for both
 * mixers and a batch other than the model's own. */
static void test_memory_count(void **state) {
    (void)state;
    skip_without_bf16();
    for (int k = 0; k < 2; k++) {
        Model m;
        tiny_test_model_ex(&m, k ? "grassmann" : "attention,grassmann", POS_LEARNED, 0.0f, NORM_PRE, NULL);
        Error err;
        assert_int_equal(model_alloc_acts(&m, 3, 8, &err), 0);
        assert_int_equal(model_set_precision(&m, PRECISION_BF16, &err), 0);
        size_t allocated = (m.weights.n_params + 2 * m.weights.bf16->scratch_len) * sizeof(uint16_t) +
                           m.weights.bf16->packed_len * sizeof(uint32_t);
        assert_true(allocated > m.weights.n_params * sizeof(uint16_t));
        assert_true(k ? m.weights.bf16->packed_len == 0 && !m.weights.bf16->packed : m.weights.bf16->packed_len > 0 && m.weights.bf16->packed);
        assert_int_equal(model_bf16_bytes(&m.cfg, 3, 8), allocated);
        assert_true(model_bf16_bytes(&m.cfg, 6, 8) > allocated); /* the scratch grows with the batch */
        model_free(&m);
    }
}

/* bf16 results do not depend on the thread count: the same tiles (fixed by
 * the parallel width) run on 1 or 2 threads, rows rounded element-wise. */
static void test_thread_invariance(void **state) {
    (void)state;
    skip_without_bf16();
    threads_set_width(2);
    float *grads[2];
    float loss[2];
    for (int run = 0; run < 2; run++) {
        omp_set_num_threads(run + 1);
        Model m;
        tiny_test_model_ex(&m, "attention,grassmann", POS_LEARNED, 0.0f, NORM_PRE, NULL);
        Error err;
        assert_int_equal(model_alloc_acts(&m, 4, 8, &err), 0); /* several row blocks */
        assert_int_equal(model_set_precision(&m, PRECISION_BF16, &err), 0);
        int32_t tok[32], tgt[32];
        for (int i = 0; i < 32; i++) tok[i] = (i * 7 + 3) % 11, tgt[i] = (i * 5 + 1) % 11;
        model_zero_grads(&m);
        model_forward(&m, tok, tgt, 4, 8, NULL);
        model_backward(&m, 1.0f, NULL);
        loss[run] = m.run.loss;
        grads[run] = malloc(m.weights.n_params * sizeof(float));
        memcpy(grads[run], m.weights.grads, m.weights.n_params * sizeof(float));
        if (run == 1) assert_memory_equal(grads[0], grads[1], m.weights.n_params * sizeof(float));
        model_free(&m);
    }
    assert_true(loss[0] == loss[1]);
    free(grads[0]), free(grads[1]);
    omp_set_num_threads(2);
    threads_set_width(0);
}

/* A failed bf16 product is reported, never fatal: the first failure is kept,
 * train_step then returns -1 with its message before the weights change and
 * validation likewise, the model stays usable (fp32 asks nothing), and
 * setting the precision again starts clean. */
static void test_failure_reported(void **state) {
    (void)state;
    skip_without_bf16();
    Model m;
    tiny_test_model_ex(&m, "attention,grassmann", POS_LEARNED, 0.0f, NORM_PRE, NULL);
    OptimizerState os;
    test_optim_state(&os, optimizer_at(0), &m);
    Error err;
    assert_int_equal(model_set_precision(&m, PRECISION_BF16, &err), 0);
    uint16_t tokens[300];
    for (size_t i = 0; i < 300; i++) tokens[i] = (uint16_t)((i * 7 + 3) % 11);
    TokenFile tf = {.data = tokens, .width = 2, .n = 300, .vocab_size = 11};
    TrainHyper h = {.batch_size = 2, .grad_accum = 1, .max_iters = 10, .warmup_iters = 2, .eval_iters = 2,
                    .lr = 1e-3f, .min_lr = 1e-4f, .grad_clip = 1.0f, .adam = {0.9f, 0.99f, 1e-8f, 0.1f}, .seed = 3};
    int32_t in[16], tg[16];
    Rng rng;
    rng_seed(&rng, 4);
    StepStats st;
    ValLoss val;
    assert_int_equal(train_step(&m, &os, &tf, &rng, &h, NULL, NULL, 0, 0.0, in, tg, &st, &err), 0);
    assert_int_equal(estimate_loss(&m, &tf, &h, NULL, NULL, in, tg, &val, &err), 0);
    assert_true(isfinite(val.loss));
    assert_int_equal(model_bf16_failed(&m, &err), 0);

    Error first, second;
    err_set(&first, "oneDNN: no bf16 matmul for 7x5x3 (first)");
    err_set(&second, "second");
    matmul_bf16_record(m.weights.bf16, 0, &second); /* success: nothing recorded */
    assert_int_equal(model_bf16_failed(&m, &err), 0);
    matmul_bf16_record(m.weights.bf16, -1, &first);
    matmul_bf16_record(m.weights.bf16, -1, &second);
    float *before = malloc(m.weights.n_params * sizeof *before);
    memcpy(before, m.weights.params, m.weights.n_params * sizeof *before);
    memset(err.msg, 0, sizeof err.msg);
    assert_int_equal(train_step(&m, &os, &tf, &rng, &h, NULL, NULL, 1, 0.0, in, tg, &st, &err), -1);
    assert_string_equal(err.msg, "a bf16 matrix product failed: oneDNN: no bf16 matmul for 7x5x3 (first)");
    assert_memory_equal(m.weights.params, before, m.weights.n_params * sizeof *before);
    memset(err.msg, 0, sizeof err.msg);
    assert_int_equal(estimate_loss(&m, &tf, &h, NULL, NULL, in, tg, &val, &err), -1);
    assert_non_null(strstr(err.msg, "(first)"));

    assert_int_equal(model_set_precision(&m, PRECISION_FP32, &err), 0); /* fp32: nothing to ask */
    assert_int_equal(train_step(&m, &os, &tf, &rng, &h, NULL, NULL, 1, 0.0, in, tg, &st, &err), 0);
    assert_int_equal(model_set_precision(&m, PRECISION_BF16, &err), 0); /* a clean record */
    assert_int_equal(model_bf16_failed(&m, &err), 0);
    assert_int_equal(train_step(&m, &os, &tf, &rng, &h, NULL, NULL, 2, 0.0, in, tg, &st, &err), 0);
    free(before);
    optim_state_free(&os);
    model_free(&m);
}

int main(void) {
    if (!bf16_supported()) printf("test_bf16_train: skipped: %s, which bf16 training requires\n", bf16_unavailable());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_products),        cmocka_unit_test(test_mlp),
        cmocka_unit_test(test_attention), cmocka_unit_test(test_attention_by_tiles),       cmocka_unit_test(test_grassmann),
        cmocka_unit_test(test_model_attention), cmocka_unit_test(test_model_hybrid_post),
        cmocka_unit_test(test_shadow),          cmocka_unit_test(test_thread_invariance),
        cmocka_unit_test(test_memory_count),    cmocka_unit_test(test_failure_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
