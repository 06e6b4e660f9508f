/* bin/inspect's output: PNG pictures, the logit-lens table, the head table,
 * the token legend, one JSON file with everything, and the printed summary.
 * Sized to stay readable up to GPT-2 small's 12 x 12 heads, 50,257 BPE tokens
 * and prompts of its 1,024-token block: long maps are pooled, a layer's heads
 * drawn in a grid, every head also as one cell of heads.png, the largest head
 * parts of the attribution kept in its picture, and heads ranked in the
 * summary; the JSON keeps long maps as each row's strongest keys. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lm/inspect.h"
#include "lm/json.h"
#include "lm/plot_png.h"
#include "lm/utf8.h"
#include "lm/ds.h"
#include "lm/files.h"

/* Models with more heads than this get the summary per layer, not per head. */
#define SUMMARY_HEADS 32
/* Head parts the attribution picture keeps when there are many. */
#define PICTURE_SHARES 12
#define MANY_PARTS 40
/* Each row's strongest keys, in the JSON of a long prompt. */
#define JSON_TOP_KEYS 3

void token_label(const Tokenizer *tok, uint32_t id, int ascii, char *buf, size_t len) {
    size_t n, out = 0, chars = 0, most = ascii ? TOKEN_LABEL_ASCII : TOKEN_LABEL_CHARS;
    const unsigned char *b = (const unsigned char *)tokenizer_token(tok, id, &n);
    buf[0] = '\0';
    for (size_t i = 0; i < n;) {
        uint32_t cp = 0;
        size_t k = utf8_decode(b + i, n - i, &cp);
        char piece[16];
        if (k == 0 || cp < 32 || cp == 127) { /* not UTF-8, or a control byte */
            const char *named = cp == '\n' ? "\\n" : cp == '\t' ? "\\t" : cp == '\r' ? "\\r" : NULL;
            if (k == 0) k = 1, cp = b[i];
            if (ascii) snprintf(piece, sizeof piece, "%s", cp == '\n' ? "$" : "?");
            else if (named) snprintf(piece, sizeof piece, "%s", named);
            else snprintf(piece, sizeof piece, "<0x%02X>", b[i]);
        } else if (cp == ' ') {
            snprintf(piece, sizeof piece, "%s", ascii ? "_" : "\xE2\x90\xA3"); /* U+2423 */
        } else if (ascii && cp >= 128) {
            snprintf(piece, sizeof piece, "?");
        } else {
            memcpy(piece, b + i, k);
            piece[k] = '\0';
        }
        const char *more = ascii ? "~" : "\xE2\x80\xA6"; /* U+2026 */
        if (chars == most || out + strlen(piece) + strlen(more) + 1 > len) {
            snprintf(buf + out, len - out, "%s", more);
            return;
        }
        out += (size_t)snprintf(buf + out, len - out, "%s", piece);
        chars++;
        i += k;
    }
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

/* The k indices of v (n) with the largest values (absolute: largest |v|), NaN
 * left out, in decreasing order and the first index first among equals;
 * returns how many (at most k). */
static size_t top_k(const double *v, size_t n, size_t k, int absolute, size_t *out) {
    size_t got = 0;
    for (size_t i = 0; i < n; i++) {
        double x = absolute ? fabs(v[i]) : v[i];
        if (isnan(x)) continue;
        size_t at = got < k ? got++ : k;
        for (; at > 0; at--) {
            double y = absolute ? fabs(v[out[at - 1]]) : v[out[at - 1]];
            if (!(x > y)) break;
            if (at < k) out[at] = out[at - 1];
        }
        if (at < k) out[at] = i;
    }
    return got;
}

/* What is measured of every head, by layer and head (NaN for a layer without maps). */
typedef enum { HM_ENTROPY, HM_DIAGONAL, HM_PREVIOUS, HM_CORR, HM_RANK, HM_ANTISYM, HM_INDUCTION } HeadMeasure;

static double head_measure(const Inspection *in, const Induction *ind, size_t l, size_t h, HeadMeasure which) {
    const LayerInspection *li = &in->layer[l];
    if (!li->probs) return NAN;
    const HeadStats *s = &li->heads[h];
    switch (which) {
    case HM_ENTROPY: return s->entropy;
    case HM_DIAGONAL: return s->diagonal;
    case HM_PREVIOUS: return s->previous;
    case HM_CORR: return s->similarity_corr;
    case HM_RANK: return s->effective_rank;
    case HM_ANTISYM: return s->antisym_share;
    case HM_INDUCTION: return ind ? ind->score[l * in->n_head + h] : NAN;
    }
    return NAN;
}

/* One measure over every head, layer-major (n_layer x n_head); NULL if out of memory. */
static double *head_measures(const Inspection *in, const Induction *ind, HeadMeasure which) {
    size_t L = in->n_layer, H = in->n_head;
    double *v = malloc(L * H * sizeof *v);
    for (size_t i = 0; v && i < L * H; i++) v[i] = head_measure(in, ind, i / H, i % H, which);
    return v;
}

static int any_maps(const Inspection *in) {
    for (size_t l = 0; l < in->n_layer; l++)
        if (in->layer[l].probs) return 1;
    return 0;
}

/* ---- JSON ------------------------------------------------------------------ */

static void json_num(char **sb, double v) {
    if (isfinite(v)) sb_appendf(sb, "%.6g", v);
    else sb_appendf(sb, "null");
}

/* , "name": value */
static void json_field(char **sb, const char *name, double v) {
    sb_appendf(sb, ", \"%s\": ", name);
    json_num(sb, v);
}

/* The token's own text, as a JSON string (bytes that are not UTF-8: U+FFFD). */
static void json_token_text(char **sb, const Tokenizer *tok, uint32_t id) {
    size_t n;
    const char *bytes = tokenizer_token(tok, id, &n);
    char *text = malloc(n + 1);
    if (text) {
        memcpy(text, bytes, n);
        text[n] = '\0';
    }
    sb_append_json_string(sb, text ? text : "");
    free(text);
}

static void json_label(char **sb, const Tokenizer *tok, uint32_t id) {
    char lab[TOKEN_LABEL_MAX];
    token_label(tok, id, 0, lab, sizeof lab);
    sb_append_json_string(sb, lab);
}

/* A head's map: every row in full, or for a long prompt each row's
 * strongest JSON_TOP_KEYS keys as [key, weight] pairs. */
static void json_map(char **sb, const float *p, size_t T) {
    int full = T <= INSPECT_JSON_MAPS;
    sb_appendf(sb, full ? ", \"attention\": [" : ", \"attention_top\": [");
    double *row = full ? NULL : malloc(T * sizeof *row);
    for (size_t i = 0; i < T; i++) {
        sb_appendf(sb, "%s[", i ? ", " : "");
        if (full) {
            for (size_t j = 0; j <= i; j++) sb_appendf(sb, "%s%.4g", j ? ", " : "", p[i * T + j]);
        } else if (row) {
            size_t keys[JSON_TOP_KEYS];
            for (size_t j = 0; j <= i; j++) row[j] = p[i * T + j];
            size_t k = top_k(row, i + 1, JSON_TOP_KEYS, 0, keys);
            for (size_t r = 0; r < k; r++) sb_appendf(sb, "%s[%zu, %.4g]", r ? ", " : "", keys[r], p[i * T + keys[r]]);
        }
        sb_appendf(sb, "]");
    }
    sb_appendf(sb, "]");
    free(row);
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
        json_token_text(&sb, tok, (uint32_t)in->tokens[t]);
        sb_appendf(&sb, ", \"label\": ");
        json_label(&sb, tok, (uint32_t)in->tokens[t]);
        sb_appendf(&sb, "}");
    }
    sb_appendf(&sb, "], \"n_layer\": %zu, \"n_head\": %zu, \"attention_maps\": \"%s\", \"layers\": [", in->n_layer, H,
               T <= INSPECT_JSON_MAPS ? "full" : "top keys");
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
                json_map(&sb, li->probs + h * T * T, T);
                sb_appendf(&sb, "}");
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
                sb_appendf(&sb, "%s{\"id\": %u, \"token\": ", k ? ", " : "", in->lens_top[i]);
                json_token_text(&sb, tok, in->lens_top[i]);
                sb_appendf(&sb, ", \"p\": %.4g}", in->lens_prob[i]);
            }
            sb_appendf(&sb, "]");
        }
        sb_appendf(&sb, "]}");
    }
    sb_appendf(&sb, "], \"attribution\": {\"position\": %zu, \"predicted_id\": %u, \"predicted\": ", T - 1, in->predicted);
    json_token_text(&sb, tok, in->predicted);
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

