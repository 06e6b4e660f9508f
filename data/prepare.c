/* bin/prepare: text files -> train/val/test token files and the tokenizer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lm/cli.h"
#include "lm/utf8.h"
#include "lm/options.h"
#include "lm/corpus.h"
#include "lm/checkpoint.h"
#include "lm/ds.h"
#include "lm/files.h"
#include "lm/hf.h"
#include "lm/bpe.h"

static const CliProgram program = {
    .name = "prepare",
    .usage = "bin/prepare --input FILE|DIR [--input ...] --out DIR [options]\n"
             "bin/prepare --train FILE|DIR --val FILE|DIR [--test FILE|DIR] --out DIR [options]",
    .about = "Tokenizes text into DIR/train.bin, DIR/val.bin, DIR/test.bin and\n"
             "DIR/tokenizer.txt. The inputs are read in order as one stream of documents\n"
             "(a directory: its files, by name); the split is contiguous over that stream:\n"
             "train first, then val, then test. Or the splits are given file by file\n"
             "(--train, --val, --test; e.g. Wikitext's wiki.train/valid/test.tokens), each\n"
             "used whole. The tokenizer learns from train only, or is an existing one\n"
             "(--tokenizer-from: a model's, another data directory's, or a Hugging Face\n"
             "byte-level BPE such as GPT-2's).\n",
    .after = "For bpe it also writes DIR/tokenizer.json (Hugging Face tokenizers format).\n",
    .column = 27,
};

#define PROGRESS_MIN (32u << 20) /* inputs smaller than this print no progress */

/* Progress on stderr, at most once a second: a line that rewrites itself on a terminal. */
typedef struct Progress {
    const char *phase;
    double start, last;
} Progress;

static void show_progress(void *ctx, const char *phase, size_t done, size_t total, int final) {
    Progress *p = ctx;
    double now = cli_now();
    if (p->phase != phase) *p = (Progress){phase, now, now};
    if (total < PROGRESS_MIN || (!final && now - p->last < 1.0)) return;
    p->last = now;
    double rate = (double)done / (now - p->start + 1e-9);
    char eta[32];
    cli_duration(rate > 0 ? (double)(total - done) / rate : 0.0, eta, sizeof eta);
    int tty = isatty(2);
    fprintf(stderr, "%sprepare: %s %.1f/%.1f MB, %.1f MB/s, ETA %s%s", tty ? "\r" : "", phase, done / 1e6,
            total / 1e6, rate / 1e6, final ? "0s" : eta, tty && !final ? "   " : "\n");
    fflush(stderr);
}

static int add_input(void *corpus, const char *path, Error *err) { return corpus_add_input(corpus, path, err); }

/* --train, --val, --test: the error names the option, its message the path. */
static int add_split(Corpus *c, int split, const char *option, const char *path, Error *err) {
    if (corpus_add_split_input(c, split, path, err) == 0) return 0;
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", err->msg);
    return err_set(err, "%s: %s", option, why);
}
static int add_train(void *c, const char *path, Error *err) { return add_split(c, SPLIT_TRAIN, "--train", path, err); }
static int add_val(void *c, const char *path, Error *err) { return add_split(c, SPLIT_VAL, "--val", path, err); }
static int add_test(void *c, const char *path, Error *err) { return add_split(c, SPLIT_TEST, "--test", path, err); }

static int add_special(void *specials, const char *text, Error *err) {
    if (!text[0]) return err_set(err, "--special needs a non-empty text");
    arrput(*(const char ***)specials, text);
    return 0;
}

static int set_separator(void *separator, const char *text, Error *err) {
    if (!text[0]) return err_set(err, "--doc-separator needs a non-empty text");
    *(const char **)separator = text;
    return 0;
}

/* The tokenizer recipe's own checks, after the options are read. */
static int check_recipe(const TokenizerRecipe *r, int bpe_options, const char *separator, int any_special,
                        Error *err) {
    if (!tokenizer_find(r->kind)) return err_set(err, "unknown tokenizer '%s' (%s)", r->kind, tokenizer_names());
    int is_bpe = strcmp(r->kind, "bpe") == 0;
    if (!is_bpe && (bpe_options || any_special || separator || strcmp(r->pattern, "gpt4") != 0))
        return err_set(err, "--vocab-size, --split-pattern, --special and --doc-separator need --tokenizer bpe");
    if (!bpe_pattern_regex(r->pattern)) return err_set(err, "unknown --split-pattern '%s' (%s)", r->pattern, bpe_pattern_names());
    return 0;
}

