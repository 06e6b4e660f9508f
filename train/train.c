/* bin/train: trains a model on a prepared data directory.
 * forward -> backward -> all-reduce over the ranks -> clip -> AdamW, with
 * warm-up + cosine schedule, gradient accumulation, periodic validation,
 * logging and checkpoints (atomic), Ctrl-C that saves, exact resume, and new
 * runs from a checkpoint's weights (--init: fine-tuning); one
 * process, or a job of several under mpirun (lm/dist.h), where rank 0
 * prints, logs and checkpoints for all. The run's options are
 * train/run_options.h, its set-up train/run.h, its step train/trainer.h;
 * this file parses, loops and prints. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/bf16.h"
#include "lm/blas_setup.h"
#include "lm/cli.h"
#include "lm/options.h"
#include "lm/batch.h"
#include "lm/checkpoint.h"
#include "lm/files.h"
#include "loop.h"
#include "model_options.h"
#include "recipe.h"
#include "run_config.h"
#include "run.h"
#include "run_dir.h"
#include "run_report.h"
#include "say.h"
#include "lm/threads.h"

static const CliProgram program = {
    .name = "train",
    .usage = "bin/train --data DIR --out CKPT [options]\nbin/train --data DIR --run runs/NAME [options]\n"
             "bin/train --config FILE [options]\nbin/train --resume CKPT_OR_RUN [options]\n"
             "bin/train --data DIR --out CKPT --init CKPT [options]",
    .about = "Trains a Transformer, Grassmann or hybrid language model on DIR (from bin/prepare).\n",
    .after = "\n"
             "On several processes: mpirun -np N bin/train ... (Open MPI). Micro-batch i of a step goes\n"
             "to rank i mod N, so N ranks with --grad-accum A train exactly as one process with\n"
             "--grad-accum N*A; rank 0 prints, logs and writes the checkpoint, which resumes on any\n"
             "number of ranks. --threads is per rank (default: the cores / the ranks on the machine).\n",
    .column = 29,
};

/* What this invocation does besides the run's options. */
typedef struct Actions {
    int count_only, profile, no_loss_mask, json, print_config;
    const char *config; /* --config FILE: read into the arguments before they are parsed */
} Actions;

/* bin/train's option table: the program's own rows, the mixers' text
 * options among them, then the run options (run_options.h's rows, the
 * mixers' and optimizers' own among them, each with base o), whose
 * "given" bits tell resume which ones the command line set. Kept after
 * parsing: --print-config and the run folder's config.json are written
 * from it. */
typedef struct Table {
    OptionRow opts[64 + RUN_MAX_MIXER_TEXTS + RUN_TEXT_ROWS + 64];
    size_t n, first_run, n_run;
    char mixer_help[MODEL_MIXER_HELP];
    CliArgs args; /* with --config FILE's options: the values point into them (cli_args_free at the end) */
} Table;

