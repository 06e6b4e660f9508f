/* Token files and batches.
 *
 * Token file (little-endian): 8-byte magic "LMTOKENS", u32 format version (1),
 * u32 token width in bytes (2 or 4), u64 vocabulary size, u64 token count,
 * then the tokens. A prepared data directory holds train.bin, val.bin,
 * test.bin and tokenizer.txt. */
#ifndef LM_DATA_H
#define LM_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "rng.h"
#include "tokenizer.h"

typedef struct TokenFile {
    uint32_t *tokens;
    size_t n;
    size_t vocab_size;
} TokenFile;

int tokens_write(const char *path, const uint32_t *tokens, size_t n, size_t vocab_size, Error *err);
/* Checks the header, the size and that every token is below the vocabulary. */
int tokens_read(const char *path, TokenFile *tf, Error *err);
void tokens_free(TokenFile *tf);

typedef struct Dataset {
    TokenFile train, val, test;
    Tokenizer tok;
} Dataset;

/* Opens DIR/{train,val,test}.bin and DIR/tokenizer.txt (need_test = 0 skips test). */
int dataset_open(Dataset *ds, const char *dir, int need_test, Error *err);
void dataset_free(Dataset *ds);

/* Random windows: inputs[b] = tokens[i .. i+T), targets[b] = tokens[i+1 .. i+T]. */
void batch_sample(const TokenFile *tf, Rng *rng, int32_t *inputs, int32_t *targets, size_t B, size_t T);

#endif
