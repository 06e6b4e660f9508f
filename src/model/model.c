#include "lm/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/bf16.h"
#include "nn/dropout.h"
#include "nn/embedding.h"
#include "nn/layernorm.h"
#include "nn/loss.h"
#include "nn/mlp.h"
#include "lm/ops.h"
#include "nn/rope.h"
#include "lm/rng.h"

static size_t add_tensor(Model *m, const char *name, size_t rows, size_t cols, InitKind init) {
    ParamTensor *t = &m->tensors[m->n_tensors++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->rows = rows;
    t->cols = cols;
    t->init = init;
    t->offset = m->n_params;
    m->n_params += rows * (cols ? cols : 1);
    return t->offset;
}

/* Every tensor in storage order (named as docs/design.md lists them); m->tensors must have room. */
static void build_layout(Model *m) {
    const ModelConfig *c = &m->cfg;
    size_t C = c->n_embd;
    char name[TENSOR_NAME_MAX + 16];
    m->n_tensors = 0;
    m->n_params = 0;
    m->wte = add_tensor(m, "wte", c->vocab_size, C, INIT_NORMAL);
    if (c->pos == POS_LEARNED) m->wpe = add_tensor(m, "wpe", c->block_size, C, INIT_NORMAL);
    for (size_t l = 0; l < c->n_layer; l++) {
        LayerOffsets *lo = &m->layer[l];
#define LAYER_TENSOR(suffix, r, co, init) \
    (snprintf(name, sizeof name, "h.%zu.%s", l, suffix), add_tensor(m, name, r, co, init))
        lo->ln1_w = LAYER_TENSOR("ln1.weight", C, 0, INIT_ONE);
        lo->ln1_b = LAYER_TENSOR("ln1.bias", C, 0, INIT_ZERO);
        TensorSpec specs[MIXER_MAX_TENSORS];
        ModelConfig view;
        config_layer_view(c, l, &view);
        size_t ns = c->mixers[l]->tensors(&view, specs);
        lo->mixer = m->n_params;
        for (size_t i = 0; i < ns; i++) LAYER_TENSOR(specs[i].name, specs[i].rows, specs[i].cols, specs[i].init);
        lo->ln2_w = LAYER_TENSOR("ln2.weight", C, 0, INIT_ONE);
        lo->ln2_b = LAYER_TENSOR("ln2.bias", C, 0, INIT_ZERO);
        lo->fc_w = LAYER_TENSOR("mlp.fc.weight", 4 * C, C, INIT_NORMAL);
        lo->fc_b = LAYER_TENSOR("mlp.fc.bias", 4 * C, 0, INIT_ZERO);
        lo->proj_w = LAYER_TENSOR("mlp.proj.weight", C, 4 * C, INIT_RESIDUAL);
        lo->proj_b = LAYER_TENSOR("mlp.proj.bias", C, 0, INIT_ZERO);
#undef LAYER_TENSOR
    }
    m->lnf_w = add_tensor(m, "ln_f.weight", C, 0, INIT_ONE);
    m->lnf_b = add_tensor(m, "ln_f.bias", C, 0, INIT_ZERO);
}

/* Room for every tensor a model of cfg can have. */
static size_t tensor_capacity(const ModelConfig *cfg) { return 4 + cfg->n_layer * (8 + MIXER_MAX_TENSORS); }

/* The tensors' layout alone (no weights), for counting; free m->tensors after. */
static int layout_only(Model *m, const ModelConfig *cfg) {
    *m = (Model){.cfg = *cfg};
    m->tensors = calloc(tensor_capacity(cfg), sizeof *m->tensors);
    if (!m->tensors) return -1;
    build_layout(m);
    return 0;
}

size_t model_count_params(const ModelConfig *cfg) {
    Model m;
    if (layout_only(&m, cfg)) return 0;
    free(m.tensors);
    return m.n_params;
}

static size_t bf16_slot_entries(const Model *m, size_t B, size_t T);
static size_t bf16_packed_words(const ModelConfig *cfg, size_t B, size_t T);

size_t model_bf16_bytes(const ModelConfig *cfg, size_t B, size_t T) {
    Model m;
    if (layout_only(&m, cfg)) return 0;
    /* model_set_precision's allocations: the weights' shadow, two scratch
     * slots and the mixers' packed operands */
    size_t bytes = (m.n_params + 2 * bf16_slot_entries(&m, B, T)) * sizeof(uint16_t) +
                   bf16_packed_words(cfg, B, T) * sizeof(uint32_t);
    free(m.tensors);
    return bytes;
}

int model_alloc(Model *m, const ModelConfig *cfg, Error *err) {
    memset(m, 0, sizeof *m);
    if (config_validate(cfg, err)) return -1;
    m->cfg = *cfg;
    m->cfg.bf16 = NULL; /* model_set_precision's, never a config's */
    m->tensors = lm_calloc(tensor_capacity(cfg), sizeof *m->tensors, err);
    m->layer_cfg = m->tensors ? lm_calloc(cfg->n_layer, sizeof *m->layer_cfg, err) : NULL;
    if (!m->layer_cfg) {
        model_free(m);
        return -1;
    }
    build_layout(m);
    m->params = lm_calloc(m->n_params, sizeof(float), err);
    if (m->params && cfg->pos == POS_SINUSOIDAL) {
        m->pos_table = lm_calloc(cfg->block_size * cfg->n_embd, sizeof(float), err);
        if (m->pos_table) sinusoidal_table(m->pos_table, cfg->block_size, cfg->n_embd);
    }
    if (m->params && cfg->pos == POS_ROPE) {
        size_t hs = cfg->n_embd / cfg->n_head;
        m->rope_table = lm_calloc(cfg->block_size * hs, sizeof(float), err);
        if (m->rope_table) rope_table(m->rope_table, cfg->block_size, hs);
        m->cfg.rope = m->rope_table;
    }
    for (size_t l = 0; l < cfg->n_layer; l++) config_layer_view(&m->cfg, l, &m->layer_cfg[l]);
    if (!m->params || (cfg->pos == POS_SINUSOIDAL && !m->pos_table) || (cfg->pos == POS_ROPE && !m->rope_table)) {
        model_free(m);
        return -1;
    }
    return 0;
}

int model_init(Model *m, const ModelConfig *cfg, uint64_t seed, Error *err) {
    if (model_alloc(m, cfg, err)) return -1;
    Rng rng;
    rng_seed(&rng, seed);
    float resid_std = 0.02f / sqrtf(2.0f * (float)cfg->n_layer);
    for (size_t i = 0; i < m->n_tensors; i++) {
        const ParamTensor *t = &m->tensors[i];
        float *p = m->params + t->offset;
        size_t n = t->rows * (t->cols ? t->cols : 1);
        for (size_t j = 0; j < n; j++) {
            switch (t->init) {
            case INIT_NORMAL: p[j] = 0.02f * rng_normal(&rng); break;
            case INIT_RESIDUAL: p[j] = resid_std * rng_normal(&rng); break;
            case INIT_ZERO: p[j] = 0.0f; break;
            case INIT_ONE: p[j] = 1.0f; break;
            }
        }
    }
    return 0;
}

int model_is_product_weight(const Model *m, const ParamTensor *t) {
    return t->cols && !(m->cfg.pos == POS_LEARNED && t->offset == m->wpe);
}

ModelFlops model_flops(const Model *m, size_t T) {
    ModelFlops f = {0, 0, 0};
    for (size_t i = 0; i < m->n_tensors; i++)
        if (model_is_product_weight(m, &m->tensors[i]))
            f.dense += 6.0 * (double)m->tensors[i].rows * (double)m->tensors[i].cols;
    for (size_t l = 0; l < m->cfg.n_layer; l++)
        if (m->cfg.mixers[l]->flops) f.mixing += m->cfg.mixers[l]->flops(model_layer_cfg(m, l), T);
    f.total = f.dense + f.mixing;
    return f;
}

int model_alloc_training(Model *m, Error *err) {
    if (m->grads) return 0;
    m->grads = lm_calloc(m->n_params, sizeof(float), err);
    m->m = m->grads ? lm_calloc(m->n_params, sizeof(float), err) : NULL;
    m->v = m->m ? lm_calloc(m->n_params, sizeof(float), err) : NULL;
    return m->v ? 0 : -1;
}

int model_alloc_grad_accum(Model *m, Error *err) {
    if (!m->grads_micro) m->grads_micro = lm_calloc(m->n_params, sizeof(float), err);
    return m->grads_micro ? 0 : -1;
}

/* Carves the arena: with base == NULL it only measures. */
static size_t layout_acts(Model *m, float *base, size_t B, size_t T) {
    const ModelConfig *c = &m->cfg;
    size_t N = B * T, C = c->n_embd, V = c->vocab_size, used = 0;
    int drop = c->dropout > 0.0f;
#define TAKE(ptr, count) ((ptr) = base ? base + used : NULL, used += (count))
    for (size_t l = 0; l < c->n_layer; l++) {
        LayerActs *L = &m->la[l];
        TAKE(L->resid, N * C);
        TAKE(L->ln1, N * C);
        TAKE(L->ln1_mean, N);
        TAKE(L->ln1_rstd, N);
        TAKE(L->mix, N * C);
        ModelConfig view;
        config_layer_view(c, l, &view);
        TAKE(L->mixer, c->mixers[l]->act_size(&view, B, T));
        TAKE(L->drop1, drop ? N * C : 0);
        TAKE(L->resid_mid, N * C);
        TAKE(L->ln2, N * C);
        TAKE(L->ln2_mean, N);
        TAKE(L->ln2_rstd, N);
        TAKE(L->fc, N * 4 * C);
        TAKE(L->act, N * 4 * C);
        TAKE(L->mlp, N * C);
        TAKE(L->drop2, drop ? N * C : 0);
    }
    TAKE(m->resid_out, N * C);
    TAKE(m->lnf, N * C);
    TAKE(m->lnf_mean, N);
    TAKE(m->lnf_rstd, N);
    TAKE(m->logits, N * V); /* and in backward d(loss)/d(logits), in place */
    TAKE(m->losses, N);
    TAKE(m->dresid, N * C);
    TAKE(m->dbranch, drop ? N * C : 0);
    TAKE(m->dln, N * C);
    TAKE(m->dfc, N * 4 * C);
#undef TAKE
    return used;
}

size_t model_memory_bytes(const ModelConfig *cfg, size_t B, size_t T, int training, int accum) {
    Model m = {.cfg = *cfg};
    size_t copies = 1 + (training ? 3 : 0) + (training && accum ? 1 : 0);
    return (model_count_params(cfg) * copies + layout_acts(&m, NULL, B, T)) * sizeof(float) +
           2 * B * T * sizeof(int32_t);
}

int model_alloc_acts(Model *m, size_t B, size_t T, Error *err) {
    if (B == 0 || T == 0 || T > m->cfg.block_size)
        return err_set(err, "batch %zu x %zu does not fit the model (block_size %zu)", B, T, m->cfg.block_size);
    free(m->acts);
    free(m->inputs);
    free(m->targets);
    size_t n = layout_acts(m, NULL, B, T);
    m->acts = lm_calloc(n, sizeof(float), err);
    m->inputs = m->acts ? lm_calloc(B * T, sizeof(int32_t), err) : NULL;
    m->targets = m->inputs ? lm_calloc(B * T, sizeof(int32_t), err) : NULL;
    if (!m->targets) return -1;
    layout_acts(m, m->acts, B, T);
    m->n_acts = n;
    m->B_max = B;
    m->T_max = T;
    return m->precision == PRECISION_BF16 ? model_set_precision(m, PRECISION_BF16, err) : 0; /* its scratch too */
}

/* The widest operand of any product, in entries per token: every product
 * multiplies by a weight matrix, and its activation operands (input or
 * output gradient) are as wide as one of the matrix's dimensions. */
static size_t widest_product(const Model *m) {
    size_t w = 0;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const ParamTensor *t = &m->tensors[i];
        if (!t->cols) continue;
        w = t->rows > w ? t->rows : w;
        w = t->cols > w ? t->cols : w;
    }
    return w;
}

