/* The language model: token + position embedding, n_layer residual blocks
 * (pre- or post-LN), final LayerNorm, LM head tied to the token embedding.
 * The modern recipe's switches (lm/config.h) change parts of it: RMSNorm for
 * every LN below (no biases), ReLU^2 in the MLP, qk-norm inside attention, a
 * head of its own (lm_head, V x C) and logits = c tanh(z / c) before the loss.
 *
 *   h0 = wte[tokens] + pos                       (B, T, C); rope: h0 = wte[tokens]
 *   for each layer l, pre-norm (default):
 *     h = h + dropout(mixer_l(LN1(h)))           mixer: any of the registry's (lm/mixer.h)
 *     h = h + dropout(MLP(LN2(h)))
 *   or post-norm (--norm post):
 *     h = LN1(h + dropout(mixer_l(h)))
 *     h = LN2(h + dropout(MLP(h)))
 *   logits = LN_f(h) wte^T                        (B, T, V)
 *   loss = mean cross-entropy over the B*T positions (those whose target is not
 *          LOSS_IGNORE: a training loss mask, lm/loss_mask.h; the head and
 *          the loss then run at the scored positions alone)
 *
 * Memory: parameters in one float buffer; gradients in a buffer of the same
 * layout (an optimizer's state is its own: lm/optim.h); activations in one
 * arena sized for (B, T) once. Nothing is allocated inside forward, backward
 * or step. The struct is split as llama2.c splits its Transformer: config,
 * weights (ModelWeights) and run state (ModelRunState). */
#ifndef LM_MODEL_H
#define LM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "lm/mixer.h"
#include "lm/config.h"
#include "lm/matmul.h"
#include "lm/error.h"
#include "lm/profile.h"

typedef struct ParamTensor {
    char name[TENSOR_NAME_MAX];
    size_t rows, cols; /* cols == 0: a vector */
    size_t offset;     /* into params (and grads) */
    InitKind init;
} ParamTensor;

/* The offset of a tensor the config leaves out (RMSNorm's bias). */
#define NO_TENSOR ((size_t)-1)

typedef struct LayerOffsets {
    size_t ln1_w, ln1_b, mixer, ln2_w, ln2_b, fc_w, fc_b, proj_w, proj_b;
} LayerOffsets;

/* Post-norm uses the same buffers: resid is the mixer's input, resid_mid
 * the sum h + mix that LN1 reads, ln1 both LN1's output and the MLP's
 * input, and ln2 the sum that LN2 reads (its output is the next layer's
 * resid, or resid_out). */
typedef struct LayerActs {
    float *resid;                      /* (N, C) the stream entering the layer */
    float *ln1, *ln1_mean, *ln1_rstd;  /* (N, C), (N), (N) */
    float *mix;                        /* (N, C) mixer output, after dropout */
    float *mixer;                      /* the mixer's own region */
    float *drop1;                      /* (N, C) dropout mask */
    float *resid_mid;                  /* (N, C) after the mixer branch */
    float *ln2, *ln2_mean, *ln2_rstd;
    float *fc, *act, *mlp;             /* (N, 4C), (N, 4C), (N, C) */
    float *drop2;
} LayerActs;

/* The weights, as llama2.c's TransformerWeights: the layout of the
 * parameters (the tensors and where each layer's are) and every buffer of
 * that layout or derived from it: the parameters, their gradients, and the
 * copies the products and the decode step read. A checkpoint holds params;
 * everything else here is made from the config and params. */
typedef struct ModelWeights {
    ParamTensor *tensors;
    size_t n_tensors;
    size_t n_params;
    size_t wte, wpe, lnf_w, lnf_b; /* wpe only with learned positions; lnf_b only with LayerNorm */
    size_t head;                   /* the head's (V, C): lm_head.weight when untied, else wte */
    LayerOffsets layer[MAX_LAYERS];
    float *params, *grads;         /* grads: only after model_alloc_grads */
    float *grads_micro;            /* one micro-batch's gradients, for accumulation (model_alloc_grad_accum) */
    /* Fixed tables of the config, not trained: */
    float *pos_table;              /* (block_size, C) sinusoidal table, or NULL */
    float *rope_table;             /* (block_size, hs/2, 2) rope cos, sin (src/nn/rope.h), or NULL; handed to every mixer call */
    /* Mixed precision (model_set_precision): NULL in fp32; with
     * PRECISION_BF16 the products run on bf16->params_h, the bf16 rounding
     * of params (refreshed by model_round_weights, which the optimizer step
     * calls), with its scratch (2 slots for the rounded activations of one
     * product), the mixers' packed operands and the record of a failed
     * product (model_bf16_failed), all the model's; every mixer call is
     * handed it (MixerRuntime). */
    MatmulBf16 *bf16;
    /* The product weights' converted copies the decode step reads
     * (model_set_weights); format WEIGHTS_FP32 (all zero): none. */
    DecodeWeights decode;
} ModelWeights;

