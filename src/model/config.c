#include "lm/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/options.h"
#include "lm/json.h"

void config_defaults(ModelConfig *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->block_size = 64;
    cfg->n_layer = 4;
    cfg->n_head = 4;
    cfg->n_embd = 128;
    cfg->pos = POS_LEARNED;
    for (size_t l = 0; l < MAX_LAYERS; l++) cfg->mixers[l] = MIXER_ATTENTION;
    cfg->grassmann_rank = 32;
    static const size_t windows[] = {1, 2, 4, 8, 12, 16};
    cfg->n_windows = sizeof windows / sizeof windows[0];
    memcpy(cfg->windows, windows, sizeof windows);
    cfg->dropout = 0.0f;
}

int config_validate(const ModelConfig *cfg, Error *err) {
    if (cfg->vocab_size == 0 || cfg->vocab_size > MAX_VOCAB)
        return err_set(err, "vocab_size must be between 1 and %u (got %zu)", MAX_VOCAB, cfg->vocab_size);
    if (cfg->block_size < 2 || cfg->block_size > MAX_BLOCK)
        return err_set(err, "block_size must be between 2 and %d (got %zu)", MAX_BLOCK, cfg->block_size);
    if (cfg->n_layer == 0 || cfg->n_layer > MAX_LAYERS)
        return err_set(err, "n_layer must be between 1 and %d (got %zu)", MAX_LAYERS, cfg->n_layer);
    if (cfg->n_embd == 0 || cfg->n_embd > MAX_EMBD)
        return err_set(err, "n_embd must be between 1 and %d (got %zu)", MAX_EMBD, cfg->n_embd);
    if (cfg->n_head == 0 || cfg->n_head > MAX_HEADS)
        return err_set(err, "n_head must be between 1 and %d (got %zu)", MAX_HEADS, cfg->n_head);
    if (!(cfg->dropout >= 0.0f && cfg->dropout < 1.0f))
        return err_set(err, "dropout must be in [0, 1) (got %g)", cfg->dropout);
    if (cfg->norm != NORM_PRE && cfg->norm != NORM_POST) return err_set(err, "norm must be pre or post");
    if ((unsigned)cfg->norm_type > NORM_TYPE_RMSNORM) return err_set(err, "norm_type must be layernorm or rmsnorm");
    if ((unsigned)cfg->mlp_act > MLP_ACT_RELU2) return err_set(err, "mlp_act must be gelu or relu2");
    if (cfg->qk_norm > 1 || cfg->untied_head > 1 || cfg->zero_init > 1)
        return err_set(err, "qk_norm, untied_head and zero_init must be 0 or 1");
    /* tanh saturates to within float rounding of c past |z| ~ 9c: a cap below
     * 1e-3 or above 1e4 is a typo, not a recipe */
    if (!(cfg->logit_softcap == 0.0f || (cfg->logit_softcap >= 1e-3f && cfg->logit_softcap <= 1e4f)))
        return err_set(err, "logit_softcap must be 0 (off) or between 0.001 and 10000 (got %g)", cfg->logit_softcap);
    for (size_t l = 0; l < cfg->n_layer; l++) {
        if ((unsigned)cfg->mixers[l] >= MIXER_KINDS) return err_set(err, "layer %zu has no mixer", l);
        if (cfg->layer_windows[l] >> cfg->n_windows)
            return err_set(err, "layer %zu selects a grassmann window past the list's %zu", l, cfg->n_windows);
    }
    return 0;
}

size_t config_layer_windows(const ModelConfig *cfg, size_t l, size_t *out) {
    uint32_t mask = cfg->layer_windows[l];
    size_t n = 0;
    for (size_t k = 0; k < cfg->n_windows; k++)
        if (!mask || mask >> k & 1u) out[n++] = cfg->windows[k];
    return n;
}

/* The index of name in names[0 .. n), or -1. */
static int name_index(const char *const *names, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, names[i]) == 0) return (int)i;
    return -1;
}

static const char *const MIXER_NAMES[] = {"attention", "grassmann"};
_Static_assert(sizeof MIXER_NAMES / sizeof MIXER_NAMES[0] == MIXER_KINDS, "a name for every mixer kind");

const char *mixer_kind_name(MixerKind kind) { return MIXER_NAMES[kind]; }

int mixer_kind_parse(const char *name, MixerKind *out) {
    int i = name_index(MIXER_NAMES, MIXER_KINDS, name);
    if (i >= 0) *out = (MixerKind)i;
    return i >= 0 ? 0 : -1;
}

static const char *const NORM_NAMES[] = {"pre", "post"};

