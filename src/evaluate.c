#include "evaluate.h"

#include <stdlib.h>

/* Window w covers inputs [start, start+T) and scores targets whose index
 * (into tokens) lies in (prev_end, end]. */
typedef struct Window {
    size_t start, first_scored; /* first_scored: position inside the window */
} Window;

int evaluate_tokens(Model *m, const uint32_t *tokens, size_t n, size_t stride, size_t batch,
                    void (*progress)(size_t, size_t), EvalResult *out, Error *err) {
    size_t T = m->cfg.block_size;
    if (n < 2) return err_set(err, "need at least 2 tokens to evaluate (got %zu)", n);
    if (T > n - 1) T = n - 1;
    if (stride == 0 || stride > T) stride = T;
    for (size_t i = 0; i < n; i++)
        if (tokens[i] >= m->cfg.vocab_size)
            return err_set(err, "token %zu has id %u, outside the model's vocabulary of %zu", i, tokens[i],
                           m->cfg.vocab_size);
    /* Plan the windows: ends at T, T+S, T+2S, ... and finally n-1. */
    size_t nw = 1 + (n - 1 - T + stride - 1) / stride;
    Window *wins = calloc(nw, sizeof *wins);
    int32_t *in = calloc(batch * T, sizeof(int32_t)), *tg = calloc(batch * T, sizeof(int32_t));
    int rc = -1;
    if (!wins || !in || !tg) {
        err_set(err, "out of memory planning %zu windows", nw);
        goto done;
    }
    size_t scored_to = 0; /* targets 1..scored_to are done */
    for (size_t w = 0; w < nw; w++) {
        size_t end = w == 0 ? T : (scored_to + stride < n - 1 ? scored_to + stride : n - 1);
        wins[w].start = end - T;
        wins[w].first_scored = scored_to - wins[w].start; /* target index start+1+j > scored_to */
        scored_to = end;
    }
    if (model_alloc_acts(m, batch, T, err)) goto done;
    double total = 0.0;
    size_t scored = 0;
    for (size_t w0 = 0; w0 < nw; w0 += batch) {
        size_t B = nw - w0 < batch ? nw - w0 : batch;
        for (size_t b = 0; b < B; b++)
            for (size_t t = 0; t < T; t++) {
                in[b * T + t] = (int32_t)tokens[wins[w0 + b].start + t];
                tg[b * T + t] = (int32_t)tokens[wins[w0 + b].start + t + 1];
            }
        model_forward(m, in, tg, B, T, NULL);
        for (size_t b = 0; b < B; b++)
            for (size_t t = wins[w0 + b].first_scored; t < T; t++) {
                total += m->losses[b * T + t];
                scored++;
            }
        if (progress) progress(w0 + B, nw);
    }
    out->loss = total / (double)scored;
    out->scored = scored;
    out->windows = nw;
    rc = 0;
done:
    free(wins);
    free(in);
    free(tg);
    return rc;
}