/* The run state, as llama2.c's RunState: the activations of the last
 * forward and backward's scratch, in one arena sized for (B_max, T_max),
 * and what the last forward did. Nothing here outlives a step but what
 * backward reads of its forward. */
typedef struct ModelRunState {
    /* Activation arena, for up to B_max x T_max tokens: n_acts floats.
     * acts_shared (model_alloc_infer): every layer's la[l] is one set of
     * buffers, each layer's forward writing over the last's, and nothing
     * backward reads is kept. */
    size_t B_max, T_max, n_acts;
    float *acts;
    int acts_shared;
    LayerActs la[MAX_LAYERS];
    uint32_t muted[MAX_LAYERS]; /* each layer's MixerSpec.muted: 0 but in evaluation (model_ablate) */
    float *resid_out, *lnf, *lnf_mean, *lnf_rstd, *losses;
    /* (N, V); model_backward turns them into d(loss)/d(logits) in place. After
     * a forward whose targets ignore some positions (a loss mask, the context
     * of a strided evaluation window), only the head_n scored positions' rows,
     * in order (head_rows): the head runs only where the loss is taken. */
    float *logits;
    float *lnf_rows; /* (N, C) room for LN_f's output at the scored positions, the head's input there */
    float *dresid, *dbranch, *dln, *dfc; /* backward scratch (dbranch: only with dropout) */
    int32_t *inputs, *targets;
    int32_t *head_rows, *head_targets; /* (N) the scored positions under a loss mask, and their targets */

    /* What the last forward did, for backward. */
    size_t B, T;
    int dropout_on;
    uint64_t dropout_key; /* the step's key, when dropout_on */
    float loss;    /* mean loss of the last forward with targets, over the targets not ignored */
    size_t scored; /* how many were not (LOSS_IGNORE, src/nn/loss.h) */
    size_t head_n; /* the rows of logits: B*T, or scored when the head ran at those positions alone */
} ModelRunState;

/* A model, split as llama2.c splits its Transformer: what it is (the
 * config, and each layer's mixer resolved from it), its weights with their
 * gradients, and the run state of its passes. An optimizer's state is its
 * own (lm/optim.h). */
typedef struct Model {
    ModelConfig cfg;
    const Mixer *mixers[MAX_LAYERS]; /* each layer's, resolved from cfg.mixers */
    ModelWeights weights;
    ModelRunState run;
} Model;

/* config_validate, and each layer's mixer's own checks (Mixer.validate). */
int model_check_config(const ModelConfig *cfg, Error *err);
/* Layer l of cfg as its mixer sees it: the sizes and the layer's own windows. */
MixerSpec model_mixer_spec(const ModelConfig *cfg, size_t l);

/* Builds the layout and initialises weights from `seed` (docs/design.md, initialisation). */
int model_init(Model *m, const ModelConfig *cfg, uint64_t seed, Error *err);
/* Builds the layout and allocates the weights, all zero: for a model whose
 * weights are read next (a checkpoint), which need no random draw first. */
int model_alloc(Model *m, const ModelConfig *cfg, Error *err);
/* The layout alone: the tensors, their offsets and n_params, no weights (for
 * counting what goes with each tensor before allocating); model_free frees it. */
int model_layout(Model *m, const ModelConfig *cfg, Error *err);
/* The parameter count of a valid config, without allocating the weights
 * (0 if memory ran out). */
size_t model_count_params(const ModelConfig *cfg);
/* What a model of this config allocates, in bytes: the weights; with
 * training the gradients (and with accum the second gradient buffer); the
 * activations for (B, T). For checking against the machine's memory before
 * allocating (with the optimizer's state: lm/optim.h's
 * optimizer_state_bytes). */
size_t model_memory_bytes(const ModelConfig *cfg, size_t B, size_t T, int training, int accum);
/* The bytes --precision bf16 adds for batch B x T (model_set_precision): the
 * bf16 shadow of the weights, the scratch of one product's two rounded
 * operands and the mixers' packed operands (Mixer.bf16_words); 0 if the
 * layout cannot be counted. */
