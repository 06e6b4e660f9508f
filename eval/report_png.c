/* bin/inspect's pictures: each layer's maps (long prompts max-pooled in
 * blocks, a layer's heads in a grid), every map's statistics at a glance
 * (heads.png), every series along the prompt (a picture per name, a row
 * per layer's row) and the attribution of the predicted token. */
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

/* Head parts the attribution picture keeps when there are many (MANY_PARTS). */
#define PICTURE_SHARES 12

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

/* The maps of layer l: <name>_L<l>_H<h>.png for each head, and
 * <name>_L<l>.png with all its heads, side by side for up to 4 of them,
 * else in a grid of smaller panels. pooled: room for H maps of the grid's
 * cells. */
static int layer_maps(const char *dir, const Inspection *in, const Tokenizer *tok, size_t l, float *pooled,
                      Error *err) {
    const Exhibit *e = in->maps[l];
    size_t T = in->T, H = e->rows;
    MapGrid g = map_grid(T);
    char path[4200], title[400], pool_note[64] = "", (*names)[16] = lm_calloc(H, sizeof *names, err);
    const float **panels = names ? lm_calloc(H, sizeof *panels, err) : NULL;
    const char **panel_titles = panels ? lm_calloc(H, sizeof *panel_titles, err) : NULL;
    if (!panel_titles) {
        free(names);
        free(panels);
        return -1;
    }
    if (g.block > 1) snprintf(pool_note, sizeof pool_note, " (largest weight of each %zu x %zu block)", g.block, g.block);
    float lo, hi;
    report_scale(in, EXHIBIT_MAPS, e->name, &lo, &hi);
    HeatmapSpec spec = {.causal = 1, .vmin = lo, .vmax = hi};
    MapLabels ml = {0};
    int rc = map_labels(&ml, in, tok, g, heatmap_layout(g.n, g.n, 1, &spec).cell, err);
    for (size_t h = 0; h < H && !rc; h++) {
        const MapStats *s = &in->map_stats[l][h];
        float *p = pooled + h * g.n * g.n;
        if (g.block > 1) pool_map(p, e->values + h * T * T, T, g);
        else memcpy(p, e->values + h * T * T, T * T * sizeof(float));
        panels[h] = p;
        snprintf(names[h], sizeof names[h], "head %zu", h);
        panel_titles[h] = names[h];
        snprintf(title, sizeof title, "layer %zu head %zu: entropy %.2f, diag %.2f, prev %.2f%s", l, h, s->entropy,
                 s->diagonal, s->previous, pool_note);
        spec.title = title;
        spec.row_labels = ml.row_ptr;
        spec.col_labels = ml.col_ptr;
        snprintf(path, sizeof path, "%s/%s_L%zu_H%zu.png", dir, e->name, l, h);
        const float *one = p;
        rc = png_heatmap(path, &one, 1, g.n, g.n, &spec, err);
    }
    map_labels_free(&ml);
    if (!rc) {
        /* Many heads: a grid of panels of at most ~240 px, labelled only where cells have room. */
        size_t columns = H <= 4 ? H : (size_t)ceil(sqrt((double)H));
        HeatmapSpec all = {.panel_titles = panel_titles, .causal = 1, .vmin = lo, .vmax = hi, .columns = columns};
        if (H > 4) all.cell = 240 / g.n < 2 ? 2 : (240 / g.n > 16 ? 16 : 240 / g.n);
        snprintf(title, sizeof title, "layer %zu: %s%s", l, e->caption, pool_note);
        all.title = title;
        size_t cell = heatmap_layout(g.n, g.n, H, &all).cell;
        rc = cell >= 8 ? map_labels(&ml, in, tok, g, cell, err) : 0;
        all.row_labels = ml.row_ptr;
        all.col_labels = ml.col_ptr;
        snprintf(path, sizeof path, "%s/%s_L%zu.png", dir, e->name, l);
        if (!rc) rc = png_heatmap(path, panels, H, g.n, g.n, &all, err);
        map_labels_free(&ml);
    }
    free(names);
    free(panels);
    free(panel_titles);
    return rc;
}

/* heads.png: every head (map) as one cell, layers down and heads across: the
 * weight on the previous token, on its own position, and the induction
 * score; a layer without maps grey. */
