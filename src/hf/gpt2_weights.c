/* GPT-2 from Hugging Face's directory into our model: its weights' files
 * found (one, or shards by their index), each tensor checked and placed, in
 * F32, F16 or BF16 (see lm/hf.h and docs/gpt2.md). */
#include "lm/hf.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blas/tile_gemm.h"
#include "lm/json.h"
#include "lm/safetensors.h"
#include "nn/layernorm.h"
#include "lm/ds.h"
#include "lm/files.h"
#include "lm/machine.h"
#include "lm/bpe.h"
#include "hf/tokenizer_import.h"

#include "gpt2.h"

/* ---- the weights' files ------------------------------------------------------------ */

typedef struct WeightFiles {
    char **paths;   /* stb_ds of malloc'd paths */
    char **shards;  /* stb_ds: each path's file name, as the index names it (sharded only) */
    json_t *index;  /* model.safetensors.index.json, or NULL */
    const json_t *weight_map;
    size_t largest; /* bytes of the largest file */
} WeightFiles;

static void weight_files_free(WeightFiles *w) {
    for (ptrdiff_t i = 0; i < arrlen(w->paths); i++) free(w->paths[i]);
    for (ptrdiff_t i = 0; i < arrlen(w->shards); i++) free(w->shards[i]);
    arrfree(w->paths);
    arrfree(w->shards);
    json_decref(w->index);
    memset(w, 0, sizeof *w);
}

static int is_file(const char *path, size_t *bytes) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    if (bytes) *bytes = (size_t)st.st_size;
    return 1;
}

static int add_weight_file(WeightFiles *w, const char *dir, const char *name, Error *err) {
    char path[PATH_BUF];
    size_t bytes;
    if (path_format(path, sizeof path, err, "%s/%s", dir, name)) return -1;
    if (!is_file(path, &bytes)) return err_set(err, "cannot open '%s': not a file", path);
    if (bytes > w->largest) w->largest = bytes;
    arrput(w->paths, strdup(path));
    return 0;
}

/* model.safetensors, or the shards model.safetensors.index.json lists (each
 * a file name in dir, in order of first mention), as from_pretrained looks. */
static int find_weight_files(const char *dir, WeightFiles *w, Error *err) {
    memset(w, 0, sizeof *w);
    char path[PATH_BUF];
    if (path_format(path, sizeof path, err, "%s/model.safetensors.index.json", dir)) return -1; /* the longest name */
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (is_file(path, NULL)) return add_weight_file(w, dir, "model.safetensors", err);
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    if (!is_file(path, NULL)) {
        static const char *others[] = {"pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5",
                                       "flax_model.msgpack"};
        for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
            snprintf(path, sizeof path, "%s/%s", dir, others[i]);
            if (is_file(path, NULL))
                return err_set(err, "'%s' has no model.safetensors, only %s, which this program does not read "
                                    "(save the model with save_pretrained(..., safe_serialization=True))",
                               dir, others[i]);
        }
        return err_set(err, "'%s' has no model.safetensors (nor model.safetensors.index.json)", dir);
    }
    size_t len;
    char *text = read_small_json(path, &len, err);
    if (!text) return -1;
    Error perr;
    w->index = json_parse(text, len, &perr);
    free(text);
    if (!w->index) return err_set(err, "'%s' is not valid JSON: %s", path, perr.msg);
    w->weight_map = json_object_get(w->index, "weight_map");
    if (!json_is_object(w->weight_map) || json_object_size(w->weight_map) == 0)
        return err_set(err, "'%s' has no weight_map of tensor names to files", path);
    const char *name;
    const json_t *file;
    json_object_foreach((json_t *)w->weight_map, name, file) {
        const char *shard = json_string_value(file);
        if (!shard || !*shard || strchr(shard, '/') || !strcmp(shard, ".") || !strcmp(shard, ".."))
            return err_set(err, "'%s' places '%s' in %s, not a file name in its directory", path, name,
                           shard ? shard : "something that is not a string");
        int known = 0;
        for (ptrdiff_t i = 0; i < arrlen(w->shards) && !known; i++) known = strcmp(w->shards[i], shard) == 0;
        if (known) continue;
        if (add_weight_file(w, dir, shard, err)) return -1;
        arrput(w->shards, strdup(shard));
    }
    return 0;
}

/* ---- reading the weights ------------------------------------------------------------ */

typedef enum { SLOT_WEIGHT, SLOT_CONV1D, SLOT_IGNORED, SLOT_LM_HEAD } SlotKind;