/* A checkpoint is a safetensors file: a little-endian u64 header length that
 * fits the file, then the JSON header. Text (a tokenizer.json or .txt) never
 * starts so: eight bytes of text read as a length exceed any file. */
static int is_checkpoint(const char *path) {
    Error ignored;
    size_t n, size;
    unsigned char *head = (unsigned char *)read_file_head(path, 9, &n, &size, &ignored);
    uint64_t header_len = 0;
    for (size_t i = 0; head && n == 9 && i < 8; i++) header_len |= (uint64_t)head[i] << (8 * i);
    int yes = head && n == 9 && head[8] == '{' && header_len >= 2 && header_len <= size - 8;
    free(head);
    return yes;
}

/* --tokenizer-from: a checkpoint's tokenizer, or one kept in a file or directory. */
static int tokenizer_from_source(Tokenizer *tok, const char *path, Error *err) {
    return is_checkpoint(path) ? ckpt_read_tokenizer(path, tok, err) : tokenizer_open(tok, path, err);
}

/* What the command line gave, beyond the options' values. */
typedef struct Given {
    int vocab, inputs, trains, vals, tests, fractions, explicit_splits, learning_options;
} Given;

/* The checks of the options that need no file; 0, or the exit status after one line. */
static int check_options(const Given *g, const TokenizerRecipe *recipe, const Corpus *corpus, const char *out,
                         const char *from, const char *separator, const char **specials, float val_frac,
                         float test_frac) {
    const char *prog = program.name;
    Error err;
    int rc = 0;
    if (g->vocab && (recipe->vocab_size < 257 || recipe->vocab_size > 65536))
        rc = cli_error(prog, "--vocab-size must be from 257 to 65536 (got %zu)", recipe->vocab_size);
    else if (g->inputs && g->explicit_splits)
        rc = cli_error(prog, "--input cannot be used with --train, --val or --test: give the text one way or the other");
    else if (g->explicit_splits && g->fractions)
        rc = cli_error(prog, "--val-fraction and --test-fraction cannot be used with --train, --val and --test: "
                             "the files are the split");
    else if (g->explicit_splits && !g->trains) rc = cli_error(prog, "--val and --test need --train");
    else if (g->trains && !g->vals) rc = cli_error(prog, "--train needs --val: training needs validation data");
    else if (!corpus->paths || !out) rc = cli_error(prog, "--input (or --train and --val) and --out are required (see --help)");
    else if (output_check(out, "--out", OUTPUT_DIR, NULL, 0, &err)) rc = cli_error(prog, "%s", err.msg);
    else if (from && g->learning_options)
        rc = cli_error(prog, "--tokenizer-from uses its tokenizer as it is: --tokenizer, --vocab-size, --split-pattern and "
                             "--special are for learning one");
    else if (!from && check_recipe(recipe, g->vocab, separator, specials != NULL, &err)) rc = cli_error(prog, "%s", err.msg);
    else if (val_frac <= 0.0f) rc = cli_error(prog, "--val-fraction must be positive: training needs validation data");
    else if (val_frac + test_frac >= 0.5f) rc = cli_error(prog, "--val-fraction + --test-fraction must be below 0.5");
    return rc;
}

/* The separator among the specials, each UTF-8 and given once; 0, or the
 * exit status after one line. */
static int check_specials(const char ***specials_io, const char *separator) {
    const char *prog = program.name, **specials = *specials_io;
    int rc = 0, listed = 0;
    for (size_t i = 0; separator && i < arrlenu(specials); i++) listed |= strcmp(specials[i], separator) == 0;
    if (separator && !listed) arrput(specials, separator);
    for (size_t i = 0; i < arrlenu(specials) && rc == 0; i++) {
        size_t len = strlen(specials[i]), bad = utf8_invalid_at(specials[i], len);
        if (bad < len) /* tokenizer.json (bin/convert --to-hf) holds only UTF-8: the round trip would change it */
            rc = cli_error(prog, "special token %zu is not valid UTF-8 (byte 0x%02x at offset %zu): special tokens must "
                                 "be UTF-8 text", i + 1, (unsigned char)specials[i][bad], bad);
    }
    for (size_t i = 0; i < arrlenu(specials) && rc == 0; i++)
        for (size_t j = 0; j < i && rc == 0; j++)
            if (strcmp(specials[i], specials[j]) == 0) rc = cli_error(prog, "special token '%s' is given twice", specials[i]);
    *specials_io = specials;
    return rc;
}