/* ---- tables ------------------------------------------------------------------ */

static int write_text(const char *dir, const char *name, const char *text, Error *err) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return write_file_atomic(path, text, strlen(text), err);
}

static size_t display_chars(const char *label) {
    size_t chars = 0;
    for (const char *c = label; *c; c++) chars += ((unsigned char)*c & 0xC0) != 0x80;
    return chars;
}

/* label, then spaces to `width` characters (not bytes: labels may be UTF-8). */
static void append_padded(char **sb, const char *label, size_t width) {
    size_t chars = display_chars(label);
    sb_appendf(sb, "%s%*s", label, (int)(chars < width ? width - chars : 0), "");
}

/* The widest label of ids (n), at least `least` and at most 16 characters: a
 * table's column. */
static size_t label_column(const Tokenizer *tok, const uint32_t *ids, const int32_t *ids32, size_t n, size_t least) {
    size_t w = least;
    char lab[TOKEN_LABEL_MAX];
    for (size_t i = 0; i < n && w < 16; i++) {
        token_label(tok, ids ? ids[i] : (uint32_t)ids32[i], 0, lab, sizeof lab);
        size_t c = display_chars(lab);
        w = c > w ? c : w;
    }
    return w < 16 ? w : 16;
}

/* The logit lens as a table: one block per stage, a line per position. */
static char *lens_table(const Inspection *in, const Tokenizer *tok) {
    char *sb = NULL, lab[TOKEN_LABEL_MAX];
    size_t T = in->T, w_in = label_column(tok, NULL, in->tokens, T, 6);
    size_t w_out = label_column(tok, in->lens_top, NULL, (in->n_layer + 1) * T * LENS_TOP, 6);
    sb_appendf(&sb, "# logit lens: the stream after each stage through ln_f and the tied head; top-%d next tokens\n"
                    "# (space shown as \xE2\x90\xA3, newline as \\n)\n", LENS_TOP);
    for (size_t s = 0; s <= in->n_layer; s++) {
        if (s) sb_appendf(&sb, "\n== after layer %zu (%s)\n", s - 1, in->layer[s - 1].mixer);
        else sb_appendf(&sb, "== after the embedding\n");
        for (size_t t = 0; t < T; t++) {
            token_label(tok, (uint32_t)in->tokens[t], 0, lab, sizeof lab);
            sb_appendf(&sb, "%4zu ", t);
            append_padded(&sb, lab, w_in);
            sb_appendf(&sb, " ->");
            for (size_t k = 0; k < LENS_TOP; k++) {
                size_t i = (s * T + t) * LENS_TOP + k;
                token_label(tok, in->lens_top[i], 0, lab, sizeof lab);
                sb_appendf(&sb, "  ");
                append_padded(&sb, lab, w_out);
                sb_appendf(&sb, " %.3f", in->lens_prob[i]);
            }
            sb_appendf(&sb, "\n");
        }
    }
    return sb;
}

