#include "checkpoint.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ds.h"

#define CKPT_FORMAT "lm-ckpt 1"
#define CHECKSUM_KEY "\"checksum\":\"fnv1a64:"
#define CHECKSUM_DIGITS 16

static size_t tensor_bytes(const StTensor *t) {
    size_t n = 4;
    for (size_t d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

static uint64_t file_checksum(const char *buf, size_t len, size_t digits_at) {
    uint64_t h = fnv1a(FNV_OFFSET, buf, digits_at);
    h = fnv1a(h, "0000000000000000", CHECKSUM_DIGITS);
    return fnv1a(h, buf + digits_at + CHECKSUM_DIGITS, len - digits_at - CHECKSUM_DIGITS);
}

int st_write(const char *path, const StTensor *tensors, size_t n, const StMeta *meta, size_t n_meta, Error *err) {
    char *h = NULL;
    sb_appendf(&h, "{\"__metadata__\":{" CHECKSUM_KEY "0000000000000000\"");
    for (size_t i = 0; i < n_meta; i++) {
        sb_appendf(&h, ",");
        sb_append_json_string(&h, meta[i].key);
        sb_appendf(&h, ":");
        sb_append_json_string(&h, meta[i].value);
    }
    sb_appendf(&h, "}");
    size_t offset = 0;
    for (size_t i = 0; i < n; i++) {
        const StTensor *t = &tensors[i];
        sb_appendf(&h, ",");
        sb_append_json_string(&h, t->name);
        sb_appendf(&h, ":{\"dtype\":\"%s\",\"shape\":[", t->dtype == ST_F32 ? "F32" : "I32");
        for (size_t d = 0; d < t->ndim; d++) sb_appendf(&h, "%s%zu", d ? "," : "", t->shape[d]);
        sb_appendf(&h, "],\"data_offsets\":[%zu,%zu]}", offset, offset + tensor_bytes(t));
        offset += tensor_bytes(t);
    }
    sb_appendf(&h, "}");
    while ((strlen(h) + 8) % 8) sb_appendf(&h, " ");
    size_t hlen = strlen(h), total = 8 + hlen + offset;
    char *buf = lm_calloc(total, 1, err);
    if (!buf) {
        sb_free(&h);
        return -1;
    }
    for (int i = 0; i < 8; i++) buf[i] = (char)((uint64_t)hlen >> (8 * i));
    memcpy(buf + 8, h, hlen);
    sb_free(&h);
    char *data = buf + 8 + hlen;
    for (size_t i = 0; i < n; i++) {
        /* x86 and every target we build for are little-endian, as the format is. */
        memcpy(data, tensors[i].data, tensor_bytes(&tensors[i]));
        data += tensor_bytes(&tensors[i]);
    }
    size_t at = (size_t)(strstr(buf + 8, CHECKSUM_KEY) - buf) + strlen(CHECKSUM_KEY);
    char digits[CHECKSUM_DIGITS + 1];
    snprintf(digits, sizeof digits, "%016" PRIx64, file_checksum(buf, total, at));
    memcpy(buf + at, digits, CHECKSUM_DIGITS);
    int rc = write_file_atomic(path, buf, total, err);
    free(buf);
    return rc;
}

int st_open(StFile *f, const char *path, Error *err) {
    memset(f, 0, sizeof *f);
    f->buf = read_file(path, &f->len, err);
    if (!f->buf) return -1;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0 && f->len >= 8; i--) hlen = hlen << 8 | (unsigned char)f->buf[i];
    if (f->len < 8 || hlen < 2 || hlen > f->len - 8) {
        st_close(f);
        return err_set(err, "'%s' is not a safetensors checkpoint (bad or truncated header)", path);
    }
    Error perr;
    f->header = json_parse(f->buf + 8, (size_t)hlen, &perr);
    if (!f->header || f->header->type != JSON_OBJECT) {
        st_close(f);
        return err_set(err, "'%s' is corrupt: header is not valid JSON", path);
    }
    f->data_start = 8 + (size_t)hlen;
    char *key = memmem(f->buf + 8, (size_t)hlen, CHECKSUM_KEY, strlen(CHECKSUM_KEY));
    size_t at = key ? (size_t)(key - f->buf) + strlen(CHECKSUM_KEY) : 0;
    const char *stored = st_meta(f, "checksum");
    char digits[CHECKSUM_DIGITS + 1];
    if (!key || !stored || at + CHECKSUM_DIGITS > f->data_start) {
        st_close(f);
        return err_set(err, "'%s' is corrupt or not ours: no checksum in its metadata", path);
    }
    snprintf(digits, sizeof digits, "%016" PRIx64, file_checksum(f->buf, f->len, at));
    int checksum_ok = strlen(stored) == 8 + CHECKSUM_DIGITS && memcmp(stored + 8, digits, CHECKSUM_DIGITS) == 0;
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    checksum_ok = 1; /* the fuzzers skip the checksum: the parsing behind it is what they test */
#endif
    if (!checksum_ok) {
        st_close(f);
        return err_set(err, "'%s' is corrupt: checksum mismatch (truncated or modified file)", path);
    }
    return 0;
}

const char *st_meta(const StFile *f, const char *key) {
    const Json *v = json_get(json_get(f->header, "__metadata__"), key);
    return v && v->type == JSON_STRING ? v->str : NULL;
}

int st_has(const StFile *f, const char *name) { return json_get(f->header, name) != NULL; }

int st_read(const StFile *f, const char *name, StDtype dtype, size_t ndim, const size_t *shape, void *dst, Error *err) {
    const Json *t = json_get(f->header, name);
    if (!t) return err_set(err, "checkpoint has no tensor '%s'", name);
    const Json *dt = json_get(t, "dtype"), *sh = json_get(t, "shape"), *off = json_get(t, "data_offsets");
    if (!dt || dt->type != JSON_STRING || strcmp(dt->str, dtype == ST_F32 ? "F32" : "I32") != 0)
        return err_set(err, "tensor '%s' has the wrong dtype", name);
    size_t count = 1;
    if (!sh || sh->type != JSON_ARRAY || json_len(sh) != ndim) return err_set(err, "tensor '%s' has the wrong rank", name);
    for (size_t d = 0; d < ndim; d++) {
        if (sh->items[d].num != (double)shape[d])
            return err_set(err, "tensor '%s' has shape dimension %g, expected %zu", name, sh->items[d].num, shape[d]);
        count *= shape[d];
    }
    if (!off || json_len(off) != 2) return err_set(err, "tensor '%s' has no data offsets", name);
    double a = off->items[0].num, b = off->items[1].num;
    if (a < 0 || b < a || b - a != (double)(count * 4) || (double)f->data_start + b > (double)f->len)
        return err_set(err, "tensor '%s' has bad data offsets", name);
    memcpy(dst, f->buf + f->data_start + (size_t)a, count * 4);
    return 0;
}

void st_close(StFile *f) {
    free(f->buf);
    json_free(f->header);
    memset(f, 0, sizeof *f);
}

/* ---- checkpoints ---------------------------------------------------------- */

static StTensor param_tensor(const ParamTensor *pt, const char *name, const float *base) {
    StTensor t = {name, ST_F32, pt->cols ? 2 : 1, {pt->rows, pt->cols}, base + pt->offset};
    return t;
}

void ckpt_state_free(CkptState *s) {
    free(s->train);
    free(s->tokenizer_text);
    s->train = s->tokenizer_text = NULL;
}

int ckpt_save(const char *path, const Model *m, const CkptState *s, Error *err) {
    int with_optim = m->m != NULL;
    size_t nt = m->n_tensors, total = nt * (with_optim ? 3 : 1);
    StTensor *ts = lm_calloc(total, sizeof *ts, err);
    char (*names)[TENSOR_NAME_MAX + 16] = ts ? lm_calloc(total, sizeof *names, err) : NULL;
    if (!names) {
        free(ts);
        return -1;
    }
    for (size_t i = 0; i < nt; i++) {
        const ParamTensor *pt = &m->tensors[i];
        ts[i] = param_tensor(pt, pt->name, m->params);
        if (with_optim) {
            snprintf(names[nt + i], sizeof names[0], "optim.m.%s", pt->name);
            snprintf(names[2 * nt + i], sizeof names[0], "optim.v.%s", pt->name);
            ts[nt + i] = param_tensor(pt, names[nt + i], m->m);
            ts[2 * nt + i] = param_tensor(pt, names[2 * nt + i], m->v);
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
    return rc;
}

static int read_params(const StFile *f, const Model *m, float *base, const char *prefix, Error *err) {
    for (size_t i = 0; i < m->n_tensors; i++) {
        const ParamTensor *pt = &m->tensors[i];
        char name[TENSOR_NAME_MAX + 16];
        snprintf(name, sizeof name, "%s%s", prefix, pt->name);
        size_t shape[2] = {pt->rows, pt->cols};
        if (st_read(f, name, ST_F32, pt->cols ? 2 : 1, shape, base + pt->offset, err)) return -1;
    }
    return 0;
}

int ckpt_load(const char *path, Model *m, CkptState *s, int with_optim, Error *err) {
    memset(s, 0, sizeof *s);
    StFile f;
    if (st_open(&f, path, err)) return -1;
    int rc = -1;
    const char *format = st_meta(&f, "format"), *config = st_meta(&f, "config"), *step = st_meta(&f, "step");
    const char *rng = st_meta(&f, "data_rng"), *tok = st_meta(&f, "tokenizer"), *train = st_meta(&f, "train");
    if (!format || strcmp(format, CKPT_FORMAT) != 0 || !config || !step || !rng || !tok || strlen(tok) != 16) {
        err_set(err, "'%s' is not a checkpoint of this program (metadata missing)", path);
        goto done;
    }
    ModelConfig cfg;
    Error cerr;
    if (config_from_json(&cfg, config, &cerr)) {
        err_set(err, "'%s': bad config: %s", path, cerr.msg);
        goto done;
    }
    /* A header may claim any size: the tensors it describes must be in the
     * file before anything is allocated for them. */
    size_t need = model_count_params(&cfg) * sizeof(float) * (with_optim ? 3 : 1);
    if (config_validate(&cfg, &cerr) || need == 0 || need > f.len - f.data_start) {
        err_set(err, "'%s' is corrupt: its config needs %zu bytes of tensors, it holds %zu", path, need,
                f.len - f.data_start);
        goto done;
    }
    if (model_alloc(m, &cfg, err)) goto done; /* every tensor is read below */
    if (read_params(&f, m, m->params, "", err)) goto bad;
    if (with_optim) {
        if (model_alloc_training(m, err)) goto bad;
        if (read_params(&f, m, m->m, "optim.m.", err) || read_params(&f, m, m->v, "optim.v.", err)) goto bad;
    }
    s->step = (size_t)strtoull(step, NULL, 10);
    s->data_rng = strtoull(rng, NULL, 10);
    memcpy(s->tokenizer, tok, 17);
    s->train = strdup(train ? train : "{}");
    const char *tt = st_meta(&f, "tokenizer_text");
    s->tokenizer_text = tt && *tt ? strdup(tt) : NULL;
    rc = 0;
    goto done;
bad:
    {
        Error e2;
        snprintf(e2.msg, sizeof e2.msg, "'%s': %s", path, err->msg);
        *err = e2;
    }
    model_free(m);
done:
    st_close(&f);
    return rc;
}

int model_open(const char *path, Model *m, Tokenizer *tok, Error *err) {
    CkptState st;
    if (ckpt_load(path, m, &st, 0, err)) return -1;
    int rc = 0;
    if (!st.tokenizer_text) rc = err_set(err, "'%s' holds no tokenizer", path);
    else if (tokenizer_from_text(tok, st.tokenizer_text, path, err)) rc = -1;
    else if (strcmp(tok->hash, st.tokenizer) != 0 || tok->vocab_size != m->cfg.vocab_size) {
        tokenizer_free(tok);
        rc = err_set(err, "'%s' is corrupt: its tokenizer does not match its hash or vocabulary", path);
    }
    ckpt_state_free(&st);
    if (rc) model_free(m);
    return rc;
}

int grads_dump(const char *path, const Model *m, Error *err) {
    size_t nt = m->n_tensors;
    StTensor *ts = lm_calloc(2 * nt + 2, sizeof *ts, err);
    char (*names)[TENSOR_NAME_MAX + 16] = ts ? lm_calloc(nt, sizeof *names, err) : NULL;
    if (!names) {
        free(ts);
        return -1;
    }
    for (size_t i = 0; i < nt; i++) {
        const ParamTensor *pt = &m->tensors[i];
        snprintf(names[i], sizeof names[0], "grad.%s", pt->name);
        ts[i] = param_tensor(pt, pt->name, m->params);
        ts[nt + i] = param_tensor(pt, names[i], m->grads);
    }
    ts[2 * nt] = (StTensor){"inputs", ST_I32, 2, {m->B, m->T}, m->inputs};
    ts[2 * nt + 1] = (StTensor){"targets", ST_I32, 2, {m->B, m->T}, m->targets};
    char *config = config_to_json(&m->cfg);
    char loss[32];
    snprintf(loss, sizeof loss, "%.9g", m->loss);
    StMeta meta[] = {{"format", "lm-grads 1"}, {"config", config}, {"loss", loss}};
    int rc = st_write(path, ts, 2 * nt + 2, meta, 3, err);
    free(config);
    free(names);
    free(ts);
    return rc;
}
