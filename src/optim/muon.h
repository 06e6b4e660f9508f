/* Muon (muon.c), for the registry in optim.c. */
#ifndef OPTIM_MUON_H
#define OPTIM_MUON_H

#include "lm/optim.h"

extern const Optimizer muon_optimizer;

/* Muon's own settings (bin/train --muon-lr, --muon-momentum,
 * --muon-weight-decay): its peak learning rate, which the schedule scales as
 * it scales AdamW's; the momentum (Nesterov); the decoupled weight decay of
 * the matrices it updates, as a fraction of its learning rate. */
typedef struct MuonSettings {
    float lr, momentum, weight_decay;
} MuonSettings;

#endif
