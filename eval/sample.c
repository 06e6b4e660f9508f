/* bin/sample: generates text from a checkpoint: the prompt in one batched
 * forward, then one token at a time with the model's incremental decoder (KV
 * cache for attention, a rolling window of reduced vectors for Grassmann, a
 * recurrent state for gla), N samples at once with --num-samples, the
 * weights read in fp32, bf16 or int8 (--weights). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/files.h"
#include "lm/blas_setup.h"
#include "lm/cli.h"
#include "lm/run_folder.h"
#include "lm/options.h"
#include "lm/checkpoint.h"
#include "generate.h"
#include "lm/threads.h"

static const CliProgram program = {
    .name = "sample",
    .usage = "bin/sample --model CKPT [options]",
    .about = "Continues a prompt with text sampled from the model.\n",
    .column = 25,
};

/* One sequence's activations (the prefill's); each sample's decoder state
 * (its mixers' states and one position's buffers, 14 C + 2) and logits, and
 * the sampler's arrays, are ours. */
static ReadingNeeds needs(const ModelConfig *cfg, const void *ctx) {
    size_t n = *(const size_t *)ctx, state = 14 * cfg->n_embd + 2;
    for (size_t l = 0; l < cfg->n_layer; l++) {
        MixerSpec spec = model_mixer_spec(cfg, l);
        state += cfg->mixers[l]->state_size(&spec);
    }
    return (ReadingNeeds){1, n * (state + cfg->vocab_size) * sizeof(float) + cfg->vocab_size * (2 * sizeof(float) + sizeof(size_t) + 1),
                          "the samples' decoder states and logits, the sampler's arrays", NULL};
}

/* Where the text goes: one sample streams after the prompt (printed
 * first); each sample of a batch is printed whole, the prompt before it and
 * a line "--- sample I" (from 1) before that. */
typedef struct Printer {
    FILE *f;
    const char *prompt;
    size_t n_samples;
} Printer;

static void print_text(void *ctx, size_t sample, const char *text, size_t len) {
    Printer *p = ctx;
    if (p->n_samples > 1) fprintf(p->f, "%s--- sample %zu\n%s", sample ? "\n" : "", sample + 1, p->prompt);
    fwrite(text, 1, len, p->f);
    fflush(p->f);
}

/* The --stop texts, in argv. */
#define MAX_STOPS 64
typedef struct StopList {
    const char *text[MAX_STOPS];
    size_t n;
} StopList;

static int add_stop(void *ctx, const char *value, Error *err) {
    StopList *l = ctx;
    if (!*value) return err_set(err, "--stop needs a text (an empty one would stop before the first token)");
    if (l->n == MAX_STOPS) return err_set(err, "more than %d --stop texts", MAX_STOPS);
    l->text[l->n++] = value;
    return 0;
}

