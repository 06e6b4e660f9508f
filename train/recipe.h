/* bin/train --recipe NAME: a named set of options, as if given on the
 * command line before the rest of it (so an option given there wins, and
 * with --resume or --init each must equal the checkpoint's, as any other). */
#ifndef LM_RECIPE_H
#define LM_RECIPE_H

#include "lm/error.h"

/* "gpt2 | modern" for --help and messages. */
const char *recipe_names(void);

/* argv with the named recipe's options inserted after argv[0] when argv
 * holds --recipe NAME (or --recipe=NAME); else argv itself. *out_argv is
 * malloc'd when it differs from argv (free it after parsing). -1 with err
 * set for an unknown name or a missing value. */
int recipe_expand(int argc, char **argv, int *out_argc, char ***out_argv, Error *err);

#endif
