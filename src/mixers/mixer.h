/* The token-mixing layer of a block, as an interface.
 *
 * A mixer maps x (B, T, C), the LN1-normalised residual stream, to
 * out (B, T, C), causally: out at position t depends on x at positions <= t.
 * It owns a contiguous run of parameters (its tensors, in order) and an
 * activation region of act_size floats that it uses for whatever forward must
 * keep for backward and for backward's own scratch.
 *
 * Adding a mixer: write src/<name>.c (and include/<name>.h) exporting a
 * `const Mixer`, and list it in the registry in src/mixers/mixer.c, the one place
 * that names the implementations. No other layer changes. */
#ifndef LM_MIXER_H
#define LM_MIXER_H

#include <stddef.h>

#include "runtime/error.h"
#include "model/config.h"

typedef enum { INIT_NORMAL, INIT_RESIDUAL, INIT_ZERO, INIT_ONE } InitKind;

#define MIXER_MAX_TENSORS 16
#define TENSOR_NAME_MAX 96

typedef struct TensorSpec {
    char name[TENSOR_NAME_MAX];
    size_t rows;
    size_t cols; /* 0 for a vector */
    InitKind init;
} TensorSpec;

typedef struct Mixer {
    const char *name;
    /* Rejects configurations this mixer cannot run. */
    int (*validate)(const ModelConfig *cfg, Error *err);
    /* Fills `out` with the layer's tensors (names relative to "h.{l}.") and
     * returns how many; their sizes add up to the parameter count. */
    size_t (*tensors)(const ModelConfig *cfg, TensorSpec *out);
    size_t (*act_size)(const ModelConfig *cfg, size_t B, size_t T);
    void (*forward)(const ModelConfig *cfg, const float *params, float *acts,
                    float *out, const float *in, size_t B, size_t T);
    /* Writes din, accumulates into dparams; acts is what forward left. */
    void (*backward)(const ModelConfig *cfg, const float *params, float *dparams, float *acts,
                     const float *in, const float *dout, float *din, size_t B, size_t T);
    /* Incremental decoding for sampling: state_size floats of per-sequence
     * state; step consumes x at position t (all earlier positions already
     * stepped) and writes out at t, equal to what forward would give. */
    size_t (*state_size)(const ModelConfig *cfg);
    void (*step)(const ModelConfig *cfg, const float *params, float *state,
                 const float *in_t, float *out_t, size_t t);
} Mixer;

const Mixer *mixer_find(const char *name);
/* "attention, grassmann" for messages. */
const char *mixer_names(void);
size_t mixer_param_count(const Mixer *mx, const ModelConfig *cfg);

#endif
