/* bin/inspect: what each layer of a trained model does with a prompt --
 * what its mixer shows (maps, series, tables), induction heads, logit lens
 * and direct attribution -- as PNGs, tables, JSON, a page and a summary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/files.h"
#include "lm/blas_setup.h"
#include "lm/cli.h"
#include "lm/run_folder.h"
#include "lm/options.h"
#include "lm/inspect.h"
#include "report.h"
#include "lm/checkpoint.h"
#include "lm/threads.h"
#include "lm/json.h"

static const CliProgram program = {
    .name = "inspect",
    .usage = "bin/inspect --model CKPT --prompt TEXT --out DIR [options]",
    .about = "Shows what each layer of a model does with a prompt: what its mixer shows of\n"
             "it (a map per head as PNGs, with each map's entropy, its weight on the\n"
             "diagonal and on the previous token and an induction score; series along the\n"
             "prompt, one PNG per name; tables and single numbers), the logit lens\n"
             "(lens.txt) and the direct attribution of the last prediction (PNG); every\n"
             "head at a glance (heads.png, heads.txt).\n"
             "Everything also goes to DIR/inspect.json and, as one page to open in a\n"
             "browser (hover a head, a token), DIR/inspect.html; a summary is printed (per\n"
             "layer, and the heads that stand out, past 32 heads).\n",
    .column = 28,
};

/* --induction-length, or by default block_size / 2 up to 128 tokens: a
 * copy that long already shows an induction head (GPT-2 small's are found with
 * 50), and at GPT-2's block of 1,024 the 8 sequences of 512 twice over would
 * take 8 GB of activations and most of the run. */
#define INDUCTION_DEFAULT SIZE_MAX /* no --induction-length given (0 is given, and refused as 1 is) */
static size_t induction_length(size_t given, const ModelConfig *cfg) {
    if (given != INDUCTION_DEFAULT) return given;
    return cfg->block_size / 2 < 128 ? cfg->block_size / 2 : 128;
}

typedef struct InspectArgs {
    size_t prompt_bytes, ind_len, ind_seqs;
} InspectArgs;

/* The induction batch (its sequences of 2 x length tokens, as whole blocks),
 * and for the prompt (at most one token per byte) a map per head of every
 * layer and the logit lens. */
static ReadingNeeds needs(const ModelConfig *cfg, const void *ctx) {
    const InspectArgs *a = ctx;
    size_t T = a->prompt_bytes < cfg->block_size ? a->prompt_bytes : cfg->block_size;
    size_t ind_tokens = a->ind_seqs * 2 * induction_length(a->ind_len, cfg);
    size_t blocks = (ind_tokens + cfg->block_size - 1) / cfg->block_size;
    size_t maps = (cfg->n_layer * cfg->n_head * T * T + T * (cfg->n_embd + cfg->vocab_size)) * sizeof(float);
    return (ReadingNeeds){blocks > 1 ? blocks : 1, maps, "maps and the logit lens",
                          "use fewer --induction-seqs or a shorter --induction-length"};
}

/* The files bin/inspect wrote, by what the layers showed. */
static void print_written(const char *dir, const Inspection *in, double seconds) {
    char *sb = NULL;
    const char *names[REPORT_NAMES_MAX];
    size_t n = report_names(in, EXHIBIT_MAPS, names, REPORT_NAMES_MAX);
    for (size_t i = 0; i < n; i++) sb_appendf(&sb, " maps %s_L<layer>_H<head>.png and %s_L<layer>.png,", names[i], names[i]);
    if (report_any_maps(in)) sb_appendf(&sb, " every head in heads.png,");
    if (report_any_maps(in) || report_any(in, EXHIBIT_TABLE)) sb_appendf(&sb, " heads.txt,");
    n = report_names(in, EXHIBIT_SERIES, names, REPORT_NAMES_MAX);
    for (size_t i = 0; i < n; i++) sb_appendf(&sb, " %s.png,", names[i]);
    printf("wrote %s:%s attribution.png, lens.txt, tokens.txt, inspect.json; all of it in inspect.html, for a browser (%.1f s)\n",
           dir, sb ? sb : "", seconds);
    sb_free(&sb);
}

