/* The character tokenizer kind: id 0 is the unknown token, ids 1.. the
 * distinct code points of the training text in code-point order. */
#ifndef LM_TOK_CHAR_H
#define LM_TOK_CHAR_H

#include <stddef.h>

#include "lm/error.h"
#include "lm/table.h"

extern const TokenizerKind tokenizer_char;

int tokenizer_build_char(Tokenizer *tok, const char *text, size_t len, Error *err);
/* The same over several texts (documents), as if concatenated. */
int tokenizer_build_char_parts(Tokenizer *tok, const char *const *texts, const size_t *lens, size_t parts, Error *err);

#endif
