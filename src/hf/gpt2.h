/* Between the files of GPT-2's interchange (lm/hf.h): gpt2_config.c (the
 * tensor names and config.json), gpt2_weights.c (the import) and
 * gpt2_export.c. */
#ifndef LM_HF_GPT2_H
#define LM_HF_GPT2_H

#include <stddef.h>

#include "lm/error.h"

#define PREFIX "transformer."
/* config.json, model.safetensors.index.json: a few kB for GPT-2 (the index
 * lists every tensor); anything far larger is not one. */
#define SMALL_JSON_MAX (64u << 20)

/* Our tensor's Hugging Face name (without PREFIX) into out, and whether it
 * is a Conv1D matrix; -1 for a tensor GPT-2 does not have. */
int hf_name(const char *ours, char *out, size_t len, int *conv1d);
/* A small JSON file (config.json, the shard index) as text. */
char *read_small_json(const char *path, size_t *len, Error *err);

#endif