/* Layer l's heads, a line each (the summary of small models, and heads.txt). */
static void head_lines(char **sb, const Inspection *in, const Induction *ind, size_t l) {
    const LayerInspection *li = &in->layer[l];
    sb_appendf(sb, "layer %zu %s\n  head  entropy  diag   prev   r(cos,logit)  sv_max  sv_min  eff_rank  antisym  "
                   "induction\n", l, li->mixer);
    for (size_t h = 0; h < in->n_head; h++) {
        const HeadStats *s = &li->heads[h];
        sb_appendf(sb, "  H%-3zu  %7.3f  %5.3f  %5.3f  %12.3f  %6.3f  %6.4f  %8.2f  %7.3f  %9.3f\n", h, s->entropy,
                   s->diagonal, s->previous, s->similarity_corr, s->sv_max, s->sv_min, s->effective_rank,
                   s->antisym_share, ind ? ind->score[l * in->n_head + h] : NAN);
    }
}

/* One line per layer: its heads' means, and its strongest induction head. */
static void layer_means(char **sb, const Inspection *in, const Induction *ind) {
    static const HeadMeasure shown[] = {HM_ENTROPY, HM_DIAGONAL, HM_PREVIOUS, HM_CORR, HM_RANK, HM_ANTISYM};
    size_t H = in->n_head;
    sb_appendf(sb, "  layer  entropy  diag   prev   r(cos,logit)  eff_rank  antisym  induction (best head)\n");
    for (size_t l = 0; l < in->n_layer; l++) {
        if (!in->layer[l].probs) continue;
        double mean[6] = {0}, best = -INFINITY;
        size_t best_h = 0;
        for (size_t h = 0; h < H; h++) {
            for (size_t i = 0; i < 6; i++) mean[i] += head_measure(in, ind, l, h, shown[i]) / (double)H;
            double x = head_measure(in, ind, l, h, HM_INDUCTION);
            if (x > best) best = x, best_h = h;
        }
        sb_appendf(sb, "  L%-4zu  %7.3f  %5.3f  %5.3f  %12.3f  %8.2f  %7.3f", l, mean[0], mean[1], mean[2], mean[3],
                   mean[4], mean[5]);
        if (isfinite(best)) sb_appendf(sb, "  %9.3f (H%zu)", best, best_h);
        sb_appendf(sb, "\n");
    }
}

