/* Held-out evaluation over a whole token file: every token after the first is
 * scored exactly once. Windows are block_size long; with stride S < block_size
 * each window after the first scores only its last S tokens, so every scored
 * token sees at least block_size - S tokens of context. */
#ifndef LM_EVALUATE_H
#define LM_EVALUATE_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

typedef struct EvalResult {
    double loss;      /* mean nats per scored token */
    size_t scored;    /* tokens scored */
    size_t windows;   /* forward windows run */
} EvalResult;

/* batch: windows per forward pass. progress (may be NULL) is called after each
 * batch with (windows done, windows total). */
int evaluate_tokens(Model *m, const uint32_t *tokens, size_t n, size_t stride, size_t batch,
                    void (*progress)(size_t done, size_t total), EvalResult *out, Error *err);

#endif
