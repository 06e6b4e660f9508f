/* bin/convert: GPT-2 checkpoints between Hugging Face's layout (a
 * save_pretrained directory) and ours (lm/hf.h). */
#include <stdio.h>
#include <string.h>

#include "lm/files.h"
#include "lm/cli.h"
#include "lm/options.h"
#include "lm/checkpoint.h"
#include "lm/hf.h"
#include "lm/tokenizer.h"

static const CliProgram program = {
    .name = "convert",
    .usage = "bin/convert --from-hf DIR --out CKPT\nbin/convert --to-hf CKPT --out DIR",
    .about = "Converts GPT-2 models between a Hugging Face directory (what save_pretrained writes for\n"
             "GPT2LMHeadModel: config.json, model.safetensors in F32, F16 or BF16 or its shards,\n"
             "tokenizer.json or vocab.json + merges.txt) and a checkpoint of ours, which every\n"
             "program reads (step 0, no optimizer state: fine-tune it with bin/train --init).\n"
             "Exports attention-only, learned-position, pre-norm models with a BPE tokenizer.\n",
    .after = "See docs/gpt2.md.\n",
    .column = 20,
};

/* The export holds the weights again, in the file's layout, beside the model. */
static ReadingNeeds export_needs(const ModelConfig *cfg, const void *ctx) {
    (void)ctx;
    return (ReadingNeeds){.batch = 1, .bytes = model_count_params(cfg) * sizeof(float), .what = "the exported weights"};
}

static void describe(const Model *m, const Tokenizer *tok) {
    const ModelConfig *c = &m->cfg;
    printf("GPT-2: %zu layers, %zu heads, n_embd %zu, block %zu, vocabulary %zu (%s), %zu parameters", c->n_layer,
           c->n_head, c->n_embd, c->block_size, c->vocab_size, tok->kind->name, m->weights.n_params);
}

static int from_hf(const char *dir, const char *out) {
    Model m;
    Tokenizer tok;
    HfGpt2Import info;
    Error err;
    if (hf_gpt2_import(dir, &m, &tok, &info, &err)) return cli_error(program.name, "%s", err.msg);
    int rc = ckpt_save_model(out, &m, &tok, &err) ? cli_error(program.name, "%s", err.msg) : 0;
    if (rc == 0) {
        printf("%s -> %s: ", dir, out);
        describe(&m, &tok);
        printf("; %s weights from %zu file%s, lm_head %s\n", info.dtypes, info.files, info.files == 1 ? "" : "s",
               info.lm_head ? "present and equal to wte" : "tied");
    }
    tokenizer_free(&tok);
    model_free(&m);
    return rc;
}

static int to_hf(const char *ckpt, const char *dir) {
    Model m;
    Tokenizer tok;
    Error err;
    if (model_open_checked(ckpt, export_needs, NULL, &m, &tok, &err)) return cli_error(program.name, "%s", err.msg);
    int rc = 0;
    if (hf_gpt2_export(&m, &tok, dir, &err)) {
        rc = cli_error(program.name, "cannot export '%s': %s", ckpt, err.msg);
    } else {
        printf("%s -> %s: ", ckpt, dir);
        describe(&m, &tok);
        printf("; config.json, model.safetensors (F32), tokenizer.json, tokenizer_config.json\n");
    }
    tokenizer_free(&tok);
    model_free(&m);
    return rc;
}

int main(int argc, char **argv) {
    cleanup_on_signals(program.name); /* temporaries and locks go with a signal (lm/files.h) */
    const char *from = NULL, *to = NULL, *out = NULL;
    OptionRow opts[] = {
        CLI_TEXT("from-hf", 0, &from, "DIR", "read a Hugging Face GPT-2 directory"),
        CLI_TEXT("to-hf", 0, &to, "CKPT", "write this checkpoint as a Hugging Face GPT-2 directory"),
        CLI_TEXT("out", 'o', &out, "PATH",
                 "the checkpoint to write (--from-hf; replaced atomically), or the\n"
                 "directory (--to-hf; new or empty: nothing is overwritten)"),
    };
    size_t n_opts = sizeof opts / sizeof opts[0];
    int rc = cli_parse(&program, opts, n_opts, argc, argv, NULL);
    if (rc != CLI_CONTINUE) return rc;
    if (!from == !to) return cli_error(program.name, "give one of --from-hf DIR and --to-hf CKPT (see --help)");
    if (!out) return cli_error(program.name, "--out is required (see --help)");
    Error err;
    NamedPath input = {from ? "--from-hf" : "--to-hf", from ? from : to};
    if (output_check(out, "--out", from ? OUTPUT_FILE : OUTPUT_DIR, &input, 1, &err))
        return cli_error(program.name, "%s", err.msg);
    return from ? from_hf(from, out) : to_hf(to, out);
}
