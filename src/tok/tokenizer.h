/* Tokenizers, as a registry of kinds (like the mixers, runtime/registry.h):
 *   char: id 0 is the unknown token; ids 1.. are the distinct Unicode code
 *         points of the training text, in code-point order (tok/char.c).
 *   byte: ids 0..255 are the bytes (tok/byte.c).
 *   bpe:  byte-level BPE: ids 0..255 the bytes, then one id per merge in
 *         merge order, then the special tokens (tok/bpe*.c).
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
#include <stdint.h>

#include "runtime/error.h"

typedef struct Tokenizer Tokenizer;

typedef struct TokenizerKind {
    const char *name;
    const char *unit; /* what one token is, for "bits per <unit>": char, byte or token */
    int unknown;      /* the id that stands for text outside the vocabulary (char: 0), or -1 for none */
    /* Parses the kind's lines after the "<kind> <vocab>" line; must fill the
     * token table (tokenizer_table_add) and leave vocab_size set. */
    int (*parse)(Tokenizer *tok, const char *body, size_t vocab, const char *origin, Error *err);
    /* Appends the kind's lines to the stb_ds string builder *sb. */
    void (*serialize)(const Tokenizer *tok, char **sb);
    /* Appends the ids of text to the stb_ds array *ids; never fails: every
     * byte string has an encoding (char: unknown characters become id 0). */
    void (*encode)(const Tokenizer *tok, const char *text, size_t len, uint32_t **ids);
    void (*free_impl)(Tokenizer *tok);
} TokenizerKind;

struct Tokenizer {
    const TokenizerKind *kind;
    size_t vocab_size;
    char *bytes;       /* stb_ds: the bytes of all tokens, concatenated */
    size_t *offsets;   /* stb_ds: token id's bytes are bytes[offsets[id] .. offsets[id+1]) */
    uint8_t *special;  /* stb_ds: 1 for special tokens (inserted, not text: 0 bytes of text) */
    void *impl;        /* the kind's own state */
    char hash[17];
};

const TokenizerKind *tokenizer_find(const char *name);
const char *tokenizer_names(void); /* "char, byte, bpe" for messages */

void tokenizer_free(Tokenizer *tok);

void tokenizer_encode(const Tokenizer *tok, const char *text, size_t len, uint32_t **ids);
/* Returns a malloc'd NUL-terminated string of the tokens' bytes. */
char *tokenizer_decode(const Tokenizer *tok, const uint32_t *ids, size_t n);
/* The bytes of one token (not NUL-terminated); ids outside the vocabulary
 * give U+FFFD. */
const char *tokenizer_token(const Tokenizer *tok, uint32_t id, size_t *len);
/* How many bytes of the original text the token stands for: its length, or 0
 * for a special token (a document separator was not in the text). */
size_t tokenizer_token_bytes(const Tokenizer *tok, uint32_t id);
const char *tokenizer_unit(const Tokenizer *tok);

/* The id of the special token whose bytes are `text`, or vocab_size if none. */
uint32_t tokenizer_special_id(const Tokenizer *tok, const char *text);
/* Where text[0..len) may be cut at or after `at` so that the parts encode
 * to the same ids as the whole: a character boundary, or for BPE a piece
 * boundary (len when its split pattern allows no safe cut). */
size_t tokenizer_safe_cut(const Tokenizer *tok, const char *text, size_t len, size_t at);

/* The saved text form (malloc'd) and its parser; `origin` names it in errors. */
char *tokenizer_to_text(const Tokenizer *tok);
int tokenizer_from_text(Tokenizer *tok, const char *text, const char *origin, Error *err);

int tokenizer_save(const Tokenizer *tok, const char *path, Error *err);
int tokenizer_load(Tokenizer *tok, const char *path, Error *err);

/* For kinds: appends token id = vocab_size with these bytes (vocab_size
 * grows by one); tokenizer_finish sets the hash once the table is complete. */
void tokenizer_table_add(Tokenizer *tok, const char *bytes, size_t len, int special);
void tokenizer_finish(Tokenizer *tok);

#endif
