/* GPT-2 in Hugging Face's layout: its tensor names against ours, and its
 * config.json read into a ModelConfig (see lm/hf.h and docs/gpt2.md). */
#include "lm/hf.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blas/tile_gemm.h"
#include "lm/json.h"
#include "lm/safetensors.h"
#include "nn/layernorm.h"
#include "lm/ds.h"
#include "lm/files.h"
#include "lm/machine.h"
#include "lm/bpe.h"
#include "hf/tokenizer_import.h"

#include "gpt2.h"

/* ---- names ---------------------------------------------------------------------- */

/* Each block's tensors: our name after "h.{l}.", Hugging Face's, and whether
 * it is a Conv1D matrix (stored [in, out]; ours are [out, in]). */
static const struct {
    const char *ours, *hf;
    int conv1d;
} block_names[] = {
    {"ln1.weight", "ln_1.weight", 0},          {"ln1.bias", "ln_1.bias", 0},
    {"attn.qkv.weight", "attn.c_attn.weight", 1}, {"attn.qkv.bias", "attn.c_attn.bias", 0},
    {"attn.proj.weight", "attn.c_proj.weight", 1}, {"attn.proj.bias", "attn.c_proj.bias", 0},
    {"ln2.weight", "ln_2.weight", 0},          {"ln2.bias", "ln_2.bias", 0},
    {"mlp.fc.weight", "mlp.c_fc.weight", 1},   {"mlp.fc.bias", "mlp.c_fc.bias", 0},
    {"mlp.proj.weight", "mlp.c_proj.weight", 1}, {"mlp.proj.bias", "mlp.c_proj.bias", 0},
};
static const struct {
    const char *ours, *hf;
} model_names[] = {{"wte", "wte.weight"}, {"wpe", "wpe.weight"}, {"ln_f.weight", "ln_f.weight"}, {"ln_f.bias", "ln_f.bias"}};

/* Our tensor's Hugging Face name (without PREFIX) into out, and whether it
 * is a Conv1D matrix; -1 for a tensor GPT-2 does not have. */
int hf_name(const char *ours, char *out, size_t len, int *conv1d) {
    *conv1d = 0;
    for (size_t i = 0; i < sizeof model_names / sizeof model_names[0]; i++)
        if (strcmp(ours, model_names[i].ours) == 0) return snprintf(out, len, "%s", model_names[i].hf), 0;
    char *end;
    if (strncmp(ours, "h.", 2) != 0) return -1;
    unsigned long layer = strtoul(ours + 2, &end, 10);
    if (end == ours + 2 || *end != '.') return -1;
    for (size_t i = 0; i < sizeof block_names / sizeof block_names[0]; i++)
        if (strcmp(end + 1, block_names[i].ours) == 0) {
            *conv1d = block_names[i].conv1d;
            return snprintf(out, len, "h.%lu.%s", layer, block_names[i].hf), 0;
        }
    return -1;
}

/* ---- config.json ------------------------------------------------------------------ */

/* A size under key: required, or absent (*found 0) when found is not NULL. */
static int config_size(const json_t *root, const char *key, size_t *out, int *found, const char *origin, Error *err) {
    const json_t *v = json_object_get(root, key);
    if (found) *found = v != NULL;
    if (!v && found) return 0;
    if (!v) return err_set(err, "'%s' has no %s", origin, key);
    if (json_size(v, SIZE_MAX, out) || *out == 0) return err_set(err, "'%s': %s must be a positive integer", origin, key);
    return 0;
}

/* A true or false under key, dflt when absent. */
static int config_bool(const json_t *root, const char *key, int dflt, int *out, const char *origin, Error *err) {
    const json_t *v = json_object_get(root, key);
    *out = dflt;
    if (!v) return 0;
    if (!json_is_boolean(v)) return err_set(err, "'%s': %s must be true or false", origin, key);
    *out = json_is_true(v);
    return 0;
}

