/* Scoring the items of a downstream task: each choice of each item is one
 * sequence, start token + context + continuation, of which the
 * continuation's tokens are scored. The sequences go through the
 * evaluation forward (evaluate_rows) a batch at a time, longest first, each
 * batch as long as its longest sequence, so that short sentences cost
 * their own length and not the block's; by default a batch holds as many
 * as the tokens of a batch of blocks allow. */
#include "downstream.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evaluate.h"
#include "lm/ds.h"

void wilson_interval(size_t correct, size_t n, double z, double *lo, double *hi) {
    if (n == 0) {
        *lo = *hi = NAN;
        return;
    }
    double p = (double)correct / (double)n, nn = (double)n, z2 = z * z;
    double centre = (p + z2 / (2 * nn)) / (1 + z2 / nn);
    double half = z / (1 + z2 / nn) * sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn));
    *lo = centre - half < 0 ? 0 : centre - half;
    *hi = centre + half > 1 ? 1 : centre + half;
}

/* z of a two-sided 95% interval: the normal distribution's 97.5% quantile. */
#define Z95 1.959963984540054

void ds_count_finish(DsCount *c) {
    c->accuracy = c->scored ? (double)c->correct / (double)c->scored : NAN;
    wilson_interval(c->correct, c->scored, Z95, &c->lo, &c->hi);
}

int ds_start_token(const Tokenizer *tok, uint32_t *id, const char **name, const char **text, Error *err) {
    uint32_t eot = tokenizer_special_id(tok, "<|endoftext|>");
    if (eot < tok->vocab_size) {
        *id = eot;
        *name = *text = "<|endoftext|>";
        return 0;
    }
    uint32_t *ids = NULL;
    tokenizer_encode(tok, "\n", 1, &ids);
    int unknown = tok->kind->unknown >= 0 && arrlen(ids) == 1 && ids[0] == (uint32_t)tok->kind->unknown;
    int ok = arrlen(ids) == 1 && !unknown;
    if (ok) *id = ids[0];
    arrfree(ids);
    if (!ok)
        return err_set(err, "the model's tokenizer has neither <|endoftext|> nor a newline token to score a text after");
    *name = "a newline";
    *text = "\n";
    return 0;
}

/* One sequence: tokens pool[at .. at+len), of which the last n_scored are scored. */
typedef struct Seq {
    size_t item, choice, at, len, n_scored;
} Seq;

