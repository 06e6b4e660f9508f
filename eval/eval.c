/* bin/eval: loss, perplexity and bits per character (or byte) of a model
 * over a whole held-out token file, or a text file through the model's own
 * tokenizer; or its accuracy on downstream tasks (downstream.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lm/files.h"
#include "lm/blas_setup.h"
#include "lm/cli.h"
#include "lm/run_folder.h"
#include "lm/options.h"
#include "lm/token_mask.h"
#include "lm/tokens.h"
#include "lm/json.h"
#include "lm/checkpoint.h"
#include "downstream.h"
#include "evaluate.h"
#include "lm/threads.h"

static const CliProgram program = {
    .name = "eval",
    .usage = "bin/eval --model CKPT --data DIR|FILE [options]\nbin/eval --model CKPT --text FILE [options]\n"
             "bin/eval --model CKPT [--pairs FILE] [--cloze FILE] [--choice FILE] [options]",
    .about = "Scores every token of a held-out token file once (or of a text file, encoded\n"
             "in memory by the model's own tokenizer) and reports the loss in nats, the\n"
             "perplexity, bits per character (char tokenizer) or token, and bits per byte.\n"
             "Or scores downstream tasks (--pairs, --cloze, --choice): each one's accuracy\n"
             "with its 95% interval, its counts and its categories (docs/evals.md).\n",
    .column = 24,
};

/* --ablate "L:PART[,L:PART...]": leaves part PART of layer L out
 * (model_ablate) for each pair; with offsets (--ablate-offset "L:D,..."),
 * the part is "offsetD", Grassmann's window offset D. A one-line reason
 * in err otherwise. */
static int ablate_parts(Model *m, const char *list, int offsets, Error *err) {
    for (const char *at = list; *at;) {
        char *end, part[MIXER_PART_NAME];
        unsigned long long layer = strtoull(at, &end, 10);
        if (end == at || *end != ':') goto bad;
        at = end + 1;
        size_t len = strcspn(at, ",");
        if (len == 0 || len >= sizeof part - 6) goto bad;
        snprintf(part, sizeof part, "%s%.*s", offsets ? "offset" : "", (int)len, at);
        if (offsets && strspn(at, "0123456789") != len) goto bad;
        if (model_ablate(m, (size_t)layer, part, err)) return -1;
        at += len + (at[len] == ',');
    }
    return 0;
bad:
    return err_set(err, offsets ? "--ablate-offset takes LAYER:OFFSET pairs separated by commas (got '%s')"
                                : "--ablate takes LAYER:PART pairs separated by commas (got '%s')",
                   list);
}

static int quiet = 0;
static void progress(size_t done, size_t total) {
    if (quiet || !isatty(2)) return;
    fprintf(stderr, "\reval: %zu/%zu windows", done, total);
    if (done == total) fprintf(stderr, "\r%*s\r", 40, "");
}

/* Windows per forward pass: --batch-size, or by default 16 and at most 4,096
 * tokens, so that a model of GPT-2's block (1,024) and vocabulary (50,257),
 * whose logits take 200 KB a token, scores 4 windows at a time: as fast, and
 * 13 GiB less than 16. */
static size_t eval_batch(size_t given, const ModelConfig *cfg) {
    if (given) return given;
    size_t most = 4096 / cfg->block_size;
    return most < 1 ? 1 : (most > 16 ? 16 : most);
}

/* The tokens, kept as 32-bit ids while they are scored, are ours. */
static ReadingNeeds needs(const ModelConfig *cfg, const void *ctx) {
    const size_t *batch_and_tokens = ctx;
    return (ReadingNeeds){eval_batch(batch_and_tokens[0], cfg), batch_and_tokens[1] * sizeof(uint32_t),
                          "the tokens as 32-bit ids", "use a smaller --batch-size"};
}

/* --text: the file encoded in memory by the model's tokenizer (read from the
 * checkpoint's header), with the text each token stands for; nothing written. */
