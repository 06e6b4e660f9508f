/* Held-out evaluation over a whole token file (see include/lm/evaluate.h). */
#include "lm/evaluate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm/loss_breakdown.h"
#include "lm/text_units.h"
#include "nn/loss.h"

/* The target of a position whose prediction is not scored: the context
 * before a window's first scored position, or a token the mask leaves out.
 * model_forward ignores negative targets, so the head runs at the scored
 * positions alone (with a stride of a quarter window, a quarter of them). */
enum { NOT_SCORED = -1 };

/* Window w covers inputs [start, start+T) and scores targets whose index
 * (into tokens) lies in (prev_end, end]. */
typedef struct Window {
    size_t start, first_scored; /* first_scored: position inside the window */
} Window;

static size_t argmax(const float *x, size_t n) {
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

void evaluate_rows(Model *m, const int32_t *inputs, const int32_t *targets, size_t B, size_t T, uint8_t *hit) {
    size_t V = m->cfg.vocab_size, row = 0; /* the head's rows are the scored positions', in order */
    model_forward(m, inputs, targets, B, T, NULL);
    for (size_t bt = 0; bt < B * T; bt++) {
        if (targets[bt] < 0) hit[bt] = 0;
        else hit[bt] = argmax(m->run.logits + row++ * V, V) == (size_t)targets[bt];
    }
}

/* evaluate_rows through the decode step: the B rows stepped together from
 * position 0 (state holds at least B sequences; the rest step on token 0
 * and are not read), each scored position's loss into losses[b*T + t] as
 * the forward's head takes it (crossentropy_forward of its logits), 0
 * elsewhere. */
static void rows_by_steps(const Model *m, ModelState *state, float *logits, int32_t *step_tokens, const int32_t *inputs,
                          const int32_t *targets, size_t B, size_t T, float *losses, uint8_t *hit) {
    size_t V = m->cfg.vocab_size;
    model_state_reset(state);
    memset(step_tokens, 0, state->n_seq * sizeof *step_tokens);
    for (size_t t = 0; t < T; t++) {
        for (size_t b = 0; b < B; b++) step_tokens[b] = inputs[b * T + t];
        model_step_batch(m, state, step_tokens, logits);
        for (size_t b = 0; b < B; b++) {
            size_t bt = b * T + t;
            losses[bt] = 0.0f, hit[bt] = 0;
            if (targets[bt] < 0) continue;
            crossentropy_forward(&losses[bt], logits + b * V, &targets[bt], 1, V);
            hit[bt] = argmax(logits + b * V, V) == (size_t)targets[bt];
        }
    }
}

int evaluate_tokens(Model *m, const uint32_t *tokens, size_t n, size_t stride, size_t batch,
                    void (*progress)(size_t, size_t), EvalResult *out, Error *err) {
    return evaluate_tokens_detail(m, tokens, n, stride, batch, progress, NULL, out, err);
}

int evaluate_tokens_detail(Model *m, const uint32_t *tokens, size_t n, size_t stride, size_t batch,
                           void (*progress)(size_t, size_t), EvalDetail *d, EvalResult *out, Error *err) {
    size_t T = m->cfg.block_size, V = m->cfg.vocab_size;
    if (n < 2) return err_set(err, "need at least 2 tokens to evaluate (got %zu)", n);
    if (T > n - 1) T = n - 1;
    if (stride == 0 || stride > T) stride = T;
    for (size_t i = 0; i < n; i++)
        if (tokens[i] >= V)
            return err_set(err, "token %zu has id %u, outside the model's vocabulary of %zu", i, tokens[i], V);
    const uint8_t *mask = d ? d->mask : NULL;
    size_t recall_n = d ? d->recall_n : 0;
    if (d) {
        d->positions = T;
        d->pos_sum = NULL;
        d->pos_count = NULL;
        d->recall_count = d->other_count = 0;
        d->recall_loss = d->other_loss = NAN;
    }
    /* Plan the windows: ends at T, T+S, T+2S, ... and finally n-1. */
    size_t nw = 1 + (n - 1 - T + stride - 1) / stride;
    Window *wins = calloc(nw, sizeof *wins);
    int32_t *in = calloc(batch * T, sizeof(int32_t)), *tg = calloc(batch * T, sizeof(int32_t));
    uint8_t *recall = recall_n ? calloc(batch * T, 1) : NULL, *hit = calloc(batch * T, 1);
    int by_steps = d && d->by_steps, rc = -1;
    ModelState state = {0};
    float *step_logits = NULL, *step_losses = NULL;
    int32_t *step_tokens = NULL;
    if (!wins || !in || !tg || !hit || (recall_n && !recall)) {
        err_set(err, "out of memory planning %zu windows", nw);
        goto done;
    }
    if (by_steps) {
        if (model_state_init_batch(m, &state, batch, err)) goto done;
        step_logits = malloc(batch * V * sizeof(float)), step_losses = malloc(batch * T * sizeof(float));
        step_tokens = malloc(batch * sizeof(int32_t));
        if (!step_logits || !step_losses || !step_tokens) {
            err_set(err, "out of memory for %zu sequences' steps", batch);
            goto done;
        }
    }
    if (d && d->by_position) {
        d->pos_sum = calloc(T, sizeof(double));
        d->pos_count = calloc(T, sizeof(size_t));
        if (!d->pos_sum || !d->pos_count) {
            err_set(err, "out of memory for %zu positions", T);
            goto done;
        }
    }
    size_t scored_to = 0; /* targets 1..scored_to are done */
    for (size_t w = 0; w < nw; w++) {
        size_t end = w == 0 ? T : (scored_to + stride < n - 1 ? scored_to + stride : n - 1);
        wins[w].start = end - T;
        wins[w].first_scored = scored_to - wins[w].start; /* target index start+1+j > scored_to */
        scored_to = end;
    }
    if (!by_steps && model_alloc_forward(m, batch, T, err)) goto done;
    double total = 0.0, recall_sum = 0.0, other_sum = 0.0;
    size_t scored = 0, correct = 0;
    for (size_t w0 = 0; w0 < nw; w0 += batch) {
        size_t B = nw - w0 < batch ? nw - w0 : batch;
        for (size_t b = 0; b < B; b++) {
            for (size_t t = 0; t < T; t++) {
                size_t i = wins[w0 + b].start + t;
                int scored = t >= wins[w0 + b].first_scored && (!mask || mask[i + 1]);
                in[b * T + t] = (int32_t)tokens[i];
                tg[b * T + t] = scored ? (int32_t)tokens[i + 1] : NOT_SCORED;
            }
            if (recall_n && recall_mark_window(tokens + wins[w0 + b].start, T, recall_n, recall + b * T, err))
                goto done;
        }
        if (by_steps) rows_by_steps(m, &state, step_logits, step_tokens, in, tg, B, T, step_losses, hit);
        else evaluate_rows(m, in, tg, B, T, hit);
        const float *losses = by_steps ? step_losses : m->run.losses;
        for (size_t b = 0; b < B; b++)
            for (size_t t = wins[w0 + b].first_scored; t < T; t++) {
                size_t bt = b * T + t;
                if (tg[bt] == NOT_SCORED) continue;
                double loss = losses[bt];
                total += loss;
                scored++;
                correct += hit[bt];
                if (d && d->by_position) {
                    d->pos_sum[t] += loss;
                    d->pos_count[t]++;
                }
                if (recall_n) {
                    if (recall[bt]) recall_sum += loss, d->recall_count++;
                    else other_sum += loss, d->other_count++;
                }
            }
        if (progress) progress(w0 + B, nw);
    }
    if (scored == 0) {
        err_set(err, "the mask marks none of the %zu tokens that are scored", n - 1);
        goto done;
    }
    out->loss = total / (double)scored;
    out->accuracy = (double)correct / (double)scored;
    out->scored = scored;
    out->windows = nw;
    if (recall_n) {
        if (d->recall_count) d->recall_loss = recall_sum / (double)d->recall_count;
        if (d->other_count) d->other_loss = other_sum / (double)d->other_count;
    }
    rc = 0;
done:
    if (rc && d) eval_detail_free(d);
    free(wins);
    free(in);
    free(tg);
    free(recall);
    free(hit);
    model_state_free(&state);
    free(step_logits), free(step_losses), free(step_tokens);
    return rc;
}

void eval_detail_free(EvalDetail *d) {
    free(d->pos_sum);
    free(d->pos_count);
    d->pos_sum = NULL;
    d->pos_count = NULL;
}

int evaluate_token_file(Model *m, const Tokenizer *tok, const TokenFile *tf, size_t stride, size_t batch,
                        void (*progress)(size_t done, size_t total), EvalDetail *detail, EvalReport *out, Error *err) {
    memset(out, 0, sizeof *out);
    uint32_t *ids = tokens_copy_u32(tf, 0, tf->n, err);
    if (!ids || evaluate_tokens_detail(m, ids, tf->n, stride, batch, progress, detail, &out->r, err)) {
        free(ids);
        return -1;
    }
    /* Tokenizer-independent: the nats of all scored tokens over the bytes
     * (and words) of the text they stand for, the bytes as the file recorded
     * them (what an unknown token replaced); a mask's tokens are not the text's. */
    TextUnits units = detail && detail->mask ? (TextUnits){0, 0} : text_units_scored(tok, ids, tf->n);
    if (!(detail && detail->mask)) units.bytes = tokens_text_bytes(tf, tok, 1, tf->n - 1);
    free(ids);
    double total_nats = out->r.loss * (double)out->r.scored;
    out->stride = stride && stride < m->cfg.block_size ? stride : m->cfg.block_size;
    out->perplexity = exp(out->r.loss);
    out->bits = out->r.loss / log(2.0);
    out->bytes = units.bytes;
    out->words = units.words;
    out->bits_per_byte = units.bytes ? total_nats / log(2.0) / (double)units.bytes : NAN;
    out->word_perplexity = units.words ? exp(total_nats / (double)units.words) : NAN;
    return 0;
}
