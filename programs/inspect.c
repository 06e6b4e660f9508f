/* bin/inspect: what each layer of a trained model does with a prompt --
 * attention maps, projection geometry, induction heads, Grassmann gates,
 * logit lens and direct attribution -- as PNGs, a table, JSON and a summary. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas/blas_setup.h"
#include "model/checkpoint.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "model/config.h"
#include "runtime/threads.h"
#include "runtime/ds.h"
#include "inspect/inspect.h"

static const char *prog = "inspect";

static void usage(FILE *f) {
    fprintf(f,
            "usage: bin/inspect --model CKPT --prompt TEXT --out DIR [options]\n"
            "Shows what each layer of a model does with a prompt: per attention head the\n"
            "attention map (PNG), its entropy, diagonal and previous-token weight, the\n"
            "correlation of raw similarity with attention logits, the spectrum of W_q W_k^T\n"
            "and an induction score; per Grassmann layer the gate along the prompt (PNG),\n"
            "each offset's contribution and the Plücker residual; the logit lens (lens.txt)\n"
            "and the direct attribution of the last prediction (PNG). Everything also goes\n"
            "to DIR/inspect.json; a summary is printed.\n"
            "\n"
            "  -m, --model CKPT          checkpoint from bin/train\n"
            "  -p, --prompt TEXT         1 to block_size tokens, every character in the model's vocabulary\n"
            "  -o, --out DIR             output directory (created if missing)\n"
            "      --induction-length N  random tokens per copy for the induction test\n"
            "                            (default block_size / 2, at most block_size / 2)\n"
            "      --induction-seqs K    random sequences averaged (default 8)\n"
            "      --seed S              seed of the random sequences (default 1337)\n"
            "      --threads N           OpenMP/OpenBLAS threads (default: all cores)\n"
            "  -h, --help                this help\n");
}

/* The k-th character (UTF-8 sequence) of s, for messages. */
static void nth_char(const char *s, size_t k, char *buf, size_t len) {
    size_t i = 0;
    for (size_t c = 0; s[i] && c < k; c++)
        for (i++; ((unsigned char)s[i] & 0xC0) == 0x80; i++) {}
    size_t n = 1;
    while (((unsigned char)s[i + n] & 0xC0) == 0x80) n++;
    snprintf(buf, len, "%.*s", (int)n, s + i);
}

/* The induction batch, and for the prompt (at most one token per byte)
 * every head's attention map and the logit lens. */
static ReadingNeeds inspect_needs(const ModelConfig *cfg, const void *ctx) {
    const size_t *prompt_bytes_and_seqs = ctx;
    size_t T = prompt_bytes_and_seqs[0] < cfg->block_size ? prompt_bytes_and_seqs[0] : cfg->block_size;
    size_t maps = (cfg->n_layer * cfg->n_head * T * T + T * (cfg->n_embd + cfg->vocab_size)) * sizeof(float);
    return (ReadingNeeds){prompt_bytes_and_seqs[1], maps, "attention maps and the logit lens"};
}

