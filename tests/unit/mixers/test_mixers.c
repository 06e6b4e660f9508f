/* The contract every mixer keeps (lm/mixer.h), checked for each entry of
 * the registry through the Mixer interface alone: a new mixer gets these
 * checks with no line written here (src/mixers/README.md). make
 * test-mixers runs it at every instruction-set level the CPU runs, and so
 * does make test (unit-test). One line per mixer: "mixer NAME: K checks
 * passed"; a failed check prints the mixer, the check and its numbers.
 *
 * The test layer: n_embd 16, 2 heads, block 40, the mixer's options at
 * their defaults; a batch of 2 x 37 positions (past one chunk of 32, for a
 * mixer that works in chunks); input x ~ N(0, 1); weights drawn per tensor
 * by its shape (a matrix N(0, 1 / cols), a vector N(0, 0.3^2), a gain
 * 1 + N(0, 0.3^2)), so that every path carries signal of order 1.
 *
 * The checks (those of the entry's tensors, options and hooks in
 * mixer_entry_checks.h; the buffers and the layer in mixer_contract.h):
 *   tensors   sizes adding up to mixer_param_count, names
 *             unique, all starting with one prefix of the mixer's ("attn.")
 *             that is none of the block's own (ln1, ln2, mlp) and no other
 *             registered mixer's;
 *   options   each row named, a number's default within its bounds, a text
 *             default that parses and reads back as itself;
 *   gradient  backward against central differences of sum(out * w), of the
 *             input and of every tensor, entries sampled over rows and
 *             columns (fd_stride), none identically zero; backward
 *             accumulates into dparams, and writes din whatever it held
 *             (two backwards over different garbage: the same bits);
 *   state     memory_size, where the mixer declares it, a part of state_size;
 *   causality changing x at position k leaves out at every t < k unchanged,
 *             bit for bit (and moves out somewhere, or the check saw
 *             nothing); the other sequence of the batch unchanged, bit for bit;
 *   step      step, from a state full of garbage at t = 0 (a new sequence),
 *             gives forward's out to STEP_TOL; step_batch (when the mixer
 *             has one) gives each sequence the bits of its step alone;
 *             fill_state after forward over 1, 16 and 36 positions, then
 *             step, gives forward's out to STEP_TOL;
 *   threads   forward, backward and the first 8 steps on 1 and 2 threads:
 *             the same bits (the width fixed at 2, as a run fixes it); the
 *             other checks run on one thread, which this shows is no loss;
 *   decode    the step over weights converted to bf16 (every matrix, as
 *             bin/sample --weights converts them) gives the forward over
 *             their round-tripped values to STEP_TOL, and that is within
 *             the mixer's declared bound (Mixer.bounds) of fp32's; the step
 *             over int8 weights (its activations quantised too) is within
 *             its bound of fp32's forward;
 *   bf16      on a CPU with AVX512_BF16 (else skipped, saying so): forward
 *             and backward with bf16 products within the declared bounds of
 *             fp32, and not equal to it (the bf16 path ran);
 *   guards    nothing written outside act_size, state_size, out, din and
 *             the parameter count (guard words around every buffer, checked
 *             after each pass);
 *   overfit   from one draw of its weights, 60 Adam steps on a batch of
 *             2 x 37 drive the squared error to another draw's outputs
 *             below a fifth of where it started;
 *   hooks     inspect, when present: both kinds of call succeed, exhibits
 *             named and captioned, maps causal distributions per head,
 *             series T long, the attribution's parts adding up to out at
 *             T - 1; parts, when present: each part left out changes
 *             forward, and step honours it; flops finite, not negative.
 * Then gradient, causality and step again on the layer with the recipe's
 * switches a spec carries (rotary positions, qk-norm), for a mixer whose
 * forward they change.
 * The suite tests itself: two broken copies of the registry's first mixer
 * (one whose forward reads x at t + 1, one whose step differs from its
 * forward by 1e-3) must fail the checks that catch them. */
#include "mixer_contract.h"
#include "mixer_entry_checks.h"

