/* Model configuration: everything that fixes the parameter layout. */
#ifndef LM_CONFIG_H
#define LM_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "lm/error.h"
#include "lm/mixer.h"

/* Upper bounds that catch typos (an extra zero or three) before they turn
 * into a multi-gigabyte allocation; bin/train's options are bounded by them. */
#define MAX_LAYERS 64
_Static_assert(MAX_LAYERS <= MIXER_MAX_LAYERS, "a mixer's settings provide for every layer");
#define MAX_VOCAB (1u << 24)
#define MAX_BLOCK 16384
#define MAX_EMBD 8192
#define MAX_HEADS 256
/* The most optimizer steps a run takes (--max-iters), so the largest step a checkpoint may hold. */
#define MAX_STEPS 100000000

/* learned: a trained wpe table added to the embeddings; sinusoidal: the fixed
 * sin/cos table added instead; rope: nothing added, attention rotates q and k
 * by position (src/nn/rope.h). */
typedef enum { POS_LEARNED = 0, POS_SINUSOIDAL = 1, POS_ROPE = 2 } PosKind;

/* Where a block's LayerNorms sit. pre (GPT-2): h += mixer(LN1(h)),
 * h += MLP(LN2(h)). post (the original Transformer, the Grassmann paper):
 * h = LN1(h + mixer(h)), h = LN2(h + MLP(h)). Both end with LN_f before the
 * head (see docs/design.md). */
typedef enum { NORM_PRE = 0, NORM_POST = 1 } NormKind;

/* The normalisation every block norm and LN_f computes: LayerNorm (GPT-2:
 * centre, scale, gain and bias) or RMSNorm (scale by the root mean square,
 * gain, no bias; the modern recipe's). The Grassmann mixer's own LayerNorm
 * is part of that layer and stays LayerNorm. */
typedef enum { NORM_TYPE_LAYERNORM = 0, NORM_TYPE_RMSNORM = 1 } NormType;

/* The MLP's activation: GELU (tanh form, GPT-2) or ReLU^2 = max(x, 0)^2. */
typedef enum { MLP_ACT_GELU = 0, MLP_ACT_RELU2 = 1 } MlpActKind;

/* The precision of a run's matrix products (bin/train --precision): fp32, or
 * bf16 operands with fp32 accumulation (lm/matmul.h's MatmulBf16). Not part of
 * the config JSON: the weights are fp32 either way. */
typedef enum { PRECISION_FP32 = 0, PRECISION_BF16 = 1 } Precision;

typedef struct ModelConfig {
    size_t vocab_size;
    size_t block_size;
    size_t n_layer;
    size_t n_head;
    size_t n_embd;
    PosKind pos;
    /* Each layer's token-mixing layer: its entry in the mixer registry
     * (lm/mixer.h), written in the JSON by its name. */
    const Mixer *mixers[MAX_LAYERS];
    NormKind norm;
    /* Every registered mixer's settings, by its place in the registry
     * (mixer_index; config_mixer_settings), each as that mixer defines
     * them, whether or not a layer uses it. */
    MixerSettings mixer_settings[MAX_MIXERS];
    float dropout;
    /* The modern recipe's switches (docs/design.md, the recipe); the zero
     * value of each is GPT-2's, which a config without them (every
     * checkpoint written before them) has. qk_norm, untied_head and
     * zero_init are 0 or 1 (size_t: bin/train's numeric option table). */
    NormType norm_type;
    MlpActKind mlp_act;
    size_t qk_norm;     /* attention: per-head RMSNorm (no gain) of q and k before the scores */
    size_t untied_head; /* a head of its own, lm_head (V, C), instead of wte */
    size_t zero_init;   /* every branch's last map (and lm_head) starts at zero */
    float logit_softcap; /* > 0: logits = c tanh(z / c) before the loss; 0: off */
} ModelConfig;

/* The defaults of bin/train (vocab_size left 0: it comes from the data). */
void config_defaults(ModelConfig *cfg);

/* Checks every size and choice; a one-line reason on failure. What each
 * mixer asks of its layer the model checks (model_check_config). */
int config_validate(const ModelConfig *cfg, Error *err);

/* Fills cfg->mixers from a registered mixer's name ("attention") or a comma
 * list with one entry per layer (cfg->n_layer must be set). */
int config_set_mixers(ModelConfig *cfg, const char *spec, Error *err);

/* The layers' mixers as "attention,grassmann,..." (the form --mixer takes), in buf. */
const char *config_mixer_list(const ModelConfig *cfg, char *buf, size_t len);

/* Mixer mx's settings block in cfg (MixerSettings: the mixer's own struct). */
void *config_mixer_settings(ModelConfig *cfg, const Mixer *mx);
const void *config_mixer_settings_of(const ModelConfig *cfg, const Mixer *mx);

/* A mixer's option by its bin/train name ("grassmann-rank",
 * "grassmann-windows"), and its mixer in *owner (or NULL); NULL if no
 * registered mixer has it. */
const OptionRow *config_find_option(const char *name, const Mixer **owner);
/* Sets a mixer's option from text as bin/train takes it ("6", "1,2;4":
 * a list per layer needs cfg->n_layer set); -1 with err for an unknown
 * option or a bad value. */
int config_set_option(ModelConfig *cfg, const char *name, const char *value, Error *err);
/* A mixer's option's value as config_set_option takes it, in buf ("" for an unknown one). */
const char *config_option_text(const ModelConfig *cfg, const char *name, char *buf, size_t len);

/* "pre" or "post"; norm_parse returns -1 for anything else. */
const char *norm_name(NormKind norm);
int norm_parse(const char *name, NormKind *out);

/* "layernorm" or "rmsnorm"; norm_type_parse returns -1 for anything else. */
const char *norm_type_name(NormType t);
int norm_type_parse(const char *name, NormType *out);

/* "gelu" or "relu2"; mlp_act_parse returns -1 for anything else. */
const char *mlp_act_name(MlpActKind a);
int mlp_act_parse(const char *name, MlpActKind *out);

/* Whether any of the recipe's switches is on (the config is not GPT-2's recipe). */
int config_has_recipe_switch(const ModelConfig *cfg);
/* The switches that are on, "rmsnorm, relu2, qk-norm, untied head,
 * zero-init, softcap 15" (those of them that are), in buf; "" for none. */
const char *config_recipe_list(const ModelConfig *cfg, char *buf, size_t len);

/* "fp32" or "bf16"; precision_parse returns -1 for anything else. */
const char *precision_name(Precision p);
int precision_parse(const char *name, Precision *out);

/* "learned", "sinusoidal" or "rope"; pos_parse returns -1 for anything else. */
const char *pos_name(PosKind pos);
int pos_parse(const char *name, PosKind *out);

/* The `config` JSON of checkpoints and gradient dumps (docs/design.md, file formats).
 * config_to_json returns a malloc'd string. */
char *config_to_json(const ModelConfig *cfg);
int config_from_json(ModelConfig *cfg, const char *json, Error *err);

#endif