int main(int argc, char **argv) {
    blas_setup(argc, argv); /* first: it may restart the program with faster BLIS kernels */
    const char *model_path = NULL, *prompt = NULL, *out_dir = NULL;
    size_t ind_len = 0, ind_seqs = 8, seed = 1337, threads = 0;
    Error err;
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},           {"prompt", required_argument, 0, 'p'},
        {"out", required_argument, 0, 'o'},             {"induction-length", required_argument, 0, 'n'},
        {"induction-seqs", required_argument, 0, 'k'},  {"seed", required_argument, 0, 's'},
        {"threads", required_argument, 0, 't'},         {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    opterr = 0;
    int c, bad = 0;
    while ((c = getopt_long(argc, argv, ":m:p:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': model_path = optarg; break;
        case 'p': prompt = optarg; break;
        case 'o': out_dir = optarg; break;
        case 'n': bad = parse_size(optarg, 1u << 20, &ind_len, "--induction-length", &err); break;
        case 'k': bad = parse_size(optarg, 1024, &ind_seqs, "--induction-seqs", &err); break;
        case 's': bad = parse_size(optarg, (size_t)1e18, &seed, "--seed", &err); break;
        case 't': bad = parse_size(optarg, 1024, &threads, "--threads", &err); break;
        case 'h': usage(stdout); return 0;
        case ':': return cli_error(prog, "option '%s' needs a value (see --help)", argv[optind - 1]);
        default: return cli_error(prog, "unknown option '%s' (see --help)", argv[optind - 1]);
        }
        if (bad) return cli_error(prog, "%s", err.msg);
    }
    if (optind < argc) return cli_error(prog, "unexpected argument '%s' (see --help)", argv[optind]);
    if (!model_path) return cli_error(prog, "--model is required (see --help)");
    if (!prompt) return cli_error(prog, "--prompt is required (see --help)");
    if (!out_dir || !*out_dir) return cli_error(prog, "--out is required (see --help)");
    if (!*prompt) return cli_error(prog, "the prompt is empty");
    if (ind_seqs == 0) return cli_error(prog, "--induction-seqs must be at least 1");
    threads_use(threads);

    Model m;
    Tokenizer tok;
    if (model_open_checked(model_path, inspect_needs, (size_t[]){strlen(prompt), ind_seqs}, &m, &tok, &err))
        return cli_error(prog, "%s", err.msg);
    int rc = 0;
    uint32_t *ids = NULL;
    int32_t *tokens = NULL;
    Inspection in = {0};
    Induction ind = {0};
    size_t Tm = m.cfg.block_size;
    if (ind_len == 0) ind_len = Tm / 2;
    tokenizer_encode(&tok, prompt, strlen(prompt), &ids);
    size_t T = arrlenu(ids);
    for (size_t t = 0; t < T && tok.kind->unknown >= 0; t++)
        if (ids[t] == (uint32_t)tok.kind->unknown) {
            char ch[8];
            nth_char(prompt, t, ch, sizeof ch);
            rc = cli_error(prog, "prompt character %zu ('%s') is not in the model's vocabulary", t + 1, ch);
            goto done;
        }
    if (T > Tm) {
        rc = cli_error(prog, "the prompt is %zu tokens, longer than the model's block size %zu", T, Tm);
        goto done;
    }
    if (ind_len < 2 || 2 * ind_len > Tm) {
        rc = cli_error(prog, "--induction-length must be between 2 and block_size / 2 = %zu (got %zu)", Tm / 2, ind_len);
        goto done;
    }
    tokens = malloc(T * sizeof *tokens);
    if (!tokens) {
        rc = cli_error(prog, "out of memory");
        goto done;
    }
    for (size_t t = 0; t < T; t++) tokens[t] = (int32_t)ids[t];
    double t0 = cli_now();
    if (inspect_induction(&ind, &m, ind_len, ind_seqs, seed, &err) || inspect_run(&in, &m, tokens, T, &err) ||
        inspect_write(out_dir, &in, &ind, &m, &tok, prompt, &err)) {
        rc = cli_error(prog, "%s", err.msg);
        goto done;
    }
    inspect_print(stdout, &in, &ind, &m, &tok);
    int has_attention = 0, has_grassmann = 0;
    for (size_t l = 0; l < m.cfg.n_layer; l++) {
        has_attention |= in.layer[l].probs != NULL;
        has_grassmann |= in.layer[l].gate_mean != NULL;
    }
    printf("wrote %s:%s%s attribution.png, lens.txt, tokens.txt, inspect.json (%.1f s)\n", out_dir,
           has_attention ? " attention maps attn_L<layer>_H<head>.png and attn_L<layer>.png," : "",
           has_grassmann ? " gates.png," : "", cli_now() - t0);
done:
    inspect_free(&in);
    induction_free(&ind);
    free(tokens);
    arrfree(ids);
    tokenizer_free(&tok);
    model_free(&m);
    return rc;
}
