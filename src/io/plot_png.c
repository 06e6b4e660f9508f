/* PNG heatmaps and bar charts for bin/inspect (stb_image_write, stb_easy_font). */
#include "lm/plot_png.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wmissing-braces"
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#include "stb_image_write.h"
#include "stb_easy_font.h"
#pragma GCC diagnostic pop

#include "lm/ds.h"
#include "lm/files.h"

static const unsigned char BLACK[3] = {0, 0, 0}, GREY[3] = {200, 200, 200}, DARK[3] = {90, 90, 90};

int image_init(Image *im, size_t w, size_t h, Error *err) {
    im->w = w;
    im->h = h;
    im->rgb = lm_calloc(w * h, 3, err);
    if (!im->rgb) return -1;
    memset(im->rgb, 255, w * h * 3);
    return 0;
}

void image_free(Image *im) {
    free(im->rgb);
    im->rgb = NULL;
}

void image_rect(Image *im, long x, long y, long w, long h, const unsigned char rgb[3]) {
    long x0 = x < 0 ? 0 : x, y0 = y < 0 ? 0 : y;
    long x1 = x + w > (long)im->w ? (long)im->w : x + w, y1 = y + h > (long)im->h ? (long)im->h : y + h;
    for (long r = y0; r < y1; r++)
        for (long c = x0; c < x1; c++) memcpy(im->rgb + ((size_t)r * im->w + (size_t)c) * 3, rgb, 3);
}

/* The font indexes a table by character - 32: anything outside printable
 * ASCII must not reach it. */
static void printable(char *dst, const char *src, size_t cap) {
    size_t n = 0;
    for (; src[n] && n + 1 < cap; n++) dst[n] = src[n] >= 32 && src[n] < 127 ? src[n] : '?';
    dst[n] = '\0';
}

size_t text_width(const char *text, size_t scale) {
    char buf[256];
    printable(buf, text, sizeof buf);
    return (size_t)stb_easy_font_width(buf) * scale;
}

size_t image_text(Image *im, long x, long y, const char *text, size_t scale, const unsigned char rgb[3]) {
    char buf[256];
    printable(buf, text, sizeof buf);
    static float quads[256 * 64 * 4]; /* 64 bytes per quad, up to ~270 quads per character: ample */
    int nq = stb_easy_font_print(0.0f, 0.0f, buf, NULL, quads, (int)sizeof quads);
    for (int q = 0; q < nq; q++) {
        const float *v = quads + (size_t)q * 16; /* 4 vertices of x, y, z, colour */
        float xa = v[0], ya = v[1], xb = v[8], yb = v[9];
        long qx = lroundf(fminf(xa, xb) * (float)scale), qy = lroundf(fminf(ya, yb) * (float)scale);
        long qw = lroundf(fabsf(xb - xa) * (float)scale), qh = lroundf(fabsf(yb - ya) * (float)scale);
        image_rect(im, x + qx, y + qy, qw, qh, rgb);
    }
    return (size_t)stb_easy_font_width(buf) * scale;
}

static void append_bytes(void *ctx, void *data, int size) {
    unsigned char **buf = ctx;
    memcpy(arraddnptr(*buf, size), data, (size_t)size);
}

int image_save_png(const Image *im, const char *path, Error *err) {
    unsigned char *png = NULL;
    int ok = stbi_write_png_to_func(append_bytes, &png, (int)im->w, (int)im->h, 3, im->rgb, (int)(im->w * 3));
    int rc = ok ? write_file_atomic(path, png, arrlenu(png), err) : err_set(err, "cannot encode %s as PNG", path);
    arrfree(png);
    return rc;
}

void colormap(double v, unsigned char rgb[3]) {
    /* viridis, sampled at 9 evenly spaced points */
    static const unsigned char stops[9][3] = {{68, 1, 84},    {71, 44, 122},  {59, 81, 139},
                                              {44, 113, 142}, {33, 144, 141}, {39, 173, 129},
                                              {92, 200, 99},  {170, 220, 50}, {253, 231, 37}};
    v = !(v > 0.0) ? 0.0 : (v > 1.0 ? 1.0 : v);
    double x = v * 8.0;
    size_t i = x >= 8.0 ? 7 : (size_t)x;
    double f = x - (double)i;
    for (int c = 0; c < 3; c++) rgb[c] = (unsigned char)lround(stops[i][c] * (1.0 - f) + stops[i + 1][c] * f);
}

