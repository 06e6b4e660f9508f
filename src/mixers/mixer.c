#include "mixers/mixer.h"

#include "mixers/attention.h"
#include "mixers/grassmann.h"

#include <string.h>

static const Mixer *const mixer_registry[] = {&attention_mixer, &grassmann_mixer};
#define N_MIXERS (sizeof mixer_registry / sizeof mixer_registry[0])

const Mixer *mixer_find(const char *name) {
    for (size_t i = 0; i < N_MIXERS; i++)
        if (strcmp(mixer_registry[i]->name, name) == 0) return mixer_registry[i];
    return NULL;
}

const char *mixer_names(void) {
    static char names[256];
    if (!names[0])
        for (size_t i = 0; i < N_MIXERS; i++) {
            if (i) strcat(names, ", ");
            strcat(names, mixer_registry[i]->name);
        }
    return names;
}

size_t mixer_param_count(const Mixer *mx, const ModelConfig *cfg) {
    TensorSpec specs[MIXER_MAX_TENSORS];
    size_t n = mx->tensors(cfg, specs), total = 0;
    for (size_t i = 0; i < n; i++) total += specs[i].rows * (specs[i].cols ? specs[i].cols : 1);
    return total;
}
