/* What mixers whose parts are their heads share for bin/eval --ablate
 * (Mixer.parts, MixerSpec.muted): the parts' names and the heads left out
 * of the output. Attention and gla use it. */
#ifndef LM_MIXERS_HEAD_PARTS_H
#define LM_MIXERS_HEAD_PARTS_H

#include <stddef.h>
#include <stdint.h>

#include "lm/mixer.h"

/* Mixer.parts for a layer of spec->n_head heads: "head0", "head1" ...
 * (the first MIXER_MAX_PARTS). */
size_t head_parts(const MixerSpec *spec, char (*names)[MIXER_PART_NAME]);
/* Zeroes head h's hs columns (h * hs onwards) of each of the n rows of y
 * (row stride ld) for every bit h of muted: the head adds nothing to what
 * the output projection reads. */
void mute_heads(float *y, size_t n, size_t ld, size_t hs, uint32_t muted);

#endif
