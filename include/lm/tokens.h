/* Token files and datasets.
 *
 * Token file (little-endian): 8-byte magic "LMTOKENS", u32 format version (1
 * or 2), u32 token width in bytes (2 or 4), u64 vocabulary size, u64 token
 * count, then the tokens. Version 2 follows them with the tokens whose text
 * is not their bytes in the tokenizer's table (lm/table.h's TokenSpan: a
 * char tokenizer's unknown token): u64 count K, K u64 token indices in
 * increasing order, then K u32 byte counts. A file without such tokens is
 * written as version 1, as before. A prepared data directory holds
 * train.bin, val.bin, test.bin and tokenizer.txt. */
#ifndef LM_DATA_H
#define LM_DATA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lm/error.h"
#include "lm/rng.h"
#include "lm/tokenizer.h"

/* Tokens in their stored width, read through mmap: a file of any size costs
 * address space, not memory (the kernel pages it in and out). */
typedef struct TokenFile {
    const void *data; /* the tokens, `width` bytes each, little-endian (as the host) */
    size_t width;     /* 2 or 4 */
    size_t n;
    size_t vocab_size;
    void *map;        /* the whole mapped file, or NULL when data is the caller's */
    size_t map_len;
    void *owned;      /* data, malloc'd (tokens_from_text), or NULL */
    TokenSpan *spans; /* malloc'd: the tokens whose text is not their table bytes, by index; or NULL */
    size_t n_spans;
} TokenFile;

static inline uint32_t token_at(const TokenFile *tf, size_t i) {
    return tf->width == 2 ? ((const uint16_t *)tf->data)[i] : ((const uint32_t *)tf->data)[i];
}

/* Stored width: 2 bytes while the vocabulary fits in 16 bits, else 4. */
size_t tokens_width(size_t vocab_size);
int tokens_write(const char *path, const uint32_t *tokens, size_t n, size_t vocab_size, Error *err);
/* Maps the file; checks the header, the size and that every token is below
 * the vocabulary. */
int tokens_read(const char *path, TokenFile *tf, Error *err);
/* A malloc'd copy of tokens [from, from + n) as 32-bit ids, or NULL. */
uint32_t *tokens_copy_u32(const TokenFile *tf, size_t from, size_t n, Error *err);
/* text[0..len) encoded by tok into *tf, in memory (width 4), with the text
 * each token stands for as a prepared file records it; tokens_free frees it. */
int tokens_from_text(TokenFile *tf, const Tokenizer *tok, const char *text, size_t len, Error *err);
void tokens_free(TokenFile *tf);

/* The bytes of the text that token i (of tf, made by tok) stands for: its
 * length in tok's table (0 for a special token), or what the file recorded
 * for it (a char tokenizer's unknown token: the character it replaced). */
size_t tokens_token_bytes(const TokenFile *tf, const Tokenizer *tok, size_t i);
/* The same summed over tokens [from, from + n): the bytes of their text. */
size_t tokens_text_bytes(const TokenFile *tf, const Tokenizer *tok, size_t from, size_t n);

/* Writes a token file as it goes (to its temporary, lm/files.h, renamed on
 * close), so a corpus never has to be held in memory as ids. */
typedef struct TokenWriter {
    FILE *f;
    char path[4096], tmp[4096];
    size_t width, vocab_size, n;
    unsigned char *buf; /* stb_ds: encoded tokens not yet written */
    TokenSpan *spans;   /* stb_ds: the tokens whose text is not their table bytes */
} TokenWriter;

int token_writer_open(TokenWriter *w, const char *path, size_t vocab_size, Error *err);
int token_writer_add(TokenWriter *w, const uint32_t *ids, size_t n, Error *err);
/* Adds ids[0..n), tokenizer_encode's of text[0..len) by tok, and records
 * the text of those that stand for other bytes than their table's
 * (tokenizer_text_spans), so that bytes of text are counted from the text. */
int token_writer_add_text(TokenWriter *w, const Tokenizer *tok, const char *text, size_t len, const uint32_t *ids,
                          size_t n, Error *err);
/* Completes the header and renames into place. */
int token_writer_close(TokenWriter *w, Error *err);
/* Removes the temporary file (after an error). */
void token_writer_abort(TokenWriter *w);

typedef struct Dataset {
    TokenFile train, val, test;
    Tokenizer tok;
} Dataset;

/* Opens DIR/{train,val,test}.bin and DIR/tokenizer.txt (need_test = 0 skips test). */
int dataset_open(Dataset *ds, const char *dir, int need_test, Error *err);
void dataset_free(Dataset *ds);
/* The identity of the corpus a run trains on: a hash (16 hex digits) of
 * train.bin and val.bin, byte for byte. Not cryptographic. */
void dataset_hash(const Dataset *ds, char out[17]);

/* The files a program reads for a data argument: a prepared directory
 * (DIR/<split>.bin, with DIR/tokenizer.txt) or a token file (and the
 * tokenizer.txt beside it). Each path at most len bytes. */
void data_paths(const char *data, const char *split, char *tokens, char *tokenizer, size_t len);
/* That the tokens at tf_path were made by `model` (the tokenizer a model
 * was trained with): the tokenizer.txt at tok_path when there is one, by
 * hash; else the vocabulary size. */
int tokens_check_tokenizer(const TokenFile *tf, const char *tf_path, const char *tok_path, const Tokenizer *model,
                           Error *err);

#endif
