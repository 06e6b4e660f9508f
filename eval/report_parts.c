/* What bin/inspect's report files share: token labels and the head
 * measures looked up and ranked (see report.h). */
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

/* The k indices of v (n) with the largest values (absolute: largest |v|), NaN
 * left out, in decreasing order and the first index first among equals;
 * returns how many (at most k). */
size_t report_top_k(const double *v, size_t n, size_t k, int absolute, size_t *out) {
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

double report_head_measure(const Inspection *in, const Induction *ind, size_t l, size_t h, HeadMeasure which) {
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
double *report_head_measures(const Inspection *in, const Induction *ind, HeadMeasure which) {
    size_t L = in->n_layer, H = in->n_head;
    double *v = malloc(L * H * sizeof *v);
    for (size_t i = 0; v && i < L * H; i++) v[i] = report_head_measure(in, ind, i / H, i % H, which);
    return v;
}

int report_any_maps(const Inspection *in) {
    for (size_t l = 0; l < in->n_layer; l++)
        if (in->layer[l].probs) return 1;
    return 0;
}
