/* Sampling and the generation loop (see eval/generate.h). */
#include "generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm/machine.h"
#include "lm/utf8.h"
#include "lm/ds.h"

int sampler_init(Sampler *s, size_t V, Error *err) {
    s->V = V;
    s->probs = lm_calloc(V, sizeof(float), err);
    s->order = s->probs ? lm_calloc(V, sizeof(size_t), err) : NULL;
    if (s->order) return 0;
    sampler_free(s);
    return -1;
}

void sampler_free(Sampler *s) {
    free(s->probs);
    free(s->order);
    memset(s, 0, sizeof *s);
}

/* Whether id i ranks before id j: the larger logit, the lower id among equals. */
static int ranks_before(const float *z, size_t i, size_t j) { return z[i] > z[j] || (z[i] == z[j] && i < j); }

/* Sinks heap[at] in a heap of n ids whose root is the one that ranks last. */
static void sift_down(size_t *heap, size_t n, size_t at, const float *z) {
    for (;;) {
        size_t last = at, l = 2 * at + 1, r = l + 1;
        if (l < n && ranks_before(z, heap[last], heap[l])) last = l;
        if (r < n && ranks_before(z, heap[last], heap[r])) last = r;
        if (last == at) return;
        size_t t = heap[at];
        heap[at] = heap[last];
        heap[last] = t;
        at = last;
    }
}

/* The k ids of logits (V) that rank first, in rank order, into order[0..k):
 * O(V log k) through a heap of the best k so far (a sort of all 50,257 of
 * GPT-2's logits for every token would cost more than the token's head). */
static void top_ids(size_t *order, const float *z, size_t V, size_t k) {
    for (size_t i = 0; i < k; i++) order[i] = i;
    for (size_t i = k / 2; i-- > 0;) sift_down(order, k, i, z);
    for (size_t v = k; v < V; v++)
        if (ranks_before(z, v, order[0])) {
            order[0] = v;
            sift_down(order, k, 0, z);
        }
    for (size_t n = k; n > 1; n--) { /* the last-ranked to the back, one at a time */
        size_t t = order[0];
        order[0] = order[n - 1];
        order[n - 1] = t;
        sift_down(order, n - 1, 0, z);
    }
}

uint32_t sampler_pick(Sampler *s, const float *logits, float temperature, size_t top_k, Rng *rng) {
    size_t V = s->V, best = 0;
    for (size_t v = 1; v < V; v++) best = logits[v] > logits[best] ? v : best;
    if (temperature == 0.0f) return (uint32_t)best;
    size_t k = top_k && top_k < V ? top_k : V;
    if (k < V) top_ids(s->order, logits, V, k);
    else
        for (size_t v = 0; v < V; v++) s->order[v] = v;
    double sum = 0.0;
    for (size_t i = 0; i < k; i++) {
        s->probs[i] = expf((logits[s->order[i]] - logits[best]) / temperature);
        sum += s->probs[i];
    }
    double u = rng_uniform(rng) * sum, acc = 0.0;
    for (size_t i = 0; i < k; i++) {
        acc += s->probs[i];
        if (u < acc) return (uint32_t)s->order[i];
    }
    return (uint32_t)s->order[k - 1];
}

/* Sequences seq .. seq + n_seq - 1's state of ids[0 .. n) at positions 0 .. n-1, and the next token's logits. */
static int prefill(Model *m, ModelState *st, size_t seq, size_t n_seq, const uint32_t *ids, size_t n, float *logits,
                   Error *err) {
    int32_t *tokens = lm_calloc(n, sizeof(int32_t), err);
    if (!tokens) return -1;
    for (size_t i = 0; i < n; i++) tokens[i] = (int32_t)ids[i];
    int rc = model_prefill(m, st, seq, n_seq, tokens, n, logits, err);
    free(tokens);
    return rc;
}

/* One sample being decoded: its tokens (the prompt's first), its draws, and
 * its text: what is out (streamed) or kept (a batch), and the bytes not yet
 * on a character boundary. */