/* Reads, splits, learns or takes the tokenizer, encodes and writes DIR;
 * 0, or -1 with err. */
static int prepare(Corpus *corpus, const TokenizerRecipe *recipe, Tokenizer *tok, const char *out, const char *from,
                   const char *separator, const Given *g, float val_frac, float test_frac, Error *err) {
    Progress pr = {0};
    BpeStats stats = {0};
    size_t counts[N_SPLITS];
    char path[4096];
    if (corpus_open(corpus, err)) return -1;
    if (!g->explicit_splits) corpus_split(corpus, val_frac, test_frac);
    if (!from && corpus_tokenizer(corpus, recipe, tok, show_progress, &pr, &stats, err)) return -1;
    if (stats.merges)
        fprintf(stderr, "prepare: learned %zu merges from %zu bytes (%zu distinct pieces) in %.2f s\n", stats.merges,
                stats.bytes, stats.pieces, stats.seconds);
    if (!from && tokenizer_bpe_of(tok) && tok->vocab_size < recipe->vocab_size)
        fprintf(stderr, "prepare: the training split has only %zu merges to learn: vocabulary %zu instead of the default "
                        "%zu (--vocab-size sets it)\n", stats.merges, tok->vocab_size, recipe->vocab_size);
    if (dir_create(out, 0755, err)) return -1;
    double t0 = cli_now();
    int skip_test = g->explicit_splits ? !g->tests : test_frac == 0.0f;
    if (corpus_encode(corpus, tok, separator, out, skip_test, counts, show_progress, &pr, err)) return -1;
    double encode_s = cli_now() - t0;
    snprintf(path, sizeof path, "%s/tokenizer.txt", out);
    if (tokenizer_save(tok, path, err)) return -1;
    if (tokenizer_bpe_of(tok)) {
        char *json = bpe_export_hf_json(tokenizer_bpe_of(tok), err);
        snprintf(path, sizeof path, "%s/tokenizer.json", out);
        int bad = !json || write_file_atomic(path, json, strlen(json), err);
        free(json);
        if (bad) return -1;
    }
    printf("prepared %s: %s tokenizer, vocabulary %zu, hash %s; train %zu, val %zu, test %zu tokens "
           "(%zu bytes of text in %zu file%s, encoded in %.2f s)\n",
           out, tok->kind->name, tok->vocab_size, tok->hash, counts[SPLIT_TRAIN], counts[SPLIT_VAL], counts[SPLIT_TEST],
           corpus->total, corpus->n_docs, corpus->n_docs == 1 ? "" : "s", encode_s);
    return 0;
}

