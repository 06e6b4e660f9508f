/* bin/info --mixers: the mixer registry described, to people and to the
 * harnesses (harness/registry.py reads --json). For each registered mixer
 * its name, what it is in one line (Mixer.about) and its options (bin/train's
 * option, the config JSON's key, kind, bounds, default, help, and what the
 * harnesses make of it: OptionRow.arch_key, size_knob, family); and at a
 * model (bin/train's model options, or a checkpoint's, a run folder's or a
 * config JSON's) its tensors, parameters, state floats per sequence
 * (Mixer.state_size) and training FLOPs per token (Mixer.flops and its
 * weight matrices, as model_flops counts them), as if every layer had it;
 * then the model's own layers the same way. */
#ifndef LM_INFO_MIXERS_H
#define LM_INFO_MIXERS_H

#include <stddef.h>

#include "lm/options.h"
#include "model_options.h"
#include "run_options.h"

/* The rows info_mixers_rows adds to bin/info's table, at most. */
#define INFO_MIXERS_ROWS (8 + RUN_MAX_MIXER_TEXTS + 64)

typedef struct InfoMixers {
    int wanted;     /* --mixers */
    size_t vocab;   /* --vocab-size */
    RunOptions o;   /* the model options, into o.cfg as bin/train takes them */
    char mixer_help[MODEL_MIXER_HELP];
    size_t first, n; /* the model's rows: at [first, first + n) of bin/info's table */
} InfoMixers;

/* --mixers, then the model options (bin/train's: model_options.h; and
 * --vocab-size), into rows, which will be bin/info's table from index
 * first; returns how many (at most INFO_MIXERS_ROWS). */
size_t info_mixers_rows(InfoMixers *im, OptionRow *rows, size_t first);

/* The first of the model's options given on the command line (its name),
 * or NULL: they describe --mixers' model, and nothing else reads them. */
const char *info_mixers_given(const InfoMixers *im, const OptionRow *opts);

/* bin/info --mixers after parsing opts (bin/info's table): the model from
 * source (a checkpoint, a run folder, "-": a config JSON on standard
 * input) or, NULL, from the model options; printed as text or one JSON
 * object. Returns the exit status (one line on stderr as prog when it
 * fails). */
int info_mixers_print(InfoMixers *im, const OptionRow *opts, const char *prog, const char *source, int json);

#endif