/* ---- gradients ------------------------------------------------------------------- */

/* sum(out * w) of forward over x. */
typedef struct {
    const Layer *L;
    float *params, *acts, *out;
} GradCtx;

static double grad_objective(void *p) {
    GradCtx *c = p;
    const Layer *L = c->L;
    L->mx->forward(&L->spec, &L->rt, c->params, c->acts, c->out, L->x, B, T);
    return dot_objective(c->out, L->w, B * T * L->C);
}

#define FD_TOL 1e-2
#define FD_H 5e-3f

static void check_gradients(Report *r, Layer *L) {
    size_t N = B * T * L->C, np = L->np;
    float *acts = buf_garbage(L->na, 1), *out = buf_garbage(N, 2), *din = buf_garbage(N, 3), *din2 = buf_garbage(N, 4);
    float *dp = buf_new(np), *d0 = rand_tensor(np, 1.0f, 5), *g = zeros(np);
    float *params = malloc(np * sizeof(float));
    memcpy(params, L->params, np * sizeof(float));
    GradCtx c = {L, params, acts, out};
    /* From zero, then from d0: backward adds its gradient to what dparams
     * held; din, garbage before each, is written. */
    grad_objective(&c);
    L->mx->backward(&L->spec, &L->rt, params, dp, acts, L->x, L->w, din, B, T);
    memcpy(g, dp, np * sizeof(float));
    memcpy(dp, d0, np * sizeof(float));
    grad_objective(&c);
    L->mx->backward(&L->spec, &L->rt, params, dp, acts, L->x, L->w, din2, B, T);
    double worst = 0.0, big = 0.0;
    for (size_t i = 0; i < np; i++) {
        double d = fabs((double)dp[i] - d0[i] - g[i]);
        worst = d > worst ? d : worst;
        big = fabs(g[i]) > big ? fabs(g[i]) : big;
    }
    check(r, worst <= 1e-5 * (1.0 + big), "gradient", "backward does not add into dparams: off by %.3e", worst);
    size_t at = first_difference(din, din2, N);
    check(r, at == N, "gradient", "din[%zu] depends on what din held: %.9g, then %.9g", at,
          at < N ? (double)din[at] : 0.0, at < N ? (double)din2[at] : 0.0);
    CHECK_GUARD(r, "gradient", acts, L->na);
    CHECK_GUARD(r, "gradient", out, N);
    CHECK_GUARD(r, "gradient", din, N);
    CHECK_GUARD(r, "gradient", dp, np);
    CHECK_GUARD(r, "gradient", din2, N);
    double e = fd_rel_error(grad_objective, &c, L->x, din, N, 64, FD_H, "input");
    check(r, e <= FD_TOL && l1(din, N) > 0.0, "gradient", "input: relative error %.3e (tol %.0e), |din|_1 %.3e",
          e, FD_TOL, l1(din, N));
    TensorSpec specs[MIXER_MAX_TENSORS];
    size_t ns = mixer_tensors(L->mx, &L->spec, specs), off = 0;
    for (size_t i = 0; i < ns && off < np; i++) {
        size_t n = specs[i].rows * (specs[i].cols ? specs[i].cols : 1);
        n = n < np - off ? n : np - off;
        e = fd_rel_error(grad_objective, &c, params + off, g + off, n, 40, FD_H, specs[i].name);
        check(r, e <= FD_TOL && l1(g + off, n) > 0.0, "gradient", "%s: relative error %.3e (tol %.0e), |grad|_1 %.3e",
              specs[i].name, e, FD_TOL, l1(g + off, n));
        off += n;
    }
    buf_free(acts), buf_free(out), buf_free(din), buf_free(din2), buf_free(dp);
    free(d0), free(g), free(params);
}

/* ---- causality -------------------------------------------------------------------- */

