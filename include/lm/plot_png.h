/* Small PNG pictures for bin/inspect: heatmaps with a colour bar (attention
 * maps, Grassmann gate strips) and horizontal bar charts, labelled with
 * stb_easy_font's segment font and written with stb_image_write. */
#ifndef LM_PLOT_PNG_H
#define LM_PLOT_PNG_H

#include <stddef.h>

#include "lm/error.h"

/* An RGB image, rows top to bottom, white when created. */
typedef struct Image {
    size_t w, h;
    unsigned char *rgb;
} Image;

int image_init(Image *im, size_t w, size_t h, Error *err);
void image_free(Image *im);
/* Fills the rectangle [x, x+w) x [y, y+h), clipped to the image. */
void image_rect(Image *im, long x, long y, long w, long h, const unsigned char rgb[3]);
/* Draws ASCII text (other bytes shown as '?') with its top-left at (x, y),
 * each font unit `scale` pixels; returns its width in pixels. */
size_t image_text(Image *im, long x, long y, const char *text, size_t scale, const unsigned char rgb[3]);
size_t text_width(const char *text, size_t scale);
#define TEXT_HEIGHT(scale) (10 * (scale))
int image_save_png(const Image *im, const char *path, Error *err);

/* Perceptually uniform colour scale (viridis: dark blue at 0, yellow at 1);
 * v is clamped to [0, 1]. */
void colormap(double v, unsigned char rgb[3]);

/* One figure of n_panels heatmaps of rows x cols, side by side or in a grid
 * of `columns` panels a row, sharing one colour scale [vmin, vmax] drawn as a
 * bar at the right with its end values. */
typedef struct HeatmapSpec {
    const char *title;                /* above the panels, or NULL */
    const char *const *panel_titles;  /* n_panels, or NULL */
    const char *const *row_labels;    /* rows, or NULL: left of each row of panels ("" draws nothing) */
    const char *const *col_labels;    /* cols, or NULL: under every panel ("" draws nothing) */
    int causal;                       /* cells above the diagonal are masked (grey) */
    float vmin, vmax;
    size_t columns;                   /* panels a row; 0: all in one row */
    size_t cell;                      /* pixels a cell; 0: chosen from the size (8 to 32) */
} HeatmapSpec;

/* Where everything goes; the drawing and the tests both use it. Cell (r, c)
 * of panel p covers x in [panel_x(p) + c*cell, +cell), y in [panel_y(p) +
 * r*cell, +cell); the first row of panels starts at y = top. */
typedef struct HeatmapLayout {
    size_t cell, left, top, gap, panel_w, panel_h, bar_x, bar_w, width, height;
    size_t columns, row_stride; /* panels a row; y from one row of panels to the next */
} HeatmapLayout;

HeatmapLayout heatmap_layout(size_t rows, size_t cols, size_t n_panels, const HeatmapSpec *spec);
size_t heatmap_panel_x(const HeatmapLayout *lay, size_t panel);
size_t heatmap_panel_y(const HeatmapLayout *lay, size_t panel);
/* panels[p] is rows x cols, row-major; NaN cells are drawn grey. */
int png_heatmap(const char *path, const float *const *panels, size_t n_panels, size_t rows, size_t cols,
                const HeatmapSpec *spec, Error *err);

/* Horizontal bars from a zero line, one per label, positive and negative
 * in two colours, each with its value printed. */
int png_bars(const char *path, const char *title, const char *const *labels, const double *values, size_t n,
             Error *err);

#endif
