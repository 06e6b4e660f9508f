/* Unit tests: optimizer and schedule, tokenizer, corpus splits,
 * checkpoints, evaluation, learning, the Plücker relations and incremental
 * decoding. */
#include "test_model_util.h"

#include <sys/stat.h>
#include <unistd.h>

#include "lm/batch.h"
#include "lm/corpus.h"
#include "lm/tokens.h"
#include "lm/json.h"
#include "mixers/attention.h"
#include "mixers/grassmann.h"
#include "lm/checkpoint.h"
#include "lm/config.h"
#include "eval/evaluate.h"
#include "eval/generate.h"
#include "lm/mixer.h"
#include "nn/loss.h"
#include "lm/model.h"
#include "lm/optim.h"
#include "lm/ds.h"
#include "lm/files.h"
#include "lm/byte.h"
#include "tok/char.h"
#include "lm/tokenizer.h"
#include "train/eta.h"

static void small_config(ModelConfig *cfg, const char *mixers) {
    Error err;
    config_defaults(cfg);
    cfg->vocab_size = 13, cfg->block_size = 20, cfg->n_layer = 2, cfg->n_head = 2, cfg->n_embd = 16;
    assert_int_equal(config_set_option(cfg, "grassmann-rank", "6", &err), 0);
    assert_int_equal(config_set_option(cfg, "grassmann-windows", "1,2,4,8", &err), 0);
    assert_int_equal(config_set_mixers(cfg, mixers, &err), 0);
}

static void make_model_from(Model *m, const ModelConfig *cfg, size_t B, size_t T) {
    Error err;
    assert_int_equal(model_init(m, cfg, 42, &err), 0);
    assert_int_equal(model_alloc_acts(m, B, T, &err), 0);
    /* Larger weights than the init so that mixing is far from negligible. */
    Rng r;
    rng_seed(&r, 9);
    for (size_t i = 0; i < m->weights.n_tensors; i++) {
        const ParamTensor *t = &m->weights.tensors[i];
        if (t->init == INIT_NORMAL || t->init == INIT_RESIDUAL)
            for (size_t j = 0; j < t->rows * (t->cols ? t->cols : 1); j++) m->weights.params[t->offset + j] = 0.2f * rng_normal(&r);
    }
}

static void make_model(Model *m, const char *mixers, size_t B, size_t T) {
    ModelConfig cfg;
    small_config(&cfg, mixers);
    make_model_from(m, &cfg, B, T);
}

/* ---- incremental decoding equals the full forward ----------------------------- */

/* The relative gap of logits (V) to ref's, folded into *worst. */
static void fold_gap(double *worst, const float *logits, const float *ref, size_t V) {
    for (size_t v = 0; v < V; v++) {
        double d = fabs((double)logits[v] - ref[v]) / (1.0 + fabs(ref[v]));
        *worst = d > *worst ? d : *worst;
    }
}

/* The largest difference, relative to 1 + |logit|, between cfg's model's
 * incremental logits and its full forward's over 20 positions, stepping
 * from position 0 and after a prefill (model_prefill) of the first 1, 10
 * and 20 positions; *biggest: the largest |logit| of the steps. */
static double model_step_gap(Model *mp, double *biggest);

static double step_forward_gap(const ModelConfig *cfg, double *biggest) {
    Model m;
    make_model_from(&m, cfg, 1, 20);
    double worst = model_step_gap(&m, biggest);
    model_free(&m);
    return worst;
}

/* step_forward_gap of a model made already (of vocabulary 13, block 20). */
static double model_step_gap(Model *mp, double *biggest) {
    size_t T = 20, V = 13;
    Model m = *mp;
    Error err;
    int32_t tok[20];
    for (size_t i = 0; i < T; i++) tok[i] = (int32_t)((i * 7 + 1) % V);
    model_forward(&m, tok, NULL, 1, T, NULL);
    ModelState st;
    assert_int_equal(model_state_init(&m, &st, &err), 0);
    float logits[13];
    double worst = 0.0;
    *biggest = 0.0;
    for (size_t t = 0; t < T; t++) {
        model_step(&m, &st, tok[t], logits);
        fold_gap(&worst, logits, m.run.logits + t * V, V);
        for (size_t v = 0; v < V; v++) *biggest = fabs(logits[v]) > *biggest ? fabs(logits[v]) : *biggest;
    }
    float ref[20 * 13];
    memcpy(ref, m.run.logits, sizeof ref);
    const size_t prefills[] = {1, 10, 20};
    for (size_t i = 0; i < 3; i++) {
        size_t k = prefills[i];
        model_state_reset(&st);
        assert_int_equal(model_prefill(&m, &st, 0, 1, tok, k, logits, &err), 0);
        assert_int_equal(st.t, k);
        fold_gap(&worst, logits, ref + (k - 1) * V, V);
        for (size_t t = k; t < T; t++) {
            model_step(&m, &st, tok[t], logits);
            fold_gap(&worst, logits, ref + t * V, V);
        }
    }
    model_state_free(&st);
    *mp = m;
    return worst;
}

/* ---- the inference forward equals the training forward -------------------- */

/* cfg's model run forward over 3 x 20 tokens, first over model_alloc_acts's
 * buffers and then over model_alloc_infer's shared ones: the same logits,
 * losses and loss, bit for bit, with every target scored and with a loss
 * mask (the head at some rows alone); the shared arena smaller. */
static void check_infer_forward(const ModelConfig *cfg, const char *what) {
    enum { B = 3, T = 20 };
    Model m;
    Error err;
    make_model_from(&m, cfg, B, T);
    size_t V = cfg->vocab_size, train_floats = m.run.n_acts;
    int32_t in[B * T], tg[B * T];
    for (size_t i = 0; i < B * T; i++) in[i] = (int32_t)((i * 7 + 3) % V), tg[i] = (int32_t)((i * 5 + 1) % V);
    static float logits[B * T * 13], losses[B * T];
    for (int masked = 0; masked < 2; masked++) {
        if (masked)
            for (size_t i = 0; i < B * T; i += 3) tg[i] = LOSS_IGNORE;
        assert_int_equal(model_alloc_acts(&m, B, T, &err), 0);
        model_forward(&m, in, tg, B, T, NULL);
        size_t rows = m.run.head_n;
        float loss = m.run.loss;
        memcpy(logits, m.run.logits, rows * V * sizeof(float));
        memcpy(losses, m.run.losses, sizeof losses);
        assert_int_equal(model_alloc_infer(&m, B, T, &err), 0);
        if (m.run.n_acts >= train_floats) fail_msg("%s: the inference arena (%zu floats) is not smaller", what, m.run.n_acts);
        model_forward(&m, in, tg, B, T, NULL);
        if (m.run.head_n != rows || memcmp(&m.run.loss, &loss, sizeof loss) || memcmp(m.run.logits, logits, rows * V * sizeof(float)) ||
            memcmp(m.run.losses, losses, sizeof losses))
            fail_msg("%s%s: the inference forward's logits or losses differ from the training forward's", what,
                     masked ? " (masked)" : "");
    }
    model_free(&m);
}

/* Every registered mixer alone and after attention, pre- and post-norm. */
static void test_infer_forward(void **s) {
    (void)s;
    for (size_t i = 0; i < mixer_count(); i++)
        for (int hybrid = 0; hybrid < 2; hybrid++)
            for (int post = 0; post < 2; post++) {
                char mixers[64];
                snprintf(mixers, sizeof mixers, "%s%s", hybrid ? "attention," : "", mixer_at(i)->name);
                ModelConfig cfg;
                small_config(&cfg, mixers);
                cfg.n_layer = 3;
                cfg.norm = post ? NORM_POST : NORM_PRE;
                char what[96];
                snprintf(what, sizeof what, "%s, %s-norm", mixers, post ? "post" : "pre");
                check_infer_forward(&cfg, what);
            }
}

/* windows: NULL for small_config's, or a --grassmann-windows text. */
static void check_step_matches_forward_ex(const char *mixers, PosKind pos, NormKind norm, const char *windows) {
    ModelConfig cfg;
    Error err;
    small_config(&cfg, mixers);
    cfg.pos = pos, cfg.norm = norm;
    if (windows) assert_int_equal(config_set_option(&cfg, "grassmann-windows", windows, &err), 0);
    double biggest, worst = step_forward_gap(&cfg, &biggest);
    if (worst > 1e-5)
        fail_msg("%s, %s-norm: incremental logits differ from the full forward by %.3e", mixers, norm_name(norm), worst);
}

static void check_step_matches_forward(const char *mixers, PosKind pos) {
    check_step_matches_forward_ex(mixers, pos, NORM_PRE, NULL);
}

static void test_step_attention(void **s) { (void)s; check_step_matches_forward("attention", POS_LEARNED); }
static void test_step_grassmann(void **s) { (void)s; check_step_matches_forward("grassmann", POS_LEARNED); }
static void test_step_hybrid(void **s) { (void)s; check_step_matches_forward("attention,grassmann", POS_SINUSOIDAL); }
static void test_step_rope(void **s) { (void)s; check_step_matches_forward("attention", POS_ROPE); }
static void test_step_rope_hybrid(void **s) { (void)s; check_step_matches_forward("grassmann,attention", POS_ROPE); }
static void test_step_gla(void **s) { (void)s; check_step_matches_forward("gla,attention", POS_ROPE); }
static void test_step_gla_alone(void **s) { (void)s; check_step_matches_forward("gla", POS_LEARNED); }