static void check_causality(Report *r, const Layer *L) {
    size_t C = L->C, N = B * T * C;
    float *acts = buf_garbage(L->na, 5), *ref = zeros(N), *out = zeros(N), *x = malloc(N * sizeof(float));
    float *pert = rand_tensor(C, 1.0f, 6);
    L->mx->forward(&L->spec, &L->rt, L->params, acts, ref, L->x, B, T);
    size_t leak_at = 0, leak_from = 0, moved = 0, across = 0;
    for (size_t k = 1; k < T; k++) {
        memcpy(x, L->x, N * sizeof(float));
        for (size_t c = 0; c < C; c++) x[k * C + c] += pert[c]; /* sequence 0, position k */
        L->mx->forward(&L->spec, &L->rt, L->params, acts, out, x, B, T);
        if (!leak_from && memcmp(out, ref, k * C * sizeof(float)))
            for (size_t i = 0; i < k * C && !leak_from; i++)
                if (memcmp(&out[i], &ref[i], sizeof(float))) leak_at = i / C, leak_from = k;
        moved += memcmp(out + k * C, ref + k * C, (T - k) * C * sizeof(float)) != 0; /* at k or later */
        if (!across && memcmp(out + T * C, ref + T * C, (B - 1) * T * C * sizeof(float))) across = k;
    }
    check(r, !leak_from, "causality", "changing x at position %zu changed out at position %zu", leak_from, leak_at);
    /* Not at every k: out at t may depend on x before t alone (a shift). */
    check(r, moved > 0, "causality", "changing x at positions 1 to %d moved no out: the check saw nothing", T - 1);
    check(r, !across, "causality", "changing sequence 0 at position %zu changed sequence 1", across);
    CHECK_GUARD(r, "causality", acts, L->na);
    buf_free(acts), free(ref), free(out), free(x), free(pert);
}

/* ---- step, step_batch, fill_state ------------------------------------------------------ */

static void check_step(Report *r, const Layer *L) {
    const Mixer *mx = L->mx;
    size_t C = L->C, N = B * T * C, ns = L->ns;
    float *acts = buf_garbage(L->na, 7), *ref = zeros(N), *got = buf_new(N), *state = buf_garbage(B * ns, 8);
    mx->forward(&L->spec, &L->rt, L->params, acts, ref, L->x, B, T);
    for (size_t b = 0; b < B; b++)
        step_sequence(L, &L->rt, L->params, state + b * ns, L->x + b * T * C, got + b * T * C, 0, T);
    double gap = rel_gap(got, ref, N);
    if (getenv("VERBOSE")) printf("  %s step: %.3e from forward\n", mx->name, gap);
    check(r, gap <= STEP_TOL, "step", "step differs from forward by %.3e (tol %.0e)", gap, STEP_TOL);
    CHECK_GUARD(r, "step", state, B * ns);
    CHECK_GUARD(r, "step", got, N);
    if (mx->step_batch) {
        float *batch = buf_new(N), *state_b = buf_garbage(B * ns, 9), *in = malloc(B * C * sizeof(float));
        float *out = malloc(B * C * sizeof(float));
        for (size_t t = 0; t < T; t++) {
            for (size_t b = 0; b < B; b++) memcpy(in + b * C, L->x + (b * T + t) * C, C * sizeof(float));
            mx->step_batch(&L->spec, &L->rt, L->params, state_b, ns, in, out, t, B);
            for (size_t b = 0; b < B; b++) memcpy(batch + (b * T + t) * C, out + b * C, C * sizeof(float));
        }
        size_t at = first_difference(batch, got, N);
        check(r, at == N, "step_batch", "sequence %zu at position %zu: %.9g, its step alone %.9g", at / (T * C),
              at / C % T, at < N ? (double)batch[at] : 0.0, at < N ? (double)got[at] : 0.0);
        CHECK_GUARD(r, "step_batch", state_b, B * ns);
        buf_free(batch), buf_free(state_b), free(in), free(out);
    }
    static const size_t prefills[] = {1, 16, T - 1};
    for (size_t i = 0; i < sizeof prefills / sizeof prefills[0]; i++) {
        size_t T0 = prefills[i], na1 = mx->act_size(&L->spec, 1, T0);
        float *acts1 = buf_garbage(na1, 10 + i), *out1 = zeros(T0 * C), *st = buf_garbage(ns, 20 + i);
        mx->forward(&L->spec, &L->rt, L->params, acts1, out1, L->x, 1, T0);
        mx->fill_state(&L->spec, acts1, T0, st);
        step_sequence(L, &L->rt, L->params, st, L->x, got, T0, T);
        gap = rel_gap(got + T0 * C, ref + T0 * C, (T - T0) * C);
        check(r, gap <= STEP_TOL, "prefill", "fill_state after %zu positions, then step: %.3e from forward (tol %.0e)",
              T0, gap, STEP_TOL);
        CHECK_GUARD(r, "prefill", acts1, na1);
        CHECK_GUARD(r, "prefill", st, ns);
        buf_free(acts1), free(out1), buf_free(st);
    }
    buf_free(acts), free(ref), buf_free(got), buf_free(state);
}

