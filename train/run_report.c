/* What bin/train prints about a run besides its progress: the start-up
 * lines (the model, the data and batch, the threads and BLAS, the precision
 * with its start-up check, the optimizer and the memory), and the closing
 * --json object that make bench reads. */
#include "run_report.h"

#include <stdio.h>
#include <string.h>

#include "lm/bf16.h"
#include "lm/blas_setup.h"
#include "lm/cpu.h"
#include "lm/json.h"
#include "lm/optim.h"
#include "say.h"

/* What the run holds, in MiB: the weights; gradients and the optimizer's
 * state (its buffers, and its step's scratch); activations; and what
 * --precision bf16 added (model_set_precision's weights' shadow, operand
 * scratch and packed heads, as model_bf16_bytes counts them; 0 in fp32). */
typedef struct MemoryMib {
    double weights, state, activations, bf16;
} MemoryMib;

static MemoryMib memory_mib(const Run *r) {
    const Model *m = &r->model;
    const double mib = 1.0 / (1024.0 * 1024.0);
    double state = (double)(m->weights.n_params + r->optim.n_floats + r->optim.n_scratch) * 4.0;
    return (MemoryMib){(double)m->weights.n_params * 4.0 * mib, state * mib,
                       (double)m->run.n_acts * 4.0 * mib,
                       m->weights.bf16 ? (double)model_bf16_bytes(&m->cfg, m->run.B_max, m->run.T_max) * mib : 0.0};
}

void run_print_start(const Run *r, const ThreadTuner *tuner, size_t start_threads) {
    const RunOptions *o = &r->o;
    const Model *m = &r->model;
    char mixers[1024], own[2200] = "", how[96] = ""; /* how: the tuner's part of the line */
    for (size_t i = 0; i < mixer_count(); i++) { /* each mixer that a layer has: its own part, " | grassmann r 32, ..." */
        const Mixer *mx = mixer_at(i);
        int used = 0;
        for (size_t l = 0; l < o->cfg.n_layer; l++) used |= o->cfg.mixers[l] == mx;
        if (!used || !mx->describe) continue;
        char part[1100];
        mx->describe(config_mixer_settings_of(&o->cfg, mx), o->cfg.n_layer, part, sizeof part);
        if (!*part) continue; /* nothing to say: its settings are the defaults */
        snprintf(own + strlen(own), sizeof own - strlen(own), " | %s", part);
    }
    char recipe[160], switches[200] = "";
    if (config_has_recipe_switch(&o->cfg))
        snprintf(switches, sizeof switches, " | %s", config_recipe_list(&o->cfg, recipe, sizeof recipe));
    say("model: %zu parameters | n_layer %zu, n_head %zu, n_embd %zu, block %zu, vocab %zu | mixers %s | pos %s | norm %s%s%s\n",
           m->weights.n_params, o->cfg.n_layer, o->cfg.n_head, o->cfg.n_embd, o->cfg.block_size, o->cfg.vocab_size,
           config_mixer_list(&o->cfg, mixers, sizeof mixers), pos_name(o->cfg.pos), norm_name(o->cfg.norm), own,
           switches);
    size_t width = tuner->cand[0];
    if (tuner->adaptive && start_threads < width)
        snprintf(how, sizeof how, " (fewer while that is faster; starting with %zu: the other cores are busy)", start_threads);
    else if (tuner->adaptive) snprintf(how, sizeof how, " (fewer while that is faster)");
    say("train: %zu tokens, val %zu | batch %zu x %zu x accum %zu | steps %zu..%zu of %zu | %zu threads%s\n",
           r->ds.train.n, r->ds.val.n, o->batch_size, o->cfg.block_size, o->grad_accum, r->start_step, o->stop_at,
           o->max_iters, width, how);
    if (o->init)
        say("init: the weights of %s; a new run: a fresh optimizer state, step 0, this run's schedule\n", o->init);
    say("blas: %s | %zu threads | isa %s\n", blas_describe(), width, cpu_isa_describe());
    if (o->precision == PRECISION_BF16)
        say("precision: bf16 products, fp32 accumulation | %s, %s | checked at the model's shapes: worst %.2f of "
            "its bound\n", bf16_library(), r->bf16_impl, r->bf16_worst);
    else
        say("precision: fp32\n");
    if (r->masks.train.marked || r->masks.val.marked)
        say("loss mask: only the targets marked in%s%s are in the loss (--no-loss-mask: all)\n",
               r->masks.train.marked ? " train.mask" : "", r->masks.val.marked ? " val.mask" : "");
    if (r->dist->size > 1)
        say("mpi: %d ranks (%d on this machine) x %zu threads | micro-batch i of a step on rank i mod %d | "
               "all-reduce of %.1f MiB per step, started layer by layer during backward\n",
               r->dist->size, r->dist->local_size, width, r->dist->size, (double)m->weights.n_params * 4.0 / (1024.0 * 1024.0));
    MemoryMib mem = memory_mib(r);
    char bf16_mem[96] = ""; /* the bf16 weights, the scratch of one product's rounded operands, packed heads */
    if (m->weights.bf16) snprintf(bf16_mem, sizeof bf16_mem, ", bf16 weights and operands %.1f MiB", mem.bf16);
    const Optimizer *opt = o->optimizer;
    if (opt->describe) { /* an AdamW run's lines are as they were before Muon */
        char line[320];
        ParamView params = params_view(m);
        opt->describe(&params, o->optim_settings[optimizer_index(opt)].bytes, o->lr, line, sizeof line);
        say("%s\n", line);
    }
    say("memory: weights %.1f MiB, gradients and %s %.1f MiB, activations %.1f MiB%s\n", mem.weights,
        opt->describe ? "optimizer state" : "AdamW moments", mem.state, mem.activations, bf16_mem);
    fflush(stdout);
}

