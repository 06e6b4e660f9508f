/* The contract suite's checks of a registry entry's own rows and hooks
 * (tests/unit/mixers/test_mixers.c): its tensors, its options, and the optional hooks
 * (inspect, parts), through the Mixer interface alone. */
#ifndef LM_TEST_MIXER_ENTRY_CHECKS_H
#define LM_TEST_MIXER_ENTRY_CHECKS_H

#include "mixer_contract.h"

/* ---- tensors and options ------------------------------------------------------- */

/* The text before the first '.', into prefix (empty: none). */
static inline void name_prefix(const char *name, char *prefix, size_t len) {
    const char *dot = strchr(name, '.');
    size_t n = dot ? (size_t)(dot - name) : 0;
    if (n >= len) n = 0;
    memcpy(prefix, name, n);
    prefix[n] = '\0';
}

static inline void check_tensors(Report *r, const Layer *L) {
    TensorSpec specs[MIXER_MAX_TENSORS];
    size_t n = mixer_tensors(L->mx, &L->spec, specs), total = 0;
    check(r, n <= MIXER_MAX_TENSORS && (n > 0 || L->np == 0), "tensors", "%zu tensors (at most %d), %zu parameters", n,
          MIXER_MAX_TENSORS, L->np);
    if (n == 0 || n > MIXER_MAX_TENSORS) return; /* none: nothing to name */
    char prefix[TENSOR_NAME_MAX], p[TENSOR_NAME_MAX];
    name_prefix(specs[0].name, prefix, sizeof prefix);
    int named = prefix[0] != '\0', unique = 1, sized = 1;
    for (size_t i = 0; i < n; i++) {
        total += specs[i].rows * (specs[i].cols ? specs[i].cols : 1);
        sized &= specs[i].rows > 0;
        name_prefix(specs[i].name, p, sizeof p);
        named &= strcmp(p, prefix) == 0 && strlen(specs[i].name) < TENSOR_NAME_MAX - 8;
        for (size_t j = 0; j < i; j++) unique &= strcmp(specs[i].name, specs[j].name) != 0;
    }
    check(r, sized && total == L->np, "tensors", "sizes add up to %zu, mixer_param_count %zu", total, L->np);
    check(r, unique, "tensors", "two tensors share a name");
    check(r, named, "tensors", "the names do not all start with one prefix \"%s.\" (first: %s)", prefix, specs[0].name);
    static const char *const block_parts[] = {"ln1", "ln2", "mlp"};
    int own = 1;
    for (size_t i = 0; i < 3; i++) own &= strcmp(prefix, block_parts[i]) != 0;
    for (size_t i = 0; i < mixer_count(); i++) {
        const Mixer *other = mixer_at(i);
        if (other == L->mx || other == L->registered_as) continue;
        MixerSpec spec = layer_spec_of(other, 0);
        TensorSpec os[MIXER_MAX_TENSORS];
        if (mixer_tensors(other, &spec, os) == 0) continue;
        name_prefix(os[0].name, p, sizeof p);
        own &= strcmp(prefix, p) != 0;
    }
    check(r, own, "tensors", "prefix \"%s.\" is the block's or another mixer's", prefix);
}

static inline void check_options(Report *r, const Mixer *mx) {
    ModelConfig cfg = layer_config(mx, 0);
    void *settings = config_mixer_settings(&cfg, mx);
    for (size_t k = 0; k < mx->n_options; k++) {
        const OptionRow *o = &mx->options[k];
        int named = o->name && o->name[0] && o->json_key && o->json_key[0] && o->value && o->value[0] && o->help &&
                    o->help[0]; /* the value's name: bin/train's --help shows it */
        check(r, named, "options", "row %zu lacks a name, JSON key, value name or help", k);
        int setting = o->kind == OPT_SIZE || o->kind == OPT_FLOAT || o->kind == OPT_TEXT;
        check(r, setting, "options", "row %zu is no setting: a number (OPT_SIZE, OPT_FLOAT) or text", k);
        if (!setting) continue;
        if (o->kind != OPT_TEXT) {
            check(r, o->lo <= o->def && o->def <= o->hi, "options", "--%s: default %g outside [%g, %g]",
                  o->name, o->def, o->lo, o->hi);
            continue;
        }
        Error err;
        char text[256], again[256];
        int parsed = o->def_text && o->set && o->get && o->set(settings, 1, o->def_text, &err) == 0;
        check(r, parsed, "options", "--%s: its default \"%s\" does not parse", o->name, o->def_text ? o->def_text : "");
        if (!parsed) continue;
        char buf[256];
        snprintf(text, sizeof text, "%s", o->get(settings, 1, buf, sizeof buf));
        int back = o->set(settings, 1, text, &err) == 0;
        if (back) snprintf(again, sizeof again, "%s", o->get(settings, 1, buf, sizeof buf));
        check(r, back && strcmp(text, again) == 0, "options", "--%s: \"%s\" does not read back as itself", o->name, text);
    }
}

/* ---- the optional hooks ---------------------------------------------------------------- */

/* An exhibit's name: lower case letters, digits and '_'. */
static inline int exhibit_name_ok(const char *name) {
    if (!name[0]) return 0;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) return 0;
    return 1;
}

/* Whether every row of a maps exhibit (rows maps of cols x cols) is a
 * distribution over the positions up to its own (lm/inspection.h); if not,
 * the first row that is not in *map, *row. */