static int heads_picture(const char *dir, const Inspection *in, const Induction *ind, Error *err) {
    size_t L = in->n_layer, H = in->n_head;
    static const HeadMeasure which[3] = {HM_PREVIOUS, HM_DIAGONAL, HM_INDUCTION};
    float *v = lm_calloc(3 * L * H, sizeof(float), err);
    char (*names)[8] = v ? lm_calloc(L + H, sizeof *names, err) : NULL;
    const char **labels = names ? lm_calloc(L + H, sizeof *labels, err) : NULL;
    int rc = labels ? 0 : -1;
    for (size_t i = 0; !rc && i < 3 * L * H; i++)
        v[i] = (float)report_head_measure(in, ind, i % (L * H) / H, i % H, which[i / (L * H)]);
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
        report_top_k(share_v, n, PICTURE_SHARES, 1, keep);
    }
    size_t m = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        int kept = !pick || !in->parts[i].share;
        for (size_t k = 0; pick && !kept && k < PICTURE_SHARES; k++) kept = keep[k] == i;
        if (!kept) continue;
        /* a share of a mixer's output (a head, an output bias): below its line */
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

/* <name>.png: every layer's series of that name along the prompt, a row per
 * layer ("L<l>") or per row of it ("L<l> <row>"), on one scale. */
static int series_picture(const char *dir, const Inspection *in, const Tokenizer *tok, const char *name, Error *err) {
    size_t T = in->T, n = 0;
    const char *caption = "";
    for (size_t l = 0; l < in->n_layer; l++) {
        const Exhibit *e = report_exhibit(in, l, EXHIBIT_SERIES, name);
        n += e ? e->rows : 0;
        caption = e ? e->caption : caption;
    }
    float *strip = lm_calloc(n * T, sizeof(float), err);
    char(*names)[EXHIBIT_LABEL + 8] = strip ? lm_calloc(n, sizeof *names, err) : NULL;
    char(*labels)[TOKEN_LABEL_MAX] = names ? lm_calloc(T, sizeof *labels, err) : NULL;
    const char **lp = labels ? lm_calloc(n + T, sizeof *lp, err) : NULL;
    int rc = lp ? 0 : -1;
    for (size_t l = 0, r = 0; !rc && l < in->n_layer; l++) {
        const Exhibit *e = report_exhibit(in, l, EXHIBIT_SERIES, name);
        for (size_t k = 0; e && k < e->rows; k++, r++) {
            memcpy(strip + r * T, e->values + k * T, T * sizeof(float));
            if (e->rows == 1) snprintf(names[r], sizeof names[r], "L%zu", l);
            else snprintf(names[r], sizeof names[r], "L%zu %s", l, e->row_names[k]);
            lp[r] = names[r];
        }
    }
    for (size_t t = 0; !rc && t < T; t++) {
        token_label(tok, (uint32_t)in->tokens[t], 1, labels[t], sizeof labels[t]);
        lp[n + t] = labels[t];
    }
    if (!rc) {
        float lo, hi;
        report_scale(in, EXHIBIT_SERIES, name, &lo, &hi);
        HeatmapSpec spec = {caption, NULL, lp, lp + n, 0, lo, hi, 0, 0};
        const float *p = strip;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s.png", dir, name);
        rc = png_heatmap(path, &p, 1, n, T, &spec, err);
    }
    free(strip);
    free(names);
    free(labels);
    free(lp);
    return rc;
}

int report_pictures(const char *dir, const Inspection *in, const Induction *ind, const Tokenizer *tok, Error *err) {
    size_t H = in->n_head;
    MapGrid g = map_grid(in->T);
    float *pooled = report_any_maps(in) ? lm_calloc(H * g.n * g.n, sizeof(float), err) : NULL;
    int rc = report_any_maps(in) && !pooled ? -1 : 0;
    for (size_t l = 0; l < in->n_layer && !rc; l++)
        if (in->maps[l]) rc = layer_maps(dir, in, tok, l, pooled, err);
    free(pooled);
    if (!rc && report_any_maps(in)) rc = heads_picture(dir, in, ind, err);
    const char *names[REPORT_NAMES_MAX];
    size_t n = report_names(in, EXHIBIT_SERIES, names, REPORT_NAMES_MAX);
    for (size_t i = 0; i < n && !rc; i++) rc = series_picture(dir, in, tok, names[i], err);
    if (!rc) rc = attribution_picture(dir, in, tok, err);
    return rc;
}
