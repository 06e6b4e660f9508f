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
    const MapStats *s = in->map_stats[l];
    if (!s || h >= in->maps[l]->rows) return NAN;
    switch (which) {
    case HM_ENTROPY: return s[h].entropy;
    case HM_DIAGONAL: return s[h].diagonal;
    case HM_PREVIOUS: return s[h].previous;
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
        if (in->maps[l]) return 1;
    return 0;
}

int report_any(const Inspection *in, ExhibitKind kind) {
    for (size_t l = 0; l < in->n_layer; l++)
        if (layer_exhibit_of(&in->layer[l], kind)) return 1;
    return 0;
}

size_t report_names(const Inspection *in, ExhibitKind kind, const char **names, size_t max) {
    size_t n = 0;
    for (size_t l = 0; l < in->n_layer; l++)
        for (size_t i = 0; i < in->layer[l].n_exhibits; i++) {
            const Exhibit *e = &in->layer[l].exhibits[i];
            size_t k = 0;
            while (k < n && strcmp(names[k], e->name)) k++;
            if (e->kind == kind && k == n && n < max) names[n++] = e->name;
        }
    return n;
}

const Exhibit *report_exhibit(const Inspection *in, size_t l, ExhibitKind kind, const char *name) {
    for (size_t i = 0; i < in->layer[l].n_exhibits; i++)
        if (in->layer[l].exhibits[i].kind == kind && strcmp(in->layer[l].exhibits[i].name, name) == 0)
            return &in->layer[l].exhibits[i];
    return NULL;
}

void report_scale(const Inspection *in, ExhibitKind kind, const char *name, float *lo, float *hi) {
    float least = INFINITY, most = -INFINITY, given_lo = INFINITY, given_hi = -INFINITY;
    for (size_t l = 0; l < in->n_layer; l++) {
        const Exhibit *e = report_exhibit(in, l, kind, name);
        if (!e) continue;
        if (!isnan(e->lo)) given_lo = e->lo < given_lo ? e->lo : given_lo;
        if (!isnan(e->hi)) given_hi = e->hi > given_hi ? e->hi : given_hi;
        for (size_t i = 0; i < exhibit_size(e); i++) {
            float v = e->values[i];
            if (isnan(v)) continue;
            least = v < least ? v : least;
            most = v > most ? v : most;
        }
    }
    *lo = isfinite(given_lo) ? given_lo : isfinite(least) ? least : 0.0f;
    *hi = isfinite(given_hi) ? given_hi : isfinite(most) ? most : 1.0f;
    if (!(*hi > *lo)) *hi = *lo + 1.0f; /* a constant: any scale shows it */
}

double report_row_mean(const Exhibit *e, size_t r) {
    double sum = 0.0;
    size_t n = 0;
    for (size_t t = 0; t < e->cols; t++)
        if (!isnan(e->values[r * e->cols + t])) sum += e->values[r * e->cols + t], n++;
    return n ? sum / (double)n : NAN;
}