const char *norm_name(NormKind norm) { return NORM_NAMES[norm]; }

int norm_parse(const char *name, NormKind *out) {
    int i = name_index(NORM_NAMES, sizeof NORM_NAMES / sizeof NORM_NAMES[0], name);
    if (i >= 0) *out = (NormKind)i;
    return i >= 0 ? 0 : -1;
}

static const char *const NORM_TYPE_NAMES[] = {"layernorm", "rmsnorm"};

const char *norm_type_name(NormType t) { return NORM_TYPE_NAMES[t]; }

int norm_type_parse(const char *name, NormType *out) {
    int i = name_index(NORM_TYPE_NAMES, sizeof NORM_TYPE_NAMES / sizeof NORM_TYPE_NAMES[0], name);
    if (i >= 0) *out = (NormType)i;
    return i >= 0 ? 0 : -1;
}

static const char *const MLP_ACT_NAMES[] = {"gelu", "relu2"};

const char *mlp_act_name(MlpActKind a) { return MLP_ACT_NAMES[a]; }

int mlp_act_parse(const char *name, MlpActKind *out) {
    int i = name_index(MLP_ACT_NAMES, sizeof MLP_ACT_NAMES / sizeof MLP_ACT_NAMES[0], name);
    if (i >= 0) *out = (MlpActKind)i;
    return i >= 0 ? 0 : -1;
}

int config_has_recipe_switch(const ModelConfig *cfg) {
    return cfg->norm_type != NORM_TYPE_LAYERNORM || cfg->mlp_act != MLP_ACT_GELU || cfg->qk_norm ||
           cfg->untied_head || cfg->zero_init || cfg->logit_softcap != 0.0f;
}

const char *config_recipe_list(const ModelConfig *cfg, char *buf, size_t len) {
    buf[0] = '\0';
#define APPEND(...) (snprintf(buf + strlen(buf), len - strlen(buf), "%s", buf[0] ? ", " : ""), \
                     snprintf(buf + strlen(buf), len - strlen(buf), __VA_ARGS__))
    if (cfg->norm_type != NORM_TYPE_LAYERNORM) APPEND("%s", norm_type_name(cfg->norm_type));
    if (cfg->mlp_act != MLP_ACT_GELU) APPEND("%s", mlp_act_name(cfg->mlp_act));
    if (cfg->qk_norm) APPEND("qk-norm");
    if (cfg->untied_head) APPEND("untied head");
    if (cfg->zero_init) APPEND("zero-init");
    if (cfg->logit_softcap != 0.0f) APPEND("softcap %g", cfg->logit_softcap);
#undef APPEND
    return buf;
}

static const char *const PRECISION_NAMES[] = {"fp32", "bf16"};

const char *precision_name(Precision p) { return PRECISION_NAMES[p]; }

int precision_parse(const char *name, Precision *out) {
    int i = name_index(PRECISION_NAMES, sizeof PRECISION_NAMES / sizeof PRECISION_NAMES[0], name);
    if (i >= 0) *out = (Precision)i;
    return i >= 0 ? 0 : -1;
}

static const char *const POS_NAMES[] = {"learned", "sinusoidal", "rope"};

const char *pos_name(PosKind pos) { return POS_NAMES[pos]; }

int pos_parse(const char *name, PosKind *out) {
    int i = name_index(POS_NAMES, sizeof POS_NAMES / sizeof POS_NAMES[0], name);
    if (i >= 0) *out = (PosKind)i;
    return i >= 0 ? 0 : -1;
}

/* Copies the next item of *s up to sep into item and advances *s past it
 * (to NULL after the last). Returns -1 for an empty or over-long item. */
static int next_item_sep(const char **s, char *item, size_t cap, int sep) {
    const char *comma = strchr(*s, sep);
    size_t len = comma ? (size_t)(comma - *s) : strlen(*s);
    if (len == 0 || len >= cap) return -1;
    memcpy(item, *s, len);
    item[len] = '\0';
    *s = comma ? comma + 1 : NULL;
    return 0;
}

static int next_item(const char **s, char *item, size_t cap) { return next_item_sep(s, item, cap, ','); }

/* "attention, grassmann" for messages. */
static const char *mixer_kind_list(void) {
    static char names[256];
    names[0] = '\0';
    for (size_t k = 0; k < MIXER_KINDS; k++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "", MIXER_NAMES[k]);
    return names;
}

