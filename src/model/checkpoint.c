/* Checkpoints: the model, its optimizer's state and the run's state in a safetensors file (see lm/checkpoint.h). */
#include "lm/checkpoint.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/machine.h"
#include "lm/options.h"

#define CKPT_FORMAT "lm-ckpt 1"

/* Tensor pt's shape, named name, its floats at data. */
static StTensor param_tensor(const ParamTensor *pt, const char *name, const float *data) {
    StTensor t = {.name = name, .dtype = ST_F32, .ndim = pt->cols ? 2 : 1, .shape = {pt->rows, pt->cols}, .data = data};
    return t;
}

void ckpt_state_free(CkptState *s) {
    free(s->train);
    free(s->tokenizer_text);
    s->train = s->tokenizer_text = NULL;
}

/* The largest tensor's floats. */
static size_t largest_tensor(const Model *m) {
    size_t most = 0;
    for (size_t i = 0; i < m->weights.n_tensors; i++) {
        size_t n = m->weights.tensors[i].rows * (m->weights.tensors[i].cols ? m->weights.tensors[i].cols : 1);
        most = n > most ? n : most;
    }
    return most;
}

int ckpt_save(const char *path, const Model *m, const OptimBuffers *optim, const CkptState *s, Error *err) {
    size_t nt = m->weights.n_tensors, nb = optim ? optim->n_names : 0, total = nt * (1 + nb);
    StTensor *ts = lm_calloc(total, sizeof *ts, err);
    char (*names)[TENSOR_NAME_MAX + 16] = ts ? lm_calloc(total, sizeof *names, err) : NULL;
    /* What a buffer the optimizer does not keep is written as (OptimBuffers). */
    float *zeros = names && nb ? lm_calloc(largest_tensor(m), sizeof(float), err) : NULL;
    if (!names || (nb && !zeros)) {
        free(ts), free(names);
        return -1;
    }
    for (size_t i = 0; i < nt; i++) {
        const ParamTensor *pt = &m->weights.tensors[i];
        ts[i] = param_tensor(pt, pt->name, m->weights.params + pt->offset);
        for (size_t k = 0; k < nb; k++) { /* all of buffer "m", then all of "v": the format's order */
            size_t at = (1 + k) * nt + i;
            float *buf = optim->buf[i * nb + k];
            snprintf(names[at], sizeof names[0], "optim.%s.%s", optim->names[k], pt->name);
            ts[at] = param_tensor(pt, names[at], buf ? buf : zeros);
        }
    }
    char *config = config_to_json(&m->cfg);
    char step[32], rng[32];
    snprintf(step, sizeof step, "%zu", s->step);
    snprintf(rng, sizeof rng, "%" PRIu64, s->data_rng);
    StMeta meta[] = {{"format", CKPT_FORMAT}, {"config", config}, {"step", step}, {"data_rng", rng},
                     {"tokenizer", s->tokenizer}, {"tokenizer_text", s->tokenizer_text ? s->tokenizer_text : ""},
                     {"train", s->train ? s->train : "{}"}};
    int rc = st_write(path, ts, total, meta, sizeof meta / sizeof meta[0], err);
    free(config);
    free(names);
    free(ts);
    free(zeros);
    return rc;
}

int ckpt_save_model(const char *path, const Model *m, const Tokenizer *tok, Error *err) {
    CkptState s = {.step = 0, .tokenizer_text = tokenizer_to_text(tok)};
    if (!s.tokenizer_text) return err_set(err, "out of memory");
    memcpy(s.tokenizer, tok->hash, sizeof s.tokenizer);
    int rc = ckpt_save(path, m, NULL, &s, err);
    free(s.tokenizer_text);
    return rc;
}

static int read_params(const StFile *f, const Model *m, float *base, const char *prefix, Error *err) {
    for (size_t i = 0; i < m->weights.n_tensors; i++) {
        const ParamTensor *pt = &m->weights.tensors[i];
        char name[TENSOR_NAME_MAX + 16];
        snprintf(name, sizeof name, "%s%s", prefix, pt->name);
        size_t shape[2] = {pt->rows, pt->cols};
        if (st_read(f, name, ST_F32, pt->cols ? 2 : 1, shape, base + pt->offset, err)) return -1;
    }
    return 0;
}

/* Every tensor in the file is one the config claims: the weights, and
 * either no moments or all of them. The claimed ones were each read (at
 * their shape) already, so an equal count leaves no room for another: a
 * checkpoint whose config was edited (an untied head said tied, a LayerNorm
 * model said RMSNorm) is refused, never loaded with tensors left unread. */