/* Entries of one bf16 scratch slot: the widest operand of a B x T batch. */
static size_t bf16_slot_entries(const Model *m, size_t B, size_t T) {
    return (B * T > 1 ? B * T : 1) * widest_product(m);
}

/* Words of the mixers' packed operands: the largest layer's (they take turns). */
static size_t bf16_packed_words(const ModelConfig *cfg, size_t B, size_t T) {
    size_t words = 0;
    for (size_t l = 0; l < cfg->n_layer; l++) {
        ModelConfig view;
        config_layer_view(cfg, l, &view);
        size_t w = cfg->mixers[l]->bf16_words ? cfg->mixers[l]->bf16_words(&view, B, T) : 0;
        words = w > words ? w : words;
    }
    return words;
}

static void bf16_free(Model *m) {
    free(m->params_h);
    free(m->bf16_scratch);
    free(m->bf16_packed);
    free(m->bf16);
    m->params_h = m->bf16_scratch = NULL;
    m->bf16_packed = NULL;
    m->bf16 = NULL;
    m->cfg.bf16 = NULL;
    for (size_t l = 0; m->layer_cfg && l < m->cfg.n_layer; l++) m->layer_cfg[l].bf16 = NULL;
}

int model_set_precision(Model *m, Precision p, Error *err) {
    bf16_free(m);
    m->precision = PRECISION_FP32;
    if (p == PRECISION_FP32) return 0;
    if (!bf16_supported()) return err_set(err, "--precision bf16 needs a CPU with AVX512_BF16, which this one lacks");
    size_t slot = bf16_slot_entries(m, m->B_max, m->T_max), packed = bf16_packed_words(&m->cfg, m->B_max, m->T_max);
    m->params_h = lm_calloc(m->n_params, sizeof(uint16_t), err);
    m->bf16_scratch = m->params_h ? lm_calloc(2 * slot, sizeof(uint16_t), err) : NULL;
    m->bf16_packed = m->bf16_scratch && packed ? lm_calloc(packed, sizeof(uint32_t), err) : NULL;
    m->bf16 = m->bf16_scratch && (m->bf16_packed || !packed) ? lm_calloc(1, sizeof *m->bf16, err) : NULL;
    if (!m->bf16) {
        bf16_free(m);
        return -1;
    }
    *m->bf16 = (MatmulBf16){.params = m->params, .params_h = m->params_h, .n_params = m->n_params,
                            .scratch = {m->bf16_scratch, m->bf16_scratch + slot}, .scratch_len = slot,
                            .packed = m->bf16_packed, .packed_len = packed, .failure = &m->bf16_failure};
    m->bf16_failure = (MatmulBf16Failure){0};
    m->cfg.bf16 = m->bf16;
    for (size_t l = 0; l < m->cfg.n_layer; l++) m->layer_cfg[l].bf16 = m->bf16;
    m->precision = PRECISION_BF16;
    model_round_weights(m);
    return 0;
}

