/* bin/probegen: writes a synthetic recall probe (MQAR or copy) as an ordinary
 * data directory (train.bin, val.bin, tokenizer.txt) plus train.mask and
 * val.mask marking the answer tokens: bin/train learns only those (its loss
 * mask), bin/eval scores only those. */
#include <stdio.h>
#include <string.h>

#include "lm/cli.h"
#include "lm/options.h"
#include "lm/probe_tasks.h"
#include "lm/files.h"
#include "lm/byte.h"
#include "lm/json.h"
#include "lm/tokenizer.h"

static const CliProgram program = {
    .name = "probegen",
    .usage = "bin/probegen --task mqar|zoology|copy --out DIR [options]",
    .about = "Writes a synthetic recall probe as DIR/train.bin, val.bin, train.mask and val.mask\n"
             "(the answer tokens: bin/train learns only these, bin/eval scores only these) and\n"
             "tokenizer.txt (bytes; zoology: --vocab ids). Sequences are --seq-len tokens\n"
             "each, back to back (plus one filler token at the end); train them with\n"
             "bin/train --block-size L --window-align L.\n"
             "  mqar: p key-value pairs, a gap, then queries of the stored keys filling the rest\n"
             "        of the sequence (the answers marked)\n"
             "  zoology: MQAR as the Zoology paper draws it: p pairs of distinct keys (ids\n"
             "        1..V/2-1) and values (V/2..V-1), then each key queried once at a\n"
             "        power-law distance (a = 0.01), its value after it (marked); every other\n"
             "        position a random token of the whole vocabulary (--fill zero: id 0)\n"
             "  copy: a random segment, a gap, a marker, the segment again (the repeat marked)\n",
    .column = 24,
};

/* The data's tokenizer: bytes for a vocabulary of 256; else a character
 * tokenizer of vocab - 1 code points from U+0100 on (ids 1.., id 0 its
 * unknown token), which only names the ids: the probe's tokens are not text. */
static int probe_tokenizer(Tokenizer *tok, size_t vocab, Error *err) {
    if (vocab == 256) {
        tokenizer_init_byte(tok);
        return 0;
    }
    char *text = NULL;
    sb_appendf(&text, "%s\nchar %zu\n", TOKENIZER_MAGIC, vocab);
    for (size_t i = 1; i < vocab; i++) sb_appendf(&text, "%zx\n", 0xFF + i);
    int rc = tokenizer_from_text(tok, text, "the probe's vocabulary", err);
    sb_free(&text);
    return rc;
}

