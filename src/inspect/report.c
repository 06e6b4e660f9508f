/* bin/inspect's output: PNG pictures, the logit-lens table, the token
 * legend, one JSON file with everything, and the printed summary. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "inspect/inspect.h"
#include "io/json.h"
#include "io/plot_png.h"
#include "runtime/ds.h"
#include "runtime/files.h"

void token_label(const Tokenizer *tok, uint32_t id, int ascii, char *buf, size_t len) {
    char t[64];
    size_t n;
    const char *bytes = tokenizer_token(tok, id, &n);
    if (n >= sizeof t) n = sizeof t - 1; /* a long subword token: its start */
    memcpy(t, bytes, n);
    t[n] = '\0';
    unsigned char c = (unsigned char)t[0];
    if (n == 1 && c == ' ') snprintf(buf, len, "_");
    else if (n == 1 && c == '\n') snprintf(buf, len, ascii ? "$" : "\\n");
    else if (n == 1 && c == '\t') snprintf(buf, len, ascii ? "?" : "\\t");
    else if (n == 1 && c >= 32 && c < 127) snprintf(buf, len, "%c", c);
    else if (ascii) snprintf(buf, len, "?");
    else if (n == 1) snprintf(buf, len, "<0x%02X>", c); /* a control byte, or one byte of UTF-8 */
    else snprintf(buf, len, "%s", t);
}

/* mkdir -p: creates every missing directory of path. */
static int make_dirs(const char *path, Error *err) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return err_set(err, "output path too long");
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char saved = *p;
        *p = '\0';
        struct stat st;
        if (stat(buf, &st) != 0) {
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return err_set(err, "cannot create output directory '%s': %s", buf, strerror(errno));
        } else if (!S_ISDIR(st.st_mode)) {
            return err_set(err, "'%s' is not a directory", buf);
        }
        *p = saved;
        if (!saved) break;
    }
    return 0;
}

static void json_num(char **sb, double v) {
    if (isfinite(v)) sb_appendf(sb, "%.6g", v);
    else sb_appendf(sb, "null");
}

/* , "name": value */
static void json_field(char **sb, const char *name, double v) {
    sb_appendf(sb, ", \"%s\": ", name);
    json_num(sb, v);
}

static void json_label(char **sb, const Tokenizer *tok, uint32_t id) {
    char lab[32];
    token_label(tok, id, 0, lab, sizeof lab);
    sb_append_json_string(sb, lab);
}

