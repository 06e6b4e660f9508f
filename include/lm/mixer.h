/* The token-mixing layer of a block, as an interface.
 *
 * A mixer maps x (B, T, C), the LN1-normalised residual stream, to
 * out (B, T, C), causally: out at position t depends on x at positions <= t.
 * It owns a contiguous run of parameters (its tensors, in order) and an
 * activation region of act_size floats that it uses for whatever forward must
 * keep for backward and for backward's own scratch.
 *
 * A mixer also owns its settings: a block of the model's config
 * (MixerSettings, a struct of the mixer's own inside), its rows of options
 * (OptionRow, lm/options.h: bin/train's option, bounds, default, help and
 * the config JSON's key), what each layer takes from them (layer_spec, into
 * MixerSpec.own), its part of bin/train's start-up line (describe), what
 * bin/inspect shows of a layer (the inspect hook's exhibits,
 * lm/inspection.h) and the parts bin/eval --ablate can leave out. The
 * config names each layer's mixer by its registry entry; nothing else in
 * the model or the programs knows one mixer from another.
 *
 * The registry is the one source of what the mixers are: bin/info --mixers
 * describes every entry (its about line, its options, and at a model its
 * tensors, parameters, state_size and FLOPs), to people and, as JSON, to the
 * harnesses, which keep no list or formula of their own.
 *
 * Adding a mixer: write src/mixers/<name>.c (and <name>.h) exporting a
 * `const Mixer`, list it in the registry in src/mixers/mixer.c, the one
 * place that names the implementations, and write its PyTorch reference,
 * harness/mixers/<name>.py. No other file changes: bin/train's --mixer takes
 * its name, its option rows join bin/train's options, its settings are
 * written to and read from the checkpoint's config by their keys, and the
 * harnesses take it from bin/info --mixers. Its inspection (bin/inspect), if
 * it has one, goes beside it in src/mixers/<name>_inspect.c. See
 * src/mixers/README.md. */
#ifndef LM_MIXER_H
#define LM_MIXER_H

#include <stddef.h>
#include <stdint.h>

#include "lm/inspection.h"
#include "lm/error.h"
#include "lm/options.h"

struct MatmulBf16;
struct DecodeWeights;

typedef enum { INIT_NORMAL, INIT_RESIDUAL, INIT_ZERO, INIT_ONE } InitKind;

#define MIXER_MAX_TENSORS 16
#define TENSOR_NAME_MAX 96
#define MAX_MIXERS 8               /* entries of the registry, at most */
#define MIXER_SETTINGS_BYTES 1024  /* a mixer's settings block, at most */
#define MIXER_LAYER_BYTES 512      /* a layer's own part of its spec, at most */
#define MIXER_MAX_LAYERS 64        /* the layers a settings block provides for (the config's MAX_LAYERS) */
#define MIXER_MAX_PARTS 32         /* parts a layer can leave out: the bits of MixerSpec.muted */

/* A mixer's settings for the whole model, as the mixer defines them: the
 * config keeps one block per registered mixer (ModelConfig.mixer_settings),
 * whether or not a layer uses it, so that a checkpoint's config holds every
 * mixer's settings as it always has. The mixer reads and writes its own
 * struct inside (its size at most MIXER_SETTINGS_BYTES: a _Static_assert
 * beside it). */
typedef union MixerSettings {
    unsigned char bytes[MIXER_SETTINGS_BYTES];
    size_t align_size;
    double align_double;
    void *align_pointer;
} MixerSettings;

/* One layer as its mixer sees it: the model's sizes and choices, and the
 * layer's own part of the mixer's settings, which the model fills from its
 * configuration (model_mixer_spec: own through the mixer's layer_spec). A
 * mixer knows nothing else of the model. */
typedef struct MixerSpec {
    size_t block_size, n_embd, n_head;
    int rope;              /* rotary positions: attention rotates q and k (src/nn/rope.h) */
    int qk_norm;           /* attention: q and k per head RMSNorm'd (no gain) before the scores */
    /* Bit k: the layer's k-th part (Mixer.parts names it) is left out, to
     * measure what it contributes (bin/eval --ablate). Forward and step
     * honour it; backward need not, so a model with muted parts is for
     * evaluation only. 0 in training. */
    uint32_t muted;
    /* The layer's own settings, a struct of the mixer's (layer_spec). */
    union {
        unsigned char bytes[MIXER_LAYER_BYTES];
        size_t align_size;
        double align_double;
    } own;
} MixerSpec;