typedef struct Slot {
    char name[TENSOR_NAME_MAX + 16]; /* Hugging Face's, without PREFIX */
    SlotKind kind;
    const ParamTensor *ours; /* SLOT_WEIGHT and SLOT_CONV1D */
    int seen;
} Slot;

typedef struct Import {
    const char *dir; /* for messages */
    Model *m;
    Slot *slots;                          /* stb_ds */
    struct { char *key; size_t value; } *by_name; /* stb_ds string map: name -> slot */
    float *scratch;                       /* the largest Conv1D matrix, converted before it is transposed */
    size_t scratch_len;
    unsigned dtypes;                      /* bit i: dtype_names[i] was read */
    size_t seen;                          /* tensors met in all files */
    char *lm_head_path;                   /* the file holding lm_head.weight, when wte.weight came later */
} Import;

static const char *dtype_names[] = {"F32", "F16", "BF16"};

static void add_slot(Import *im, const char *name, SlotKind kind, const ParamTensor *ours) {
    Slot s = {.kind = kind, .ours = ours};
    snprintf(s.name, sizeof s.name, "%s", name);
    arrput(im->slots, s);
}

static int import_init(Import *im, const char *dir, Model *m, Error *err) {
    memset(im, 0, sizeof *im);
    im->dir = dir;
    im->m = m;
    char name[TENSOR_NAME_MAX + 16];
    for (size_t i = 0; i < m->weights.n_tensors; i++) {
        int conv1d;
        if (hf_name(m->weights.tensors[i].name, name, sizeof name, &conv1d))
            return err_set(err, "tensor '%s' has no GPT-2 name", m->weights.tensors[i].name); /* not for a GPT-2 config */
        add_slot(im, name, conv1d ? SLOT_CONV1D : SLOT_WEIGHT, &m->weights.tensors[i]);
        if (conv1d && m->weights.tensors[i].rows * m->weights.tensors[i].cols > im->scratch_len)
            im->scratch_len = m->weights.tensors[i].rows * m->weights.tensors[i].cols;
    }
    for (size_t l = 0; l < m->cfg.n_layer; l++) {
        snprintf(name, sizeof name, "h.%zu.attn.bias", l); /* older files' causal mask, a buffer */
        add_slot(im, name, SLOT_IGNORED, NULL);
        snprintf(name, sizeof name, "h.%zu.attn.masked_bias", l);
        add_slot(im, name, SLOT_IGNORED, NULL);
    }
    add_slot(im, "lm_head.weight", SLOT_LM_HEAD, NULL);
    sh_new_strdup(im->by_name); /* not the arena: stb_ds writes past its char[8] member, which UBSan reports */
    for (ptrdiff_t i = 0; i < arrlen(im->slots); i++) shput(im->by_name, im->slots[i].name, (size_t)i);
    im->scratch = lm_calloc(im->scratch_len, sizeof(float), err);
    return im->scratch ? 0 : -1;
}

static void import_free(Import *im) {
    arrfree(im->slots);
    shfree(im->by_name);
    free(im->scratch);
    free(im->lm_head_path);
    memset(im, 0, sizeof *im);
}

/* "[a, b]" */
static void shape_text(const size_t *shape, size_t ndim, char *out, size_t len) {
    size_t at = (size_t)snprintf(out, len, "[");
    for (size_t d = 0; d < ndim && d < ST_MAX_RANK && at < len; d++)
        at += (size_t)snprintf(out + at, len - at, "%s%zu", d ? ", " : "", shape[d]);
    if (at < len) snprintf(out + at, len - at, "%s]", ndim > ST_MAX_RANK ? ", ..." : "");
}

/* The tensor's header entry, with the shape config.json gives it (rows x cols as Hugging Face stores them). */
static int expect_shape(const Import *im, const StFile *f, const char *path, const char *name, size_t rows,
                        size_t cols, int conv1d, StInfo *t, Error *err) {
    if (st_info(f, name, t, err)) return -1;
    size_t want[2] = {rows, cols}, ndim = cols ? 2 : 1;
    if (t->ndim == ndim && t->shape[0] == want[0] && (ndim == 1 || t->shape[1] == want[1])) return 0;
    char have[160], need[64];
    shape_text(t->shape, t->ndim, have, sizeof have);
    shape_text(want, ndim, need, sizeof need);
    const ModelConfig *c = &im->m->cfg;
    return err_set(err, "'%s': tensor '%s' has shape %s but config.json (n_embd %zu, n_positions %zu, vocab_size %zu) "
                        "needs %s%s",
                   path, name, have, c->n_embd, c->block_size, c->vocab_size, need,
                   conv1d ? " (a Conv1D weight, stored [in, out])" : "");
}

