/* The token-mixing layer of a block, as an interface.
 *
 * A mixer maps x (B, T, C), the LN1-normalised residual stream, to
 * out (B, T, C), causally: out at position t depends on x at positions <= t.
 * It owns a contiguous run of parameters (its tensors, in order) and an
 * activation region of act_size floats that it uses for whatever forward must
 * keep for backward and for backward's own scratch.
 *
 * Adding a mixer: write src/mixers/<name>.c (and <name>.h) exporting a
 * `const Mixer`, and list it in the registry in src/mixers/mixer.c, the one place
 * that names the implementations. No other layer changes. Its inspection
 * (bin/inspect), if it has one, goes beside it in src/mixers/<name>_inspect.c. */
#ifndef LM_MIXER_H
#define LM_MIXER_H

#include <stddef.h>
#include <stdint.h>

#include "lm/inspection.h"
#include "lm/error.h"

struct MatmulBf16;

typedef enum { INIT_NORMAL, INIT_RESIDUAL, INIT_ZERO, INIT_ONE } InitKind;

#define MIXER_MAX_TENSORS 16
#define TENSOR_NAME_MAX 96
#define MIXER_MAX_WINDOWS 32

/* One layer as its mixer sees it: the model's sizes and the layer's own
 * choices, which the model fills from its configuration (model_mixer_spec).
 * A mixer knows nothing else of the model. */
typedef struct MixerSpec {
    size_t block_size, n_embd, n_head;
    int rope;              /* rotary positions: attention rotates q and k (src/nn/rope.h) */
    int qk_norm;           /* attention: q and k per head RMSNorm'd (no gain) before the scores */
    size_t grassmann_rank; /* r */
    size_t n_windows;      /* the layer's own Grassmann window offsets */
    size_t windows[MIXER_MAX_WINDOWS];
    /* Bit k: windows[k]'s term is left out of the Grassmann mean (its share
     * of 1/count stays), to measure what that offset contributes (bin/eval
     * --ablate-offset). Forward and step honour it; backward does not, so
     * a model with muted offsets is for evaluation only. 0 in training. */
    uint32_t muted_windows;
} MixerSpec;

/* What a mixer's passes read besides its spec and parameters: run-time
 * state that the model owns and hands to every call, never configuration. */
typedef struct MixerRuntime {
    const float *rope;             /* with rope: (block_size, hs/2, 2) cos, sin (src/nn/rope.h); else NULL */
    const struct MatmulBf16 *bf16; /* bf16 products' weights and scratch (lm/matmul.h); NULL: fp32 */
} MixerRuntime;

typedef struct TensorSpec {
    char name[TENSOR_NAME_MAX];
    size_t rows;
    size_t cols; /* 0 for a vector */
    InitKind init;
    int output;  /* the layer's output projection (a matrix): zero with the config's zero_init */
} TensorSpec;

/* What the inspect hook computes: everything, or only the maps (many
 * sequences, for induction scores: nothing else is read, so nothing else
 * need be paid for). */
typedef enum { MIXER_INSPECT_ALL, MIXER_INSPECT_MAPS } MixerInspectWhat;

typedef struct Mixer {
    const char *name;
    /* Rejects configurations this mixer cannot run. */
    int (*validate)(const MixerSpec *spec, Error *err);
    /* Fills `out` with the layer's tensors (names relative to "h.{l}.") and
     * returns how many; their sizes add up to the parameter count. */
    size_t (*tensors)(const MixerSpec *spec, TensorSpec *out);
    size_t (*act_size)(const MixerSpec *spec, size_t B, size_t T);
    void (*forward)(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *acts,
                    float *out, const float *in, size_t B, size_t T);
    /* Writes din, accumulates into dparams; acts is what forward left. */
    void (*backward)(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *dparams,
                     float *acts, const float *in, const float *dout, float *din, size_t B, size_t T);
    /* Incremental decoding for sampling: state_size floats of per-sequence
     * state; step consumes x at position t (all earlier positions already
     * stepped) and writes out at t, equal to what forward would give. */
    size_t (*state_size)(const MixerSpec *spec);
    void (*step)(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *state,
                 const float *in_t, float *out_t, size_t t);
    /* Training FLOPs per token of the mixing itself at block size T, beyond
     * its weight matrices (which the model counts alike for every mixer:
     * model_flops), for model FLOP utilisation: forward and backward. */
    double (*flops)(const MixerSpec *spec, size_t T);
    /* Optional (NULL: none): 32-bit words of packed operands that forward and
     * backward keep in rt->bf16->packed under --precision bf16 (lm/matmul.h),
     * for a batch B x T; the layers take turns in one buffer that the model
     * sizes for the largest. */
    size_t (*bf16_words)(const MixerSpec *spec, size_t B, size_t T);
    /* Optional (NULL: the layer is inspected only through what the model sees
     * of every layer: logit lens, the attribution of its whole output, no
     * induction scores). Looks at the layer on one sequence x (T, C), its
     * input as forward gets it, and fills `out` (lm/inspection.h)
     * with what it measures, in arrays it allocates (freed by
     * layer_inspection_free, also after a failure); the maps must be the
     * ones forward uses (with rope positions q and k rotated as it does).
     * Recomputed from params and x: forward keeps no T x T map. Returns 0,
     * or -1 with err set (out of memory). */
    int (*inspect)(const MixerSpec *spec, const MixerRuntime *rt, const float *params, const float *x, size_t T,
                   MixerInspectWhat what, LayerInspection *out, Error *err);
} Mixer;

const Mixer *mixer_find(const char *name);
/* "attention, grassmann" for messages. */
const char *mixer_names(void);
size_t mixer_param_count(const Mixer *mx, const MixerSpec *spec);

#endif
