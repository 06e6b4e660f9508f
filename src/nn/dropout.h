/* Inverted dropout on a residual branch.
 *   mask (n): 0 with probability p, else 1/(1-p); drawn from rng_hash(key, i),
 *   so a (seed, step, layer, site) key gives the same mask on any thread count
 *   and after a resume. */
#ifndef LM_DROPOUT_H
#define LM_DROPOUT_H

#include <stddef.h>
#include <stdint.h>

void dropout_mask(float *mask, size_t n, float p, uint64_t key);
void dropout_forward(float *x, const float *mask, size_t n);                 /* x *= mask */
void dropout_backward(float *din, const float *dout, const float *mask, size_t n); /* din += dout * mask */

#endif
