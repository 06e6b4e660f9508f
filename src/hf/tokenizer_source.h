/* Between the files that read Hugging Face's tokenizers: what both forms
 * come down to (HfSource), read by tokenizer_import.c and checked and built
 * into our Bpe by tokenizer_layout.c. */
#ifndef LM_HF_TOKENIZER_SOURCE_H
#define LM_HF_TOKENIZER_SOURCE_H

#include <jansson.h>
#include <stddef.h>

#include "lm/error.h"
#include "lm/table.h"

#define MAX_MERGES (1u << 24) /* as many as the saved form reads back (tok/bpe.c) */
#define MAX_SPECIALS 65536
/* The longest token read, in bytes: far above any real vocabulary's
 * (GPT-2's longest is 128), far below what would slow the checks. */
#define TOKEN_BYTES_MAX 65536u
#define N_BYTE_CHARS 0x144 /* the byte-level spelling uses code points below this */

typedef struct HfSource {
    const char *origin;
    const json_t *vocab;  /* object: spelled token -> id */
    const json_t *added;  /* array of added tokens ({id, content, special}), or NULL */
    char *parts;          /* stb_ds: each merge's two spellings, NUL-terminated, one after another */
    size_t *part_at;      /* stb_ds: offsets into parts, two per merge */
    char pattern[32];     /* the split pattern's name: gpt2, gpt4, none or custom */
    const char *regex;
} HfSource;

/* err's message after "'origin': " and `what`. */
int hf_prefix_error(Error *err, const char *origin, const char *what);
/* A spelling for an error line: at most 40 bytes, control characters as '?'. */
const char *hf_shown(const char *s, char buf[48]);
/* A JSON object's boolean field: 1 or 0, absent when missing, -1 if not a boolean. */
int hf_flag(const json_t *o, const char *field, int absent);
/* Checks that the vocabulary is laid out as our Bpe's (bytes, then one token
 * per merge in merge order, then the specials) and builds the tokenizer. */
int hf_tokenizer_build(Tokenizer *tok, const HfSource *s, Error *err);

#endif
