/* Where the decaying heads of a recurrent mixer start (gla's gamma,
 * deltanet's alpha): head h of H adds offset_h to its decay's logit,
 *   offset_h = logit(1 - 2^-(3 + 5 h / (H - 1)))
 * so that at the start, with the projection still near 0, the heads forget
 * at rates from 1/8 to 1/256 per token (RetNet's spread of decays) and the
 * projection learns to move them per token. */
#ifndef LM_MIXERS_HEAD_DECAY_H
#define LM_MIXERS_HEAD_DECAY_H

#include <math.h>
#include <stddef.h>

static inline float head_decay_offset(size_t h, size_t H) {
    double e = 3.0 + 5.0 * (double)h / (double)(H > 1 ? H - 1 : 1), keep = 1.0 - exp2(-e);
    return (float)log(keep / (1.0 - keep));
}

#endif
