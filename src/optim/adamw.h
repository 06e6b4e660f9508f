/* AdamW's update of one span of parameters, for the optimizers that use it
 * (adamw.c on every tensor, muon.c on those Muon leaves). */
#ifndef OPTIM_ADAMW_H
#define OPTIM_ADAMW_H

#include <stddef.h>

#include "lm/optim.h"

extern const Optimizer adamw_optimizer;
/* Its buffers' names, "m" and "v" (the first and second moment), which
 * Muon's state shares for the tensors it leaves to AdamW. */
extern const char *const adamw_state_names[2];

/* In pieces shared among the threads of the enclosing parallel region (an
 * orphaned `omp for`: one region serves all tensors), each piece one call of
 * the instruction-set level's loop (nn/vec_loops.h); each element's result is
 * the same whichever thread computes it. */
void adamw_span(float *params, const float *grads, float grad_scale, float *m, float *v, size_t n, float lr,
                float weight_decay, const AdamWConfig *cfg, size_t t);
/* adamw_span over tensor i of p, its moments s's buffers 0 and 1 of the
 * tensor, decaying it if it is a matrix: in the enclosing parallel region. */
void adamw_tensor(const ParamView *p, const OptimizerState *s, size_t i, const AdamWConfig *cfg, float lr, size_t t,
                  float grad_scale);

#endif