int main(int argc, char **argv) {
    Error setup_err; /* first: it may restart the program with faster kernels */
    if (blas_setup(argc, argv, &setup_err)) return cli_error(program.name, "%s", setup_err.msg);
    cleanup_on_signals(program.name); /* temporaries and locks go with a signal (lm/files.h) */
    const char *model_path = NULL, *prompt = NULL, *prompt_path = NULL;
    size_t n_tokens = 500, seed = 1337, threads = 1, n_samples = 1;
    const char *weights = "fp32";
    int timing = 0;
    GenerateTiming times;
    SampleOptions so = {.sampling = SAMPLER_DEFAULTS};
    StopList stops = {0};
    OptionRow opts[] = {
        CLI_TEXT("model", 'm', &model_path, "CKPT",
                 "checkpoint from bin/train, or a run folder (bin/train --run):\nits best.ckpt (its ckpt when it has none), said on stderr"),
        CLI_TEXT("prompt", 'p', &prompt, "TEXT", "text to continue (default: a newline)"),
        CLI_TEXT("prompt-file", 0, &prompt_path, "FILE", "the prompt from a text file, as it stands (newlines too),\nthrough the model's own tokenizer"),
        CLI_SIZE("tokens", 'n', &n_tokens, 0, 100000000, "N", "tokens to generate (default 500)"),
        CLI_FLOAT("temperature", 0, &so.sampling.temperature, 0, 100, "T", "softmax temperature, 0 = greedy (default 0.8)"),
        CLI_SIZE("top-k", 0, &so.sampling.top_k, 0, 1u << 24, "K", "sample among the K most likely tokens, 0 = all (default 0)"),
        CLI_FLOAT("top-p", 0, &so.sampling.top_p, 0, 1, "P",
                  "sample among the fewest most likely tokens whose\nprobabilities add up to P, 1 = all (default 1)"),
        CLI_FLOAT("min-p", 0, &so.sampling.min_p, 0, 1, "P",
                  "sample among the tokens at least P times as likely as\nthe most likely, 0 = all (default 0)"),
        CLI_FLOAT("repeat-penalty", 0, &so.sampling.repeat_penalty, 0.01, 100, "F",
                  "the logits of the last --repeat-last-n tokens divided by F\n(multiplied when negative), 1 = none (default 1)"),
        CLI_SIZE("repeat-last-n", 0, &so.sampling.repeat_last_n, 0, 100000000, "N",
                 "how many of the last tokens (the prompt's too)\n--repeat-penalty looks at, 0 = none (default 64)"),
        CLI_CALL("stop", 0, add_stop, &stops, "TEXT",
                 "end the text where it would write TEXT (left out);\nrepeatable, each sample of a batch stopping alone"),
        CLI_SIZE("seed", 0, &seed, 0, 1e18, "S", "random seed (default 1337); sample i (from 0) draws\nwith seed S + i"),
        CLI_SIZE("num-samples", 0, &n_samples, 1, 4096, "N",
                 "N samples of the prompt decoded together, each the text\n--seed S + i gives alone (default 1)"),
        CLI_TEXT("weights", 0, &weights, "W",
                 "fp32 | bf16 | int8 (per 32 entries of a row, a scale):\nthe weights the decoder reads, converted at load (fp32)"),
        CLI_FLAG("timing", 0, &timing, "print the prefill's and the decode's tokens/s to stderr"),
        CLI_SIZE("threads", 0, &threads, 0, 1024, "N",
                 "OpenMP/OpenBLAS threads (default 1: one token at a time\nis too small to share)"),
    };
    int rc = cli_parse(&program, opts, sizeof opts / sizeof opts[0], argc, argv, NULL);
    if (rc != CLI_CONTINUE) return rc;
    so.stop = stops.text;
    so.n_stop = stops.n;
    if (!model_path) return cli_error(program.name, "--model is required (see --help)");
    if (prompt && prompt_path) return cli_error(program.name, "--prompt and --prompt-file cannot be used together");
    WeightsFormat format;
    Error err;
    char ckpt[PATH_BUF], note[2 * PATH_BUF];
    if (run_folder_model(model_path, ckpt, sizeof ckpt, note, sizeof note, &err) < 0)
        return cli_error(program.name, "%s", err.msg);
    if (*note) cli_note(program.name, "%s", note);
    model_path = ckpt;
    if (weights_format_parse(weights, &format, &err)) return cli_error(program.name, "%s", err.msg);
    char *file_prompt = NULL;
    Error file_err;
    if (prompt_path && !(file_prompt = read_text_file(prompt_path, "--prompt-file", &file_err)))
        return cli_error(program.name, "%s", file_err.msg);
    if (file_prompt) prompt = file_prompt;
    if (!prompt) prompt = "\n";
    threads_use(threads);
    so.seed = seed;
    so.n_samples = n_samples;
    so.timing = timing ? &times : NULL;

    Model m;
    Tokenizer tok;
    if (model_open_checked(model_path, needs, &n_samples, &m, &tok, &err)) {
        free(file_prompt);
        return cli_error(program.name, "%s", err.msg);
    }
    if (model_set_weights(&m, format, &err)) {
        tokenizer_free(&tok);
        model_free(&m);
        free(file_prompt);
        return cli_error(program.name, "%s", err.msg);
    }
    if (n_samples == 1) fputs(prompt, stdout);
    Printer printer = {stdout, prompt, n_samples};
    if (generate(&m, &tok, prompt, n_tokens, &so, print_text, &printer, &err)) rc = cli_error(program.name, "%s", err.msg);
    else fputc('\n', stdout);
    if (timing && rc == CLI_CONTINUE)
        fprintf(stderr, "prefill %zu tokens %.2f ms (%.0f tokens/s); decode %zu steps x %zu samples %.2f ms "
                        "(%.1f tokens/s, %zu refills); weights %s\n",
                times.prefill_tokens, 1e3 * times.prefill_seconds, times.prefill_tokens / times.prefill_seconds,
                times.steps, n_samples, 1e3 * times.decode_seconds,
                times.steps * n_samples / (times.decode_seconds > 0 ? times.decode_seconds : 1e-9), times.refills, weights);
    tokenizer_free(&tok);
    model_free(&m);
    free(file_prompt);
    return rc == CLI_CONTINUE ? 0 : rc;
}
