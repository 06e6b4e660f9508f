/* The mixer registry: the one place that names the implementations. */
#include "lm/mixer.h"

#include <stddef.h>

#include "mixers/attention.h"
#include "mixers/deltanet.h"
#include "mixers/gla.h"
#include "mixers/grassmann.h"
#include "runtime/registry.h"

_Static_assert(offsetof(Mixer, name) == 0, "a registry entry starts with its name");

static const void *const registry[] = {&attention_mixer, &grassmann_mixer, &gla_mixer, &deltanet_mixer};
#define N_MIXERS (sizeof registry / sizeof registry[0])
_Static_assert(N_MIXERS <= MAX_MIXERS, "a settings block in the config for every mixer");

const Mixer *mixer_find(const char *name) { return registry_find(registry, N_MIXERS, name); }

size_t mixer_count(void) { return N_MIXERS; }

const Mixer *mixer_at(size_t i) { return i < N_MIXERS ? registry[i] : NULL; }

size_t mixer_index(const Mixer *mx) { return registry_index(registry, N_MIXERS, mx); }

const char *mixer_names(void) {
    static char names[256];
    return registry_names(registry, N_MIXERS, names, sizeof names);
}
