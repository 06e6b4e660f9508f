/* bin/sample: generates text from a checkpoint, one token at a time, with
 * the model's incremental decoder (KV cache for attention, a rolling window of
 * reduced vectors for Grassmann). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/files.h"
#include "lm/blas_setup.h"
#include "lm/cli.h"
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

/* One sequence's activations bound the decoder's state; the logits and the sampler's arrays are ours. */
static ReadingNeeds needs(const ModelConfig *cfg, const void *ctx) {
    (void)ctx;
    return (ReadingNeeds){1, cfg->vocab_size * (2 * sizeof(float) + sizeof(size_t)), "the logits and the sampler's arrays",
                          NULL};
}

static void print_text(void *ctx, const char *text, size_t len) {
    fwrite(text, 1, len, ctx);
    fflush(ctx);
}

/* --prompt-file: the file's bytes as the prompt, raw text as the model's
 * tokenizer takes it (newlines and all). NULL with one line in err if it
 * cannot be read or holds a NUL byte (a prompt is text). */
static char *prompt_from_file(const char *path, Error *err) {
    size_t len;
    char *text = read_file(path, &len, err);
    if (text && memchr(text, 0, len)) {
        free(text);
        err_set(err, "--prompt-file '%s' holds a NUL byte: not a text", path);
        return NULL;
    }
    return text;
}

int main(int argc, char **argv) {
    Error setup_err; /* first: it may restart the program with faster kernels */
    if (blas_setup(argc, argv, &setup_err)) return cli_error(program.name, "%s", setup_err.msg);
    cleanup_on_signals(program.name); /* temporaries and locks go with a signal (lm/files.h) */
    const char *model_path = NULL, *prompt = NULL, *prompt_path = NULL;
    size_t n_tokens = 500, seed = 1337, threads = 1;
    SampleOptions so = {.temperature = 0.8f};
    CliOption opts[] = {
        CLI_TEXT("model", 'm', &model_path, "CKPT", "checkpoint from bin/train"),
        CLI_TEXT("prompt", 'p', &prompt, "TEXT", "text to continue (default: a newline)"),
        CLI_TEXT("prompt-file", 0, &prompt_path, "FILE", "the prompt from a text file, as it stands (newlines too),\nthrough the model's own tokenizer"),
        CLI_SIZE("tokens", 'n', &n_tokens, 0, 100000000, "N", "tokens to generate (default 500)"),
        CLI_FLOAT("temperature", 0, &so.temperature, 0, 100, "T", "softmax temperature, 0 = greedy (default 0.8)"),
        CLI_SIZE("top-k", 0, &so.top_k, 0, 1u << 24, "K", "sample among the K most likely tokens, 0 = all (default 0)"),
        CLI_SIZE("seed", 0, &seed, 0, 1e18, "S", "random seed (default 1337)"),
        CLI_SIZE("threads", 0, &threads, 0, 1024, "N",
                 "OpenMP/OpenBLAS threads (default 1: one token at a time\nis too small to share)"),
    };
    int rc = cli_parse(&program, opts, sizeof opts / sizeof opts[0], argc, argv, NULL);
    if (rc != CLI_CONTINUE) return rc;
    if (!model_path) return cli_error(program.name, "--model is required (see --help)");
    if (prompt && prompt_path) return cli_error(program.name, "--prompt and --prompt-file cannot be used together");
    char *file_prompt = NULL;
    Error file_err;
    if (prompt_path && !(file_prompt = prompt_from_file(prompt_path, &file_err)))
        return cli_error(program.name, "%s", file_err.msg);
    if (file_prompt) prompt = file_prompt;
    if (!prompt) prompt = "\n";
    threads_use(threads);
    so.seed = seed;

    Model m;
    Tokenizer tok;
    Error err;
    if (model_open_checked(model_path, needs, NULL, &m, &tok, &err)) {
        free(file_prompt);
        return cli_error(program.name, "%s", err.msg);
    }
    fputs(prompt, stdout);
    if (generate(&m, &tok, prompt, n_tokens, &so, print_text, stdout, &err)) rc = cli_error(program.name, "%s", err.msg);
    else fputc('\n', stdout);
    tokenizer_free(&tok);
    model_free(&m);
    free(file_prompt);
    return rc == CLI_CONTINUE ? 0 : rc;
}
