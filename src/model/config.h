/* Model configuration: everything that fixes the parameter layout. */
#ifndef LM_CONFIG_H
#define LM_CONFIG_H

#include <stddef.h>

#include "runtime/error.h"

#define MAX_LAYERS 64
#define MAX_WINDOWS 32

/* learned: a trained wpe table added to the embeddings; sinusoidal: the fixed
 * sin/cos table added instead; rope: nothing added, attention rotates q and k
 * by position (src/nn/rope.h). */
typedef enum { POS_LEARNED = 0, POS_SINUSOIDAL = 1, POS_ROPE = 2 } PosKind;

struct Mixer;

typedef struct ModelConfig {
    size_t vocab_size;
    size_t block_size;
    size_t n_layer;
    size_t n_head;
    size_t n_embd;
    PosKind pos;
    const struct Mixer *mixers[MAX_LAYERS]; /* one per layer */
    size_t grassmann_rank;
    size_t n_windows;
    size_t windows[MAX_WINDOWS];
    float dropout;
    /* Not configuration but the model's runtime table for POS_ROPE, which
     * attention reads through the config it is handed: model_alloc points it
     * at the model's rope table (src/nn/rope.h); NULL otherwise. */
    const float *rope;
} ModelConfig;

/* The defaults of bin/train (vocab_size left 0: it comes from the data). */
void config_defaults(ModelConfig *cfg);

/* Checks every size and each layer's mixer; a one-line reason on failure. */
int config_validate(const ModelConfig *cfg, Error *err);

/* Fills cfg->mixers from "attention", "grassmann" or a comma list with one
 * entry per layer (cfg->n_layer must be set). */
int config_set_mixers(ModelConfig *cfg, const char *spec, Error *err);

/* The layers' mixers as "attention,grassmann,..." (the form --mixer takes), in buf. */
const char *config_mixer_list(const ModelConfig *cfg, char *buf, size_t len);

/* Parses "1,2,4" into cfg->windows. */
int config_set_windows(ModelConfig *cfg, const char *spec, Error *err);

/* "learned", "sinusoidal" or "rope"; pos_parse returns -1 for anything else. */
const char *pos_name(PosKind pos);
int pos_parse(const char *name, PosKind *out);

/* The `config` JSON of checkpoints and gradient dumps (docs/design.md, file formats).
 * config_to_json returns a malloc'd string. */
char *config_to_json(const ModelConfig *cfg);
int config_from_json(ModelConfig *cfg, const char *json, Error *err);

#endif
