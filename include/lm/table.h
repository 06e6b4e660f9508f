/* The tokenizer itself, whatever its kind: every kind fills one table of
 * token bytes, so decoding, token lengths, bits per byte and the saved text
 * form (and its hash, the tokenizer's identity) are the same code for all.
 * The kinds (tok/char.c, tok/byte.c, tok/bpe.c) build on this; finding a
 * kind by name and reading a saved tokenizer are lm/tokenizer.h. */
#ifndef LM_TOK_TABLE_H
#define LM_TOK_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "lm/error.h"

/* The first line of a saved tokenizer. */
#define TOKENIZER_MAGIC "lm-tokenizer 1"

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
    /* For a kind with an unknown token (NULL for the others): how many bytes
     * at the start of text (len > 0) the unknown token that encode puts
     * there stands for (char: the character outside the vocabulary, or one
     * byte of invalid UTF-8). */
    size_t (*unknown_span)(const char *text, size_t len);
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

void tokenizer_free(Tokenizer *tok);

void tokenizer_encode(const Tokenizer *tok, const char *text, size_t len, uint32_t **ids);
/* Returns a malloc'd NUL-terminated string of the tokens' bytes. */
char *tokenizer_decode(const Tokenizer *tok, const uint32_t *ids, size_t n);
/* The bytes of one token (not NUL-terminated); ids outside the vocabulary
 * give U+FFFD. */
const char *tokenizer_token(const Tokenizer *tok, uint32_t id, size_t *len);
/* How many bytes of the original text the token stands for: its length, or 0
 * for a special token (a document separator was not in the text). The
 * unknown token's length is its U+FFFD's, not the text's it replaced:
 * tokenizer_text_spans records that. */
size_t tokenizer_token_bytes(const Tokenizer *tok, uint32_t id);

/* A token whose text is not its bytes in the table: its index in a token
 * sequence and the bytes of text it stands for. */
typedef struct TokenSpan {
    uint64_t at;
    uint32_t bytes;
} TokenSpan;
/* ids[0..n) are tokenizer_encode's of text[0..len): appends to the stb_ds
 * array *spans, for each of them that stands for other bytes of text than
 * tokenizer_token_bytes says (a char tokenizer's unknown token), its index
 * plus base and those bytes. Kinds without an unknown token append none. */
void tokenizer_text_spans(const Tokenizer *tok, const char *text, size_t len, const uint32_t *ids, size_t n,
                          uint64_t base, TokenSpan **spans);
const char *tokenizer_unit(const Tokenizer *tok);

/* The id of the special token whose bytes are `text`, or vocab_size if none. */
uint32_t tokenizer_special_id(const Tokenizer *tok, const char *text);

int tokenizer_save(const Tokenizer *tok, const char *path, Error *err);

/* For kinds: appends token id = vocab_size with these bytes (vocab_size
 * grows by one); tokenizer_finish sets the hash once the table is complete. */
void tokenizer_table_add(Tokenizer *tok, const char *bytes, size_t len, int special);
void tokenizer_finish(Tokenizer *tok);

/* The saved text form (malloc'd): "lm-tokenizer 1", "<kind> <vocab>", then
 * the kind's own lines (tokenizer_from_text reads it back). */
char *tokenizer_to_text(const Tokenizer *tok);

#endif