static char *build_json(const Inspection *in, const Induction *ind, const Model *m, const Tokenizer *tok,
                        const char *prompt) {
    size_t T = in->T, H = in->n_head;
    char *sb = NULL;
    sb_appendf(&sb, "{\"prompt\": ");
    {
        /* The prompt as the model saw it: its tokens decoded. */
        uint32_t *ids = malloc(T * sizeof *ids);
        for (size_t t = 0; ids && t < T; t++) ids[t] = (uint32_t)in->tokens[t];
        char *text = ids ? tokenizer_decode(tok, ids, T) : NULL;
        sb_append_json_string(&sb, text ? text : ""); /* not UTF-8: U+FFFD, as a byte-level model may decode */
        free(text);
        free(ids);
    }
    sb_appendf(&sb, ", \"prompt_bytes\": %zu", strlen(prompt));
    sb_appendf(&sb, ", \"tokens\": [");
    for (size_t t = 0; t < T; t++) {
        sb_appendf(&sb, "%s{\"id\": %d, \"text\": ", t ? ", " : "", (int)in->tokens[t]);
        json_label(&sb, tok, (uint32_t)in->tokens[t]);
        sb_appendf(&sb, "}");
    }
    sb_appendf(&sb, "], \"n_layer\": %zu, \"n_head\": %zu, \"layers\": [", in->n_layer, H);
    for (size_t l = 0; l < in->n_layer; l++) {
        const LayerInspection *li = &in->layer[l];
        sb_appendf(&sb, "%s{\"layer\": %zu, \"mixer\": \"%s\"", l ? ", " : "", l, li->mixer);
        if (li->probs) {
            sb_appendf(&sb, ", \"heads\": [");
            for (size_t h = 0; h < H; h++) {
                const HeadStats *s = &li->heads[h];
                sb_appendf(&sb, "%s{\"head\": %zu, \"entropy\": ", h ? ", " : "", h);
                json_num(&sb, s->entropy);
                json_field(&sb, "diagonal", s->diagonal);
                json_field(&sb, "previous", s->previous);
                json_field(&sb, "similarity_logit_corr", s->similarity_corr);
                json_field(&sb, "sv_max", s->sv_max);
                json_field(&sb, "sv_min", s->sv_min);
                json_field(&sb, "effective_rank", s->effective_rank);
                json_field(&sb, "antisymmetric_share", s->antisym_share);
                json_field(&sb, "identity_distance", s->identity_dist);
                json_field(&sb, "induction", ind ? ind->score[l * H + h] : NAN);
                sb_appendf(&sb, ", \"attention\": [");
                const float *p = li->probs + h * T * T;
                for (size_t i = 0; i < T; i++) {
                    sb_appendf(&sb, "%s[", i ? ", " : "");
                    for (size_t j = 0; j <= i; j++) sb_appendf(&sb, "%s%.4g", j ? ", " : "", p[i * T + j]);
                    sb_appendf(&sb, "]");
                }
                sb_appendf(&sb, "]}");
            }
            sb_appendf(&sb, "]");
        }
        if (li->gate_mean) {
            sb_appendf(&sb, ", \"gate_mean\": [");
            for (size_t t = 0; t < T; t++) sb_appendf(&sb, "%s%.5g", t ? ", " : "", li->gate_mean[t]);
            sb_appendf(&sb, "], \"offsets\": [");
            const ModelConfig *lc = model_layer_cfg(m, l);
            for (size_t k = 0; k < lc->n_windows; k++) {
                sb_appendf(&sb, "%s{\"offset\": %zu, \"contribution_norm\": ", k ? ", " : "", lc->windows[k]);
                json_num(&sb, li->offset_norm[k]);
                sb_appendf(&sb, "}");
            }
            sb_appendf(&sb, "], \"plucker_residual\": ");
            json_num(&sb, li->plucker_residual);
        }
        sb_appendf(&sb, "}");
    }
    sb_appendf(&sb, "], \"logit_lens\": [");
    for (size_t s = 0; s <= in->n_layer; s++) {
        sb_appendf(&sb, "%s{\"after\": \"%s", s ? ", " : "", s ? "layer " : "embedding");
        if (s) sb_appendf(&sb, "%zu", s - 1);
        sb_appendf(&sb, "\", \"positions\": [");
        for (size_t t = 0; t < T; t++) {
            sb_appendf(&sb, "%s[", t ? ", " : "");
            for (size_t k = 0; k < LENS_TOP; k++) {
                size_t i = (s * T + t) * LENS_TOP + k;
                sb_appendf(&sb, "%s{\"token\": ", k ? ", " : "");
                json_label(&sb, tok, in->lens_top[i]);
                sb_appendf(&sb, ", \"p\": %.4g}", in->lens_prob[i]);
            }
            sb_appendf(&sb, "]");
        }
        sb_appendf(&sb, "]}");
    }
    sb_appendf(&sb, "], \"attribution\": {\"position\": %zu, \"predicted\": ", T - 1);
    json_label(&sb, tok, in->predicted);
    json_field(&sb, "logit", in->predicted_logit);
    sb_appendf(&sb, ", \"parts\": [");
    for (size_t i = 0; i < arrlenu(in->parts); i++) {
        sb_appendf(&sb, "%s{\"name\": \"%s\", \"value\": ", i ? ", " : "", in->parts[i].name);
        json_num(&sb, in->parts[i].value);
        sb_appendf(&sb, "}");
    }
    sb_appendf(&sb, "]}");
    if (ind) {
        sb_appendf(&sb, ", \"induction\": {\"length\": %zu, \"sequences\": %zu, \"loss_first_copy\": ", ind->n, ind->n_seq);
        json_num(&sb, ind->loss_first);
        json_field(&sb, "loss_second_copy", ind->loss_second);
        json_field(&sb, "uniform_head_score", ind->uniform);
        sb_appendf(&sb, "}");
    }
    sb_appendf(&sb, "}\n");
    return sb;
}

static int write_text(const char *dir, const char *name, const char *text, Error *err) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return write_file_atomic(path, text, strlen(text), err);
}

/* label, then spaces to `width` characters (not bytes: labels may be UTF-8). */
static void append_padded(char **sb, const char *label, size_t width) {
    size_t chars = 0;
    for (const char *c = label; *c; c++) chars += ((unsigned char)*c & 0xC0) != 0x80;
    sb_appendf(sb, "%s%*s", label, (int)(chars < width ? width - chars : 0), "");
}

/* The logit lens as a table: one block per stage, a line per position. */
static char *lens_table(const Inspection *in, const Tokenizer *tok) {
    char *sb = NULL, lab[32];
    sb_appendf(&sb, "# logit lens: the stream after each stage through ln_f and the tied head; top-%d next tokens\n"
                    "# (space shown as _, newline as \\n)\n", LENS_TOP);
    for (size_t s = 0; s <= in->n_layer; s++) {
        if (s) sb_appendf(&sb, "\n== after layer %zu (%s)\n", s - 1, in->layer[s - 1].mixer);
        else sb_appendf(&sb, "== after the embedding\n");
        for (size_t t = 0; t < in->T; t++) {
            token_label(tok, (uint32_t)in->tokens[t], 0, lab, sizeof lab);
            sb_appendf(&sb, "%4zu ", t);
            append_padded(&sb, lab, 6);
            sb_appendf(&sb, " ->");
            for (size_t k = 0; k < LENS_TOP; k++) {
                size_t i = (s * in->T + t) * LENS_TOP + k;
                token_label(tok, in->lens_top[i], 0, lab, sizeof lab);
                sb_appendf(&sb, "  ");
                append_padded(&sb, lab, 6);
                sb_appendf(&sb, " %.3f", in->lens_prob[i]);
            }
            sb_appendf(&sb, "\n");
        }
    }
    return sb;
}