/* "L<l> H<h> <value>" for the k heads with the largest of a measure. */
static void ranked_heads(char **sb, const Inspection *in, const double *v, size_t k) {
    size_t n = in->n_layer * in->n_head, best[16] = {0};
    size_t got = top_k(v, n, k < 16 ? k : 16, 0, best);
    for (size_t i = 0; i < got; i++)
        sb_appendf(sb, " L%zu H%zu %.3f", best[i] / in->n_head, best[i] % in->n_head, v[best[i]]);
}

/* ---- pictures ----------------------------------------------------------------- */

/* How a map of T positions is drawn: in blocks of `block` positions (1: as
 * is), n cells a side. */
typedef struct MapGrid {
    size_t block, n;
} MapGrid;

static MapGrid map_grid(size_t T) {
    size_t b = (T + INSPECT_MAP_CELLS - 1) / INSPECT_MAP_CELLS;
    return (MapGrid){b, (T + b - 1) / b};
}

/* out (n, n): the largest weight of each block x block of the map (T, T). */
static void pool_map(float *out, const float *p, size_t T, MapGrid g) {
    for (size_t R = 0; R < g.n; R++)
        for (size_t C = 0; C < g.n; C++) {
            float mx = 0.0f;
            for (size_t i = R * g.block; i < (R + 1) * g.block && i < T; i++)
                for (size_t j = C * g.block; j < (C + 1) * g.block && j <= i; j++) mx = p[i * T + j] > mx ? p[i * T + j] : mx;
            out[R * g.n + C] = mx;
        }
}

/* The axis labels of a map drawn with cells of `cell` pixels: the tokens (as
 * is), or the first position of each block, where the label fits (else ""). */
typedef struct MapLabels {
    char (*rows)[TOKEN_LABEL_MAX], (*cols)[TOKEN_LABEL_MAX];
    const char **row_ptr, **col_ptr;
} MapLabels;

static int map_labels(MapLabels *ml, const Inspection *in, const Tokenizer *tok, MapGrid g, size_t cell, Error *err) {
    ml->rows = lm_calloc(2 * g.n, sizeof *ml->rows, err);
    ml->row_ptr = ml->rows ? lm_calloc(2 * g.n, sizeof *ml->row_ptr, err) : NULL;
    if (!ml->row_ptr) {
        free(ml->rows);
        *ml = (MapLabels){0};
        return -1;
    }
    ml->cols = ml->rows + g.n;
    ml->col_ptr = ml->row_ptr + g.n;
    size_t scale = cell >= 20 ? 2 : 1, every = 1; /* plot_png's label scale */
    if (g.block > 1) /* numbers under the columns: every `every`-th block, so that they do not overlap */
        while (every * cell < text_width("0000", scale) + 4) every++;
    for (size_t i = 0; i < g.n; i++) {
        if (g.block == 1) {
            token_label(tok, (uint32_t)in->tokens[i], 1, ml->rows[i], sizeof ml->rows[i]);
            memcpy(ml->cols[i], ml->rows[i], sizeof ml->cols[i]);
            /* a column's label is cut to its cell */
            for (size_t len = strlen(ml->cols[i]); len > 1 && text_width(ml->cols[i], scale) > cell + 2;)
                ml->cols[i][--len] = '\0';
        } else {
            snprintf(ml->rows[i], sizeof ml->rows[i], "%zu", i * g.block);
            snprintf(ml->cols[i], sizeof ml->cols[i], "%s", i % every ? "" : ml->rows[i]);
        }
        ml->row_ptr[i] = ml->rows[i];
        ml->col_ptr[i] = ml->cols[i];
    }
    return 0;
}

