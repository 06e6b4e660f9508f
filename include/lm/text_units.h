/* How much original text scored tokens stand for, so that losses of models
 * with different tokenizers can be compared: bytes (bits per byte) and
 * whitespace-separated words (word-level perplexity). */
#ifndef LM_TEXT_UNITS_H
#define LM_TEXT_UNITS_H

#include <stddef.h>
#include <stdint.h>

#include "lm/table.h"

typedef struct TextUnits {
    size_t bytes; /* of the scored tokens' text; special tokens count 0 */
    size_t words; /* whitespace-separated words that start in the scored text */
} TextUnits;

/* Over ids[1..n): every token but the first, which nothing predicts. */
TextUnits text_units_scored(const Tokenizer *tok, const uint32_t *ids, size_t n);

#endif
