/* bin/eval's report of a downstream task: text lines, or one JSON member
 * (its schema: docs/evals.md). */
#include "downstream.h"

#include <math.h>
#include <string.h>

#include "lm/ds.h"
#include "lm/json.h"

static const char *const task_title[N_TASKS] = {"minimal pairs", "cloze", "multiple choice"};
/* What acc (and, for multiple choice, acc_norm) counts. */
static const char *const acc_meaning[N_TASKS] = {
    "pairs whose good sentence has the higher log-probability",
    "last words predicted greedily (each token the model's first choice)",
    "items whose right ending has the highest log-probability (acc: the sum over its tokens)",
};

static void print_count_text(FILE *f, const char *what, const DsCount *c, const char *meaning) {
    if (!c->scored) {
        fprintf(f, "%s: none of the items could be scored\n", what);
        return;
    }
    fprintf(f, "%s %.4f (95%% Wilson interval %.4f-%.4f): %zu of %zu %s\n", what, c->accuracy, c->lo, c->hi,
            c->correct, c->scored, meaning);
}

static size_t name_width(const DsCategory *cats) {
    size_t w = 8;
    for (size_t j = 0; j < arrlenu(cats); j++)
        if (strlen(cats[j].name) > w) w = strlen(cats[j].name);
    return w > 64 ? 64 : w;
}

static void print_items_text(FILE *f, const DsResult *r) {
    const DsTask *t = r->task;
    for (size_t i = 0; i < t->n; i++) {
        const DsScore *s = &r->scores[i];
        const DsItem *it = &t->items[i];
        fprintf(f, "  line %zu: ", it->line);
        if (!s->scored) {
            fprintf(f, "skipped\n");
            continue;
        }
        fprintf(f, "%s", s->correct ? "right" : "wrong");
        if (t->kind == TASK_CHOICE) fprintf(f, ", per byte %s", s->correct_norm ? "right" : "wrong");
        fprintf(f, "%s | log-probability", s->truncated ? " (context cut)" : "");
        for (size_t c = 0; c < it->n_choices; c++)
            fprintf(f, " %.4f (%zu token%s, %zu bytes)%s", s->logprob[c], s->tokens[c], s->tokens[c] == 1 ? "" : "s",
                    s->bytes[c], c + 1 < it->n_choices ? "," : "");
        fprintf(f, "\n");
    }
}

void ds_print_text(FILE *f, const DsResult *r, int items) {
    const DsTask *t = r->task;
    int choice = t->kind == TASK_CHOICE;
    fprintf(f, "%s '%s': %zu items, each scored after %s\n", task_title[t->kind], t->path, t->n, r->start);
    print_count_text(f, "accuracy", &r->acc, acc_meaning[t->kind]);
    if (choice) print_count_text(f, "accuracy per byte", &r->acc_norm, "by log-probability per byte of the ending (acc_norm)");
    if (t->kind == TASK_CLOZE && r->acc.scored)
        fprintf(f, "last-word perplexity %.4f (%.4f nats a word)\n", exp(r->word_nats), r->word_nats);
    if (r->skipped) fprintf(f, "skipped %zu item%s: %s\n", r->skipped, r->skipped == 1 ? "" : "s", r->skip_why);
    if (r->truncated)
        fprintf(f, "%zu context%s cut from the left to fit the block\n", r->truncated, r->truncated == 1 ? "" : "s");
    for (size_t k = 0; k < t->n_keys; k++) {
        const DsCategory *cats = r->by[k];
        if (!arrlenu(cats)) continue;
        int w = (int)name_width(cats);
        fprintf(f, "by %s:\n  %-*s  accuracy  95%% interval  right/scored%s\n", t->key_names[k], w, "",
                choice ? "  per byte  95% interval  right" : "");
        for (size_t j = 0; j < arrlenu(cats); j++) {
            const DsCategory *c = &cats[j];
            char counts[48];
            snprintf(counts, sizeof counts, "%zu/%zu", c->acc.correct, c->acc.scored);
            fprintf(f, "  %-*.*s  %8.4f  %.4f-%.4f  %-*s", w, w, c->name, c->acc.accuracy, c->acc.lo, c->acc.hi,
                    choice ? 12 : 0, counts);
            if (choice)
                fprintf(f, "  %8.4f  %.4f-%.4f  %zu", c->acc_norm.accuracy, c->acc_norm.lo, c->acc_norm.hi,
                        c->acc_norm.correct);
            fprintf(f, "\n");
        }
    }
    if (items) print_items_text(f, r);
}