/* model_step_batch: three sequences (different tokens) stepped together, from
 * one prefill into all, each the bits a one-sequence state gives it,
 * at every position (the mixers' step_batch and the batched MLP and head). */
static void check_step_batch(const char *mixers, const char *window, WeightsFormat f) {
    size_t T = 20, V = 13, N = 3;
    ModelConfig cfg;
    Error err;
    small_config(&cfg, mixers);
    if (window) assert_int_equal(config_set_option(&cfg, "attn-window", window, &err), 0);
    Model m;
    make_model_from(&m, &cfg, 1, T);
    assert_int_equal(model_set_weights(&m, f, &err), 0);
    ModelState batch, one[3];
    assert_int_equal(model_state_init_batch(&m, &batch, N, &err), 0);
    int32_t prompt[4] = {1, 5, 2, 7}, tok[3];
    float logits[3 * 13], alone[13];
    assert_int_equal(model_prefill(&m, &batch, 0, N, prompt, 4, logits, &err), 0);
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(model_state_init(&m, &one[i], &err), 0);
        assert_int_equal(model_prefill(&m, &one[i], 0, 1, prompt, 4, alone, &err), 0);
    }
    for (size_t t = 4; t < T; t++) {
        for (size_t i = 0; i < N; i++) tok[i] = (int32_t)((t * 5 + i * 3 + 1) % V);
        model_step_batch(&m, &batch, tok, logits);
        for (size_t i = 0; i < N; i++) {
            model_step(&m, &one[i], tok[i], alone);
            if (memcmp(alone, logits + i * V, sizeof alone))
                fail_msg("%s %s: sequence %zu at position %zu differs from its step alone", mixers,
                         weights_format_name(f), i, t);
        }
    }
    for (size_t i = 0; i < N; i++) model_state_free(&one[i]);
    model_state_free(&batch);
    model_free(&m);
}

static void test_step_batch(void **s) {
    (void)s;
    check_step_batch("attention,grassmann", NULL, WEIGHTS_FP32);
    check_step_batch("gla,attention", "3", WEIGHTS_INT8);
    check_step_batch("grassmann,gla", NULL, WEIGHTS_BF16);
}

/* --weights bf16 and int8 (model_set_weights): the bf16 decode step, reading
 * the converted copies on our kernels, gives the logits of the forward over
 * the round-tripped weights (what bin/eval --weights scores) to 1e-5
 * relative, and those are within the stated bound of the fp32 model's,
 * relative to 1 + |logit|; the int8 step, which quantises each product's
 * input as well (blas/gemv_q8_kernel.h), is itself within its bound of the
 * fp32 model's (the bounds, about twice what the test model measures, are at
 * test_weights_formats: bf16 rounds each weight to 8 bits of mantissa, int8
 * to within max|w| / 254 of its group of 32, coarser for the small ones),
 * on a model whose weights are 10x the init's and so whose logits are large. */
static void check_weights_format(const char *mixers, WeightsFormat f, double bound) {
    size_t T = 20, V = 13;
    ModelConfig cfg;
    Error err;
    small_config(&cfg, mixers);
    Model m;
    make_model_from(&m, &cfg, 1, T);
    int32_t tok[20];
    for (size_t i = 0; i < T; i++) tok[i] = (int32_t)((i * 7 + 1) % V);
    float ref32[20 * 13], refq[20 * 13], logits[13];
    model_forward(&m, tok, NULL, 1, T, NULL);
    memcpy(ref32, m.run.logits, sizeof ref32);
    assert_int_equal(model_set_weights(&m, f, &err), 0);
    assert_true(m.weights.decode.n > 0);
    model_forward(&m, tok, NULL, 1, T, NULL);
    memcpy(refq, m.run.logits, sizeof refq);
    ModelState st;
    assert_int_equal(model_state_init(&m, &st, &err), 0);
    double step_gap = 0.0, cost = 0.0;
    for (size_t t = 0; t < T; t++) {
        model_step(&m, &st, tok[t], logits);
        fold_gap(&step_gap, logits, refq + t * V, V);
        fold_gap(&cost, f == WEIGHTS_INT8 ? logits : refq + t * V, ref32 + t * V, V);
    }
    if (getenv("VERBOSE")) printf("  %s %s: %.3e from fp32's logits (bound %.0e)\n", mixers, weights_format_name(f), cost, bound);
    if (f != WEIGHTS_INT8 && step_gap > 1e-5)
        fail_msg("%s %s: the step's logits differ from the forward's by %.3e", mixers, weights_format_name(f), step_gap);
    if (cost > bound) fail_msg("%s %s: logits %.3e from fp32's, above the bound %.0e", mixers, weights_format_name(f), cost, bound);
    if (cost == 0.0) fail_msg("%s %s: the weights did not change", mixers, weights_format_name(f));
    model_state_free(&st);
    model_free(&m);
}

static void test_weights_formats(void **s) {
    (void)s;
    check_weights_format("attention,grassmann", WEIGHTS_BF16, 1.5e-2); /* measured 7.0e-3 */
    /* int8: the weights alone (the forward over them) measured 2.2e-2 and
     * 9.3e-2; with the activations quantised too, as the step does: */
    check_weights_format("attention,grassmann", WEIGHTS_INT8, 0.1);    /* 4.2e-2 */
    check_weights_format("gla", WEIGHTS_BF16, 4e-2);                   /* 1.9e-2 */
    check_weights_format("gla", WEIGHTS_INT8, 0.25);                   /* 0.12: the recurrence compounds it */
}

/* A sliding window of 3 of 20 positions: the sampling caches become a ring
 * of 3 slots and still give forward's logits; the config writes
 * "attn_window" only when set, and reads it back. */
static void test_attention_window_config(void **s) {
    (void)s;
    ModelConfig cfg, back;
    Error err;
    small_config(&cfg, "attention,gla");
    char *json = config_to_json(&cfg);
    assert_null(strstr(json, "attn_window")); /* a config as it was before the option */
    free(json);
    assert_int_equal(config_set_option(&cfg, "attn-window", "3", &err), 0);
    double biggest, worst = step_forward_gap(&cfg, &biggest);
    if (worst > 1e-5) fail_msg("window 3: incremental logits differ from the full forward by %.3e", worst);
    json = config_to_json(&cfg);
    assert_non_null(strstr(json, "\"attn_window\":3"));
    assert_int_equal(config_from_json(&back, json, &err), 0);
    free(json);
    MixerSpec spec = model_mixer_spec(&back, 0);
    assert_int_equal(attention_window(&spec), 3);
}
/* ---- per-layer window schedules and the norm, through the config's text and JSON ---- */

static void test_window_schedule(void **s) {
    (void)s;
    ModelConfig cfg, back;
    Error err;
    char buf[256];
    config_defaults(&cfg);
    cfg.vocab_size = 10, cfg.n_layer = 4, cfg.norm = NORM_POST;
    assert_int_equal(config_set_mixers(&cfg, "grassmann", &err), 0);
    assert_int_equal(config_set_option(&cfg, "grassmann-windows", "1;1;2,4;2", &err), 0);
    const GrassmannSettings *g = config_mixer_settings_of(&cfg, &grassmann_mixer);
    assert_int_equal(g->n_windows, 3);
    assert_string_equal(config_option_text(&cfg, "grassmann-windows", buf, sizeof buf), "1;1;2,4;2");
    size_t windows[GRASSMANN_MAX_WINDOWS];
    assert_int_equal(grassmann_layer_windows(g, 2, windows), 2);
    assert_int_equal(windows[0], 2);
    assert_int_equal(windows[1], 4);
    char *json = config_to_json(&cfg);
    assert_non_null(strstr(json, "\"norm\":\"post\""));
    assert_non_null(strstr(json, "\"grassmann_windows\":[[1],[1],[2,4],[2]]"));
    assert_int_equal(config_from_json(&back, json, &err), 0);
    free(json);
    assert_int_equal(back.norm, NORM_POST);
    assert_string_equal(config_option_text(&back, "grassmann-windows", buf, sizeof buf), "1;1;2,4;2");
    /* The same list for every layer is that one list. */
    assert_int_equal(config_set_option(&cfg, "grassmann-windows", "1,2;1,2;1,2;1,2", &err), 0);
    assert_string_equal(config_option_text(&cfg, "grassmann-windows", buf, sizeof buf), "1,2");
    json = config_to_json(&cfg);
    assert_non_null(strstr(json, "\"grassmann_windows\":[1,2]"));
    free(json);
    /* A schedule must have one list per layer, each non-empty, no offset twice. */
    assert_int_not_equal(config_set_option(&cfg, "grassmann-windows", "1;2;4", &err), 0);
    assert_non_null(strstr(err.msg, "has 3 lists but n_layer is 4"));
    assert_int_not_equal(config_set_option(&cfg, "grassmann-windows", "1;2;4;8;16", &err), 0);
    assert_non_null(strstr(err.msg, "more than n_layer (4)"));
    assert_int_not_equal(config_set_option(&cfg, "grassmann-windows", "1;;2;4", &err), 0);
    assert_int_not_equal(config_set_option(&cfg, "grassmann-windows", "1;2;2,2;4", &err), 0);
    assert_non_null(strstr(err.msg, "twice"));
    /* The same rule for one list given to every layer. */
    assert_int_not_equal(config_set_option(&cfg, "grassmann-windows", "1,1", &err), 0);
    assert_non_null(strstr(err.msg, "lists 1 twice"));
    assert_int_not_equal(config_set_option(&cfg, "grassmann-windows", "2,4,2", &err), 0);
    assert_non_null(strstr(err.msg, "lists 2 twice"));
    /* A checkpoint from before post-norm has no "norm": pre. */
    assert_int_equal(config_from_json(&back,
                                      "{\"vocab_size\":10,\"block_size\":64,\"n_layer\":1,\"n_head\":4,\"n_embd\":128,"
                                      "\"mixers\":[\"attention\"],\"pos\":\"learned\",\"grassmann_rank\":32,"
                                      "\"grassmann_windows\":[1,2],\"dropout\":0}",
                                      &err),
                     0);
    assert_int_equal(back.norm, NORM_PRE);
    assert_int_not_equal(config_from_json(&back,
                                          "{\"vocab_size\":10,\"block_size\":64,\"n_layer\":1,\"n_head\":4,\"n_embd\":128,"
                                          "\"mixers\":[\"attention\"],\"pos\":\"learned\",\"norm\":\"middle\","
                                          "\"grassmann_rank\":32,\"grassmann_windows\":[1,2],\"dropout\":0}",
                                          &err),
                         0);
    assert_non_null(strstr(err.msg, "'norm'"));
}