static int encode_text(const char *model_path, const char *text_path, TokenFile *tf, Error *err) {
    size_t len;
    char *text = read_file(text_path, &len, err);
    if (!text) return -1;
    Tokenizer tok;
    int rc = ckpt_read_tokenizer(model_path, &tok, err);
    if (rc == 0) {
        rc = tokens_from_text(tf, &tok, text, len, err);
        tokenizer_free(&tok);
    }
    free(text);
    if (rc == 0 && tf->n < 2) {
        rc = err_set(err, "'%s' is %zu token%s of the model's tokenizer: scoring needs at least 2", text_path, tf->n,
                     tf->n == 1 ? "" : "s");
        tokens_free(tf);
    }
    return rc;
}

/* With --weights bf16 or int8: the perplexity in fp32 beside the converted weights'. */
typedef struct WeightsCost {
    WeightsFormat format;
    double fp32_loss, fp32_perplexity;
    int by_steps; /* --decode: both scored through the decode step */
} WeightsCost;

static double cost_percent(const WeightsCost *w, const EvalReport *e) {
    return 100.0 * (e->perplexity / w->fp32_perplexity - 1.0);
}

/* ",\"ablated\":...,\"ablated_offsets\":..." for the lists given. */
static void json_ablated(char **sb, const char *const ablate[2]) {
    const char *keys[2] = {"ablated", "ablated_offsets"};
    for (int k = 0; k < 2; k++)
        if (ablate[k]) {
            sb_appendf(sb, ",\"%s\":", keys[k]);
            sb_append_json_string(sb, ablate[k]);
        }
}

static void print_json(const char *path, const TokenFile *tf, const Model *m, const Tokenizer *tok,
                       const EvalReport *e, int word_ppl, const char *const ablate[2], const WeightsCost *w) {
    const char *unit = tokenizer_unit(tok);
    char *file = NULL;
    sb_append_json_string(&file, path);
    printf("{\"file\":%s,\"tokens\":%zu,\"scored\":%zu,\"windows\":%zu,\"block_size\":%zu,\"stride\":%zu,"
           "\"loss\":%.6f,\"perplexity\":%.6f,\"bits_per_%s\":%.6f",
           file, tf->n, e->r.scored, e->r.windows, m->cfg.block_size, e->stride, e->r.loss, e->perplexity, unit, e->bits);
    if (strcmp(unit, "byte") != 0 && e->bytes) printf(",\"bytes\":%zu,\"bits_per_byte\":%.6f", e->bytes, e->bits_per_byte);
    if (word_ppl && e->words) printf(",\"words\":%zu,\"word_perplexity\":%.6f", e->words, e->word_perplexity);
    if (w->format != WEIGHTS_FP32)
        printf(",\"weights\":\"%s\",\"fp32_loss\":%.6f,\"fp32_perplexity\":%.6f,\"weights_cost_percent\":%.4f",
               weights_format_name(w->format), w->fp32_loss, w->fp32_perplexity, cost_percent(w, e));
    printf(",\"scored_by\":\"%s\"", w->by_steps ? "decode" : "forward");
    sb_free(&file);
    json_ablated(&file, ablate);
    if (file) fputs(file, stdout);
    sb_free(&file);
}

static void print_text(const char *path, const Model *m, const Tokenizer *tok, const EvalReport *e, int word_ppl,
                       const WeightsCost *w) {
    const char *unit = tokenizer_unit(tok);
    printf("%s: %zu tokens scored in %zu windows (block %zu, stride %zu)\n"
           "loss %.4f nats | perplexity %.4f | %.4f bits per %s\n",
           path, e->r.scored, e->r.windows, m->cfg.block_size, e->stride, e->r.loss, e->perplexity, e->bits, unit);
    if (strcmp(unit, "byte") != 0 && e->bytes) printf("%.4f bits per byte (%zu bytes of text)\n", e->bits_per_byte, e->bytes);
    if (word_ppl && e->words) printf("word perplexity %.4f (%zu words)\n", e->word_perplexity, e->words);
    if (w->format != WEIGHTS_FP32)
        printf("weights %s: perplexity %.4f against %.4f in fp32 (%+.3f%%)\n", weights_format_name(w->format),
               e->perplexity, w->fp32_perplexity, cost_percent(w, e));
    if (w->by_steps) printf("scored through the decode step, a token at a time, as bin/sample decodes\n");
}

