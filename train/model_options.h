/* bin/train's model options as rows of a command-line table (lm/options.h),
 * shared by bin/train and bin/info --mixers, which describes the mixers at
 * a model given as bin/train would take it: the text options (--mixer,
 * --pos, --norm, --norm-type, --mlp-act, each mixer's text options), the
 * numeric ones (run_option_rows, train/run_options.h) and the model's
 * config built from them. */
#ifndef LM_MODEL_OPTIONS_H
#define LM_MODEL_OPTIONS_H

#include <stddef.h>

#include "lm/error.h"
#include "lm/options.h"
#include "run_options.h"

#define MODEL_MIXER_HELP 256 /* room for --mixer's help, which lists the registry */

/* --mixer, --pos, --norm, --norm-type and --mlp-act into rows (room for 5),
 * their values into o; --mixer's help is written into help (at least
 * MODEL_MIXER_HELP bytes, kept as long as the rows). Returns how many. */
size_t model_text_rows(RunOptions *o, OptionRow *rows, char *help);
/* Each registered mixer's text options (--grassmann-windows, run_mixer_texts)
 * into rows (room for RUN_MAX_MIXER_TEXTS), their values into o->mixer_text. */
size_t model_mixer_text_rows(RunOptions *o, OptionRow *rows);

/* o->cfg from the model options given (o->cfg.vocab_size set by the
 * caller): the positions, norms and activation, the layers' mixers, the
 * mixers' text options, then every check the model makes of a config
 * (model_check_config). -1 with err on the first that fails. */
int model_config_from_options(RunOptions *o, Error *err);

#endif