int model_bf16_failed(const Model *m, Error *err) {
    if (!m->bf16_failure.failed) return 0;
    *err = m->bf16_failure.err;
    return -1;
}

void model_round_weights(Model *m) {
    if (m->params_h) bf16_from_floats_parallel(m->n_params, m->params, m->params_h);
}

void model_free(Model *m) {
    bf16_free(m);
    free(m->tensors);
    free(m->layer_cfg);
    free(m->params);
    free(m->grads);
    free(m->grads_micro);
    free(m->m);
    free(m->v);
    free(m->pos_table);
    free(m->rope_table);
    free(m->acts);
    free(m->inputs);
    free(m->targets);
    memset(m, 0, sizeof *m);
}

const ParamTensor *model_find_tensor(const Model *m, const char *name) {
    for (size_t i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0) return &m->tensors[i];
    return NULL;
}

const ModelConfig *model_layer_cfg(const Model *m, size_t l) { return &m->layer_cfg[l]; }

const float *model_mixer_input(const Model *m, size_t l) {
    return m->cfg.norm == NORM_POST ? m->la[l].resid : m->la[l].ln1;
}

static MlpParams mlp_params(const float *p, const LayerOffsets *lo) {
    return (MlpParams){p + lo->fc_w, p + lo->fc_b, p + lo->proj_w, p + lo->proj_b};
}