/* Windows per forward pass, and what bin/eval keeps beside the model. */
static ReadingNeeds task_needs(const ModelConfig *cfg, const void *ctx) {
    return (ReadingNeeds){eval_batch(*(const size_t *)ctx, cfg), 0, "", "use a smaller --batch-size"};
}

/* --pairs, --cloze, --choice: each file read (all checked before the model
 * loads), then scored by the model as --ablate, --ablate-offset and
 * --weights leave it, and reported in the order of the options' table. Without
 * --batch-size, each forward holds as many sequences as the tokens of the
 * default batch of windows (what the memory check counted). */
static int run_tasks(const char *prog, const char *model_path, const char *const paths[N_TASKS], size_t batch,
                     const char *const ablate[2], WeightsFormat weights, int json, int items) {
    DsTask tasks[N_TASKS] = {0};
    Error err;
    int rc = 0;
    for (int k = 0; k < N_TASKS && rc == 0; k++)
        if (paths[k] && ds_read((TaskKind)k, paths[k], &tasks[k], &err)) rc = cli_error(prog, "%s", err.msg);
    Model m;
    Tokenizer tok;
    if (rc == 0 && model_open_checked(model_path, task_needs, &batch, &m, &tok, &err)) rc = cli_error(prog, "%s", err.msg);
    else if (rc == 0) {
        size_t tokens = eval_batch(0, &m.cfg) * m.cfg.block_size;
        if ((ablate[0] && ablate_parts(&m, ablate[0], 0, &err)) || (ablate[1] && ablate_parts(&m, ablate[1], 1, &err)) ||
            model_set_weights(&m, weights, &err))
            rc = cli_error(prog, "%s", err.msg);
        DsResult results[N_TASKS] = {0}; /* all scored before any is printed: an error prints none */
        for (int k = 0; k < N_TASKS && rc == 0; k++)
            if (paths[k] && ds_score(&m, &tok, &tasks[k], batch, tokens, !json, &results[k], &err))
                rc = cli_error(prog, "%s", err.msg);
        if (json && rc == 0) {
            char *s = NULL;
            sb_appendf(&s, "{\"model\":");
            sb_append_json_string(&s, model_path);
            json_ablated(&s, ablate);
            fputs(s, stdout);
            sb_free(&s);
        }
        for (int k = 0; k < N_TASKS && rc == 0; k++) {
            if (!paths[k]) continue;
            if (json) printf(","), ds_print_json(stdout, &results[k], items);
            else ds_print_text(stdout, &results[k], items);
        }
        if (json && rc == 0) printf("}\n");
        for (int k = 0; k < N_TASKS; k++) ds_result_free(&results[k]);
        tokenizer_free(&tok);
        model_free(&m);
    }
    for (int k = 0; k < N_TASKS; k++) ds_task_free(&tasks[k]);
    return rc;
}