static int longer_first(const void *a, const void *b) {
    const Seq *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

static const char *skip_reason(TaskKind kind) {
    return kind == TASK_PAIRS   ? "a sentence has more tokens than the model's block"
           : kind == TASK_CLOZE ? "the last word has more tokens than the model's block"
                                : "an ending has more tokens than the model's block";
}

/* The sequences of every item that fits (its score marked scored) into
 * *seqs, their tokens into *pool. Contexts longer than the block lose
 * tokens from the left (start token first); a pair is never cut. */
static void plan(const Model *m, const Tokenizer *tok, uint32_t start, const DsTask *t, DsResult *r, Seq **seqs,
                 int32_t **pool) {
    size_t T = m->cfg.block_size;
    uint32_t *ctx = NULL, *cont[DS_MAX_CHOICES] = {0};
    for (size_t i = 0; i < t->n; i++) {
        const DsItem *it = &t->items[i];
        DsScore *s = &r->scores[i];
        arrclear(ctx);
        arrput(ctx, start);
        tokenizer_encode(tok, it->context, strlen(it->context), &ctx);
        size_t nctx = arrlenu(ctx);
        int fits = 1;
        for (size_t c = 0; c < it->n_choices; c++) {
            arrclear(cont[c]);
            tokenizer_encode(tok, it->choices[c], strlen(it->choices[c]), &cont[c]);
            size_t n = arrlenu(cont[c]);
            fits &= n <= T && (t->kind != TASK_PAIRS || nctx + n - 1 <= T);
            s->tokens[c] = n;
            s->bytes[c] = strlen(it->choices[c]);
        }
        if (!fits) {
            r->skipped++;
            continue;
        }
        s->scored = 1;
        for (size_t c = 0; c < it->n_choices; c++) {
            size_t n = arrlenu(cont[c]), len = nctx + n, cut = len - 1 > T ? len - 1 - T : 0;
            s->truncated |= cut > 0;
            Seq q = {i, c, arrlenu(*pool), len - cut, n};
            for (size_t k = cut; k < nctx; k++) arrput(*pool, (int32_t)ctx[k]);
            for (size_t k = 0; k < n; k++) arrput(*pool, (int32_t)cont[c][k]);
            arrput(*seqs, q);
        }
        r->truncated += (size_t)s->truncated;
    }
    arrfree(ctx);
    for (size_t c = 0; c < DS_MAX_CHOICES; c++) arrfree(cont[c]);
}

static void progress(int show, size_t done, size_t total) {
    if (!show || !isatty(2)) return;
    fprintf(stderr, "\reval: %zu/%zu sequences", done, total);
    if (done == total) fprintf(stderr, "\r%*s\r", 48, "");
}

/* Runs every sequence; each item's choices get their log-probabilities
 * (and a cloze its greedy flag). */
static int run(Model *m, const Seq *seqs, size_t n_seqs, const int32_t *pool, uint32_t pad, size_t batch,
               int show, DsResult *r, Error *err) {
    size_t T = n_seqs ? seqs[0].len - 1 : 1; /* the longest: they are sorted */
    int32_t *in = malloc(batch * T * sizeof *in), *tg = malloc(batch * T * sizeof *tg);
    uint8_t *hit = malloc(batch * T);
    int rc = -1;
    if (!in || !tg || !hit) {
        err_set(err, "out of memory for a batch of %zu x %zu tokens", batch, T);
        goto done;
    }
    if (model_alloc_forward(m, batch, T, err)) goto done;
    for (size_t s0 = 0; s0 < n_seqs; s0 += batch) {
        size_t B = n_seqs - s0 < batch ? n_seqs - s0 : batch, Tb = seqs[s0].len - 1;
        for (size_t b = 0; b < B; b++) {
            const Seq *q = &seqs[s0 + b];
            const int32_t *k = pool + q->at;
            for (size_t t = 0; t < Tb; t++) {
                int inside = t + 1 < q->len, scored = inside && t + 1 + q->n_scored >= q->len;
                in[b * Tb + t] = inside ? k[t] : (int32_t)pad;
                tg[b * Tb + t] = scored ? k[t + 1] : -1;
            }
        }
        evaluate_rows(m, in, tg, B, Tb, hit);
        for (size_t b = 0; b < B; b++) {
            const Seq *q = &seqs[s0 + b];
            double nats = 0;
            int greedy = 1;
            for (size_t t = q->len - 1 - q->n_scored; t + 1 < q->len; t++) {
                nats += m->run.losses[b * Tb + t];
                greedy &= hit[b * Tb + t];
            }
            DsScore *s = &r->scores[q->item];
            s->logprob[q->choice] = -nats;
            s->greedy = greedy;
        }
        progress(show, s0 + B, n_seqs);
    }
    rc = 0;
done:
    free(in);
    free(tg);
    free(hit);
    return rc;
}

/* Whether choice `label` beats every other by score (a tie is wrong). */
static int wins(const DsScore *s, size_t n, size_t label, int per_byte) {
    double best = per_byte ? s->logprob[label] / (double)s->bytes[label] : s->logprob[label];
    for (size_t c = 0; c < n; c++) {
        double v = per_byte ? s->logprob[c] / (double)s->bytes[c] : s->logprob[c];
        if (c != label && !(best > v)) return 0;
    }
    return 1;
}

/* Item indices ordered by their category name under one key (ctx: the key's index). */
typedef struct KeyOrder {
    const DsTask *task;
    size_t key;
} KeyOrder;
static int by_name(const void *a, const void *b, void *ctx) {
    const KeyOrder *o = ctx;
    const char *x = o->task->items[*(const size_t *)a].keys[o->key];
    const char *y = o->task->items[*(const size_t *)b].keys[o->key];
    int c = strcmp(x, y);
    return c ? c : (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

static void categories(DsResult *r) {
    const DsTask *t = r->task;
    size_t *idx = malloc((t->n ? t->n : 1) * sizeof *idx);
    if (!idx) return;
    for (size_t k = 0; k < t->n_keys; k++) {
        size_t n = 0;
        for (size_t i = 0; i < t->n; i++)
            if (r->scores[i].scored && t->items[i].keys[k]) idx[n++] = i;
        KeyOrder order = {t, k};
        qsort_r(idx, n, sizeof *idx, by_name, &order);
        for (size_t j = 0; j < n; j++) {
            const char *name = t->items[idx[j]].keys[k];
            if (!arrlenu(r->by[k]) || strcmp(arrlast(r->by[k]).name, name)) {
                DsCategory c = {.name = name};
                arrput(r->by[k], c);
            }
            DsCategory *c = &arrlast(r->by[k]);
            const DsScore *s = &r->scores[idx[j]];
            c->acc.scored++, c->acc_norm.scored++;
            c->acc.correct += (size_t)s->correct;
            c->acc_norm.correct += (size_t)s->correct_norm;
        }
        for (size_t j = 0; j < arrlenu(r->by[k]); j++) {
            ds_count_finish(&r->by[k][j].acc);
            ds_count_finish(&r->by[k][j].acc_norm);
        }
    }
    free(idx);
}

int ds_score(Model *m, const Tokenizer *tok, const DsTask *t, size_t batch, size_t tokens, int show_progress,
             DsResult *r, Error *err) {
    memset(r, 0, sizeof *r);
    r->task = t;
    r->skip_why = skip_reason(t->kind);
    r->word_nats = NAN;
    uint32_t start;
    if (ds_start_token(tok, &start, &r->start, &r->start_text, err)) return -1;
    if (!(r->scores = calloc(t->n ? t->n : 1, sizeof *r->scores))) return err_set(err, "out of memory");
    Seq *seqs = NULL;
    int32_t *pool = NULL;
    plan(m, tok, start, t, r, &seqs, &pool);
    size_t n_seqs = arrlenu(seqs);
    int rc = 0;
    for (size_t i = 0; i < arrlenu(pool) && rc == 0; i++)
        if ((size_t)pool[i] >= m->cfg.vocab_size)
            rc = err_set(err, "token id %d is outside the model's vocabulary of %zu", pool[i], m->cfg.vocab_size);
    if (n_seqs) qsort(seqs, n_seqs, sizeof *seqs, longer_first); /* qsort's base may not be NULL, even for none */
    if (batch == 0) { /* as many of the longest as `tokens` hold, and no more than there are */
        size_t longest = n_seqs ? seqs[0].len - 1 : 1;
        batch = tokens / longest < 1 ? 1 : tokens / longest;
        if (batch > DS_MAX_BATCH) batch = DS_MAX_BATCH;
        if (batch > n_seqs && n_seqs) batch = n_seqs;
    }
    if (rc == 0) rc = run(m, seqs, n_seqs, pool, start, batch, show_progress, r, err);
    arrfree(seqs);
    arrfree(pool);
    if (rc) return -1;
    double nats = 0;
    for (size_t i = 0; i < t->n; i++) {
        DsScore *s = &r->scores[i];
        if (!s->scored) continue;
        const DsItem *it = &t->items[i];
        s->correct = t->kind == TASK_CLOZE ? s->greedy : wins(s, it->n_choices, it->label, 0);
        s->correct_norm = t->kind == TASK_CHOICE ? wins(s, it->n_choices, it->label, 1) : s->correct;
        r->acc.scored++;
        r->acc.correct += (size_t)s->correct;
        r->acc_norm.correct += (size_t)s->correct_norm;
        nats -= s->logprob[0];
    }
    r->acc_norm.scored = r->acc.scored;
    ds_count_finish(&r->acc);
    ds_count_finish(&r->acc_norm);
    if (t->kind == TASK_CLOZE && r->acc.scored) r->word_nats = nats / (double)r->acc.scored;
    categories(r);
    return 0;
}

void ds_result_free(DsResult *r) {
    free(r->scores);
    for (size_t k = 0; k < DS_MAX_KEYS; k++) arrfree(r->by[k]);
    memset(r, 0, sizeof *r);
}
