#include "model/checkpoint.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ds.h"
#include "runtime/files.h"
#include "runtime/hash.h"
#include "runtime/machine.h"

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

/* The header length in a file's first 8 bytes (0 if it has fewer). */
static uint64_t st_header_len(const char *buf, size_t len) {
    uint64_t hlen = 0;
    for (int i = 7; i >= 0 && len >= 8; i--) hlen = hlen << 8 | (unsigned char)buf[i];
    return hlen;
}

/* Parses the header in f->buf (f->len bytes: the whole file or only its
 * head) of a file of file_len bytes. */
static int st_parse_header(StFile *f, size_t file_len, const char *path, Error *err) {
    uint64_t hlen = st_header_len(f->buf, f->len);
    if (f->len < 8 || hlen < 2 || hlen > file_len - 8)
        return err_set(err, "'%s' is not a safetensors checkpoint (bad or truncated header)", path);
    if (hlen > ST_HEADER_MAX || hlen > f->len - 8)
        return err_set(err, "'%s' has a %" PRIu64 "-byte header, more than the %d this reader accepts", path, hlen,
                       ST_HEADER_MAX);
    Error perr;
    f->header = json_parse(f->buf + 8, (size_t)hlen, &perr);
    if (!json_is_object(f->header)) return err_set(err, "'%s' is corrupt: header is not valid JSON", path);
    f->data_start = 8 + (size_t)hlen;
    return 0;
}

int st_open(StFile *f, const char *path, Error *err) {
    memset(f, 0, sizeof *f);
    f->buf = read_file(path, &f->len, err);
    if (!f->buf) return -1;
    if (st_parse_header(f, f->len, path, err)) {
        st_close(f);
        return -1;
    }
    char *key = memmem(f->buf + 8, f->data_start - 8, CHECKSUM_KEY, strlen(CHECKSUM_KEY));
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

/* Only the header (no data, no checksum): for a look before loading. */
static int st_open_header(StFile *f, const char *path, size_t *file_len, Error *err) {
    memset(f, 0, sizeof *f);
    char *head = read_file_head(path, 8, &f->len, file_len, err);
    if (!head) return -1;
    uint64_t hlen = st_header_len(head, f->len);
    free(head);
    /* A bad length is reported by st_parse_header from the first 8 bytes. */
    size_t want = 8 + (size_t)(hlen < ST_HEADER_MAX ? hlen : 0);
    f->buf = read_file_head(path, want, &f->len, file_len, err);
    if (!f->buf) return -1;
    if (st_parse_header(f, *file_len, path, err)) {
        st_close(f);
        return -1;
    }
    return 0;
}

const char *st_meta(const StFile *f, const char *key) {
    return json_string_value(json_object_get(json_object_get(f->header, "__metadata__"), key));
}

int st_has(const StFile *f, const char *name) { return json_object_get(f->header, name) != NULL; }

int st_read(const StFile *f, const char *name, StDtype dtype, size_t ndim, const size_t *shape, void *dst, Error *err) {
    const json_t *t = json_object_get(f->header, name);
    if (!t) return err_set(err, "checkpoint has no tensor '%s'", name);
    const char *dt = json_string_value(json_object_get(t, "dtype"));
    const json_t *sh = json_object_get(t, "shape"), *off = json_object_get(t, "data_offsets");
    if (!dt || strcmp(dt, dtype == ST_F32 ? "F32" : "I32") != 0) return err_set(err, "tensor '%s' has the wrong dtype", name);
    size_t count = 1;
    if (!json_is_array(sh) || json_array_size(sh) != ndim) return err_set(err, "tensor '%s' has the wrong rank", name);
    for (size_t d = 0; d < ndim; d++) {
        size_t dim;
        if (json_size(json_array_get(sh, d), SIZE_MAX, &dim))
            return err_set(err, "tensor '%s' has a shape dimension that is not a size", name);
        if (dim != shape[d]) return err_set(err, "tensor '%s' has shape dimension %zu, expected %zu", name, dim, shape[d]);
        count *= shape[d];
    }
    /* Offsets are integers, so exact beyond 2^53; checked without overflow. */
    size_t a, b, data_len = f->len - f->data_start;
    if (!json_is_array(off) || json_array_size(off) != 2) return err_set(err, "tensor '%s' has no data offsets", name);
    if (json_size(json_array_get(off, 0), data_len, &a) || json_size(json_array_get(off, 1), data_len, &b) || b < a ||
        b - a != count * 4)
        return err_set(err, "tensor '%s' has bad data offsets", name);
    memcpy(dst, f->buf + f->data_start + a, count * 4);
    return 0;
}

void st_close(StFile *f) {
    free(f->buf);
    json_decref(f->header);
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

/* The model config in a checkpoint's header. A header may claim any size:
 * the tensors it describes must be in the file (file_len bytes) before
 * anything is allocated for them. */
static int header_config(const StFile *f, size_t file_len, int with_optim, const char *path, ModelConfig *cfg,
                         Error *err) {
    const char *format = st_meta(f, "format"), *config = st_meta(f, "config");
    if (!format || strcmp(format, CKPT_FORMAT) != 0 || !config)
        return err_set(err, "'%s' is not a checkpoint of this program (metadata missing)", path);
    Error cerr;
    if (config_from_json(cfg, config, &cerr)) return err_set(err, "'%s': bad config: %s", path, cerr.msg);
    size_t need = model_count_params(cfg) * sizeof(float) * (with_optim ? 3 : 1);
    if (config_validate(cfg, &cerr) || need == 0 || need > file_len - f->data_start)
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

int ckpt_check_memory(const char *path, const ModelConfig *cfg, size_t file_bytes, size_t batch, size_t extra_bytes,
                      const char *extra_what, Error *err) {
    char who[256], what[256];
    snprintf(who, sizeof who, "loading '%s'", path);
    snprintf(what, sizeof what, "the file, read whole; the weights; activations for %zu x %zu tokens%s%s", batch,
             cfg->block_size, extra_bytes ? "; " : "", extra_bytes ? extra_what : "");
    return memory_check(file_bytes + model_memory_bytes(cfg, batch, cfg->block_size, 0, 0) + extra_bytes, who, what,
                        NULL, err);
}

int ckpt_load(const char *path, Model *m, CkptState *s, int with_optim, Error *err) {
    memset(s, 0, sizeof *s);
    StFile f;
    if (st_open(&f, path, err)) return -1;
    int rc = -1;
    const char *step = st_meta(&f, "step"), *rng = st_meta(&f, "data_rng"), *tok = st_meta(&f, "tokenizer");
    const char *train = st_meta(&f, "train");
    ModelConfig cfg;
    if (header_config(&f, f.len, with_optim, path, &cfg, err)) goto done;
    if (!step || !rng || !tok || strlen(tok) != 16) {
        err_set(err, "'%s' is not a checkpoint of this program (metadata missing)", path);
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