static int config_from_root(const json_t *root, const char *origin, ModelConfig *cfg, int *tied, Error *err) {
    if (!json_is_object(root)) return err_set(err, "'%s' is not a JSON object", origin);
    const char *type = json_string_value(json_object_get(root, "model_type"));
    if (!type) return err_set(err, "'%s' has no model_type: not a Hugging Face model's config.json", origin);
    if (strcmp(type, "gpt2") != 0)
        return err_set(err, "'%s': model_type '%s' is not GPT-2: only model_type gpt2 converts", origin, type);
    config_defaults(cfg); /* attention in every layer, learned positions, pre-norm, no dropout */
    int has_positions;
    if (config_size(root, "n_layer", &cfg->n_layer, NULL, origin, err) ||
        config_size(root, "n_head", &cfg->n_head, NULL, origin, err) ||
        config_size(root, "n_embd", &cfg->n_embd, NULL, origin, err) ||
        config_size(root, "vocab_size", &cfg->vocab_size, NULL, origin, err) ||
        config_size(root, "n_positions", &cfg->block_size, &has_positions, origin, err) ||
        /* the oldest configs name the context n_ctx (newer ones keep both, equal) */
        (!has_positions && config_size(root, "n_ctx", &cfg->block_size, NULL, origin, err)))
        return -1;
    const json_t *v = json_object_get(root, "n_inner"); /* null: 4 n_embd */
    size_t inner;
    if (v && !json_is_null(v) && json_size(v, SIZE_MAX, &inner))
        return err_set(err, "'%s': n_inner must be an integer or null", origin);
    if (v && !json_is_null(v) && inner != 4 * cfg->n_embd)
        return err_set(err, "'%s': n_inner %zu: our MLP is 4 x n_embd = %zu wide", origin, inner, 4 * cfg->n_embd);
    v = json_object_get(root, "activation_function");
    const char *act = v ? json_string_value(v) : "gelu_new";
    /* gelu_pytorch_tanh is the same tanh approximation, computed by PyTorch's own kernel */
    if (!act || (strcmp(act, "gelu_new") != 0 && strcmp(act, "gelu_pytorch_tanh") != 0))
        return err_set(err, "'%s': activation_function %s is not GPT-2's tanh GELU (gelu_new), the only one our MLP has",
                       origin, act ? act : "(not a string)");
    v = json_object_get(root, "layer_norm_epsilon");
    if (v && !json_is_number(v)) return err_set(err, "'%s': layer_norm_epsilon must be a number", origin);
    if (v && (float)json_number_value(v) != LAYERNORM_EPS)
        return err_set(err, "'%s': layer_norm_epsilon %g: our LayerNorm's eps is fixed at %g", origin,
                       json_number_value(v), (double)LAYERNORM_EPS);
    int scaled, by_layer, reordered, cross;
    /* reorder_and_upcast_attn computes the same scores in fp32 with the
     * scale applied first: only the rounding of half-precision runs changes,
     * and ours are fp32 throughout, so it is accepted (checked as a boolean). */
    if (config_bool(root, "scale_attn_weights", 1, &scaled, origin, err) ||
        config_bool(root, "scale_attn_by_inverse_layer_idx", 0, &by_layer, origin, err) ||
        config_bool(root, "reorder_and_upcast_attn", 0, &reordered, origin, err) ||
        config_bool(root, "add_cross_attention", 0, &cross, origin, err) ||
        config_bool(root, "tie_word_embeddings", 1, tied, origin, err))
        return -1;
    if (!scaled)
        return err_set(err, "'%s': scale_attn_weights false: our attention always scales scores by 1/sqrt(head size)",
                       origin);
    if (by_layer)
        return err_set(err, "'%s': scale_attn_by_inverse_layer_idx true: our attention does not scale by 1/(layer + 1)",
                       origin);
    if (cross) return err_set(err, "'%s': add_cross_attention true: our model has no cross-attention", origin);
    Error verr;
    if (model_check_config(cfg, &verr)) return err_set(err, "'%s': %s", origin, verr.msg);
    return 0;
}

int hf_gpt2_config_parse(const char *text, size_t len, const char *origin, ModelConfig *cfg, int *tied, Error *err) {
    Error perr;
    json_t *root = json_parse(text, len, &perr);
    if (!root) return err_set(err, "'%s' is not valid JSON: %s", origin, perr.msg);
    int rc = config_from_root(root, origin, cfg, tied, err);
    json_decref(root);
    return rc;
}

/* A small JSON file (config.json, the shard index) as text. */
char *read_small_json(const char *path, size_t *len, Error *err) {
    size_t size;
    char *text = read_file_head(path, SMALL_JSON_MAX + 1, len, &size, err);
    if (text && size > SMALL_JSON_MAX) {
        free(text);
        err_set(err, "'%s' is %zu bytes, far more than a Hugging Face JSON file holds", path, size);
        return NULL;
    }
    return text;
}
