#include "lm/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/options.h"
#include "lm/json.h"
#include "runtime/registry.h"

void config_defaults(ModelConfig *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->block_size = 64;
    cfg->n_layer = 4;
    cfg->n_head = 4;
    cfg->n_embd = 128;
    cfg->pos = POS_LEARNED;
    for (size_t l = 0; l < MAX_LAYERS; l++) cfg->mixers[l] = mixer_at(0); /* the registry's first: attention */
    /* Every mixer's settings at their defaults. */
    for (size_t i = 0; i < mixer_count(); i++) {
        const Mixer *mx = mixer_at(i);
        void *settings = cfg->mixer_settings[i].bytes;
        for (size_t k = 0; k < mx->n_options; k++) {
            const OptionRow *opt = &mx->options[k];
            Error err;
            if (opt->kind != OPT_TEXT) option_set_number(opt, settings, opt->def);
            else if (opt->set(settings, cfg->n_layer, opt->def_text, &err)) abort(); /* a default the mixer cannot parse */
        }
    }
    cfg->dropout = 0.0f;
}

void *config_mixer_settings(ModelConfig *cfg, const Mixer *mx) { return cfg->mixer_settings[mixer_index(mx)].bytes; }

const void *config_mixer_settings_of(const ModelConfig *cfg, const Mixer *mx) {
    return cfg->mixer_settings[mixer_index(mx)].bytes;
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
    for (size_t l = 0; l < cfg->n_layer; l++)
        if (!cfg->mixers[l] || mixer_index(cfg->mixers[l]) >= mixer_count()) return err_set(err, "layer %zu has no mixer", l);
    return 0;
}

/* The index of name in names[0 .. n), or -1. */
static int name_index(const char *const *names, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, names[i]) == 0) return (int)i;
    return -1;
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


static int next_item(const char **s, char *item, size_t cap) { return list_next_item(s, item, cap, ','); }