/* What a mixer's passes read besides its spec and parameters: run-time
 * state that the model owns and hands to every call, never configuration. */
typedef struct MixerRuntime {
    const float *rope;             /* with rope: (block_size, hs/2, 2) cos, sin (src/nn/rope.h); else NULL */
    const struct MatmulBf16 *bf16; /* bf16 products' weights and scratch (lm/matmul.h); NULL: fp32 */
    /* The weights' converted copies the step's products read (lm/matmul.h's
     * matmul_step, bin/sample --weights); NULL: fp32. */
    const struct DecodeWeights *decode;
} MixerRuntime;

typedef struct TensorSpec {
    char name[TENSOR_NAME_MAX];
    size_t rows;
    size_t cols; /* 0 for a vector */
    InitKind init;
    int output;  /* the layer's output projection (a matrix): zero with the config's zero_init */
} TensorSpec;

/* ---- a layer's tensors, declared once ----------------------------------------
 *
 * A mixer declares its tensors once, in storage order, in its `layout`
 * member: a function of the layer's spec that names each tensor with
 * MIXER_TENSOR (llm.c's ParameterTensors, as one list):
 *   MIXER_TENSOR(L, GlaParams, qkv_w, "gla.qkv.weight", 3 * C, C, INIT_NORMAL, 0);
 * the mixer's own struct of pointers and its field (a `const float *`)
 * that points at the tensor, its name, rows, cols (0: a vector), its
 * initialisation and whether it is the layer's output projection
 * (TensorSpec.output). From that one declaration mixer_tensors lists the
 * tensors (the model's layout, bin/info --mixers) and mixer_params points
 * the struct's fields into a layer's parameters, or its gradients: no
 * mixer writes an offset. */
typedef struct MixerLayout MixerLayout; /* the walk (src/mixers/layout.c): only passed on */
typedef void (*MixerLayoutFn)(const MixerSpec *spec, MixerLayout *L);

/* One tensor of the declaration: its field at byte `field` of the struct of pointers. */
void mixer_layout_add(MixerLayout *L, size_t field, const char *name, size_t rows, size_t cols, InitKind init,
                      int output);