/* ---- thread counts --------------------------------------------------------------------- */

typedef struct {
    float *out, *dp, *din, *steps;
} Results;

/* Forward, backward and the first THREAD_STEPS steps of both sequences on
 * `threads` threads, into guarded buffers (checked: the threads may write
 * where one does not). Not every step: a step of a layer this small enters
 * parallel regions with too little work to share, and on a loaded machine
 * each costs a time slice. */
#define THREAD_STEPS 8
static Results run_at(Report *r, const Layer *L, int threads) {
    size_t N = B * T * L->C;
    Results res = {buf_new(N), buf_new(L->np), buf_new(N), buf_new(N)};
    omp_set_num_threads(threads);
    float *acts = buf_garbage(L->na, 30), *state = buf_garbage(B * L->ns, 31);
    L->mx->forward(&L->spec, &L->rt, L->params, acts, res.out, L->x, B, T);
    L->mx->backward(&L->spec, &L->rt, L->params, res.dp, acts, L->x, L->w, res.din, B, T);
    CHECK_GUARD(r, "forward and backward (threads)", acts, L->na);
    CHECK_GUARD(r, "forward and backward (threads)", res.out, N);
    CHECK_GUARD(r, "forward and backward (threads)", res.dp, L->np);
    CHECK_GUARD(r, "forward and backward (threads)", res.din, N);
    for (size_t b = 0; b < B; b++)
        step_sequence(L, &L->rt, L->params, state + b * L->ns, L->x + b * T * L->C, res.steps + b * T * L->C, 0,
                      THREAD_STEPS);
    CHECK_GUARD(r, "step (threads)", state, B * L->ns);
    CHECK_GUARD(r, "step (threads)", res.steps, N);
    omp_set_num_threads(1);
    buf_free(acts), buf_free(state);
    return res;
}

static void check_threads(Report *r, const Layer *L) {
    size_t N = B * T * L->C;
    threads_set_width(2);
    Results one = run_at(r, L, 1), two = run_at(r, L, 2);
    threads_set_width(0);
    check(r, !memcmp(one.out, two.out, N * sizeof(float)), "threads", "forward differs on 1 and 2 threads");
    check(r, !memcmp(one.dp, two.dp, L->np * sizeof(float)), "threads", "dparams differ on 1 and 2 threads");
    check(r, !memcmp(one.din, two.din, N * sizeof(float)), "threads", "din differs on 1 and 2 threads");
    check(r, !memcmp(one.steps, two.steps, N * sizeof(float)), "threads", "step differs on 1 and 2 threads");
    Results *rs[2] = {&one, &two};
    for (int i = 0; i < 2; i++) buf_free(rs[i]->out), buf_free(rs[i]->dp), buf_free(rs[i]->din), buf_free(rs[i]->steps);
}

/* ---- lower precisions ------------------------------------------------------------------- */