int config_set_mixers(ModelConfig *cfg, const char *spec, Error *err) {
    const Mixer *list[MAX_LAYERS + 1];
    size_t n = 0;
    char name[64];
    for (const char *s = spec; s;) {
        if (next_item(&s, name, sizeof name)) return err_set(err, "bad mixer list '%s'", spec);
        const Mixer *mx = mixer_find(name);
        if (!mx) return err_set(err, "unknown mixer '%s' (known: %s)", name, mixer_names());
        if (n == MAX_LAYERS) return err_set(err, "mixer list has more than %d entries", MAX_LAYERS);
        list[n++] = mx;
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
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", l ? "," : "", cfg->mixers[l]->name);
    return buf;
}

const OptionRow *config_find_option(const char *name, const Mixer **owner) {
    for (size_t i = 0; i < mixer_count(); i++) {
        const Mixer *mx = mixer_at(i);
        for (size_t k = 0; k < mx->n_options; k++)
            if (strcmp(mx->options[k].name, name) == 0) {
                if (owner) *owner = mx;
                return &mx->options[k];
            }
    }
    if (owner) *owner = NULL;
    return NULL;
}

int config_set_option(ModelConfig *cfg, const char *name, const char *value, Error *err) {
    const Mixer *mx;
    const OptionRow *opt = config_find_option(name, &mx);
    if (!opt) return err_set(err, "no mixer has an option '%s'", name);
    void *settings = config_mixer_settings(cfg, mx);
    if (opt->kind == OPT_TEXT) return opt->set(settings, cfg->n_layer, value, err);
    return option_parse(opt, settings, value, err); /* a number, as the command line takes it */
}

const char *config_option_text(const ModelConfig *cfg, const char *name, char *buf, size_t len) {
    const Mixer *mx;
    const OptionRow *opt = config_find_option(name, &mx);
    buf[0] = '\0';
    if (!opt) return buf;
    const void *settings = config_mixer_settings_of(cfg, mx);
    if (opt->kind == OPT_TEXT) return opt->get(settings, cfg->n_layer, buf, len);
    if (opt->kind == OPT_FLOAT) snprintf(buf, len, "%.9g", option_number(opt, settings));
    else snprintf(buf, len, "%zu", (size_t)option_number(opt, settings));
    return buf;
}

/* Whether a setting holds its default (text compared in get's canonical form). */
static int option_is_default(const OptionRow *opt, const void *settings, size_t n_layer) {
    if (opt->kind != OPT_TEXT) return option_number(opt, settings) == opt->def;
    char now[1024];
    return !strcmp(opt->get(settings, n_layer, now, sizeof now), opt->def_text);
}

char *config_to_json(const ModelConfig *cfg) {
    char *sb = NULL;
    sb_appendf(&sb, "{\"vocab_size\":%zu,\"block_size\":%zu,\"n_layer\":%zu,\"n_head\":%zu,\"n_embd\":%zu,",
               cfg->vocab_size, cfg->block_size, cfg->n_layer, cfg->n_head, cfg->n_embd);
    sb_appendf(&sb, "\"mixers\":[");
    for (size_t l = 0; l < cfg->n_layer; l++) sb_appendf(&sb, "%s\"%s\"", l ? "," : "", cfg->mixers[l]->name);
    sb_appendf(&sb, "],\"pos\":\"%s\",\"norm\":\"%s\"", pos_name(cfg->pos), norm_name(cfg->norm));
    /* Every registered mixer's settings, in registry order, each by its keys. */
    for (size_t i = 0; i < mixer_count(); i++) {
        const Mixer *mx = mixer_at(i);
        const void *settings = cfg->mixer_settings[i].bytes;
        for (size_t k = 0; k < mx->n_options; k++) {
            const OptionRow *opt = &mx->options[k];
            if (opt->omit_default && option_is_default(opt, settings, cfg->n_layer)) continue;
            sb_appendf(&sb, ",\"%s\":", opt->json_key);
            if (opt->kind == OPT_TEXT) opt->to_json(settings, cfg->n_layer, &sb);
            else if (opt->kind == OPT_FLOAT) sb_appendf(&sb, "%.9g", option_number(opt, settings));
            else sb_appendf(&sb, "%zu", (size_t)option_number(opt, settings));
        }
    }
    sb_appendf(&sb, ",\"dropout\":%.9g", cfg->dropout);
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

/* Every registered mixer's settings from their keys; a key that is absent
 * (a config written before the option existed) leaves the default. */
static int mixer_settings_from_json(ModelConfig *cfg, const json_t *root, Error *err) {
    for (size_t i = 0; i < mixer_count(); i++) {
        const Mixer *mx = mixer_at(i);
        void *settings = cfg->mixer_settings[i].bytes;
        for (size_t k = 0; k < mx->n_options; k++) {
            const OptionRow *opt = &mx->options[k];
            const json_t *v = json_object_get(root, opt->json_key);
            if (!v) continue;
            if (opt->kind == OPT_TEXT) {
                if (opt->from_json(settings, cfg->n_layer, v, err)) return -1;
            } else if (opt->kind == OPT_FLOAT) {
                if (!json_is_number(v)) return err_set(err, "config: '%s' must be a number", opt->json_key);
                option_set_number(opt, settings, json_number_value(v));
            } else {
                size_t x;
                if (json_size(v, (size_t)1e15, &x))
                    return err_set(err, "config: '%s' missing or not a non-negative integer", opt->json_key);
                option_set_number(opt, settings, (double)x);
            }
        }
    }
    return 0;
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
        get_size(root, "n_embd", &cfg->n_embd, err))
        goto done;
    const json_t *mixers = json_object_get(root, "mixers");
    const json_t *dropout = json_object_get(root, "dropout");
    const char *pos = json_string_value(json_object_get(root, "pos"));
    if (!json_is_array(mixers) || json_array_size(mixers) != cfg->n_layer || cfg->n_layer > MAX_LAYERS) {
        err_set(err, "config: 'mixers' must list one mixer per layer");
        goto done;
    }
    for (size_t l = 0; l < cfg->n_layer; l++) {
        const char *name = json_string_value(json_array_get(mixers, l));
        if (!name || !(cfg->mixers[l] = mixer_find(name))) {
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
    if (mixer_settings_from_json(cfg, root, err)) goto done;
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