/* A mixer's settings through its option rows: set and read back by
 * bin/train's name, written and read by their JSON keys in the config's
 * order, and a key that a config lacks (written before the option existed)
 * left at the mixer's default. */
static void test_mixer_options(void **s) {
    (void)s;
    ModelConfig cfg, back;
    Error err;
    char buf[64];
    config_defaults(&cfg);
    cfg.vocab_size = 10;
    assert_string_equal(config_option_text(&cfg, "grassmann-rank", buf, sizeof buf), "32");
    assert_string_equal(config_option_text(&cfg, "grassmann-windows", buf, sizeof buf), "1,2,4,8,12,16");
    assert_int_equal(config_set_option(&cfg, "grassmann-rank", "7", &err), 0);
    assert_int_equal(config_set_option(&cfg, "grassmann-rank", "2000", &err), -1); /* past the row's bound */
    assert_int_equal(config_set_option(&cfg, "grassmann-windows", "1,x", &err), -1);
    assert_int_equal(config_set_option(&cfg, "no-such-option", "1", &err), -1);
    const Mixer *owner;
    assert_non_null(config_find_option("grassmann-windows", &owner));
    assert_ptr_equal(owner, &grassmann_mixer);
    char *json = config_to_json(&cfg);
    assert_non_null(strstr(json, "\"norm\":\"pre\",\"grassmann_rank\":7,\"grassmann_windows\":[1,2,4,8,12,16],"
                                 "\"dropout\":0"));
    assert_int_equal(config_from_json(&back, json, &err), 0);
    free(json);
    assert_string_equal(config_option_text(&back, "grassmann-rank", buf, sizeof buf), "7");
    assert_ptr_equal(back.mixers[0], mixer_find("attention"));
    assert_int_equal(config_from_json(&back,
                                      "{\"vocab_size\":10,\"block_size\":64,\"n_layer\":1,\"n_head\":4,\"n_embd\":128,"
                                      "\"mixers\":[\"grassmann\"],\"pos\":\"learned\",\"dropout\":0}",
                                      &err),
                     0);
    assert_string_equal(config_option_text(&back, "grassmann-rank", buf, sizeof buf), "32");
    assert_string_equal(config_option_text(&back, "grassmann-windows", buf, sizeof buf), "1,2,4,8,12,16");
    assert_int_not_equal(config_from_json(&back,
                                          "{\"vocab_size\":10,\"block_size\":64,\"n_layer\":1,\"n_head\":4,"
                                          "\"n_embd\":128,\"mixers\":[\"mamba\"],\"pos\":\"learned\",\"dropout\":0}",
                                          &err),
                         0);
}

/* The recipe's switches (all but zero_init, whose zeros would leave little
 * to compare), in the incremental step as in the forward pass. */
static void check_step_recipe(const char *mixers, PosKind pos, NormKind norm) {
    ModelConfig cfg;
    small_config(&cfg, mixers);
    cfg.pos = pos, cfg.norm = norm, cfg.norm_type = NORM_TYPE_RMSNORM, cfg.mlp_act = MLP_ACT_RELU2;
    cfg.qk_norm = 1, cfg.untied_head = 1, cfg.logit_softcap = 2.0f;
    double biggest, worst = step_forward_gap(&cfg, &biggest);
    if (worst > 1e-5) fail_msg("%s with the recipe: incremental logits differ from the forward by %.3e", mixers, worst);
    assert_true(biggest <= 2.0 && biggest > 0.1); /* capped, and not all zero */
}

static void test_step_recipe(void **s) {
    (void)s;
    check_step_recipe("attention", POS_ROPE, NORM_PRE);
    check_step_recipe("grassmann,attention", POS_LEARNED, NORM_POST);
}

/* The recipe's switches in the config JSON (only when on: a GPT-2 config's
 * JSON has none of them, a config without them reads as GPT-2's), bad values
 * refused, and what they do to the layout and the initial weights. */
static void test_recipe_config(void **s) {
    (void)s;
    ModelConfig cfg, back;
    Error err;
    small_config(&cfg, "attention,grassmann");
    char *json = config_to_json(&cfg);
    const char *keys[] = {"norm_type", "mlp_act", "qk_norm", "untied_head", "zero_init", "logit_softcap"};
    for (size_t i = 0; i < 6; i++) assert_null(strstr(json, keys[i]));
    assert_int_equal(config_from_json(&back, json, &err), 0);
    free(json);
    assert_false(config_has_recipe_switch(&back));
    cfg.norm_type = NORM_TYPE_RMSNORM, cfg.mlp_act = MLP_ACT_RELU2, cfg.qk_norm = 1, cfg.untied_head = 1;
    cfg.zero_init = 1, cfg.logit_softcap = 15.0f;
    json = config_to_json(&cfg);
    assert_non_null(strstr(json, "\"norm_type\":\"rmsnorm\",\"mlp_act\":\"relu2\",\"qk_norm\":true,"
                                 "\"untied_head\":true,\"zero_init\":true,\"logit_softcap\":15}"));
    assert_int_equal(config_from_json(&back, json, &err), 0);
    free(json);
    assert_int_equal(back.norm_type, NORM_TYPE_RMSNORM);
    assert_int_equal(back.mlp_act, MLP_ACT_RELU2);
    assert_true(back.qk_norm && back.untied_head && back.zero_init && back.logit_softcap == 15.0f);
    char buf[160];
    assert_string_equal(config_recipe_list(&back, buf, sizeof buf),
                        "rmsnorm, relu2, qk-norm, untied head, zero-init, softcap 15");
    const char *head = "{\"vocab_size\":10,\"block_size\":64,\"n_layer\":1,\"n_head\":4,\"n_embd\":128,"
                       "\"mixers\":[\"attention\"],\"pos\":\"learned\",\"grassmann_rank\":32,"
                       "\"grassmann_windows\":[1,2],\"dropout\":0";
    const char *bad[][2] = {{",\"norm_type\":\"batchnorm\"}", "'norm_type'"}, {",\"mlp_act\":\"swish\"}", "'mlp_act'"},
                            {",\"qk_norm\":1}", "'qk_norm'"}, {",\"untied_head\":\"yes\"}", "'untied_head'"},
                            {",\"logit_softcap\":\"15\"}", "'logit_softcap'"}, {",\"logit_softcap\":-1}", "logit_softcap"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "%s%s", head, bad[i][0]);
        assert_int_not_equal(config_from_json(&back, text, &err), 0);
        if (!strstr(err.msg, bad[i][1])) fail_msg("'%s': %s", bad[i][0], err.msg);
    }
    /* Layout: RMSNorm drops every norm's bias, the untied head adds V x C. */
    ModelConfig gpt2;
    small_config(&gpt2, "attention,grassmann");
    size_t C = gpt2.n_embd, n0 = model_count_params(&gpt2);
    cfg.zero_init = 0;
    assert_int_equal(model_count_params(&cfg), n0 - 5 * C + gpt2.vocab_size * C);
    /* zero_init: the branches' last maps and the head are zero, nothing else that was drawn. */
    cfg.zero_init = 1;
    Model m;
    assert_int_equal(model_init(&m, &cfg, 3, &err), 0);
    for (size_t i = 0; i < m.weights.n_tensors; i++) {
        const ParamTensor *t = &m.weights.tensors[i];
        int zero = 1;
        for (size_t j = 0; j < t->rows * (t->cols ? t->cols : 1); j++) zero &= m.weights.params[t->offset + j] == 0.0f;
        int output = strstr(t->name, "attn.proj.weight") || strstr(t->name, "mlp.proj.weight") ||
                     !strcmp(t->name, "lm_head.weight");
        /* The Grassmann layer has no output projection; its gain keeps its one. */
        if (strstr(t->name, "grassmann.ln.weight"))
            for (size_t j = 0; j < t->rows; j++)
                if (m.weights.params[t->offset + j] != 1.0f) fail_msg("zero_init changed %s", t->name);
        int drawn = t->cols && !output;
        if (output && !zero) fail_msg("zero_init left %s non-zero", t->name);
        if (drawn && zero) fail_msg("zero_init zeroed %s", t->name);
        assert_null(strstr(t->name, "ln1.bias"));
        assert_null(strstr(t->name, "ln_f.bias"));
    }
    assert_non_null(model_find_tensor(&m, "lm_head.weight"));
    assert_int_equal(m.weights.head, model_find_tensor(&m, "lm_head.weight")->offset);
    model_free(&m);
}