static void map_labels_free(MapLabels *ml) {
    free(ml->rows);
    free(ml->row_ptr);
    *ml = (MapLabels){0};
}

/* The maps of layer l: attn_L<l>_H<h>.png for each head, and attn_L<l>.png
 * with all its heads, side by side for up to 4 of them, else in a grid of
 * smaller panels. pooled: room for H maps of the grid's cells. */
static int layer_maps(const char *dir, const Inspection *in, const Tokenizer *tok, size_t l, float *pooled,
                      Error *err) {
    const LayerInspection *li = &in->layer[l];
    size_t T = in->T, H = in->n_head;
    MapGrid g = map_grid(T);
    char path[4200], title[200], pool_note[64] = "", (*names)[16] = lm_calloc(H, sizeof *names, err);
    const float **panels = names ? lm_calloc(H, sizeof *panels, err) : NULL;
    const char **panel_titles = panels ? lm_calloc(H, sizeof *panel_titles, err) : NULL;
    if (!panel_titles) {
        free(names);
        free(panels);
        return -1;
    }
    if (g.block > 1) snprintf(pool_note, sizeof pool_note, " (largest weight of each %zu x %zu block)", g.block, g.block);
    HeatmapSpec spec = {.causal = 1, .vmin = 0.0f, .vmax = 1.0f};
    MapLabels ml = {0};
    int rc = map_labels(&ml, in, tok, g, heatmap_layout(g.n, g.n, 1, &spec).cell, err);
    for (size_t h = 0; h < H && !rc; h++) {
        const HeadStats *s = &li->heads[h];
        float *p = pooled + h * g.n * g.n;
        if (g.block > 1) pool_map(p, li->probs + h * T * T, T, g);
        else memcpy(p, li->probs + h * T * T, T * T * sizeof(float));
        panels[h] = p;
        snprintf(names[h], sizeof names[h], "head %zu", h);
        panel_titles[h] = names[h];
        snprintf(title, sizeof title, "layer %zu head %zu: entropy %.2f, diag %.2f, prev %.2f%s", l, h, s->entropy,
                 s->diagonal, s->previous, pool_note);
        spec.title = title;
        spec.row_labels = ml.row_ptr;
        spec.col_labels = ml.col_ptr;
        snprintf(path, sizeof path, "%s/attn_L%zu_H%zu.png", dir, l, h);
        const float *one = p;
        rc = png_heatmap(path, &one, 1, g.n, g.n, &spec, err);
    }
    map_labels_free(&ml);
    if (!rc) {
        /* Many heads: a grid of panels of at most ~240 px, labelled only where cells have room. */
        size_t columns = H <= 4 ? H : (size_t)ceil(sqrt((double)H));
        HeatmapSpec all = {.panel_titles = panel_titles, .causal = 1, .vmin = 0.0f, .vmax = 1.0f, .columns = columns};
        if (H > 4) all.cell = 240 / g.n < 2 ? 2 : (240 / g.n > 16 ? 16 : 240 / g.n);
        snprintf(title, sizeof title, "layer %zu attention (rows: query, columns: key)%s", l, pool_note);
        all.title = title;
        size_t cell = heatmap_layout(g.n, g.n, H, &all).cell;
        rc = cell >= 8 ? map_labels(&ml, in, tok, g, cell, err) : 0;
        all.row_labels = ml.row_ptr;
        all.col_labels = ml.col_ptr;
        snprintf(path, sizeof path, "%s/attn_L%zu.png", dir, l);
        if (!rc) rc = png_heatmap(path, panels, H, g.n, g.n, &all, err);
        map_labels_free(&ml);
    }
    free(names);
    free(panels);
    free(panel_titles);
    return rc;
}