static int check_claimed(const StFile *f, const Model *m, const char *path, Error *err) {
    size_t n_file;
    const char **names = st_names(f, &n_file, err);
    if (!names) return -1;
    size_t moments = 0;
    for (size_t i = 0; i < n_file; i++) moments += strncmp(names[i], "optim.", 6) == 0;
    size_t claimed = m->weights.n_tensors + (moments ? 2 * m->weights.n_tensors : 0);
    int rc = 0;
    if (n_file != claimed) {
        const char *extra = NULL; /* the first name its config does not give */
        for (size_t i = 0; i < n_file && !extra; i++) {
            const char *base = names[i];
            if (strncmp(base, "optim.m.", 8) == 0 || strncmp(base, "optim.v.", 8) == 0) base += 8;
            int known = 0;
            for (size_t t = 0; t < m->weights.n_tensors && !known; t++)
                known = strcmp(base, m->weights.tensors[t].name) == 0;
            if (!known) extra = names[i];
        }
        if (extra)
            rc = err_set(err, "'%s' is corrupt: it holds tensor '%s', which its config does not have", path, extra);
        else
            rc = err_set(err, "'%s' is corrupt: it holds %zu tensors, its config claims %zu (the weights, and optimizer "
                              "moments for all of them or none)", path, n_file, claimed);
    }
    free(names);
    return rc;
}

/* The model config in a checkpoint's header. A header may claim any size:
 * the tensors it describes must be in the file (file_len bytes) before
 * anything is allocated for them. */
static int header_config(const StFile *f, size_t file_len, int with_optim, const char *path, ModelConfig *cfg,
                         Error *err) {
    const char *format = st_meta(f, "format"), *config = st_meta(f, "config");
    if (!format || strcmp(format, CKPT_FORMAT) != 0 || !config)
        return err_set(err, "'%s' is not a checkpoint of this program (metadata missing)", path);
    Error cerr;
    if (config_from_json(cfg, config, &cerr) || model_check_config(cfg, &cerr))
        return err_set(err, "'%s': bad config: %s", path, cerr.msg);
    size_t need = model_count_params(cfg) * sizeof(float) * (with_optim ? 3 : 1);
    if (model_check_config(cfg, &cerr) || need == 0 || need > file_len - f->data_start)
        return err_set(err, "'%s' is corrupt: its config needs %zu bytes of tensors, it holds %zu", path, need,
                       file_len - f->data_start);
    return 0;
}

int ckpt_read_config(const char *path, ModelConfig *cfg, size_t *file_bytes, Error *err) {
    StFile f;
    if (st_open_header(&f, path, file_bytes, err)) return -1;
    int rc = header_config(&f, *file_bytes, 0, path, cfg, err);
    st_close(&f);
    return rc;
}

int ckpt_has_moments(const char *path, int *has, Error *err) {
    StFile f;
    size_t file_bytes;
    if (st_open_header(&f, path, &file_bytes, err)) return -1;
    *has = st_has(&f, "optim.m.wte") && st_has(&f, "optim.v.wte"); /* wte: every model's first tensor */
    st_close(&f);
    return 0;
}

/* Before loading for inference: one line and -1 when the file (read whole
 * while loading), the weights, activations for want->batch sequences of
 * block_size tokens and want->bytes of the program's own do not fit the
 * memory available. */
static int check_memory(const char *path, const ModelConfig *cfg, size_t file_bytes, const ReadingNeeds *want,
                        Error *err) {
    char who[256], what[256];
    snprintf(who, sizeof who, "loading '%s'", path);
    snprintf(what, sizeof what, "the file, read whole; the weights; activations for %zu x %zu tokens%s%s", want->batch,
             cfg->block_size, want->bytes ? "; " : "", want->bytes ? want->what : "");
    return memory_check(file_bytes + model_memory_bytes(cfg, want->batch, cfg->block_size, 0, 0) + want->bytes, who,
                        what, want->advice, err);
}

/* A number in the header's metadata, checked as the command line's numbers
 * are (digits only, at most max): a header that lies is refused, not read as
 * 0 or wrapped round. */
static int header_number(const char *value, size_t max, const char *key, const char *path, size_t *out, Error *err) {
    Error perr;
    if (parse_size(value, max, out, key, &perr)) return err_set(err, "'%s' is corrupt: %s", path, perr.msg);
    return 0;
}