int main(int argc, char **argv) {
    cleanup_on_signals(program.name); /* temporaries and locks go with a signal (lm/files.h) */
    const char *task = NULL, *out = NULL, *queries = "rounds", *fill = NULL;
    ProbeSpec spec = {.seq_len = 256, .symbols = 64, .pairs = 16};
    size_t train_seqs = 4000, val_seqs = 200, seed = 1337;
    spec.vocab = 8192;
    OptionRow opts[] = {
        CLI_TEXT("task", 0, &task, "T", "mqar, zoology or copy"),
        CLI_TEXT("out", 'o', &out, "DIR", "output directory (created)"),
        CLI_SIZE("seq-len", 0, &spec.seq_len, 0, 1u << 20, "L", "tokens per sequence (256)"),
        CLI_SIZE("symbols", 0, &spec.symbols, 0, 127, "K",
                 "distinct keys/values (mqar) or segment symbols (copy), K <= 127 (64)"),
        CLI_SIZE("pairs", 0, &spec.pairs, 0, 1u << 20, "P", "mqar: key-value pairs (16)"),
        CLI_SIZE("segment", 0, &spec.segment, 0, 1u << 20, "S",
                 "copy: segment length (default: the most that fits, (L - 1 - G) / 2)"),
        CLI_SIZE("gap", 0, &spec.gap, 0, 1u << 20, "G",
                 "filler tokens between the stored part and the queries or the\n"
                 "repeat: the recall distance grows with it (0)"),
        CLI_TEXT("queries", 0, &queries, "Q",
                 "mqar: rounds (every key once before any repeats; the last of\n"
                 "a round can be guessed by elimination) or random (each query\n"
                 "an independent draw) (rounds)"),
        CLI_SIZE("vocab", 0, &spec.vocab, 0, 1u << 15, "V", "zoology: the vocabulary, keys and values (8192, as Zoology)"),
        CLI_TEXT("fill", 0, &fill, "F",
                 "zoology: what the positions outside the pairs and the queries\n"
                 "hold: random (a token of the whole vocabulary, as Zoology's\n"
                 "generator) or zero (id 0) (random)"),
        CLI_SIZE("train-seqs", 0, &train_seqs, 0, 1u << 24, "N", "training sequences (4000)"),
        CLI_SIZE("val-seqs", 0, &val_seqs, 0, 1u << 24, "N", "validation sequences (200)"),
        CLI_SIZE("seed", 0, &seed, 0, 1e18, "N", "(1337)"),
    };
    size_t n_opts = sizeof opts / sizeof opts[0];
    int rc = cli_parse(&program, opts, n_opts, argc, argv, NULL);
    if (rc != CLI_CONTINUE) return rc;
    const char *prog = program.name;
    if (!task || !out) return cli_error(prog, "--task and --out are required (see --help)");
    Error err;
    if (output_check(out, "--out", OUTPUT_DIR, NULL, 0, &err)) return cli_error(prog, "%s", err.msg);
    if (strcmp(task, "mqar") == 0) spec.task = PROBE_MQAR;
    else if (strcmp(task, "copy") == 0) spec.task = PROBE_COPY;
    else if (strcmp(task, "zoology") == 0) spec.task = PROBE_ZOOLOGY;
    else return cli_error(prog, "--task must be mqar, zoology or copy (got '%s')", task);
    if (strcmp(queries, "rounds") == 0) spec.queries = PROBE_QUERIES_ROUNDS;
    else if (strcmp(queries, "random") == 0) spec.queries = PROBE_QUERIES_RANDOM;
    else return cli_error(prog, "--queries must be rounds or random (got '%s')", queries);
    if (fill && spec.task != PROBE_ZOOLOGY) return cli_error(prog, "--fill is the zoology task's (mqar and copy fill with id 0)");
    if (!fill || strcmp(fill, "random") == 0) spec.fill = spec.task == PROBE_ZOOLOGY ? PROBE_FILL_RANDOM : PROBE_FILL_ZERO;
    else if (strcmp(fill, "zero") == 0) spec.fill = PROBE_FILL_ZERO;
    else return cli_error(prog, "--fill must be random or zero (got '%s')", fill);
    if (train_seqs == 0 || val_seqs == 0) return cli_error(prog, "--train-seqs and --val-seqs must be positive");
    if (!cli_option(opts, n_opts, "segment")->given)
        spec.segment = spec.seq_len > spec.gap + 1 ? (spec.seq_len - 1 - spec.gap) / 2 : 0;

    Tokenizer tok;
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.txt", out);
    int failed = probe_check(&spec, probe_vocab(&spec), &err) || probe_tokenizer(&tok, probe_vocab(&spec), &err);
    if (failed) return cli_error(prog, "%s", err.msg);
    failed = dir_create(out, 0777, &err) || tokenizer_save(&tok, path, &err) ||
                 probe_write_split(out, "train", &spec, train_seqs, seed, &err) ||
                 probe_write_split(out, "val", &spec, val_seqs, seed ^ 0x76616cULL, &err);
    tokenizer_free(&tok);
    if (failed) return cli_error(prog, "%s", err.msg);
    printf("%s: %s, %zu + %zu sequences of %zu tokens, gap %zu, %zu marked answers per sequence%s\n", out, task,
           train_seqs, val_seqs, spec.seq_len, spec.gap, spec.task == PROBE_COPY ? spec.segment : probe_queries(&spec),
           spec.task != PROBE_ZOOLOGY ? "" : spec.fill == PROBE_FILL_RANDOM ? ", random filler" : ", filler id 0");
    return 0;
}
