/* bin/sample: generates text from a checkpoint, one token at a time, with
 * the model's incremental decoder (KV cache for attention, a rolling window of
 * reduced vectors for Grassmann). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas/blas_setup.h"
#include "model/checkpoint.h"
#include "cli/cli.h"
#include "model/config.h"
#include "runtime/ds.h"
#include "runtime/rng.h"
#include "io/utf8.h"

static const char *prog = "sample";

static void usage(FILE *f) {
    fprintf(f,
            "usage: bin/sample --model CKPT [options]\n"
            "Continues a prompt with text sampled from the model.\n"
            "\n"
            "  -m, --model CKPT       checkpoint from bin/train\n"
            "  -p, --prompt TEXT      text to continue (default: a newline)\n"
            "  -n, --tokens N         tokens to generate (default 500)\n"
            "      --temperature T    softmax temperature, 0 = greedy (default 0.8)\n"
            "      --top-k K          sample among the K most likely tokens, 0 = all (default 0)\n"
            "      --seed S           random seed (default 1337)\n"
            "      --threads N        OpenMP/OpenBLAS threads (default 1: one token at a time\n"
            "                         is too small to share)\n"
            "  -h, --help             this help\n");
}

typedef struct Sampler {
    float *probs;
    size_t *order;
} Sampler;

static const float *sort_logits;
static int by_logit_desc(const void *a, const void *b) {
    float x = sort_logits[*(const size_t *)a], y = sort_logits[*(const size_t *)b];
    return (x < y) - (x > y);
}

static uint32_t pick(Sampler *s, const float *logits, size_t V, float temperature, size_t top_k, Rng *rng) {
    size_t best = 0;
    for (size_t v = 1; v < V; v++) best = logits[v] > logits[best] ? v : best;
    if (temperature == 0.0f) return (uint32_t)best;
    size_t k = top_k && top_k < V ? top_k : V;
    for (size_t v = 0; v < V; v++) s->order[v] = v;
    if (k < V) {
        sort_logits = logits;
        qsort(s->order, V, sizeof(size_t), by_logit_desc);
    }
    double sum = 0.0;
    for (size_t i = 0; i < k; i++) {
        s->probs[i] = expf((logits[s->order[i]] - logits[best]) / temperature);
        sum += s->probs[i];
    }
    double u = rng_uniform(rng) * sum, acc = 0.0;
    for (size_t i = 0; i < k; i++) {
        acc += s->probs[i];
        if (u < acc) return (uint32_t)s->order[i];
    }
    return (uint32_t)s->order[k - 1];
}

int main(int argc, char **argv) {
    blas_setup(argc, argv); /* first: it may restart the program with faster BLIS kernels */
    const char *model_path = NULL, *prompt = "\n";
    size_t n_tokens = 500, top_k = 0, seed = 1337, threads = 1;
    float temperature = 0.8f;
    Error err;
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},  {"prompt", required_argument, 0, 'p'},
        {"tokens", required_argument, 0, 'n'}, {"temperature", required_argument, 0, 'T'},
        {"top-k", required_argument, 0, 'k'},  {"seed", required_argument, 0, 's'},
        {"threads", required_argument, 0, 't'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    opterr = 0;
    int c, bad = 0;
    while ((c = getopt_long(argc, argv, ":m:p:n:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': model_path = optarg; break;
        case 'p': prompt = optarg; break;
        case 'n': bad = parse_size(optarg, 100000000, &n_tokens, "--tokens", &err); break;
        case 'T': bad = parse_float(optarg, 0.0, 100.0, &temperature, "--temperature", &err); break;
        case 'k': bad = parse_size(optarg, 1u << 24, &top_k, "--top-k", &err); break;
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
    cli_set_threads(threads);

    Model m;
    Tokenizer tok;
    ModelConfig cfg; /* the memory it will take, said before taking it (one sequence bounds the decoding state) */
    size_t file_bytes;
    if (ckpt_read_config(model_path, &cfg, &file_bytes, &err) ||
        ckpt_check_memory(model_path, &cfg, file_bytes, 1, cfg.vocab_size * (2 * sizeof(float) + sizeof(size_t)),
                          "the logits and the sampler's arrays", &err) ||
        model_open(model_path, &m, &tok, &err))
        return cli_error(prog, "%s", err.msg);
    size_t V = m.cfg.vocab_size, Tm = m.cfg.block_size;
    uint32_t *ids = NULL;
    tokenizer_encode(&tok, prompt, strlen(prompt), &ids);
    if (arrlenu(ids) == 0) arrput(ids, 0u);
    ModelState st;
    float *logits = calloc(V, sizeof(float));
    Sampler s = {calloc(V, sizeof(float)), calloc(V, sizeof(size_t))};
    int rc = 0;
    if (model_state_init(&m, &st, &err) || !logits || !s.probs || !s.order) {
        rc = cli_error(prog, "%s", logits ? err.msg : "out of memory");
        goto done;
    }
    Rng rng;
    rng_seed(&rng, seed);
    fputs(prompt, stdout);
    /* Feed the prompt (its last block_size tokens), then generate. When the
     * context is full, restart from its last half: positions are absolute,
     * so the state must be rebuilt, which costs block_size/2 steps once per
     * block_size/2 new tokens -- constant work per token on average. */
    size_t from = arrlenu(ids) > Tm ? arrlenu(ids) - Tm : 0;
    for (size_t i = from; i < arrlenu(ids); i++) model_step(&m, &st, (int32_t)ids[i], logits);
    /* Decoded bytes go out as soon as they end on a character boundary: a
     * token may end inside a UTF-8 character that the next one completes. */
    char *pending = NULL;
    for (size_t i = 0; i < n_tokens; i++) {
        uint32_t next = pick(&s, logits, V, temperature, top_k, &rng);
        size_t len;
        const char *bytes = tokenizer_token(&tok, next, &len);
        if (len) memcpy(arraddnptr(pending, len), bytes, len);
        size_t ready = utf8_complete_prefix((const unsigned char *)pending, arrlenu(pending));
        fwrite(pending, 1, ready, stdout);
        if (ready) arrdeln(pending, 0, ready);
        fflush(stdout);
        arrput(ids, next);
        if (st.t == Tm) {
            model_state_reset(&st);
            for (size_t j = arrlenu(ids) - Tm / 2; j < arrlenu(ids); j++) model_step(&m, &st, (int32_t)ids[j], logits);
        } else {
            model_step(&m, &st, (int32_t)next, logits);
        }
    }
    fwrite(pending, 1, arrlenu(pending), stdout);
    arrfree(pending);
    fputc('\n', stdout);
done:
    free(logits);
    free(s.probs);
    free(s.order);
    model_state_free(&st);
    arrfree(ids);
    tokenizer_free(&tok);
    model_free(&m);
    return rc;
}