static inline int maps_are_causal_distributions(const Exhibit *e, size_t *map, size_t *row) {
    for (size_t m = 0; m < e->rows; m++)
        for (size_t i = 0; i < e->cols; i++) {
            const float *p = e->values + (m * e->cols + i) * e->cols;
            double sum = 0.0;
            int bad = 0;
            for (size_t j = 0; j < e->cols; j++) {
                bad |= !(p[j] >= 0.0f) || (j > i && p[j] != 0.0f);
                sum += p[j];
            }
            if (bad || fabs(sum - 1.0) > 1e-4) return *map = m, *row = i, 0;
        }
    return 1;
}

/* inspect, when present (lm/inspection.h): both kinds of call succeed; the
 * exhibits are named and captioned, a name once; maps are (heads, T, T)
 * causal distributions and series T long; the parts of the output at
 * T - 1 add up to forward's out there. */
static inline void check_inspect(Report *r, const Layer *L) {
    size_t C = L->C;
    LayerInspection li;
    Error err = {0};
    memset(&li, 0, sizeof li);
    int rc = L->mx->inspect(&L->spec, &L->rt, L->params, L->x, T, MIXER_INSPECT_MAPS, &li, &err);
    check(r, rc == 0, "inspect", "inspect (maps) failed: %s", err.msg);
    layer_inspection_free(&li);
    rc = L->mx->inspect(&L->spec, &L->rt, L->params, L->x, T, MIXER_INSPECT_ALL, &li, &err);
    check(r, rc == 0, "inspect", "inspect failed: %s", err.msg);
    for (size_t k = 0; rc == 0 && k < li.n_exhibits; k++) {
        const Exhibit *e = &li.exhibits[k];
        int named = exhibit_name_ok(e->name) && e->caption[0];
        for (size_t j = 0; j < k; j++) named &= strcmp(e->name, li.exhibits[j].name) != 0;
        check(r, named, "inspect", "exhibit %zu (\"%s\"): a bad or repeated name, or no caption", k, e->name);
        size_t map = 0, row = 0;
        if (e->kind == EXHIBIT_MAPS)
            check(r, e->rows == L->spec.n_head && e->cols == T && maps_are_causal_distributions(e, &map, &row),
                  "inspect", "%s: %zu maps of %zu, or map %zu row %zu not a distribution up to its position", e->name,
                  e->rows, e->cols, map, row);
        if (e->kind == EXHIBIT_SERIES) check(r, e->cols == T, "inspect", "%s: a series of %zu, not T", e->name, e->cols);
    }
    if (rc == 0 && li.n_parts) {
        float *acts = zeros(L->mx->act_size(&L->spec, 1, T)), *out = zeros(T * C), *sum = zeros(C);
        L->mx->forward(&L->spec, &L->rt, L->params, acts, out, L->x, 1, T);
        for (size_t k = 0; k < li.n_parts; k++)
            for (size_t c = 0; c < C; c++) sum[c] += li.part_out[k * C + c];
        double gap = rel_gap(sum, out + (T - 1) * C, C);
        check(r, gap <= STEP_TOL, "inspect", "its %zu parts add up to %.3e from out at T - 1", li.n_parts, gap);
        free(acts), free(out), free(sum);
    }
    layer_inspection_free(&li);
}

/* parts, when present: named, a name once, at most MIXER_MAX_PARTS; each
 * part left out (MixerSpec.muted) changes forward, and step honours it as
 * forward does. */
static inline void check_parts(Report *r, const Layer *L) {
    char names[MIXER_MAX_PARTS][MIXER_PART_NAME];
    size_t n = L->mx->parts(&L->spec, names), C = L->C;
    check(r, n <= MIXER_MAX_PARTS, "parts", "%zu parts (at most %d)", n, MIXER_MAX_PARTS);
    n = n < MIXER_MAX_PARTS ? n : MIXER_MAX_PARTS;
    float *acts = zeros(L->na), *ref = zeros(B * T * C), *out = zeros(B * T * C), *got = zeros(T * C);
    float *state = zeros(L->ns);
    L->mx->forward(&L->spec, &L->rt, L->params, acts, ref, L->x, B, T);
    for (size_t k = 0; k < n; k++) {
        int named = names[k][0] != '\0';
        for (size_t j = 0; j < k; j++) named &= strcmp(names[k], names[j]) != 0;
        check(r, named, "parts", "part %zu (\"%s\"): no name, or another's", k, names[k]);
        Layer muted = *L;
        muted.spec.muted = 1u << k;
        muted.mx->forward(&muted.spec, &muted.rt, muted.params, acts, out, muted.x, B, T);
        check(r, memcmp(out, ref, B * T * C * sizeof(float)) != 0, "parts", "leaving %s out changes nothing", names[k]);
        step_sequence(&muted, &muted.rt, muted.params, state, muted.x, got, 0, T);
        double gap = rel_gap(got, out, T * C);
        check(r, gap <= STEP_TOL, "parts", "with %s left out, step is %.3e from forward", names[k], gap);
    }
    free(acts), free(ref), free(out), free(got), free(state);
}

static inline void check_hooks(Report *r, const Layer *L) {
    if (L->mx->inspect) check_inspect(r, L);
    if (L->mx->parts) check_parts(r, L);
    double f = L->mx->flops(&L->spec, T);
    check(r, isfinite(f) && f >= 0.0, "flops", "flops at T = %zu: %g", (size_t)T, f);
}

#endif