int ckpt_open(CkptFile *f, const char *path, Error *err) {
    f->path = path;
    return st_open(&f->st, path, err);
}

void ckpt_close(CkptFile *f) { st_close(&f->st); }

/* err, prefixed with the checkpoint's path. */
static int in_file(const char *path, Error *err) {
    Error e2;
    snprintf(e2.msg, sizeof e2.msg, "'%s': %s", path, err->msg);
    *err = e2;
    return -1;
}

int ckpt_read_model(CkptFile *file, Model *m, CkptState *s, int with_optim, Error *err) {
    memset(s, 0, sizeof *s);
    const StFile *f = &file->st;
    const char *path = file->path;
    const char *step = st_meta(f, "step"), *rng = st_meta(f, "data_rng"), *tok = st_meta(f, "tokenizer");
    const char *train = st_meta(f, "train");
    ModelConfig cfg;
    if (header_config(f, f->len, with_optim, path, &cfg, err)) return -1;
    if (!step || !rng || !tok || strlen(tok) != 16)
        return err_set(err, "'%s' is not a checkpoint of this program (metadata missing)", path);
    if (model_alloc(m, &cfg, err)) return -1; /* every tensor is read below */
    size_t data_rng;
    if (read_params(f, m, m->weights.params, "", err)) in_file(path, err);
    else if (check_claimed(f, m, path, err) == 0 && header_number(step, MAX_STEPS, "step", path, &s->step, err) == 0 &&
             header_number(rng, UINT64_MAX, "data_rng", path, &data_rng, err) == 0) {
        s->data_rng = data_rng;
        memcpy(s->tokenizer, tok, 17);
        s->train = strdup(train ? train : "{}");
        const char *tt = st_meta(f, "tokenizer_text");
        s->tokenizer_text = tt && *tt ? strdup(tt) : NULL;
        return 0;
    }
    model_free(m);
    return -1;
}

int ckpt_read_optim(CkptFile *file, const Model *m, const OptimBuffers *o, Error *err) {
    /* A buffer the optimizer does not keep is read here and dropped (OptimBuffers). */
    float *dropped = lm_calloc(largest_tensor(m), sizeof(float), err);
    if (!dropped) return -1;
    int rc = 0;
    for (size_t k = 0; k < o->n_names && rc == 0; k++)
        for (size_t i = 0; i < m->weights.n_tensors && rc == 0; i++) {
            const ParamTensor *pt = &m->weights.tensors[i];
            char name[TENSOR_NAME_MAX + 16];
            snprintf(name, sizeof name, "optim.%s.%s", o->names[k], pt->name);
            size_t shape[2] = {pt->rows, pt->cols};
            float *buf = o->buf[i * o->n_names + k];
            if (st_read(&file->st, name, ST_F32, pt->cols ? 2 : 1, shape, buf ? buf : dropped, err))
                rc = in_file(file->path, err);
        }
    free(dropped);
    return rc;
}

int ckpt_load(const char *path, Model *m, CkptState *s, Error *err) {
    memset(s, 0, sizeof *s);
    CkptFile f;
    if (ckpt_open(&f, path, err)) return -1;
    int rc = ckpt_read_model(&f, m, s, 0, err);
    ckpt_close(&f);
    return rc;
}

/* A checkpoint's tokenizer from its stored text, which must match the hash
 * and the vocabulary stored beside it. */
static int stored_tokenizer(const char *text, const char *hash, size_t vocab_size, const char *path, Tokenizer *tok,
                            Error *err) {
    if (!text || !*text) return err_set(err, "'%s' holds no tokenizer", path);
    if (tokenizer_from_text(tok, text, path, err)) return -1;
    if (!hash || strcmp(tok->hash, hash) != 0 || tok->vocab_size != vocab_size) {
        tokenizer_free(tok);
        return err_set(err, "'%s' is corrupt: its tokenizer does not match its hash or vocabulary", path);
    }
    return 0;
}

int model_open(const char *path, Model *m, Tokenizer *tok, Error *err) {
    CkptState st;
    if (ckpt_load(path, m, &st, err)) return -1;
    int rc = stored_tokenizer(st.tokenizer_text, st.tokenizer, m->cfg.vocab_size, path, tok, err);
    ckpt_state_free(&st);
    if (rc) model_free(m);
    return rc;
}

