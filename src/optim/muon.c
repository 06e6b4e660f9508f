/* Muon ("MomentUm Orthogonalized by Newton-Schulz", K. Jordan 2024) on the
 * hidden layers' matrices, AdamW on every other tensor.
 *
 * For each matrix W (rows x cols, out x in) with gradient G:
 *   B = momentum * B + G                         momentum buffer (its state's "m")
 *   U = G + momentum * B                         Nesterov
 *   O = NS5(U / (|U|_F + 1e-7))                  ~ the nearest semi-orthogonal matrix
 *   W = W * (1 - lr * weight_decay) - lr * sqrt(max(1, rows / cols)) * O
 * with lr = --muon-lr times the schedule's factor (the scheduled AdamW rate
 * over its peak), so both follow one warm-up and cosine. The shape factor is
 * Keller Jordan's (torch.optim.Muon's adjust_lr_fn "original"), not
 * Moonlight's 0.2 * sqrt(max(rows, cols)): Muon keeps its own rate. The
 * weight decay is decoupled, on Muon's rate, 0 unless asked for
 * (--muon-weight-decay): the published algorithm has none.
 *
 * NS5: five iterations of X = a X + (b A + c A A) X with A = X X^T and
 * (a, b, c) = (3.4445, -4.7750, 2.0315), on the wide orientation (X^T when
 * rows > cols, so A is the smaller Gram matrix), every product a call of
 * lm/gemm.h. The step shares the matrices out among the threads, each matrix
 * whole on one thread (gemm_serial): at a few hundred rows a product cut into
 * tiles spends much of its time in the barriers between the fifteen
 * products, and on a busy machine one descheduled thread holds up the
 * other. A matrix's result is the same whichever thread computes it. */
#include "optim/muon.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "lm/gemm.h"
#include "lm/ops.h"
#include "lm/threads.h"
#include "optim/adamw.h"

#define NS_STEPS 5
#define NS_A 3.4445f
#define NS_B (-4.7750f)
#define NS_C 2.0315f
#define NS_EPS 1e-7f

typedef void (*GemmFn)(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const float *a,
                       size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc);

int muon_updates(const ParamTensor *t) { return t->cols && strncmp(t->name, "h.", 2) == 0; }

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* x, a second matrix of its size, and two k x k Gram-sized matrices. */
size_t muon_ns_scratch_floats(size_t rows, size_t cols) {
    size_t k = min_size(rows, cols);
    return 2 * rows * cols + 2 * k * k;
}

/* The iterations on x (already normalised), every product through `mul`. */
static void newton_schulz(GemmFn mul, float *x, size_t rows, size_t cols, float *scratch) {
    size_t n = rows * cols, k = min_size(rows, cols);
    int tall = rows > cols;
    float *a = scratch + n, *b = a + k * k, *cur = x, *next = scratch;
    for (int it = 0; it < NS_STEPS; it++) {
        /* A = X X^T over the wide form: for a tall matrix (X = cur^T) that is cur^T cur. */
        if (tall) mul(1, 0, k, k, rows, 1.0f, cur, cols, cur, cols, 0.0f, a, k);
        else mul(0, 1, k, k, cols, 1.0f, cur, cols, cur, cols, 0.0f, a, k);
        memcpy(b, a, k * k * sizeof *b); /* B = b A + c A A */
        mul(0, 0, k, k, k, NS_C, a, k, a, k, NS_B, b, k);
        memcpy(next, cur, n * sizeof *next); /* X' = a X + B X; tall: cur' = a cur + cur B^T */
        if (tall) mul(0, 1, rows, cols, k, 1.0f, cur, cols, b, k, NS_A, next, cols);
        else mul(0, 0, rows, cols, k, 1.0f, b, k, cur, cols, NS_A, next, cols);
        float *t = cur;
        cur = next, next = t;
    }
    if (cur != x) memcpy(x, cur, n * sizeof *x); /* NS_STEPS is odd: the result is in scratch */
}

static void scale(float *x, size_t n, float by) {
    for (size_t i = 0; i < n; i++) x[i] *= by;
}

void muon_orthogonalize(float *x, size_t rows, size_t cols, float *scratch) {
    size_t n = rows * cols;
    scale(x, n, 1.0f / ((float)sqrt(sum_squares(x, n)) + NS_EPS));
    newton_schulz(gemm_serial, x, rows, cols, scratch);
}

/* What one thread needs for the largest matrix: the update, then the iterations' scratch. */
static size_t thread_scratch(const ParamView *p) {
    size_t most = 0;
    for (size_t i = 0; i < p->n_tensors; i++) {
        const ParamTensor *t = &p->tensors[i];
        size_t need = t->rows * t->cols + muon_ns_scratch_floats(t->rows, t->cols);
        if (muon_updates(t) && need > most) most = need;
    }
    return most;
}

/* A region of it for each thread the run's width allows (lm/threads.h). */
static size_t muon_scratch_floats(const ParamView *p) { return threads_width() * thread_scratch(p); }

/* Its state: a matrix it updates keeps the momentum alone ("m"), every
 * other tensor AdamW's two moments. */