static void test_step_post_hybrid(void **s) {
    (void)s;
    check_step_matches_forward_ex("grassmann,attention", POS_LEARNED, NORM_POST, NULL);
}
static void test_step_post_schedule(void **s) {
    (void)s;
    check_step_matches_forward_ex("grassmann,grassmann", POS_ROPE, NORM_POST, "1,4;2");
}

/* ---- Plücker relations ------------------------------------------------------- */

static void test_plucker_relations(void **s) {
    (void)s;
    size_t r = 7, P = 21;
    float idx[7][7];
    for (int trial = 0; trial < 20; trial++) {
        float *u = rand_tensor(r, 1.0f, 100 + trial), *w = rand_tensor(r, 1.0f, 200 + trial), q[21] = {0};
        /* eps = huge => q = p / eps exactly, i.e. the un-normalised p scaled. */
        grassmann_pair_forward(q, u, w, 1.0f, 1e30f, r);
        size_t k = 0;
        for (size_t i = 0; i < r; i++)
            for (size_t j = i + 1; j < r; j++) idx[i][j] = q[k++] * 1e30f;
        assert_int_equal(k, P);
        for (size_t i = 0; i < r; i++)
            for (size_t j = i + 1; j < r; j++)
                for (size_t a = j + 1; a < r; a++)
                    for (size_t b = a + 1; b < r; b++) {
                        double rel = (double)idx[i][j] * idx[a][b] - (double)idx[i][a] * idx[j][b] + (double)idx[i][b] * idx[j][a];
                        double scale = fabs((double)idx[i][j] * idx[a][b]) + fabs((double)idx[i][a] * idx[j][b]) + 1e-6;
                        if (fabs(rel) > 1e-5 * scale) fail_msg("Plücker relation off by %.3e", rel);
                    }
        /* The normalised coordinates have unit norm. */
        float qn[21] = {0};
        grassmann_pair_forward(qn, u, w, 1.0f, GRASSMANN_EPS, r);
        double n2 = 0;
        for (size_t i = 0; i < P; i++) n2 += (double)qn[i] * qn[i];
        assert_float_equal(n2, 1.0, 1e-5);
        free(u), free(w);
    }
}

/* A muted offset adds nothing to the mean but keeps its share of the count:
 * muting offset 2 of {1, 2, 4} gives, at each position, the mean over {1, 4}
 * alone scaled by (offsets of {1, 4} that fit) / (offsets of {1, 2, 4} that
 * fit); and muting nothing is the plain mix. */
static void test_grassmann_muted_offset(void **s) {
    (void)s;
    enum { T = 9, R = 5, P = 10 };
    static const size_t all[] = {1, 2, 4}, rest[] = {1, 4};
    float *z = rand_tensor(T * R, 1.0f, 31), muted[T * P], without[T * P], plain[T * P], none[T * P];
    grassmann_mix_forward(GRASSMANN_PAIR_WEDGE, muted, z, all, 3, 1u << 1, 1, T, R, GRASSMANN_EPS);
    grassmann_mix_forward(GRASSMANN_PAIR_WEDGE, without, z, rest, 2, 0, 1, T, R, GRASSMANN_EPS);
    grassmann_mix_forward(GRASSMANN_PAIR_WEDGE, plain, z, all, 3, 0, 1, T, R, GRASSMANN_EPS);
    grassmann_mix_forward(GRASSMANN_PAIR_WEDGE, none, z, all, 3, 1u << 3, 1, T, R, GRASSMANN_EPS); /* bit 3: no such offset */
    double changed = 0.0;
    for (size_t t = 0; t < T; t++) {
        double n_all = (t >= 1) + (t >= 2) + (t >= 4), n_rest = (t >= 1) + (t >= 4);
        for (size_t k = 0; k < P; k++) {
            double want = n_all ? without[t * P + k] * n_rest / n_all : 0.0;
            assert_float_equal(muted[t * P + k], want, 1e-6);
            assert_true(none[t * P + k] == plain[t * P + k]);
            changed += fabs((double)muted[t * P + k] - plain[t * P + k]);
        }
    }
    assert_true(changed > 1e-3);
    free(z);
}

/* model_ablate: a layer's own parts by the names its mixer gives (attention's
 * and gla's heads, Grassmann's offsets); a head left out is its columns of
 * the output projection zeroed; the loss moves, and the incremental step
 * leaves out what the forward does. */
static float loss_with_zero_columns(const ModelConfig *cfg, const char *tensor, size_t col0, size_t cols,
                                    const int32_t *in, const int32_t *tg) {
    Model m;
    make_model_from(&m, cfg, 1, 20);
    const ParamTensor *t = model_find_tensor(&m, tensor);
    assert_non_null(t);
    for (size_t r = 0; r < t->rows; r++) memset(m.weights.params + t->offset + r * t->cols + col0, 0, cols * sizeof(float));
    model_forward(&m, in, tg, 1, 20, NULL);
    float loss = m.run.loss;
    model_free(&m);
    return loss;
}

static void test_model_ablate(void **s) {
    (void)s;
    ModelConfig cfg;
    Error err;
    config_defaults(&cfg);
    small_config(&cfg, "attention");
    cfg.n_layer = 3;
    assert_int_equal(config_set_mixers(&cfg, "attention,grassmann,gla", &err), 0); /* windows 1, 2, 4, 8 */
    Model m;
    make_model_from(&m, &cfg, 1, 20);
    int32_t in[20], tg[20];
    for (int i = 0; i < 20; i++) in[i] = (i * 5) % 13, tg[i] = (i * 7 + 1) % 13;
    model_forward(&m, in, tg, 1, 20, NULL);
    float plain = m.run.loss;
    assert_int_equal(model_ablate(&m, 0, "offset1", &err), -1);
    assert_string_equal(err.msg, "layer 0 (attention) has no part 'offset1'; its parts: head0, head1");
    assert_int_equal(model_ablate(&m, 1, "offset3", &err), -1);
    assert_string_equal(err.msg, "layer 1 (grassmann) has no part 'offset3'; its parts: offset1, offset2, offset4, offset8");
    assert_int_equal(model_ablate(&m, 2, "head2", &err), -1);
    assert_string_equal(err.msg, "layer 2 (gla) has no part 'head2'; its parts: head0, head1");
    assert_int_equal(model_ablate(&m, 3, "head0", &err), -1); /* no layer 3 */
    model_forward(&m, in, tg, 1, 20, NULL);
    assert_true(m.run.loss == plain); /* the refused calls left nothing out */
    /* A head: its columns of the projection zeroed. */
    const char *proj[2] = {"h.0.attn.proj.weight", "h.2.gla.proj.weight"};
    for (size_t k = 0; k < 2; k++) {
        Model a;
        make_model_from(&a, &cfg, 1, 20);
        assert_int_equal(model_ablate(&a, 2 * k, "head1", &err), 0);
        model_forward(&a, in, tg, 1, 20, NULL);
        float want = loss_with_zero_columns(&cfg, proj[k], 8, 8, in, tg);
        if (!(a.run.loss != plain && fabsf(a.run.loss - want) <= 1e-6f * want))
            fail_msg("layer %zu without head1: loss %.7f, with its projection columns zero %.7f, plain %.7f", 2 * k,
                     a.run.loss, want, plain);
        model_free(&a);
    }
    assert_int_equal(model_ablate(&m, 1, "offset2", &err), 0);
    model_forward(&m, in, tg, 1, 20, NULL);
    assert_true(m.run.loss != plain);
    /* Every kind of part left out at once: the step leaves out what the forward does. */
    assert_int_equal(model_ablate(&m, 0, "head1", &err), 0);
    assert_int_equal(model_ablate(&m, 2, "head0", &err), 0);
    double biggest, gap = model_step_gap(&m, &biggest);
    if (gap > 1e-5) fail_msg("with parts left out, incremental logits differ from the forward by %.3e", gap);
    model_free(&m);
}