static int build_table(Table *t, RunOptions *o, Actions *a) {
    OptionRow own[] = {
        CLI_TEXT("config", 0, &a->config, "FILE",
                 "an experiment file: a JSON object of these options by their long\n"
                 "names (\"lr\": 3e-4, \"no-loss-mask\": true); options given here win"),
        CLI_FLAG("print-config", 0, &a->print_config,
                 "print the effective options as an experiment file and exit\n"
                 "(--config reads it back to the same run)"),
        CLI_TEXT("data", 'd', &o->data, "DIR", "prepared data directory (train.bin, val.bin, tokenizer.txt)"),
        CLI_TEXT("run", 0, &o->run, "DIR",
                 "a run folder, created: its checkpoint (DIR/ckpt), the best by\n"
                 "validation loss (DIR/best.ckpt), the log (DIR/log.csv and\n"
                 "DIR/log.jsonl) and the options (DIR/config.json); continue it\n"
                 "with --resume DIR"),
        CLI_TEXT("out", 'o', &o->out, "CKPT", "checkpoint to write (safetensors; written atomically;\nwith --resume, by default the one resumed, continued in place)"),
        CLI_TEXT("resume", 0, &o->resume, "CKPT",
                 "continue a run exactly where CKPT (or the run folder CKPT) stopped;\n"
                 "the model, the run's options and its data (refused if that changed)\n"
                 "come from CKPT (run options given here win)"),
        CLI_TEXT("init", 0, &o->init, "CKPT",
                 "start a new run from CKPT's weights (fine-tuning): its model and\n"
                 "tokenizer, a fresh optimizer state, step 0, and this command's run\n"
                 "options; model options given must equal CKPT's (--dropout may differ)"),
    };
    const OptionRow recipe = CLI_TEXT("recipe", 0, &o->recipe, "R",
                                      "gpt2 | modern: a preset of the architecture options and the\n"
                                      "optimizer, as if given first (options given win); modern =\n"
                                      "--pos rope --norm-type rmsnorm --mlp-act relu2 --qk-norm 1\n"
                                      "--untied-head 1 --zero-init 1 --logit-softcap 15\n"
                                      "--optimizer muon; gpt2 = the defaults (gpt2)");
    OptionRow own_rest[] = {
        CLI_TEXT("precision", 0, &o->precision_given, "P",
                 "fp32 | bf16: the matrix products in fp32, or with bf16 inputs\nand fp32 accumulation (CPUs with AVX512_BF16;\nweights, gradients, optimizer, LayerNorm, softmax and\nloss stay fp32); a resumed run keeps its own (fp32)"),
        CLI_TEXT("optimizer", 0, &o->optimizer_given, "O",
                 "adamw | muon: AdamW on every tensor, or Muon on the hidden\nlayers' matrices with AdamW (at --lr) on the rest\n(embeddings, head, gains, biases); a resumed run keeps its own (adamw)"),
        CLI_TEXT("log", 0, &o->log, "FILE", "per-step log for plotting: CSV, or JSON lines if FILE ends in .jsonl"),
        CLI_TEXT("dump-grads", 0, &o->dump, "FILE", "write weights, gradients, loss and the first batch, then exit"),
        CLI_FLAG("count-params", 0, &a->count_only, "print the model's parameter count and exit"),
        CLI_FLAG("profile", 0, &a->profile, "at the end, print where a step's time went, per part"),
        CLI_FLAG("json", 0, &a->json,
                 "print one JSON object at the end instead of the progress text\n"
                 "(the model, its memory and FLOPs, the BLAS kernel, the last losses, the profile)"),
        CLI_FLAG("no-loss-mask", 0, &a->no_loss_mask,
                 "learn every target even where DIR has train.mask / val.mask\n"
                 "(by default only the targets they mark are in the loss)"),
    };
    enum { N_OWN = sizeof own / sizeof own[0], N_REST = sizeof own_rest / sizeof own_rest[0] };
    size_t n_run_options;
    const OptionRow *run = run_option_rows(&n_run_options);
    if (n_run_options > 64) return cli_error(program.name, "internal: %zu run options, room for 64", n_run_options);
    memcpy(t->opts, own, sizeof own);
    size_t n = N_OWN;
    n += model_text_rows(o, t->opts + n, t->mixer_help); /* the model's, shared with bin/info --mixers */
    t->opts[n++] = recipe;
    n += model_mixer_text_rows(o, t->opts + n);
    memcpy(t->opts + n, own_rest, sizeof own_rest);
    n += N_REST;
    n += run_text_rows(o, t->opts + n); /* --best-by */
    t->first_run = n;
    t->n_run = n_run_options;
    for (size_t i = 0; i < n_run_options; i++) t->opts[n++] = option_row_for(&run[i], o); /* offsets into o */
    t->n = n;
    return CLI_CONTINUE;
}

/* The command line (after --config FILE's options, then --recipe's) into o
 * and a; CLI_CONTINUE to go on, else the exit status. */
static int parse(int argc, char **argv, RunOptions *o, Actions *a, Table *t) {
    int rc = build_table(t, o, a);
    if (rc != CLI_CONTINUE) return rc;
    Error err;
    if (cli_config_args(t->opts, t->n, argc, argv, &t->args, &err)) return cli_error(program.name, "%s", err.msg);
    int full_argc;
    char **full_argv;
    if (recipe_expand(t->args.argc, t->args.argv, &full_argc, &full_argv, &err))
        return cli_error(program.name, "%s", err.msg);
    rc = cli_parse(&program, t->opts, t->n, full_argc, full_argv, NULL);
    if (full_argv != t->args.argv) free(full_argv);
    for (size_t i = 0; i < t->n_run; i++) o->given |= (uint64_t)t->opts[t->first_run + i].given << i;
    return rc;
}

/* The checks of the command line that need no file. */
static int check(RunOptions *o, const Actions *a, const Dist *dist) {
    const char *prog = program.name;
    Error err; /* a resumed run's optimizer is the checkpoint's: run_options_from_json checks it */
    if (run_options_parse_texts(o, &err) || (!o->resume && run_check_optimizer_options(o, &err)))
        return cli_error(prog, "%s", err.msg);
    if (o->precision == PRECISION_BF16 && bf16_require("--precision bf16", &err))
        return cli_error(prog, "%s (use fp32)", err.msg);
    if (!o->data) return cli_error(prog, "--data DIR is required (see --help)");
    if (!o->out && !o->dump && !a->count_only) return cli_error(prog, "--out CKPT is required (see --help)");
    if (o->dump && dist->size > 1) return cli_error(prog, "--dump-grads runs in one process (this job has %d ranks)", dist->size);
    /* Each rank's clock differs, and the learning rate would follow it. */
    if (o->max_seconds > 0 && dist->size > 1)
        return cli_error(prog, "--max-seconds runs in one process (this job has %d ranks)", dist->size);
    return CLI_CONTINUE;
}

