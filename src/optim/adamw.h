/* AdamW's update of one span of parameters, for the optimizers that use it
 * (adamw.c on every tensor, muon.c on those Muon leaves). */
#ifndef OPTIM_ADAMW_H
#define OPTIM_ADAMW_H

#include <stddef.h>

#include "lm/optim.h"

extern const Optimizer adamw_optimizer;

/* In pieces shared among the threads of the enclosing parallel region (an
 * orphaned `omp for`: one region serves all tensors), each piece one call of
 * the instruction-set level's loop (nn/vec_loops.h); each element's result is
 * the same whichever thread computes it. */
void adamw_span(float *params, const float *grads, float grad_scale, float *m, float *v, size_t n, float lr,
                float weight_decay, const AdamWConfig *cfg, size_t t);

#endif
