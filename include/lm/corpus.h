/* A text corpus on its way to token files (bin/prepare): the input files,
 * read in order as one stream of documents; its contiguous split into
 * train, val and test (cut on character boundaries), or splits given
 * explicitly, file by file (Wikitext's wiki.train/valid/test); the tokenizer learned
 * from the training split alone; and each split encoded into DIR/<split>.bin
 * as it streams past, block by block, so no split is ever held as ids.
 *
 * Files are mapped, not read: a corpus larger than memory costs address
 * space, and pages already encoded are released. */
#ifndef LM_CORPUS_H
#define LM_CORPUS_H

#include <stddef.h>

#include "lm/error.h"
#include "lm/tokenizer.h"

enum { SPLIT_TRAIN, SPLIT_VAL, SPLIT_TEST, N_SPLITS };

typedef struct CorpusDoc {
    const char *path;
    const char *text; /* mapped, NULL when empty */
    size_t len;
} CorpusDoc;

/* A part of a document that belongs to one split. */
typedef struct CorpusSegment {
    size_t doc, from, to;
} CorpusSegment;

typedef struct Corpus {
    char **paths; /* stb_ds */
    int *path_split; /* stb_ds, beside paths when the splits are explicit (corpus_add_split_input), else NULL */
    CorpusDoc *docs;
    size_t n_docs, total; /* total: bytes of every document */
    CorpusSegment *splits[N_SPLITS]; /* stb_ds arrays */
} Corpus;

/* Called as work goes on: `done` of `total` bytes of the phase, and once
 * more with final set at the end. ctx is the caller's. */
typedef void (*CorpusProgress)(void *ctx, const char *phase, size_t done, size_t total, int final);

/* A text file, or a directory's regular files sorted by name (dotfiles
 * skipped), appended to the inputs. */
int corpus_add_input(Corpus *c, const char *path, Error *err);
/* Explicit splits: a text file, or a directory's files as above, appended
 * to split s's inputs, whole. A file of 0 bytes, or a directory whose files
 * hold none, is an error ("'PATH' is empty"). A corpus is built either with
 * corpus_add_input and corpus_split or with this alone, never both. */
int corpus_add_split_input(Corpus *c, int split, const char *path, Error *err);
/* Maps every input; a corpus without a byte of text is an error. With
 * explicit splits each document becomes its split's segment, and an empty
 * train or val split is an error (test may be empty: no test.bin). */
int corpus_open(Corpus *c, Error *err);
/* The contiguous split of corpus_add_input's stream: train first, then
 * val_frac of the bytes, then test_frac. */
void corpus_split(Corpus *c, double val_frac, double test_frac);
size_t corpus_split_bytes(const Corpus *c, int split);
void corpus_free(Corpus *c);

/* What bin/prepare asks for: a tokenizer kind, and for BPE its size, split
 * pattern and special tokens (the document separator among them). */
typedef struct TokenizerRecipe {
    const char *kind;           /* char, byte, bpe */
    size_t vocab_size;          /* bpe: 256 bytes + merges + specials */
    const char *pattern;        /* bpe: a split pattern's name (lm/bpe.h) */
    const char *const *specials; /* bpe: n_specials special tokens */
    size_t n_specials;
    int fit_vocab;              /* bpe: a training split with fewer merges than vocab_size
                                 * asks for gives a smaller vocabulary (all its merges)
                                 * instead of an error */
} TokenizerRecipe;

typedef struct BpeStats {
    size_t merges, bytes, pieces; /* learned, from that many bytes of text in that many distinct pieces */
    double seconds;
} BpeStats;

/* The tokenizer, learned from the training split only (byte needs none).
 * stats (may be NULL) is filled for BPE. */
int corpus_tokenizer(const Corpus *c, const TokenizerRecipe *r, Tokenizer *tok, CorpusProgress progress, void *ctx,
                     BpeStats *stats, Error *err);

/* Encodes each split into DIR/train.bin, val.bin and, unless skip_test,
 * test.bin; between documents the special token `separator` (NULL: none):
 * with explicit splits, between the documents of each split, never before
 * a split's first.
 * counts[s] gets each split's tokens. A split of fewer than 2 tokens is an
 * error; a failed split leaves no file behind. */
int corpus_encode(const Corpus *c, const Tokenizer *tok, const char *separator, const char *dir, int skip_test,
                  size_t counts[N_SPLITS], CorpusProgress progress, void *ctx, Error *err);

#endif