size_t model_bf16_bytes(const ModelConfig *cfg, size_t B, size_t T);
/* The gradients, for training (zero). */
int model_alloc_grads(Model *m, Error *err);

/* Training FLOPs per token at block size T, counted alike for every mixer:
 * dense = 6 x the sum of rows x cols over the weight matrices a step
 * multiplies by (the tied head included, wpe, a lookup, not): forward 2 per
 * multiply-add, backward 4 (dX and dW); mixing = each layer's own
 * (Mixer.flops). Biases, LayerNorms and lookups are not counted. */
typedef struct ModelFlops {
    double dense, mixing, total;
} ModelFlops;
ModelFlops model_flops(const Model *m, size_t T);
/* Whether a tensor is a weight matrix a training step multiplies by (what
 * model_flops counts: every 2-D tensor but wpe). */
int model_is_product_weight(const Model *m, const ParamTensor *t);
/* A second gradient buffer, so that gradient accumulation can compute each
 * micro-batch's gradients apart and then add them (model_backward_accumulate). */
int model_alloc_grad_accum(Model *m, Error *err);
/* The activations of a training forward and backward, for up to B x T
 * tokens: every layer's own buffers, and backward's scratch. */
int model_alloc_acts(Model *m, size_t B, size_t T, Error *err);
/* The activations of an inference forward, for up to B x T tokens: one
 * layer's buffers shared by every layer (the largest mixer's region), the
 * final LayerNorm's and the head's, and none of backward's, so that a
 * forward touches a layer's pages once however deep the model. model_forward
 * then gives the same logits, losses and loss as over model_alloc_acts's
 * buffers, bit for bit; model_backward is not allowed (inspection, which
 * reads every layer's activations afterwards, needs model_alloc_acts). */
int model_alloc_infer(Model *m, size_t B, size_t T, Error *err);
/* Activations a forward of B x T can run on (no backward after it): the
 * present ones when they are large enough, whichever layout (a training
 * run's full validation reuses the step's), else model_alloc_infer's. */
int model_alloc_forward(Model *m, size_t B, size_t T, Error *err);
/* The precision of the model's products. PRECISION_BF16 needs the CPU's
 * AVX512_BF16 (bf16_supported; else -1, with err saying so) and allocates
 * the bf16 weights (n_params x 2 bytes), the scratch for the activations
 * and the mixers' packed operands of up to B_max x T_max tokens (again with
 * model_alloc_acts), then rounds
 * the weights. PRECISION_FP32 frees them. Returns 0, or -1 with err set. */
int model_set_precision(Model *m, Precision p, Error *err);
/* Whether a bf16 product failed since model_set_precision (lm/matmul.h's
 * MatmulBf16Failure): -1 with err set to the first failure's message (the
 * results of the passes since are undefined), else 0. Ask after a forward or
 * backward pass before using what it computed. */
int model_bf16_failed(const Model *m, Error *err);
/* The format the decode step reads the product weights in (lm/matmul.h's
 * matmul_step): bf16 or int8 copies of every weight matrix the products
 * multiply by, converted now; and the fp32 weights themselves replaced by
 * the values the copies stand for, so that the batched forward (prefill,
 * evaluation) computes the same model. WEIGHTS_FP32 changes nothing.
 * Once per model: the fp32 weights are not kept. */
int model_set_weights(Model *m, WeightsFormat f, Error *err);
/* Rounds params into params_h (nothing in fp32): after anything changes the
 * weights (the trainer calls it after every optimizer step; a checkpoint loaded before
 * model_set_precision needs nothing). The same for any thread count. */
void model_round_weights(Model *m);
void model_free(Model *m);
/* Leaves part `part` of layer `layer` out from now on ("head1",
 * "offset4": the names its mixer's parts gives; MixerSpec.muted), to
 * measure what it contributes: for evaluation only (backward ignores it).
 * An error naming the layer's parts if it has no such part. */
int model_ablate(Model *m, size_t layer, const char *part, Error *err);

const ParamTensor *model_find_tensor(const Model *m, const char *name);

/* The final norm and the head over T rows of the stream h (T, C): LN_f (or
 * RMSNorm) into ln (T, C) with its statistics mean, rstd (T each; mean
 * unused by RMSNorm), then logits (T, V), soft-capped when the config caps
 * them; what the forward pass computes after the last block, for the logit lens. */
void model_head_forward(const Model *m, float *logits, float *ln, float *mean, float *rstd, const float *h, size_t T);

