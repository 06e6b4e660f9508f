/* Softmax cross-entropy over the logits of the tied LM head.
 *   logits, probs (N, V); targets (N) int32; losses (N) = -log probs[target]. */
#ifndef LM_LOSS_H
#define LM_LOSS_H

#include <stddef.h>
#include <stdint.h>

void crossentropy_forward(float *losses, float *probs, const float *logits,
                          const int32_t *targets, size_t N, size_t V);
/* dlogits = (probs - onehot(target)) * dloss, overwritten (dloss: d mean-loss / d loss_n). */
void crossentropy_backward(float *dlogits, const float *probs, const int32_t *targets,
                           float dloss, size_t N, size_t V);

#endif