/* ---- optimizer and schedule -------------------------------------------------- */

static void test_adamw_step(void **s) {
    (void)s;
    /* Hand-computed: p=1, g=0.5, lr=0.1, wd=0.1, b1=0.9, b2=0.99, eps=1e-8.
     * step 1: m=0.05, v=0.0025, mhat=0.5, vhat=0.25 -> update 1.0
     *         p = 1*(1-0.01) - 0.1*1.0 = 0.89
     * step 2 with g=-0.25: m=0.045-0.025=0.02, v=0.002475+0.000625=0.0031,
     *         mhat=0.02/0.19=0.105263, vhat=0.0031/0.0199=0.155779 -> 0.266696
     *         p = 0.89*0.99 - 0.1*0.266696 = 0.854430 */
    AdamWConfig cfg = {0.9f, 0.99f, 1e-8f, 0.1f};
    float p = 1.0f, g = 0.5f, m = 0, v = 0;
    adamw_update(&p, &g, 1.0f, &m, &v, 1, 0.1f, 0.1f, &cfg, 1);
    assert_float_equal(p, 0.89f, 1e-6);
    g = -0.25f;
    adamw_update(&p, &g, 1.0f, &m, &v, 1, 0.1f, 0.1f, &cfg, 2);
    assert_float_equal(m, 0.02f, 1e-7);
    assert_float_equal(v, 0.0031f, 1e-8);
    assert_float_equal(p, 0.854430f, 2e-6);
    /* No decay: a vector (bias) with wd 0 moves only by the Adam step. */
    float q = 1.0f, gq = 0.5f, mq = 0, vq = 0;
    adamw_update(&q, &gq, 1.0f, &mq, &vq, 1, 0.1f, 0.0f, &cfg, 1);
    assert_float_equal(q, 0.9f, 1e-6);
}

static void test_lr_schedule(void **s) {
    (void)s;
    /* lr 1e-3, min 1e-4, warm-up 100, max 2000 */
    assert_float_equal(lr_schedule(0, 100, 2000, 1e-3f, 1e-4f), 1e-5f, 1e-9);
    assert_float_equal(lr_schedule(49, 100, 2000, 1e-3f, 1e-4f), 5e-4f, 1e-9);
    assert_float_equal(lr_schedule(99, 100, 2000, 1e-3f, 1e-4f), 1e-3f, 1e-9);
    assert_float_equal(lr_schedule(100, 100, 2000, 1e-3f, 1e-4f), 1e-3f, 1e-9);
    assert_float_equal(lr_schedule(1050, 100, 2000, 1e-3f, 1e-4f), 5.5e-4f, 1e-8); /* half-way: mean */
    assert_float_equal(lr_schedule(1525, 100, 2000, 1e-3f, 1e-4f), 1e-4f + 0.9e-3f * 0.5 * (1 + cos(M_PI * 0.75)), 1e-8);
    assert_float_equal(lr_schedule(2000, 100, 2000, 1e-3f, 1e-4f), 1e-4f, 1e-9);
}

static void test_clip(void **s) {
    (void)s;
    float g[4] = {3, 0, 4, 0};
    float norm = grad_norm(g, 4);
    assert_float_equal(norm, 5.0f, 1e-6);
    assert_float_equal(g[0] * clip_scale(norm, 1.0f), 0.6f, 1e-5);
    assert_float_equal(g[2] * clip_scale(norm, 1.0f), 0.8f, 1e-5);
    float h[2] = {0.3f, 0.4f};
    assert_float_equal(clip_scale(grad_norm(h, 2), 1.0f), 1.0f, 0); /* below the bound: unchanged */
    assert_float_equal(clip_scale(5.0f, 0.0f), 1.0f, 0);               /* clipping off */
    /* The factor reaches AdamW: a gradient clipped 10x moves m by a tenth. */
    AdamWConfig cfg = {0.9f, 0.99f, 1e-8f, 0.0f};
    float p = 1.0f, gr = 5.0f, m = 0, v = 0;
    adamw_update(&p, &gr, 0.1f, &m, &v, 1, 0.1f, 0.0f, &cfg, 1);
    assert_float_equal(m, 0.05f, 1e-7);
}

/* ---- tokenizer ----------------------------------------------------------------- */

static void test_tokenizer_roundtrip(void **s) {
    (void)s;
    const char *text = "Call me Ishmael — naïve “whale” 🐋!\n";
    Tokenizer tok, back;
    Error err;
    assert_int_equal(tokenizer_build_char(&tok, text, strlen(text), &err), 0);
    uint32_t *ids = NULL;
    tokenizer_encode(&tok, text, strlen(text), &ids);
    char *dec = tokenizer_decode(&tok, ids, arrlenu(ids));
    assert_string_equal(dec, text);
    for (size_t i = 0; i < arrlenu(ids); i++) assert_true(ids[i] > 0 && ids[i] < tok.vocab_size);
    /* Unseen characters become the unknown token 0. */
    uint32_t *unk = NULL;
    tokenizer_encode(&tok, "Z", 1, &unk);
    assert_int_equal(unk[0], 0);
    /* Saved and loaded: same vocabulary, same hash. */
    char path[] = "/tmp/lm-tok-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    assert_int_equal(tokenizer_save(&tok, path, &err), 0);
    assert_int_equal(tokenizer_load(&back, path, &err), 0);
    assert_string_equal(back.hash, tok.hash);
    assert_int_equal(back.vocab_size, tok.vocab_size);
    unlink(path);
    /* Byte tokenizer: any bytes, including invalid UTF-8. */
    Tokenizer bt;
    tokenizer_init_byte(&bt);
    const char raw[] = "a\xff\x80z";
    uint32_t *bids = NULL;
    tokenizer_encode(&bt, raw, 4, &bids);
    char *bdec = tokenizer_decode(&bt, bids, arrlenu(bids));
    assert_memory_equal(bdec, raw, 4);
    assert_string_not_equal(bt.hash, tok.hash);
    free(dec), free(bdec);
    arrfree(ids), arrfree(unk), arrfree(bids);
    tokenizer_free(&tok), tokenizer_free(&back), tokenizer_free(&bt);
}

/* Bytes of text from the text itself: a char tokenizer's unknown token stands
 * for the character (1, 2 or 4 bytes here, where its U+FFFD is 3) or invalid
 * byte it replaced; a token file records those, as version 2 (one without
 * them stays version 1), and any range of its tokens counts the bytes of the
 * text it came from. A trailer that lies is refused. */
static void test_token_text_bytes(void **s) {
    (void)s;
    const char train[] = "the whale", text[] = "Zthe \xc3\xa9 whale \xf0\x9f\x90\x8b\xff €!";
    size_t len = sizeof text - 1;
    Tokenizer tok;
    Error err;
    assert_int_equal(tokenizer_build_char(&tok, train, sizeof train - 1, &err), 0);
    TokenFile mem;
    assert_int_equal(tokens_from_text(&mem, &tok, text, len, &err), 0);
    /* Z, é, the whale emoji, 0xff and ! stand for 1, 2, 4, 1 and 1 bytes; € is 3, as U+FFFD */
    assert_int_equal(mem.n_spans, 5);
    assert_int_equal(tokens_text_bytes(&mem, &tok, 0, mem.n), len);
    assert_int_equal(tokens_token_bytes(&mem, &tok, 0), 1);
    for (size_t from = 0; from <= mem.n; from++) /* every range: its tokens' text, token by token */
        for (size_t n = 0; from + n <= mem.n; n++) {
            size_t sum = 0;
            for (size_t i = from; i < from + n; i++) sum += tokens_token_bytes(&mem, &tok, i);
            assert_int_equal(tokens_text_bytes(&mem, &tok, from, n), sum);
        }
    /* Written through the writer as bin/prepare does, read back the same. */
    char path[] = "/tmp/lm-spans-XXXXXX";
    temp_file(path);
    TokenWriter w;
    uint32_t first = 5, *ids = tokens_copy_u32(&mem, 0, mem.n, &err);
    assert_int_equal(token_writer_open(&w, path, tok.vocab_size, &err), 0);
    assert_int_equal(token_writer_add(&w, &first, 1, &err), 0); /* the spans' indices count it */
    assert_int_equal(token_writer_add_text(&w, &tok, text, len, ids, mem.n, &err), 0);
    assert_int_equal(token_writer_close(&w, &err), 0);
    TokenFile tf;
    assert_int_equal(tokens_read(path, &tf, &err), 0);
    assert_int_equal(tf.n, mem.n + 1);
    assert_int_equal(tf.n_spans, 5);
    assert_int_equal(tokens_text_bytes(&tf, &tok, 1, tf.n - 1), len);
    assert_int_equal(tokens_text_bytes(&tf, &tok, 0, tf.n), len + 1);
    tokens_free(&tf);
    size_t size;
    unsigned char *bytes = (unsigned char *)read_file(path, &size, &err);
    assert_non_null(bytes);
    assert_int_equal(bytes[8], 2); /* version 2 */
    /* A trailer that lies: an index past the tokens, out of order, cut short. */
    size_t n = mem.n + 1, idx = 32 + 2 * n + 8; /* the first index, after the tokens and the count */
    const char *why[] = {"no such token", "out of order", "does not fit"};
    for (int k = 0; k < 3; k++) {
        unsigned char *bad = malloc(size);
        memcpy(bad, bytes, size);
        size_t bad_size = size;
        if (k == 0) bad[idx] = (unsigned char)(n + 7);           /* the first index */
        if (k == 1) memcpy(bad + idx + 8, bad + idx, 8);          /* the second = the first */
        if (k == 2) bad_size -= 1;
        assert_int_equal(write_file_atomic(path, (char *)bad, bad_size, &err), 0);
        assert_int_equal(tokens_read(path, &tf, &err), -1);
        assert_non_null(strstr(err.msg, why[k]));
        free(bad);
    }
    /* No unknown token: version 1, as files were before. */
    assert_int_equal(tokens_write(path, &first, 1, tok.vocab_size, &err), 0);
    free(bytes);
    bytes = (unsigned char *)read_file(path, &size, &err);
    assert_int_equal(bytes[8], 1);
    assert_int_equal(size, 32 + 2);
    unlink(path);
    free(bytes);
    free(ids);
    tokens_free(&mem);
    tokenizer_free(&tok);
}

