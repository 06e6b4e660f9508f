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

/* Layer l's heads, a line each (the summary of small models, and heads.txt). */
void report_head_lines(char **sb, const Inspection *in, const Induction *ind, size_t l) {
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
            for (size_t i = 0; i < 6; i++) mean[i] += report_head_measure(in, ind, l, h, shown[i]) / (double)H;
            double x = report_head_measure(in, ind, l, h, HM_INDUCTION);
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
    size_t got = report_top_k(v, n, k < 16 ? k : 16, 0, best);
    for (size_t i = 0; i < got; i++)
        sb_appendf(sb, " L%zu H%zu %.3f", best[i] / in->n_head, best[i] % in->n_head, v[best[i]]);
}

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
        if (li->probs && per_head) report_head_lines(&sb, in, ind, l);
        if (li->gate_mean) {
            double g = 0.0;
            for (size_t t = 0; t < T; t++) g += li->gate_mean[t];
            sb_appendf(&sb, "layer %zu %s: mean gate %.3f | offset contribution norms", l, li->mixer, g / (double)T);
            for (size_t k = 0; k < li->n_offsets; k++) sb_appendf(&sb, " d=%zu: %.3f", li->offsets[k], li->offset_norm[k]);
            if (isfinite(li->plucker_residual)) sb_appendf(&sb, " | max Plücker residual %.2e", li->plucker_residual);
            sb_appendf(&sb, "\n");
        }
        if (!li->probs && !li->gate_mean)
            sb_appendf(&sb, "layer %zu %s: no measurements of its own (logit lens and attribution only)\n", l, li->mixer);
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
        if (!score || report_top_k(score, in->n_layer * H, 1, 0, &best) == 0) {
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