/* "<prefix>correct":C,"<prefix>accuracy":A,"<prefix>interval":[LO,HI] ("scored" once, by the caller). */
static void json_count(char **sb, const char *suffix, const DsCount *c) {
    char a[JSON_NUMBER_MAX], lo[JSON_NUMBER_MAX], hi[JSON_NUMBER_MAX];
    sb_appendf(sb, "\"correct%s\":%zu,\"accuracy%s\":%s,\"interval%s\":[%s,%s]", suffix, c->correct, suffix,
               json_number(a, "%.6f", c->accuracy), suffix, json_number(lo, "%.6f", c->lo),
               json_number(hi, "%.6f", c->hi));
}

static void json_items(char **sb, const DsResult *r) {
    const DsTask *t = r->task;
    char v[JSON_NUMBER_MAX];
    sb_appendf(sb, ",\"per_item\":[");
    for (size_t i = 0; i < t->n; i++) {
        const DsScore *s = &r->scores[i];
        const DsItem *it = &t->items[i];
        sb_appendf(sb, "%s{\"line\":%zu,\"scored\":%s", i ? "," : "", it->line, s->scored ? "true" : "false");
        if (s->scored) {
            sb_appendf(sb, ",\"correct\":%s", s->correct ? "true" : "false");
            if (t->kind == TASK_CHOICE) sb_appendf(sb, ",\"correct_norm\":%s", s->correct_norm ? "true" : "false");
            sb_appendf(sb, ",\"truncated\":%s,\"logprob\":[", s->truncated ? "true" : "false");
            for (size_t c = 0; c < it->n_choices; c++)
                sb_appendf(sb, "%s%s", c ? "," : "", json_number(v, "%.6f", s->logprob[c]));
            sb_appendf(sb, "],\"tokens\":[");
            for (size_t c = 0; c < it->n_choices; c++) sb_appendf(sb, "%s%zu", c ? "," : "", s->tokens[c]);
            sb_appendf(sb, "],\"bytes\":[");
            for (size_t c = 0; c < it->n_choices; c++) sb_appendf(sb, "%s%zu", c ? "," : "", s->bytes[c]);
            sb_appendf(sb, "]");
        }
        sb_appendf(sb, "}");
    }
    sb_appendf(sb, "]");
}

void ds_print_json(FILE *f, const DsResult *r, int items) {
    const DsTask *t = r->task;
    int choice = t->kind == TASK_CHOICE;
    char *sb = NULL, v[JSON_NUMBER_MAX];
    sb_appendf(&sb, "\"%s\":{\"file\":", ds_task_name(t->kind));
    sb_append_json_string(&sb, t->path);
    sb_appendf(&sb, ",\"start\":");
    sb_append_json_string(&sb, r->start_text);
    sb_appendf(&sb, ",\"items\":%zu,\"scored\":%zu,", t->n, r->acc.scored);
    json_count(&sb, "", &r->acc);
    if (choice) {
        sb_appendf(&sb, ",");
        json_count(&sb, "_norm", &r->acc_norm);
    }
    if (t->kind == TASK_CLOZE) { /* NaN (null) when nothing was scored */
        sb_appendf(&sb, ",\"perplexity\":%s", json_number(v, "%.6f", exp(r->word_nats)));
        sb_appendf(&sb, ",\"nats_per_word\":%s", json_number(v, "%.6f", r->word_nats));
    }
    sb_appendf(&sb, ",\"skipped\":%zu,\"skipped_why\":", r->skipped);
    sb_append_json_string(&sb, r->skip_why);
    sb_appendf(&sb, ",\"truncated\":%zu,\"by\":{", r->truncated);
    for (size_t k = 0; k < t->n_keys; k++) {
        sb_appendf(&sb, "%s\"%s\":[", k ? "," : "", t->key_names[k]);
        for (size_t j = 0; j < arrlenu(r->by[k]); j++) {
            const DsCategory *c = &r->by[k][j];
            sb_appendf(&sb, "%s{\"name\":", j ? "," : "");
            sb_append_json_string(&sb, c->name);
            sb_appendf(&sb, ",\"scored\":%zu,", c->acc.scored);
            json_count(&sb, "", &c->acc);
            if (choice) {
                sb_appendf(&sb, ",");
                json_count(&sb, "_norm", &c->acc_norm);
            }
            sb_appendf(&sb, "}");
        }
        sb_appendf(&sb, "]");
    }
    sb_appendf(&sb, "}");
    if (items) json_items(&sb, r);
    sb_appendf(&sb, "}");
    fputs(sb, f);
    sb_free(&sb);
}
