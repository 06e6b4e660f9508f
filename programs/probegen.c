/* bin/probegen: writes a synthetic recall probe (MQAR or copy) as an ordinary
 * data directory (train.bin, val.bin, tokenizer.txt) plus train.mask and
 * val.mask marking the answer tokens: bin/train learns only those (its loss
 * mask), bin/eval scores only those. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "model/config.h"
#include "data/tokens.h"
#include "data/probe_tasks.h"
#include "data/token_mask.h"
#include "tok/byte.h"
#include "tok/tokenizer.h"

static const char *prog = "probegen";

static void usage(FILE *f) {
    fprintf(f,
            "usage: bin/probegen --task mqar|copy --out DIR [options]\n"
            "Writes a synthetic recall probe as DIR/train.bin, val.bin, train.mask and val.mask\n"
            "(the answer tokens: bin/train learns only these, bin/eval scores only these) and\n"
            "tokenizer.txt (bytes). Sequences are --seq-len tokens\n"
            "each, back to back (plus one filler token at the end); train them with\n"
            "bin/train --block-size L --window-align L.\n"
            "  mqar: p key-value pairs, a gap, then queries of the stored keys filling the rest\n"
            "        of the sequence (the answers marked)\n"
            "  copy: a random segment, a gap, a marker, the segment again (the repeat marked)\n"
            "\n"
            "      --task T          mqar or copy\n"
            "  -o, --out DIR         output directory (created)\n"
            "      --seq-len L       tokens per sequence (256)\n"
            "      --symbols K       distinct keys/values (mqar) or segment symbols (copy), K <= 127 (64)\n"
            "      --pairs P         mqar: key-value pairs (16)\n"
            "      --segment S       copy: segment length (default: the most that fits, (L - 1 - G) / 2)\n"
            "      --gap G           filler tokens between the stored part and the queries or the\n"
            "                        repeat: the recall distance grows with it (0)\n"
            "      --queries Q       mqar: rounds (every key once before any repeats; the last of\n"
            "                        a round can be guessed by elimination) or random (each query\n"
            "                        an independent draw) (rounds)\n"
            "      --train-seqs N    training sequences (4000)\n"
            "      --val-seqs N      validation sequences (200)\n"
            "      --seed N          (1337)\n"
            "  -h, --help            this help\n");
}

static int write_split(const char *dir, const char *name, const ProbeSpec *spec, size_t seqs, uint64_t seed,
                       Error *err) {
    size_t L = spec->seq_len, n = seqs * L + 1; /* the trailing filler lets the last window have its target */
    uint32_t *tokens = lm_calloc(n, sizeof *tokens, err);
    uint8_t *marked = lm_calloc(n, 1, err);
    int rc = -1;
    if (!tokens || !marked) goto done;
    Rng rng;
    rng_seed(&rng, seed);
    for (size_t q = 0; q < seqs; q++) probe_sequence(spec, &rng, tokens + q * L, marked + q * L);
    tokens[n - 1] = PROBE_FILLER;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", dir, name);
    if (tokens_write(path, tokens, n, 256, err)) goto done;
    snprintf(path, sizeof path, "%s/%s.mask", dir, name);
    if (mask_write(path, marked, n, err)) goto done;
    rc = 0;
done:
    free(tokens);
    free(marked);
    return rc;
}

