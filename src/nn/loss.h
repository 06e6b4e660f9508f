/* Softmax cross-entropy over the logits of the LM head, and the logits' soft cap.
 *   logits (N, V); targets (N) int32; losses (N) = -log softmax(logits)[target].
 * No (N, V) array of probabilities is kept: the forward needs only each row's
 * log-sum-exp, and the backward recomputes the softmax of the row it writes,
 * in place over the logits if asked (at GPT-2's 50,257 tokens each (N, V)
 * array is 200 KB per position).
 * A target of LOSS_IGNORE (any negative id) is not a prediction to learn (a
 * training loss mask, lm/loss_mask.h): its loss is 0 and its row of
 * dlogits 0, so it contributes nothing to the gradient. */
#ifndef LM_LOSS_H
#define LM_LOSS_H

#include <stddef.h>
#include <stdint.h>

#define LOSS_IGNORE (-1)

void crossentropy_forward(float *losses, const float *logits, const int32_t *targets, size_t N, size_t V);
/* dlogits = (softmax(logits) - onehot(target)) * dloss, overwritten (dloss: d mean-loss / d loss_n); 0 for
 * ignored targets. dlogits may be logits itself. */
void crossentropy_backward(float *dlogits, const float *logits, const int32_t *targets, float dloss, size_t N,
                           size_t V);
/* Logit soft-capping (Gemma 2; the modern recipe's): x = cap tanh(x / cap) in
 * place over n logits, so that none exceeds cap in size; tanh is GELU's
 * vectorised one (lm/ops.h's fast_tanhf, within 2e-7 of tanh), since libm's
 * scalar tanhf had been a third of a modern-recipe step over 8,192 tokens. */
void softcap_forward(float *x, size_t n, float cap);
/* crossentropy_backward through the cap as well, from the capped logits y:
 * dlogits = (softmax(y) - onehot(target)) * dloss * (1 - (y / cap)^2), the
 * gradient at the logits before the cap, in one pass per row, so it may
 * overwrite y (no copy of the capped logits is kept). */
void crossentropy_softcap_backward(float *dlogits, const float *capped, const int32_t *targets, float dloss,
                                   size_t N, size_t V, float cap);

/* How many targets are not ignored. */
size_t crossentropy_scored(const int32_t *targets, size_t N);

/* The head only where the loss is taken: under a loss mask (a handful of
 * scored positions per sequence) the head's product, softmax and their
 * backward at the other positions add exactly nothing, and at vocabulary
 * 8,192 they are most of a small model's step.
 *   loss_rows: rows (K) the scored positions in increasing order and
 *   row_targets (K) their targets; returns K.
 *   gather_rows: dst (K, C) = src's rows (N, C) at rows.
 *   scatter_rows: dst (N, C) at rows = src (K, C); the other rows untouched.
 *   spread_in_place: x (N) from x[0..K) to x[rows[k]], 0 elsewhere (rows
 *   increasing, so rows[k] >= k and no value is overwritten before it moves). */
size_t loss_rows(int32_t *rows, int32_t *row_targets, const int32_t *targets, size_t N);
void gather_rows(float *dst, const float *src, const int32_t *rows, size_t K, size_t C);
void scatter_rows(float *dst, const float *src, const int32_t *rows, size_t K, size_t C);
void spread_in_place(float *x, const int32_t *rows, size_t K, size_t N);

#endif
