/* The training loss mask: which targets bin/train learns from.
 *
 * A data directory may hold train.mask (and val.mask) beside its token files,
 * in the mask format of token_mask.h. When present, only the marked targets
 * are in the training loss (and in the validation estimate): the others are
 * given as LOSS_IGNORE (src/nn/loss.h), so they add nothing to the loss or
 * the gradient, and the loss is the mean over the marked ones. The synthetic
 * probes use it to train on the answers only, as Zoology trains MQAR: the
 * random keys and values around them cannot be predicted, and learning them
 * is only noise. Without mask files training is unchanged. */
#ifndef LM_LOSS_MASK_H
#define LM_LOSS_MASK_H

#include <stddef.h>
#include <stdint.h>

#include "lm/token_mask.h"
#include "lm/tokens.h"
#include "lm/error.h"
#include "lm/rng.h"

typedef struct LossMasks {
    TokenMask train, val; /* .marked NULL where the directory has no such file */
} LossMasks;

/* Reads DIR/train.mask and DIR/val.mask where they exist; each must cover
 * exactly its token file's tokens. */
int loss_masks_open(LossMasks *lm, const char *dir, const Dataset *ds, Error *err);
void loss_masks_free(LossMasks *lm);

#endif