int main(int argc, char **argv) {
    Error setup_err; /* first: it may restart the program with faster kernels */
    if (blas_setup(argc, argv, &setup_err)) return cli_error(program.name, "%s", setup_err.msg);
    cleanup_on_signals(program.name); /* temporaries and locks go with a signal (lm/files.h) */
    const char *model_path = NULL, *prompt = NULL, *out_dir = NULL, *prompt_path = NULL;
    size_t ind_len = INDUCTION_DEFAULT, ind_seqs = 8, seed = 1337, threads = 0;
    OptionRow opts[] = {
        CLI_TEXT("model", 'm', &model_path, "CKPT",
                 "checkpoint from bin/train, or a run folder (bin/train --run):\nits best.ckpt (its ckpt when it has none), said on stderr"),
        CLI_TEXT("prompt", 'p', &prompt, "TEXT", "1 to block_size tokens, every character in the model's vocabulary"),
        CLI_TEXT("prompt-file", 0, &prompt_path, "FILE", "the prompt from a text file, as it stands (newlines too),\nthrough the model's own tokenizer"),
        CLI_TEXT("out", 'o', &out_dir, "DIR", "output directory (created if missing)"),
        CLI_SIZE("induction-length", 0, &ind_len, 0, 1u << 20, "N",
                 "random tokens per copy for the induction test\n(default block_size / 2 up to 128; at most block_size / 2)"),
        CLI_SIZE("induction-seqs", 0, &ind_seqs, 0, 1024, "K", "random sequences averaged (default 8)"),
        CLI_SIZE("seed", 0, &seed, 0, 1e18, "S", "seed of the random sequences (default 1337)"),
        CLI_SIZE("threads", 0, &threads, 0, 1024, "N", "OpenMP/OpenBLAS threads (default: all cores)"),
    };
    int rc = cli_parse(&program, opts, sizeof opts / sizeof opts[0], argc, argv, NULL);
    if (rc != CLI_CONTINUE) return rc;
    const char *prog = program.name;
    if (!model_path) return cli_error(prog, "--model is required (see --help)");
    if (prompt && prompt_path) return cli_error(prog, "--prompt and --prompt-file cannot be used together");
    if (!prompt && !prompt_path) return cli_error(prog, "--prompt is required (or --prompt-file; see --help)");
    if (!out_dir) return cli_error(prog, "--out is required (see --help)");
    Error out_err;
    char ckpt[PATH_BUF], note[2 * PATH_BUF];
    if (run_folder_model(model_path, ckpt, sizeof ckpt, note, sizeof note, &out_err) < 0)
        return cli_error(prog, "%s", out_err.msg);
    if (*note) cli_note(prog, "%s", note);
    model_path = ckpt;
    NamedPath model_input = {"--model", model_path};
    if (output_check(out_dir, "--out", OUTPUT_DIR, &model_input, 1, &out_err)) return cli_error(prog, "%s", out_err.msg);
    if (ind_seqs == 0) return cli_error(prog, "--induction-seqs must be at least 1");
    char *file_prompt = NULL;
    if (prompt_path && !(prompt = file_prompt = read_text_file(prompt_path, "--prompt-file", &out_err))) return cli_error(prog, "%s", out_err.msg);
    if (!*prompt) {
        free(file_prompt);
        return cli_error(prog, "the prompt is empty");
    }
    threads_use(threads);

    Model m;
    Tokenizer tok;
    Error err;
    InspectArgs args = {strlen(prompt), ind_len, ind_seqs};
    if (model_open_checked(model_path, needs, &args, &m, &tok, &err)) {
        free(file_prompt);
        return cli_error(prog, "%s", err.msg);
    }
    size_t Tm = m.cfg.block_size, T;
    ind_len = induction_length(ind_len, &m.cfg);
    int32_t *tokens = NULL;
    Inspection in = {0};
    Induction ind = {0};
    double t0 = cli_now();
    if (inspect_prompt(&m, &tok, prompt, &tokens, &T, &err)) rc = cli_error(prog, "%s", err.msg);
    else if (ind_len < 2 || 2 * ind_len > Tm)
        rc = cli_error(prog, "--induction-length must be between 2 and block_size / 2 = %zu (got %zu)", Tm / 2, ind_len);
    else if (inspect_induction(&ind, &m, ind_len, ind_seqs, seed, &err) || inspect_run(&in, &m, tokens, T, &err) ||
             inspect_write(out_dir, &in, &ind, &tok, prompt, &err))
        rc = cli_error(prog, "%s", err.msg);
    else {
        inspect_print(stdout, &in, &ind, &tok);
        print_written(out_dir, &in, cli_now() - t0);
        rc = 0;
    }
    inspect_free(&in);
    induction_free(&ind);
    free(tokens);
    tokenizer_free(&tok);
    model_free(&m);
    free(file_prompt);
    return rc;
}
