/* Our model to GPT-2 in Hugging Face's layout: what can be exported, and
 * the directory save_pretrained would write (see lm/hf.h and docs/gpt2.md). */
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

/* ---- export ------------------------------------------------------------------------- */

int hf_gpt2_exportable(const ModelConfig *cfg, const Tokenizer *tok, Error *err) {
    for (size_t l = 0; l < cfg->n_layer; l++)
        if (cfg->mixers[l] != mixer_find("attention"))
            return err_set(err, "layer %zu is %s: GPT-2 has attention in every layer", l, cfg->mixers[l]->name);
    if (cfg->pos != POS_LEARNED)
        return err_set(err, "its positions are %s: GPT-2 learns its positions (a wpe table)", pos_name(cfg->pos));
    if (cfg->norm != NORM_PRE)
        return err_set(err, "its blocks are %s-norm: GPT-2's are pre-norm", norm_name(cfg->norm));
    /* zero_init changed only the starting weights: GPT-2's layout holds the result */
    if (cfg->norm_type != NORM_TYPE_LAYERNORM)
        return err_set(err, "its norms are %s: GPT-2's are LayerNorm", norm_type_name(cfg->norm_type));
    if (cfg->mlp_act != MLP_ACT_GELU)
        return err_set(err, "its MLP activation is %s: GPT-2's is GELU", mlp_act_name(cfg->mlp_act));
    if (cfg->qk_norm) return err_set(err, "its attention normalises q and k (qk-norm): GPT-2's does not");
    if (cfg->untied_head) return err_set(err, "its head is untied (lm_head): GPT-2's is tied to wte");
    if (cfg->logit_softcap != 0.0f)
        return err_set(err, "its logits are soft-capped at %g: GPT-2's are not", cfg->logit_softcap);
    if (!tokenizer_bpe_of(tok))
        return err_set(err, "its tokenizer is %s: GPT-2's is byte-level BPE (bin/prepare --tokenizer bpe)",
                       tok->kind->name);
    return 0;
}

/* config.json as GPT2Config reads it. */
static char *config_json(const ModelConfig *c, const Tokenizer *tok) {
    uint32_t eot = tokenizer_special_id(tok, "<|endoftext|>");
    char id[32] = "null";
    if (eot < tok->vocab_size) snprintf(id, sizeof id, "%u", eot);
    char *sb = NULL;
    sb_appendf(&sb,
               "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n"
               "  \"activation_function\": \"gelu_new\",\n  \"n_layer\": %zu,\n  \"n_head\": %zu,\n  \"n_embd\": %zu,\n"
               "  \"n_positions\": %zu,\n  \"n_ctx\": %zu,\n  \"n_inner\": null,\n  \"vocab_size\": %zu,\n"
               "  \"layer_norm_epsilon\": %g,\n  \"initializer_range\": 0.02,\n"
               "  \"resid_pdrop\": %.9g,\n  \"embd_pdrop\": 0.0,\n  \"attn_pdrop\": 0.0,\n"
               "  \"scale_attn_weights\": true,\n  \"scale_attn_by_inverse_layer_idx\": false,\n"
               "  \"reorder_and_upcast_attn\": false,\n  \"tie_word_embeddings\": true,\n  \"use_cache\": true,\n"
               "  \"bos_token_id\": %s,\n  \"eos_token_id\": %s,\n  \"torch_dtype\": \"float32\"\n}\n",
               c->n_layer, c->n_head, c->n_embd, c->block_size, c->block_size, c->vocab_size, (double)LAYERNORM_EPS,
               (double)c->dropout, id, id);
    char *out = strdup(sb);
    sb_free(&sb);
    return out;
}

/* tokenizer_config.json: the fast GPT-2 tokenizer over tokenizer.json, with
 * <|endoftext|> as its special tokens when there is one (else none: GPT-2's
 * default would add a token the model does not have). */
static char *tokenizer_config_json(const ModelConfig *c, const Tokenizer *tok) {
    int eot = tokenizer_special_id(tok, "<|endoftext|>") < tok->vocab_size;
    const char *special = eot ? "\"<|endoftext|>\"" : "null";
    char *sb = NULL;
    sb_appendf(&sb,
               "{\n  \"tokenizer_class\": \"GPT2Tokenizer\",\n  \"model_max_length\": %zu,\n"
               "  \"add_prefix_space\": false,\n  \"clean_up_tokenization_spaces\": false,\n"
               "  \"bos_token\": %s,\n  \"eos_token\": %s,\n  \"unk_token\": %s\n}\n",
               c->block_size, special, special, special);
    char *out = strdup(sb);
    sb_free(&sb);
    return out;
}

