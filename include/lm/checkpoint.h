/* Checkpoints and gradient dumps: what this project stores in safetensors
 * files (lm/safetensors.h).
 *
 * A checkpoint holds every weight under its name in docs/design.md, the AdamW
 * moments as optim.m.<name> / optim.v.<name>, and metadata: format, config
 * (JSON), step, data_rng, tokenizer (hash), tokenizer_text and train (the run's options, JSON). */
#ifndef LM_CHECKPOINT_H
#define LM_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "lm/safetensors.h"
#include "lm/model.h"
#include "lm/error.h"
#include "lm/tokenizer.h"

typedef struct CkptState {
    size_t step;        /* optimizer steps taken */
    uint64_t data_rng;  /* batch-sampling RNG state: where the data stream is */
    char tokenizer[17]; /* tokenizer hash */
    char *tokenizer_text; /* the tokenizer itself (tokenizer_to_text), or NULL */
    char *train;        /* the run's options as JSON (malloc'd on load), or NULL */
} CkptState;

void ckpt_state_free(CkptState *s);
int ckpt_save(const char *path, const Model *m, const CkptState *s, Error *err);
/* A checkpoint of weights and tokenizer alone: step 0, no AdamW moments, no
 * run options (a model converted from elsewhere: every program reads it, and
 * bin/train starts a run from its weights with --init, not --resume). */
int ckpt_save_model(const char *path, const Model *m, const Tokenizer *tok, Error *err);
/* Builds the model from the checkpoint's config and loads its weights; with
 * with_optim also the AdamW moments (allocating gradients and moments): a
 * checkpoint of weights alone is then refused in one line naming --init. */
int ckpt_load(const char *path, Model *m, CkptState *s, int with_optim, Error *err);

/* The config in a checkpoint's header, reading only the header (no
 * checksum: that needs the whole file), and the file's size: for a memory
 * estimate before loading. */
int ckpt_read_config(const char *path, ModelConfig *cfg, size_t *file_bytes, Error *err);
/* Whether the checkpoint holds the AdamW moments, from its header alone:
 * bin/train writes them; a model that only has weights (bin/convert's) can
 * start a new run (bin/train --init) but not continue one. */
int ckpt_has_moments(const char *path, int *has, Error *err);
/* What a program that only reads a model needs besides the model itself:
 * activations for `batch` sequences of block_size tokens, and `bytes` of its
 * own (`what`, for the message), both known once the config is; `advice`
 * (or NULL) ends the message when that does not fit ("use a smaller --batch-size"). */
typedef struct ReadingNeeds {
    size_t batch;
    size_t bytes;
    const char *what;
    const char *advice;
} ReadingNeeds;

/* The run's options stored in a checkpoint (JSON; "{}" when it has none),
 * malloc'd into *train, reading only its header: bin/train --resume alone
 * takes its data from them before anything is loaded. */
int ckpt_read_train(const char *path, char **train, Error *err);
/* What a checkpoint's header says, reading only the header: its config,
 * step, tokenizer (hash and the tokenizer itself), the run's options
 * (JSON, "{}" when none), whether it holds optimizer moments, and the
 * file's size: bin/info. */
typedef struct CkptHeader {
    ModelConfig cfg;
    size_t step, file_bytes;
    char tokenizer[17]; /* "" when the header has none */
    Tokenizer tok;
    char *train;
    int moments;
} CkptHeader;
int ckpt_read_header(const char *path, CkptHeader *h, Error *err);
void ckpt_header_free(CkptHeader *h);
/* The tokenizer stored in a checkpoint, reading only its header (no
 * weights, no checksum): bin/prepare --tokenizer-from. */
int ckpt_read_tokenizer(const char *path, Tokenizer *tok, Error *err);
/* Loads the model (no optimizer state) and the tokenizer stored in the
 * checkpoint. */
int model_open(const char *path, Model *m, Tokenizer *tok, Error *err);
/* bin/eval, bin/sample and bin/inspect open their model through this: the
 * config from the header alone, then one line and -1 when the file (read
 * whole while loading), the weights and what needs(cfg, ctx) says do not fit
 * the memory available; else model_open. needs may be NULL (one sequence). */
int model_open_checked(const char *path, ReadingNeeds (*needs)(const ModelConfig *cfg, const void *ctx),
                       const void *ctx, Model *m, Tokenizer *tok, Error *err);

/* The gradient dump of bin/train --dump-grads. */
int grads_dump(const char *path, const Model *m, Error *err);

#endif
