/* bin/inspect's tables (lens.txt, heads.txt) and the printed summary: per
 * head for small models; per layer, with the heads that stand out on each
 * measure, beyond SUMMARY_HEADS heads. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "lm/json.h"
#include "lm/plot_png.h"
#include "lm/utf8.h"
#include "lm/ds.h"
#include "lm/files.h"

/* Models with more heads than this get the summary per layer, not per head. */
#define SUMMARY_HEADS 32

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
char *report_lens_table(const Inspection *in, const Tokenizer *tok) {
    char *sb = NULL, lab[TOKEN_LABEL_MAX];
    size_t T = in->T, w_in = label_column(tok, NULL, in->tokens, T, 6);
    size_t w_out = label_column(tok, in->lens_top, NULL, (in->n_layer + 1) * T * LENS_TOP, 6);
    sb_appendf(&sb, "# logit lens: the stream after each stage through ln_f and %s; top-%d next tokens\n"
                    "# (space shown as \xE2\x90\xA3, newline as \\n)\n", in->lens_head, LENS_TOP);
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

/* Layer l's maps, a line each with bin/inspect's statistics of them (the
 * summary of small models, and heads.txt). */
static void map_lines(char **sb, const Inspection *in, const Induction *ind, size_t l) {
    const Exhibit *e = in->maps[l];
    sb_appendf(sb, "layer %zu %s: %s, %s\n  map   entropy  diag   prev   induction\n", l, in->layer[l].mixer, e->name,
               e->caption);
    for (size_t h = 0; h < e->rows; h++) {
        const MapStats *s = &in->map_stats[l][h];
        sb_appendf(sb, "  %-4s  %7.3f  %5.3f  %5.3f  %9.3f\n", e->row_names[h], s->entropy, s->diagonal, s->previous,
                   ind ? ind->score[l * in->n_head + h] : NAN);
    }
}

/* A table in full: its caption, a header of its columns (or their
 * indices) and a line per row. */
static void table_lines(char **sb, const Exhibit *e, const char *indent) {
    sb_appendf(sb, "%s%s: %s\n%s  row ", indent, e->name, e->caption, indent);
    size_t *width = calloc(e->cols ? e->cols : 1, sizeof *width);
    for (size_t c = 0; width && c < e->cols; c++) {
        char index[24];
        snprintf(index, sizeof index, "%zu", c);
        const char *name = e->col_names ? e->col_names[c] : index;
        width[c] = strlen(name) > 9 ? strlen(name) : 9;
        sb_appendf(sb, "  %*s", (int)width[c], name);
    }
    sb_appendf(sb, "\n");
    for (size_t r = 0; width && r < e->rows; r++) {
        sb_appendf(sb, "%s  %-4s", indent, e->row_names[r]);
        for (size_t c = 0; c < e->cols; c++) sb_appendf(sb, "  %*.4g", (int)width[c], e->values[r * e->cols + c]);
        sb_appendf(sb, "\n");
    }
    free(width);
}

/* A table with named columns: its means over the rows, on one line. */
static void table_means(char **sb, const Exhibit *e, const char *indent) {
    sb_appendf(sb, "%s%s (means of %zu rows):", indent, e->name, e->rows);
    for (size_t c = 0; c < e->cols; c++) {
        double sum = 0.0;
        for (size_t r = 0; r < e->rows; r++) sum += e->values[r * e->cols + c];
        sb_appendf(sb, " %s %.3g", e->col_names[c], sum / (double)e->rows);
    }
    sb_appendf(sb, "\n");
}

/* An exhibit other than maps, for the summary: a series as its means over
 * the prompt, a scalar as it is, a table with named columns in full (or,
 * with `many` rows, its means); a sequence table is only pointed at. */
static void exhibit_brief(char **sb, const Exhibit *e, const char *indent, int many) {
    switch (e->kind) {
    case EXHIBIT_SERIES:
        sb_appendf(sb, "%s%s: %s; mean%s", indent, e->name, e->caption, e->rows > 1 ? "s" : "");
        for (size_t r = 0; r < e->rows; r++) {
            if (e->rows > 1) sb_appendf(sb, "%s %s", r ? "," : "", e->row_names[r]);
            sb_appendf(sb, " %.3f", report_row_mean(e, r));
        }
        sb_appendf(sb, "\n");
        break;
    case EXHIBIT_SCALAR: sb_appendf(sb, "%s%s: %s; %.3g\n", indent, e->name, e->caption, e->values[0]); break;
    case EXHIBIT_TABLE:
        if (!e->col_names)
            sb_appendf(sb, "%s%s: %s; %zu rows of %zu, in heads.txt, inspect.json and inspect.html\n", indent, e->name,
                       e->caption, e->rows, e->cols);
        else if (many) table_means(sb, e, indent);
        else table_lines(sb, e, indent);
        break;
    case EXHIBIT_MAPS: break;
    }
}

char *report_heads_text(const Inspection *in, const Induction *ind) {
    if (!report_any_maps(in) && !report_any(in, EXHIBIT_TABLE)) return NULL;
    char *sb = NULL;
    sb_appendf(&sb, "# every map's statistics and every table of each layer, on the prompt (%zu tokens); induction: on %s\n",
               in->T, ind ? "repeated random tokens" : "(not measured)");
    for (size_t l = 0; l < in->n_layer; l++) {
        const LayerInspection *li = &in->layer[l];
        if (in->maps[l]) map_lines(&sb, in, ind, l);
        for (size_t i = 0; i < li->n_exhibits; i++)
            if (li->exhibits[i].kind == EXHIBIT_TABLE) {
                sb_appendf(&sb, "layer %zu %s: ", l, li->mixer);
                table_lines(&sb, &li->exhibits[i], "");
            }
    }
    return sb;
}

/* One line per layer with maps: the means of its maps' statistics, and its
 * strongest induction head. */
static void layer_means(char **sb, const Inspection *in, const Induction *ind) {
    static const HeadMeasure shown[] = {HM_ENTROPY, HM_DIAGONAL, HM_PREVIOUS};
    sb_appendf(sb, "  layer  entropy  diag   prev   induction (best head)\n");
    for (size_t l = 0; l < in->n_layer; l++) {
        if (!in->maps[l]) continue;
        size_t H = in->maps[l]->rows, best_h = 0;
        double mean[3] = {0}, best = -INFINITY;
        for (size_t h = 0; h < H; h++) {
            for (size_t i = 0; i < 3; i++) mean[i] += report_head_measure(in, ind, l, h, shown[i]) / (double)H;
            double x = report_head_measure(in, ind, l, h, HM_INDUCTION);
            if (x > best) best = x, best_h = h;
        }
        sb_appendf(sb, "  L%-4zu  %7.3f  %5.3f  %5.3f", l, mean[0], mean[1], mean[2]);
        if (isfinite(best)) sb_appendf(sb, "  %9.3f (H%zu)", best, best_h);
        sb_appendf(sb, "\n");
    }
}

/* "L<l> H<h> <value>" for the k heads with the largest of a measure. */
static void ranked_heads(char **sb, const Inspection *in, const double *v, size_t k) {
    size_t n = in->n_layer * in->n_head, best[16] = {0};
    size_t got = report_top_k(v, n, k < 16 ? k : 16, 0, best);
    for (size_t i = 0; i < got; i++)
        sb_appendf(sb, " L%zu H%zu %.3f", best[i] / in->n_head, best[i] % in->n_head, v[best[i]]);
}

void inspect_print(FILE *f, const Inspection *in, const Induction *ind, const Tokenizer *tok) {
    size_t T = in->T, n_heads = 0;
    for (size_t l = 0; l < in->n_layer; l++) n_heads += in->maps[l] ? in->maps[l]->rows : 0;
    int per_head = n_heads <= SUMMARY_HEADS;
    char lab[TOKEN_LABEL_MAX], *sb = NULL;
    token_label(tok, in->predicted, 0, lab, sizeof lab);
    sb_appendf(&sb, "prompt: %zu tokens | predicted next token '%s' (logit %.3f)\n", T, lab, in->predicted_logit);
    if (!per_head) {
        sb_appendf(&sb, "maps: %zu heads; per layer, means over its heads (every head in heads.txt)\n", n_heads);
        layer_means(&sb, in, ind);
    }
    for (size_t l = 0; l < in->n_layer; l++) {
        const LayerInspection *li = &in->layer[l];
        if (li->n_exhibits == 0) {
            sb_appendf(&sb, "layer %zu %s: no measurements of its own (logit lens and attribution only)\n", l, li->mixer);
            continue;
        }
        if (in->maps[l] && per_head) map_lines(&sb, in, ind, l);
        else if (per_head) sb_appendf(&sb, "layer %zu %s\n", l, li->mixer);
        for (size_t i = 0; i < li->n_exhibits; i++) {
            char indent[32];
            snprintf(indent, sizeof indent, per_head ? "  " : "  L%zu ", l);
            exhibit_brief(&sb, &li->exhibits[i], indent, !per_head);
        }
    }
    size_t k = per_head ? 3 : 10;
    if (!per_head) {
        double *prev = report_head_measures(in, ind, HM_PREVIOUS), *diag = report_head_measures(in, ind, HM_DIAGONAL);
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
        double *score = report_head_measures(in, ind, HM_INDUCTION);
        size_t best = 0;
        if (!score || report_top_k(score, in->n_layer * in->n_head, 1, 0, &best) == 0) {
            sb_appendf(&sb, "; no maps\n");
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
        if (v) got = report_top_k(v, n, 10, 1, best);
        sb_appendf(&sb, "direct attribution to '%s', the %zu largest of %zu parts (all in inspect.json):", lab, got, n);
        for (size_t i = 0; i < got; i++)
            sb_appendf(&sb, " %s %+.2f%s", in->parts[best[i]].name, in->parts[best[i]].value, i + 1 < got ? "," : "");
        sb_appendf(&sb, "\n");
        free(v);
    }
    fputs(sb, f);
    sb_free(&sb);
}
