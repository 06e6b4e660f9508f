/* The byte tokenizer kind: ids 0..255 are the bytes. */
#ifndef LM_TOK_BYTE_H
#define LM_TOK_BYTE_H

#include "lm/table.h"

extern const TokenizerKind tokenizer_byte;

void tokenizer_init_byte(Tokenizer *tok);

#endif
