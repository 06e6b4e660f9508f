/* The recipes of bin/train --recipe (see recipe.h and docs/programs.md). */
#include "recipe.h"

#include <stdlib.h>
#include <string.h>

#include "lm/options.h"

/* Each recipe's options, as the command line spells them. GPT-2's are the
 * defaults, spelled out so that --recipe gpt2 also undoes an earlier
 * --recipe's; modern is the small-model speedruns' (modded-nanogpt,
 * nanochat) recipe: rotary positions, RMSNorm, ReLU^2, qk-norm, an untied
 * head, zero-initialised output maps, logits capped at 15, and Muon on the
 * hidden matrices (their sample efficiency is much of it). A new recipe, or
 * a new option of one, is one more row here. */
typedef struct Recipe {
    const char *name;
    const char *const *args; /* NULL-terminated */
} Recipe;

static const char *const GPT2[] = {"--pos", "learned", "--norm-type", "layernorm", "--mlp-act", "gelu",
                                   "--qk-norm", "0", "--untied-head", "0", "--zero-init", "0",
                                   "--logit-softcap", "0", "--optimizer", "adamw", NULL};
static const char *const MODERN[] = {"--pos", "rope", "--norm-type", "rmsnorm", "--mlp-act", "relu2",
                                     "--qk-norm", "1", "--untied-head", "1", "--zero-init", "1",
                                     "--logit-softcap", "15", "--optimizer", "muon", NULL};
static const Recipe RECIPES[] = {{"gpt2", GPT2}, {"modern", MODERN}};
enum { N_RECIPES = sizeof RECIPES / sizeof RECIPES[0] };

const char *recipe_names(void) { return "gpt2 | modern"; }

int recipe_expand(int argc, char **argv, int *out_argc, char ***out_argv, Error *err) {
    *out_argc = argc;
    *out_argv = argv;
    int missing;
    const char *name = cli_arg_value(argc, argv, "recipe", &missing);
    if (!name) return missing ? err_set(err, "option '--recipe' needs a value (see --help)") : 0;
    const Recipe *r = NULL;
    for (size_t i = 0; i < N_RECIPES && !r; i++)
        if (strcmp(RECIPES[i].name, name) == 0) r = &RECIPES[i];
    if (!r) return err_set(err, "--recipe must be %s (got '%s')", recipe_names(), name);
    int n = 0;
    while (r->args[n]) n++;
    char **v = malloc((size_t)(argc + n + 1) * sizeof *v);
    if (!v) return err_set(err, "out of memory");
    v[0] = argv[0];
    for (int i = 0; i < n; i++) v[1 + i] = (char *)r->args[i];
    for (int i = 1; i <= argc; i++) v[n + i] = argv[i]; /* and argv's NULL */
    *out_argc = argc + n;
    *out_argv = v;
    return 0;
}