static int convert_values(Import *im, const StInfo *t, const char *path, const char *name, size_t first, size_t count,
                          float *dst, Error *err) {
    Error cerr;
    if (st_to_f32(t, name, first, count, dst, &cerr)) return err_set(err, "'%s': %s", path, cerr.msg);
    for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
        if (strcmp(t->dtype, dtype_names[i]) == 0) im->dtypes |= 1u << i;
    return 0;
}

/* One of our tensors from the file: converted to f32, Conv1D matrices transposed. */
static int place(Import *im, const StFile *f, const char *path, const char *name, const Slot *s, Error *err) {
    const ParamTensor *pt = s->ours;
    int conv1d = s->kind == SLOT_CONV1D;
    StInfo t;
    if (expect_shape(im, f, path, name, conv1d ? pt->cols : pt->rows, conv1d ? pt->rows : pt->cols, conv1d, &t, err))
        return -1;
    float *dst = im->m->weights.params + pt->offset;
    if (convert_values(im, &t, path, name, 0, t.count, conv1d ? im->scratch : dst, err)) return -1;
    if (conv1d) tile_transpose(pt->cols, pt->rows, im->scratch, pt->rows, dst, pt->cols); /* [in, out] -> [out, in] */
    for (size_t i = 0; i < t.count; i++)
        if (!isfinite(dst[i])) return err_set(err, "'%s': tensor '%s' holds a NaN or an infinity", path, name);
    return 0;
}

/* lm_head.weight must be wte.weight (already read): compared value by value,
 * in pieces the size of the scratch buffer. */
static int check_lm_head(Import *im, const StFile *f, const char *path, const char *name, Error *err) {
    const Model *m = im->m;
    size_t V = m->cfg.vocab_size, C = m->cfg.n_embd;
    StInfo t;
    if (expect_shape(im, f, path, name, V, C, 0, &t, err)) return -1;
    const float *wte = m->weights.params + m->weights.wte;
    for (size_t first = 0; first < t.count; first += im->scratch_len) {
        size_t n = t.count - first < im->scratch_len ? t.count - first : im->scratch_len;
        if (convert_values(im, &t, path, name, first, n, im->scratch, err)) return -1;
        for (size_t i = 0; i < n; i++)
            if (im->scratch[i] != wte[first + i])
                return err_set(err, "'%s': lm_head.weight differs from wte.weight (row %zu, column %zu: %g against %g): "
                                    "an output layer of its own, which our model, whose head is the token embedding, "
                                    "cannot hold",
                               path, (first + i) / C, (first + i) % C, (double)im->scratch[i], (double)wte[first + i]);
    }
    return 0;
}

/* Every tensor of one file: ours placed, the ignored ones passed, anything
 * else refused; lm_head compared once wte is in. shard: the file's name in
 * the index's weight_map (NULL without one). */
static int read_weight_file(Import *im, const char *path, const char *shard, const json_t *weight_map, Error *err) {
    StFile f;
    if (st_open_foreign(&f, path, err)) return -1;
    size_t n;
    const char **names = st_names(&f, &n, err), *lm_head = NULL;
    int rc = names ? 0 : -1;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const char *name = names[i], *listed = weight_map ? json_string_value(json_object_get(weight_map, name)) : NULL;
        if (weight_map && (!listed || strcmp(listed, shard) != 0)) {
            rc = err_set(err, "'%s' holds tensor '%s', which model.safetensors.index.json %s%s", path, name,
                         listed ? "places in " : "does not list", listed ? listed : "");
            break;
        }
        const char *base = strncmp(name, PREFIX, strlen(PREFIX)) == 0 ? name + strlen(PREFIX) : name;
        ptrdiff_t at = shgeti(im->by_name, base);
        if (at < 0) {
            rc = err_set(err, "'%s' holds tensor '%s', which GPT-2 with config.json's n_layer %zu does not have", path,
                         name, im->m->cfg.n_layer);
            break;
        }
        Slot *s = &im->slots[im->by_name[at].value];
        if (s->seen) {
            rc = err_set(err, "'%s': tensor '%s' is given twice (with and without '" PREFIX "', or in two files)", path,
                         name);
            break;
        }
        s->seen = 1;
        im->seen++;
        if (s->kind == SLOT_LM_HEAD) lm_head = name;
        else if (s->kind != SLOT_IGNORED) rc = place(im, &f, path, name, s, err);
    }
    if (rc == 0 && lm_head) {
        if (im->slots[0].seen) rc = check_lm_head(im, &f, path, lm_head, err); /* slot 0: wte */
        else im->lm_head_path = strdup(path);
    }
    free(names);
    st_close(&f);
    return rc;
}

