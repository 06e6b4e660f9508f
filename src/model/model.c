#include "lm/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/bf16.h"
#include "nn/embedding.h"
#include "lm/matmul.h"
#include "nn/rope.h"
#include "lm/rng.h"
#include "runtime/arena.h"

MixerSpec model_mixer_spec(const ModelConfig *cfg, size_t l) {
    MixerSpec spec = {.block_size = cfg->block_size, .n_embd = cfg->n_embd, .n_head = cfg->n_head,
                      .rope = cfg->pos == POS_ROPE, .qk_norm = cfg->qk_norm != 0};
    const Mixer *mx = cfg->mixers[l];
    if (mx && mx->layer_spec) mx->layer_spec(config_mixer_settings_of(cfg, mx), l, &spec);
    return spec;
}

int model_ablate(Model *m, size_t layer, const char *part, Error *err) {
    if (layer >= m->cfg.n_layer) return err_set(err, "layer %zu does not exist (the model has %zu)", layer, m->cfg.n_layer);
    const Mixer *mx = m->cfg.mixers[layer];
    MixerSpec spec = model_mixer_spec(&m->cfg, layer);
    char names[MIXER_MAX_PARTS][MIXER_PART_NAME], list[MIXER_MAX_PARTS * (MIXER_PART_NAME + 2)] = "";
    size_t n = mx->parts ? mx->parts(&spec, names) : 0;
    if (n == 0) return err_set(err, "layer %zu (%s) has no parts to leave out", layer, mx->name);
    for (size_t k = 0; k < n; k++) {
        if (strcmp(names[k], part) == 0) {
            m->run.muted[layer] |= 1u << k;
            return 0;
        }
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "", names[k]);
    }
    return err_set(err, "layer %zu (%s) has no part '%s'; its parts: %s", layer, mx->name, part, list);
}

/* Layer l's mixer: the registry's entry its config names. */
static const Mixer *config_mixer(const ModelConfig *cfg, size_t l) { return cfg->mixers[l]; }

int model_check_config(const ModelConfig *cfg, Error *err) {
    if (config_validate(cfg, err)) return -1;
    for (size_t l = 0; l < cfg->n_layer; l++) {
        const Mixer *mx = config_mixer(cfg, l);
        if (!mx) return err_set(err, "layer %zu has no mixer", l);
        MixerSpec spec = model_mixer_spec(cfg, l);
        if (mx->validate(&spec, err)) return -1;
    }
    return 0;
}


