/* Byte-level BPE: pre-tokenization with PCRE2 (bpe_pretokenize.c), training
 * by incremental pair counting (bpe_train.c), encoding by merge rank
 * (bpe_encode.c) and the Hugging Face tokenizer.json export (bpe_export.c).
 * The tokenizer kind "bpe" (bpe.c) wraps a Bpe.
 *
 * Ids: 0..255 are the bytes, 256 + k is merge k (its bytes are the two
 * merged tokens' bytes), then the special tokens. A merge's rank is its
 * index, so the lowest-ranked pair is also the smallest id it makes.
 *
 * The bytes' ids are in byte order (id i is byte i) for every tokenizer
 * this project learns; an imported one may order them otherwise (GPT-2's
 * vocabulary puts them in its byte-to-unicode table's order: id 0 is '!'),
 * so the byte of each of ids 0..255 is a table (byte_of_id). */
#ifndef LM_BPE_H
#define LM_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "lm/error.h"
#include "lm/byte_table.h"
#include "lm/table.h"

/* ---- pre-tokenization --------------------------------------------------- */

/* The regex of a named split pattern ("gpt4", "gpt2"; "none" gives ""), or
 * NULL for an unknown name. */
const char *bpe_pattern_regex(const char *name);
const char *bpe_pattern_names(void); /* "gpt4, gpt2, none" */

typedef struct Pretokenizer {
    void *code;    /* pcre2_code_8, NULL for "none" (the whole text is one piece) */
    int cuttable;  /* the regex is gpt4's or gpt2's, so bpe_safe_cut applies */
} Pretokenizer;

/* Compiles regex with UTF and Unicode properties (invalid UTF-8 allowed in
 * the text: it never matches and becomes pieces of its own), then JIT. */
int pretok_init(Pretokenizer *p, const char *regex, Error *err);
void pretok_free(Pretokenizer *p);
typedef void (*PieceFn)(const char *piece, size_t len, void *ctx);
/* Calls fn for each piece of text in order: each match, and each run of text
 * between matches. The pieces concatenate to the text. */
void pretok_split(const Pretokenizer *p, const char *text, size_t len, PieceFn fn, void *ctx);

/* A position at or after `at` where text may be cut into parts that split
 * into the same pieces as the whole (for the gpt4 and gpt2 patterns): just
 * after a newline that is followed by an ASCII letter; len if none. */
size_t bpe_safe_cut(const char *text, size_t len, size_t at);
/* Safe cuts about `chunk` bytes apart: an stb_ds array 0, ..., len. */
size_t *bpe_safe_cuts(const char *text, size_t len, size_t chunk);

/* ---- the tokenizer ------------------------------------------------------ */

typedef struct BpeMerge {
    uint32_t left, right;
} BpeMerge;

typedef struct PairRank {
    uint64_t key;   /* left << 32 | right */
    uint32_t value; /* the merged token's id */
} PairRank;

typedef struct Bpe {
    char pattern[32];   /* name: gpt4, gpt2, none, or custom */
    char *regex;        /* malloc'd; "" for none */
    Pretokenizer pre;
    BpeMerge *merges;   /* stb_ds */
    char **specials;    /* stb_ds of malloc'd strings (no NUL inside) */
    PairRank *ranks;    /* stb_ds hash map (left, right) -> id */
    uint8_t byte_of_id[256];  /* the byte that id i < 256 stands for (identity unless imported) */
    uint32_t id_of_byte[256]; /* its inverse */
    struct BpeCache *caches; /* one per OpenMP thread: encoding mutates them, so one
                                Bpe must not encode from two callers at once */
    size_t n_caches;
} Bpe;

/* Sets pattern and regex and compiles it; the bytes' ids in byte order. A
 * regex holding a line break is refused (the saved form has it on one line). */
int bpe_init(Bpe *b, const char *pattern_name, const char *regex, Error *err);
/* Ids 0..255 stand for these bytes (byte_of_id[i] is id i's byte); -1 with
 * err set unless it is a permutation of the 256 bytes. */
int bpe_set_byte_order(Bpe *b, const uint8_t byte_of_id[256], Error *err);
/* 1 when id i is byte i for every byte (the order every learned Bpe has). */
int bpe_bytes_in_order(const Bpe *b);
/* After merges are set: builds the rank map. */
void bpe_index(Bpe *b);
void bpe_free(Bpe *b);

/* The tokenizer kind "bpe" (tok/bpe.c). */
extern const TokenizerKind tokenizer_bpe;

/* A "bpe" Tokenizer from b, which it takes over (b is left empty). */
int tokenizer_from_bpe(Tokenizer *tok, Bpe *b, Error *err);
/* The Bpe of a "bpe" tokenizer, NULL for other kinds. */
const Bpe *tokenizer_bpe_of(const Tokenizer *tok);

/* ---- training ----------------------------------------------------------- */

/* Unique pre-tokens of the training text with their counts. */
typedef struct BpeCounter {
    const Pretokenizer *pre;
    ByteTable words;
    uint64_t *counts; /* stb_ds, per word */
    uint64_t bytes;   /* text counted so far */
} BpeCounter;

void bpe_counter_init(BpeCounter *c, const Pretokenizer *pre);
/* Pre-tokenizes text (one document or a part of one that ends on a piece
 * boundary) and counts its pieces; OpenMP across chunks of large texts. */
void bpe_count(BpeCounter *c, const char *text, size_t len);
void bpe_counter_free(BpeCounter *c);

/* Learns up to n_merges merges into b->merges (replacing any); b has its
 * bytes in byte order (bpe_init's), as the tie rule below counts on. Each step
 * merges the pair of adjacent tokens with the highest count over all words
 * (each word weighted by its count); between equal counts the pair with the
 * smaller left id wins, then the smaller right id. A pair whose bytes are
 * already a token is never merged again (ids and bytes stay one-to-one, as
 * tiktoken's rank table needs). Returns the number learned: fewer than asked
 * when no pair is left to merge. */
size_t bpe_train(Bpe *b, const BpeCounter *c, size_t n_merges);

/* ---- encoding ----------------------------------------------------------- */

typedef struct BpeCache {
    ByteTable pieces;
    uint32_t *ids;      /* stb_ds: all cached ids */
    size_t *starts;     /* stb_ds, per piece + 1 */
} BpeCache;

/* Encodes one piece (no pre-tokenization) by merge rank: repeatedly merges
 * the adjacent pair of lowest rank, the leftmost among equals, as tiktoken
 * and Hugging Face tokenizers do. */
void bpe_encode_piece(const Bpe *b, const char *piece, size_t len, uint32_t **ids);
/* Pre-tokenizes and encodes text, appending to *ids; large texts are cut into
 * chunks at piece boundaries and encoded in parallel (same ids as serial). */
void bpe_encode(const Bpe *b, const char *text, size_t len, uint32_t **ids);

/* ---- export ------------------------------------------------------------- */

/* Byte-level BPE's spelling of bytes as characters (GPT-2's bytes_to_unicode
 * table, which Hugging Face's ByteLevel uses): the printable Latin-1 bytes
 * ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) as themselves, the other 68 as
 * U+0100 onwards, in byte order. code_point[b] is byte b's character. */
void bpe_byte_chars(uint32_t code_point[256]);

/* tokenizer.json in the Hugging Face tokenizers format: a Split pre-tokenizer
 * with our regex, ByteLevel without its own regex, a BPE model with our
 * vocabulary and merges, the specials as added tokens, a ByteLevel decoder.
 * Returns a malloc'd string, or NULL with err set. */
char *bpe_export_hf_json(const Bpe *b, Error *err);

#endif