int main(int argc, char **argv) {
    cleanup_on_signals(program.name); /* temporaries go with a signal; SIGXFSZ is a failed write (lm/files.h) */
    const char *out = NULL, *separator = NULL, **specials = NULL, *from = NULL;
    TokenizerRecipe recipe = {.kind = "char", .vocab_size = 4096, .pattern = "gpt4"};
    float val_frac = 0.05f, test_frac = 0.05f;
    Corpus corpus = {0};
    OptionRow opts[] = {
        CLI_CALL("input", 'i', add_input, &corpus, "FILE|DIR", "a text file, or a directory of them; repeatable"),
        CLI_CALL("train", 0, add_train, &corpus, "FILE|DIR",
                 "instead of --input: the training text, whole;\nrepeatable (needs --val; no fractions)"),
        CLI_CALL("val", 0, add_val, &corpus, "FILE|DIR", "the validation text, whole; repeatable"),
        CLI_CALL("test", 0, add_test, &corpus, "FILE|DIR", "the test text, whole; repeatable (none: no test.bin)"),
        CLI_TEXT("out", 'o', &out, "DIR", "output directory (created if missing)"),
        CLI_TEXT("tokenizer", 't', &recipe.kind, "KIND",
                 "char (characters of the training text + unknown;\ndefault), byte (256 symbols) or bpe (byte-level BPE)"),
        CLI_TEXT("tokenizer-from", 0, &from, "SRC",
                 "instead of learning one, encode with the tokenizer\nof SRC: a checkpoint, a tokenizer.txt or\n"
                 "tokenizer.json, or a directory holding one (a\nprepared data directory; Hugging Face's\n"
                 "tokenizer.json or vocab.json + merges.txt);\n--doc-separator may name one of its specials"),
        CLI_FLOAT("val-fraction", 0, &val_frac, 0.0, 0.9, "F", "share of the text for validation (default 0.05)"),
        CLI_FLOAT("test-fraction", 0, &test_frac, 0.0, 0.9, "F", "share of the text for test (default 0.05; 0 = none)"),
        CLI_HEADING("bpe only:"),
        CLI_SIZE("vocab-size", 0, &recipe.vocab_size, 0, (double)((size_t)1 << 40), "N",
                 "257..65536: 256 bytes + merges + special tokens\n(default 4096, or fewer when the training text\nhas fewer merges to learn)"),
        CLI_TEXT("split-pattern", 0, &recipe.pattern, "P",
                 "pre-tokenizer: gpt4 (default), gpt2 or none (the\nwhole text is one piece: small texts only)"),
        CLI_CALL("special", 0, add_special, &specials, "TEXT", "add a special token (repeatable)"),
        CLI_CALL("doc-separator", 0, set_separator, &separator, "TEXT",
                 "a special token put between documents\n(e.g. \"<|endoftext|>\")"),
    };
    size_t n_opts = sizeof opts / sizeof opts[0];
    const char *prog = program.name;
    Error err;
    Tokenizer tok = {0};
    int rc = cli_parse(&program, opts, n_opts, argc, argv, NULL);
    Given given = {
        .vocab = cli_option(opts, n_opts, "vocab-size")->given,
        .inputs = cli_option(opts, n_opts, "input")->given,
        .trains = cli_option(opts, n_opts, "train")->given,
        .vals = cli_option(opts, n_opts, "val")->given,
        .tests = cli_option(opts, n_opts, "test")->given,
        .fractions = cli_option(opts, n_opts, "val-fraction")->given || cli_option(opts, n_opts, "test-fraction")->given,
    };
    given.explicit_splits = given.trains || given.vals || given.tests;
    given.learning_options = cli_option(opts, n_opts, "tokenizer")->given || given.vocab ||
                             cli_option(opts, n_opts, "split-pattern")->given || cli_option(opts, n_opts, "special")->given;
    if (rc != CLI_CONTINUE) goto done;
    rc = check_options(&given, &recipe, &corpus, out, from, separator, specials, val_frac, test_frac);
    if (rc == 0) rc = check_specials(&specials, separator);
    recipe.specials = specials;
    recipe.n_specials = arrlenu(specials);
    recipe.fit_vocab = !given.vocab; /* the default size, 4096, gives way to a small corpus; a given one does not */
    if (rc == 0 && !from && strcmp(recipe.kind, "bpe") == 0 && recipe.vocab_size < 257 + recipe.n_specials)
        rc = cli_error(prog, "--vocab-size %zu leaves no merge: it must be at least 256 + %zu special tokens + 1",
                       recipe.vocab_size, recipe.n_specials);
    if (rc) goto done;
    if (from) {
        if (tokenizer_from_source(&tok, from, &err)) rc = cli_error(prog, "--tokenizer-from: %s", err.msg);
        else if (separator && tokenizer_special_id(&tok, separator) == tok.vocab_size)
            rc = cli_error(prog, "--doc-separator '%s' is not a special token of the tokenizer of '%s'", separator, from);
        if (rc) goto done;
    }

    if (prepare(&corpus, &recipe, &tok, out, from, separator, &given, val_frac, test_frac, &err))
        rc = cli_error(prog, "%s", err.msg);
done:
    tokenizer_free(&tok);
    corpus_free(&corpus);
    arrfree(specials);
    return rc;
}
