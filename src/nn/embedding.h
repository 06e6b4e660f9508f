/* Token embedding plus positional encoding.
 *   tokens (B, T) int32, wte (V, C), pos (T_max, C): learned wpe or the fixed
 *   sinusoidal table, or NULL for none (rope positions act inside attention).
 *   out (B, T, C) = wte[tokens[b,t]] + pos[t]. */
#ifndef LM_EMBEDDING_H
#define LM_EMBEDDING_H

#include <stddef.h>
#include <stdint.h>

void embedding_forward(float *out, const int32_t *tokens, const float *wte, const float *pos,
                       size_t B, size_t T, size_t C);
/* dwte += scatter of dout by token; dwpe (NULL for sinusoidal) += dout summed over B. */
void embedding_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens,
                        size_t B, size_t T, size_t C);
/* pe[t, 2i] = sin(t / 10000^(2i/C)), pe[t, 2i+1] = cos(t / 10000^(2i/C)). */
void sinusoidal_table(float *pe, size_t T, size_t C);

#endif