static size_t max_label_width(const char *const *labels, size_t n, size_t scale) {
    size_t w = 0;
    for (size_t i = 0; labels && i < n; i++) {
        size_t lw = text_width(labels[i], scale);
        w = lw > w ? lw : w;
    }
    return w;
}

/* Labels are drawn at twice the font size when cells are large enough. */
static size_t label_scale(size_t cell) { return cell >= 20 ? 2 : 1; }

HeatmapLayout heatmap_layout(size_t rows, size_t cols, size_t n_panels, const HeatmapSpec *spec) {
    HeatmapLayout l;
    size_t big = rows > cols ? rows : cols;
    /* Square maps fit in ~640 px; strips (few rows) get wider cells. */
    l.cell = 4 * rows <= cols ? 960 / cols : (big ? 640 / big : 32);
    l.cell = l.cell < 8 ? 8 : (l.cell > 32 ? 32 : l.cell);
    if (spec->cell) l.cell = spec->cell;
    l.columns = spec->columns && spec->columns < n_panels ? spec->columns : n_panels;
    size_t ls = label_scale(l.cell), grid_rows = (n_panels + l.columns - 1) / l.columns;
    size_t title_h = spec->panel_titles ? TEXT_HEIGHT(1) + 4 : 0, labels_h = spec->col_labels ? TEXT_HEIGHT(ls) + 4 : 0;
    l.left = 8 + max_label_width(spec->row_labels, rows, ls) + 4;
    l.top = 8 + (spec->title ? TEXT_HEIGHT(2) + 6 : 0) + title_h;
    l.gap = 16;
    l.panel_w = cols * l.cell;
    l.panel_h = rows * l.cell;
    l.row_stride = l.panel_h + labels_h + l.gap + title_h;
    l.bar_x = l.left + l.columns * l.panel_w + (l.columns - 1) * l.gap + l.gap;
    l.bar_w = 16;
    char lo[32], hi[32];
    snprintf(lo, sizeof lo, "%g", spec->vmin);
    snprintf(hi, sizeof hi, "%g", spec->vmax);
    size_t tw = text_width(lo, 1) > text_width(hi, 1) ? text_width(lo, 1) : text_width(hi, 1);
    l.width = l.bar_x + l.bar_w + 4 + tw + 8;
    size_t min_h = l.top + 2 * TEXT_HEIGHT(1) + 40; /* room for the colour bar's labels */
    l.height = l.top + (grid_rows - 1) * l.row_stride + l.panel_h + labels_h + 8;
    l.height = l.height < min_h ? min_h : l.height;
    if (spec->title && text_width(spec->title, 2) + 16 > l.width) l.width = text_width(spec->title, 2) + 16;
    return l;
}

size_t heatmap_panel_x(const HeatmapLayout *lay, size_t panel) {
    return lay->left + panel % lay->columns * (lay->panel_w + lay->gap);
}

size_t heatmap_panel_y(const HeatmapLayout *lay, size_t panel) { return lay->top + panel / lay->columns * lay->row_stride; }

