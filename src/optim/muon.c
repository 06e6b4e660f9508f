/* Muon ("MomentUm Orthogonalized by Newton-Schulz", K. Jordan 2024) on the
 * hidden layers' matrices, AdamW on every other tensor.
 *
 * For each matrix W (rows x cols, out x in) with gradient G:
 *   B = momentum * B + G                         momentum buffer (Model.m)
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
 * rows > cols, so A is the smaller Gram matrix), every product a gemm call
 * (lm/gemm.h: tiled, parallel, the same result for any thread count). */
#include "optim/muon.h"

#include <math.h>
#include <string.h>

#include "lm/gemm.h"
#include "lm/ops.h"
#include "optim/adamw.h"

#define NS_STEPS 5
#define NS_A 3.4445f
#define NS_B (-4.7750f)
#define NS_C 2.0315f
#define NS_EPS 1e-7f

int muon_updates(const ParamTensor *t) { return t->cols && strncmp(t->name, "h.", 2) == 0; }

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* x, a second matrix of its size, and two k x k Gram-sized matrices. */
size_t muon_ns_scratch_floats(size_t rows, size_t cols) {
    size_t k = min_size(rows, cols);
    return 2 * rows * cols + 2 * k * k;
}

void muon_orthogonalize(float *x, size_t rows, size_t cols, float *scratch) {
    size_t n = rows * cols, k = min_size(rows, cols);
    int tall = rows > cols;
    float *y = scratch, *a = y + n, *b = a + k * k, *cur = x, *next = y;
    float inv = 1.0f / ((float)sqrt(sum_squares(x, n)) + NS_EPS);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) x[i] *= inv;
    for (int it = 0; it < NS_STEPS; it++) {
        /* A = X X^T over the wide form: for a tall matrix (X = cur^T) that is cur^T cur. */
        if (tall) gemm(1, 0, k, k, rows, 1.0f, cur, cols, cur, cols, 0.0f, a, k);
        else gemm(0, 1, k, k, cols, 1.0f, cur, cols, cur, cols, 0.0f, a, k);
        memcpy(b, a, k * k * sizeof *b); /* B = b A + c A A */
        gemm(0, 0, k, k, k, NS_C, a, k, a, k, NS_B, b, k);
        memcpy(next, cur, n * sizeof *next); /* X' = a X + B X; tall: cur' = a cur + cur B^T */
        if (tall) gemm(0, 1, rows, cols, k, 1.0f, cur, cols, b, k, NS_A, next, cols);
        else gemm(0, 0, rows, cols, k, 1.0f, b, k, cur, cols, NS_A, next, cols);
        float *t = cur;
        cur = next, next = t;
    }
    if (cur != x) memcpy(x, cur, n * sizeof *x); /* NS_STEPS is odd: the result is in scratch */
}

static size_t muon_scratch_floats(const Model *m) {
    size_t most = 0;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const ParamTensor *t = &m->tensors[i];
        if (!muon_updates(t)) continue;
        /* the orthogonalised update, then the iterations' own scratch */
        size_t need = t->rows * t->cols + muon_ns_scratch_floats(t->rows, t->cols);
        if (need > most) most = need;
    }
    return most;
}

/* One matrix: momentum, Nesterov, orthogonalisation, decay and update. */
static void muon_matrix(float *w, const float *g, float grad_scale, float *buf, size_t rows, size_t cols, float lr,
                        const MuonConfig *cfg, float *scratch) {
    size_t n = rows * cols;
    float mu = cfg->momentum, *u = scratch;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * grad_scale;
        buf[i] = mu * buf[i] + gi;
        u[i] = gi + mu * buf[i];
    }
    muon_orthogonalize(u, rows, cols, scratch + n);
    float decay = 1.0f - lr * cfg->weight_decay;
    float step = lr * sqrtf(rows > cols ? (float)rows / (float)cols : 1.0f);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) w[i] = w[i] * decay - step * u[i];
}

static void muon_step(Model *m, const OptimSettings *s, float *scratch, float lr, size_t t, float grad_scale) {
    float muon_lr = s->lr_peak > 0.0f ? s->muon.lr * (lr / s->lr_peak) : 0.0f;
#pragma omp parallel
    for (size_t i = 0; i < m->n_tensors; i++) {
        const ParamTensor *pt = &m->tensors[i];
        if (muon_updates(pt)) continue;
        size_t off = pt->offset, n = pt->rows * (pt->cols ? pt->cols : 1);
        adamw_span(m->params + off, m->grads + off, grad_scale, m->m + off, m->v + off, n, lr,
                   pt->cols ? s->adam.weight_decay : 0.0f, &s->adam, t);
    }
    for (size_t i = 0; i < m->n_tensors; i++) {
        const ParamTensor *pt = &m->tensors[i];
        size_t off = pt->offset;
        if (muon_updates(pt))
            muon_matrix(m->params + off, m->grads + off, grad_scale, m->m + off, pt->rows, pt->cols, muon_lr,
                        &s->muon, scratch);
    }
    model_round_weights(m); /* bf16: the products' weights, once per step */
}

const Optimizer muon_optimizer = {"muon", muon_scratch_floats, muon_step};
