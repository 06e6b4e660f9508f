/* Hugging Face interchange (src/hf/): any saved tokenizer, ours or Hugging
 * Face's, and GPT-2 in Hugging Face's layout, to and from our model.
 *
 * A directory as save_pretrained writes it for GPT2LMHeadModel holds
 * config.json, the weights in model.safetensors (or shards listed by
 * model.safetensors.index.json) and the tokenizer (tokenizer.json, or
 * vocab.json + merges.txt). GPT-2 is our attention model with learned
 * positions, pre-LayerNorm blocks (eps 1e-5), the tanh GELU, the head tied to
 * the token embedding and attention scaled by 1/sqrt(head size), so its
 * weights map one to one onto ours:
 *
 *   wte.weight [V, C], wpe.weight [P, C]          wte, wpe
 *   h.{l}.ln_1.weight / .bias [C]                 h.{l}.ln1.weight / .bias
 *   h.{l}.attn.c_attn.weight [C, 3C], .bias       h.{l}.attn.qkv.weight [3C, C], .bias (q, k, v: the same order)
 *   h.{l}.attn.c_proj.weight [C, C], .bias        h.{l}.attn.proj.weight, .bias
 *   h.{l}.ln_2.weight / .bias [C]                 h.{l}.ln2.weight / .bias
 *   h.{l}.mlp.c_fc.weight [C, 4C], .bias          h.{l}.mlp.fc.weight [4C, C], .bias
 *   h.{l}.mlp.c_proj.weight [4C, C], .bias        h.{l}.mlp.proj.weight [C, 4C], .bias
 *   ln_f.weight / .bias [C]                       ln_f.weight / .bias
 *
 * Hugging Face's names may carry a "transformer." prefix (GPT2LMHeadModel's
 * do, GPT2Model's do not); its matrices inside the blocks are Conv1D,
 * stored [in, out], which we store [out, in]; lm_head.weight, when present,
 * must equal wte.weight; the causal-mask buffers h.{l}.attn.bias and
 * h.{l}.attn.masked_bias of older files are ignored. See docs/gpt2.md. */
#ifndef LM_HF_H
#define LM_HF_H

#include <stddef.h>

#include "lm/config.h"
#include "lm/tokenizer.h"
#include "lm/model.h"
#include "lm/error.h"
#include "lm/table.h"

/* A config.json's GPT-2 (text of len bytes; origin names it in errors):
 * the sizes into cfg (a model of attention layers, learned positions,
 * pre-norm, no dropout), and whether the head is tied (tie_word_embeddings).
 * What our model cannot be (another model_type or activation, a LayerNorm eps
 * other than 1e-5, n_inner other than 4 n_embd, attention scaled otherwise,
 * cross-attention) is refused in one line naming it. */
int hf_gpt2_config_parse(const char *text, size_t len, const char *origin, ModelConfig *cfg, int *tied, Error *err);

/* What hf_gpt2_import read, for its report. */
typedef struct HfGpt2Import {
    char dtypes[32]; /* the weights' dtypes: "F32", "F16", "BF16", or several joined by '+' */
    size_t files;    /* safetensors files read (more than one: shards) */
    int lm_head;     /* lm_head.weight was there (and equal to wte.weight) */
} HfGpt2Import;

/* Reads the model and its tokenizer from a save_pretrained directory. The
 * tokenizer must have config.json's vocab_size tokens. Before allocating
 * the weights it checks that they, the largest safetensors file (read
 * whole) and a checkpoint's write buffer fit in memory. */
int hf_gpt2_import(const char *dir, Model *m, Tokenizer *tok, HfGpt2Import *info, Error *err);

/* 0 when the model and tokenizer can be written as GPT-2 (attention in every
 * layer, learned positions, pre-norm, a byte-level BPE tokenizer); else -1
 * and one line naming what GPT-2 cannot express. */
int hf_gpt2_exportable(const ModelConfig *cfg, const Tokenizer *tok, Error *err);

/* Writes dir as save_pretrained would for GPT2LMHeadModel: config.json,
 * model.safetensors (F32, "transformer." names, Conv1D layout, the head
 * tied), tokenizer.json and tokenizer_config.json. dir must not exist or be
 * empty; the files are written into a fresh dir.tmp.<pid>, which is renamed
 * to dir once all are complete, so a failure leaves no dir behind. */
int hf_gpt2_export(const Model *m, const Tokenizer *tok, const char *dir, Error *err);

/* A tokenizer from wherever one is kept: a tokenizer.txt, a tokenizer.json
 * (bin/prepare's or Hugging Face's byte-level BPE: src/hf/tokenizer_import.h), or a
 * directory holding tokenizer.txt (a prepared data directory: it wins over
 * a tokenizer.json beside it), tokenizer.json, or vocab.json + merges.txt. */
int tokenizer_open(Tokenizer *tok, const char *path, Error *err);

#endif