int png_heatmap(const char *path, const float *const *panels, size_t n_panels, size_t rows, size_t cols,
                const HeatmapSpec *spec, Error *err) {
    HeatmapLayout L = heatmap_layout(rows, cols, n_panels, spec);
    Image im;
    if (image_init(&im, L.width, L.height, err)) return -1;
    size_t ls = label_scale(L.cell);
    if (spec->title) image_text(&im, 8, 8, spec->title, 2, BLACK);
    double span = spec->vmax > spec->vmin ? (double)spec->vmax - spec->vmin : 1.0;
    for (size_t p = 0; p < n_panels; p++) {
        size_t px = heatmap_panel_x(&L, p), py = heatmap_panel_y(&L, p);
        if (spec->panel_titles)
            image_text(&im, (long)px, (long)(py - TEXT_HEIGHT(1) - 4), spec->panel_titles[p], 1, BLACK);
        for (size_t r = 0; r < rows; r++)
            for (size_t c = 0; c < cols; c++) {
                float v = panels[p][r * cols + c];
                unsigned char rgb[3];
                if ((spec->causal && c > r) || isnan(v)) memcpy(rgb, GREY, 3);
                else colormap((v - spec->vmin) / span, rgb);
                image_rect(&im, (long)(px + c * L.cell), (long)(py + r * L.cell), (long)L.cell, (long)L.cell, rgb);
            }
        for (size_t c = 0; spec->col_labels && c < cols; c++) {
            size_t tw = text_width(spec->col_labels[c], ls);
            long x = (long)(px + c * L.cell + L.cell / 2) - (long)tw / 2;
            image_text(&im, x, (long)(py + L.panel_h + 3), spec->col_labels[c], ls, BLACK);
        }
        for (size_t r = 0; spec->row_labels && p % L.columns == 0 && r < rows; r++) {
            size_t tw = text_width(spec->row_labels[r], ls);
            long yr = (long)(py + r * L.cell + L.cell / 2) - (long)(TEXT_HEIGHT(ls) * 4 / 10);
            image_text(&im, (long)(L.left - 4 - tw), yr, spec->row_labels[r], ls, BLACK);
        }
    }
    /* The colour bar: vmax at the top, vmin at the bottom, over the panels' height (or 40 px). */
    size_t bar_h = L.panel_h > 40 ? L.panel_h : 40;
    for (size_t i = 0; i < bar_h; i++) {
        unsigned char rgb[3];
        colormap(1.0 - (double)i / (double)(bar_h - 1), rgb);
        image_rect(&im, (long)L.bar_x, (long)(L.top + i), (long)L.bar_w, 1, rgb);
    }
    char lo[32], hi[32];
    snprintf(lo, sizeof lo, "%g", spec->vmin);
    snprintf(hi, sizeof hi, "%g", spec->vmax);
    image_text(&im, (long)(L.bar_x + L.bar_w + 4), (long)L.top, hi, 1, BLACK);
    image_text(&im, (long)(L.bar_x + L.bar_w + 4), (long)(L.top + bar_h - TEXT_HEIGHT(1)), lo, 1, BLACK);
    int rc = image_save_png(&im, path, err);
    image_free(&im);
    return rc;
}

int png_bars(const char *path, const char *title, const char *const *labels, const double *values, size_t n,
             Error *err) {
    const unsigned char POS[3] = {33, 144, 141}, NEG[3] = {200, 80, 60};
    size_t row = 16, label_w = max_label_width(labels, n, 1), bar_area = 420, value_w = 60;
    double vmax = 0.0;
    for (size_t i = 0; i < n; i++) vmax = fabs(values[i]) > vmax ? fabs(values[i]) : vmax;
    if (vmax == 0.0) vmax = 1.0;
    size_t top = 8 + (title ? TEXT_HEIGHT(2) + 8 : 0), x0 = 8 + label_w + 8 + value_w;
    size_t width = x0 + bar_area + value_w + 8, height = top + n * row + 8;
    if (title && text_width(title, 2) + 16 > width) width = text_width(title, 2) + 16;
    Image im;
    if (image_init(&im, width, height, err)) return -1;
    if (title) image_text(&im, 8, 8, title, 2, BLACK);
    size_t zero = x0 + bar_area / 2;
    for (size_t i = 0; i < n; i++) {
        long y = (long)(top + i * row);
        image_text(&im, 8, y + 3, labels[i], 1, BLACK);
        long len = lround(fabs(values[i]) / vmax * (double)(bar_area / 2));
        char v[32];
        snprintf(v, sizeof v, "%+.3f", values[i]);
        if (values[i] >= 0) {
            image_rect(&im, (long)zero, y + 2, len, (long)row - 4, POS);
            image_text(&im, (long)zero + len + 4, y + 3, v, 1, DARK);
        } else {
            image_rect(&im, (long)zero - len, y + 2, len, (long)row - 4, NEG);
            image_text(&im, (long)zero - len - 4 - (long)text_width(v, 1), y + 3, v, 1, DARK);
        }
    }
    image_rect(&im, (long)zero, (long)top, 1, (long)(n * row), BLACK);
    int rc = image_save_png(&im, path, err);
    image_free(&im);
    return rc;
}

