/* Sampling and the generation loop (see eval/generate.h). */
#include "generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* The state of ids[from .. from + n) at positions 0 .. n-1, and the next token's logits. */
static int prefill(Model *m, ModelState *st, const uint32_t *ids, size_t n, float *logits, Error *err) {
    int32_t *tokens = lm_calloc(n, sizeof(int32_t), err);
    if (!tokens) return -1;
    for (size_t i = 0; i < n; i++) tokens[i] = (int32_t)ids[i];
    model_state_reset(st);
    int rc = model_prefill(m, st, tokens, n, logits, err);
    free(tokens);
    return rc;
}

int generate(Model *m, const Tokenizer *tok, const char *prompt, size_t n_tokens, const SampleOptions *opt,
             TextSink out, void *ctx, Error *err) {
    size_t V = m->cfg.vocab_size, Tm = m->cfg.block_size;
    uint32_t *ids = NULL;
    tokenizer_encode(tok, prompt, strlen(prompt), &ids);
    if (arrlenu(ids) == 0) arrput(ids, 0u);
    ModelState st = {0};
    Sampler s = {0};
    float *logits = lm_calloc(V, sizeof(float), err);
    if (!logits || model_state_init(m, &st, err) || sampler_init(&s, V, err)) {
        model_state_free(&st);
        free(logits);
        arrfree(ids);
        return -1;
    }
    Rng rng;
    rng_seed(&rng, opt->seed);
    size_t from = arrlenu(ids) > Tm ? arrlenu(ids) - Tm : 0;
    int rc = prefill(m, &st, ids + from, arrlenu(ids) - from, logits, err);
    char *pending = NULL; /* decoded bytes not yet on a character boundary */
    for (size_t i = 0; i < n_tokens && !rc; i++) {
        uint32_t next = sampler_pick(&s, logits, opt->temperature, opt->top_k, &rng);
        size_t len;
        const char *bytes = tokenizer_token(tok, next, &len);
        if (len) memcpy(arraddnptr(pending, len), bytes, len);
        size_t ready = utf8_complete_prefix((const unsigned char *)pending, arrlenu(pending));
        if (ready) {
            out(ctx, pending, ready);
            arrdeln(pending, 0, ready);
        }
        arrput(ids, next);
        if (st.t == Tm) {
            rc = prefill(m, &st, ids + arrlenu(ids) - Tm / 2, Tm / 2, logits, err);
        } else {
            model_step(m, &st, (int32_t)next, logits);
        }
    }
    if (arrlenu(pending)) out(ctx, pending, arrlenu(pending)); /* none at all with --tokens 0: pending is NULL */
    arrfree(pending);
    sampler_free(&s);
    model_state_free(&st);
    free(logits);
    arrfree(ids);
    return rc;
}
