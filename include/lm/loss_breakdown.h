/* Where the loss comes from: the Zoology split of a window's targets into
 * tokens recallable from context (they complete an n-gram already seen in the
 * window) and all others. */
#ifndef LM_LOSS_BREAKDOWN_H
#define LM_LOSS_BREAKDOWN_H

#include <stddef.h>
#include <stdint.h>

#include "lm/error.h"

/* win: T + 1 tokens, the window's inputs win[0..T) and its last target
 * win[T]. Sets recall[t] (t < T) to 1 when target t, the token win[t+1]
 * predicted from win[0..t], ends an n-gram win[t+2-n .. t+1] that occurs
 * whole earlier in win[0..t]; else 0 (always 0 for t + 2 < n). n >= 1. */
int recall_mark_window(const uint32_t *win, size_t T, size_t n, uint8_t *recall, Error *err);

#endif
