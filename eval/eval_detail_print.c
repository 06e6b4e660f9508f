/* bin/eval's report of the loss by position, the recall split and the masked accuracy. */
#include <math.h>

#include "lm/json.h"
#include "evaluate.h"

static void json_num(FILE *f, double v) {
    char buf[JSON_NUMBER_MAX];
    fputs(json_number(buf, "%.6f", v), f);
}

static void print_json(FILE *f, const EvalDetail *d, const EvalResult *r, const char *mask_name) {
    fprintf(f, ",\"accuracy\":%.6f", r->accuracy);
    if (mask_name) {
        char *s = NULL;
        sb_append_json_string(&s, mask_name);
        fprintf(f, ",\"mask\":%s", s);
        sb_free(&s);
    }
    if (d->pos_sum) {
        fputs(",\"by_position\":{\"loss\":[", f);
        for (size_t t = 0; t < d->positions; t++) {
            if (t) fputc(',', f);
            json_num(f, d->pos_count[t] ? d->pos_sum[t] / (double)d->pos_count[t] : NAN);
        }
        fputs("],\"count\":[", f);
        for (size_t t = 0; t < d->positions; t++) fprintf(f, "%s%zu", t ? "," : "", d->pos_count[t]);
        fputs("]}", f);
    }
    if (d->recall_n) {
        fprintf(f, ",\"split_recall\":{\"n\":%zu,\"recall_tokens\":%zu,\"recall_loss\":", d->recall_n, d->recall_count);
        json_num(f, d->recall_loss);
        fprintf(f, ",\"other_tokens\":%zu,\"other_loss\":", d->other_count);
        json_num(f, d->other_loss);
        fputc('}', f);
    }
}

static void print_text(FILE *f, const EvalDetail *d, const EvalResult *r, const char *mask_name) {
    if (mask_name) fprintf(f, "scored only the tokens marked in %s | accuracy %.4f\n", mask_name, r->accuracy);
    if (d->pos_sum) {
        /* Positions in doubling ranges 0, 1, 2-3, 4-7, ...: the full list is in --json. */
        fprintf(f, "loss by position in the window:\n");
        for (size_t lo = 0; lo < d->positions; lo = lo ? 2 * lo : 1) {
            size_t hi = lo ? 2 * lo : 1;
            if (hi > d->positions) hi = d->positions;
            double sum = 0.0;
            size_t count = 0;
            for (size_t t = lo; t < hi; t++) sum += d->pos_sum[t], count += d->pos_count[t];
            if (count) fprintf(f, "  positions %5zu-%-5zu loss %.4f (%zu tokens)\n", lo, hi - 1, sum / (double)count, count);
            else fprintf(f, "  positions %5zu-%-5zu no tokens scored\n", lo, hi - 1);
        }
    }
    if (d->recall_n) {
        fprintf(f, "recall split (%zu-grams seen earlier in the window): recall %zu tokens, loss %.4f | other %zu tokens, loss %.4f\n",
                d->recall_n, d->recall_count, d->recall_loss, d->other_count, d->other_loss);
    }
}

void eval_detail_print(FILE *f, const EvalDetail *d, const EvalResult *r, const char *mask_name, int json) {
    if (json) print_json(f, d, r, mask_name);
    else print_text(f, d, r, mask_name);
}
