/* Tokenizers, as a registry of kinds (like the mixers, runtime/registry.h):
 *   char: id 0 is the unknown token; ids 1.. are the distinct Unicode code
 *         points of the training text, in code-point order (tok/char.c).
 *   byte: ids 0..255 are the bytes (tok/byte.c).
 *   bpe:  byte-level BPE: ids 0..255 the bytes (in byte order unless
 *         imported), then one id per merge in merge order, then the special
 *         tokens (tok/bpe*.c; Hugging Face's read by src/hf/tokenizer_import.c).
 * Saved as text beside the token files ("lm-tokenizer 1", "<kind> <vocab>",
 * then the kind's own lines); its hash (FNV-1a of that text, 16 hex digits)
 * identifies it in every checkpoint.
 *
 * Every kind fills one table, the bytes of each token, so decoding, token
 * lengths and bits per byte are the same code for all of them.
 *
 * Adding a kind: write src/tok/<name>.c (and its header) exporting a `const
 * TokenizerKind`, and list it in the registry in src/tok/tokenizer.c, the
 * one place that names the kinds. */
#ifndef LM_TOKENIZER_H
#define LM_TOKENIZER_H

#include <stddef.h>

#include "lm/error.h"
#include "lm/table.h"

const TokenizerKind *tokenizer_find(const char *name);
const char *tokenizer_names(void); /* "char, byte, bpe" for messages */

/* Reads a saved tokenizer (tokenizer_to_text's form) of any kind; `origin`
 * names it in errors. */
int tokenizer_from_text(Tokenizer *tok, const char *text, const char *origin, Error *err);
int tokenizer_load(Tokenizer *tok, const char *path, Error *err);
/* Where text[0..len) may be cut at or after `at` so that the parts encode
 * to the same ids as the whole: a character boundary, or for BPE a piece
 * boundary (len when its split pattern allows no safe cut). */
size_t tokenizer_safe_cut(const Tokenizer *tok, const char *text, size_t len, size_t at);

#endif