static void check_decode(Report *r, const Layer *L, WeightsFormat f, double bound) {
    const char *name = weights_format_name(f);
    char check_name[32];
    snprintf(check_name, sizeof check_name, "decode %s", name);
    size_t N = B * T * L->C, np = L->np;
    float *pq = malloc(np * sizeof(float)), *acts = zeros(L->na), *ref = zeros(N), *refq = zeros(N), *got = zeros(N);
    float *state = zeros(L->ns);
    memcpy(pq, L->params, np * sizeof(float));
    DecodeWeights dec = {.format = f};
    TensorSpec specs[MIXER_MAX_TENSORS];
    size_t ns = mixer_tensors(L->mx, &L->spec, specs), off = 0;
    Error err;
    for (size_t i = 0; i < ns; i++) {
        if (specs[i].cols) assert_int_equal(decode_weights_add(&dec, pq + off, specs[i].rows, specs[i].cols, &err), 0);
        off += specs[i].rows * (specs[i].cols ? specs[i].cols : 1);
    }
    decode_weights_round_trip(&dec);
    MixerRuntime rt = L->rt;
    L->mx->forward(&L->spec, &rt, L->params, acts, ref, L->x, B, T);
    L->mx->forward(&L->spec, &rt, pq, acts, refq, L->x, B, T);
    rt.decode = &dec;
    for (size_t b = 0; b < B; b++) step_sequence(L, &rt, pq, state, L->x + b * T * L->C, got + b * T * L->C, 0, T);
    /* bf16 steps multiply fp32 activations by the rounded weights: the
     * forward over the round-tripped weights to STEP_TOL, which is the
     * cost. int8 steps quantise the activations too (blas/gemv_q8_kernel.h),
     * so their cost is the step's own against the fp32 forward. */
    double gap = rel_gap(got, refq, N), cost = f == WEIGHTS_INT8 ? rel_gap(got, ref, N) : rel_gap(refq, ref, N);
    if (getenv("VERBOSE"))
        printf("  %s %s: %.3e from fp32 (bound %.1e), %.3e from the forward over its weights\n", L->mx->name,
               check_name, cost, bound, gap);
    if (dec.n) {
        if (f != WEIGHTS_INT8)
            check(r, gap <= STEP_TOL, check_name,
                  "the step differs from the forward over the same weights by %.3e (tol %.0e)", gap, STEP_TOL);
        check(r, cost > 0.0, check_name, "the converted weights changed nothing");
        check(r, cost <= bound, check_name, "%.3e from fp32, above the declared bound %.1e (Mixer.bounds)", cost, bound);
    }
    decode_weights_free(&dec);
    free(pq), free(acts), free(ref), free(refq), free(got), free(state);
}

static void check_bf16_training(Report *r, const Layer *L) {
    size_t N = B * T * L->C, np = L->np;
    float *acts = zeros(L->na), *out32 = zeros(N), *out16 = zeros(N), *din32 = zeros(N), *din16 = zeros(N);
    float *g32 = zeros(np), *g16 = zeros(np);
    Bf16Run bf;
    bf16_run_make(&bf, L);
    MixerRuntime rt = L->rt;
    L->mx->forward(&L->spec, &rt, L->params, acts, out32, L->x, B, T);
    L->mx->backward(&L->spec, &rt, L->params, g32, acts, L->x, L->w, din32, B, T);
    rt.bf16 = &bf.mm;
    L->mx->forward(&L->spec, &rt, L->params, acts, out16, L->x, B, T);
    L->mx->backward(&L->spec, &rt, L->params, g16, acts, L->x, L->w, din16, B, T);
    check(r, !bf.failure.failed, "bf16", "a bf16 product failed: %s", bf.failure.err.msg);
    double fwd = rel_norm(out16, out32, N), bound_f = L->mx->bounds.train_bf16_forward;
    check(r, fwd > 0x1p-14, "bf16", "forward equals fp32 to %.2e: the bf16 path did not run", fwd);
    check(r, fwd <= bound_f, "bf16", "forward %.3e from fp32, above the declared bound %.1e", fwd, bound_f);
    double bwd = rel_norm(din16, din32, N), bound_b = L->mx->bounds.train_bf16_backward;
    check(r, bwd <= bound_b, "bf16", "din %.3e from fp32, above the declared bound %.1e", bwd, bound_b);
    TensorSpec specs[MIXER_MAX_TENSORS];
    size_t ns = mixer_tensors(L->mx, &L->spec, specs), off = 0;
    for (size_t i = 0; i < ns; i++) {
        size_t n = specs[i].rows * (specs[i].cols ? specs[i].cols : 1);
        double e = rel_norm(g16 + off, g32 + off, n);
        check(r, e <= bound_b, "bf16", "%s: %.3e from fp32, above the declared bound %.1e", specs[i].name, e, bound_b);
        bwd = e > bwd ? e : bwd;
        off += n;
    }
    if (getenv("VERBOSE")) printf("  %s bf16 training: forward %.3e, backward %.3e\n", L->mx->name, fwd, bwd);
    bf16_run_free(&bf);
    free(acts), free(out32), free(out16), free(din32), free(din16), free(g32), free(g16);
}