/* heads.png: every head as one cell, layers down and heads across: the weight
 * on the previous token, on its own position, and the induction score. */
static int heads_picture(const char *dir, const Inspection *in, const Induction *ind, Error *err) {
    size_t L = in->n_layer, H = in->n_head;
    static const HeadMeasure which[3] = {HM_PREVIOUS, HM_DIAGONAL, HM_INDUCTION};
    float *v = lm_calloc(3 * L * H, sizeof(float), err);
    char (*names)[8] = v ? lm_calloc(L + H, sizeof *names, err) : NULL;
    const char **labels = names ? lm_calloc(L + H, sizeof *labels, err) : NULL;
    int rc = labels ? 0 : -1;
    for (size_t i = 0; !rc && i < 3 * L * H; i++)
        v[i] = (float)head_measure(in, ind, i % (L * H) / H, i % H, which[i / (L * H)]);
    for (size_t i = 0; !rc && i < L + H; i++) {
        snprintf(names[i], sizeof names[i], i < L ? "L%zu" : "%zu", i < L ? i : i - L);
        labels[i] = names[i];
    }
    if (!rc) {
        const float *panels[3] = {v, v + L * H, v + 2 * L * H};
        const char *titles[3] = {"weight on the previous token", "weight on its own position", "induction score"};
        HeatmapSpec spec = {"every head (rows: layers, columns: heads)", titles, labels, labels + L, 0, 0.0f, 1.0f, 0, 0};
        char path[4200];
        snprintf(path, sizeof path, "%s/heads.png", dir);
        rc = png_heatmap(path, panels, 3, L, H, &spec, err);
    }
    free(v);
    free(names);
    free(labels);
    return rc;
}

/* attribution.png: every part, or with many heads the layers' parts and the
 * largest head parts, each under its layer. */
static int attribution_picture(const char *dir, const Inspection *in, const Tokenizer *tok, Error *err) {
    size_t n = arrlenu(in->parts), shares = 0;
    for (size_t i = 0; i < n; i++) shares += in->parts[i].share;
    int pick = n > MANY_PARTS && shares > PICTURE_SHARES;
    const char **pl = lm_calloc(n, sizeof *pl, err);
    double *pv = pl ? lm_calloc(2 * n, sizeof *pv, err) : NULL, *share_v = pv ? pv + n : NULL;
    char(*indented)[40] = pv ? lm_calloc(n, sizeof *indented, err) : NULL;
    size_t *keep = indented ? lm_calloc(PICTURE_SHARES, sizeof *keep, err) : NULL;
    int rc = keep ? 0 : -1;
    if (!rc && pick) {
        for (size_t i = 0; i < n; i++) share_v[i] = in->parts[i].share ? in->parts[i].value : NAN;
        top_k(share_v, n, PICTURE_SHARES, 1, keep);
    }
    size_t m = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        int kept = !pick || !in->parts[i].share;
        for (size_t k = 0; pick && !kept && k < PICTURE_SHARES; k++) kept = keep[k] == i;
        if (!kept) continue;
        /* a share of a mixer's output (a head, the attention bias): below its line */
        snprintf(indented[m], sizeof indented[m], "%s%s", in->parts[i].share ? "    " : "", in->parts[i].name);
        pl[m] = indented[m];
        pv[m++] = in->parts[i].value;
    }
    if (!rc) {
        char lab[TOKEN_LABEL_MAX], title[200], path[4200];
        token_label(tok, in->predicted, 1, lab, sizeof lab);
        int len = snprintf(title, sizeof title, "direct attribution to the logit of '%s' (%.2f) at position %zu", lab,
                           in->predicted_logit, in->T - 1);
        if (pick && len > 0 && (size_t)len < sizeof title)
            snprintf(title + len, sizeof title - (size_t)len, "; the %d largest of %zu head parts", PICTURE_SHARES, shares);
        snprintf(path, sizeof path, "%s/attribution.png", dir);
        rc = png_bars(path, title, pl, pv, m, err);
    }
    free(pl);
    free(pv);
    free(indented);
    free(keep);
    return rc;
}

