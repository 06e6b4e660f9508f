/* Masked multi-head self-attention, one implementation of the Mixer interface.
 *   in, out (B, T, C); H heads of size hs = C / H.
 *   params, in order: qkv.weight (3C, C) rows q then k then v, head h the h-th
 *   block of hs rows in each; qkv.bias (3C); proj.weight (C, C); proj.bias (C).
 *   acts: qkv (B,T,3C), att (B,H,T,T) softmax rows (zero above the diagonal),
 *   y (B,T,C) heads concatenated; backward scratch of the same three sizes. */
#ifndef LM_ATTENTION_H
#define LM_ATTENTION_H

#include "mixer.h"

extern const Mixer attention_mixer;

#endif