/* ---- learning ---------------------------------------------------------------------------- */

#define OVERFIT_STEPS 60

static void check_overfit(Report *r, const Layer *L) {
    size_t N = B * T * L->C, np = L->np;
    float *target = zeros(N), *out = zeros(N), *dout = zeros(N), *din = zeros(N), *acts = zeros(L->na);
    float *p = layer_weights(L->mx, &L->spec, 99), *g = zeros(np), *m = zeros(np), *v = zeros(np);
    L->mx->forward(&L->spec, &L->rt, L->params, acts, target, L->x, B, T); /* the teacher: the layer's own weights */
    AdamWConfig adam = {0.9f, 0.99f, 1e-8f, 0.0f};
    double first = 0.0, last = 0.0;
    for (size_t step = 0; step <= OVERFIT_STEPS; step++) {
        L->mx->forward(&L->spec, &L->rt, p, acts, out, L->x, B, T);
        double loss = 0.0;
        for (size_t i = 0; i < N; i++) {
            double d = (double)out[i] - target[i];
            loss += d * d / (double)N;
            dout[i] = (float)(2.0 * d / (double)N);
        }
        if (step == 0) first = loss;
        last = loss;
        if (step == OVERFIT_STEPS) break;
        memset(g, 0, np * sizeof(float));
        L->mx->backward(&L->spec, &L->rt, p, g, acts, L->x, dout, din, B, T);
        adamw_update(p, g, 1.0f, m, v, np, 1e-2f, 0.0f, &adam, step + 1);
    }
    if (getenv("VERBOSE")) printf("  %s overfit: %.4f -> %.4f (%.3f)\n", L->mx->name, first, last, last / first);
    check(r, last < 0.2 * first, "overfit", "squared error %.4f after %d Adam steps, from %.4f (must fall below a fifth)",
          last, OVERFIT_STEPS, first);
    free(target), free(out), free(dout), free(din), free(acts), free(p), free(g), free(m), free(v);
}

/* ---- the suite ------------------------------------------------------------------------------- */

static void run_checks(Report *r, Layer *L) {
    const MixerBounds *bd = &L->mx->bounds;
    check_tensors(r, L);
    check_options(r, L->registered_as);
    if (L->mx->memory_size) {
        size_t memory = L->mx->memory_size(&L->spec), state = L->mx->state_size(&L->spec);
        check(r, memory > 0 && memory <= state, "state", "memory_size %zu, state_size %zu (it is a part of it)",
              memory, state);
    }
    check_gradients(r, L);
    check_causality(r, L);
    check_step(r, L);
    check_threads(r, L);
    check(r, bd->decode_bf16 > 0.0 && bd->decode_int8 > 0.0, "decode", "declares no bound (Mixer.bounds)");
    check_decode(r, L, WEIGHTS_BF16, bd->decode_bf16);
    check_decode(r, L, WEIGHTS_INT8, bd->decode_int8);
    check(r, bd->train_bf16_forward > 0.0 && bd->train_bf16_backward > 0.0, "bf16", "declares no bound (Mixer.bounds)");
    if (bf16_supported()) check_bf16_training(r, L);
    if (L->np) check_overfit(r, L); /* a mixer without weights has nothing to learn */
    check_hooks(r, L);
}

