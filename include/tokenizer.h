/* Character and byte tokenizers.
 *   char: id 0 is the unknown token; ids 1.. are the distinct Unicode code
 *         points of the training text, in code-point order.
 *   byte: ids 0..255 are the bytes.
 * Saved as text beside the token files; its hash (FNV-1a of that text, 16 hex
 * digits) identifies it in every checkpoint. */
#ifndef LM_TOKENIZER_H
#define LM_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

typedef enum { TOK_CHAR = 0, TOK_BYTE = 1 } TokenizerKind;

typedef struct CodepointEntry {
    uint32_t key;   /* code point */
    uint32_t value; /* token id */
} CodepointEntry;

typedef struct Tokenizer {
    TokenizerKind kind;
    size_t vocab_size;
    uint32_t *codepoints;  /* char: id -> code point (stb_ds array; [0] unused) */
    CodepointEntry *index; /* char: code point -> id (stb_ds hash map) */
    char hash[17];
} Tokenizer;

int tokenizer_build_char(Tokenizer *tok, const char *text, size_t len, Error *err);
void tokenizer_init_byte(Tokenizer *tok);
void tokenizer_free(Tokenizer *tok);

/* ids: stb_ds array, appended to. Invalid UTF-8 and unseen characters map to
 * the unknown token (char). */
void tokenizer_encode(const Tokenizer *tok, const char *text, size_t len, uint32_t **ids);
/* Returns a malloc'd NUL-terminated string; unknown ids decode to U+FFFD. */
char *tokenizer_decode(const Tokenizer *tok, const uint32_t *ids, size_t n);
/* One token's text into buf (at least 5 bytes); returns its length. */
size_t tokenizer_token_text(const Tokenizer *tok, uint32_t id, char *buf);
/* Units for bits-per-unit: "char" or "byte". */
const char *tokenizer_unit(const Tokenizer *tok);

/* The saved text form (malloc'd) and its parser; `origin` names it in errors. */
char *tokenizer_to_text(const Tokenizer *tok);
int tokenizer_from_text(Tokenizer *tok, const char *text, const char *origin, Error *err);

int tokenizer_save(const Tokenizer *tok, const char *path, Error *err);
int tokenizer_load(Tokenizer *tok, const char *path, Error *err);

#endif