/* model.safetensors: our tensors under their Hugging Face names, the blocks'
 * matrices transposed to Conv1D's [in, out]; no lm_head (tied), as
 * save_pretrained writes it. */
static int write_weights(const Model *m, const char *path, Error *err) {
    StTensor *ts = lm_calloc(m->weights.n_tensors, sizeof *ts, err);
    char (*names)[TENSOR_NAME_MAX + 32] = ts ? lm_calloc(m->weights.n_tensors, sizeof *names, err) : NULL;
    int rc = names ? 0 : -1;
    for (size_t i = 0; i < m->weights.n_tensors && rc == 0; i++) {
        const ParamTensor *pt = &m->weights.tensors[i];
        int conv1d;
        strcpy(names[i], PREFIX);
        if (hf_name(pt->name, names[i] + strlen(PREFIX), sizeof names[i] - strlen(PREFIX), &conv1d))
            rc = err_set(err, "tensor '%s' has no GPT-2 name", pt->name);
        ts[i] = (StTensor){.name = names[i], .dtype = ST_F32, .ndim = pt->cols ? 2 : 1,
                           .shape = {conv1d ? pt->cols : pt->rows, conv1d ? pt->rows : pt->cols},
                           .data = m->weights.params + pt->offset, .transpose = conv1d};
    }
    StMeta meta[] = {{"format", "pt"}};
    if (rc == 0) rc = st_write_foreign(path, ts, m->weights.n_tensors, meta, 1, err);
    free(names);
    free(ts);
    return rc;
}

static const char *export_files[] = {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"};

static int write_owned_text(const char *dir, const char *name, char *text, Error *err) {
    int rc = write_text_in(dir, name, text, err);
    free(text);
    return rc;
}

static int write_export(const Model *m, const Tokenizer *tok, const char *dir, Error *err) {
    char path[PATH_BUF];
    if (path_format(path, sizeof path, err, "%s/model.safetensors", dir)) return -1;
    if (write_owned_text(dir, "config.json", config_json(&m->cfg, tok), err) || write_weights(m, path, err)) return -1;
    char *json = bpe_export_hf_json(tokenizer_bpe_of(tok), err);
    if (!json) return -1;
    return write_owned_text(dir, "tokenizer.json", json, err) ||
           write_owned_text(dir, "tokenizer_config.json", tokenizer_config_json(&m->cfg, tok), err);
}

/* dir must be absent or an empty directory: the export overwrites nothing. */
static int check_target(const char *dir, Error *err) {
    struct stat st;
    if (stat(dir, &st) != 0) return errno == ENOENT ? 0 : err_set(err, "cannot use '%s': %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return err_set(err, "'%s' exists and is not a directory", dir);
    DIR *d = opendir(dir);
    if (!d) return err_set(err, "cannot read directory '%s': %s", dir, strerror(errno));
    const struct dirent *e;
    int empty = 1;
    while (empty && (e = readdir(d)))
        empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
    closedir(d);
    return empty ? 0 : err_set(err, "'%s' is not empty: the export goes to a new or empty directory", dir);
}

int hf_gpt2_export(const Model *m, const Tokenizer *tok, const char *dir, Error *err) {
    if (hf_gpt2_exportable(&m->cfg, tok, err)) return -1;
    char target[PATH_BUF], tmp[PATH_BUF];
    if (path_format(target, sizeof target, err, "%s", dir)) return -1;
    for (size_t n = strlen(target); n > 1 && target[n - 1] == '/'; n--) target[n - 1] = '\0';
    if (check_target(target, err) || temp_dir_create(target, tmp, sizeof tmp, err)) return -1;
    int rc = write_export(m, tok, tmp, err);
    if (rc == 0 && rename(tmp, target) != 0) rc = err_set(err, "cannot rename '%s' to '%s': %s", tmp, target, strerror(errno));
    if (rc == 0 && fsync_parent_dir(target) != 0)
        rc = err_set(err, "cannot sync the directory of '%s': %s", target, strerror(errno));
    if (rc == 0) {
        cleanup_drop(tmp);
        return 0;
    }
    for (size_t i = 0; i < sizeof export_files / sizeof export_files[0]; i++) { /* nothing of a half export stays */
        char path[4300];
        snprintf(path, sizeof path, "%s/%s", tmp, export_files[i]);
        unlink(path);
    }
    rmdir(tmp);
    cleanup_drop(tmp);
    return rc;
}