int inspect_write(const char *dir, const Inspection *in, const Induction *ind, const Model *m, const Tokenizer *tok,
                  const char *prompt, Error *err) {
    if (make_dirs(dir, err)) return -1;
    size_t T = in->T, H = in->n_head;
    char path[4200], title[160];
    char(*labels)[8] = lm_calloc(T, sizeof *labels, err);
    const char **lp = labels ? lm_calloc(T + 2 * MAX_LAYERS + H, sizeof *lp, err) : NULL;
    const char **extra = lp ? lp + T : NULL; /* row labels of the gate strip, panel titles */
    char(*names)[16] = extra ? lm_calloc(MAX_LAYERS + H, sizeof *names, err) : NULL;
    const float **panels = names ? lm_calloc(H > MAX_LAYERS ? H : MAX_LAYERS, sizeof *panels, err) : NULL;
    float *strip = panels ? lm_calloc(MAX_LAYERS * T, sizeof(float), err) : NULL;
    int rc = strip ? 0 : -1;
    if (rc) goto done;
    for (size_t t = 0; t < T; t++) {
        token_label(tok, (uint32_t)in->tokens[t], 1, labels[t], sizeof labels[t]);
        lp[t] = labels[t];
    }
    size_t n_strip = 0;
    for (size_t l = 0; l < in->n_layer && !rc; l++) {
        const LayerInspection *li = &in->layer[l];
        if (li->gate_mean) {
            memcpy(strip + n_strip * T, li->gate_mean, T * sizeof(float));
            snprintf(names[n_strip], sizeof names[0], "L%zu", l);
            extra[n_strip] = names[n_strip];
            n_strip++;
        }
        if (!li->probs) continue;
        for (size_t h = 0; h < H && !rc; h++) {
            const HeadStats *s = &li->heads[h];
            snprintf(title, sizeof title, "layer %zu head %zu: entropy %.2f, diag %.2f, prev %.2f", l, h, s->entropy,
                     s->diagonal, s->previous);
            HeatmapSpec spec = {title, NULL, lp, lp, 1, 0.0f, 1.0f};
            const float *p = li->probs + h * T * T;
            snprintf(path, sizeof path, "%s/attn_L%zu_H%zu.png", dir, l, h);
            rc = png_heatmap(path, &p, 1, T, T, &spec, err);
            snprintf(names[MAX_LAYERS + h], sizeof names[0], "head %zu", h);
            extra[MAX_LAYERS + h] = names[MAX_LAYERS + h];
            panels[h] = p;
        }
        if (rc) break;
        snprintf(title, sizeof title, "layer %zu attention (rows: query, columns: key)", l);
        HeatmapSpec spec = {title, extra + MAX_LAYERS, lp, lp, 1, 0.0f, 1.0f};
        snprintf(path, sizeof path, "%s/attn_L%zu.png", dir, l);
        rc = png_heatmap(path, panels, H, T, T, &spec, err);
    }
    if (!rc && n_strip) {
        HeatmapSpec spec = {"Grassmann gate a, mean over channels (1: keep x, 0: take g)", NULL, extra, lp, 0, 0.0f, 1.0f};
        const float *p = strip;
        snprintf(path, sizeof path, "%s/gates.png", dir);
        rc = png_heatmap(path, &p, 1, n_strip, T, &spec, err);
    }
    if (!rc) {
        size_t n = arrlenu(in->parts);
        const char **pl = lm_calloc(n, sizeof *pl, err);
        double *pv = pl ? lm_calloc(n, sizeof *pv, err) : NULL;
        char lab[32];
        char(*indented)[40] = pv ? lm_calloc(n, sizeof *indented, err) : NULL;
        rc = indented ? 0 : -1;
        for (size_t i = 0; i < n && indented; i++) {
            /* a share of a mixer's output (a head, the attention bias): below its line */
            snprintf(indented[i], sizeof indented[i], "%s%s", in->parts[i].share ? "    " : "", in->parts[i].name);
            pl[i] = indented[i];
            pv[i] = in->parts[i].value;
        }
        token_label(tok, in->predicted, 1, lab, sizeof lab);
        snprintf(title, sizeof title, "direct attribution to the logit of '%s' (%.2f) at position %zu", lab,
                 in->predicted_logit, T - 1);
        snprintf(path, sizeof path, "%s/attribution.png", dir);
        if (!rc) rc = png_bars(path, title, pl, pv, n, err);
        free(pl);
        free(pv);
        free(indented);
    }
    if (!rc) {
        char *text = lens_table(in, tok);
        rc = write_text(dir, "lens.txt", text, err);
        sb_free(&text);
    }
    if (!rc) {
        char *text = NULL, lab[32];
        sb_appendf(&text, "# position, token id, token (space shown as _, newline as \\n; in the PNGs newline is $ and non-ASCII ?)\n");
        for (size_t t = 0; t < T; t++) {
            token_label(tok, (uint32_t)in->tokens[t], 0, lab, sizeof lab);
            sb_appendf(&text, "%zu\t%d\t%s\n", t, (int)in->tokens[t], lab);
        }
        rc = write_text(dir, "tokens.txt", text, err);
        sb_free(&text);
    }
    if (!rc) {
        char *json = build_json(in, ind, m, tok, prompt);
        rc = write_text(dir, "inspect.json", json, err);
        sb_free(&json);
    }
done:
    free(labels);
    free(lp);
    free(names);
    free(panels);
    free(strip);
    return rc;
}

