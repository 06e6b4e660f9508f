/* Held-out evaluation over a whole token file: every token after the first is
 * scored exactly once (bin/eval, and bin/train's full validation split).
 * Windows are block_size long; with stride S < block_size each window after
 * the first scores only its last S tokens, so every scored token sees at
 * least block_size - S tokens of context. */
#ifndef LM_EVALUATE_H
#define LM_EVALUATE_H

#include <stddef.h>
#include <stdint.h>

#include "lm/error.h"
#include "lm/tokens.h"
#include "lm/model.h"
#include "lm/tokenizer.h"

typedef struct EvalResult {
    double loss;      /* mean nats per scored token */
    double accuracy;  /* fraction of scored tokens whose target is the logits' first argmax */
    size_t scored;    /* tokens scored */
    size_t windows;   /* forward windows run */
} EvalResult;

/* What else to measure, and where it goes (evaluate_tokens_detail). */
typedef struct EvalDetail {
    /* in */
    const uint8_t *mask; /* NULL: score every token; else only tokens i (as targets) with mask[i] != 0 */
    size_t recall_n;     /* > 0: split scored tokens by whether they complete an n-gram seen earlier in
                            their window (loss_breakdown.h) */
    int by_position;     /* fill pos_sum / pos_count */
    int by_steps;        /* score through the decode step (model_step_batch), a token at a time as
                            bin/sample decodes, rather than the forward: the perplexity of what it
                            samples from (with int8 weights, its integer products) */
    /* out */
    size_t positions;           /* entries of the two arrays: the window length used */
    double *pos_sum;            /* summed loss of the scored targets at each window position */
    size_t *pos_count;          /* how many; both freed by eval_detail_free */
    double recall_loss, other_loss; /* mean loss of each group (NAN when empty) */
    size_t recall_count, other_count;
} EvalDetail;

/* One evaluation forward of B rows of T tokens, inputs and targets (B, T),
 * a negative target not scored: the loss of each scored position in
 * m->run.losses[b*T + t], and hit[b*T + t] (B*T of them) 1 where the target is
 * the logits' first argmax, 0 elsewhere. bin/eval's every score goes
 * through it. Requires B, T within the model's activations. */
void evaluate_rows(Model *m, const int32_t *inputs, const int32_t *targets, size_t B, size_t T, uint8_t *hit);

/* batch: windows per forward pass. progress (may be NULL) is called after each
 * batch with (windows done, windows total). */
int evaluate_tokens(Model *m, const uint32_t *tokens, size_t n, size_t stride, size_t batch,
                    void (*progress)(size_t done, size_t total), EvalResult *out, Error *err);
/* The same, with a mask, loss by position and the recall split as `detail`
 * asks (NULL: none). A mask that leaves no token scored is an error. */
int evaluate_tokens_detail(Model *m, const uint32_t *tokens, size_t n, size_t stride, size_t batch,
                           void (*progress)(size_t done, size_t total), EvalDetail *detail, EvalResult *out,
                           Error *err);
void eval_detail_free(EvalDetail *d);

/* bin/eval's measurement of a whole token file: evaluate_tokens_detail over
 * its tokens, and, when no mask chose them, the same loss per byte and per
 * word of the text the scored tokens stand for (lm/text_units.h), which
 * compares models with different tokenizers. */
typedef struct EvalReport {
    EvalResult r;
    size_t stride;          /* the stride used: block_size unless a smaller one was asked */
    double perplexity;      /* exp(loss) */
    double bits;            /* bits per token (the tokenizer's unit) */
    size_t bytes, words;    /* of the scored text; 0 with a mask */
    double bits_per_byte;   /* NaN without bytes */
    double word_perplexity; /* NaN without words */
} EvalReport;

int evaluate_token_file(Model *m, const Tokenizer *tok, const TokenFile *tf, size_t stride, size_t batch,
                        void (*progress)(size_t done, size_t total), EvalDetail *detail, EvalReport *out, Error *err);

#endif