/* What layer l's mixer read in the last forward: LN1(h) pre-norm, h post-norm. */
const float *model_mixer_input(const Model *m, size_t l);

/* What a training pass is asked besides its data; NULL (or all fields
 * zero) is an evaluation pass: no dropout, no profile, no hook. */
typedef struct PassOptions {
    const uint64_t *dropout_key; /* forward: the step's dropout key; NULL: no dropout */
    Profile *prof;               /* NULL, or where the pass charges its time per part */
    /* Backward: NULL, or called each time a part's gradients are final:
     * grads[offset .. offset + count) (the final LayerNorm, each layer from
     * the top, then the embeddings; together all of grads, once each), so a
     * data-parallel all-reduce of that part can start while backward goes on. */
    void (*grads_ready)(void *ctx, float *grads, size_t offset, size_t count);
    void *grads_ready_ctx;
    /* Forward: run the head at every position even when the targets ignore
     * some (the unmasked computation, for tests and measurements). */
    int full_head;
    /* Forward: NULL, or called after layer l's block with its mixer's
     * activations (la[l].mixer), before a later layer may write over them
     * (model_alloc_infer's shared buffers): what model_prefill fills the
     * decoding state from. */
    void (*layer_done)(void *ctx, size_t layer, const float *mixer_acts);
    void *layer_done_ctx;
} PassOptions;

/* inputs, targets (B, T); targets may be NULL (logits only), and a negative
 * target (LOSS_IGNORE) is not scored: see logits above. Requires
 * B <= B_max, T <= T_max. */
void model_forward(Model *m, const int32_t *inputs, const int32_t *targets, size_t B, size_t T,
                   const PassOptions *opt);
/* Accumulates d(loss * loss_scale)/d params into grads (loss_scale = 1 /
 * grad_accum), after a forward over model_alloc_acts's buffers. */
void model_backward(Model *m, float loss_scale, const PassOptions *opt);
void model_zero_grads(Model *m);
/* model_backward of a micro-batch after the first: its gradients are
 * computed apart, in grads_micro, and then added to grads, so that the sum is
 * fl(g0 + g1 + ...) element by element in micro-batch order, the same
 * whether the micro-batches ran in one process or on ranks whose gradients
 * an all-reduce then sums (2 ranks: bit for bit). */
void model_backward_accumulate(Model *m, float loss_scale, const PassOptions *opt);

/* Incremental decoding: feed one token at a time, positions 0, 1, ... up to
 * block_size - 1; each step writes the logits (V) for the next token. A
 * state may hold n_seq sequences decoded together, all at position t:
 * layer l's state of sequence i at mixer_state[l] + i * stride[l]. */
typedef struct ModelState {
    float *mixer_state[MAX_LAYERS];
    size_t stride[MAX_LAYERS];
    float *buf;
    size_t t, n_seq;
} ModelState;

/* One sequence (model_state_init) or n_seq of them. */
int model_state_init(const Model *m, ModelState *s, Error *err);
int model_state_init_batch(const Model *m, ModelState *s, size_t n_seq, Error *err);
void model_state_reset(ModelState *s);
void model_state_free(ModelState *s);
/* One step of a one-sequence state. */
void model_step(const Model *m, ModelState *s, int32_t token, float *logits);
/* One step of every sequence: tokens (n_seq), logits (n_seq, V). The
 * products by the MLP's and the head's weights take all the sequences at
 * once (matrix by matrix: the weights read once), and so do the mixers'
 * own with a step_batch (each mixer here has one; one without would step
 * the sequences one by one). Sequence i's logits are the bits a one-sequence state would give
 * (blas/gemv.h: an entry's operations do not depend on its batch). */
void model_step_batch(const Model *m, ModelState *s, const int32_t *tokens, float *logits);
/* Sequences seq .. seq + n_seq - 1's incremental state of tokens (T,
 * 1 <= T <= block_size) at positions 0 .. T-1 from one batched forward
 * (B = 1: products matrix by matrix, at the gemm rate) rather than T steps:
 * each mixer fills each sequence's state from the forward's activations
 * (Mixer.fill_state: one prompt for N samples is read once, and each state
 * gets only what T positions fill), s->t becomes T and logits (V) are the
 * last position's (the head runs there alone). Equal to T steps to
 * rounding. The forward runs on model_alloc_forward's activations for
 * 1 x T. Returns 0, or -1 with err set. */
int model_prefill(Model *m, ModelState *s, size_t seq, size_t n_seq, const int32_t *tokens, size_t T, float *logits,
                  Error *err);

#endif