void inspect_print(FILE *f, const Inspection *in, const Induction *ind, const Model *m, const Tokenizer *tok) {
    size_t H = in->n_head, T = in->T;
    char lab[32];
    token_label(tok, in->predicted, 0, lab, sizeof lab);
    fprintf(f, "prompt: %zu tokens | predicted next token '%s' (logit %.3f)\n", T, lab, in->predicted_logit);
    if (m->cfg.pos == POS_ROPE)
        fprintf(f, "rope positions: the maps include the rotation; sv_*, eff_rank and antisym are of W_q^T W_k without it\n");
    for (size_t l = 0; l < in->n_layer; l++) {
        const LayerInspection *li = &in->layer[l];
        if (li->probs) {
            fprintf(f, "layer %zu %s\n  head  entropy  diag   prev   r(cos,logit)  sv_max  sv_min  eff_rank  antisym  "
                       "induction\n", l, li->mixer);
            for (size_t h = 0; h < H; h++) {
                const HeadStats *s = &li->heads[h];
                fprintf(f, "  H%-3zu  %7.3f  %5.3f  %5.3f  %12.3f  %6.3f  %6.4f  %8.2f  %7.3f  %9.3f\n", h, s->entropy,
                        s->diagonal, s->previous, s->similarity_corr, s->sv_max, s->sv_min, s->effective_rank,
                        s->antisym_share, ind ? ind->score[l * H + h] : NAN);
            }
        }
        if (li->gate_mean) {
            double g = 0.0;
            for (size_t t = 0; t < T; t++) g += li->gate_mean[t];
            fprintf(f, "layer %zu %s: mean gate %.3f | offset contribution norms", l, li->mixer, g / (double)T);
            const ModelConfig *lc = model_layer_cfg(m, l);
            for (size_t k = 0; k < lc->n_windows; k++) fprintf(f, " d=%zu: %.3f", lc->windows[k], li->offset_norm[k]);
            fprintf(f, " | max Plücker residual %.2e\n", li->plucker_residual);
        }
        if (!li->probs && !li->gate_mean)
            fprintf(f, "layer %zu %s: no measurements of its own (logit lens and attribution only)\n", l, li->mixer);
    }
    if (ind) {
        fprintf(f, "induction (%zu random tokens repeated, %zu sequences): loss first copy %.3f, second copy %.3f",
                ind->n, ind->n_seq, ind->loss_first, ind->loss_second);
        /* The three best heads. */
        size_t n = ind->n_layer * ind->n_head, best[3] = {n, n, n};
        for (size_t k = 0; k < 3; k++)
            for (size_t i = 0; i < n; i++) {
                if (isnan(ind->score[i]) || i == best[0] || i == best[1]) continue;
                if (best[k] == n || ind->score[i] > ind->score[best[k]]) best[k] = i;
            }
        if (best[0] == n) {
            fprintf(f, "; no attention heads\n");
        } else {
            fprintf(f, "; top heads (a uniform head scores %.3f):", ind->uniform);
            for (size_t k = 0; k < 3 && best[k] < n; k++)
                fprintf(f, " L%zu H%zu %.3f", best[k] / ind->n_head, best[k] % ind->n_head, ind->score[best[k]]);
            fprintf(f, "\n");
        }
    }
    fprintf(f, "direct attribution to '%s':", lab);
    for (size_t i = 0; i < arrlenu(in->parts); i++) fprintf(f, " %s %+.2f%s", in->parts[i].name, in->parts[i].value,
                                                            i + 1 < arrlenu(in->parts) ? "," : "\n");
}