/* Writes the gradient dump of the run's first batch (--dump-grads). */
static int dump_grads(Run *r, Error *err) {
    Model *m = &r->model;
    size_t B = r->o.batch_size, T = r->o.cfg.block_size;
    model_zero_grads(m);
    batch_sample(&r->ds.train, &r->data_rng, B, T, r->o.window_align, r->masks.train.marked, r->inputs, r->targets);
    model_forward(m, r->inputs, r->targets, B, T, NULL);
    model_backward(m, 1.0f, NULL);
    if (model_bf16_failed(m, err) || grads_dump(r->o.dump, m, err)) return -1;
    say("wrote %s: loss %.6f, %zu parameters, batch %zu x %zu\n", r->o.dump, m->run.loss, m->weights.n_params, B, T);
    return 0;
}

/* The run: its start-up lines, the loop (loop.h), then --profile's and
 * --json's report. */
static int train(Run *r, const Actions *a) {
    TrainLoop loop;
    Error err;
    if (train_loop_open(&loop, r, a->profile, &err)) return cli_error(program.name, "%s", err.msg);
    run_print_start(r, &loop.tuner, thread_tuner_start(&loop.tuner));
    int rc = train_loop_run(&loop, program.name);
    if (a->profile && say_on) profile_print(stdout, &loop.prof, loop.train_secs);
    if (a->json && r->dist->rank == 0 && (rc == 0 || rc == 130))
        run_print_json(r, loop.tuner.cand[0], loop.step, loop.loss, loop.val_loss, cli_now() - loop.t_start, &loop.prof,
                   loop.train_secs);
    train_loop_close(&loop);
    return rc;
}

/* One line when warm-up outlasts the run: its learning rate never reaches --lr. */
static void warn_short_run(const RunOptions *o, const Dist *dist) {
    if (dist->rank == 0 && o->max_seconds <= 0 && o->warmup_iters > o->max_iters)
        fprintf(stderr, "%s: warning: --warmup-iters %zu exceeds the run's %zu steps: the learning rate never reaches "
                        "--lr %g (lower --warmup-iters)\n", program.name, o->warmup_iters, o->max_iters, o->lr);
}

int main(int argc, char **argv) {
    Error setup_err; /* first: it may restart the program with faster kernels */
    if (blas_setup(argc, argv, &setup_err)) return cli_error(program.name, "%s", setup_err.msg);
    cleanup_on_signals(program.name); /* temporaries and locks go with a signal (lm/files.h) */
    const char *prog = program.name;
    Dist dist;
    Error err;
    if (dist_init(&dist, &argc, &argv, &err)) {
        fprintf(stderr, "%s: error: %s\n", prog, err.msg);
        return 1;
    }
    if (dist.rank != 0) { /* rank 0 speaks for the job */
        cli_set_quiet(1);
        if (!freopen("/dev/null", "w", stdout)) fclose(stdout);
    }
    RunOptions o;
    Actions a = {0};
    Run r = {0};
    static Table table; /* static: the rows are large */
    run_options_defaults(&o);
    int rc = dist_check_args(&dist, argc, argv, &err) ? cli_error(prog, "%s", err.msg) /* every rank parses the same */
                                                      : parse(argc, argv, &o, &a, &table);
    if (rc == CLI_CONTINUE && a.print_config) rc = run_config_print(table.opts, table.n, &o, (size_t)dist.size, prog);
    if (rc == CLI_CONTINUE && (run_dir_setup(&o, &err) || run_resume_defaults(&o, &err))) rc = cli_error(prog, "%s", err.msg);
    o.no_loss_mask = a.no_loss_mask;
    if (rc == CLI_CONTINUE) rc = check(&o, &a, &dist);
    OutputLock lock = {.fd = -1};
    if (rc == CLI_CONTINUE && !a.count_only && run_claim_output(&o, &dist, prog, &lock, &err)) rc = cli_error(prog, "%s", err.msg);
    if (rc == CLI_CONTINUE) {
        say_on = !a.json;
        threads_use(threads_per_rank(o.threads, dist.local_size)); /* --threads is per rank */
        if (run_open(&r, &o, &dist, a.count_only, &err)) rc = cli_error(prog, "%s", err.msg);
        else if (!a.count_only && r.o.precision == PRECISION_BF16 && run_check_bf16(&r, &err)) rc = cli_error(prog, "%s", err.msg);
        else if (a.count_only) printf("%zu\n", r.model.weights.n_params), rc = 0;
        else if (o.dump) rc = dump_grads(&r, &err) ? cli_error(prog, "%s", err.msg) : 0;
        else if (dist.rank == 0 && o.run && run_config_write(table.opts, table.n, &o, &r.o, prog, &err))
            rc = cli_error(prog, "%s", err.msg);
        else {
            warn_short_run(&r.o, &dist);
            rc = train(&r, &a);
        }
    }
    run_close(&r);
    output_unlock(&lock);
    cli_args_free(&table.args);
    free(o.data_owned);
    dist_finalize(&dist);
    return rc;
}