int run_check_bf16(Run *r, Error *err) {
    const Model *m = &r->model;
    size_t N = r->o.batch_size * r->o.cfg.block_size, n = 0;
    Bf16Shape shapes[8];
    for (size_t i = 0; i < m->weights.n_tensors && n < 8; i++) {
        const ParamTensor *t = &m->weights.tensors[i];
        if (!model_is_product_weight(m, t)) continue;
        Bf16Shape s = {N, t->rows, t->cols};
        int seen = 0;
        for (size_t j = 0; j < n; j++) seen |= shapes[j].n == s.n && shapes[j].k == s.k;
        if (!seen) shapes[n++] = s;
    }
    int rc = dist_agree(r->dist, bf16_check(shapes, n, false, &r->bf16_worst, err) != 0, err);
    threads_use(0); /* bf16_check leaves the parallel width at its default: the run's again */
    if (rc) return -1;
    return bf16_gemm_impl(0, 1, N, shapes[0].n, shapes[0].k, shapes[0].k, shapes[0].k, shapes[0].n, r->bf16_impl,
                          sizeof r->bf16_impl, err);
}

void run_print_json(const Run *r, size_t threads, size_t step, float loss, float val_loss, double seconds,
                       const Profile *prof, double prof_seconds) {
    const RunOptions *o = &r->o;
    const Model *m = &r->model;
    MemoryMib mem = memory_mib(r);
    ModelFlops f = model_flops(m, o->cfg.block_size);
    char *config = config_to_json(&o->cfg), *blas = NULL;
    sb_append_json_string(&blas, blas_describe());
    printf("{\"program\":\"train\",\"params\":%zu,\"config\":%s,\"blas\":%s,\"blas_kernel\":\"%s\",\"isa\":\"%s\",\"threads\":%zu,"
           "\"ranks\":%d,\"precision\":\"%s\",\"batch\":%zu,\"block\":%zu,\"grad_accum\":%zu,\"tokens_per_step\":%zu,",
           m->weights.n_params, config, blas, blas_kernel(), cpu_isa_name(cpu_isa()), threads, r->dist->size, precision_name(o->precision), o->batch_size, o->cfg.block_size,
           o->grad_accum, o->batch_size * o->cfg.block_size * o->grad_accum * (size_t)r->dist->size);
    printf("\"memory_mib\":{\"weights\":%.6g,\"state\":%.6g,\"activations\":%.6g,\"bf16\":%.6g},",
           mem.weights, mem.state, mem.activations, mem.bf16);
    printf("\"flops_per_token\":{\"dense\":%.17g,\"mixing\":%.17g,\"total\":%.17g},\"matrices\":[", f.dense, f.mixing,
           f.total);
    int first = 1;
    for (size_t i = 0; i < m->weights.n_tensors; i++) {
        const ParamTensor *t = &m->weights.tensors[i];
        if (!model_is_product_weight(m, t)) continue;
        printf("%s{\"name\":\"%s\",\"rows\":%zu,\"cols\":%zu}", first ? "" : ",", t->name, t->rows, t->cols);
        first = 0;
    }
    printf("],\"start_step\":%zu,\"step\":%zu,", r->start_step, step);
    char num[JSON_NUMBER_MAX];
    printf("\"train_loss\":%s,", json_number(num, "%.6f", loss));
    printf("\"val_loss\":%s,\"val_loss_kind\":\"%s\",", json_number(num, "%.6f", val_loss),
           o->best_full ? "full" : "estimate");
    printf("\"seconds\":%.3f,\"profile\":", seconds);
    profile_json(stdout, prof, prof_seconds);
    printf("}\n");
    free(config);
    sb_free(&blas);
}