#define MIXER_TENSOR(L, Params, field, name, rows, cols, init, output)                                              \
    do {                                                                                                           \
        _Static_assert(_Generic(((Params *)0)->field, const float *: 1, default: 0), #field " is a const float *"); \
        mixer_layout_add((L), offsetof(Params, field), (name), (rows), (cols), (init), (output));                  \
    } while (0)

/* The fields of *ptrs (a struct of `size` bytes, all `const float *`)
 * pointed into params as layout declares the tensors: each at its tensor's
 * first float; a field it does not declare is NULL. */
void mixer_params(MixerLayoutFn layout, const MixerSpec *spec, const float *params, void *ptrs, size_t size);

/* What a mixer's lower-precision paths may cost, which the contract suite
 * (tests/unit/mixers/test_mixers.c, make test-mixers) holds it to on its test layer
 * (the suite's head comment: sizes, weights and inputs). Each is the worst
 * the suite measured there with a margin, the measurements stated in a
 * comment beside the mixer's entry; a bound left 0 fails the suite, whose
 * VERBOSE=1 output prints what it measures. */
typedef struct MixerBounds {
    /* step over weights converted for decoding (bin/sample --weights bf16,
     * int8) against fp32: the largest |out - out32| / (1 + |out32|). */
    double decode_bf16, decode_int8;
    /* Training products in bf16 (--precision bf16) against fp32:
     * ||y - y32||_2 / ||y32||_2 of forward's out, and of backward's din
     * and each tensor's gradient. */
    double train_bf16_forward, train_bf16_backward;
} MixerBounds;

/* What the inspect hook computes: everything, or only the maps (many
 * sequences, for induction scores: nothing else is read, so nothing else
 * need be paid for). */
typedef enum { MIXER_INSPECT_ALL, MIXER_INSPECT_MAPS } MixerInspectWhat;

typedef struct Mixer {
    const char *name;
    /* What it is, in one line (bin/info --mixers): "causal multi-head softmax attention". */
    const char *about;
    /* Its settings (none: NULL, 0): the rows, in the order of bin/train's
     * --help and of the config JSON. Each is a number (OPT_SIZE, OPT_FLOAT)
     * at `offset` in the mixer's settings struct, with lo, hi and def, or
     * text that the mixer parses itself (OPT_TEXT: def_text and the hooks
     * set, get, to_json, from_json); with its json_key, and omit_default,
     * arch_key, size_knob and family where they apply (lm/options.h). */
    const OptionRow *options;
    size_t n_options;
    /* Fills spec->own with layer l's own settings from the mixer's
     * settings block (NULL: nothing of its own). */
    void (*layer_spec)(const void *settings, size_t l, MixerSpec *spec);
    /* Optional: its part of bin/train's start-up line, when a layer has this
     * mixer ("grassmann r 32, windows 1,2,4"), into buf. */
    void (*describe)(const void *settings, size_t n_layer, char *buf, size_t len);
    /* Optional (NULL: nothing to leave out): names the layer's parts that
     * bin/eval --ablate can leave out ("head0", "offset4"), part k being
     * bit k of MixerSpec.muted; writes at most MIXER_MAX_PARTS names and
     * returns how many. */
    size_t (*parts)(const MixerSpec *spec, char (*names)[MIXER_PART_NAME]);
    /* Rejects configurations this mixer cannot run. */
    int (*validate)(const MixerSpec *spec, Error *err);
    /* Declares the layer's tensors, in storage order (names relative to
     * "h.{l}."; MIXER_TENSOR above): their sizes add up to its parameter
     * count, and the mixer finds them with mixer_params. */
    MixerLayoutFn layout;
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
    /* Optional (NULL: all of state_size): the floats of that state that carry
     * the sequence's past as the mixer's maths counts them (a key-value
     * cache's 2 T C, a recurrence's matrix, the last reduced vectors), not
     * the step's scratch or its storage's padding: what comparisons of
     * recurrent state hold equal (Zoology's state axis; bin/info --mixers). */
    size_t (*memory_size)(const MixerSpec *spec);
    void (*step)(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *state,
                 const float *in_t, float *out_t, size_t t);
    /* Optional (NULL: the model calls step for each sequence): step for n
     * sequences at once, all at position t, sequence i's state at state +
     * i * stride, its x and out at in + i * n_embd and out + i * n_embd;
     * each sequence's out the bits step gives it alone (the products over
     * the n rows read each weight once: lm/matmul.h's matmul_step_rows). */
    void (*step_batch)(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *state, size_t stride,
                       const float *in, float *out, size_t t, size_t n);
    /* Prefill: after forward over one sequence (B = 1) of T <= block_size
     * positions with its activations in acts, writes into state what steps
     * at positions 0 .. T-1 would have left there (KV cache, rolling window,
     * recurrent state), so that the next step is at position T. Its logits
     * then equal the incremental path's to rounding (the batched products
     * add in another order). */
    void (*fill_state)(const MixerSpec *spec, const float *acts, size_t T, float *state);
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
     * input as forward gets it, and adds to `out` what it shows, as
     * exhibits (lm/inspection.h's exhibit_add: maps, series, tables,
     * scalars), and the parts of its output at T - 1 for the attribution;
     * freed by layer_inspection_free, also after a failure. Maps must be
     * the ones forward uses (with rope positions q and k rotated as it
     * does). Recomputed from params and x: forward keeps no T x T map. With
     * MIXER_INSPECT_MAPS only the maps exhibits are read. Returns 0, or -1
     * with err set (out of memory). */
    int (*inspect)(const MixerSpec *spec, const MixerRuntime *rt, const float *params, const float *x, size_t T,
                   MixerInspectWhat what, LayerInspection *out, Error *err);
    /* Its lower-precision paths' bounds (MixerBounds). */
    MixerBounds bounds;
} Mixer;

const Mixer *mixer_find(const char *name);
/* The registry's entries in order: mixer_count() of them, mixer_at(i) the
 * i-th; mixer_index is mx's place (its settings block in the config). */
size_t mixer_count(void);
const Mixer *mixer_at(size_t i);
size_t mixer_index(const Mixer *mx);
/* The registered names, "attention, grassmann, ...", for messages. */
const char *mixer_names(void);
/* The layer's tensors as its layout declares them, into out (room for
 * MIXER_MAX_TENSORS: a layout that declares more fills that many); returns
 * how many it declares. */
size_t mixer_tensors(const Mixer *mx, const MixerSpec *spec, TensorSpec *out);
size_t mixer_param_count(const Mixer *mx, const MixerSpec *spec);

#endif