int main(int argc, char **argv) {
    Error setup_err; /* first: it may restart the program with faster kernels */
    if (blas_setup(argc, argv, &setup_err)) return cli_error(program.name, "%s", setup_err.msg);
    cleanup_on_signals(program.name); /* temporaries and locks go with a signal (lm/files.h) */
    const char *model_path = NULL, *data = NULL, *text_path = NULL, *split = "val", *mask_arg = NULL;
    const char *ablate[2] = {NULL, NULL}; /* --ablate, --ablate-offset */
    size_t stride = 0, batch = 0, threads = 0; /* batch 0: eval_batch's default */
    int json = 0, word_ppl = 0, items = 0;
    const char *task_paths[N_TASKS] = {0}; /* --pairs, --cloze, --choice */
    const char *weights = "fp32";
    EvalDetail detail = {0}; /* --by-position, --split-recall, --mask */
    OptionRow opts[] = {
        CLI_TEXT("model", 'm', &model_path, "CKPT",
                 "checkpoint from bin/train, or a run folder (bin/train --run):\nits best.ckpt (its ckpt when it has none), said on stderr"),
        CLI_TEXT("data", 'd', &data, "DIR|FILE", "a prepared directory (uses --split) or a token file"),
        CLI_TEXT("text", 0, &text_path, "FILE",
                 "instead of --data: a text file, encoded in memory by the\nmodel's own tokenizer (nothing is written)"),
        CLI_TEXT("split", 0, &split, "NAME", "val or test, with a directory (default val)"),
        CLI_SIZE("stride", 0, &stride, 0, 1u << 20, "S",
                 "slide windows by S tokens so every scored token after the\nfirst window has at least block_size - S of context\n"
                 "(default block_size: disjoint windows)"),
        CLI_SIZE("batch-size", 0, &batch, 0, 4096, "B",
                 "windows (a task's sequences) per forward pass (default 16,\nfewer when that is more than 4096 tokens)"),
        CLI_SIZE("threads", 0, &threads, 0, 1024, "N", "OpenMP/OpenBLAS threads (default: all cores)"),
        CLI_FLAG("word-ppl", 0, &word_ppl, "also perplexity per whitespace-separated word"),
        CLI_FLAG("json", 0, &json, "print one JSON object instead of text"),
        CLI_FLAG("by-position", 0, &detail.by_position, "also the mean loss at each position of the window"),
        CLI_SIZE("split-recall", 0, &detail.recall_n, 0, 1u << 16, "N",
                 "also the loss on tokens that complete an N-gram seen earlier in\n"
                 "their window (recallable from context) and on all others"),
        CLI_TEXT("ablate", 0, &ablate[0], "L:PART,...",
                 "leave part PART of layer L out, for the loss without what it\nbrings: a head (head0 ...) or "
                 "a window offset (offset4 ...),\nas the layer's mixer names its parts (a wrong name lists them)"),
        CLI_TEXT("ablate-offset", 0, &ablate[1], "L:D,...", "the same as --ablate L:offsetD"),
        CLI_TEXT("weights", 0, &weights, "W",
                 "fp32 | bf16 | int8 (per 32 entries of a row, a scale): score\nthe model with its weight matrices "
                 "converted as bin/sample\n--weights reads them, and say the perplexity in fp32 beside (fp32)"),
        CLI_FLAG("decode", 0, &detail.by_steps,
                 "score through bin/sample's decode step, a token at a time,\nnot the forward (slower): with --weights int8, "
                 "whose steps\nquantise each product's input as well, the perplexity of\nwhat bin/sample decodes"),
        CLI_TEXT("mask", 0, &mask_arg, "FILE",
                 "score only the tokens FILE marks (default: the token file's\nname with .mask for .bin, when that file exists)"),
        CLI_HEADING("downstream tasks, instead of --data or --text (docs/evals.md):"),
        CLI_TEXT("pairs", 0, &task_paths[TASK_PAIRS], "FILE",
                 "minimal pairs, BLiMP's JSON lines: right when the good\nsentence has the higher log-probability"),
        CLI_TEXT("cloze", 0, &task_paths[TASK_CLOZE], "FILE",
                 "passages, one a line (LAMBADA's plain text): the last word\npredicted greedily, and its perplexity"),
        CLI_TEXT("choice", 0, &task_paths[TASK_CHOICE], "FILE",
                 "multiple choice, HellaSwag's JSON lines: right when the\nlabelled ending is likeliest, summed and per byte"),
        CLI_FLAG("items", 0, &items, "also each item's log-probabilities and verdict"),
    };
    size_t n_opts = sizeof opts / sizeof opts[0];
    int rc = cli_parse(&program, opts, n_opts, argc, argv, NULL);
    if (rc != CLI_CONTINUE) return rc;
    const char *prog = program.name;
    if (cli_option(opts, n_opts, "stride")->given && stride == 0) return cli_error(prog, "--stride must be positive");
    if (cli_option(opts, n_opts, "batch-size")->given && batch == 0)
        return cli_error(prog, "--batch-size must be positive");
    if (cli_option(opts, n_opts, "split-recall")->given && detail.recall_n == 0)
        return cli_error(prog, "--split-recall needs an n-gram length of at least 1");
    if (data && text_path) return cli_error(prog, "--data and --text cannot be used together: a token file, or a text to encode");
    int tasks = task_paths[TASK_PAIRS] || task_paths[TASK_CLOZE] || task_paths[TASK_CHOICE];
    if (tasks && (data || text_path))
        return cli_error(prog, "--pairs, --cloze and --choice are instead of --data and --text (run bin/eval twice)");
    if (tasks && (stride || word_ppl || detail.by_position || detail.recall_n || mask_arg || detail.by_steps ||
                  cli_option(opts, n_opts, "split")->given))
        return cli_error(prog, "--stride, --split, --mask, --word-ppl, --by-position, --split-recall and --decode are for "
                               "--data and --text");
    if (items && !tasks) return cli_error(prog, "--items is for --pairs, --cloze and --choice");
    if (!model_path || !(data || text_path || tasks))
        return cli_error(prog, "--model and --data (or --text, or a task: --pairs, --cloze, --choice) are required (see --help)");
    if (text_path && (cli_option(opts, n_opts, "split")->given || mask_arg))
        return cli_error(prog, "--split and --mask are for --data: --text scores the whole text");
    if (strcmp(split, "val") && strcmp(split, "test")) return cli_error(prog, "--split must be val or test (got '%s')", split);
    WeightsCost wc = {.format = WEIGHTS_FP32, .by_steps = detail.by_steps};
    Error err;
    if (weights_format_parse(weights, &wc.format, &err)) return cli_error(prog, "%s", err.msg);
    char ckpt[PATH_BUF], note[2 * PATH_BUF];
    if (run_folder_model(model_path, ckpt, sizeof ckpt, note, sizeof note, &err) < 0) return cli_error(prog, "%s", err.msg);
    if (*note) cli_note(prog, "%s", note);
    model_path = ckpt;
    threads_use(threads);
    quiet = json;
    if (tasks) return run_tasks(prog, model_path, task_paths, batch, ablate, wc.format, json, items);

    char path[4096], tok_path[4096], mask_path[4096];
    TokenFile tf;
    TokenMask mask = {0};
    if (text_path) {
        snprintf(path, sizeof path, "%s", text_path);
        if (encode_text(model_path, text_path, &tf, &err)) return cli_error(prog, "%s", err.msg);
    } else {
        data_paths(data, split, path, tok_path, sizeof path);
        if (tokens_read(path, &tf, &err)) return cli_error(prog, "%s", err.msg);
        if (mask_open_for(&mask, mask_arg, path, tf.n, mask_path, sizeof mask_path, &err)) {
            tokens_free(&tf);
            return cli_error(prog, "%s", err.msg);
        }
    }
    detail.mask = mask.marked;
    Model m;
    Tokenizer tok;
    size_t batch_and_tokens[2] = {batch, tf.n};
    if (model_open_checked(model_path, needs, batch_and_tokens, &m, &tok, &err)) {
        tokens_free(&tf);
        mask_free(&mask);
        return cli_error(prog, "%s", err.msg);
    }
    batch = eval_batch(batch, &m.cfg);
    EvalReport e;
    EvalDetail plain = {.mask = detail.mask, .by_steps = detail.by_steps}; /* the fp32 pass: the same tokens, the same way */
    if ((ablate[0] && ablate_parts(&m, ablate[0], 0, &err)) || (ablate[1] && ablate_parts(&m, ablate[1], 1, &err)) ||
        (!text_path && tokens_check_tokenizer(&tf, path, tok_path, &tok, &err)) ||
        (wc.format != WEIGHTS_FP32 &&
         (evaluate_token_file(&m, &tok, &tf, stride, batch, progress, &plain, &e, &err) ||
          (wc.fp32_loss = e.r.loss, wc.fp32_perplexity = e.perplexity, model_set_weights(&m, wc.format, &err)))) ||
        evaluate_token_file(&m, &tok, &tf, stride, batch, progress, &detail, &e, &err)) {
        rc = cli_error(prog, "%s", err.msg);
    } else {
        rc = 0;
        if (json) print_json(path, &tf, &m, &tok, &e, word_ppl, ablate, &wc);
        else print_text(path, &m, &tok, &e, word_ppl, &wc);
        eval_detail_print(stdout, &detail, &e.r, mask.marked ? mask_path : NULL, json);
        if (json) printf("}\n");
    }
    eval_detail_free(&detail);
    eval_detail_free(&plain);
    mask_free(&mask);
    tokenizer_free(&tok);
    model_free(&m);
    tokens_free(&tf);
    return rc;
}
