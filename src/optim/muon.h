/* Muon (muon.c), for the registry in optim.c. */
#ifndef OPTIM_MUON_H
#define OPTIM_MUON_H

#include "lm/optim.h"

extern const Optimizer muon_optimizer;

#endif