/* gates.png: each Grassmann layer's mean gate along the prompt. */
static int gates_picture(const char *dir, const Inspection *in, const Tokenizer *tok, Error *err) {
    size_t T = in->T, n = 0;
    for (size_t l = 0; l < in->n_layer; l++) n += in->layer[l].gate_mean != NULL;
    if (!n) return 0;
    float *strip = lm_calloc(n * T, sizeof(float), err);
    char(*names)[8] = strip ? lm_calloc(n, sizeof *names, err) : NULL;
    char(*labels)[TOKEN_LABEL_MAX] = names ? lm_calloc(T, sizeof *labels, err) : NULL;
    const char **lp = labels ? lm_calloc(n + T, sizeof *lp, err) : NULL;
    int rc = lp ? 0 : -1;
    for (size_t l = 0, r = 0; !rc && l < in->n_layer; l++) {
        if (!in->layer[l].gate_mean) continue;
        memcpy(strip + r * T, in->layer[l].gate_mean, T * sizeof(float));
        snprintf(names[r], sizeof names[r], "L%zu", l);
        lp[r] = names[r];
        r++;
    }
    for (size_t t = 0; !rc && t < T; t++) {
        token_label(tok, (uint32_t)in->tokens[t], 1, labels[t], sizeof labels[t]);
        lp[n + t] = labels[t];
    }
    if (!rc) {
        HeatmapSpec spec = {"Grassmann gate a, mean over channels (1: keep x, 0: take g)", NULL, lp, lp + n, 0, 0.0f,
                            1.0f, 0, 0};
        const float *p = strip;
        char path[4200];
        snprintf(path, sizeof path, "%s/gates.png", dir);
        rc = png_heatmap(path, &p, 1, n, T, &spec, err);
    }
    free(strip);
    free(names);
    free(labels);
    free(lp);
    return rc;
}

int inspect_write(const char *dir, const Inspection *in, const Induction *ind, const Model *m, const Tokenizer *tok,
                  const char *prompt, Error *err) {
    if (make_dirs(dir, err)) return -1;
    size_t T = in->T, H = in->n_head;
    MapGrid g = map_grid(T);
    float *pooled = any_maps(in) ? lm_calloc(H * g.n * g.n, sizeof(float), err) : NULL;
    int rc = any_maps(in) && !pooled ? -1 : 0;
    for (size_t l = 0; l < in->n_layer && !rc; l++)
        if (in->layer[l].probs) rc = layer_maps(dir, in, tok, l, pooled, err);
    free(pooled);
    if (!rc && any_maps(in)) rc = heads_picture(dir, in, ind, err);
    if (!rc) rc = gates_picture(dir, in, tok, err);
    if (!rc) rc = attribution_picture(dir, in, tok, err);
    if (!rc) {
        char *text = lens_table(in, tok);
        rc = write_text(dir, "lens.txt", text, err);
        sb_free(&text);
    }
    if (!rc) {
        char *text = NULL, lab[TOKEN_LABEL_MAX];
        sb_appendf(&text, "# position, token id, token (space shown as \xE2\x90\xA3, newline as \\n; in the PNGs space is _, "
                          "newline $ and anything else outside ASCII ?)\n");
        for (size_t t = 0; t < T; t++) {
            token_label(tok, (uint32_t)in->tokens[t], 0, lab, sizeof lab);
            sb_appendf(&text, "%zu\t%d\t%s\n", t, (int)in->tokens[t], lab);
        }
        rc = write_text(dir, "tokens.txt", text, err);
        sb_free(&text);
    }
    if (!rc && any_maps(in)) {
        char *text = NULL;
        sb_appendf(&text, "# every attention head on the prompt (%zu tokens); induction: on %s\n", T,
                   ind ? "repeated random tokens" : "(not measured)");
        for (size_t l = 0; l < in->n_layer; l++)
            if (in->layer[l].probs) head_lines(&text, in, ind, l);
        rc = write_text(dir, "heads.txt", text, err);
        sb_free(&text);
    }
    if (!rc) {
        char *json = build_json(in, ind, m, tok, prompt);
        rc = write_text(dir, "inspect.json", json, err);
        sb_free(&json);
    }
    return rc;
}

/* ---- the printed summary --------------------------------------------------------- */