/* What the embedding adds per position: NULL with rope, which adds nothing. */
static const float *positions(const Model *m) {
    return m->cfg.pos == POS_LEARNED ? m->params + m->wpe : m->pos_table;
}

/* The branch's dropout, in place, with the mask drawn from the step's key
 * and the branch's index (nothing when dropout is off). */
static void branch_dropout(float *branch, float *mask, const Model *m, size_t branch_index) {
    if (!m->dropout_on) return;
    size_t n = m->B * m->T * m->cfg.n_embd;
    dropout_mask(mask, n, m->cfg.dropout, rng_hash(m->dropout_key, branch_index));
    dropout_forward(branch, mask, n);
}

/* A LayerNorm's outputs and parameters. */
typedef struct LnSlot {
    float *out, *mean, *rstd;
    const float *w, *b;
} LnSlot;

/* The LayerNorm that reads the stream after layer l's MLP: the next layer's
 * LN1, or LN_f after the last layer. */
static LnSlot next_ln(Model *m, size_t l) {
    if (l + 1 < m->cfg.n_layer) {
        LayerActs *N = &m->la[l + 1];
        const LayerOffsets *lo = &m->layer[l + 1];
        return (LnSlot){N->ln1, N->ln1_mean, N->ln1_rstd, m->params + lo->ln1_w, m->params + lo->ln1_b};
    }
    return (LnSlot){m->lnf, m->lnf_mean, m->lnf_rstd, m->params + m->lnf_w, m->params + m->lnf_b};
}