static size_t add_tensor(Model *m, const char *name, size_t rows, size_t cols, InitKind init) {
    ParamTensor *t = &m->weights.tensors[m->weights.n_tensors++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->rows = rows;
    t->cols = cols;
    t->init = init;
    t->offset = m->weights.n_params;
    m->weights.n_params += rows * (cols ? cols : 1);
    return t->offset;
}

/* A norm's tensors: its gain, and with LayerNorm its bias (RMSNorm has
 * none: *b is then NO_TENSOR). */
static void add_norm(Model *m, const char *prefix, size_t C, size_t *w, size_t *b) {
    char name[TENSOR_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s.weight", prefix);
    *w = add_tensor(m, name, C, 0, INIT_ONE);
    snprintf(name, sizeof name, "%s.bias", prefix);
    *b = m->cfg.norm_type == NORM_TYPE_LAYERNORM ? add_tensor(m, name, C, 0, INIT_ZERO) : NO_TENSOR;
}

/* A branch's last map onto the stream: zero with zero_init, else init. */
static InitKind output_init(const ModelConfig *c, InitKind init) { return c->zero_init ? INIT_ZERO : init; }

/* Every tensor in storage order (named as docs/design.md lists them); m->weights.tensors must have room. */
static void build_layout(Model *m) {
    const ModelConfig *c = &m->cfg;
    size_t C = c->n_embd;
    char name[TENSOR_NAME_MAX + 16];
    m->weights.n_tensors = 0;
    m->weights.n_params = 0;
    m->weights.wte = add_tensor(m, "wte", c->vocab_size, C, INIT_NORMAL);
    if (c->pos == POS_LEARNED) m->weights.wpe = add_tensor(m, "wpe", c->block_size, C, INIT_NORMAL);
    for (size_t l = 0; l < c->n_layer; l++) {
        LayerOffsets *lo = &m->weights.layer[l];
#define LAYER_TENSOR(suffix, r, co, init) \
    (snprintf(name, sizeof name, "h.%zu.%s", l, suffix), add_tensor(m, name, r, co, init))
        snprintf(name, sizeof name, "h.%zu.ln1", l);
        add_norm(m, name, C, &lo->ln1_w, &lo->ln1_b);
        TensorSpec specs[MIXER_MAX_TENSORS];
        MixerSpec spec = model_mixer_spec(c, l);
        size_t ns = mixer_tensors(config_mixer(c, l), &spec, specs);
        lo->mixer = m->weights.n_params;
        for (size_t i = 0; i < ns; i++)
            LAYER_TENSOR(specs[i].name, specs[i].rows, specs[i].cols,
                         specs[i].output ? output_init(c, specs[i].init) : specs[i].init);
        snprintf(name, sizeof name, "h.%zu.ln2", l);
        add_norm(m, name, C, &lo->ln2_w, &lo->ln2_b);
        lo->fc_w = LAYER_TENSOR("mlp.fc.weight", 4 * C, C, INIT_NORMAL);
        lo->fc_b = LAYER_TENSOR("mlp.fc.bias", 4 * C, 0, INIT_ZERO);
        lo->proj_w = LAYER_TENSOR("mlp.proj.weight", C, 4 * C, output_init(c, INIT_RESIDUAL));
        lo->proj_b = LAYER_TENSOR("mlp.proj.bias", C, 0, INIT_ZERO);
#undef LAYER_TENSOR
    }
    add_norm(m, "ln_f", C, &m->weights.lnf_w, &m->weights.lnf_b);
    /* Last, so that the final part's gradients (PassOptions.grads_ready) are one run. */
    m->weights.head = c->untied_head ? add_tensor(m, "lm_head.weight", c->vocab_size, C, output_init(c, INIT_NORMAL))
                                     : m->weights.wte;
}

/* Room for every tensor a model of cfg can have. */
static size_t tensor_capacity(const ModelConfig *cfg) { return 5 + cfg->n_layer * (8 + MIXER_MAX_TENSORS); }

/* The tensors' layout alone (no weights), for counting; free m->weights.tensors after. */
static int layout_only(Model *m, const ModelConfig *cfg) {
    *m = (Model){.cfg = *cfg};
    m->weights.tensors = calloc(tensor_capacity(cfg), sizeof *m->weights.tensors);
    if (!m->weights.tensors) return -1;
    build_layout(m);
    return 0;
}

int model_layout(Model *m, const ModelConfig *cfg, Error *err) {
    return layout_only(m, cfg) ? err_set(err, "out of memory") : 0;
}

size_t model_count_params(const ModelConfig *cfg) {
    Model m;
    if (layout_only(&m, cfg)) return 0;
    free(m.weights.tensors);
    return m.weights.n_params;
}

static size_t bf16_slot_entries(const Model *m, size_t B, size_t T);
static size_t bf16_packed_words(const ModelConfig *cfg, size_t B, size_t T);

size_t model_bf16_bytes(const ModelConfig *cfg, size_t B, size_t T) {
    Model m;
    if (layout_only(&m, cfg)) return 0;
    /* model_set_precision's allocations: the weights' shadow, two scratch
     * slots and the mixers' packed operands */
    size_t bytes = (m.weights.n_params + 2 * bf16_slot_entries(&m, B, T)) * sizeof(uint16_t) +
                   bf16_packed_words(cfg, B, T) * sizeof(uint32_t);
    free(m.weights.tensors);
    return bytes;
}

int model_alloc(Model *m, const ModelConfig *cfg, Error *err) {
    memset(m, 0, sizeof *m);
    if (model_check_config(cfg, err)) return -1;
    m->cfg = *cfg;
    for (size_t l = 0; l < cfg->n_layer; l++) m->mixers[l] = config_mixer(cfg, l);
    m->weights.tensors = lm_calloc(tensor_capacity(cfg), sizeof *m->weights.tensors, err);
    if (!m->weights.tensors) return -1;
    build_layout(m);
    m->weights.params = lm_calloc(m->weights.n_params, sizeof(float), err);
    if (m->weights.params && cfg->pos == POS_SINUSOIDAL) {
        m->weights.pos_table = lm_calloc(cfg->block_size * cfg->n_embd, sizeof(float), err);
        if (m->weights.pos_table) sinusoidal_table(m->weights.pos_table, cfg->block_size, cfg->n_embd);
    }
    if (m->weights.params && cfg->pos == POS_ROPE) {
        size_t hs = cfg->n_embd / cfg->n_head;
        m->weights.rope_table = lm_calloc(cfg->block_size * hs, sizeof(float), err);
        if (m->weights.rope_table) rope_table(m->weights.rope_table, cfg->block_size, hs);
    }
    const ModelWeights *w = &m->weights;
    if (!w->params || (cfg->pos == POS_SINUSOIDAL && !w->pos_table) || (cfg->pos == POS_ROPE && !w->rope_table)) {
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
    for (size_t i = 0; i < m->weights.n_tensors; i++) {
        const ParamTensor *t = &m->weights.tensors[i];
        float *p = m->weights.params + t->offset;
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
    /* wpe is a lookup, and so is wte when the head is a tensor of its own */
    return t->cols && !(m->cfg.pos == POS_LEARNED && t->offset == m->weights.wpe) &&
           !(m->cfg.untied_head && t->offset == m->weights.wte);
}

ModelFlops model_flops(const Model *m, size_t T) {
    ModelFlops f = {0, 0, 0};
    for (size_t i = 0; i < m->weights.n_tensors; i++)
        if (model_is_product_weight(m, &m->weights.tensors[i]))
            f.dense += 6.0 * (double)m->weights.tensors[i].rows * (double)m->weights.tensors[i].cols;
    for (size_t l = 0; l < m->cfg.n_layer; l++) {
        MixerSpec spec = model_mixer_spec(&m->cfg, l);
        if (m->mixers[l]->flops) f.mixing += m->mixers[l]->flops(&spec, T);
    }
    f.total = f.dense + f.mixing;
    return f;
}

int model_alloc_grads(Model *m, Error *err) {
    if (!m->weights.grads) m->weights.grads = lm_calloc(m->weights.n_params, sizeof(float), err);
    return m->weights.grads ? 0 : -1;
}

int model_alloc_grad_accum(Model *m, Error *err) {
    if (!m->weights.grads_micro) m->weights.grads_micro = lm_calloc(m->weights.n_params, sizeof(float), err);
    return m->weights.grads_micro ? 0 : -1;
}

/* The largest mixer region of any layer, for B x T tokens. */
static size_t largest_mixer_acts(const ModelConfig *c, size_t B, size_t T) {
    size_t most = 0;
    for (size_t l = 0; l < c->n_layer; l++) {
        MixerSpec spec = model_mixer_spec(c, l);
        size_t n = config_mixer(c, l)->act_size(&spec, B, T);
        most = n > most ? n : most;
    }
    return most;
}

/* Carves the arena: with base == NULL it only measures. shared: one layer's
 * buffers for all (inference: nothing kept for backward, no dropout masks,
 * no backward scratch). */
static size_t layout_acts(Model *m, float *base, size_t B, size_t T, int shared) {
    const ModelConfig *c = &m->cfg;
    size_t N = B * T, C = c->n_embd, V = c->vocab_size, used = 0;
    int drop = c->dropout > 0.0f && !shared, back = !shared;
    for (size_t l = 0; l < c->n_layer; l++) {
        LayerActs *L = &m->run.la[l];
        if (shared && l > 0) {
            *L = m->run.la[0];
            continue;
        }
        TAKE(L->resid, N * C);
        TAKE(L->ln1, N * C);
        TAKE(L->ln1_mean, N);
        TAKE(L->ln1_rstd, N);
        TAKE(L->mix, N * C);
        MixerSpec spec = model_mixer_spec(c, l);
        TAKE(L->mixer, shared ? largest_mixer_acts(c, B, T) : config_mixer(c, l)->act_size(&spec, B, T));
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
    TAKE(m->run.resid_out, N * C);
    TAKE(m->run.lnf, N * C);
    TAKE(m->run.lnf_mean, N);
    TAKE(m->run.lnf_rstd, N);
    TAKE(m->run.lnf_rows, N * C);
    TAKE(m->run.logits, N * V); /* and in backward d(loss)/d(logits), in place */
    TAKE(m->run.losses, N);
    TAKE(m->run.dresid, back ? N * C : 0);
    TAKE(m->run.dbranch, drop ? N * C : 0);
    TAKE(m->run.dln, back ? N * C : 0);
    TAKE(m->run.dfc, back ? N * 4 * C : 0);
    return used;
}

size_t model_memory_bytes(const ModelConfig *cfg, size_t B, size_t T, int training, int accum) {
    Model m = {.cfg = *cfg};
    size_t copies = 1 + (training ? 1 : 0) + (training && accum ? 1 : 0);
    return (model_count_params(cfg) * copies + layout_acts(&m, NULL, B, T, 0)) * sizeof(float) +
           4 * B * T * sizeof(int32_t);
}

static int alloc_acts(Model *m, size_t B, size_t T, int shared, Error *err) {
    if (B == 0 || T == 0 || T > m->cfg.block_size)
        return err_set(err, "batch %zu x %zu does not fit the model (block_size %zu)", B, T, m->cfg.block_size);
    free(m->run.acts);
    free(m->run.inputs);
    free(m->run.targets);
    free(m->run.head_rows);
    free(m->run.head_targets);
    m->run.targets = m->run.head_rows = m->run.head_targets = NULL;
    size_t n = layout_acts(m, NULL, B, T, shared);
    m->run.acts = lm_calloc_large(n, sizeof(float), err);
    m->run.inputs = m->run.acts ? lm_calloc(B * T, sizeof(int32_t), err) : NULL;
    m->run.targets = m->run.inputs ? lm_calloc(B * T, sizeof(int32_t), err) : NULL;
    m->run.head_rows = m->run.targets ? lm_calloc(B * T, sizeof(int32_t), err) : NULL;
    m->run.head_targets = m->run.head_rows ? lm_calloc(B * T, sizeof(int32_t), err) : NULL;
    if (!m->run.head_targets) return -1;
    layout_acts(m, m->run.acts, B, T, shared);
    m->run.n_acts = n;
    m->run.acts_shared = shared;
    m->run.B_max = B;
    m->run.T_max = T;
    return m->weights.bf16 ? model_set_precision(m, PRECISION_BF16, err) : 0; /* its scratch too */
}

int model_alloc_acts(Model *m, size_t B, size_t T, Error *err) { return alloc_acts(m, B, T, 0, err); }

int model_alloc_infer(Model *m, size_t B, size_t T, Error *err) { return alloc_acts(m, B, T, 1, err); }

int model_alloc_forward(Model *m, size_t B, size_t T, Error *err) {
    if (m->run.acts && m->run.B_max >= B && m->run.T_max >= T) return 0;
    return model_alloc_infer(m, B, T, err);
}

/* The widest operand of any product, in entries per token: every product
 * multiplies by a weight matrix, and its activation operands (input or
 * output gradient) are as wide as one of the matrix's dimensions. */
static size_t widest_product(const Model *m) {
    size_t w = 0;
    for (size_t i = 0; i < m->weights.n_tensors; i++) {
        const ParamTensor *t = &m->weights.tensors[i];
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
        MixerSpec spec = model_mixer_spec(cfg, l);
        const Mixer *mx = config_mixer(cfg, l);
        size_t w = mx->bf16_words ? mx->bf16_words(&spec, B, T) : 0;
        words = w > words ? w : words;
    }
    return words;
}

/* What model_set_precision allocates besides the three buffers: the
 * products' state and the record of a failed product it points at, in one
 * allocation (Model.bf16 is its first member). */
typedef struct Bf16State {
    MatmulBf16 mm;
    MatmulBf16Failure failure;
} Bf16State;

static void bf16_free(Model *m) {
    if (m->weights.bf16) {
        free((void *)m->weights.bf16->params_h);
        free(m->weights.bf16->scratch[0]);
        free(m->weights.bf16->packed);
        free(m->weights.bf16);
    }
    m->weights.bf16 = NULL;
}

int model_set_precision(Model *m, Precision p, Error *err) {
    bf16_free(m);
    if (p == PRECISION_FP32) return 0;
    if (bf16_require("--precision bf16", err)) return -1;
    size_t slot = bf16_slot_entries(m, m->run.B_max, m->run.T_max);
    size_t packed = bf16_packed_words(&m->cfg, m->run.B_max, m->run.T_max);
    uint16_t *params_h = lm_calloc(m->weights.n_params, sizeof(uint16_t), err);
    uint16_t *scratch = params_h ? lm_calloc(2 * slot, sizeof(uint16_t), err) : NULL;
    uint32_t *words = scratch && packed ? lm_calloc(packed, sizeof(uint32_t), err) : NULL;
    Bf16State *st = scratch && (words || !packed) ? lm_calloc(1, sizeof *st, err) : NULL;
    if (!st) {
        free(params_h), free(scratch), free(words);
        return -1;
    }
    st->mm = (MatmulBf16){.params = m->weights.params, .params_h = params_h, .n_params = m->weights.n_params,
                          .scratch = {scratch, scratch + slot}, .scratch_len = slot,
                          .packed = words, .packed_len = packed, .failure = &st->failure};
    m->weights.bf16 = &st->mm;
    model_round_weights(m);
    return 0;
}

int model_bf16_failed(const Model *m, Error *err) {
    if (!m->weights.bf16 || !m->weights.bf16->failure->failed) return 0;
    *err = m->weights.bf16->failure->err;
    return -1;
}

void model_round_weights(Model *m) {
    ModelWeights *w = &m->weights;
    if (w->bf16) bf16_from_floats_parallel(w->n_params, w->params, (uint16_t *)w->bf16->params_h);
}

int model_set_weights(Model *m, WeightsFormat f, Error *err) {
    decode_weights_free(&m->weights.decode);
    m->weights.decode.format = f;
    if (f == WEIGHTS_FP32) return 0;
    for (size_t i = 0; i < m->weights.n_tensors; i++) {
        const ParamTensor *t = &m->weights.tensors[i];
        if (!model_is_product_weight(m, t)) continue;
        if (decode_weights_add(&m->weights.decode, m->weights.params + t->offset, t->rows, t->cols, err)) {
            decode_weights_free(&m->weights.decode);
            m->weights.decode.format = WEIGHTS_FP32;
            return -1;
        }
    }
    decode_weights_round_trip(&m->weights.decode);
    model_round_weights(m);
    return 0;
}

void model_free(Model *m) {
    decode_weights_free(&m->weights.decode);
    bf16_free(m);
    free(m->weights.tensors);
    free(m->weights.params);
    free(m->weights.grads);
    free(m->weights.grads_micro);
    free(m->weights.pos_table);
    free(m->weights.rope_table);
    free(m->run.acts);
    free(m->run.inputs);
    free(m->run.targets);
    free(m->run.head_rows);
    free(m->run.head_targets);
    memset(m, 0, sizeof *m);
}

const ParamTensor *model_find_tensor(const Model *m, const char *name) {
    for (size_t i = 0; i < m->weights.n_tensors; i++)
        if (strcmp(m->weights.tensors[i].name, name) == 0) return &m->weights.tensors[i];
    return NULL;
}

const float *model_mixer_input(const Model *m, size_t l) {
    return m->cfg.norm == NORM_POST ? m->run.la[l].resid : m->run.la[l].ln1;
}