typedef struct Sample {
    uint32_t *ids;
    Rng rng;
    char *text;
} Sample;

int generate(Model *m, const Tokenizer *tok, const char *prompt, size_t n_tokens, const SampleOptions *opt,
             TextSink out, void *ctx, Error *err) {
    size_t V = m->cfg.vocab_size, Tm = m->cfg.block_size, N = opt->n_samples ? opt->n_samples : 1;
    uint32_t *prompt_ids = NULL;
    tokenizer_encode(tok, prompt, strlen(prompt), &prompt_ids);
    if (arrlenu(prompt_ids) == 0) arrput(prompt_ids, 0u);
    size_t from = arrlenu(prompt_ids) > Tm ? arrlenu(prompt_ids) - Tm : 0, P = arrlenu(prompt_ids) - from;
    ModelState st = {0};
    Sampler s = {0};
    float *logits = lm_calloc(N * V, sizeof(float), err);
    int32_t *next = logits ? lm_calloc(N, sizeof(int32_t), err) : NULL;
    Sample *smp = next ? lm_calloc(N, sizeof(Sample), err) : NULL;
    int rc = !smp || model_state_init_batch(m, &st, N, err) || sampler_init(&s, V, err) ? -1 : 0;
    for (size_t i = 0; i < N && !rc; i++) {
        memcpy(arraddnptr(smp[i].ids, P), prompt_ids + from, P * sizeof(uint32_t));
        rng_seed(&smp[i].rng, opt->seed + i); /* sample i: what --seed seed + i gives alone */
    }
    /* One prefill of the prompt for every sample. */
    double t0 = wall_seconds();
    if (!rc) rc = prefill(m, &st, 0, N, smp[0].ids, P, logits, err);
    for (size_t i = 1; i < N && !rc; i++) memcpy(logits + i * V, logits, V * sizeof(float));
    double t1 = wall_seconds();
    size_t refills = 0;
    for (size_t k = 0; k < n_tokens && !rc; k++) {
        for (size_t i = 0; i < N; i++) {
            Sample *x = &smp[i];
            uint32_t id = sampler_pick(&s, logits + i * V, opt->temperature, opt->top_k, &x->rng);
            size_t len;
            const char *bytes = tokenizer_token(tok, id, &len);
            if (len) memcpy(arraddnptr(x->text, len), bytes, len);
            size_t ready = N == 1 ? utf8_complete_prefix((const unsigned char *)x->text, arrlenu(x->text)) : 0;
            if (ready) { /* one sample streams as it goes */
                out(ctx, 0, x->text, ready);
                arrdeln(x->text, 0, ready);
            }
            arrput(x->ids, id);
            next[i] = (int32_t)id;
        }
        if (st.t == Tm && ++refills) /* the context is full: every sample restarts from its last half block */
            for (size_t i = 0; i < N && !rc; i++)
                rc = prefill(m, &st, i, 1, smp[i].ids + arrlenu(smp[i].ids) - Tm / 2, Tm / 2, logits + i * V, err);
        else
            model_step_batch(m, &st, next, logits);
    }
    if (opt->timing)
        *opt->timing = (GenerateTiming){.prefill_tokens = P, .steps = n_tokens, .refills = refills,
                                        .prefill_seconds = t1 - t0, .decode_seconds = wall_seconds() - t1};
    for (size_t i = 0; smp && i < N; i++) {
        if (!rc && arrlenu(smp[i].text)) out(ctx, i, smp[i].text, arrlenu(smp[i].text));
        else if (!rc && N > 1) out(ctx, i, "", 0); /* every sample of a batch gets its piece */
        arrfree(smp[i].text);
        arrfree(smp[i].ids);
    }
    free(smp);
    free(next);
    sampler_free(&s);
    model_state_free(&st);
    free(logits);
    arrfree(prompt_ids);
    return rc;
}