/* Where one block's pieces read and write, by norm placement:
 *   mixer_in  the mixer's input: LN1(h) pre-norm, h post-norm;
 *   ln_mid    the LayerNorm of h_mid = h + mix (kept in resid_mid): LN2
 *             pre-norm, LN1 post-norm; its output is the MLP's input;
 *   sum_out   where the MLP's residual sum sum_in + mlp goes, and ln_out
 *             the LayerNorm that reads it. Pre-norm: h_mid + mlp = the next
 *             layer's h, read by the next LN1 (or LN_f). Post-norm: LN1 out
 *             + mlp (kept in ln2), and LN2's output is the next h. */
typedef struct BlockPlan {
    const float *mixer_in, *sum_in;
    LnSlot ln_mid, ln_out;
    float *sum_out;
} BlockPlan;

static BlockPlan block_plan(Model *m, size_t l) {
    LayerActs *L = &m->la[l];
    const LayerOffsets *lo = &m->layer[l];
    const float *P = m->params;
    float *next = l + 1 < m->cfg.n_layer ? m->la[l + 1].resid : m->resid_out;
    if (m->cfg.norm == NORM_POST)
        return (BlockPlan){L->resid, L->ln1,
                           {L->ln1, L->ln1_mean, L->ln1_rstd, P + lo->ln1_w, P + lo->ln1_b},
                           {next, L->ln2_mean, L->ln2_rstd, P + lo->ln2_w, P + lo->ln2_b},
                           L->ln2};
    return (BlockPlan){L->ln1, L->resid_mid, {L->ln2, L->ln2_mean, L->ln2_rstd, P + lo->ln2_w, P + lo->ln2_b}, next_ln(m, l), next};
}

void model_forward(Model *m, const int32_t *inputs, const int32_t *targets, size_t B, size_t T,
                   const uint64_t *dropout_key) {
    const ModelConfig *c = &m->cfg;
    size_t N = B * T, C = c->n_embd, V = c->vocab_size;
    const float *P = m->params;
    Profile *pr = m->prof;
    const Pass F = PASS_FORWARD;
    m->B = B;
    m->T = T;
    m->dropout_on = dropout_key && c->dropout > 0.0f;
    m->dropout_key = m->dropout_on ? *dropout_key : 0;
    memcpy(m->inputs, inputs, N * sizeof(int32_t));
    PROFILED(pr, "embedding", F, embedding_forward(m->la[0].resid, inputs, P + m->wte, positions(m), B, T, C));
    int post = c->norm == NORM_POST;
    if (!post) {
        LayerActs *L0 = &m->la[0];
        PROFILED(pr, "layernorm", F,
                 layernorm_forward(L0->ln1, L0->ln1_mean, L0->ln1_rstd, L0->resid, P + m->layer[0].ln1_w,
                                   P + m->layer[0].ln1_b, N, C));
    }
    /* Each residual connection is fused with the LayerNorm that reads its
     * result (block_plan): pre-norm h_mid = h + mix -> LN2, h_next = h_mid + mlp
     * -> the next LN1 (or LN_f); post-norm h + mix -> LN1, LN1 out + mlp -> LN2
     * = h_next. */
    for (size_t l = 0; l < c->n_layer; l++) {
        LayerActs *L = &m->la[l];
        const LayerOffsets *lo = &m->layer[l];
        BlockPlan bp = block_plan(m, l);
        PROFILED(pr, c->mixers[l]->name, F,
                 c->mixers[l]->forward(model_layer_cfg(m, l), P + lo->mixer, L->mixer, L->mix, bp.mixer_in, B, T));
        PROFILED(pr, "residual", F, branch_dropout(L->mix, L->drop1, m, 2 * l));
        PROFILED(pr, "layernorm", F,
                 residual_layernorm_forward(L->resid_mid, bp.ln_mid.out, bp.ln_mid.mean, bp.ln_mid.rstd, L->resid, L->mix,
                                            bp.ln_mid.w, bp.ln_mid.b, N, C));
        PROFILED(pr, "mlp", F, mlp_forward(c->bf16, L->mlp, L->fc, L->act, bp.ln_mid.out, mlp_params(P, lo), N, C));
        PROFILED(pr, "residual", F, branch_dropout(L->mlp, L->drop2, m, 2 * l + 1));
        PROFILED(pr, "layernorm", F,
                 residual_layernorm_forward(bp.sum_out, bp.ln_out.out, bp.ln_out.mean, bp.ln_out.rstd, bp.sum_in, L->mlp,
                                            bp.ln_out.w, bp.ln_out.b, N, C));
    }
    if (post)
        PROFILED(pr, "layernorm", F,
                 layernorm_forward(m->lnf, m->lnf_mean, m->lnf_rstd, m->resid_out, P + m->lnf_w, P + m->lnf_b, N, C));
    double t0 = profile_start(pr);
    matmul_forward(c->bf16, m->logits, m->lnf, P + m->wte, NULL, N, C, V);
    m->loss = NAN;
    if (targets) {
        memcpy(m->targets, targets, N * sizeof(int32_t));
        crossentropy_forward(m->losses, m->logits, targets, N, V);
        /* The mean over the scored targets (all of them without a loss mask); a
         * batch with none scored has loss 0 and no gradient. */
        m->scored = crossentropy_scored(targets, N);
        m->loss = m->scored ? (float)(sum_floats(m->losses, N) / (double)m->scored) : 0.0f;
    }
    profile_stop(pr, "head", F, t0);
}