/* Whether a spec's switches reach the mixer at all: its forward over the
 * same weights and input, on the plain layer and on `other`, differs. */
static int forward_differs(const Layer *plain, const Layer *other) {
    if (plain->np != other->np || plain->na != other->na) return 1;
    size_t N = B * T * plain->C;
    float *acts = zeros(plain->na), *a = zeros(N), *b = zeros(N);
    plain->mx->forward(&plain->spec, &plain->rt, plain->params, acts, a, plain->x, B, T);
    other->mx->forward(&other->spec, &other->rt, other->params, acts, b, other->x, B, T);
    int differs = memcmp(a, b, N * sizeof(float)) != 0;
    free(acts), free(a), free(b);
    return differs;
}

/* Every check of mx (registered_as: the registry entry whose settings and
 * tensors it has, itself for a registered mixer) into r; then, on a layer
 * with the recipe's switches that reach a mixer's spec (rope, qk-norm),
 * those whose paths they change, if they change its forward at all. */
static void run_contract(Report *r, const Mixer *mx, const Mixer *registered_as) {
    /* One thread but in the threads check, which shows that two give the
     * same bits: on a loaded machine two threads' barriers cost more than
     * the work of a layer this small. */
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    Layer L, R;
    Error err;
    layer_make(&L, mx, registered_as, 0);
    check(r, mx->validate(&L.spec, &err) == 0, "validate", "the test layer is refused: %s", err.msg);
    if (!r->failed) run_checks(r, &L);
    layer_make(&R, mx, registered_as, 1);
    r->variant = "rope, qk-norm";
    size_t failed = r->failed;
    check(r, mx->validate(&R.spec, &err) == 0, "validate", "the test layer is refused: %s", err.msg);
    if (r->failed == failed && forward_differs(&L, &R)) {
        check_gradients(r, &R);
        check_causality(r, &R);
        check_step(r, &R);
    }
    r->variant = NULL;
    layer_free(&L), layer_free(&R);
    omp_set_num_threads(saved);
}

static void test_mixer(void **state) {
    const Mixer *mx = *state;
    Report r = {.mixer = mx->name};
    double t0 = omp_get_wtime();
    run_contract(&r, mx, mx);
    if (r.failed) fail_msg("mixer %s: %zu of %zu checks failed", mx->name, r.failed, r.failed + r.passed);
    printf("mixer %s: %zu checks passed (%.2f s)\n", mx->name, r.passed, omp_get_wtime() - t0);
}

/* The suite against broken copies of the registry's first mixer
 * (mixer_contract.h's broken_mixer): each must fail the check named. */
static void test_self_check(void **state) {
    (void)state;
    const Mixer *base = mixer_at(0);
    static const char *const expect[BROKEN_KINDS] = {"causality", "step"};
    for (int kind = 0; kind < BROKEN_KINDS; kind++) {
        Mixer broken = broken_mixer(base, kind);
        Report r = {.mixer = broken.name, .quiet = 1};
        run_contract(&r, &broken, base);
        if (!report_failed(&r, expect[kind]))
            fail_msg("self-check: %s passed the %s check (failed: %s)", broken.name, expect[kind],
                     r.failed ? r.failed_checks : "nothing");
        printf("self-check: %s fails %s, as it must (%zu checks failed: %s)\n", broken.name, expect[kind], r.failed,
               r.failed_checks);
    }
}

int main(void) {
    struct CMUnitTest tests[MAX_MIXERS + 1];
    size_t n = 0;
    for (size_t i = 0; i < mixer_count(); i++)
        tests[n++] = (struct CMUnitTest){mixer_at(i)->name, test_mixer, NULL, NULL, (void *)mixer_at(i)};
    tests[n++] = (struct CMUnitTest){"self-check", test_self_check, NULL, NULL, NULL};
    if (!bf16_supported()) printf("mixers: bf16 training products skipped: %s\n", bf16_unavailable());
    int rc = _cmocka_run_group_tests("mixers", tests, n, NULL, NULL);
    bf16_release();
    return rc;
}
