/* The plan of a block, shared by the passes through the model: forward and
 * backward (block.c) and the sampling step and the prefill (decode.c). Not
 * part of the public API: lm/model.h is. */
#ifndef LM_MODEL_BLOCK_H
#define LM_MODEL_BLOCK_H

#include <stddef.h>

#include "lm/model.h"

/* A LayerNorm (or RMSNorm) in a pass: what it reads and writes, and its gain
 * and bias as offsets into params (and grads); RMSNorm has no bias and leaves
 * mean unwritten. */
typedef struct LnSlot {
    const float *in;
    float *out, *mean, *rstd;
    size_t w, b;
} LnSlot;

/* One residual branch of a block, the mixer's or the MLP's, with its own
 * LayerNorm (LN1, LN2):
 *   pre-norm   in = LN(h),  sum = h + dropout(branch(in)), the next h
 *   post-norm  in = h,      sum = h + dropout(branch(in)), the next h = LN(sum)
 * Forward fuses each sum with the LayerNorm that reads it (`next`): post-norm
 * the branch's own; pre-norm the following branch's (after the mixer the
 * MLP's LN2, after the MLP the next layer's LN1, or LN_f after the last). */
typedef struct Branch {
    const float *in, *resid; /* the branch's input; h, the stream it adds to */
    float *out, *mask;       /* its output, dropout applied in place; the dropout mask */
    float *sum;              /* resid + out */
    LnSlot ln, next;         /* its own LayerNorm; the one that reads sum */
    size_t site;             /* its dropout site: 2l the mixer's, 2l + 1 the MLP's */
} Branch;

typedef struct BlockPlan {
    Branch mix, mlp;
} BlockPlan;

/* How a block's mixer runs: over B sequences of T with its activations in
 * acts, or (state not NULL) one sampling position t of B sequences (T = 1),
 * sequence b's state at state + b * stride. */
typedef struct MixerPass {
    size_t B, T;
    float *acts, *state;
    size_t t, stride;
} MixerPass;

/* What every mixer call of m is handed besides its spec. */
MixerRuntime block_runtime(const Model *m);
/* What the embedding adds per position: NULL with rope, which adds nothing. */
const float *block_positions(const Model *m);
/* Layer l's block over the buffers L, the stream going on into next: the
 * next layer's buffers, or after the last layer the final ones (resid the
 * stream out, ln1 LN_f's). A sampling step passes its one set of buffers
 * as both. */
BlockPlan block_plan(const Model *m, size_t l, LayerActs *L, LayerActs *next);
/* LN_f, which post-norm applies after the last block (pre-norm's is the last sum's `next`). */
LnSlot block_final_ln(const Model *m, const LayerActs *fin);
/* The LayerNorm (or RMSNorm) s over N rows. */
void block_ln_forward(const Model *m, const LnSlot *s, size_t N);
/* Layer l's block, forward, as bp plans it (fc and act from L). */
void block_forward(const Model *m, size_t l, const BlockPlan *bp, const LayerActs *L, const MixerPass *mp,
                   const MixerRuntime *rt, int dropout, Profile *pr);

#endif