int config_set_mixers(ModelConfig *cfg, const char *spec, Error *err) {
    MixerKind list[MAX_LAYERS + 1];
    size_t n = 0;
    char name[64];
    for (const char *s = spec; s;) {
        if (next_item(&s, name, sizeof name)) return err_set(err, "bad mixer list '%s'", spec);
        MixerKind kind;
        if (mixer_kind_parse(name, &kind)) return err_set(err, "unknown mixer '%s' (known: %s)", name, mixer_kind_list());
        if (n == MAX_LAYERS) return err_set(err, "mixer list has more than %d entries", MAX_LAYERS);
        list[n++] = kind;
    }
    if (n == 1) {
        for (size_t l = 0; l < MAX_LAYERS; l++) cfg->mixers[l] = list[0];
        return 0;
    }
    if (n != cfg->n_layer)
        return err_set(err, "mixer list has %zu entries but n_layer is %zu", n, cfg->n_layer);
    for (size_t l = 0; l < n; l++) cfg->mixers[l] = list[l];
    return 0;
}

const char *config_mixer_list(const ModelConfig *cfg, char *buf, size_t len) {
    buf[0] = '\0';
    for (size_t l = 0; l < cfg->n_layer; l++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", l ? "," : "", mixer_kind_name(cfg->mixers[l]));
    return buf;
}

/* Parses one comma list of offsets into out (at most MAX_WINDOWS). */
static int parse_window_list(const char *list, const char *spec, size_t *out, size_t *n_out, Error *err) {
    size_t n = 0;
    char num[32];
    for (const char *s = list; s;) {
        if (next_item(&s, num, sizeof num)) return err_set(err, "bad grassmann window list '%s'", spec);
        if (n == MAX_WINDOWS) return err_set(err, "grassmann window list has more than %d offsets", MAX_WINDOWS);
        if (parse_size(num, MAX_BLOCK, &out[n], "grassmann window offset", err)) return -1;
        if (out[n] == 0) return err_set(err, "grassmann window offset must be positive (got 0)");
        for (size_t k = 0; k < n; k++)
            if (out[k] == out[n]) return err_set(err, "grassmann window list '%s' lists %zu twice", list, out[n]);
        n++;
    }
    *n_out = n;
    return 0;
}

int config_set_windows(ModelConfig *cfg, const char *spec, Error *err) {
    if (!*spec) return err_set(err, "grassmann window list is empty");
    if (!strchr(spec, ';')) {
        memset(cfg->layer_windows, 0, sizeof cfg->layer_windows);
        return parse_window_list(spec, spec, cfg->windows, &cfg->n_windows, err);
    }
    /* A schedule: the union of the layers' offsets in order of first use,
     * and each layer's selection of it. */
    size_t n_layers = 0, n_union = 0, all[MAX_WINDOWS];
    uint32_t masks[MAX_LAYERS];
    char list[512];
    for (const char *s = spec; s;) {
        if (next_item_sep(&s, list, sizeof list, ';')) return err_set(err, "bad grassmann window schedule '%s'", spec);
        if (n_layers == cfg->n_layer || n_layers == MAX_LAYERS)
            return err_set(err, "grassmann window schedule '%s' has more than n_layer (%zu) lists", spec, cfg->n_layer);
        size_t mine[MAX_WINDOWS], n;
        if (parse_window_list(list, spec, mine, &n, err)) return -1;
        uint32_t mask = 0;
        for (size_t i = 0; i < n; i++) {
            size_t k = 0;
            while (k < n_union && all[k] != mine[i]) k++;
            if (k == n_union) {
                if (n_union == MAX_WINDOWS)
                    return err_set(err, "grassmann window schedule uses more than %d distinct offsets", MAX_WINDOWS);
                all[n_union++] = mine[i];
            }
            mask |= 1u << k;
        }
        masks[n_layers++] = mask;
    }
    if (n_layers != cfg->n_layer)
        return err_set(err, "grassmann window schedule '%s' has %zu lists but n_layer is %zu", spec, n_layers,
                       cfg->n_layer);
    /* A layer that uses every offset, in order, is stored as 0 (all), so
     * one list repeated for every layer reads back as that one list. */
    memset(cfg->layer_windows, 0, sizeof cfg->layer_windows);
    uint32_t full = n_union == 32 ? 0xffffffffu : (1u << n_union) - 1u;
    for (size_t l = 0; l < n_layers; l++) cfg->layer_windows[l] = masks[l] == full ? 0 : masks[l];
    memcpy(cfg->windows, all, n_union * sizeof all[0]);
    cfg->n_windows = n_union;
    return 0;
}

static int windows_uniform(const ModelConfig *cfg) {
    for (size_t l = 0; l < cfg->n_layer; l++)
        if (cfg->layer_windows[l]) return 0;
    return 1;
}

static void append_offsets(char *buf, size_t len, const size_t *windows, size_t n) {
    for (size_t w = 0; w < n; w++) snprintf(buf + strlen(buf), len - strlen(buf), "%s%zu", w ? "," : "", windows[w]);
}

const char *config_window_list(const ModelConfig *cfg, char *buf, size_t len) {
    buf[0] = '\0';
    if (windows_uniform(cfg)) {
        append_offsets(buf, len, cfg->windows, cfg->n_windows);
        return buf;
    }
    for (size_t l = 0; l < cfg->n_layer; l++) {
        size_t windows[MAX_WINDOWS], n = config_layer_windows(cfg, l, windows);
        if (l) snprintf(buf + strlen(buf), len - strlen(buf), ";");
        append_offsets(buf, len, windows, n);
    }
    return buf;
}

char *config_to_json(const ModelConfig *cfg) {
    char *sb = NULL;
    sb_appendf(&sb, "{\"vocab_size\":%zu,\"block_size\":%zu,\"n_layer\":%zu,\"n_head\":%zu,\"n_embd\":%zu,",
               cfg->vocab_size, cfg->block_size, cfg->n_layer, cfg->n_head, cfg->n_embd);
    sb_appendf(&sb, "\"mixers\":[");
    for (size_t l = 0; l < cfg->n_layer; l++) sb_appendf(&sb, "%s\"%s\"", l ? "," : "", mixer_kind_name(cfg->mixers[l]));
    sb_appendf(&sb, "],\"pos\":\"%s\",\"norm\":\"%s\",\"grassmann_rank\":%zu,\"grassmann_windows\":[",
               pos_name(cfg->pos), norm_name(cfg->norm), cfg->grassmann_rank);
    /* One list for every layer, or a schedule: one list per layer. */
    int uniform = windows_uniform(cfg);
    for (size_t l = 0; l < (uniform ? 1 : cfg->n_layer); l++) {
        size_t windows[MAX_WINDOWS], n = config_layer_windows(cfg, l, windows);
        sb_appendf(&sb, "%s%s", l ? "," : "", uniform ? "" : "[");
        for (size_t w = 0; w < n; w++) sb_appendf(&sb, "%s%zu", w ? "," : "", windows[w]);
        if (!uniform) sb_appendf(&sb, "]");
    }
    sb_appendf(&sb, "],\"dropout\":%.9g", cfg->dropout);
    /* The recipe's switches only when on: a GPT-2-recipe config's JSON is
     * the same as before they existed (its checkpoints byte for byte). */
    if (cfg->norm_type != NORM_TYPE_LAYERNORM) sb_appendf(&sb, ",\"norm_type\":\"%s\"", norm_type_name(cfg->norm_type));
    if (cfg->mlp_act != MLP_ACT_GELU) sb_appendf(&sb, ",\"mlp_act\":\"%s\"", mlp_act_name(cfg->mlp_act));
    if (cfg->qk_norm) sb_appendf(&sb, ",\"qk_norm\":true");
    if (cfg->untied_head) sb_appendf(&sb, ",\"untied_head\":true");
    if (cfg->zero_init) sb_appendf(&sb, ",\"zero_init\":true");
    if (cfg->logit_softcap != 0.0f) sb_appendf(&sb, ",\"logit_softcap\":%.9g", cfg->logit_softcap);
    sb_appendf(&sb, "}");
    char *out = strdup(sb);
    sb_free(&sb);
    return out;
}

static int get_size(const json_t *root, const char *key, size_t *out, Error *err) {
    if (json_size(json_object_get(root, key), (size_t)1e15, out))
        return err_set(err, "config: '%s' missing or not a non-negative integer", key);
    return 0;
}

/* 'grassmann_windows': a list of offsets, or one such list per layer (a
 * schedule), rebuilt through config_set_windows's own form. */
static int windows_from_json(ModelConfig *cfg, const json_t *windows, Error *err) {
    const char *bad = "config: 'grassmann_windows' must be a list of offsets or one list per layer";
    if (!json_is_array(windows) || json_array_size(windows) == 0 || json_array_size(windows) > MAX_LAYERS * MAX_WINDOWS)
        return err_set(err, "%s", bad);
    int schedule = json_is_array(json_array_get(windows, 0));
    char *spec = NULL;
    size_t n = json_array_size(windows), off;
    for (size_t i = 0; i < n; i++) {
        const json_t *item = json_array_get(windows, i);
        if (schedule != json_is_array(item)) goto fail;
        if (i) sb_appendf(&spec, "%s", schedule ? ";" : ",");
        for (size_t w = 0; w < (schedule ? json_array_size(item) : 1); w++) {
            if (json_size(schedule ? json_array_get(item, w) : item, MAX_BLOCK, &off)) goto fail;
            sb_appendf(&spec, "%s%zu", w ? "," : "", off);
        }
    }
    /* A one-layer schedule has no ';': it is that layer's list. */
    int rc = config_set_windows(cfg, spec ? spec : "", err);
    sb_free(&spec);
    return rc;
fail:
    sb_free(&spec);
    return err_set(err, "%s", bad);
}

/* A boolean switch: absent is off (every config written before it). */
static int get_switch(const json_t *root, const char *key, size_t *out, Error *err) {
    const json_t *v = json_object_get(root, key);
    if (v && !json_is_boolean(v)) return err_set(err, "config: '%s' must be true or false", key);
    *out = v && json_is_true(v);
    return 0;
}

/* The recipe's switches, each absent in a config written before it (GPT-2's choice). */
static int recipe_from_json(ModelConfig *cfg, const json_t *root, Error *err) {
    const json_t *nt = json_object_get(root, "norm_type"), *act = json_object_get(root, "mlp_act");
    const json_t *cap = json_object_get(root, "logit_softcap");
    if (nt && (!json_is_string(nt) || norm_type_parse(json_string_value(nt), &cfg->norm_type)))
        return err_set(err, "config: 'norm_type' must be \"layernorm\" or \"rmsnorm\"");
    if (act && (!json_is_string(act) || mlp_act_parse(json_string_value(act), &cfg->mlp_act)))
        return err_set(err, "config: 'mlp_act' must be \"gelu\" or \"relu2\"");
    if (cap && !json_is_number(cap)) return err_set(err, "config: 'logit_softcap' must be a number");
    cfg->logit_softcap = cap ? (float)json_number_value(cap) : 0.0f;
    return get_switch(root, "qk_norm", &cfg->qk_norm, err) || get_switch(root, "untied_head", &cfg->untied_head, err) ||
           get_switch(root, "zero_init", &cfg->zero_init, err);
}

int config_from_json(ModelConfig *cfg, const char *text, Error *err) {
    config_defaults(cfg);
    json_t *root = json_parse(text, strlen(text), err);
    if (!root) return -1;
    int rc = -1;
    if (!json_is_object(root)) {
        err_set(err, "config: not a JSON object");
        goto done;
    }
    if (get_size(root, "vocab_size", &cfg->vocab_size, err) || get_size(root, "block_size", &cfg->block_size, err) ||
        get_size(root, "n_layer", &cfg->n_layer, err) || get_size(root, "n_head", &cfg->n_head, err) ||
        get_size(root, "n_embd", &cfg->n_embd, err) || get_size(root, "grassmann_rank", &cfg->grassmann_rank, err))
        goto done;
    const json_t *mixers = json_object_get(root, "mixers"), *windows = json_object_get(root, "grassmann_windows");
    const json_t *dropout = json_object_get(root, "dropout");
    const char *pos = json_string_value(json_object_get(root, "pos"));
    if (!json_is_array(mixers) || json_array_size(mixers) != cfg->n_layer || cfg->n_layer > MAX_LAYERS) {
        err_set(err, "config: 'mixers' must list one mixer per layer");
        goto done;
    }
    for (size_t l = 0; l < cfg->n_layer; l++) {
        const char *name = json_string_value(json_array_get(mixers, l));
        if (!name || mixer_kind_parse(name, &cfg->mixers[l])) {
            err_set(err, "config: unknown mixer in layer %zu", l);
            goto done;
        }
    }
    if (!pos || pos_parse(pos, &cfg->pos)) {
        err_set(err, "config: 'pos' must be \"learned\", \"sinusoidal\" or \"rope\"");
        goto done;
    }
    const char *norm = json_string_value(json_object_get(root, "norm"));
    if (json_object_get(root, "norm") && (!norm || norm_parse(norm, &cfg->norm))) {
        err_set(err, "config: 'norm' must be \"pre\" or \"post\"");
        goto done; /* absent: pre, as every checkpoint before post-norm */
    }
    if (windows_from_json(cfg, windows, err)) goto done;
    if (!json_is_number(dropout)) {
        err_set(err, "config: 'dropout' missing");
        goto done;
    }
    cfg->dropout = (float)json_number_value(dropout);
    if (recipe_from_json(cfg, root, err)) goto done;
    rc = config_validate(cfg, err);
done:
    json_decref(root);
    return rc;
}