static size_t muon_state_buffers(const ParamTensor *t) { return muon_updates(t) ? 1 : 2; }

/* The threads of a region: at most one per scratch region. */
static int region_threads(size_t regions) {
    size_t t = threads_max();
    return (int)(t < regions ? t : regions ? regions : 1);
}

void muon_orthogonalize_all(float *const *x, const size_t *rows, const size_t *cols, size_t n, float *scratch,
                            size_t n_scratch, size_t per_thread) {
#pragma omp parallel num_threads(region_threads(n_scratch / per_thread))
    {
        float *mine = scratch + (size_t)omp_get_thread_num() * per_thread;
#pragma omp for schedule(dynamic, 1)
        for (size_t i = 0; i < n; i++) muon_orthogonalize(x[i], rows[i], cols[i], mine);
    }
}

/* One matrix on the calling thread: momentum, Nesterov, orthogonalisation, decay and update. */
static void muon_matrix(float *w, const float *g, float grad_scale, float *buf, size_t rows, size_t cols, float lr,
                        const MuonSettings *cfg, float *scratch) {
    size_t n = rows * cols;
    float mu = cfg->momentum, *u = scratch;
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * grad_scale;
        buf[i] = mu * buf[i] + gi;
        u[i] = gi + mu * buf[i];
    }
    muon_orthogonalize(u, rows, cols, scratch + n);
    float decay = 1.0f - lr * cfg->weight_decay;
    float step = lr * sqrtf(rows > cols ? (float)rows / (float)cols : 1.0f);
    for (size_t i = 0; i < n; i++) w[i] = w[i] * decay - step * u[i];
}

static void muon_step(const ParamView *p, OptimizerState *s, const OptimSettings *set, float lr, size_t t,
                      float grad_scale) {
    const MuonSettings *own = set->own;
    float muon_lr = set->lr_peak > 0.0f ? own->lr * (lr / set->lr_peak) : 0.0f;
    size_t per_thread = thread_scratch(p);
    if (per_thread == 0) per_thread = 1; /* no hidden matrix: AdamW alone */
#pragma omp parallel num_threads(region_threads(s->n_scratch / per_thread))
    {
        for (size_t i = 0; i < p->n_tensors; i++) /* AdamW's share, cut among the threads tensor by tensor */
            if (!muon_updates(&p->tensors[i])) adamw_tensor(p, s, i, &set->adam, lr, t, grad_scale);
        float *mine = s->scratch + (size_t)omp_get_thread_num() * per_thread;
#pragma omp for schedule(dynamic, 1)
        for (size_t i = 0; i < p->n_tensors; i++) { /* Muon's: each matrix whole on one thread */
            const ParamTensor *pt = &p->tensors[i];
            size_t off = pt->offset;
            if (muon_updates(pt))
                muon_matrix(p->params + off, p->grads + off, grad_scale, optim_buffer(s, i, 0), pt->rows, pt->cols,
                            muon_lr, own, mine);
        }
    }
}

_Static_assert(sizeof(MuonSettings) <= OPTIMIZER_SETTINGS_BYTES, "the settings fit the run options' block");

static const OptionRow muon_options[] = {
    {.name = "muon-lr", .kind = OPT_FLOAT, .offset = offsetof(MuonSettings, lr), .lo = 0, .hi = 10, .def = 0.02,
     .value = "X", .help = "Muon's peak learning rate, on the same schedule as --lr (0.02)"},
    {.name = "muon-momentum", .kind = OPT_FLOAT, .offset = offsetof(MuonSettings, momentum), .lo = 0, .hi = 0.999999,
     .def = 0.95, .value = "X", .help = "Muon's Nesterov momentum (0.95)"},
    {.name = "muon-weight-decay", .kind = OPT_FLOAT, .offset = offsetof(MuonSettings, weight_decay), .lo = 0, .hi = 10,
     .def = 0, .value = "X", .help = "Muon's decoupled weight decay, times its learning rate (0)"},
};

/* "optimizer: muon on 8 hidden matrices (...), adamw on the rest (lr 0.001)". */
static void muon_describe(const ParamView *p, const void *settings, float lr, char *line, size_t len) {
    const MuonSettings *own = settings;
    size_t mats = 0, floats = 0;
    for (size_t i = 0; i < p->n_tensors; i++)
        if (muon_updates(&p->tensors[i])) mats++, floats += p->tensors[i].rows * p->tensors[i].cols;
    snprintf(line, len,
             "optimizer: muon on %zu hidden matrices (%.1f%% of the weights; lr %g, momentum %g, weight decay %g), "
             "adamw on the rest (lr %g)", mats, 100.0 * (double)floats / (double)p->n_params, own->lr, own->momentum,
             own->weight_decay, lr);
}

const Optimizer muon_optimizer = {
    .name = "muon",
    .title = "Muon",
    .options = muon_options,
    .n_options = sizeof muon_options / sizeof muon_options[0],
    .state_names = adamw_state_names,
    .n_state_names = 2,
    .state_buffers = muon_state_buffers,
    .scratch_floats = muon_scratch_floats,
    .step = muon_step,
    .describe = muon_describe,
};