/* Reads every file, then checks that nothing GPT-2 needs is missing. */
static int read_weights(Import *im, const WeightFiles *w, int tied, Error *err) {
    for (ptrdiff_t i = 0; i < arrlen(w->paths); i++)
        if (read_weight_file(im, w->paths[i], w->shards ? w->shards[i] : NULL, w->weight_map, err)) return -1;
    if (w->weight_map && im->seen != json_object_size(w->weight_map))
        return err_set(err, "'%s': model.safetensors.index.json lists %zu tensors but its files hold %zu", im->dir,
                       json_object_size(w->weight_map), im->seen);
    const Model *m = im->m;
    for (ptrdiff_t i = 0; i < arrlen(im->slots); i++) {
        const Slot *s = &im->slots[i];
        if (!s->seen && (s->kind == SLOT_WEIGHT || s->kind == SLOT_CONV1D))
            return err_set(err, "'%s': the weights have no tensor '%s' (or '" PREFIX "%s'), which GPT-2 with n_layer %zu has",
                           im->dir, s->name, s->name, m->cfg.n_layer);
    }
    const Slot *lm_head = &im->slots[arrlen(im->slots) - 1];
    if (!tied && !lm_head->seen)
        return err_set(err, "'%s': config.json sets tie_word_embeddings false, but the weights hold no lm_head.weight",
                       im->dir);
    if (im->lm_head_path) { /* lm_head.weight came in a file before wte.weight's */
        StFile f;
        if (st_open_foreign(&f, im->lm_head_path, err)) return -1;
        int rc = check_lm_head(im, &f, im->lm_head_path, "lm_head.weight", err);
        st_close(&f);
        if (rc) return -1;
    }
    return 0;
}

int hf_gpt2_import(const char *dir, Model *m, Tokenizer *tok, HfGpt2Import *info, Error *err) {
    memset(info, 0, sizeof *info);
    memset(m, 0, sizeof *m);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return err_set(err, "'%s' is not a directory (the one save_pretrained writes: config.json, model.safetensors, "
                            "tokenizer.json)",
                       dir);
    char path[PATH_BUF];
    if (path_format(path, sizeof path, err, "%s/config.json", dir)) return -1;
    size_t len;
    char *text = read_small_json(path, &len, err);
    if (!text) return -1;
    ModelConfig cfg;
    int tied;
    int rc = hf_gpt2_config_parse(text, len, path, &cfg, &tied, err);
    free(text);
    if (rc) return -1;
    if (tokenizer_import_hf(tok, dir, err)) return -1;
    if (tok->vocab_size != cfg.vocab_size) {
        err_set(err, "'%s': config.json's vocab_size %zu differs from the tokenizer's %zu tokens", dir, cfg.vocab_size,
                tok->vocab_size);
        tokenizer_free(tok);
        return -1;
    }
    WeightFiles w;
    Import im = {0};
    size_t weights = model_count_params(&cfg) * sizeof(float);
    char who[4200];
    snprintf(who, sizeof who, "converting '%s'", dir);
    /* the weights, then the largest file beside them while it is read, or
     * the checkpoint's buffer while it is written (about the weights again) */
    rc = find_weight_files(dir, &w, err) ||
         memory_check(weights + (w.largest > weights ? w.largest : weights), who,
                      "the weights; the largest safetensors file, read whole, then the checkpoint as it is written",
                      NULL, err) ||
         model_alloc(m, &cfg, err) || import_init(&im, dir, m, err) || read_weights(&im, &w, tied, err);
    if (rc == 0) {
        for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
            if (im.dtypes & 1u << i)
                snprintf(info->dtypes + strlen(info->dtypes), sizeof info->dtypes - strlen(info->dtypes), "%s%s",
                         info->dtypes[0] ? "+" : "", dtype_names[i]);
        info->files = (size_t)arrlen(w.paths);
        info->lm_head = im.slots[arrlen(im.slots) - 1].seen;
    } else {
        model_free(m);
        tokenizer_free(tok);
    }
    import_free(&im);
    weight_files_free(&w);
    return rc ? -1 : 0;
}
