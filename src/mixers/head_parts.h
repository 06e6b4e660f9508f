/* What mixers whose parts are their heads share for bin/eval --ablate
 * (Mixer.parts, MixerSpec.muted): the parts' names and the heads left out
 * of the output; and for bin/inspect's attribution, each head's share of
 * the output. Attention and gla use it. */
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
/* The attribution's parts (LayerInspection.part_name, part_out) of a layer
 * whose output is y proj_w^T + proj_b, y (C) its H heads' outputs side by
 * side at the last position: head h's share, proj_w's columns of the head
 * times y_h, named "H<h>", then the bias, named bias_name ("gla bias").
 * Allocates them; returns 0, or -1 with err set (out of memory). */
int head_shares(LayerInspection *L, const float *proj_w, const float *proj_b, const float *y, size_t C, size_t H,
                const char *bias_name, Error *err);

#endif
