/* The generation loop and its stop strings (see eval/generate.h). */
#include "generate.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lm/machine.h"
#include "lm/utf8.h"
#include "lm/ds.h"

size_t stop_find(const char *text, size_t len, size_t from, const char *const *stop, size_t n_stop, size_t *hold) {
    size_t first = SIZE_MAX;
    *hold = 0;
    for (size_t k = 0; k < n_stop; k++) {
        size_t n = strlen(stop[k]);
        if (n == 0) continue;
        const char *at = from < len ? memmem(text + from, len - from, stop[k], n) : NULL;
        if (at && (size_t)(at - text) < first) first = (size_t)(at - text);
        for (size_t h = n - 1 < len ? n - 1 : len; h > *hold; h--) /* the text's last h bytes begin stop[k] */
            if (memcmp(text + len - h, stop[k], h) == 0) {
                *hold = h;
                break;
            }
    }
    return first;
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
    size_t scanned; /* text before this holds no stop string's beginning */
    int stopped;    /* it wrote a stop string: its text is complete */
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
    size_t refills = 0, steps = 0, stopped = 0;
    for (; steps < n_tokens && stopped < N && !rc; steps++) {
        for (size_t i = 0; i < N; i++) {
            Sample *x = &smp[i];
            uint32_t id = sampler_pick(&s, logits + i * V, &opt->sampling, x->ids, arrlenu(x->ids), &x->rng);
            size_t len, hold = 0;
            const char *bytes = tokenizer_token(tok, id, &len);
            if (len && !x->stopped) memcpy(arraddnptr(x->text, len), bytes, len);
            if (opt->n_stop && !x->stopped) {
                size_t at = stop_find(x->text, arrlenu(x->text), x->scanned, opt->stop, opt->n_stop, &hold);
                if (at != SIZE_MAX) {
                    arrsetlen(x->text, at);
                    x->stopped = 1;
                    stopped++;
                    hold = 0;
                }
                x->scanned = arrlenu(x->text) - hold;
            }
            size_t ready = N == 1 ? utf8_complete_prefix((const unsigned char *)x->text, arrlenu(x->text) - hold) : 0;
            if (ready) { /* one sample streams as it goes, but for what may begin a stop string */
                out(ctx, 0, x->text, ready);
                arrdeln(x->text, 0, ready);
                x->scanned -= x->scanned < ready ? x->scanned : ready;
            }
            arrput(x->ids, id);
            next[i] = (int32_t)id;
        }
        if (stopped == N) continue; /* no step for tokens no sample will write */
        if (st.t == Tm && ++refills) /* the context is full: every sample restarts from its last half block */
            for (size_t i = 0; i < N && !rc; i++)
                rc = prefill(m, &st, i, 1, smp[i].ids + arrlenu(smp[i].ids) - Tm / 2, Tm / 2, logits + i * V, err);
        else
            model_step_batch(m, &st, next, logits);
    }
    if (opt->timing)
        *opt->timing = (GenerateTiming){.prefill_tokens = P, .steps = steps, .refills = refills,
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