void inspect_print(FILE *f, const Inspection *in, const Induction *ind, const Model *m, const Tokenizer *tok) {
    size_t H = in->n_head, T = in->T, n_heads = 0;
    for (size_t l = 0; l < in->n_layer; l++) n_heads += in->layer[l].probs ? H : 0;
    int per_head = n_heads <= SUMMARY_HEADS;
    char lab[TOKEN_LABEL_MAX], *sb = NULL;
    token_label(tok, in->predicted, 0, lab, sizeof lab);
    sb_appendf(&sb, "prompt: %zu tokens | predicted next token '%s' (logit %.3f)\n", T, lab, in->predicted_logit);
    if (m->cfg.pos == POS_ROPE)
        sb_appendf(&sb, "rope positions: the maps include the rotation; sv_*, eff_rank and antisym are of W_q^T W_k "
                        "without it\n");
    if (!per_head)
        sb_appendf(&sb, "attention: %zu heads; per layer, means over its heads (every head in heads.txt)\n", n_heads);
    if (!per_head) layer_means(&sb, in, ind);
    for (size_t l = 0; l < in->n_layer; l++) {
        const LayerInspection *li = &in->layer[l];
        if (li->probs && per_head) head_lines(&sb, in, ind, l);
        if (li->gate_mean) {
            double g = 0.0;
            for (size_t t = 0; t < T; t++) g += li->gate_mean[t];
            sb_appendf(&sb, "layer %zu %s: mean gate %.3f | offset contribution norms", l, li->mixer, g / (double)T);
            const ModelConfig *lc = model_layer_cfg(m, l);
            for (size_t k = 0; k < lc->n_windows; k++) sb_appendf(&sb, " d=%zu: %.3f", lc->windows[k], li->offset_norm[k]);
            sb_appendf(&sb, " | max Plücker residual %.2e\n", li->plucker_residual);
        }
        if (!li->probs && !li->gate_mean)
            sb_appendf(&sb, "layer %zu %s: no measurements of its own (logit lens and attribution only)\n", l, li->mixer);
    }
    size_t k = per_head ? 3 : 10;
    if (!per_head) {
        double *prev = head_measures(in, ind, HM_PREVIOUS), *diag = head_measures(in, ind, HM_DIAGONAL);
        if (prev && diag) {
            sb_appendf(&sb, "most weight on the previous token:");
            ranked_heads(&sb, in, prev, k);
            sb_appendf(&sb, "\nmost weight on their own position:");
            ranked_heads(&sb, in, diag, k);
            sb_appendf(&sb, "\n");
        }
        free(prev);
        free(diag);
    }
    if (ind) {
        sb_appendf(&sb, "induction (%zu random tokens repeated, %zu sequences): loss first copy %.3f, second copy %.3f",
                   ind->n, ind->n_seq, ind->loss_first, ind->loss_second);
        double *score = head_measures(in, ind, HM_INDUCTION);
        size_t best = 0;
        if (!score || top_k(score, in->n_layer * H, 1, 0, &best) == 0) {
            sb_appendf(&sb, "; no attention heads\n");
        } else {
            sb_appendf(&sb, "; top heads (a uniform head scores %.3f):", ind->uniform);
            ranked_heads(&sb, in, score, k);
            sb_appendf(&sb, "\n");
        }
        free(score);
    }
    size_t n = arrlenu(in->parts);
    if (n <= MANY_PARTS) {
        sb_appendf(&sb, "direct attribution to '%s':", lab);
        for (size_t i = 0; i < n; i++)
            sb_appendf(&sb, " %s %+.2f%s", in->parts[i].name, in->parts[i].value, i + 1 < n ? "," : "\n");
    } else {
        double *v = malloc(n * sizeof *v);
        size_t best[10] = {0}, got = 0;
        for (size_t i = 0; v && i < n; i++) v[i] = in->parts[i].value;
        if (v) got = top_k(v, n, 10, 1, best);
        sb_appendf(&sb, "direct attribution to '%s', the %zu largest of %zu parts (all in inspect.json):", lab, got, n);
        for (size_t i = 0; i < got; i++)
            sb_appendf(&sb, " %s %+.2f%s", in->parts[best[i]].name, in->parts[best[i]].value, i + 1 < got ? "," : "");
        sb_appendf(&sb, "\n");
        free(v);
    }
    fputs(sb, f);
    sb_free(&sb);
}
