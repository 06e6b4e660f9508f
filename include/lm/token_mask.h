/* Marked positions of a token file: which targets bin/eval scores.
 *
 * A mask file sits next to its token file (val.bin -> val.mask) and holds one
 * byte per token, 1 = score this token as a prediction target, 0 = context
 * only. Little-endian: 8-byte magic "LMMASK\0\0", u32 version (1), u32 zero,
 * u64 token count, then the bytes. Kept apart from the token file so that
 * format stays the tokenizer's business. */
#ifndef LM_TOKEN_MASK_H
#define LM_TOKEN_MASK_H

#include <stddef.h>
#include <stdint.h>

#include "lm/error.h"

typedef struct TokenMask {
    uint8_t *marked; /* n bytes, each 0 or 1 */
    size_t n;
} TokenMask;

int mask_write(const char *path, const uint8_t *marked, size_t n, Error *err);
/* Checks the header, the size, and that every byte is 0 or 1. */
int mask_read(const char *path, TokenMask *mask, Error *err);
void mask_free(TokenMask *mask);
/* The mask path beside a token file: "x/val.bin" -> "x/val.mask" (".mask"
 * appended when the name does not end in ".bin"). */
void mask_path_for(const char *token_path, char *out, size_t len);

/* The mask of a token file of n tokens: `given` (it must exist) or, when
 * NULL, the file beside it (mask_path_for) if there is one; *path gets the
 * path looked at. mask->marked stays NULL when there is none. Its entries
 * must be the token file's. */
int mask_open_for(TokenMask *mask, const char *given, const char *token_path, size_t n, char *path, size_t len,
                  Error *err);

#endif