int main(int argc, char **argv) {
    const char *task = NULL, *out = NULL, *queries = "rounds";
    ProbeSpec spec = {.seq_len = 256, .symbols = 64, .pairs = 16};
    size_t train_seqs = 4000, val_seqs = 200, seed = 1337;
    int segment_set = 0;
    Error err;
    enum { O_TASK = 1, O_LEN, O_SYM, O_PAIRS, O_SEG, O_GAP, O_TRAIN, O_VAL, O_SEED, O_QUERIES };
    static const struct option opts[] = {
        {"task", required_argument, 0, O_TASK},        {"out", required_argument, 0, 'o'},
        {"seq-len", required_argument, 0, O_LEN},      {"symbols", required_argument, 0, O_SYM},
        {"pairs", required_argument, 0, O_PAIRS},      {"segment", required_argument, 0, O_SEG},
        {"gap", required_argument, 0, O_GAP},          {"train-seqs", required_argument, 0, O_TRAIN},
        {"val-seqs", required_argument, 0, O_VAL},     {"seed", required_argument, 0, O_SEED},
        {"queries", required_argument, 0, O_QUERIES},
        {"help", no_argument, 0, 'h'},                 {0, 0, 0, 0}};
    struct { int opt; const char *name; size_t max; size_t *dst; } sizes[] = {
        {O_LEN, "--seq-len", 1u << 20, &spec.seq_len}, {O_SYM, "--symbols", 127, &spec.symbols},
        {O_PAIRS, "--pairs", 1u << 20, &spec.pairs},   {O_SEG, "--segment", 1u << 20, &spec.segment},
        {O_GAP, "--gap", 1u << 20, &spec.gap},         {O_TRAIN, "--train-seqs", 1u << 24, &train_seqs},
        {O_VAL, "--val-seqs", 1u << 24, &val_seqs},    {O_SEED, "--seed", (size_t)1e18, &seed}};
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
        switch (c) {
        case O_TASK: task = optarg; break;
        case O_QUERIES: queries = optarg; break;
        case 'o': out = optarg; break;
        case 'h': usage(stdout); return 0;
        case ':': return cli_error(prog, "option '%s' needs a value (see --help)", argv[optind - 1]);
        case '?': return cli_error(prog, "unknown option '%s' (see --help)", argv[optind - 1]);
        default:
            for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
                if (sizes[i].opt == c && parse_size(optarg, sizes[i].max, sizes[i].dst, sizes[i].name, &err))
                    return cli_error(prog, "%s", err.msg);
            if (c == O_SEG) segment_set = 1;
        }
    }
    if (optind < argc) return cli_error(prog, "unexpected argument '%s' (see --help)", argv[optind]);
    if (!task || !out) return cli_error(prog, "--task and --out are required (see --help)");
    if (strcmp(task, "mqar") == 0) spec.task = PROBE_MQAR;
    else if (strcmp(task, "copy") == 0) spec.task = PROBE_COPY;
    else return cli_error(prog, "--task must be mqar or copy (got '%s')", task);
    if (strcmp(queries, "rounds") == 0) spec.queries = PROBE_QUERIES_ROUNDS;
    else if (strcmp(queries, "random") == 0) spec.queries = PROBE_QUERIES_RANDOM;
    else return cli_error(prog, "--queries must be rounds or random (got '%s')", queries);
    if (train_seqs == 0 || val_seqs == 0) return cli_error(prog, "--train-seqs and --val-seqs must be positive");
    if (!segment_set) spec.segment = spec.seq_len > spec.gap + 1 ? (spec.seq_len - 1 - spec.gap) / 2 : 0;
    if (probe_check(&spec, 256, &err)) return cli_error(prog, "%s", err.msg);
    if (mkdir(out, 0777) != 0) {
        struct stat st;
        if (stat(out, &st) != 0 || !S_ISDIR(st.st_mode)) return cli_error(prog, "cannot create directory '%s'", out);
    }
    Tokenizer tok;
    tokenizer_init_byte(&tok);
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.txt", out);
    int rc = tokenizer_save(&tok, path, &err);
    tokenizer_free(&tok);
    if (rc || write_split(out, "train", &spec, train_seqs, seed, &err) ||
        write_split(out, "val", &spec, val_seqs, seed ^ 0x76616cULL, &err))
        return cli_error(prog, "%s", err.msg);
    printf("%s: %s, %zu + %zu sequences of %zu tokens, gap %zu, %zu marked answers per sequence\n", out, task,
           train_seqs, val_seqs, spec.seq_len, spec.gap, spec.task == PROBE_MQAR ? probe_queries(&spec) : spec.segment);
    return 0;
}