/* ---- corpus splits ----------------------------------------------------------------- */

static void put_file(const char *dir, const char *name, const char *text) {
    char path[512];
    Error err;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_int_equal(write_file_atomic(path, text, strlen(text), &err), 0);
}

/* Explicit splits: each file whole in its split, in the order given; the char
 * tokenizer from train alone; empty and missing inputs refused, naming the path. */
static void test_corpus_explicit_splits(void **s) {
    (void)s;
    char dir[] = "/tmp/lm-corpus-XXXXXX", sub[600], path[600];
    assert_non_null(mkdtemp(dir));
    snprintf(sub, sizeof sub, "%s/train", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    put_file(sub, "b.txt", "bbb");
    put_file(sub, "a.txt", "aa");
    put_file(sub, "c.txt", ""); /* an empty file in a directory with text is fine */
    put_file(dir, "val.txt", "abz");
    put_file(dir, "empty.txt", "");
    Corpus c = {0};
    Error err;
    snprintf(path, sizeof path, "%s/val.txt", dir);
    assert_int_equal(corpus_add_split_input(&c, SPLIT_VAL, path, &err), 0);
    assert_int_equal(corpus_add_split_input(&c, SPLIT_TRAIN, sub, &err), 0);
    snprintf(path, sizeof path, "%s/empty.txt", dir);
    assert_int_equal(corpus_add_split_input(&c, SPLIT_TEST, path, &err), -1);
    assert_non_null(strstr(err.msg, "empty.txt' is empty"));
    snprintf(path, sizeof path, "%s/missing.txt", dir);
    assert_int_equal(corpus_add_split_input(&c, SPLIT_TEST, path, &err), -1);
    assert_non_null(strstr(err.msg, "cannot open"));
    assert_int_equal(arrlenu(c.paths), 4); /* the refused inputs added nothing */
    assert_int_equal(corpus_open(&c, &err), 0);
    assert_int_equal(c.total, 8);
    assert_int_equal(arrlenu(c.splits[SPLIT_TRAIN]), 2); /* a.txt, b.txt; c.txt is empty */
    assert_int_equal(c.splits[SPLIT_TRAIN][0].doc, 1);
    assert_int_equal(corpus_split_bytes(&c, SPLIT_TRAIN), 5);
    assert_int_equal(corpus_split_bytes(&c, SPLIT_VAL), 3);
    assert_int_equal(corpus_split_bytes(&c, SPLIT_TEST), 0);
    TokenizerRecipe r = {.kind = "char"};
    Tokenizer tok;
    assert_int_equal(corpus_tokenizer(&c, &r, &tok, NULL, NULL, NULL, &err), 0);
    assert_int_equal(tok.vocab_size, 3); /* unknown, a, b: not val's z */
    tokenizer_free(&tok);
    corpus_free(&c);
    /* A split without text: refused when opened. */
    memset(&c, 0, sizeof c);
    snprintf(path, sizeof path, "%s/val.txt", dir);
    assert_int_equal(corpus_add_split_input(&c, SPLIT_TRAIN, path, &err), 0);
    assert_int_equal(corpus_add_split_input(&c, SPLIT_TEST, path, &err), 0);
    assert_int_equal(corpus_open(&c, &err), -1);
    assert_string_equal(err.msg, "the val split is empty");
    corpus_free(&c);
    const char *names[] = {"train/a.txt", "train/b.txt", "train/c.txt", "val.txt", "empty.txt", "train"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        remove(path);
    }
    rmdir(dir);
}

/* ---- checkpoints ----------------------------------------------------------------- */

/* A checkpoint of m with state os, read back into a model and a state of
 * the optimizer `as` (compared by the caller); 0, or -1 with err. */
static int load_with_state(const char *path, Model *back, CkptState *got, const Optimizer *as, OptimizerState *os,
                           Error *err) {
    CkptFile f;
    if (ckpt_open(&f, path, err)) return -1;
    int rc = ckpt_read_model(&f, back, got, 1, err);
    if (rc == 0) {
        ParamView p = params_view(back);
        rc = optim_state_init(os, as, &p, err) || ckpt_read_optim(&f, back, &os->buffers, err) ? -1 : 0;
        if (rc) optim_state_free(os), ckpt_state_free(got), model_free(back);
    }
    ckpt_close(&f);
    return rc;
}

static void test_checkpoint_roundtrip_and_corruption(void **s) {
    (void)s;
    Model m, back;
    OptimizerState os, os_back;
    Error err;
    make_model(&m, "attention,grassmann", 1, 4);
    assert_int_equal(model_alloc_grads(&m, &err), 0);
    test_optim_state(&os, optimizer_at(0), &m);
    for (size_t i = 0; i < os.n_floats; i++) os.floats[i] = (float)i * 1e-3f;
    CkptState st = {.step = 123, .data_rng = 0xdeadbeefcafef00dULL, .tokenizer = "0123456789abcdef"};
    st.train = "{\"lr\":0.001}";
    char path[] = "/tmp/lm-ckpt-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    assert_int_equal(ckpt_save(path, &m, &os.buffers, &st, &err), 0);
    CkptState got;
    assert_int_equal(load_with_state(path, &back, &got, optimizer_at(0), &os_back, &err), 0);
    assert_int_equal(got.step, 123);
    assert_true(got.data_rng == 0xdeadbeefcafef00dULL);
    assert_string_equal(got.tokenizer, "0123456789abcdef");
    assert_string_equal(got.train, "{\"lr\":0.001}");
    assert_int_equal(back.weights.n_params, m.weights.n_params);
    assert_int_equal(back.cfg.mixers[1], m.cfg.mixers[1]);
    assert_ptr_equal(back.mixers[1], m.mixers[1]);
    assert_memory_equal(back.weights.params, m.weights.params, m.weights.n_params * sizeof(float));
    assert_int_equal(os_back.n_floats, os.n_floats);
    assert_memory_equal(os_back.floats, os.floats, os.n_floats * sizeof(float));
    ckpt_state_free(&got);
    optim_state_free(&os_back);
    model_free(&back);

    /* Flip one bit at many places, header and data alike: every one is caught. */
    size_t len;
    char *good = read_file(path, &len, &err);
    assert_non_null(good);
    size_t step = len / 97 + 1;
    for (size_t at = 0; at < len; at += step) {
        good[at] ^= 0x10;
        assert_int_equal(write_file_atomic(path, good, len, &err), 0);
        if (load_with_state(path, &back, &got, optimizer_at(0), &os_back, &err) == 0)
            fail_msg("a flipped bit at byte %zu of %zu went unnoticed", at, len);
        good[at] ^= 0x10;
    }
    /* Truncated anywhere. */
    for (size_t cut = 0; cut < len; cut += len / 13 + 1) {
        assert_int_equal(write_file_atomic(path, good, cut, &err), 0);
        assert_int_equal(load_with_state(path, &back, &got, optimizer_at(0), &os_back, &err), -1);
    }
    free(good);
    unlink(path);
    optim_state_free(&os);
    model_free(&m);
}

/* Muon keeps one buffer for each matrix it updates (its momentum), AdamW's
 * two for the rest; its checkpoint is in the format AdamW's is, with the
 * second buffer of Muon's matrices written as zeros: read back as Muon's
 * state it is what was written, read as AdamW's the second moments of
 * Muon's matrices are zero and everything else the same. */
static void test_checkpoint_muon_state(void **s) {
    (void)s;
    Model m, back;
    OptimizerState os, muon_back, adamw_back;
    Error err;
    make_model(&m, "attention,grassmann", 1, 4);
    const Optimizer *muon = optimizer_find("muon");
    test_optim_state(&os, muon, &m);
    size_t muon_floats = 0;
    for (size_t i = 0; i < m.weights.n_tensors; i++) {
        const ParamTensor *t = &m.weights.tensors[i];
        assert_non_null(optim_buffer(&os, i, 0));
        if (muon_updates(t)) muon_floats += t->rows * t->cols, assert_null(optim_buffer(&os, i, 1));
        else assert_non_null(optim_buffer(&os, i, 1));
    }
    assert_true(muon_floats > 0);
    assert_int_equal(os.n_floats, 2 * m.weights.n_params - muon_floats);
    for (size_t i = 0; i < os.n_floats; i++) os.floats[i] = 1.0f + (float)i * 1e-3f;
    CkptState st = {.step = 7, .tokenizer = "0123456789abcdef", .train = "{}"}, got;
    char path[] = "/tmp/lm-ckpt-XXXXXX";
    close(mkstemp(path));
    assert_int_equal(ckpt_save(path, &m, &os.buffers, &st, &err), 0);
    assert_int_equal(load_with_state(path, &back, &got, muon, &muon_back, &err), 0);
    assert_memory_equal(muon_back.floats, os.floats, os.n_floats * sizeof(float));
    ckpt_state_free(&got), optim_state_free(&muon_back), model_free(&back);
    assert_int_equal(load_with_state(path, &back, &got, optimizer_at(0), &adamw_back, &err), 0);
    for (size_t i = 0; i < m.weights.n_tensors; i++) {
        const ParamTensor *t = &m.weights.tensors[i];
        size_t n = t->rows * (t->cols ? t->cols : 1);
        assert_memory_equal(optim_buffer(&adamw_back, i, 0), optim_buffer(&os, i, 0), n * sizeof(float));
        for (size_t j = 0; j < n && muon_updates(t); j++) assert_true(optim_buffer(&adamw_back, i, 1)[j] == 0.0f);
        if (!muon_updates(t))
            assert_memory_equal(optim_buffer(&adamw_back, i, 1), optim_buffer(&os, i, 1), n * sizeof(float));
    }
    ckpt_state_free(&got), optim_state_free(&adamw_back), model_free(&back);
    unlink(path);
    optim_state_free(&os);
    model_free(&m);
}


/* ---- evaluation ------------------------------------------------------------------ */

static void test_eval_uniform_is_vocab_size(void **s) {
    (void)s;
    Model m;
    make_model(&m, "attention", 1, 20);
    memset(m.weights.params, 0, m.weights.n_params * sizeof(float)); /* all-zero weights: logits 0, uniform */
    uint32_t toks[301];
    for (size_t i = 0; i < 301; i++) toks[i] = (uint32_t)((i * i + 3) % 13);
    EvalResult r;
    Error err;
    assert_int_equal(evaluate_tokens(&m, toks, 301, 0, 4, NULL, &r, &err), 0);
    assert_int_equal(r.scored, 300);
    assert_float_equal(exp(r.loss), 13.0, 1e-4);
    /* Strided windows still score every token exactly once. */
    assert_int_equal(evaluate_tokens(&m, toks, 301, 7, 3, NULL, &r, &err), 0);
    assert_int_equal(r.scored, 300);
    assert_float_equal(exp(r.loss), 13.0, 1e-4);
    /* Ids outside the vocabulary are an error, not a crash. */
    toks[100] = 13;
    assert_int_equal(evaluate_tokens(&m, toks, 301, 0, 4, NULL, &r, &err), -1);
    assert_non_null(strstr(err.msg, "outside"));
    model_free(&m);
}

static void test_stride_matches_direct_scoring(void **s) {
    (void)s;
    /* With stride S every scored token in a later window must see exactly the
     * context the planner promises: compare against scoring each token alone. */
    Model m;
    make_model(&m, "attention", 1, 20);
    uint32_t toks[47];
    for (size_t i = 0; i < 47; i++) toks[i] = (uint32_t)((i * 3 + 1) % 13);
    EvalResult r;
    Error err;
    assert_int_equal(evaluate_tokens(&m, toks, 47, 5, 2, NULL, &r, &err), 0);
    double want = 0.0;
    size_t correct = 0; /* the accuracy from the head's rows at the scored positions alone */
    int32_t in[20], tg[20];
    for (size_t j = 1; j < 47; j++) {
        /* target j: first window covers 1..20 with start 0; later ones end at
         * 25, 30, ..., 46 with start end - 20. */
        size_t end = j <= 20 ? 20 : (j - 21) / 5 * 5 + 25;
        if (end > 46) end = 46;
        size_t start = end - 20;
        for (size_t t = 0; t < 20; t++) in[t] = (int32_t)toks[start + t], tg[t] = (int32_t)toks[start + t + 1];
        model_alloc_acts(&m, 1, 20, &err);
        model_forward(&m, in, tg, 1, 20, NULL);
        want += m.run.losses[j - start - 1];
        const float *z = m.run.logits + (j - start - 1) * 13;
        size_t best = 0;
        for (size_t v = 1; v < 13; v++) best = z[v] > z[best] ? v : best;
        correct += best == toks[j];
    }
    assert_float_equal(r.loss, want / 46.0, 1e-5);
    assert_float_equal(r.accuracy, correct / 46.0, 1e-12);
    assert_true(correct > 0 && correct < 46); /* an accuracy that tells rows apart */
    model_free(&m);
}

/* ---- learning --------------------------------------------------------------------- */

/* Trains on a repeating 12-token pattern in which what follows 'ab' alternates,
 * so only context can tell it: any 6 tokens of the pattern determine the next
 * one, and its first tokens in a window do not. So the model is scored at the
 * positions whose 6 tokens of context are in the window (5 to 15), over
 * windows starting at each of the 12 phases, where a model that learned the
 * pattern predicts every token: returns that mean loss.
 * Not a sampled batch's loss: that one includes the undetermined positions
 * and the batch's luck. */
static double overfit_from(const char *mixers, uint64_t init_seed) {
    ModelConfig cfg;
    Error err;
    small_config(&cfg, mixers);
    cfg.vocab_size = 4;
    assert_int_equal(config_set_option(&cfg, "grassmann-rank", "8", &err), 0);
    Model m;
    OptimizerState os;
    assert_int_equal(model_init(&m, &cfg, init_seed, &err), 0);
    assert_int_equal(model_alloc_grads(&m, &err), 0);
    test_optim_state(&os, optimizer_at(0), &m);
    enum { B = 4, T = 16, PERIOD = 12, DETERMINED_FROM = 5, N = 400 };
    assert_int_equal(model_alloc_acts(&m, B, T, &err), 0);
    uint32_t text[N];
    const char *pattern = "abcabdabcacd";
    for (size_t i = 0; i < N; i++) text[i] = (uint32_t)(pattern[i % PERIOD] - 'a');
    TokenFile tf = {.data = text, .width = 4, .n = N, .vocab_size = 4};
    Rng rng;
    rng_seed(&rng, 3);
    int32_t in[B * T], tg[B * T];
    AdamWConfig ac = {0.9f, 0.99f, 1e-8f, 0.0f};
    for (size_t step = 0; step < 600; step++) {
        batch_sample(&tf, &rng, B, T, 0, NULL, in, tg);
        model_zero_grads(&m);
        model_forward(&m, in, tg, B, T, NULL);
        model_backward(&m, 1.0f, NULL);
        test_optim_step(&os, &m, &ac, lr_schedule(step, 20, 600, 1e-2f, 1e-3f), step + 1,
                        clip_scale(grad_norm(m.weights.grads, m.weights.n_params), 1.0f));
    }
    double sum = 0.0;
    size_t scored = 0;
    for (size_t phase0 = 0; phase0 < PERIOD; phase0 += B) {
        for (size_t b = 0; b < B; b++)
            for (size_t t = 0; t < T; t++) {
                in[b * T + t] = (int32_t)text[phase0 + b + t];
                tg[b * T + t] = (int32_t)text[phase0 + b + t + 1];
            }
        model_forward(&m, in, tg, B, T, NULL);
        for (size_t b = 0; b < B; b++)
            for (size_t t = DETERMINED_FROM; t < T; t++) sum += m.run.losses[b * T + t], scored++;
    }
    optim_state_free(&os);
    model_free(&m);
    return sum / (double)scored;
}

/* Training learns the pattern from one of three initialisations. From some,
 * this small model settles with one context unresolved (about 0.117: two
 * choices left at 1 position in 6), at every instruction-set level alike;
 * which initialisations do depends on the level's and BLAS kernel's rounding
 * (a trajectory of 600 steps amplifies the last bit). One run from a fixed
 * initialisation made the test pass or fail by CPU. A model that cannot learn
 * (a wrong gradient, a dead mixer) fails from all three. */
static void overfit(const char *mixers) {
    double loss[3];
    for (uint64_t i = 0; i < 3; i++) {
        loss[i] = overfit_from(mixers, i + 1);
        if (getenv("VERBOSE")) printf("  %s from initialisation %d: loss %.5f where the context determines the token\n",
                                      mixers, (int)i + 1, loss[i]);
        if (loss[i] < 0.02) return;
    }
    fail_msg("%s: loss %.4f, %.4f, %.4f (three initialisations) where the context determines the token, after 600 "
             "steps", mixers, loss[0], loss[1], loss[2]);
}

static void test_overfit_attention(void **s) { (void)s; overfit("attention"); }
static void test_overfit_grassmann(void **s) { (void)s; overfit("grassmann"); }

/* ---- configuration errors ------------------------------------------------------- */

/* bin/train's ETA paces over the last ETA_WINDOW progress intervals: one slow
 * interval moves it by its share, and drops out after ETA_WINDOW more. */
static void test_eta_window(void **state) {
    (void)state;
    EtaWindow w = {0};
    assert_true(eta_wall_per_step(&w) == 0.0 && eta_wall_per_train(&w) == 1.0);
    for (int i = 0; i < ETA_WINDOW; i++) eta_window_add(&w, 10, 1.0, 0.8); /* 0.1 s a step, 80% training */
    assert_true(fabs(eta_wall_per_step(&w) - 0.1) < 1e-12);
    assert_true(fabs(eta_wall_per_train(&w) - 1.25) < 1e-12);
    eta_window_add(&w, 10, 9.0, 8.0); /* one interval 9x slower (the machine busy): not the whole run's pace */
    assert_true(fabs(eta_wall_per_step(&w) - (7 * 1.0 + 9.0) / (8 * 10)) < 1e-12);
    for (int i = 0; i < ETA_WINDOW - 1; i++) eta_window_add(&w, 10, 1.0, 0.8);
    assert_true(fabs(eta_wall_per_step(&w) - (7 * 1.0 + 9.0) / (8 * 10)) < 1e-12); /* still in the window */
    eta_window_add(&w, 10, 1.0, 0.8);
    assert_true(fabs(eta_wall_per_step(&w) - 0.1) < 1e-12); /* gone */
}

static void test_config_errors(void **s) {
    (void)s;
    ModelConfig cfg;
    Error err;
    Model m;
    small_config(&cfg, "attention");
    cfg.n_head = 3; /* 16 % 3 != 0 */
    assert_int_equal(model_init(&m, &cfg, 1, &err), -1);
    assert_non_null(strstr(err.msg, "divisible"));
    small_config(&cfg, "attention");
    assert_int_equal(config_set_mixers(&cfg, "attention,grassmann,attention", &err), -1);
    assert_non_null(strstr(err.msg, "n_layer"));
    assert_int_equal(config_set_mixers(&cfg, "attention,mamba", &err), -1);
    assert_non_null(strstr(err.msg, "unknown mixer"));
    assert_int_equal(config_set_option(&cfg, "grassmann-windows", "", &err), -1);
    assert_int_equal(config_set_option(&cfg, "grassmann-windows", "1,x", &err), -1);
    assert_int_equal(config_set_option(&cfg, "grassmann-windows", "1,0", &err), -1);
    assert_int_equal(config_set_option(&cfg, "grassmann-windows", "1,,2", &err), -1);
    small_config(&cfg, "grassmann");
    assert_int_equal(config_set_option(&cfg, "grassmann-windows", "1,20", &err), 0); /* 20 >= block_size 20 */
    assert_int_equal(model_check_config(&cfg, &err), -1);
    small_config(&cfg, "grassmann");
    assert_int_equal(config_set_option(&cfg, "grassmann-rank", "1", &err), 0);
    assert_int_equal(model_check_config(&cfg, &err), -1);
    small_config(&cfg, "attention");
    cfg.n_embd = 0;
    assert_int_equal(config_validate(&cfg, &err), -1);
    small_config(&cfg, "attention");
    cfg.block_size = 1000000;
    assert_int_equal(config_validate(&cfg, &err), -1);
    /* rope rotates pairs: an odd head size is refused, by attention only. */
    small_config(&cfg, "attention");
    cfg.pos = POS_ROPE, cfg.n_embd = 18, cfg.n_head = 2;
    assert_int_equal(model_check_config(&cfg, &err), -1);
    assert_non_null(strstr(err.msg, "must be even"));
    small_config(&cfg, "grassmann");
    cfg.pos = POS_ROPE, cfg.n_embd = 18, cfg.n_head = 2;
    assert_int_equal(model_check_config(&cfg, &err), 0);
    /* The config JSON round-trips, each position kind. */
    for (PosKind pos = POS_LEARNED; pos <= POS_ROPE; pos++) {
        small_config(&cfg, "grassmann,attention");
        cfg.pos = pos, cfg.dropout = 0.1f;
        char *j = config_to_json(&cfg);
        ModelConfig back;
        assert_int_equal(config_from_json(&back, j, &err), 0);
        assert_int_equal(back.pos, pos);
        char *j2 = config_to_json(&back);
        assert_string_equal(j, j2);
        free(j), free(j2);
    }
}

/* The JSON reader stops at its length: a literal cut by the end of a
 * safetensors header is an error even if the bytes after it would complete
 * it (found by fuzz_config). Duplicate keys, sizes that are not integers and
 * integers past 2^53 (exact) or past 63 bits (refused). */
static void test_json_within_length(void **state) {
    (void)state;
    Error err;
    const char *text = "[true, null]";
    assert_null(json_parse(text, 3, &err));     /* "[tr" */
    assert_null(json_parse(text + 1, 3, &err)); /* "tru" */
    assert_null(json_parse(text + 7, 3, &err)); /* "nul" */
    json_t *j = json_parse(text, strlen(text), &err);
    assert_non_null(j);
    assert_int_equal(json_array_size(j), 2);
    assert_true(json_is_true(json_array_get(j, 0)));
    assert_true(json_is_null(json_array_get(j, 1)));
    json_decref(j);
    assert_null(json_parse("{\"a\":1,\"a\":2}", 13, &err));
    assert_non_null(strstr(err.msg, "duplicate"));
    const char *sizes = "[9007199254740993, 3.0, -1, 7]";
    j = json_parse(sizes, strlen(sizes), &err);
    size_t v;
    assert_int_equal(json_size(json_array_get(j, 0), SIZE_MAX, &v), 0);
    assert_true(v == 9007199254740993u);
    assert_int_equal(json_size(json_array_get(j, 1), SIZE_MAX, &v), -1);
    assert_int_equal(json_size(json_array_get(j, 2), SIZE_MAX, &v), -1);
    assert_int_equal(json_size(json_array_get(j, 3), 6, &v), -1);
    json_decref(j);
    assert_null(json_parse("[18446744073709551616]", 22, &err));
}

/* Strings are written as valid JSON whatever their bytes, and read back. */
static void test_json_string_out(void **state) {
    (void)state;
    char *sb = NULL;
    sb_appendf(&sb, "[");
    sb_append_json_string(&sb, "a\"b\\c\n\x01/\xc3\xa9");
    sb_appendf(&sb, ",");
    sb_append_json_string(&sb, "x\xffy\xc3");
    sb_appendf(&sb, "]");
    Error err;
    json_t *j = json_parse(sb, strlen(sb), &err);
    if (!j) fail_msg("%s: %s", sb, err.msg);
    assert_string_equal(json_string_value(json_array_get(j, 0)), "a\"b\\c\n\x01/\xc3\xa9");
    assert_string_equal(json_string_value(json_array_get(j, 1)), "x\xef\xbf\xbdy\xef\xbf\xbd");
    json_decref(j);
    sb_free(&sb);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_within_length),
        cmocka_unit_test(test_json_string_out),
        cmocka_unit_test(test_step_attention),
        cmocka_unit_test(test_step_grassmann),
        cmocka_unit_test(test_step_hybrid),
        cmocka_unit_test(test_step_rope),
        cmocka_unit_test(test_step_rope_hybrid),
        cmocka_unit_test(test_step_gla),
        cmocka_unit_test(test_step_gla_alone),
        cmocka_unit_test(test_infer_forward),
        cmocka_unit_test(test_weights_formats),
        cmocka_unit_test(test_step_batch),
        cmocka_unit_test(test_attention_window_config),
        cmocka_unit_test(test_step_post_hybrid),
        cmocka_unit_test(test_step_recipe),
        cmocka_unit_test(test_recipe_config),
        cmocka_unit_test(test_window_schedule),
        cmocka_unit_test(test_mixer_options),
        cmocka_unit_test(test_step_post_schedule),
        cmocka_unit_test(test_plucker_relations),
        cmocka_unit_test(test_grassmann_muted_offset),
        cmocka_unit_test(test_model_ablate),
        cmocka_unit_test(test_adamw_step),
        cmocka_unit_test(test_lr_schedule),
        cmocka_unit_test(test_clip),
        cmocka_unit_test(test_tokenizer_roundtrip),
        cmocka_unit_test(test_token_text_bytes),
        cmocka_unit_test(test_corpus_explicit_splits),
        cmocka_unit_test(test_checkpoint_roundtrip_and_corruption),
        cmocka_unit_test(test_checkpoint_muon_state),
        cmocka_unit_test(test_eval_uniform_is_vocab_size),
        cmocka_unit_test(test_stride_matches_direct_scoring),
        cmocka_unit_test(test_overfit_attention),
        cmocka_unit_test(test_overfit_grassmann),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_eta_window),
    };
    return cmocka_run_group_tests_name("units", tests, NULL, NULL);
}
