/* Hugging Face byte-level BPE tokenizers read into a "bpe" Tokenizer:
 * tokenizer.json (what the tokenizers library saves, and what bin/prepare
 * exports), or the older vocab.json + merges.txt pair (GPT-2's). Only what
 * our Bpe can be is accepted: ids 0..255 the 256 bytes (in any order), merge
 * k making id 256 + k, then the special tokens; a BPE model over the
 * byte-level spelling of bytes; a split regex PCRE2 compiles. Anything else
 * (WordPiece, Unigram, a prefix space, a normalizer that changes the text,
 * an added token that is not special, ...) is refused with one line saying
 * what. See docs/tokenizers.md. */
#ifndef LM_HF_IMPORT_H
#define LM_HF_IMPORT_H

#include <stddef.h>

#include "lm/error.h"
#include "lm/table.h"

/* Reads a Hugging Face byte-level BPE tokenizer: `path` is a tokenizer.json file, or a
 * directory holding tokenizer.json, or vocab.json + merges.txt. Fills tok (a "bpe"
 * Tokenizer, as tokenizer_from_bpe makes). One-line reason in err on failure. */
int tokenizer_import_hf(Tokenizer *tok, const char *path, Error *err);

/* The same from text in memory (origin names it in errors): a tokenizer.json,
 * or a vocab.json and a merges.txt (its "#version" first line optional). */
int tokenizer_import_hf_json(Tokenizer *tok, const char *json, size_t len, const char *origin, Error *err);
int tokenizer_import_hf_vocab_merges(Tokenizer *tok, const char *vocab_json, size_t vocab_len, const char *merges_txt,
                                     size_t merges_len, const char *origin, Error *err);

#endif
