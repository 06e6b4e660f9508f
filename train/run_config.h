/* A run's options as an experiment file (lm/options.h's format): what
 * bin/train --print-config prints, and a run folder's config.json. Both
 * come from bin/train's option table; for a resumed run, from the run it
 * continues: the model, and every option its checkpoint keeps, as the
 * checkpoint has them (the options given again win), so that the file
 * describes the run that trains, not the defaults. */
#ifndef LM_RUN_CONFIG_H
#define LM_RUN_CONFIG_H

#include <stddef.h>

#include "lm/error.h"
#include "lm/options.h"
#include "run_options.h"

/* The table's values (its rows point into o) made those of `run`, the
 * resumed run as run_open set it up (or as its checkpoint's header gives
 * it): the numbers its checkpoint keeps or its model fixes, its mixers,
 * positions, norms, precision and optimizer, each row so set marked as
 * given. The rows of this invocation alone (--threads, --stop-at, ...)
 * stay as they are. */
void run_config_take(OptionRow *opts, size_t n, RunOptions *o, const RunOptions *run);
/* --print-config: the options as an experiment file on stdout, but rows
 * named in skip (NULL-terminated); with --resume, the resumed run's (its
 * checkpoint's header read, on a job of `ranks`). Returns the exit status. */
int run_config_print(OptionRow *opts, size_t n, RunOptions *o, size_t ranks, const char *prog);
/* A run folder's config.json: o's options as an experiment file, less
 * what is this invocation's (--resume, --stop-at) or the folder's own
 * (--out, --log), so that bin/train --config DIR/config.json --run NEW
 * repeats the whole run; a resumed run's (run: as run_open set it up)
 * from its values, the rows of the invocation alone (--threads) kept from
 * the folder's file where it holds a value they take. A file there that is no experiment file is written
 * anew, with one line on stderr naming it. */
int run_config_write(OptionRow *opts, size_t n, RunOptions *o, const RunOptions *run, const char *prog, Error *err);

#endif
