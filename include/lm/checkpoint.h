/* Checkpoints and gradient dumps: what this project stores in safetensors
 * files (lm/safetensors.h).
 *
 * A checkpoint holds every weight under its name in docs/design.md, the
 * optimizer's state as optim.m.<name> / optim.v.<name> (two buffers of each
 * weight's shape: AdamW's moments, which the format was made for; Muon's
 * momentum in m), and metadata: format, config (JSON), step, data_rng,
 * tokenizer (hash), tokenizer_text and train (the run's options, JSON). */
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

/* An optimizer's state as a checkpoint stores it (lm/optim.h's
 * OptimizerState holds its buffers so): for each of the model's tensors,
 * n_names buffers of the tensor's shape, buffer k named names[k] (in the
 * file optim.<name>.<tensor>, "m" and "v": the format's two); buf[i *
 * n_names + k] is tensor i's buffer k, or NULL where the optimizer keeps
 * none. The format gives every tensor both buffers, as AdamW keeps them: so
 * that checkpoints written before an optimizer kept fewer (Muon's matrices
 * have no second moment) still load, and new ones are byte for byte what
 * they were, a buffer not kept is written as zeros (what the buffer it
 * replaced always held) and on reading checked like the others and dropped. */
typedef struct OptimBuffers {
    size_t n_names;
    const char *const *names;
    float *const *buf;
} OptimBuffers;

/* The checkpoint of model m, with the optimizer's state optim (NULL:
 * weights only), and s. */
int ckpt_save(const char *path, const Model *m, const OptimBuffers *optim, const CkptState *s, Error *err);
/* A checkpoint of weights and tokenizer alone: step 0, no optimizer state, no
 * run options (a model converted from elsewhere: every program reads it, and
 * bin/train starts a run from its weights with --init, not --resume). */
int ckpt_save_model(const char *path, const Model *m, const Tokenizer *tok, Error *err);
/* Builds the model from the checkpoint's config and loads its weights (the
 * optimizer's state, if it holds one, is not read). */
int ckpt_load(const char *path, Model *m, CkptState *s, Error *err);

/* A checkpoint read whole and checked (ckpt_open), for loading in two
 * parts: the model (ckpt_read_model), then, once the optimizer is known
 * (a resumed run's is in its run options, s->train) and its state allocated
 * for the model (lm/optim.h's optim_state_init), that state
 * (ckpt_read_optim). ckpt_close frees it. */
typedef struct CkptFile {
    StFile st;
    const char *path; /* the caller's, for messages */
} CkptFile;
int ckpt_open(CkptFile *f, const char *path, Error *err);
/* ckpt_load's work on an open checkpoint; with with_optim its file must be
 * large enough for the optimizer's state too. */
int ckpt_read_model(CkptFile *f, Model *m, CkptState *s, int with_optim, Error *err);
/* The optimizer's state into o's buffers, for the model that
 * ckpt_read_model read: a checkpoint of weights alone is refused. */
int ckpt_read_optim(CkptFile *f, const Model *m, const OptimBuffers *o, Error *err);
void ckpt_close(CkptFile *f);

/* The config in a checkpoint's header, reading only the header (no
 * checksum: that needs the whole file), and the file's size: for a memory
 * estimate before loading. */
int ckpt_read_config(const char *path, ModelConfig *cfg, size_t *file_bytes, Error *err);
/* Whether the checkpoint holds optimizer state, from its header alone:
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