/* Zeroes x in parallel chunks: one thread's memset of the gradients (43 MB at
 * the medium config) would be a serial section of every step on many cores. */
static void zero_floats(float *x, size_t n) {
    enum { CHUNK = 1 << 16 };
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < (n + CHUNK - 1) / CHUNK; c++)
        memset(x + c * CHUNK, 0, (n - c * CHUNK < CHUNK ? n - c * CHUNK : CHUNK) * sizeof(float));
}

/* d(branch output) from d(stream): through the branch's dropout into
 * m->dbranch, or d(stream) itself when dropout is off. */
static const float *branch_grad(Model *m, const float *mask) {
    if (!m->dropout_on) return m->dresid;
    size_t n = m->B * m->T * m->cfg.n_embd;
    zero_floats(m->dbranch, n);
    dropout_backward(m->dbranch, m->dresid, mask, n);
    return m->dbranch;
}

/* Tells the caller's hook that grads[from .. to) are final. */
static void grads_ready(Model *m, size_t from, size_t to) {
    if (m->grads_ready) m->grads_ready(m->grads_ready_ctx, m->grads, from, to - from);
}

/* Back through a post-norm LayerNorm: m->dresid holds d(its output) and
 * becomes d(its input) (in the scratch beside it, the two then trade places:
 * the old gradient is no longer needed). in, mean, rstd: what its forward
 * read and kept; w, dw, db: its gain and their gradients. */
static void post_ln_backward(Model *m, float *dw, float *db, const float *in, const float *w, const float *mean,
                             const float *rstd) {
    size_t N = m->B * m->T, C = m->cfg.n_embd;
    zero_floats(m->dln, N * C);
    layernorm_backward(m->dln, dw, db, m->dresid, in, w, mean, rstd, N, C);
    float *t = m->dresid;
    m->dresid = m->dln;
    m->dln = t;
}

/* The post-norm blocks, top down. On entry m->dresid holds d(loss)/d(the
 * last layer's output); on exit d(loss)/d(the first layer's input). Per layer
 * (forward: s1 = h + mix(h), y = LN1(s1), s2 = y + MLP(y), h' = LN2(s2)):
 * ds2 = LN2'(dh'), dy = ds2 + MLP'(ds2), ds1 = LN1'(dy), dh = ds1 + mix'(ds1). */