int ckpt_read_train(const char *path, char **train, Error *err) {
    *train = NULL;
    StFile f;
    size_t file_len;
    ModelConfig cfg;
    if (st_open_header(&f, path, &file_len, err)) return -1;
    int rc = header_config(&f, file_len, 0, path, &cfg, err);
    const char *t = st_meta(&f, "train");
    if (rc == 0 && !(*train = strdup(t ? t : "{}"))) rc = err_set(err, "out of memory");
    st_close(&f);
    return rc;
}

int ckpt_read_header(const char *path, CkptHeader *h, Error *err) {
    memset(h, 0, sizeof *h);
    StFile f;
    if (st_open_header(&f, path, &h->file_bytes, err)) return -1;
    int rc = header_config(&f, h->file_bytes, 0, path, &h->cfg, err);
    const char *step = st_meta(&f, "step"), *tok = st_meta(&f, "tokenizer"), *train = st_meta(&f, "train");
    if (rc == 0 && step) rc = header_number(step, 100000000, "step", path, &h->step, err);
    if (rc == 0 && tok && strlen(tok) == 16) memcpy(h->tokenizer, tok, 17);
    h->moments = st_has(&f, "optim.m.wte") && st_has(&f, "optim.v.wte");
    if (rc == 0 && !(h->train = strdup(train ? train : "{}"))) rc = err_set(err, "out of memory");
    if (rc == 0)
        rc = stored_tokenizer(st_meta(&f, "tokenizer_text"), st_meta(&f, "tokenizer"), h->cfg.vocab_size, path,
                              &h->tok, err);
    if (rc) free(h->train), h->train = NULL;
    st_close(&f);
    return rc;
}

void ckpt_header_free(CkptHeader *h) {
    free(h->train);
    tokenizer_free(&h->tok);
    memset(h, 0, sizeof *h);
}

int ckpt_read_tokenizer(const char *path, Tokenizer *tok, Error *err) {
    memset(tok, 0, sizeof *tok);
    StFile f;
    size_t file_len;
    ModelConfig cfg;
    if (st_open_header(&f, path, &file_len, err)) return -1;
    int rc = header_config(&f, file_len, 0, path, &cfg, err);
    if (rc == 0)
        rc = stored_tokenizer(st_meta(&f, "tokenizer_text"), st_meta(&f, "tokenizer"), cfg.vocab_size, path, tok, err);
    st_close(&f);
    return rc;
}

int model_open_checked(const char *path, ReadingNeeds (*needs)(const ModelConfig *cfg, const void *ctx),
                       const void *ctx, Model *m, Tokenizer *tok, Error *err) {
    ModelConfig cfg;
    size_t file_bytes;
    if (ckpt_read_config(path, &cfg, &file_bytes, err)) return -1;
    ReadingNeeds want = needs ? needs(&cfg, ctx) : (ReadingNeeds){1, 0, NULL, NULL};
    if (check_memory(path, &cfg, file_bytes, &want, err)) return -1;
    return model_open(path, m, tok, err);
}

int grads_dump(const char *path, const Model *m, Error *err) {
    size_t nt = m->weights.n_tensors;
    StTensor *ts = lm_calloc(2 * nt + 2, sizeof *ts, err);
    char (*names)[TENSOR_NAME_MAX + 16] = ts ? lm_calloc(nt, sizeof *names, err) : NULL;
    if (!names) {
        free(ts);
        return -1;
    }
    for (size_t i = 0; i < nt; i++) {
        const ParamTensor *pt = &m->weights.tensors[i];
        snprintf(names[i], sizeof names[0], "grad.%s", pt->name);
        ts[i] = param_tensor(pt, pt->name, m->weights.params + pt->offset);
        ts[nt + i] = param_tensor(pt, names[i], m->weights.grads + pt->offset);
    }
    const ModelRunState *s = &m->run;
    ts[2 * nt] = (StTensor){.name = "inputs", .dtype = ST_I32, .ndim = 2, .shape = {s->B, s->T}, .data = s->inputs};
    ts[2 * nt + 1] = (StTensor){.name = "targets", .dtype = ST_I32, .ndim = 2, .shape = {s->B, s->T}, .data = s->targets};
    char *config = config_to_json(&m->cfg);
    char loss[32];
    snprintf(loss, sizeof loss, "%.9g", m->run.loss);
    StMeta meta[] = {{"format", "lm-grads 1"}, {"config", config}, {"loss", loss}};
    int rc = st_write(path, ts, 2 * nt + 2, meta, 3, err);
    free(config);
    free(names);
    free(ts);
    return rc;
}