static void post_norm_backward(Model *m) {
    const ModelConfig *c = &m->cfg;
    size_t B = m->B, T = m->T, N = B * T, C = c->n_embd;
    const float *P = m->params;
    float *G = m->grads;
    Profile *pr = m->prof;
    const Pass Bk = PASS_BACKWARD;
    for (size_t l = c->n_layer; l-- > 0;) {
        LayerActs *L = &m->la[l];
        const LayerOffsets *lo = &m->layer[l];
        MlpGrads mg = {G + lo->fc_w, G + lo->fc_b, G + lo->proj_w, G + lo->proj_b};
        const float *dbranch;
        PROFILED(pr, "layernorm", Bk,
                 post_ln_backward(m, G + lo->ln2_w, G + lo->ln2_b, L->ln2, P + lo->ln2_w, L->ln2_mean, L->ln2_rstd));
        PROFILED(pr, "residual", Bk, dbranch = branch_grad(m, L->drop2)); /* from ds2 */
        PROFILED(pr, "mlp", Bk, mlp_backward(c->bf16, m->dln, mg, m->dfc, dbranch, L->ln1, L->fc, L->act, mlp_params(P, lo), N, C));
        PROFILED(pr, "residual", Bk, add_inplace(m->dresid, m->dln, N * C)); /* dy */
        PROFILED(pr, "layernorm", Bk,
                 post_ln_backward(m, G + lo->ln1_w, G + lo->ln1_b, L->resid_mid, P + lo->ln1_w, L->ln1_mean,
                                  L->ln1_rstd));
        PROFILED(pr, "residual", Bk, dbranch = branch_grad(m, L->drop1)); /* from ds1 */
        PROFILED(pr, c->mixers[l]->name, Bk,
                 c->mixers[l]->backward(model_layer_cfg(m, l), P + lo->mixer, G + lo->mixer, L->mixer, L->resid,
                                        dbranch, m->dln, B, T));
        PROFILED(pr, "residual", Bk, add_inplace(m->dresid, m->dln, N * C)); /* dh */
        grads_ready(m, lo->ln1_w, l + 1 < c->n_layer ? m->layer[l + 1].ln1_w : m->lnf_w);
    }
}

void model_backward(Model *m, float loss_scale) {
    const ModelConfig *c = &m->cfg;
    size_t B = m->B, T = m->T, N = B * T, C = c->n_embd, V = c->vocab_size;
    const float *P = m->params;
    float *G = m->grads;
    Profile *pr = m->prof;
    const Pass Bk = PASS_BACKWARD;
    double t0 = profile_start(pr);
    /* The logits become their gradient: nothing reads them after this. */
    float *dlogits = m->logits;
    crossentropy_backward(dlogits, m->logits, m->targets, m->scored ? loss_scale / (float)m->scored : 0.0f, N, V);
    zero_floats(m->dresid, N * C);
    matmul_backward(c->bf16, m->dln, 0.0f, G + m->wte, NULL, dlogits, m->lnf, P + m->wte, N, C, V);
    profile_stop(pr, "head", Bk, t0);
    PROFILED(pr, "layernorm", Bk,
             layernorm_backward(m->dresid, G + m->lnf_w, G + m->lnf_b, m->dln, m->resid_out, P + m->lnf_w,
                                m->lnf_mean, m->lnf_rstd, N, C));
    grads_ready(m, m->lnf_w, m->n_params);
    if (c->norm == NORM_POST) {
        post_norm_backward(m);
    } else {
        /* m->dresid carries d(loss)/d(stream) down the layers: each branch adds to it. */
        for (size_t l = c->n_layer; l-- > 0;) {
            LayerActs *L = &m->la[l];
            const LayerOffsets *lo = &m->layer[l];
            MlpGrads mg = {G + lo->fc_w, G + lo->fc_b, G + lo->proj_w, G + lo->proj_b};
            const float *dbranch;
            PROFILED(pr, "residual", Bk, dbranch = branch_grad(m, L->drop2));
            PROFILED(pr, "mlp", Bk,
                     mlp_backward(c->bf16, m->dln, mg, m->dfc, dbranch, L->ln2, L->fc, L->act, mlp_params(P, lo), N, C));
            PROFILED(pr, "layernorm", Bk,
                     layernorm_backward(m->dresid, G + lo->ln2_w, G + lo->ln2_b, m->dln, L->resid_mid, P + lo->ln2_w,
                                        L->ln2_mean, L->ln2_rstd, N, C));
            PROFILED(pr, "residual", Bk, dbranch = branch_grad(m, L->drop1));
            PROFILED(pr, c->mixers[l]->name, Bk,
                     c->mixers[l]->backward(model_layer_cfg(m, l), P + lo->mixer, G + lo->mixer, L->mixer, L->ln1,
                                            dbranch, m->dln, B, T));
            PROFILED(pr, "layernorm", Bk,
                     layernorm_backward(m->dresid, G + lo->ln1_w, G + lo->ln1_b, m->dln, L->resid, P + lo->ln1_w,
                                        L->ln1_mean, L->ln1_rstd, N, C));
            grads_ready(m, lo->ln1_w, l + 1 < c->n_layer ? m->layer[l + 1].ln1_w : m->lnf_w);
        }
    }
    PROFILED(pr, "embedding", Bk,
             embedding_backward(G + m->wte, c->pos == POS_LEARNED ? G + m->wpe : NULL, m->dresid, m->inputs, B, T, C));
    grads_ready(m, 0, m->layer[0].ln1_w); /* wte also took the head's gradient, first of all */
}

void model_zero_grads(Model *m) { zero_floats(m->grads, m->n_params); }

void model_backward_accumulate(Model *m, float loss_scale) {
    float *sum = m->grads, *micro = m->grads_micro;
    zero_floats(micro, m->n_params);
    m->grads = micro; /* backward writes where grads points */
    model_backward(m, loss_scale);
    m->grads = sum;
    size_t n = m->n_params;
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) sum[i] += micro[i];
}

/* ---- incremental decoding ------------------------------------------------ */

/* One position's buffers: x, ln, mix, mid, ln2, mlp (C each), fc, act (4C
 * each), mean and rstd. */
#define STEP_BUF(C) (6 * (C) + 8 * (C) + 2)

int model_state_init(const Model *m, ModelState *s, Error *err) {
    memset(s, 0, sizeof *s);
    const ModelConfig *c = &m->cfg;
    size_t total = STEP_BUF(c->n_embd);
    for (size_t l = 0; l < c->n_layer; l++) total += c->mixers[l]->state_size(model_layer_cfg(m, l));
    s->buf = lm_calloc(total, sizeof(float), err);
    if (!s->buf) return -1;
    float *cur = s->buf + STEP_BUF(c->n_embd);
    for (size_t l = 0; l < c->n_layer; l++) {
        s->mixer_state[l] = cur;
        cur += c->mixers[l]->state_size(model_layer_cfg(m, l));
    }
    return 0;
}

void model_state_reset(ModelState *s) { s->t = 0; }

void model_state_free(ModelState *s) {
    free(s->buf);
    memset(s, 0, sizeof *s);
}

void model_step(const Model *m, ModelState *s, int32_t token, float *logits) {
    const ModelConfig *c = &m->cfg;
    size_t C = c->n_embd, t = s->t;
    const float *P = m->params;
    float *x = s->buf, *ln = x + C, *mix = ln + C, *mid = mix + C, *ln2 = mid + C, *mlp = ln2 + C;
    float *fc = mlp + C, *act = fc + 4 * C, *mean = act + 4 * C, *rstd = mean + 1;
    const float *pos = positions(m), *e = P + m->wte + (size_t)token * C;
    for (size_t i = 0; i < C; i++) x[i] = e[i] + (pos ? pos[t * C + i] : 0.0f);
    for (size_t l = 0; l < c->n_layer; l++) {
        const LayerOffsets *lo = &m->layer[l];
        int post = c->norm == NORM_POST;
        /* The mixer reads x (post-norm) or LN1(x); h_mid = x + mix goes
         * through the other LayerNorm (LN1 post-norm, LN2 pre) into the MLP. */
        if (!post) layernorm_forward(ln, mean, rstd, x, P + lo->ln1_w, P + lo->ln1_b, 1, C);
        c->mixers[l]->step(model_layer_cfg(m, l), P + lo->mixer, s->mixer_state[l], post ? x : ln, mix, t);
        add_forward(mid, x, mix, C);
        float *y = post ? ln : ln2;
        size_t w = post ? lo->ln1_w : lo->ln2_w, b = post ? lo->ln1_b : lo->ln2_b;
        layernorm_forward(y, mean, rstd, mid, P + w, P + b, 1, C);
        mlp_forward(c->bf16, mlp, fc, act, y, mlp_params(P, lo), 1, C);
        if (post) {
            add_forward(mid, y, mlp, C);
            layernorm_forward(x, mean, rstd, mid, P + lo->ln2_w, P + lo->ln2_b, 1, C);
        } else {
            add_forward(x, mid, mlp, C);
        }
    }
    layernorm_forward(ln, mean, rstd, x, P + m->lnf_w, P + m->lnf_b, 1, C);
    matmul_forward(c->bf16, logits, ln, P + m->wte, NULL, 1, C, c->vocab_size);
    s->t++;
}
